"""NAdam: Adam with Nesterov momentum, whose momentum weight warms up over the first steps."""

from __future__ import annotations

from ..creation import tensor
from .optimizer import (Optimizer, _advance, _average_square_, _check_betas, _check_nonnegative, _kernel_switches,
                        _lerp_, _new_step, _zeros_like)

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """Adam's moments, but the step mixes the gradient and the look-ahead momentum:

    mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay));
    p -= lr * [(1 - mu_t) / (1 - Π mu) * g + mu_{t+1} / (1 - Π mu · mu_{t+1}) * m] / (√v̂ + eps).
    """

    _state_keys = ("step", "mu_product", "exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, maximize=False, foreach=None, capturable=False, differentiable=False):
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay, momentum_decay=momentum_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        return dict(step=_new_step(), mu_product=tensor(1.0), exp_avg=_zeros_like(p), exp_avg_sq=_zeros_like(p))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        beta1, beta2 = group["betas"]
        lr, decay = group["lr"], group["momentum_decay"]
        step = _advance(state)
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * decay))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * decay))
        product = state["mu_product"]
        product.array = b.mul(product.array, mu)  # kept as a tensor (float32 by default), as PyTorch rounds it
        mu_product = product.item()
        exp_avg = _lerp_(state["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = _average_square_(state["exp_avg_sq"], grad, beta2)
        denom = b.add(b.sqrt(b.div(exp_avg_sq, 1 - beta2 ** step)), group["eps"])
        mixed = b.add(b.mul(grad, lr * (1.0 - mu) / (1.0 - mu_product)),
                      b.mul(exp_avg, lr * mu_next / (1.0 - mu_product * mu_next)))
        return b.div(mixed, denom)

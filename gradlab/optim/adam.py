"""Adam and AdamW: steps scaled per element by running averages of the gradient and its square."""

from __future__ import annotations

from .optimizer import (Optimizer, _advance, _average_square_, _check_betas, _check_nonnegative, _kernel_switches,
                        _lerp_, _new_step, _zeros_like)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """m and v average g and g² (with bias correction for their zero start); p -= lr * m̂ / (√v̂ + eps).

    ``amsgrad`` divides by the largest v seen so far instead; ``decoupled_weight_decay=True`` is AdamW.
    """

    _state_keys = ("step", "exp_avg", "exp_avg_sq")
    _optional_state_keys = ("max_exp_avg_sq",)  # with amsgrad

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                        maximize=maximize, decoupled_weight_decay=decoupled_weight_decay)
        defaults.update(_kernel_switches(foreach=foreach, capturable=capturable, differentiable=differentiable,
                                         fused=fused))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        state = dict(step=_new_step(), exp_avg=_zeros_like(p), exp_avg_sq=_zeros_like(p))
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = _zeros_like(p)
        return state

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        beta1, beta2 = group["betas"]
        step = _advance(state)
        exp_avg = _lerp_(state["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = _average_square_(state["exp_avg_sq"], grad, beta2)
        if group["amsgrad"]:
            biggest = state["max_exp_avg_sq"]
            exp_avg_sq = biggest.array = b.maximum(biggest.array, exp_avg_sq)
        step_size = group["lr"] / (1 - beta1 ** step)
        denom = b.add(b.div(b.sqrt(exp_avg_sq), (1 - beta2 ** step) ** 0.5), group["eps"])
        return b.mul(b.div(exp_avg, denom), step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay: p shrinks by lr * weight_decay * p, outside the moments."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused, decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True

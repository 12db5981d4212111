"""Adamax: Adam with the infinity norm: divide by the running maximum of |g| instead of √v."""

from __future__ import annotations

from .optimizer import (Optimizer, _advance, _check_betas, _check_nonnegative, _kernel_switches, _lerp_, _new_step,
                        _zeros_like)

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """``m`` averages ``g``; ``u = max(beta2 * u, |g| + eps)``; ``p -= lr / (1 - beta1^t) * m / u``."""

    _state_keys = ("step", "exp_avg", "exp_inf")

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, *, maximize=False, foreach=None,
                 capturable=False, differentiable=False):
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay, maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        return dict(step=_new_step(), exp_avg=_zeros_like(p), exp_inf=_zeros_like(p))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        beta1, beta2 = group["betas"]
        step = _advance(state)
        exp_avg = _lerp_(state["exp_avg"], grad, 1 - beta1)
        exp_inf = state["exp_inf"]
        exp_inf.array = b.maximum(b.mul(exp_inf.array, beta2), b.add(b.abs(grad), group["eps"]))
        return b.mul(b.div(exp_avg, exp_inf.array), group["lr"] / (1 - beta1 ** step))

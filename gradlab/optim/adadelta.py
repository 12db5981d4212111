"""Adadelta: no learning rate to tune by hand; each step is scaled by the ratio of two running averages."""

from __future__ import annotations

from .optimizer import (Optimizer, _advance, _average_square_, _check_nonnegative, _kernel_switches, _new_step,
                        _zeros_like)

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """v = rho v + (1 - rho) g²; Δ = √(u + eps) / √(v + eps) * g; u = rho u + (1 - rho) Δ²; p -= lr * Δ.

    The running mean of past squared steps ``u`` (``acc_delta``) gives the step its units, so ``lr=1``
    (the default) is already sensible (Zeiler, 2012).
    """

    _state_keys = ("step", "square_avg", "acc_delta")

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, *, maximize=False, foreach=None,
                 capturable=False, differentiable=False):
        _check_nonnegative(lr=lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        _check_nonnegative(eps=eps, weight_decay=weight_decay)
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        return dict(step=_new_step(), square_avg=_zeros_like(p), acc_delta=_zeros_like(p))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        _advance(state)
        rho, eps = group["rho"], group["eps"]
        square_avg = _average_square_(state["square_avg"], grad, rho)
        delta = b.mul(b.div(b.sqrt(b.add(state["acc_delta"].array, eps)), b.sqrt(b.add(square_avg, eps))), grad)
        _average_square_(state["acc_delta"], delta, rho)
        return b.mul(delta, group["lr"])

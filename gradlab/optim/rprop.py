"""Rprop: only the sign of the gradient counts; each element's step size grows while the sign holds."""

from __future__ import annotations

from .optimizer import Optimizer, _advance, _check_nonnegative, _kernel_switches, _new_step, _zeros_like

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """Each element has its own step size: times etaplus when g kept its sign, times etaminus when it
    flipped (clamped to ``step_sizes``); p -= sign(g) * step_size.

    After a flip the gradient is taken as 0 for that step: no move, and no sign to compare next
    time (Riedmiller & Braun, 1993). Meant for full-batch training; it ignores the gradient's size.
    """

    _state_keys = ("step", "prev", "step_size")

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, maximize=False, foreach=None,
                 capturable=False, differentiable=False):
        _check_nonnegative(lr=lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        initial = p.device.backend.full(p.shape, group["lr"], p.dtype)  # every element starts at lr
        return dict(step=_new_step(), prev=_zeros_like(p), step_size=p._wrap(initial))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        _advance(state)
        etaminus, etaplus = group["etas"]
        low, high = group["step_sizes"]

        def filled(value):  # an array of p's shape and dtype, so a float32 p keeps float32 state
            return b.full(p.shape, value, p.dtype)

        agreement = b.sign(b.mul(grad, state["prev"].array))
        flipped = b.lt(agreement, 0)
        factor = b.where(b.gt(agreement, 0), filled(etaplus), b.where(flipped, filled(etaminus), filled(1.0)))
        step_size = state["step_size"]
        step_size.array = b.minimum(b.maximum(b.mul(step_size.array, factor), low), high)
        grad = b.where(flipped, filled(0.0), grad)  # the sign flipped: stand still this step
        state["prev"].array = grad
        return b.mul(b.sign(grad), step_size.array)

"""Adagrad: each element's step shrinks with the total of its squared gradients so far."""

from __future__ import annotations

from .optimizer import Optimizer, _advance, _check_nonnegative, _kernel_switches, _new_step

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """s += g²; p -= lr / (1 + (t - 1) * lr_decay) * g / (√s + eps).

    Elements with large past gradients take small steps; ``s`` starts at ``initial_accumulator_value``.
    """

    _state_keys = ("step", "sum")

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        _check_nonnegative(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                           initial_accumulator_value=initial_accumulator_value, eps=eps)
        defaults = dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)
        for group in self.param_groups:  # PyTorch fills the state at construction
            for p in group["params"]:
                self.state[p] = self._init_state(p, group)

    def _init_state(self, p, group) -> dict:
        return dict(step=_new_step(),
                    sum=p._wrap(p.device.backend.full(p.shape, group["initial_accumulator_value"], p.dtype)))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        step = _advance(state)
        total = state["sum"]
        total.array = b.add(total.array, b.mul(grad, grad))
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        return b.mul(b.div(grad, b.add(b.sqrt(total.array), group["eps"])), clr)

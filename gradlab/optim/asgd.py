"""ASGD: plain SGD with a decaying step, plus a running average of the iterates to read the answer from."""

from __future__ import annotations

from ..creation import tensor
from .optimizer import Optimizer, _advance, _check_nonnegative, _kernel_switches, _new_step, _zeros_like

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """p = p * (1 - lambd * eta) - eta * g with eta = lr / (1 + lambd * lr * t)^alpha; from step t0 on,
    ``ax`` (in the state) keeps the average of the iterates since t0 (Polyak & Juditsky, 1992).

    As in PyTorch, ``eta`` and ``mu`` (the averaging weight 1 / max(1, t - t0)) are kept as 0-d tensors
    of the default dtype, and the parameters move by those rounded values.
    """

    _state_keys = ("step", "eta", "mu", "ax")

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, *, maximize=False,
                 foreach=None, capturable=False, differentiable=False):
        _check_nonnegative(lr=lr, weight_decay=weight_decay)
        defaults = dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay, maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        return dict(step=_new_step(), eta=tensor(float(group["lr"])), mu=tensor(1.0), ax=_zeros_like(p))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        step = _advance(state)
        eta, mu = state["eta"].item(), state["mu"].item()
        lr, lambd = group["lr"], group["lambd"]
        b.imul(p.array, 1 - lambd * eta)  # the decay, in place first, as PyTorch rounds it
        delta = b.mul(grad, eta)
        moved = b.sub(p.array, delta)  # what p becomes once the base subtracts delta
        ax = state["ax"]
        ax.array = b.add(ax.array, b.mul(b.sub(moved, ax.array), mu)) if mu != 1 else b.copy(moved)
        state["eta"].copy_(tensor(lr / ((1 + lambd * lr * step) ** group["alpha"])))
        state["mu"].copy_(tensor(1 / max(1, step - group["t0"])))
        return delta

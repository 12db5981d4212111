"""Lion (Chen et al., 2023, "Symbolic Discovery of Optimization Algorithms"): move by the sign of a momentum."""

from __future__ import annotations

from .optimizer import Optimizer, _check_betas, _check_nonnegative, _zeros_like

__all__ = ["Lion"]


class Lion(Optimizer):
    """c = beta1 * m + (1 - beta1) * g; p -= lr * (sign(c) + weight_decay * p); m = beta2 * m + (1 - beta2) * g.

    Every element moves by exactly lr, so Lion wants a smaller lr (3-10x) than AdamW.
    """

    _state_keys = ("exp_avg",)
    _decoupled_weight_decay = True

    def __init__(self, params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, *, maximize=False):
        _check_nonnegative(lr=lr)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), weight_decay=weight_decay, maximize=maximize))

    def _init_state(self, p, group) -> dict:
        return dict(exp_avg=_zeros_like(p))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        beta1, beta2 = group["betas"]
        exp_avg = state["exp_avg"]
        direction = b.sign(b.add(b.mul(exp_avg.array, beta1), b.mul(grad, 1 - beta1)))
        exp_avg.array = b.add(b.mul(exp_avg.array, beta2), b.mul(grad, 1 - beta2))
        return b.mul(direction, group["lr"])

"""RMSprop: divide each gradient by the root of a running mean of its squares."""

from __future__ import annotations

from .optimizer import (Optimizer, _advance, _average_square_, _check_nonnegative, _kernel_switches, _lerp_, _new_step,
                        _zeros_like)

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """v = alpha * v + (1 - alpha) * g²; p -= lr * g / (√v + eps).

    ``centered`` subtracts the squared running mean of g (a variance estimate); ``momentum`` feeds
    g / (√v + eps) through a buffer first.
    """

    _state_keys = ("step", "square_avg")
    _optional_state_keys = ("momentum_buffer", "grad_avg")  # with momentum, centered

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False):
        _check_nonnegative(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered,
                        maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        state = dict(step=_new_step(), square_avg=_zeros_like(p))
        if group["momentum"] > 0:
            state["momentum_buffer"] = _zeros_like(p)
        if group["centered"]:
            state["grad_avg"] = _zeros_like(p)
        return state

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        _advance(state)
        alpha = group["alpha"]
        square_avg = _average_square_(state["square_avg"], grad, alpha)
        if group["centered"]:
            grad_avg = _lerp_(state["grad_avg"], grad, 1 - alpha)
            square_avg = b.sub(square_avg, b.mul(grad_avg, grad_avg))
        scaled = b.div(grad, b.add(b.sqrt(square_avg), group["eps"]))
        if group["momentum"] > 0:
            buf = state["momentum_buffer"]
            scaled = buf.array = b.add(b.mul(buf.array, group["momentum"]), scaled)
        return b.mul(scaled, group["lr"])

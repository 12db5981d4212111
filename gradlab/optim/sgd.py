"""SGD: step against the gradient, optionally through a momentum buffer (heavy ball or Nesterov)."""

from __future__ import annotations

from .optimizer import Optimizer, _check_nonnegative, _kernel_switches

__all__ = ["SGD"]


class SGD(Optimizer):
    """p -= lr * g, where with momentum g is replaced by the buffer v = momentum * v + (1 - dampening) * g.

    Nesterov looks one step ahead: it moves by g + momentum * v instead of v. As in PyTorch, the
    buffer starts as the first gradient itself.
    """

    _state_keys = ()
    _optional_state_keys = ("momentum_buffer",)  # with momentum

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        _check_nonnegative(lr=lr, momentum=momentum, weight_decay=weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov,
                        maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, differentiable=differentiable, fused=fused))
        super().__init__(params, defaults)

    def _delta(self, p, grad, group):
        b = p.device.backend
        momentum = group["momentum"]
        if momentum != 0:
            state = self.state[p]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = p._wrap(b.copy(grad))
            else:
                dampening = group["dampening"]
                buf.array = b.add(b.mul(buf.array, momentum), grad if dampening == 0 else b.mul(grad, 1 - dampening))
            grad = b.add(grad, b.mul(buf.array, momentum)) if group["nesterov"] else buf.array
        return b.mul(grad, group["lr"])

"""``WriteBack``: an in-place write into a tensor that outlives the call, as an op of the tape.

``self.calls.add_(1)`` on a buffer computes ``calls + 1`` (an op the tracer sees) and then copies
the result into the buffer's memory (which it does not: the copy is no op). For a value made
inside the call the tracer only needs to know that the name now means the result; for an input,
a parameter or a buffer the write itself must happen again at every replay — this op does it.
"""

from __future__ import annotations

from ..autograd.function import Function


class WriteBack(Function):
    """target[...] = value, in place; returns target. The gradient goes to value (target's old one is gone)."""

    derivative = "∂L/∂value = g;  ∂L/∂target = 0 (overwritten)"
    _forward_is_primitive = True

    @staticmethod
    def forward(ctx, target, value):
        target.device.backend.setitem(target.array, Ellipsis, value.array)
        target._version[0] += 1
        ctx.mark_dirty(target)
        return target

    @staticmethod
    def backward(ctx, grad):
        return None, grad

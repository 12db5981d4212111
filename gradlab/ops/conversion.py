"""Copies and conversions: clone, dtype casts, device moves, contiguous copies.

Each passes the gradient straight back (cast back to the input's dtype or device), so a cast in
the middle of a model does not cut the graph.
"""

from __future__ import annotations

from ..autograd.function import Function, TrackedTensor
from ..backends.device import backend_for


class Clone(Function):
    """clone(x): a copy of the values, so the gradient passes back unchanged."""

    derivative = "∂L/∂x = g"

    @staticmethod
    def forward(ctx, x):
        return x._wrap(x.device.backend.copy(x.array))

    @staticmethod
    def backward(ctx, grad):
        return grad


class Cast(Function):
    """x.to(dtype): the gradient is cast back to x's dtype (and is None for non-float inputs)."""

    derivative = "∂L/∂x = g cast back to x's dtype (no gradient for integer or bool x)"
    node_names = ("ToCopyBackward0",)  # PyTorch's x.to(dtype) is a _to_copy

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = x.dtype
        return x._wrap(backend_for("cast", x.device, dtype).astype(x.array, dtype))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.dtype.is_floating_point:
            return None, None
        return grad.to(ctx.dtype), None


class ToDevice(Function):
    """x.to(device): the gradient passes back unchanged, moved to x's device.

    The data travels through numpy, the one format every backend reads and writes.
    """

    derivative = "∂L/∂x = g moved back to x's device"
    node_names = ("ToCopyBackward0",)  # (as Cast: one _to_copy in PyTorch)

    @staticmethod
    def forward(ctx, x, device):
        ctx.device = x.device
        source, target = x.device.backend, backend_for("to", device, x.dtype)
        source.synchronize()
        array = target.asarray(source.to_numpy(x.array), x.dtype)
        return x._wrap(array, device)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.device), None


class Fill(Function):
    """Every element set to one value (``fill_``, ``zero_``): the old values get a zero gradient.

    A 0-d tensor value gets the sum of the gradient, since it was written into every element.
    """

    derivative = "∂L/∂x = 0;  ∂L/∂value = Σ g"

    @staticmethod
    def forward(ctx, x, value):
        fill = value.item() if isinstance(value, TrackedTensor) else value
        return x._wrap(x.device.backend.full(x.shape, fill, x.dtype))

    @staticmethod
    def backward(ctx, grad):
        grad_x = grad.new_zeros(grad.shape) if ctx.needs_input_grad[0] else None
        return grad_x, (grad.sum() if ctx.needs_input_grad[1] else None)

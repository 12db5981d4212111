"""Copies and conversions: clone, dtype casts, device moves, contiguous copies.

Each passes the gradient straight back (cast back to the input's dtype or device), so a cast in
the middle of a model does not cut the graph.
"""

from __future__ import annotations

from ..autograd.function import Function


class Clone(Function):
    @staticmethod
    def forward(ctx, x):
        return x._wrap(x.device.backend.copy(x.array))

    @staticmethod
    def backward(ctx, grad):
        return grad


class Cast(Function):
    """x.to(dtype): the gradient is cast back to x's dtype (and is None for non-float inputs)."""

    @staticmethod
    def forward(ctx, x, dtype):
        ctx.dtype = x.dtype
        return x._wrap(x.device.backend.astype(x.array, dtype))

    @staticmethod
    def backward(ctx, grad):
        if not ctx.dtype.is_floating_point:
            return None, None
        return grad.to(ctx.dtype), None


class ToDevice(Function):
    """x.to(device): data travels through numpy, the one format every backend reads and writes."""

    @staticmethod
    def forward(ctx, x, device):
        ctx.device = x.device
        source = x.device.backend
        x.device.backend.synchronize()
        array = device.backend.asarray(source.to_numpy(x.array), x.dtype)
        return x._wrap(array, device)

    @staticmethod
    def backward(ctx, grad):
        return grad.to(ctx.device), None

"""Reordering elements: flip (reverse along dims) and roll (rotate along dims).

Both are permutations of the elements, so each gradient is the inverse permutation applied to
the gradient: flipped back, or rolled back by the opposite shift.
"""

from __future__ import annotations

import operator

from ..autograd.function import Function
from ._common import int_tuple, normalize_dim, normalize_dims


class Flip(Function):
    """The order of elements reversed along some dims; the gradient is flipped back."""

    derivative = "∂L/∂x = g flipped back along the same dims"

    @staticmethod
    def forward(ctx, x, axes):
        ctx.axes = axes
        backend = x.device.backend
        # numpy's flip is a view with negative strides; PyTorch's flip is a copy, and so is this one
        return x._wrap(backend.copy(backend.flip(x.array, axes)))

    @staticmethod
    def backward(ctx, grad):
        return Flip.apply(grad, ctx.axes), None


class Roll(Function):
    """Elements rotated along dims (those pushed off one end come back at the other); rolled back for the gradient."""

    derivative = "∂L/∂x = g rolled back by −shifts along the same dims"

    @staticmethod
    def forward(ctx, x, shifts, axes):
        ctx.shifts, ctx.axes = shifts, axes
        return x._wrap(x.device.backend.roll(x.array, shifts, axes))

    @staticmethod
    def backward(ctx, grad):
        return Roll.apply(grad, tuple(-s for s in ctx.shifts), ctx.axes), None, None


def flip(input, dims):
    """Reverse the order of elements along dims (a copy, as in PyTorch)."""
    return Flip.apply(input, normalize_dims("flip", int_tuple("flip", (dims,)), input.ndim))


def roll(input, shifts, dims=None):
    """Rotate elements along dims by shifts; with dims=None the tensor is rolled as if flattened."""
    shifts = (shifts,) if hasattr(shifts, "__index__") else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(
                f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:0; give dims, or one shift"
            )
        return Roll.apply(input.flatten(), shifts, (0,)).view(input.shape)
    dims = (dims,) if hasattr(dims, "__index__") else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}; give one shift per dim"
        )
    axes = tuple(normalize_dim("roll", d, input.ndim) for d in dims)
    return Roll.apply(input, tuple(map(operator.index, shifts)), axes)



class ReorderingMethods:
    """Tensor's flip and roll (mixed into gradlab.Tensor through ShapeMethods)."""

    __slots__ = ()

    def flip(self, *dims):
        return flip(self, dims)

    def roll(self, shifts, dims=None):
        return roll(self, shifts, dims)

"""Reordering elements: flip (reverse along dims), roll (rotate along dims), rot90, fliplr, flipud.

Both are permutations of the elements, so each gradient is the inverse permutation applied to
the gradient: flipped back, or rolled back by the opposite shift.
"""

from __future__ import annotations

import operator

from ..autograd.function import Function
from ._common import describe, int_tuple, normalize_dim, normalize_dims


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



def fliplr(input):
    """Columns in reverse order: flip along dim 1 (the tensor needs at least two dims)."""
    if input.ndim < 2:
        raise RuntimeError(f"fliplr: Input must be >= 2-d, but got {describe(input)}; use flip(x, (0,)) for a vector")
    return Flip.apply(input, (1,))


def flipud(input):
    """Rows in reverse order: flip along dim 0 (the tensor needs at least one dim)."""
    if input.ndim < 1:
        raise RuntimeError(f"flipud: Input must be >= 1-d, but got {describe(input)}")
    return Flip.apply(input, (0,))


def rot90(input, k=1, dims=(0, 1)):
    """Rotate by 90° k times in the plane of dims, from the first dim towards the second (numpy's rot90).

    One turn is a flip of the second dim and a swap of the two; two turns flip both.
    """
    dims = int_tuple("rot90", (dims,))
    if len(dims) != 2:
        raise RuntimeError(f"rot90: expected total rotation dims == 2, but got dims = {len(dims)} ({list(dims)})")
    if input.ndim < 2:
        raise RuntimeError(f"rot90: expected total dims >= 2, but got total dims = {input.ndim} ({describe(input)})")
    a, b = (normalize_dim("rot90", d, input.ndim) for d in dims)
    if a == b:
        raise RuntimeError(
            f"rot90: expected rotation dims to be different, but got dim0 = {dims[0]} and dim1 = {dims[1]}"
        )
    k = operator.index(k) % 4
    if k == 1:
        return Flip.apply(input, (b,)).transpose(a, b)
    if k == 2:
        return Flip.apply(input, tuple(sorted((a, b))))
    if k == 3:
        return Flip.apply(input, (a,)).transpose(a, b)
    return input.clone()


class ReorderingMethods:
    """Tensor's flip and roll (mixed into gradlab.Tensor through ShapeMethods)."""

    __slots__ = ()

    def flip(self, *args, dims=None):
        return flip(self, args if dims is None else dims)

    def roll(self, shifts, dims=None):
        return roll(self, shifts, dims)

    def fliplr(self):
        return fliplr(self)

    def flipud(self):
        return flipud(self)

    def rot90(self, k=1, dims=(0, 1)):
        return rot90(self, k, dims)

"""Cutting a tensor into pieces along a dim: narrow, split, chunk, unbind, tensor_split — each piece a view.

Cutting is the adjoint of joining: the gradients of the pieces are joined back with cat (or
stack, for unbind), and one piece alone gets its gradient zero-padded back to the full size.
"""

from __future__ import annotations

import builtins
import operator

from ..autograd.function import Function
from ._common import TrackedTensor, describe, normalize_dim, shape_str
from .joining import cat, stack
from .padding import Pad


class Narrow(Function):
    """length elements of one dim from start on (a view); the gradient is zero-padded back to full size."""

    derivative = "∂L/∂x = g zero-padded back to x's shape"
    node_names = ("SliceBackward0",)  # PyTorch's narrow is a slice

    @staticmethod
    def forward(ctx, x, axis, start, length):
        ctx.widths = tuple((start, n - start - length) if i == axis else (0, 0) for i, n in enumerate(x.shape))
        return x._view_of(x.device.backend.getitem(x.array, (slice(None),) * axis + (slice(start, start + length),)))

    @staticmethod
    def backward(ctx, grad):
        return Pad.apply(grad, ctx.widths, 0), None, None, None


class Split(Function):
    """Consecutive pieces along one dim, each a view; their gradients are joined back with cat."""

    derivative = "∂L/∂x = cat(g₁, …, gₙ) along dim, one gradient per piece"

    @staticmethod
    def forward(ctx, x, axis, sizes):
        ctx.axis = axis
        backend, head, start, pieces = x.device.backend, (slice(None),) * axis, 0, []
        for n in sizes:
            pieces.append(x._view_of(backend.getitem(x.array, head + (slice(start, start + n),))))
            start += n
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.axis), None, None


class Unbind(Function):
    """Every slice along one dim, each a view with that dim removed; the gradients are stacked back."""

    derivative = "∂L/∂x = stack(g₁, …, gₙ) along dim, one gradient per slice"

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        backend, head = x.device.backend, (slice(None),) * axis
        return tuple(x._view_of(backend.getitem(x.array, head + (i,))) for i in range(x.shape[axis]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.axis), None


def narrow(input, dim, start, length):
    """input[..., start:start + length, ...] along dim, as a view."""
    axis = normalize_dim("narrow", dim, input.ndim)
    size, start, length = input.shape[axis], operator.index(start), operator.index(length)
    if not -size <= start <= size:
        raise IndexError(f"narrow: start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative (got {length}).")
    if start + length > size:
        raise RuntimeError(
            f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size}) of dim {dim} in a tensor "
            f"of shape {shape_str(input.shape)}."
        )
    return Narrow.apply(input, axis, start, length)


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of split_size along dim (the last may be smaller), or pieces of the listed sizes; views."""
    axis = normalize_dim("split", dim, tensor.ndim)
    size = tensor.shape[axis]
    if hasattr(split_size_or_sections, "__index__"):
        step = operator.index(split_size_or_sections)
        if step < 0 or step == 0 and size != 0:
            raise RuntimeError(
                f"split: split_size must be positive (it can only be 0 if dimension size is 0), but got "
                f"split_size={step} for dimension size {size}"
            )
        sizes = tuple(min(step, size - s) for s in range(0, size, step)) if size else (0,)
    else:
        sizes = tuple(map(operator.index, split_size_or_sections))
        if sum(sizes) != size or any(n < 0 for n in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension "
                f"{dim}), but got split_sizes={list(sizes)}"
            )
    return Split.apply(tensor, axis, sizes)


def chunk(input, chunks, dim=0):
    """Split into chunks pieces of equal size (the last may be smaller, and there may be fewer)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    axis = normalize_dim("chunk", dim, input.ndim)
    size = input.shape[axis]
    if size == 0:
        return Split.apply(input, axis, (0,) * chunks)
    return split(input, -(-size // chunks), axis)


def unbind(input, dim=0):
    """A tuple of all slices along dim, each without that dim (views)."""
    return Unbind.apply(input, normalize_dim("unbind", dim, input.ndim))


def split_with_sizes(input, split_sizes, dim=0):
    """Pieces of exactly the listed sizes along dim (they must add up to its size); views."""
    return split(input, list(split_sizes), dim)


unsafe_split, unsafe_chunk, unsafe_split_with_sizes = split, chunk, split_with_sizes  # (PyTorch: no view checks)


def _clamped(i, size):
    """A Python-style split index (negative counts from the end) clamped into [0, size], as numpy's."""
    return min(builtins.max(i + size if i < 0 else i, 0), size)


def tensor_split(input, indices_or_sections=None, dim=0, *, sections=None, indices=None):
    """numpy's array_split: ``n`` pieces as equal as can be (the first size % n one longer), or the pieces
    between the listed indices (clamped to the dim, possibly empty); every piece a view. PyTorch also
    takes them by keyword: sections=n or indices=[...]."""
    given = [v for v in (indices_or_sections, sections, indices) if v is not None]
    if len(given) != 1:
        raise TypeError("tensor_split(): give exactly one of indices_or_sections, sections= or indices=, "
                        f"got {len(given)}")
    indices_or_sections = given[0]
    axis = normalize_dim("tensor_split", dim, input.ndim)
    size = input.shape[axis]
    if isinstance(indices_or_sections, TrackedTensor):
        if indices_or_sections.dtype.is_floating_point or indices_or_sections.ndim > 1:
            raise RuntimeError(
                f"tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor "
                f"of integers, but got {describe(indices_or_sections)}"
            )
        indices_or_sections = indices_or_sections.tolist()
    if hasattr(indices_or_sections, "__index__"):
        n = operator.index(indices_or_sections)
        if n <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got {n}")
        small, extra = divmod(size, n)
        bounds = [0]
        for j in range(n):
            bounds.append(bounds[-1] + small + (j < extra))
        starts, ends = bounds[:-1], bounds[1:]
    else:
        cuts = [_clamped(operator.index(i), size) for i in indices_or_sections]
        starts, ends = [0] + cuts, cuts + [size]
    return tuple(Narrow.apply(input, axis, a, builtins.max(b - a, 0)) for a, b in zip(starts, ends))


def _split_along(op, input, indices_or_sections, dim, min_ndim):
    """hsplit / vsplit / dsplit: tensor_split along one dim, whose size an int must divide exactly."""
    if input.ndim < min_ndim:
        raise RuntimeError(f"torch.{op} requires a tensor with at least {min_ndim} dimension, but got a tensor with "
                           f"{input.ndim} dimensions! ({describe(input)})")
    if hasattr(indices_or_sections, "__index__"):
        n, size = operator.index(indices_or_sections), input.shape[dim]
        if n == 0 or size % n:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {dim}, but the size of the dimension "
                               f"{size} is not divisible by the split_size {n}!")
    return tensor_split(input, indices_or_sections, dim)


def hsplit(input, indices_or_sections):
    """Split into columns: along dim 1 (dim 0 for a 1-d tensor)."""
    return _split_along("hsplit", input, indices_or_sections, 1 if input.ndim >= 2 else 0, 1)


def vsplit(input, indices_or_sections):
    """Split into rows: along dim 0 of a tensor with at least two dims."""
    return _split_along("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input, indices_or_sections):
    """Split along the depth, dim 2 of a tensor with at least three dims."""
    return _split_along("dsplit", input, indices_or_sections, 2, 3)


class SplittingMethods:
    """Tensor's narrow, split, chunk and unbind (mixed into gradlab.Tensor through ShapeMethods)."""

    __slots__ = ()

    def narrow(self, dim, start, length):
        return narrow(self, dim, start, length)

    def split(self, split_size, dim=0):
        return split(self, split_size, dim)

    def chunk(self, chunks, dim=0):
        return chunk(self, chunks, dim)

    def unbind(self, dim=0):
        return unbind(self, dim)

    def split_with_sizes(self, split_sizes, dim=0):
        return split_with_sizes(self, split_sizes, dim)

    def tensor_split(self, indices_or_sections=None, dim=0, *, sections=None, indices=None):
        return tensor_split(self, indices_or_sections, dim, sections=sections, indices=indices)

    def hsplit(self, indices_or_sections):
        return hsplit(self, indices_or_sections)

    def vsplit(self, indices_or_sections):
        return vsplit(self, indices_or_sections)

    def dsplit(self, indices_or_sections):
        return dsplit(self, indices_or_sections)

    unsafe_split, unsafe_chunk, unsafe_split_with_sizes = split, chunk, split_with_sizes

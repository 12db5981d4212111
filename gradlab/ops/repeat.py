"""Copies along dims: repeat and tile ([a, b] -> [a, b, a, b]) and repeat_interleave ([a, b] -> [a, a, b, b]).

repeat broadcasts the tensor against new axes and copies it; its gradient sums the tiles back.
repeat_interleave has no Function of its own: the same number of copies of every slice is an
expand along a new axis merged into dim (the gradient sums the copies back over that axis); a
count per slice is an index_select by the index 0, 0, 1, 2, 2, ... (the gradient adds each copy back where it was read).
"""

from __future__ import annotations

import operator

from ..autograd.function import Function
from ..dtypes import int32, int64
from ._common import TrackedTensor, check_same_device, data_in, describe, int_tuple, normalize_dim, shape_str
from .indexing import index_select


class Repeat(Function):
    """Tile x by broadcasting it against new axes, then copying; the gradient sums over the tiles."""

    derivative = "∂L/∂x = g summed over the tiles, back to x's shape"

    @staticmethod
    def forward(ctx, x, sizes):
        shape = (1,) * (len(sizes) - x.ndim) + x.shape
        ctx.shape = x.shape
        ctx.tiled = tuple(v for r, n in zip(sizes, shape) for v in (r, n))
        backend = x.device.backend
        spread = backend.broadcast_to(backend.reshape(x.array, tuple(v for n in shape for v in (1, n))), ctx.tiled)
        return x._wrap(backend.reshape(backend.copy(spread), tuple(r * n for r, n in zip(sizes, shape))))

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.tiled).sum(tuple(range(0, len(ctx.tiled), 2))).reshape(ctx.shape), None


def repeat(input, sizes):
    """Copy the tensor sizes[i] times along dim i (sizes may add leading dims)."""
    sizes = int_tuple("repeat", (sizes,))
    if len(sizes) < input.ndim:
        raise RuntimeError(
            f"repeat: Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor "
            f"(got {list(sizes)} for a tensor of shape {shape_str(input.shape)}); use .tile(...) to fill in leading 1s"
        )
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat: trying to create tensor with negative dimension: repeats {list(sizes)}")
    return Repeat.apply(input, sizes)


def tile(input, dims):
    """Like repeat, but fewer dims than the tensor has are padded with leading 1s."""
    dims = int_tuple("tile", (dims,))
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (each slice along dim) of input ``repeats`` times; dim=None works on the flattened input.

    ``repeats`` is an int, or an int tensor with one count per slice. ``repeat_interleave(counts)`` alone gives the
    index that does it: repeat_interleave(tensor([2, 0, 1])) is tensor([0, 0, 2]).
    """
    if repeats is None:
        return _repeat_index(input, output_size)
    op = "repeat_interleave"
    if dim is None:
        input, dim = input.reshape(-1), 0
    elif input.ndim == 0:
        raise IndexError(f"{op}: Dimension specified as {dim} but tensor has no dimensions; "
                         "use dim=None to repeat a 0-d tensor's value")
    else:
        dim = normalize_dim(op, dim, input.ndim)
    size = input.shape[dim]
    if isinstance(repeats, TrackedTensor):
        if repeats.ndim == 0 or repeats.shape == (1,):
            repeats = repeats.reshape(1).expand(size)
        elif repeats.ndim != 1:
            raise RuntimeError(f"{op}: repeats must be 0-dim or 1-dim tensor, got {describe(repeats)}")
        elif repeats.shape[0] != size:
            raise RuntimeError(f"{op}: repeats must have the same size as input along dim, but got repeats.size(0) = "
                               f"{repeats.shape[0]} and input.size({dim}) = {size}")
        check_same_device(op, input, repeats)
        return index_select(input, dim, _repeat_index(repeats, output_size))
    if not hasattr(repeats, "__index__"):
        raise TypeError(f"{op}(): argument 'repeats' must be an int or an int tensor, not {type(repeats).__name__}")
    repeats = operator.index(repeats)
    if repeats < 0:
        raise RuntimeError(f"{op}: Repeats must be non-negative, got {repeats}")
    if output_size is not None and output_size != size * repeats:
        raise RuntimeError(f"{op}: Invalid output_size, expected {size * repeats} but got {output_size}")
    shape = input.shape
    copies = input.unsqueeze(dim + 1).expand(shape[:dim + 1] + (repeats,) + shape[dim + 1:])
    return copies.reshape(shape[:dim] + (size * repeats,) + shape[dim + 1:])


def _repeat_index(repeats, output_size):
    """The index i repeated repeats[i] times, in repeats' dtype: [2, 0, 1] -> [0, 0, 2].

    Position j of the output belongs to the first i whose running total cumsum(repeats)[i] exceeds j,
    i.e. to the number of running totals <= j: a 1 added at each total, summed up again, counts them.
    """
    op = "repeat_interleave"
    if not isinstance(repeats, TrackedTensor):
        raise TypeError(f"{op}(): argument 'repeats' must be a Tensor, not {type(repeats).__name__}")
    if repeats.ndim != 1:
        raise RuntimeError(f"{op}: repeat_interleave only accept 1D vector as repeat, got {describe(repeats)}")
    if repeats.dtype is not int64 and repeats.dtype is not int32:
        raise RuntimeError(f"{op}: repeats has to be Long or Int tensor, got {describe(repeats)}; "
                           "convert it with .long()")
    backend = repeats.device.backend
    counts = data_in(repeats, int64)
    if repeats.shape[0] and bool(backend.to_numpy(backend.any(backend.lt(counts, 0)))):
        raise RuntimeError(f"{op}: repeats can not be negative, got {repeats.tolist()}")
    totals = backend.cumsum(counts, 0)
    total = int(backend.to_numpy(backend.getitem(totals, (-1,)))) if repeats.shape[0] else 0
    if output_size is not None and output_size != total:
        raise RuntimeError(f"{op}: allocated size does not match required size: output_size={output_size}, but the "
                           f"repeats add up to {total}")
    inside = backend.getitem(totals, (backend.lt(totals, total),))  # the last totals (= total) mark nothing
    marks = backend.zeros((total,), int64)
    backend.add_at(marks, (inside,), backend.ones(inside.shape, int64))
    index = backend.cumsum(marks, 0)
    return repeats._wrap(index if repeats.dtype is int64 else backend.astype(index, repeats.dtype))


class RepeatMethods:
    """Tensor's repeat, tile and repeat_interleave (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def repeat(self, *args, repeats=None):
        return repeat(self, args if repeats is None else repeats)

    def tile(self, *args, dims=None):
        return tile(self, args if dims is None else dims)

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        return repeat_interleave(self, repeats, dim, output_size=output_size)

"""repeat_interleave: each slice along a dim repeated in place, [a, b] -> [a, a, b, b].

No Function of its own: the same number of copies of every slice is an expand along a new axis
merged into dim (the gradient sums the copies back over that axis); a count per slice is an
index_select by the index 0, 0, 1, 2, 2, ... (the gradient adds each copy back where it was read).
"""

from __future__ import annotations

import operator

from ..dtypes import int32, int64
from ._common import TrackedTensor, describe, normalize_dim
from .indexing import index_select


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
        if repeats.device is not input.device:
            raise RuntimeError(f"{op}: expected repeats on the input's device ({input.device}), got "
                               f"{describe(repeats)}; move them with .to('{input.device}')")
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
    counts = repeats.array if repeats.dtype is int64 else backend.astype(repeats.array, int64)
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
    """Tensor's repeat_interleave (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        return repeat_interleave(self, repeats, dim, output_size=output_size)

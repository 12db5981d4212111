"""Sorting and order statistics: sort, topk, kthvalue, median, mode, quantile, cummax, unique, searchsorted.

One idea does the work. The backend's stable argsort gives, along a dim, the positions that put
the values in order; the values are then read at those positions with ``GetItem``, whose backward
adds each gradient back where its value came from. So every op here that returns values is
differentiable the same way: the gradient goes to the elements that were chosen (quantile mixes two).
NaN sorts as the largest value, as in PyTorch.
"""

from __future__ import annotations

from .. import return_types
from .autocast import autocast_op
from ..dtypes import bool_, int32, int64
from ._common import TrackedTensor, check_same_device, describe, normalize_dim
from .indexing import GetItem, _along

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


# --- positions in sorted order -----------------------------------------------------------------


def _order(x, axis, descending=False):
    """The int64 positions that sort x along axis, stably (equal values keep their order), NaN last."""
    backend = x.device.backend
    if not descending:
        return _int64(backend, backend.argsort(x.array, axis))
    # stable and descending: sort the reversed axis ascending, then read that order backwards
    backwards = backend.argsort(backend.flip(x.array, (axis,)), axis)
    return _int64(backend, backend.sub(x.shape[axis] - 1, backend.flip(backwards, (axis,))))


def _int64(backend, array):
    return array if backend.dtype_of(array) is int64 else backend.astype(array, int64)


def _positions_along(backend, shape, axis):
    """0, 1, 2, ... along axis, shaped to broadcast against an array of shape."""
    n = shape[axis]
    return backend.reshape(backend.arange(0, n, 1, int64), tuple(n if d == axis else 1 for d in range(len(shape))))


def _slice_along(ndim, axis, part):
    return (slice(None),) * axis + (part,) + (slice(None),) * (ndim - axis - 1)


def _pick(x, axis, positions):
    """x's values at the positions along axis (an int64 backend array); g flows back to the picked elements."""
    return GetItem.apply(x, _along(x, positions.shape, axis, positions))


def _rows(op, input, dim):
    """input (a 0-d tensor as one element), dim as a non-negative axis, and whether input was 0-d."""
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"{op}(): argument 'dim' must be an int, not {type(dim).__name__} ({dim!r})")
    axis = normalize_dim(op, dim, input.ndim)
    return (input.reshape(1) if input.ndim == 0 else input), axis, input.ndim == 0


def _result(kind, x, axis, positions, scalar, keepdim=True):
    """kind(values, indices): the values at positions (differentiable) and the positions themselves."""
    values, indices = _pick(x, axis, positions), x._wrap(positions)
    if scalar:
        values, indices = values.reshape(()), indices.reshape(())
    elif not keepdim:
        values, indices = values.squeeze(axis), indices.squeeze(axis)
    return kind(values, indices)


def _nonempty(op, x, axis, dim):
    if x.shape[axis] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {dim} to have non-zero size, got {describe(x)}")


def _not_nan_count(x, axis):
    """How many values along axis are not NaN (keepdim form, int64)."""
    backend = x.device.backend
    if not x.dtype.is_floating_point:
        return backend.full(tuple(1 if d == axis else n for d, n in enumerate(x.shape)), x.shape[axis], int64)
    return _int64(backend, backend.sum(backend.logical_not(backend.isnan(x.array)), (axis,), True))


# --- sort, argsort, msort, topk --------------------------------------------------------------------


def sort(input, dim=-1, descending=False, *, stable=False):
    """(values, indices): input sorted along dim and where each value came from; always stable."""
    x, axis, scalar = _rows("sort", input, dim)
    return _result(return_types.sort, x, axis, _order(x, axis, descending), scalar)


def argsort(input, dim=-1, descending=False, *, stable=False):
    """The positions that sort input along dim (sort(...).indices); equal values keep their order."""
    x, axis, scalar = _rows("argsort", input, dim)
    order = x._wrap(_order(x, axis, descending))
    return order.reshape(()) if scalar else order


def msort(input):
    """input sorted along its first dim: sort(input, dim=0).values."""
    return sort(input, 0).values


def topk(input, k, dim=-1, largest=True, sorted=True):
    """(values, indices) of the k largest (largest=False: smallest) along dim, in order; NaN counts as largest."""
    x, axis, scalar = _rows("topk", input, dim)
    n = x.shape[axis]
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= n:
        raise RuntimeError(f"topk(): selected index k out of range: k={k!r} but dimension {dim} of {describe(input)} "
                           f"has size {n}; pick k from 0 to {n}")
    order = _order(x, axis, descending=largest)
    first_k = x.device.backend.getitem(order, _slice_along(x.ndim, axis, slice(0, k)))
    return _result(return_types.topk, x, axis, first_k, scalar)


# --- order statistics: kthvalue, median, nanmedian, mode ---------------------------------------


def kthvalue(input, k, dim=-1, keepdim=False):
    """(values, indices) of the k-th smallest element along dim (k counts from 1)."""
    x, axis, scalar = _rows("kthvalue", input, dim)
    _nonempty("kthvalue", x, axis, dim)
    n = x.shape[axis]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}: k={k!r} but "
                         f"{describe(input)} has {n} elements there; pick k from 1 to {n}")
    kth = x.device.backend.getitem(_order(x, axis), _slice_along(x.ndim, axis, slice(k - 1, k)))
    return _result(return_types.kthvalue, x, axis, kth, scalar, keepdim)


def _median(op, kind, input, dim, keepdim, ignore_nan):
    """The lower median along dim: position (n - 1) // 2 of the sorted values, n counting what is kept.

    A NaN makes median NaN (the first NaN is chosen); nanmedian leaves the NaNs out.
    """
    x, axis, scalar = _rows(op, input, dim)
    _nonempty(op, x, axis, dim)
    backend, n = x.device.backend, x.shape[axis]
    count = _not_nan_count(x, axis)
    if ignore_nan:
        position = backend.floor_divide(backend.maximum(backend.sub(count, 1), 0), 2)
    else:  # NaN sorts last, so position `count` holds the first NaN of the slice
        position = backend.where(backend.lt(count, n), count, (n - 1) // 2)
    chosen = backend.take_along_axis(_order(x, axis), _int64(backend, position), axis)
    return _result(kind, x, axis, chosen, scalar, keepdim)


def median(input, dim=None, keepdim=False):
    """median(x): the lower of the two middle values (NaN if there is one). median(x, dim): (values, indices)."""
    if dim is None:
        if input.numel() == 0 and input.dtype.is_floating_point:
            return input.new_full((), float("nan"))  # as PyTorch: the median of nothing is NaN
        return _median("median", return_types.median, input.reshape(-1), 0, False, False).values
    return _median("median", return_types.median, input, dim, keepdim, False)


def nanmedian(input, dim=None, keepdim=False):
    """median with the NaNs left out (NaN only where a slice is all NaN)."""
    if dim is None:
        if input.numel() == 0 and input.dtype.is_floating_point:
            return input.new_full((), float("nan"))  # as PyTorch: the median of nothing is NaN
        return _median("nanmedian", return_types.nanmedian, input.reshape(-1), 0, False, True).values
    return _median("nanmedian", return_types.nanmedian, input, dim, keepdim, True)


def mode(input, dim=-1, keepdim=False):
    """(values, indices): the most frequent value along dim (the smallest if several are), at its last position.

    In sorted order equal values form runs; the end of the first longest run is the answer.
    """
    x, axis, scalar = _rows("mode", input, dim)
    _nonempty("mode", x, axis, dim)
    backend, ndim = x.device.backend, x.ndim
    order = _order(x, axis)
    ordered = backend.take_along_axis(x.array, order, axis)
    # a run starts where a value differs from the one before it (NaN != NaN: each NaN is a run of its own)
    differs = backend.ne(backend.getitem(ordered, _slice_along(ndim, axis, slice(1, None))),
                         backend.getitem(ordered, _slice_along(ndim, axis, slice(0, -1))))
    first = backend.full(tuple(1 if d == axis else n for d, n in enumerate(x.shape)), True, bool_)
    starts = backend.concatenate([first, differs], axis)
    along = _positions_along(backend, x.shape, axis)
    run_start = backend.cummax(backend.where(starts, along, 0), axis)
    run_length = backend.add(backend.sub(along, run_start), 1)  # the length of each run so far
    longest = backend.max(run_length, (axis,), True)
    run_end = _int64(backend, backend.argmax(backend.eq(run_length, longest), axis, True))
    # sorting is stable, so the end of a run is the value's last position in the input
    chosen = backend.take_along_axis(order, run_end, axis)
    return _result(return_types.mode, x, axis, chosen, scalar, keepdim)


# --- running max and min ---------------------------------------------------------------------------


def _running(op, kind, input, dim, step):
    """(values, indices): the max/min so far along dim, and the last position that reached it."""
    x, axis, scalar = _rows(op, input, dim)
    backend = x.device.backend
    best = getattr(backend, step)(x.array, axis)
    reached = backend.eq(x.array, best)
    if x.dtype.is_floating_point:  # a NaN is the running max/min from where it appears
        reached = backend.logical_or(reached, backend.isnan(x.array))
    positions = backend.cummax(backend.where(reached, _positions_along(backend, x.shape, axis), 0), axis)
    return _result(kind, x, axis, _int64(backend, positions), scalar)


def cummax(input, dim):
    """(values, indices): the largest value so far along dim, and where it was (the later one among equals)."""
    return _running("cummax", return_types.cummax, input, dim, "cummax")


def cummin(input, dim):
    """(values, indices): the smallest value so far along dim, and where it was (the later one among equals)."""
    return _running("cummin", return_types.cummin, input, dim, "cummin")


# --- quantile ----------------------------------------------------------------------------------


def _q_array(op, input, q):
    """q as a backend array of input's dtype, with its shape: () for a number, (Q,) for a 1-D tensor."""
    backend = input.device.backend
    if isinstance(q, TrackedTensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor, got {describe(q)}")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor: q is {describe(q)}, "
                               f"input is {describe(input)}; convert q with .to(gradlab.{input.dtype.name})")
        data = q.array
    elif isinstance(q, (int, float)) and not isinstance(q, bool):
        data = backend.asarray(q, input.dtype)
    else:
        raise TypeError(f"{op}(): q must be a float or a tensor of floats, got {describe(q)}")
    if 0 not in data.shape:
        low, high = (float(backend.to_numpy(f(data))) for f in (backend.min, backend.max))
        if not (0 <= low and high <= 1):  # written so that a NaN q fails too
            raise RuntimeError(f"{op}() q values must be in the range [0, 1], got values from {low} to {high}")
    return data


def _quantile(op, input, q, dim, keepdim, interpolation, ignore_nan):
    """Sort, find each quantile's fractional rank q · (n - 1), and read (or interpolate) the sorted values there."""
    if not isinstance(input, TrackedTensor) or not input.dtype.is_floating_point:
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got {describe(input)}")
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"{op}() interpolation must be one of {', '.join(_INTERPOLATIONS)}. Got {interpolation!r}")
    if input.numel() == 0:
        raise IndexError(f"{op}() input tensor must be non-empty, got {describe(input)}")
    q_data = _q_array(op, input, q)
    x, axis, _ = _rows(op, input.reshape(-1) if dim is None else input, 0 if dim is None else dim)
    backend, n = x.device.backend, x.shape[axis]
    values = _pick(x, axis, _order(x, axis))  # sorted, and differentiable
    count = _not_nan_count(x, axis) if ignore_nan else n
    many = backend.reshape(q_data, (-1,) + (1,) * x.ndim)  # one leading dim for the quantiles
    kept = tuple(1 if d == axis else size for d, size in enumerate(x.shape))
    rank = backend.mul(many, backend.sub(count, 1))  # where each quantile falls among the sorted values
    rank = backend.copy(backend.broadcast_to(rank, many.shape[:1] + kept))
    if interpolation == "nearest":
        rank = backend.round(rank)  # half to even, as torch.round
    below = backend.maximum(backend.floor(rank), 0)  # an all-NaN slice (nanquantile) has rank -q
    above = backend.maximum(backend.minimum(backend.ceil(rank), n - 1), 0)
    values = values.unsqueeze(0).expand((many.shape[0],) + values.shape)
    low = _pick(values, axis + 1, backend.astype(below, int64))
    if interpolation in ("lower", "nearest"):
        out = low
    else:
        high = _pick(values, axis + 1, backend.astype(above, int64))
        if interpolation == "higher":
            out = high
        else:
            weight = backend.full(rank.shape, 0.5, x.dtype) if interpolation == "midpoint" else \
                backend.astype(backend.sub(rank, below), x.dtype)
            out = low + (high - low) * x._wrap(weight)
    if not ignore_nan:  # one NaN makes the slice's quantiles NaN
        has_nan = backend.any(backend.isnan(x.array), (axis,), True)
        out = out.masked_fill(x._wrap(backend.broadcast_to(has_nan, out.shape)), float("nan"))
    if dim is None:
        out = out.reshape((-1,) + ((1,) * input.ndim if keepdim else ()))
    elif not keepdim or input.ndim == 0:
        out = out.squeeze(axis + 1)
    return out.reshape(out.shape[1:]) if q_data.ndim == 0 else out


@autocast_op("fp32")
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """The q-th quantiles along dim (None: of all elements), interpolating between sorted neighbours.

    q is a number or a 1-D tensor (its values make a new first dim); a NaN makes the result NaN.
    """
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@autocast_op("fp32")
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """quantile with the NaNs left out (NaN only where a slice is all NaN)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


# --- unique and unique_consecutive ---------------------------------------------------------------


def _lexsort_rows(backend, rows):
    """Positions that sort the rows of a 2-D array lexicographically: a stable sort by each column, last first."""
    order = backend.arange(0, rows.shape[0], 1, int64)
    for column in reversed(range(rows.shape[1])):
        keys = backend.getitem(rows, (order, column))
        order = backend.getitem(order, (backend.argsort(keys, 0),))
    return order


def _unique(op, input, sort_rows, return_inverse, return_counts, dim):
    """Group equal elements (dim=None) or equal slices along dim; the results hold no gradient."""
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    backend = input.device.backend
    if dim is None:
        rows, moved_shape = backend.reshape(input.array, (-1, 1)), None
    else:
        axis = normalize_dim(op, dim, input.ndim)
        axes = (axis,) + tuple(d for d in range(input.ndim) if d != axis)
        moved = backend.permute(input.array if input.ndim else backend.reshape(input.array, (1,)), axes)
        rows, moved_shape = backend.reshape(moved, (moved.shape[0], -1)), moved.shape
    n = rows.shape[0]
    order = _lexsort_rows(backend, rows) if sort_rows else backend.arange(0, n, 1, int64)
    ordered = backend.getitem(rows, (order,))
    # a new group starts where a row differs from the row before it (NaN != NaN: NaNs stay apart)
    differs = backend.any(backend.ne(backend.getitem(ordered, (slice(1, None),)),
                                     backend.getitem(ordered, (slice(0, -1),))), (1,), False)
    starts = backend.concatenate([backend.full((min(n, 1),), True, bool_), differs], 0)
    kept = backend.getitem(ordered, (starts,))
    if dim is None:
        values = backend.reshape(kept, (-1,))
    else:
        inverse_axes = tuple(sorted(range(len(axes)), key=lambda d: axes[d]))
        values = backend.permute(backend.reshape(kept, (kept.shape[0],) + moved_shape[1:]), inverse_axes)
    results = [input._wrap(values)]
    if return_inverse:
        group = backend.sub(_int64(backend, backend.cumsum(starts, 0)), 1)
        inverse = backend.zeros((n,), int64)
        backend.setitem(inverse, (order,), group)
        results.append(input._wrap(backend.reshape(inverse, input.shape if dim is None else (n,))))
    if return_counts:
        first = backend.getitem(backend.arange(0, n, 1, int64), (starts,))
        ends = backend.concatenate([backend.getitem(first, (slice(1, None),)), backend.full((min(n, 1),), n, int64)], 0)
        results.append(input._wrap(backend.sub(ends, first)))
    return results[0] if len(results) == 1 else tuple(results)


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or slices along dim) in ascending order; inverse maps input to them.

    Returns a tensor, or a tuple with the inverse indices and/or the counts when asked for.
    """
    return _unique("unique", input, True, return_inverse, return_counts, dim)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """unique within each run of equal neighbours: [1, 1, 2, 1] gives [1, 2, 1]."""
    return _unique("unique_consecutive", input, False, return_inverse, return_counts, dim)


# --- searchsorted and bucketize ----------------------------------------------------------------


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each value would go in the sorted innermost dim to keep it sorted (right: after equal elements).

    A binary search, run for all values at once: each step compares every value with the middle of its range.
    """
    op = "searchsorted"
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"{op}(): side can only be 'left' or 'right' but got {side!r}")
        if right and side == "left":
            raise RuntimeError(f"{op}(): side and right can't be set to opposites, got side of left while right "
                               "was True")
        right = side == "right"
    if not isinstance(sorted_sequence, TrackedTensor):
        raise TypeError(f"{op}(): argument 'sorted_sequence' must be a Tensor, not {type(sorted_sequence).__name__}")
    backend = sorted_sequence.device.backend
    values = input if isinstance(input, TrackedTensor) else sorted_sequence.new_tensor(input)
    if sorted_sequence.ndim == 0 or sorted_sequence.ndim > 1 and sorted_sequence.shape[:-1] != values.shape[:-1]:
        raise RuntimeError(f"{op}(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                           f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                           f"{list(sorted_sequence.shape)} and input value tensor {list(values.shape)}")
    check_same_device(f"{op}()", sorted_sequence, values)
    seq = sorted_sequence.array
    if sorter is not None:
        if not isinstance(sorter, TrackedTensor) or sorter.shape != sorted_sequence.shape or sorter.dtype is not int64:
            raise RuntimeError(f"{op}(): sorter must be an int64 tensor of the boundaries' shape "
                               f"{list(sorted_sequence.shape)}, got {describe(sorter)}")
        seq = backend.take_along_axis(seq, sorter.array, -1)
    v = values.array
    low = backend.zeros(values.shape, int64)
    high = backend.full(values.shape, seq.shape[-1], int64)
    for _ in range(seq.shape[-1].bit_length()):  # each step halves every value's search range
        middle = backend.floor_divide(backend.add(low, high), 2)
        at = backend.minimum(middle, seq.shape[-1] - 1)
        probe = backend.getitem(seq, (at,)) if seq.ndim == 1 else backend.take_along_axis(seq, at, -1)
        # go right while the probe is below the value (right: not above it), PyTorch's test, NaN included
        right_of = backend.logical_not(backend.gt(probe, v) if right else backend.ge(probe, v))
        searching = backend.lt(low, high)
        low = backend.where(backend.logical_and(searching, right_of), backend.add(middle, 1), low)
        high = backend.where(backend.logical_and(searching, backend.logical_not(right_of)), middle, high)
    count = low
    return values._wrap(backend.astype(count, int32 if out_int32 else int64))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value: i with boundaries[i-1] < x <= boundaries[i] (right=True: [i-1] <= x < [i])."""
    if not isinstance(boundaries, TrackedTensor) or boundaries.ndim != 1:
        shape = list(boundaries.shape) if isinstance(boundaries, TrackedTensor) else type(boundaries).__name__
        raise RuntimeError(f"bucketize(): boundaries tensor must be 1 dimension, but got {shape}")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


class SortingMethods:
    """Tensor's sorting methods (mixed into gradlab.Tensor): the functional forms, the tensor first."""

    __slots__ = ()

    sort, argsort, msort, topk, kthvalue = sort, argsort, msort, topk, kthvalue
    median, nanmedian, mode, quantile, nanquantile = median, nanmedian, mode, quantile, nanquantile
    cummax, cummin, unique, unique_consecutive = cummax, cummin, unique, unique_consecutive

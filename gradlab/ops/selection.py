"""Selecting by position or mask: nonzero, argwhere, masked_select/scatter, take/put, select, select/slice_scatter.

None of these needs a Function of its own: each builds an index and reads it with ``GetItem`` or
writes it with ``IndexPut``/``IndexAdd`` (see indexing.py), so their gradients come from those three.
"""

from __future__ import annotations

from ..dtypes import bool_, int64
from ._common import TrackedTensor, broadcast_shapes, check_same_device, describe, normalize_dim
from ._common import in_place
from .indexing import GetItem, IndexAdd, IndexPut, IndexOutOfBoundsError, _apply, _index_data


def _tensor(op, name, value):
    if not isinstance(value, TrackedTensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(value).__name__}")
    return value


def _bool_mask(op, input, mask):
    _tensor(op, "mask", mask)
    if mask.dtype is not bool_:
        raise RuntimeError(f"{op}: expected BoolTensor for mask, got {describe(mask)}; make one with a comparison "
                           "(x > 0) or .bool()")
    check_same_device(op, input, mask)
    return mask


# --- where the non-zeros are ------------------------------------------------------------------


def nonzero(input, *, as_tuple=False):
    """The indices of the non-zero elements: one row (i, j, ...) each, in row-major order, as int64.

    as_tuple=True gives one 1-D tensor per dim instead, ready to index with: x[x.nonzero(as_tuple=True)].
    """
    _tensor("nonzero", "input", input)
    backend = input.device.backend
    data = input.array if input.ndim else backend.reshape(input.array, (1,))
    found = backend.ne(data, 0)
    columns = []
    for d, n in enumerate(data.shape):
        along = backend.reshape(backend.arange(0, n, 1, int64), tuple(n if i == d else 1 for i in range(data.ndim)))
        columns.append(backend.getitem(backend.broadcast_to(along, data.shape), (found,)))
    if as_tuple:
        return tuple(input._wrap(c) for c in columns)
    if not input.ndim:  # a 0-d tensor has one element and no dims to name: shape (count, 0)
        return input._wrap(backend.zeros((columns[0].shape[0], 0), int64))
    return input._wrap(backend.stack(columns, 1))


def argwhere(input):
    """nonzero(input): one row of indices per non-zero element."""
    return nonzero(input)


def nonzero_static(input, *, size, fill_value=-1):
    """nonzero with exactly size rows: cut off, or padded with fill_value."""
    found = nonzero(input)
    backend = input.device.backend
    rows = backend.getitem(found.array, (slice(0, size),))
    if rows.shape[0] < size:
        padding = backend.full((size - rows.shape[0], rows.shape[1]), fill_value, int64)
        rows = backend.concatenate([rows, padding], 0)
    return input._wrap(rows)


# --- masks -------------------------------------------------------------------------------------


def masked_select(input, mask):
    """The elements of input where mask is True (the two broadcast), as a 1-D tensor."""
    mask = _bool_mask("masked_select", input, mask)
    shape = broadcast_shapes(input.shape, mask.shape, op="masked_select")
    input = input if input.shape == shape else input.expand(shape)
    mask_data = mask.array if mask.shape == shape else input.device.backend.broadcast_to(mask.array, shape)
    return GetItem.apply(input, (mask_data,))


def masked_scatter(input, mask, source):
    """A copy of input whose places where mask is True take source's elements, in order (source.numel() >= count)."""
    mask = _bool_mask("masked_scatter", input, mask)
    _tensor("masked_scatter", "source", source)
    shape = broadcast_shapes(input.shape, mask.shape, op="masked_scatter")
    backend = input.device.backend
    mask_data = mask.array if mask.shape == shape else backend.broadcast_to(mask.array, shape)
    count = int(backend.to_numpy(backend.sum(mask_data)))
    if source.numel() < count:
        raise RuntimeError(f"masked_scatter: Number of elements of source < number of ones in mask: source "
                           f"{describe(source)} has {source.numel()} elements, the mask picks {count}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"masked_scatter: expected source of the same dtype as self, got self {describe(input)} "
                           f"and source {describe(source)}")
    input = input if input.shape == shape else input.expand(shape)
    return IndexPut.apply(input, (mask_data,), source.reshape(-1)[:count])


# --- the flattened tensor: take and put ----------------------------------------------------------


def _flat_index(op, input, index):
    """index as an int64 array into input.reshape(-1), negatives counting from the end, bounds checked."""
    _tensor(op, "index", index)
    data = _index_data(op, input, index)
    backend, n = input.device.backend, input.numel()
    if 0 not in data.shape:
        for end in (backend.min(data), backend.max(data)):
            value = int(backend.to_numpy(end))
            if not -n <= value < n:
                raise IndexOutOfBoundsError(f"{op}(): out of range: tried to access index {value} on a tensor of "
                                            f"{n} elements (valid indices are {-n} to {n - 1})")
    return data


def take(input, index):
    """input as if flattened, read at index: the result has index's shape (negative indices count from the end)."""
    return GetItem.apply(input.reshape(-1), (_flat_index("take", input, index),))


def put(input, index, source, accumulate=False):
    """A copy of input with input.flatten()[index] = source (accumulate=True: +=, repeats adding up)."""
    data = _flat_index("put", input, index)
    _tensor("put", "source", source)
    if source.numel() != index.numel():
        raise RuntimeError(f"put(): Expected source and index to have the same number of elements, but got source "
                           f"{describe(source)} and index {describe(index)}")
    if source.dtype is not input.dtype:
        raise RuntimeError(f"put(): self ({input.dtype.name}) and source ({source.dtype.name}) must have the same "
                           f"scalar type; convert source with .to(gradlab.{input.dtype.name})")
    write = IndexAdd if accumulate else IndexPut
    backend = input.device.backend
    flat = write.apply(input.reshape(-1), (backend.reshape(data, (-1,)),), source.reshape(-1))
    return flat.reshape(input.shape)


# --- one slice: select, select_scatter, slice_scatter ---------------------------------------------


def _select_index(op, input, dim, index):
    """The basic index (:, ..., index) that picks one slice, with PyTorch's range check."""
    if isinstance(index, TrackedTensor):
        index = int(index)
    if input.ndim == 0:
        raise IndexError(f"{op}() cannot be applied to a 0-dim tensor ({describe(input)}); it has no dim to select from")
    dim = normalize_dim(op, dim, input.ndim)
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexOutOfBoundsError(f"{op}(): index {index} out of range for tensor of size {list(input.shape)} "
                                    f"at dimension {dim}")
    return (slice(None),) * dim + (index, Ellipsis)


def select(input, dim, index):
    """The slice at index along dim, that dim removed: x.select(1, i) is x[:, i] (a view; negative i from the end)."""
    return GetItem.apply(input, _select_index("select", input, dim, index))


def _embed(op, input, src, key):
    """A copy of input with input[key] = src, src having exactly the shape of that slice."""
    _tensor(op, "src", src)
    region = input.device.backend.getitem(input.array, key).shape
    if tuple(src.shape) != tuple(region):
        raise RuntimeError(f"{op}(): expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(region)}")
    return _apply(op, IndexPut, input, key, src)


def select_scatter(input, src, dim, index):
    """A copy of input with its slice at index along dim replaced by src (the out-of-place x[:, i] = src)."""
    return _embed("select_scatter", input, src, _select_index("select_scatter", input, dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """A copy of input with input[..., start:end:step, ...] (along dim) replaced by src."""
    dim = normalize_dim("slice_scatter", dim, input.ndim)
    if step is None or step <= 0:
        raise RuntimeError(f"slice_scatter(): slice step must be positive, got {step}")
    return _embed("slice_scatter", input, src, (slice(None),) * dim + (slice(start, end, step), Ellipsis))


def select_copy(input, dim, index):
    """select, copied out: a tensor of its own rather than a view."""
    return select(input, dim, index).clone()


def slice_copy(input, dim=0, start=None, end=None, step=1):
    """input[..., start:end:step, ...] along dim, copied out."""
    dim = normalize_dim("slice_copy", dim, input.ndim)
    if step is None or step <= 0:
        raise RuntimeError(f"slice_copy(): slice step must be positive, got {step}")
    return GetItem.apply(input, (slice(None),) * dim + (slice(start, end, step), Ellipsis)).clone()


class SelectionMethods:
    """Tensor's selection methods (mixed into gradlab.Tensor): the functional forms, the tensor first."""

    __slots__ = ()

    nonzero, nonzero_static, argwhere, masked_select, masked_scatter = (nonzero, nonzero_static, argwhere,
                                                                        masked_select, masked_scatter)
    take, put, select, select_scatter, slice_scatter = take, put, select, select_scatter, slice_scatter
    masked_scatter_ = in_place("masked_scatter_", masked_scatter)
    put_ = in_place("put_", put)

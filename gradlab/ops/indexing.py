"""Indexing: x[...], x[...] = v, gather/scatter(_reduce), index_select/add/copy/fill/reduce/put, masked_fill.

Three Functions do most of the work. ``GetItem`` reads x[index]; ``IndexPut`` returns a copy of x with
x[index] = value; ``IndexAdd`` a copy with x[index] += value, where a repeated index adds each
time. Each backward is written with the others: a read sends its gradient back by adding it where
the values came from, and a write reads the gradient of the values back out. gather, scatter,
index_select, index_add, index_copy and take_along_dim only build an index tuple for one of the three;
``ScatterReduce`` combines repeated writes by prod, mean, amax or amin. An index outside its dimension
is an error, never wrapped around: only where PyTorch counts negative indices from the end (x[-1],
index_fill, index_put) does gradlab.
"""

from __future__ import annotations

import functools
import operator

from ..autograd import observers
from ..autograd.broadcasting import sum_to_shape
from ..autograd.function import Function
from ..dtypes import bool_, int32, int64
from ._common import in_place
from .elementwise import where
from ._common import ShapeError, TrackedTensor, broadcast_shapes, check_same_device, describe, normalize_dim, shape_str

_BASIC = frozenset((int, slice, type(None), type(Ellipsis)))  # index items that give a view


class IndexOutOfBoundsError(IndexError, RuntimeError):
    """An index past the end of a dimension: an IndexError as for x[i], a RuntimeError as for gather."""


class GetItem(Function):
    """x[index]: the gradient is added back at the places the values were read from (repeats add up).

    Ints, slices and None give a view of x; index arrays and masks give a copy.
    """

    derivative = "∂L/∂x = zeros of x's shape with g added at [index]"
    # PyTorch records an index array or mask as IndexBackward0, and a basic index by its last step (x[0] selects,
    # x[1:] slices, x[None] unsqueezes, x[...] aliases): variants 1 to 4, picked by _basic_step
    node_names = ("IndexBackward0", "SelectBackward0", "SliceBackward0", "UnsqueezeBackward0", "AliasBackward0")

    @staticmethod
    def forward(ctx, x, index):
        ctx.shape, ctx.index = x.shape, index
        out = x.device.backend.getitem(x.array, index)
        if all(type(item) in _BASIC for item in index):
            ctx.recorded_as(_basic_step(index))
            return x._view_of(out)
        return x._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        # each value's gradient goes back where the value was read; a repeated index adds up
        write = IndexAdd if _may_repeat(grad, ctx.index) else IndexPut
        return write.apply(grad.new_zeros(ctx.shape), ctx.index, grad), None


def _basic_step(index) -> int:
    """Which of GetItem's names PyTorch gives a basic index: its last item that is not ``...`` or ``:``."""
    full = False
    for item in reversed(index):
        if item.__class__ is slice and item == _FULL:
            full = True
        elif item is not Ellipsis:
            return 1 if item.__class__ is int else 2 if item.__class__ is slice else 3
    return 2 if full else 4


_FULL = slice(None)


class Gather(GetItem):
    """gather(x, dim, index): GetItem on the index it builds, named as PyTorch's gather."""

    node_names = ("GatherBackward0",)


class IndexSelect(GetItem):
    """index_select(x, dim, index): GetItem on the index it builds, named as PyTorch's index_select."""

    node_names = ("IndexSelectBackward0",)


class IndexPut(Function):
    """A copy of x with x[index] = value: the written places pass their gradient to value, the rest to x."""

    derivative = "∂L/∂x = g with zeros at [index];  ∂L/∂value = g[index] summed back to value's shape"

    @staticmethod
    def forward(ctx, x, index, value):
        ctx.index, ctx.value_shape, ctx.value_dtype = index, _shape(value), _dtype(value)
        backend = x.device.backend
        out = backend.copy(x.array)
        backend.setitem(out, index, _value_data(x, value))
        return x._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        grad_x = IndexPut.apply(grad, ctx.index, 0.0) if ctx.needs_input_grad[0] else None
        return grad_x, None, (_value_grad(ctx, grad) if ctx.needs_input_grad[2] else None)


class IndexAdd(Function):
    """A copy of x with value added at x[index]: x gets the gradient unchanged, value reads it at index.

    A repeated index adds each of its values.
    """

    derivative = "∂L/∂x = g;  ∂L/∂value = g[index] summed back to value's shape"

    @staticmethod
    def forward(ctx, x, index, value):
        ctx.index, ctx.value_shape, ctx.value_dtype = index, _shape(value), _dtype(value)
        backend = x.device.backend
        out = backend.copy(x.array)
        backend.add_at(out, index, _value_data(x, value))
        return x._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        return grad, None, (_value_grad(ctx, grad) if ctx.needs_input_grad[2] else None)


class ScatterReduce(Function):
    """A copy of x with each src value combined into x[index] by sum, prod, mean, amax or amin.

    include_self=False leaves x's own value out wherever something is written. The gradient follows
    PyTorch: sum passes g on, mean divides it by the count, prod multiplies it by the product of the
    others, amax/amin split it evenly among the elements equal to the result.
    """

    derivative = ("∂L/∂x, ∂L/∂src = sum: g, g[index];  mean: (g / count), (g / count)[index];  "
                  "prod: g · Π others;  amax/amin: g / ties where equal to out, else 0")

    @staticmethod
    def forward(ctx, x, index, src, reduce, include_self):
        backend = x.device.backend
        values = _value_data(x, src)
        out = backend.copy(x.array)
        touched = backend.zeros(x.shape, bool_)
        backend.setitem(touched, index, True)
        if not include_self:  # start each written place from the identity (amax/amin: from one of the values)
            backend.setitem(out, index, values if reduce in ("amax", "amin") else (1 if reduce == "prod" else 0))
        getattr(backend, _REDUCE_AT[reduce])(out, index, values)
        if reduce == "mean":
            count = backend.full(x.shape, 1 if include_self else 0, int64)
            backend.add_at(count, index, 1)
            count = backend.maximum(count, 1)  # a place nothing was written to keeps x's value
            out = backend.div(out, count) if x.dtype.is_floating_point else backend.floor_divide(out, count)
            out = backend.astype(out, x.dtype)
            ctx.count = count
        ctx.index, ctx.reduce, ctx.include_self, ctx.touched = index, reduce, include_self, touched
        result = x._wrap(out)
        ctx.save_for_backward(x, src, result)
        return result

    @staticmethod
    def backward(ctx, grad):
        x, src, out = ctx.saved_tensors
        index, reduce, include_self = ctx.index, ctx.reduce, ctx.include_self
        touched = None if include_self else grad._wrap(ctx.touched)
        if reduce in ("sum", "mean"):
            if reduce == "mean":
                grad = grad / grad._wrap(ctx.count).to(grad.dtype)
            grad_x = grad if include_self else grad.masked_fill(touched, 0.0)
            grad_src = GetItem.apply(grad, index)
        elif reduce == "prod":
            grad_x, grad_src = _prod_grads(grad, x, src, out, index, include_self)
        else:
            # PyTorch's tie rule: g is shared by every element equal to the result, x's own value counted
            # among them even with include_self=False (where x then gets none of it)
            self_is, src_is = x == out, src == GetItem.apply(out, index)
            ties = ScatterReduce.apply(self_is.to(grad.dtype), index, src_is.to(grad.dtype), "sum", True)
            shared = grad / ties
            grad_x, grad_src = shared * self_is, GetItem.apply(shared, index) * src_is
        if not include_self and reduce in ("prod", "amax", "amin"):
            grad_x = grad_x.masked_fill(touched, 0.0)
        return grad_x, None, grad_src, None, None


_REDUCE_AT = {"sum": "add_at", "mean": "add_at", "prod": "multiply_at", "amax": "maximum_at", "amin": "minimum_at"}


def _prod_grads(grad, x, src, out, index, include_self):
    """The gradients of a product: g times the product of the other factors, computed without dividing by a
    lone zero (a factor that is the only zero of its product gets the product of the others, as in PyTorch)."""
    grad_x = grad * ScatterReduce.apply(x.new_ones(x.shape), index, src, "prod", True) if include_self else grad
    src_zero = src == 0
    zeros_there = GetItem.apply(ScatterReduce.apply(x.new_zeros(x.shape), index, src_zero.to(x.dtype), "sum", True),
                                index)
    lone_zero = src_zero.logical_and(zeros_there == 1)
    others = GetItem.apply(ScatterReduce.apply(x, index, src.masked_fill(lone_zero, 1.0), "prod", include_self), index)
    g = GetItem.apply(grad, index)
    grad_src = where(lone_zero, g * others, GetItem.apply(grad * out, index) / src.masked_fill(src_zero, 1.0))
    return grad_x, grad_src


class MaskedFill(Function):
    """where(mask, value, x): filled places pass their gradient to value, the others to x."""

    derivative = "∂L/∂x = g where not mask, else 0 (summed back where broadcast);  ∂L/∂value = Σ g where mask"

    @staticmethod
    def forward(ctx, x, mask, value):
        ctx.save_for_backward(mask)
        ctx.value_dtype = _dtype(value)
        backend = x.device.backend
        out = backend.where(mask.array, _value_data(x, value), x.array)
        return x._wrap(out if backend.dtype_of(out) is x.dtype else backend.astype(out, x.dtype))

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        grad_x = MaskedFill.apply(grad, mask, 0.0) if ctx.needs_input_grad[0] else None
        grad_value = None
        if ctx.needs_input_grad[2]:
            grad_value = MaskedFill.apply(grad, mask.logical_not(), 0.0).sum().to(ctx.value_dtype)
        return grad_x, None, grad_value


class Tril(Function):
    """The lower triangle of the last two dims; the gradient keeps the same triangle."""

    derivative = "∂L/∂x = tril(g, diagonal)"

    @staticmethod
    def forward(ctx, x, diagonal):
        _check_matrices("tril", x)
        ctx.diagonal = diagonal
        return x._wrap(x.device.backend.tril(x.array, diagonal))

    @staticmethod
    def backward(ctx, grad):
        return Tril.apply(grad, ctx.diagonal), None


class Triu(Function):
    """The upper triangle of the last two dims; the gradient keeps the same triangle."""

    derivative = "∂L/∂x = triu(g, diagonal)"

    @staticmethod
    def forward(ctx, x, diagonal):
        _check_matrices("triu", x)
        ctx.diagonal = diagonal
        return x._wrap(x.device.backend.triu(x.array, diagonal))

    @staticmethod
    def backward(ctx, grad):
        return Triu.apply(grad, ctx.diagonal), None


# --- helpers of the Functions ------------------------------------------------------------------


def _shape(value):
    return value.shape if isinstance(value, TrackedTensor) else None


def _dtype(value):
    return value.dtype if isinstance(value, TrackedTensor) else None


def _value_data(x, value):
    """The array (in x's dtype) or Python number to write into x."""
    if not isinstance(value, TrackedTensor):
        return value
    check_same_device("indexing", x, value)
    return value.array if value.dtype is x.dtype else x.device.backend.astype(value.array, x.dtype)


def _value_grad(ctx, grad):
    """The gradient of the values written at index: grad[index], summed back over broadcasting."""
    g = GetItem.apply(grad, ctx.index)
    shape = ctx.value_shape
    if g.ndim < len(shape):  # the value had extra leading 1s, which writing drops
        g = g.reshape((1,) * (len(shape) - g.ndim) + g.shape)
    g = sum_to_shape(g, shape)
    return g if g.dtype is ctx.value_dtype else g.to(ctx.value_dtype)


def _may_repeat(x, index) -> bool:
    """Whether the index holds integer arrays, the only items that can pick a place twice."""
    backend = x.device.backend
    return any(type(item) not in _BASIC and type(item) is not bool and backend.dtype_of(item) is not bool_
               for item in index)


def _check_matrices(op, x):
    if x.ndim < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions, got {describe(x)}")


# --- turning a Python index into backend items, and explaining a bad one -----------------------


def _parse_index(op, x, key) -> tuple:
    """The key as a tuple for the backend: ints, slices, None, Ellipsis, bools and int64/bool arrays."""
    items = key if isinstance(key, tuple) else (key,)
    index = []
    basic = True
    for item in items:
        kind = type(item)
        if kind in _BASIC:
            if kind is slice and item.step is not None and item.step <= 0:
                raise ValueError(f"{op}: step must be greater than zero (got step {item.step}); "
                                 "to reverse a dimension use .flip(dim)")
            index.append(item)
        elif kind is bool:
            index.append(item)
            basic = False
        elif isinstance(item, TrackedTensor) and item.ndim == 0 and item.dtype.category == 1:
            index.append(int(item))  # a 0-d integer tensor indexes like an int, as in PyTorch
        elif not isinstance(item, TrackedTensor) and hasattr(item, "__index__") and getattr(item, "ndim", 0) == 0:
            index.append(operator.index(item))  # numpy integers and other int-likes
        else:
            if observers.escape_watchers and isinstance(item, TrackedTensor):
                observers.escaped("a tensor used as an index")  # its values become the key: a tracer cannot see them
            index.append(_index_data(op, x, item, in_key=True))
            basic = False
    if basic and Ellipsis not in index:
        index.append(Ellipsis)  # so that x[i, j] is a 0-d view of x, not a copied scalar
    return tuple(index)


def _list_index_dtype(op, index):
    """A Python list used as an index holds bools (a mask) or ints (positions); anything else is an error."""
    probe = index
    while isinstance(probe, (list, tuple)) and len(probe):
        probe = probe[0]
    if isinstance(probe, bool):
        return bool_
    if isinstance(probe, float):
        raise IndexError(f"{op}: tensors used as indices must be long, int or bool, got a list of floats")
    return int64


def _index_data(op, x, index, in_key=False):
    """An index tensor as an int64 array on x's backend; in an x[...] key also lists and bool masks."""
    if not isinstance(index, TrackedTensor):
        if not in_key:
            raise TypeError(f"{op}(): argument 'index' must be a Tensor, not {type(index).__name__}; "
                            "make one with gradlab.tensor(..., dtype=gradlab.int64)")
        index = x.new_tensor(index, dtype=_list_index_dtype(op, index))
    check_same_device(op, x, index)
    dtype = index.dtype
    if dtype is int64 or dtype is bool_ and in_key:
        return index.array
    if dtype is int32:
        return x.device.backend.astype(index.array, int64)
    kinds = "long, int or bool tensors" if in_key else "int64 (or int32) tensors"
    raise IndexError(f"{op}: tensors used as indices must be {kinds}, got {describe(index)}; "
                     "convert it with .long()" + (", or compare it (x > 0) to get a mask" if in_key else ""))


def _apply(op, function, x, index, *value):
    """function.apply(x, index, *value), with the backend's bare indexing errors made clear."""
    try:
        return function.apply(x, index, *value)
    except IndexError:
        clear = _explain(op, x, index)
        if clear is None:
            raise
        raise clear from None
    except ValueError:
        if not value:
            raise
        region = x.device.backend.getitem(x.array, index).shape
        raise RuntimeError(f"{op}: shape mismatch: value {describe(value[0])} cannot be broadcast to the indexed "
                           f"region of shape {shape_str(region)}") from None


def _explain(op, x, index):
    """The error that says which index item is wrong (backends only say that one is), or None."""
    backend, shape = x.device.backend, x.shape
    arrays = [type(item) not in _BASIC and type(item) is not bool for item in index]
    used = sum((item.ndim if backend.dtype_of(item) is bool_ else 1) if array else type(item) in (int, slice)
               for item, array in zip(index, arrays))
    if used > len(shape):
        return IndexError(f"{op}: too many indices for tensor of dimension {len(shape)} "
                          f"(shape {shape_str(shape)}, {used} dimensions indexed)")
    dim, picked = 0, []
    for item, array in zip(index, arrays):
        if item is Ellipsis:
            dim += len(shape) - used
        elif type(item) is slice:
            dim += 1
        elif type(item) is int:
            if not -shape[dim] <= item < shape[dim]:
                return _out_of_bounds(op, item, dim, shape[dim])
            dim += 1
        elif array and backend.dtype_of(item) is bool_:
            if tuple(item.shape) != tuple(shape[dim:dim + item.ndim]):
                return IndexError(f"{op}: the shape of the mask {list(item.shape)} at index {dim} does not match "
                                  f"the shape of the indexed tensor {list(shape)} at index {dim}")
            if item.ndim:
                picked.append((int(backend.to_numpy(backend.sum(item))),))
            dim += item.ndim
        elif array:
            if 0 not in item.shape:
                for end in (backend.max(item), backend.min(item)):
                    value = int(backend.to_numpy(end))
                    if not -shape[dim] <= value < shape[dim]:
                        return _out_of_bounds(op, value, dim, shape[dim])
            picked.append(tuple(item.shape))
            dim += 1
    try:
        broadcast_shapes(*picked)
    except ShapeError:
        shapes = ", ".join(str(list(s)) for s in picked)
        return IndexError(f"{op}: shape mismatch: indexing tensors could not be broadcast together with shapes {shapes}")
    return None


def _out_of_bounds(op, index, dim, size):
    return IndexOutOfBoundsError(f"{op}: index {index} is out of bounds for dimension {dim} with size {size}")


def _refuse_negative(op, x, data, dim, size):
    """Raise PyTorch's error for a negative index where PyTorch does not count from the end.

    numpy would wrap it around silently, so this comes before any value is read or written; an index
    that is too large the backend refuses itself, and ``_apply`` says which one it was.
    """
    backend = x.device.backend
    if 0 not in data.shape:
        low = int(backend.to_numpy(backend.min(data)))
        if low < 0:
            raise IndexOutOfBoundsError(f"{op}: index {low} is out of bounds for dimension {dim} with size {size}; "
                                        "negative indices are not counted from the end here")


def _along(x, sizes, dim, index) -> tuple:
    """A full index: index[i, j, ...] along dim, and i, j, ... (aranges that broadcast) along the others."""
    backend, ndim = x.device.backend, len(sizes)
    return tuple(
        index if d == dim else backend.reshape(backend.arange(0, n, 1, int64), (1,) * d + (n,) + (1,) * (ndim - d - 1))
        for d, n in enumerate(sizes)
    )


def _gather_scatter_args(op, input, dim, index, src=None):
    """Check a gather/scatter call as PyTorch does; return the full index and the part of src used."""
    dim = normalize_dim(op, dim, input.ndim)
    data = _index_data(op, input, index)
    if index.ndim != input.ndim or isinstance(src, TrackedTensor) and src.ndim != input.ndim:
        sources = f", src {describe(src)}" if isinstance(src, TrackedTensor) else ""
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor "
                           f"(index {describe(index)}, input {describe(input)}{sources})")
    fits = all(n <= m for d, (n, m) in enumerate(zip(index.shape, input.shape)) if d != dim)
    if isinstance(src, TrackedTensor):
        if src.dtype is not input.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype, got input {describe(input)} "
                               f"and src {describe(src)}; convert src with .to({input.dtype})")
        if not fits or any(n > m for n, m in zip(index.shape, src.shape)):
            raise RuntimeError(f"{op}(): Expected index {list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {dim} and to be no larger than src "
                               f"{list(src.shape)}")
        if src.shape != index.shape:
            src = GetItem.apply(src, tuple(slice(0, n) for n in index.shape))  # PyTorch uses this corner of src
    elif not fits:
        raise RuntimeError(f"{op}(): Expected index {list(index.shape)} to be no larger than self "
                           f"{list(input.shape)} apart from dimension {dim}")
    _refuse_negative(op, input, data, dim, input.shape[dim] if input.ndim else 1)
    return _along(input, index.shape, dim, data), src


def _index_along_args(op, input, dim, index, source=None, negative_ok=False):
    """Check an index_add/copy/fill/reduce call as PyTorch does; return the index tuple (:, ..., index)."""
    dim = normalize_dim(op, dim, input.ndim)
    data = _index_data(op, input, index)
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, got {describe(index)}")
    backend = input.device.backend
    data = backend.reshape(data, (-1,))
    if isinstance(source, TrackedTensor):
        if source.dtype is not input.dtype:
            raise RuntimeError(f"{op}(): self ({input.dtype.name}) and source ({source.dtype.name}) must have the same "
                               f"scalar type; convert source with .to(gradlab.{input.dtype.name})")
        wanted = input.shape[:dim] + (data.shape[0],) + input.shape[dim + 1:]
        if tuple(source.shape) != tuple(wanted):
            raise RuntimeError(f"{op}(): source {describe(source)} does not fit: it needs shape {shape_str(wanted)}, "
                               f"self's shape with dimension {dim} of size {data.shape[0]} (the number of indices)")
    if not negative_ok:
        _refuse_negative(op, input, data, dim, input.shape[dim])
    return (slice(None),) * dim + (data,)


def _one_element(function, input, dim, index, source, *rest, **options):
    """function on a 0-d input, which PyTorch indexes as one element along dim 0: run it on shape (1,)."""
    normalize_dim(function.__name__, dim, 0)
    source = source.reshape(-1) if isinstance(source, TrackedTensor) and function is not index_fill else source
    return function(input.reshape(1), 0, index.reshape(-1), source, *rest, **options).reshape(())


# --- the functional forms ----------------------------------------------------------------------


def index_select(input, dim, index):
    """The slices input[..., i, ...] along dim for each i in the 1-D index, in that order."""
    if input.ndim == 0 and isinstance(index, TrackedTensor):
        return index_select(input.reshape(1), normalize_dim("index_select", dim, 0), index.reshape(-1)).reshape(())
    dim = normalize_dim("index_select", dim, input.ndim)
    data = _index_data("index_select", input, index)
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got {describe(index)}")
    if index.ndim == 0:
        data = input.device.backend.reshape(data, (1,))
    _refuse_negative("index_select", input, data, dim, input.shape[dim])
    return _apply("index_select", IndexSelect, input, (slice(None),) * dim + (data,))


def gather(input, dim, index, *, sparse_grad=False):
    """out[i][j] = input[index[i][j]][j] for dim=0 (and likewise for the other dims)."""
    full, _ = _gather_scatter_args("gather", input, dim, index)
    return _apply("gather", Gather, input, full)


_SCATTER_REDUCE = {"add": "sum", "multiply": "prod"}


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of input with out[index[i][j]][j] = src[i][j] for dim=0; src may be a number (or value=).

    reduce='add' or 'multiply' combines instead of overwriting (scatter_reduce with include_self=True).
    """
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter(): expected a src tensor or a value, got neither")
    if reduce is not None and reduce not in _SCATTER_REDUCE:
        raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, got {reduce!r}")
    full, src = _gather_scatter_args("scatter", input, dim, index, src)
    if reduce is not None:
        if not isinstance(src, TrackedTensor):  # one value for every index
            src = input.new_full(index.shape, src)
        return _apply("scatter", ScatterReduce, input, full, src, _SCATTER_REDUCE[reduce], True)
    return _apply("scatter", IndexPut, input, full, src)


_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """A copy of input with every src[i][j] combined into out[index[i][j]][j] (dim=0) by reduce:
    'sum', 'prod', 'mean', 'amax' or 'amin'; include_self=False leaves input's value out where written."""
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"scatter_reduce(): reduce argument must be one of {', '.join(_REDUCTIONS)}, got {reduce!r}")
    if not isinstance(src, TrackedTensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be a Tensor, not {type(src).__name__}")
    full, src = _gather_scatter_args("scatter_reduce", input, dim, index, src)
    return _apply("scatter_reduce", ScatterReduce, input, full, src, reduce, include_self)


def scatter_add(input, dim, index, src):
    """A copy of input with out[index[i][j]][j] += src[i][j] for dim=0; repeated indices add up."""
    if not isinstance(src, TrackedTensor):
        raise TypeError(f"scatter_add(): argument 'src' must be a Tensor, not {type(src).__name__}")
    full, src = _gather_scatter_args("scatter_add", input, dim, index, src)
    return _apply("scatter_add", IndexAdd, input, full, src)


def take_along_dim(input, indices, dim=None):
    """Pick values along dim by indices (input and indices broadcast on the other dims); dim=None: flattened."""
    if dim is None:
        return take_along_dim(input.reshape(-1), indices.reshape(-1), 0)
    op = "take_along_dim"
    dim = normalize_dim(op, dim, input.ndim)
    data = _index_data(op, input, indices)
    if indices.ndim != input.ndim:
        raise RuntimeError(f"{op}(): input and indices should have the same number of dimensions, but got "
                           f"{input.ndim} dimensions for input, and {indices.ndim} dimensions for indices")
    try:
        broadcast_shapes(input.shape[:dim] + input.shape[dim + 1:], indices.shape[:dim] + indices.shape[dim + 1:])
    except ShapeError as error:
        raise ShapeError(f"{op}: input and indices must broadcast apart from dimension {dim}: {error}") from None
    _refuse_negative(op, input, data, dim, input.shape[dim])
    return _apply(op, Gather, input, _along(input, input.shape, dim, data))  # (PyTorch: a gather too)


def index_add(input, dim, index, source, *, alpha=1):
    """A copy of input with alpha * source[..., i, ...] added at input[..., index[i], ...]; repeats add up."""
    if input.ndim == 0:
        return _one_element(index_add, input, dim, index, source, alpha=alpha)
    full = _index_along_args("index_add", input, dim, index, _tensor_arg("index_add", "source", source))
    return _apply("index_add", IndexAdd, input, full, source if alpha == 1 else source * alpha)


def index_copy(input, dim, index, source):
    """A copy of input with input[..., index[i], ...] = source[..., i, ...]."""
    if input.ndim == 0:
        return _one_element(index_copy, input, dim, index, source)
    full = _index_along_args("index_copy", input, dim, index, _tensor_arg("index_copy", "source", source))
    return _apply("index_copy", IndexPut, input, full, source)


def index_fill(input, dim, index, value):
    """A copy of input with value (a number or 0-d tensor) in the slices index picks along dim."""
    if isinstance(value, TrackedTensor) and value.ndim != 0:
        raise RuntimeError(f"index_fill(): only supports a 0-dimensional value tensor, but got {describe(value)}")
    if input.ndim == 0:
        return _one_element(index_fill, input, dim, index, value)
    full = _index_along_args("index_fill", input, dim, index, negative_ok=True)
    return _apply("index_fill", IndexPut, input, full, value)


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """A copy of input with source[..., i, ...] combined into input[..., index[i], ...] by reduce:
    'prod', 'mean', 'amax' or 'amin'."""
    if reduce not in _REDUCTIONS[1:]:
        raise RuntimeError(f"index_reduce(): reduce argument must be one of prod, mean, amax, amin, got {reduce!r}")
    if input.ndim == 0:
        return _one_element(index_reduce, input, dim, index, source, reduce, include_self=include_self)
    full = _index_along_args("index_reduce", input, dim, index, _tensor_arg("index_reduce", "source", source))
    return _apply("index_reduce", ScatterReduce, input, full, source, reduce, include_self)


def index_put(input, indices, values, accumulate=False):
    """A copy of input with input[indices] = values (accumulate=True: +=, repeats adding up); indices is a
    tuple of index tensors, as in x[i, j] = v."""
    if not isinstance(indices, (tuple, list)):
        raise TypeError(f"index_put(): argument 'indices' must be a tuple of Tensors, not {type(indices).__name__}")
    key = tuple(_index_data("index_put", input, i, in_key=True) for i in indices)
    if not isinstance(values, TrackedTensor):
        raise TypeError(f"index_put(): argument 'values' must be a Tensor, not {type(values).__name__}")
    return _apply("index_put", IndexAdd if accumulate else IndexPut, input, key, values)


def index_put_(input, indices, values, accumulate=False):
    """index_put written into input itself (``torch.index_put_``)."""
    return input.index_put_(indices, values, accumulate)


def _tensor_arg(op, name, value):
    if not isinstance(value, TrackedTensor):
        raise TypeError(f"{op}(): argument '{name}' must be a Tensor, not {type(value).__name__}")
    return value


def masked_fill(input, mask, value):
    """A copy of input with value where mask is True (mask broadcasts; value is a number or 0-d tensor)."""
    if not isinstance(mask, TrackedTensor) or mask.dtype is not bool_:
        raise RuntimeError(f"masked_fill: only supports boolean masks, but got mask {describe(mask)}; "
                           "make one with a comparison (x > 0) or .bool()")
    check_same_device("masked_fill", input, mask, value)
    if isinstance(value, TrackedTensor) and value.ndim != 0:
        raise RuntimeError(f"masked_fill only supports a 0-dimensional value tensor, but got {describe(value)}; "
                           "use gradlab.where(mask, value, input) to fill from a tensor")
    try:
        return MaskedFill.apply(input, mask, value)
    except ValueError:
        broadcast_shapes(input.shape, mask.shape, op="masked_fill")  # raises the clear ShapeError when the shapes clash
        raise


def tril(input, diagonal=0):
    """The lower triangle of the last two dims (on and below the diagonal-th diagonal); the rest zero."""
    return Tril.apply(input, diagonal)


def triu(input, diagonal=0):
    """The upper triangle of the last two dims (on and above the diagonal-th diagonal); the rest zero."""
    return Triu.apply(input, diagonal)


def one_hot(tensor, num_classes=-1):
    """int64 one-hot vectors: a new last dim of num_classes with a 1 at each value (-1: max + 1)."""
    if not isinstance(tensor, TrackedTensor) or tensor.dtype is not int64:
        raise RuntimeError(f"one_hot is only applicable to index tensor of type LongTensor, got {describe(tensor)}; "
                           "convert it with .long()")
    backend = tensor.device.backend
    if tensor.numel() == 0:
        if num_classes == -1:
            raise RuntimeError("one_hot: Can not infer total number of classes from empty tensor; pass num_classes")
    else:
        low = int(backend.to_numpy(backend.min(tensor.array)))
        high = int(backend.to_numpy(backend.max(tensor.array)))
        if low < 0:
            raise RuntimeError(f"one_hot: Class values must be non-negative, got {low}")
        if num_classes == -1:
            num_classes = high + 1
        elif high >= num_classes:
            raise RuntimeError(f"one_hot: Class values must be smaller than num_classes ({num_classes}), got {high}")
    classes = backend.arange(0, num_classes, 1, int64)
    hot = backend.eq(backend.reshape(tensor.array, tensor.shape + (1,)), classes)
    return tensor._wrap(backend.astype(hot, int64))


def _put(x, index, value):
    return _apply("__setitem__", IndexPut, x, index, value)


class IndexingMethods:
    """Tensor's indexing methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def __getitem__(self, key):
        return _apply("__getitem__", GetItem, self, _parse_index("__getitem__", self, key))

    def __setitem__(self, key, value):
        index = _parse_index("__setitem__", self, key)
        if not isinstance(value, (TrackedTensor, int, float)):
            value = self.new_tensor(value)
        self._inplace("__setitem__", lambda x, v: _put(x, index, v), value)

    def index_select(self, dim, index):
        return index_select(self, dim, index)

    def gather(self, dim, index, *, sparse_grad=False):
        return gather(self, dim, index)

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        return scatter(self, dim, index, src, value=value, reduce=reduce)

    def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
        return self._inplace("scatter_", functools.partial(scatter, reduce=reduce), dim, index,
                             value if src is None else src)

    def scatter_add(self, dim, index, src):
        return scatter_add(self, dim, index, src)

    def scatter_add_(self, dim, index, src):
        return self._inplace("scatter_add_", scatter_add, dim, index, src)

    def take_along_dim(self, indices, dim=None):
        return take_along_dim(self, indices, dim)

    def masked_fill(self, mask, value):
        return masked_fill(self, mask, value)

    def masked_fill_(self, mask, value):
        return self._inplace("masked_fill_", masked_fill, mask, value)

    def tril(self, diagonal=0):
        return Tril.apply(self, diagonal)

    def tril_(self, diagonal=0):
        return self._inplace("tril_", tril, diagonal)

    def triu(self, diagonal=0):
        return Triu.apply(self, diagonal)

    def triu_(self, diagonal=0):
        return self._inplace("triu_", triu, diagonal)

    scatter_reduce, index_add, index_copy, index_fill = scatter_reduce, index_add, index_copy, index_fill
    index_reduce, index_put = index_reduce, index_put
    scatter_reduce_ = in_place("scatter_reduce_", scatter_reduce)
    index_add_ = in_place("index_add_", index_add)
    index_copy_ = in_place("index_copy_", index_copy)
    index_fill_ = in_place("index_fill_", index_fill)
    index_reduce_ = in_place("index_reduce_", index_reduce)
    index_put_ = in_place("index_put_", index_put)

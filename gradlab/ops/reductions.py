"""Reductions: sum, mean, prod, max/min, var/std, logsumexp, norm, cumulative sums, all/any.

A reduction collapses the axes in ``dim`` (None: all of them). Its backward runs the other way:
the gradient of the small output is reshaped to the keepdim form (a 1 where each axis was) and
expanded back over the reduced axes, then scaled by how much each input element contributed.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from .. import dtypes as dt
from ..autograd.broadcasting import sum_to_shape, summed_dims
from ..autograd.function import Function
from .autocast import autocast_op
from ._common import TrackedTensor, array_in, data_in, describe, int_tuple, normalize_dim, normalize_dims

max_result = namedtuple("max", ("values", "indices"))
min_result = namedtuple("min", ("values", "indices"))


# --- dims and shapes ---------------------------------------------------------------------------


def _axes(op: str, x, dim) -> tuple:
    """The sorted axes to reduce; None and () mean all of them, as in PyTorch's sum and mean."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(x.ndim))
    axes = normalize_dims(op, dim, x.ndim)
    return axes if x.ndim else ()  # a 0-d tensor accepts dim 0 / -1 and has nothing to reduce


def _remember(ctx, x, axes, keepdim) -> None:
    ctx.shape, ctx.axes, ctx.keepdim = x.shape, axes, keepdim


def _kept(t, ctx):
    """A reduced tensor (output or gradient) in keepdim form, so it broadcasts against the input."""
    if ctx.keepdim or not ctx.axes:
        return t
    return t.reshape(_reduced_shape(ctx.shape, ctx.axes, True))


def _spread(grad, ctx):
    """The gradient of a reduced output copied back to every input element it came from."""
    return _kept(grad, ctx).expand(ctx.shape)


def _count(shape, axes) -> int:
    return math.prod(shape[a] for a in axes)


def _reduced_shape(shape, axes, keepdim) -> tuple:
    return tuple(1 if i in axes else n for i, n in enumerate(shape) if keepdim or i not in axes)


def _accumulate_dtype(x, dtype):
    """The dtype a sum/prod/cumsum computes in: dtype= if given, int64 for bool and integer inputs."""
    if dtype is not None:
        return dt.as_dtype(dtype)
    return x.dtype if x.dtype.is_floating_point else dt.int64


def _summing_dtype(dtype):
    """16-bit float sums run in float32 (as PyTorch's do): 2048 + 1 is already 2048 in float16."""
    return dt.accumulation_dtype(dtype)


def _empty_error(op: str, x, dim, unspecified=RuntimeError):
    """PyTorch's error for max/min-like reductions over nothing."""
    if dim is None:
        return unspecified(
            f"{op}(): Expected reduction dim to be specified for input.numel() == 0 ({describe(x)}). "
            "Specify the reduction dim with the 'dim' argument."
        )
    empty = next((a for a in _axes(op, x, dim) if x.shape[a] == 0), dim)
    return IndexError(f"{op}(): Expected reduction dim {empty} to have non-zero size ({describe(x)}); "
                      "there is no largest or smallest element of an empty dimension")


def _float_required(op: str, x, what: str) -> None:
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}(): {what}, but got {describe(x)}; convert it first with .float()")


def _cast_grad(grad, ctx):
    """Bring a gradient back to the input's dtype when dtype= made the output differ."""
    return grad if grad.dtype is ctx.dtype else grad.to(ctx.dtype)


# --- sum, mean, prod ---------------------------------------------------------------------------


class Sum(Function):
    """sum(x, dim): every input element contributes once, so each receives the output's gradient unchanged."""

    derivative = "∂L/∂x = g broadcast back over the summed dims"
    node_names = ("SumBackward0", "SumBackward1")  # all elements; along dim (PyTorch's numbering)

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        if dim is not None:
            ctx.recorded_as(1)
        axes = _axes("sum", x, dim)
        _remember(ctx, x, axes, keepdim)
        ctx.dtype, target, backend = x.dtype, _accumulate_dtype(x, dtype), x.device.backend
        total = backend.sum(data_in(x, _summing_dtype(target)), axes, keepdim)
        return x._wrap(array_in(backend, total, target))

    @staticmethod
    def backward(ctx, grad):
        return _cast_grad(_spread(grad, ctx), ctx), None, None, None


class Mean(Function):
    """mean(x, dim) = sum / count: each input element receives the gradient divided by the count."""

    derivative = "∂L/∂x = g / count broadcast back over the averaged dims"
    node_names = ("MeanBackward0", "MeanBackward1")  # all elements; along dim

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        if dim is not None:
            ctx.recorded_as(1)
        target = dt.as_dtype(dtype) if dtype is not None else x.dtype
        if not target.is_floating_point:
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
                f"dtype. Got: {describe(x)}; convert it first with .float(), or pass dtype=gradlab.float32"
            )
        axes = _axes("mean", x, dim)
        _remember(ctx, x, axes, keepdim)
        ctx.dtype, ctx.count = x.dtype, _count(x.shape, axes)
        backend = x.device.backend
        total = backend.sum(data_in(x, _summing_dtype(target)), axes, keepdim)
        return x._wrap(array_in(backend, backend.div(total, ctx.count), target))

    @staticmethod
    def backward(ctx, grad):
        return _cast_grad(_spread(grad, ctx) * (1.0 / ctx.count), ctx), None, None, None


class Prod(Function):
    """prod(x, dim): each element receives the gradient times the product of the other elements.

    That product is out / x_i while no element is zero. With one zero in a slice only that element
    has a non-zero gradient (the product of the rest); with two or more zeros every gradient in the
    slice is zero.
    """

    derivative = "∂L/∂x = g · out / x broadcast back over the multiplied dims (at zeros: g · the product of the others)"
    node_names = ("ProdBackward0", "ProdBackward1")  # all elements; along dim

    @staticmethod
    def forward(ctx, x, dim, keepdim, dtype):
        if dim is not None:
            ctx.recorded_as(1)
        axes = _axes("prod", x, dim)
        _remember(ctx, x, axes, keepdim)
        ctx.dtype, target, backend = x.dtype, _accumulate_dtype(x, dtype), x.device.backend
        out = x._wrap(array_in(backend, backend.prod(data_in(x, target), axes, keepdim), target))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        grad, out = _kept(grad, ctx), _kept(out, ctx)
        zero = x == 0
        if not zero.any():
            return _cast_grad(grad * out / x, ctx), None, None, None
        x_safe = x.masked_fill(zero, 1)
        rest = x_safe.prod(ctx.axes, keepdim=True)  # the product of the non-zero elements
        lone_zero = zero.sum(ctx.axes, keepdim=True) == 1
        grad_x = grad * out / x_safe * ~zero + (grad * rest * lone_zero) * zero
        return _cast_grad(grad_x, ctx), None, None, None


# --- max, min and their indices ------------------------------------------------------------------


def _share_among(selected, grad, axes):
    """The gradient split evenly among the selected (tied) elements of each reduced slice."""
    return selected * (grad / selected.sum(axes, keepdim=True))


class Amax(Function):
    """amax(x, dim): the gradient goes to the element(s) equal to the maximum, split evenly among ties."""

    derivative = "∂L/∂x = g / (number of ties) at the elements equal to the max, else 0"
    reduce = "max"
    node_names = ("AmaxBackward0", "MaxBackward1")  # amax(x); max(x), which PyTorch records apart

    @staticmethod
    def forward(ctx, x, dim, keepdim, op):
        if op == ctx.function.reduce:  # called as max(x) / min(x)
            ctx.recorded_as(1)
        axes = _axes(op, x, dim)
        _remember(ctx, x, axes, keepdim)
        try:
            out = x._wrap(getattr(x.device.backend, ctx.function.reduce)(x.array, axes, keepdim))
        except ValueError:
            raise _empty_error(op, x, dim) from None
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return _share_among(x == _kept(out, ctx), _kept(grad, ctx), ctx.axes), None, None, None


class Amin(Amax):
    """amin(x, dim): the gradient goes to the element(s) equal to the minimum, split evenly among ties."""

    derivative = "∂L/∂x = g / (number of ties) at the elements equal to the min, else 0"
    reduce = "min"
    node_names = ("AminBackward0", "MinBackward1")


class MaxDim(Function):
    """max along one dim, with the index of the first largest element; that element gets the gradient."""

    derivative = "∂L/∂x = g at the first largest element along dim, else 0 (the indices output has no gradient)"
    arg = "argmax"
    node_names = ("MaxBackward0",)  # max(x, dim), as PyTorch names it

    @staticmethod
    def forward(ctx, x, dim, keepdim, op):
        axis = normalize_dim(op, dim, x.ndim)
        backend = x.device.backend
        data = x.array if x.ndim else backend.reshape(x.array, (1,))
        try:
            index = array_in(backend, getattr(backend, ctx.function.arg)(data, axis, True), dt.int64)
        except ValueError:
            raise _empty_error(op, x, dim) from None
        values = backend.take_along_axis(data, index, axis)
        n = data.shape[axis]
        along_axis = tuple(n if i == axis else 1 for i in range(data.ndim))
        positions = backend.reshape(backend.arange(0, n, 1, dt.int64), along_axis)
        ctx.save_for_backward(x._wrap(backend.reshape(backend.eq(positions, index), x.shape)))  # one-hot of index
        ctx.shape, ctx.axes, ctx.keepdim = x.shape, (axis,) if x.ndim else (), keepdim
        if not keepdim or not x.ndim:
            shape = tuple(s for i, s in enumerate(x.shape) if i != axis)
            values, index = backend.reshape(values, shape), backend.reshape(index, shape)
        index = x._wrap(index)
        ctx.mark_non_differentiable(index)
        return x._wrap(values), index

    @staticmethod
    def backward(ctx, grad, grad_index):
        (selected,) = ctx.saved_tensors
        return _kept(grad, ctx) * selected, None, None, None


class MinDim(MaxDim):
    """min along one dim, with the index of the first smallest element; that element gets the gradient."""

    derivative = "∂L/∂x = g at the first smallest element along dim, else 0 (the indices output has no gradient)"
    arg = "argmin"
    node_names = ("MinBackward0",)


class Argmax(Function):
    """argmax(x, dim): an index, so no gradient flows through it (of the flattened tensor when dim is None)."""

    derivative = "no gradient (piecewise constant)"
    arg = "argmax"

    @staticmethod
    def forward(ctx, x, dim, keepdim, op):
        backend = x.device.backend
        if dim is None:
            axis, data = None, x.array
        else:
            axis = normalize_dim(op, dim, x.ndim)
            data = x.array if x.ndim else backend.reshape(x.array, (1,))
        try:
            index = getattr(backend, ctx.function.arg)(data, axis, keepdim and x.ndim > 0)
        except ValueError:
            raise _empty_error(op, x, dim, IndexError) from None
        index = array_in(backend, index, dt.int64)
        return x._wrap(index if x.ndim else backend.reshape(index, ()))

    @staticmethod
    def backward(ctx, grad):
        return None, None, None, None


class Argmin(Argmax):
    """argmin(x, dim): an index, so no gradient flows through it (of the flattened tensor when dim is None)."""

    arg = "argmin"


# --- var, std, logsumexp, norm -----------------------------------------------------------------


def _variance(ctx, op, x, dim, correction, keepdim):
    """The variance array: mean squared deviation, divided by (count - correction), at least 0."""
    _float_required(op, x, "std and var only support floating point dtypes")
    axes = _axes(op, x, dim)
    _remember(ctx, x, axes, keepdim)
    count = _count(x.shape, axes)
    ctx.divisor = builtins.max(0, count - correction)
    backend = x.device.backend
    centered = backend.sub(x.array, backend.div(backend.sum(x.array, axes, True), count))
    return backend.div(backend.sum(backend.mul(centered, centered), axes, keepdim), ctx.divisor)


def _variance_grad(grad_var, x, ctx):
    """d var / dx = 2 (x - mean) / (count - correction)."""
    return (x - x.mean(ctx.axes, keepdim=True)) * (_kept(grad_var, ctx) * 2 / ctx.divisor)


class Var(Function):
    """var(x, dim): each element receives the gradient times 2 · (x − mean) / (count − correction).

    The variance is the mean squared deviation from the mean, with (count - correction) as the divisor.
    """

    derivative = "∂L/∂x = g · 2 (x − mean) / (count − correction)"

    @staticmethod
    def forward(ctx, x, dim, correction, keepdim):
        ctx.save_for_backward(x)
        return x._wrap(_variance(ctx, "var", x, dim, correction, keepdim))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return _variance_grad(grad, x, ctx), None, None, None


class Std(Function):
    """std(x, dim) = sqrt(var): each element receives the gradient times (x − mean) / ((count − correction) · out).

    It is the variance's gradient divided by 2 std; where std is 0 every deviation is 0, so the gradient is 0.
    """

    derivative = "∂L/∂x = g · (x − mean) / ((count − correction) · out), 0 where out = 0"

    @staticmethod
    def forward(ctx, x, dim, correction, keepdim):
        out = x._wrap(x.device.backend.sqrt(_variance(ctx, "std", x, dim, correction, keepdim)))
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return _variance_grad(grad / (2 * out.masked_fill(out == 0, 1)), x, ctx), None, None, None


class LogSumExp(Function):
    """log(sum(exp(x))), computed stably: each element receives the gradient times softmax(x) = exp(x − out)."""

    derivative = "∂L/∂x = g · exp(x − out), g broadcast back over the reduced dims"
    node_names = ("LogsumexpBackward0",)  # (PyTorch's spelling)

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        axes = _axes("logsumexp", x, dim)
        _remember(ctx, x, axes, keepdim)
        backend = x.device.backend
        try:
            out = backend.logsumexp(x.array, axes, keepdim)
        except ValueError:  # the backend found no maximum of an empty slice: log(0) = -inf
            out = backend.full(_reduced_shape(x.shape, axes, keepdim), -math.inf, x.dtype)
        out = x._wrap(out)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        return _kept(grad, ctx) * (x - _kept(out, ctx)).exp(), None, None


class Norm(Function):
    """The p-norm (sum |x|^p)^(1/p): each element receives the gradient times sign(x) · (|x| / out)^(p−1).

    p = inf is max |x| (its gradient goes to the largest |x|, split among ties), p = 0 counts
    non-zeros (a zero gradient). Where the norm is 0 every x is 0 too, so the gradient there is 0
    (not 0/0), as in PyTorch.
    """

    derivative = ("∂L/∂x = g · sign(x) · |x|^(p−1) / out^(p−1) (p = 2: g · x / out, "
                  "p = ∞: g · sign(x) at the largest |x| shared among ties, p = 0: 0)")
    node_names = ("LinalgVectorNormBackward0",)  # x.norm() is linalg.vector_norm in PyTorch

    @staticmethod
    def forward(ctx, x, p, dim, keepdim):
        axes = _axes("norm", x, dim)
        _remember(ctx, x, axes, keepdim)
        ctx.p = p
        backend = x.device.backend
        if p == 2:
            out = backend.sqrt(backend.sum(backend.mul(x.array, x.array), axes, keepdim))
        elif p == 1:
            out = backend.sum(backend.abs(x.array), axes, keepdim)
        elif p == 0:
            out = backend.astype(backend.sum(backend.ne(x.array, 0), axes, keepdim), x.dtype)
        elif math.isinf(p):
            try:
                out = (backend.max if p > 0 else backend.min)(backend.abs(x.array), axes, keepdim)
            except ValueError:
                raise _empty_error("norm", x, dim) from None
        else:
            out = backend.pow(backend.sum(backend.pow(backend.abs(x.array), p), axes, keepdim), 1.0 / p)
        out = x._wrap(out)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        p, grad, out = ctx.p, _kept(grad, ctx), _kept(out, ctx)
        if p == 0:
            return _spread(grad, ctx) * 0, None, None, None
        if math.isinf(p):
            return x.sign() * _share_among(x.abs() == out, grad, ctx.axes), None, None, None
        out = out.masked_fill(out == 0, 1)
        if p == 2:
            return x * (grad / out), None, None, None
        # sign(x) is 0 where x is 0, so |x| may be replaced by 1 there: 0^(p-1) would be inf for p < 1
        direction = x.sign() * x.abs().masked_fill(x == 0, 1) ** (p - 1)
        return direction * (grad / out ** (p - 1)), None, None, None


# --- cumulative sum and product ------------------------------------------------------------------


def _reverse_cumsum(t, axis):
    """Sums from each position to the end: the transpose of a running sum."""
    return t.flip(axis).cumsum(axis).flip(axis)


def _cumulative(ctx, op, x, dim, dtype):
    """The backend's running sum/product along dim, in the accumulation dtype (0-d: one element)."""
    axis = normalize_dim(op, dim, x.ndim)
    ctx.axis, ctx.dtype = (axis if x.ndim else None), x.dtype
    backend, target = x.device.backend, _accumulate_dtype(x, dtype)
    data = data_in(x, target) if x.ndim else backend.reshape(data_in(x, target), (1,))
    out = array_in(backend, getattr(backend, op)(data, axis), target)
    return x._wrap(out if x.ndim else backend.reshape(out, ()))


class Cumsum(Function):
    """out_j = sum_{i<=j} x_i, so x_i receives the sum of the gradients from position i onwards."""

    derivative = "∂L/∂x_i = Σ_{j ≥ i} g_j along dim (a reversed cumsum of g)"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        return _cumulative(ctx, "cumsum", x, dim, dtype)

    @staticmethod
    def backward(ctx, grad):
        return _cast_grad(grad if ctx.axis is None else _reverse_cumsum(grad, ctx.axis), ctx), None, None


class Cumprod(Function):
    """out_j = prod_{i<=j} x_i: x_i receives sum_{j>=i} grad_j out_j / x_i while x has no zeros.

    At the first zero of a row that formula divides by 0: there the gradient is the same reverse
    sum taken over the running product with that zero left out; after it every gradient is 0.
    """

    derivative = "∂L/∂x_i = Σ_{j ≥ i} g_j · out_j / x_i along dim (at a row's first zero, out_j without that zero)"

    @staticmethod
    def forward(ctx, x, dim, dtype):
        out = _cumulative(ctx, "cumprod", x, dim, dtype)
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        axis = ctx.axis
        if axis is None:
            return _cast_grad(grad, ctx), None, None
        zero = x == 0
        if not zero.any():
            return _cast_grad(_reverse_cumsum(grad * out, axis) / x, ctx), None, None
        zeros_so_far = zero.cumsum(axis)
        first_zero = zero & (zeros_so_far == 1)
        without_first_zero = x.masked_fill(first_zero, 1).cumprod(axis)
        grad_x = (_reverse_cumsum(grad * out, axis) / x.masked_fill(zero, 1) * (zeros_so_far == 0)
                  + _reverse_cumsum(grad * without_first_zero, axis) * first_zero)
        return _cast_grad(grad_x, ctx), None, None


def _logaddexp(backend, a, b):
    """log(exp(a) + exp(b)) without overflow: the larger plus log1p(exp(−|a − b|)); ±inf stays itself."""
    larger = backend.maximum(a, b)
    finite = backend.where(backend.isinf(larger), 0, larger)
    rest = backend.log(backend.add(backend.exp(backend.sub(a, finite)), backend.exp(backend.sub(b, finite))))
    return backend.where(backend.isinf(larger), larger, backend.add(finite, rest))


class LogCumSumExp(Function):
    """out_j = log Σ_{i≤j} exp(x_i), so x_i receives Σ_{j≥i} g_j · exp(x_i − out_j), a reverse softmax-weighted sum.

    That sum is taken in log space too, for the positive and the negative part of g separately:
    exp(x + reversed logcumsumexp(log g⁺ − out)) − exp(x + reversed logcumsumexp(log g⁻ − out)).
    """

    derivative = "∂L/∂x_i = Σ_{j ≥ i} g_j · exp(x_i − out_j) along dim"
    node_names = ("LogcumsumexpBackward0",)

    @staticmethod
    def forward(ctx, x, axis):
        backend = x.device.backend
        data = x.array if x.ndim else backend.reshape(x.array, (1,))
        head = (slice(None),) * axis
        out = backend.copy(data)
        running = backend.getitem(data, head + (slice(0, 1),))
        for i in range(1, data.shape[axis]):  # one pass along dim, every other dim at once
            running = _logaddexp(backend, running, backend.getitem(data, head + (slice(i, i + 1),)))
            backend.setitem(out, head + (slice(i, i + 1),), running)
        out = x._wrap(out if x.ndim else backend.reshape(out, ()))
        ctx.axis = axis if x.ndim else None
        ctx.save_for_backward(x, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        x, out = ctx.saved_tensors
        if ctx.axis is None:
            return grad, None
        axis = ctx.axis

        def reverse_lcse(t):
            return LogCumSumExp.apply(t.flip(axis), axis).flip(axis)

        grad_x = 0
        for sign, part in ((1, grad), (-1, -grad)):
            if bool((part > 0).any()):  # a part that is all zero adds nothing (and its log would be -inf)
                grad_x = grad_x + sign * (x + reverse_lcse(part.clamp_min(0).log() - out)).exp()
        return (grad_x if isinstance(grad_x, TrackedTensor) else x * 0), None


def logcumsumexp(input, dim):
    """Running log(sum(exp(x))) along dim, without overflow (integer tensors are converted to float)."""
    if not input.dtype.is_floating_point:
        input = input.to(dt.get_default_dtype())
    return LogCumSumExp.apply(input, normalize_dim("logcumsumexp", dim, input.ndim))


# --- all, any ------------------------------------------------------------------------------------


class All(Function):
    """all(x, dim): whether every element is non-zero, a bool result, so no gradient flows through it."""

    derivative = "no gradient (bool output)"
    reduce = "all"

    @staticmethod
    def forward(ctx, x, dim, keepdim):
        axes = normalize_dims(ctx.function.reduce, dim, x.ndim)  # here dim=() reduces nothing, as in PyTorch
        if not x.ndim:
            axes = ()
        return x._wrap(getattr(x.device.backend, ctx.function.reduce)(x.array, axes, keepdim))

    @staticmethod
    def backward(ctx, grad):
        return None, None, None


class Any(All):
    """any(x, dim): whether some element is non-zero, a bool result, so no gradient flows through it."""

    reduce = "any"


# --- the functional forms ------------------------------------------------------------------------


def sum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum over dim (None: all elements); bool and integer tensors sum to int64."""
    return Sum.apply(input, dim, keepdim, dtype)


def mean(input, dim=None, keepdim=False, *, dtype=None):
    return Mean.apply(input, dim, keepdim, dtype)


@autocast_op("fp32")
def prod(input, dim=None, keepdim=False, *, dtype=None):
    return Prod.apply(input, dim, keepdim, dtype)


def _max_or_min(op, input, dim, keepdim, whole, along, elementwise, other=None):
    if other is not None:
        if dim is not None:
            raise TypeError(f"{op}(): give dim or other, not both (got dim={dim!r} and {describe(other)})")
        dim = other
    if dim is None:
        return whole.apply(input, None, keepdim, op)
    if isinstance(dim, TrackedTensor):
        return getattr(input, elementwise)(dim)
    if not isinstance(dim, int):
        raise TypeError(f"{op}(): dim must be an int (or another tensor for the elementwise {elementwise}), "
                        f"got {dim!r}; use amax/amin to reduce over several dims")
    result = max_result if op == "max" else min_result
    return result(*along.apply(input, dim, keepdim, op))


def max(input, dim=None, keepdim=False, *, other=None):
    """max(x): the largest value. max(x, dim): namedtuple (values, indices). max(x, other): maximum."""
    return _max_or_min("max", input, dim, keepdim, Amax, MaxDim, "maximum", other)


def min(input, dim=None, keepdim=False, *, other=None):
    """min(x): the smallest value. min(x, dim): namedtuple (values, indices). min(x, other): minimum."""
    return _max_or_min("min", input, dim, keepdim, Amin, MinDim, "minimum", other)


def amax(input, dim=None, keepdim=False):
    """The largest value over dim (None: all); ties share the gradient evenly."""
    return Amax.apply(input, dim, keepdim, "amax")


def amin(input, dim=None, keepdim=False):
    return Amin.apply(input, dim, keepdim, "amin")


def argmax(input, dim=None, keepdim=False):
    return Argmax.apply(input, dim, keepdim, "argmax")


def argmin(input, dim=None, keepdim=False):
    return Argmin.apply(input, dim, keepdim, "argmin")


def _correction(op, dim, unbiased, correction):
    """PyTorch's two spellings: unbiased=True/False (also in dim's place) or correction=<int>."""
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise RuntimeError(f"{op}(): cannot pass both correction and unbiased arguments; use correction= alone")
    if correction is None:
        correction = 0 if unbiased is False else 1
    return dim, correction


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """The variance over dim, dividing by (count - correction); correction=1 (unbiased) by default."""
    dim, correction = _correction("var", dim, unbiased, correction)
    return Var.apply(input, dim, correction, keepdim)


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    dim, correction = _correction("std", dim, unbiased, correction)
    return Std.apply(input, dim, correction, keepdim)


def logsumexp(input, dim, keepdim=False):
    """log(sum(exp(input))) over dim, without overflow; integer tensors are converted to float."""
    if not input.dtype.is_floating_point:
        input = input.to(dt.get_default_dtype())
    return LogSumExp.apply(input, dim, keepdim)


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """The vector p-norm over dim (None: all elements): p=2 ('fro') by default, any number or inf."""
    if isinstance(p, str):
        if p != "fro":
            raise RuntimeError(f"norm(): order {p!r} is not supported; use p='fro', a number, or float('inf')")
        p = 2
    elif p is None:
        p = 2
    if dtype is not None:
        input = input.to(dtype)
    _float_required("norm", input, "expected a floating point tensor as input")
    return Norm.apply(input, float(p), dim, keepdim)


def cumsum(input, dim, *, dtype=None):
    """Running sums along dim; bool and integer tensors accumulate in int64."""
    return Cumsum.apply(input, dim, dtype)


def cumprod(input, dim, *, dtype=None):
    return Cumprod.apply(input, dim, dtype)


def all(input, dim=None, keepdim=False):
    """True where every element (along dim) is non-zero."""
    return All.apply(input, dim, keepdim)


def any(input, dim=None, keepdim=False):
    """True where some element (along dim) is non-zero."""
    return Any.apply(input, dim, keepdim)


class ReductionMethods:
    """Tensor's reduction methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def sum(self, dim=None, keepdim=False, *, dtype=None):
        return sum(self, dim, keepdim, dtype=dtype)

    def mean(self, dim=None, keepdim=False, *, dtype=None):
        return mean(self, dim, keepdim, dtype=dtype)

    @autocast_op("fp32")
    def prod(self, dim=None, keepdim=False, *, dtype=None):
        return prod(self, dim, keepdim, dtype=dtype)

    def max(self, dim=None, keepdim=False, *, other=None):
        return max(self, dim, keepdim, other=other)

    def min(self, dim=None, keepdim=False, *, other=None):
        return min(self, dim, keepdim, other=other)

    def amax(self, dim=None, keepdim=False):
        return amax(self, dim, keepdim)

    def amin(self, dim=None, keepdim=False):
        return amin(self, dim, keepdim)

    def argmax(self, dim=None, keepdim=False):
        return argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return argmin(self, dim, keepdim)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return var(self, dim, unbiased, keepdim, correction=correction)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None):
        return std(self, dim, unbiased, keepdim, correction=correction)

    def logsumexp(self, dim, keepdim=False):
        return logsumexp(self, dim, keepdim)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        return norm(self, p, dim, keepdim, dtype)

    def cumsum(self, dim, *, dtype=None):
        return cumsum(self, dim, dtype=dtype)

    def cumprod(self, dim, *, dtype=None):
        return cumprod(self, dim, dtype=dtype)

    def logcumsumexp(self, dim):
        return logcumsumexp(self, dim)


    def sum_to_size(self, *size):
        """The tensor summed down to ``size``, which must broadcast to this tensor's shape (expand's adjoint)."""
        size = int_tuple("sum_to_size", size)
        if summed_dims(self.shape, size) is not None:
            return sum_to_shape(self, size)
        raise RuntimeError(f"sum_to_size: size {list(size)} is not expandable to size {list(self.shape)}; each "
                           "size must be 1 or equal the tensor's size in the same place, counting from the last")

    def cumsum_(self, dim, *, dtype=None):
        return self._inplace("cumsum_", lambda x: cumsum(x, dim, dtype=dtype))

    def cumprod_(self, dim, *, dtype=None):
        return self._inplace("cumprod_", lambda x: cumprod(x, dim, dtype=dtype))

    def all(self, dim=None, keepdim=False):
        return all(self, dim, keepdim)

    def any(self, dim=None, keepdim=False):
        return any(self, dim, keepdim)

"""The numpy backend: the reference implementation of every primitive, and the default device.

Most primitives are numpy ufuncs used as they are. Two details matter: numpy turns 0-d results
into scalars, so every result is forced back to an array (``out=...`` where numpy supports it),
and the floating-point warnings that PyTorch never gives are silenced in the ops where ordinary
inputs raise them (log(0), x/0, sqrt(-1), pow). add, sub and mul are left unguarded: a guard costs
more than the op itself on small tensors, so inf - inf may still warn. The hand-written kernels
(float32 erf and Φ, softmax and log-softmax with their backwards, sigmoid, layer norm) live beside
it in ``numpy_kernels.py``.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.array_utils import byte_bounds

from .. import dtypes as dt
from . import numpy_kernels as kernels
from .contract import Backend, _taps

class _Natives(dict):
    """gradlab dtype -> numpy dtype. bfloat16's comes from ml_dtypes, imported the first time one is made."""

    def __missing__(self, dtype):
        if dtype is not dt.bfloat16:
            raise KeyError(dtype)
        native = dt.numpy_bfloat16()
        self[dtype] = native
        _FROM_NATIVE[native] = dtype
        _HALF.add(native)
        dt.register_native_dtypes({dtype: native})
        return native


_NATIVE = _Natives({d: np.dtype(d.name) for d in dt.ALL_DTYPES if d is not dt.bfloat16})
_FROM_NATIVE = {v: k for k, v in _NATIVE.items()}
_HALF = {np.dtype(np.float16)}  # computed in float32 where PyTorch accumulates (bfloat16 joins when loaded)
dt.register_native_dtypes(_NATIVE)

try:  # numpy >= 2.3: out=... asks a ufunc for an array even when the result is 0-d
    np.negative(np.zeros(()), out=...)
    _ARRAY_OUT = True
except TypeError:
    _ARRAY_OUT = False


def _ufunc(ufunc, quiet=False):
    """A ufunc as a backend method that always returns an ndarray, never a numpy scalar.

    quiet=True silences floating-point warnings (log(0), 0/0) that PyTorch never gives.
    """
    if _ARRAY_OUT and ufunc.nin == 2:
        def fn(a, b):  # two named arguments: the hottest primitives, called on every + and *
            return ufunc(a, b, out=...)
    elif _ARRAY_OUT:
        def fn(*args):
            return ufunc(*args, out=...)
    else:
        def fn(*args):
            return np.asarray(ufunc(*args))
    if quiet:
        loud = fn

        def fn(*args):
            with np.errstate(all="ignore"):
                return loud(*args)
    return staticmethod(fn)


def _reduction(method):
    def reduce(a, axis=None, keepdims=False):
        return np.asarray(method(a, axis=axis, keepdims=keepdims))

    return reduce


def _half_in_float32(kernel):
    """A float32 kernel that the 16-bit floats reach through float32, as PyTorch computes them."""
    def run(a, *args):
        if a.dtype in _HALF:
            return kernel(a.astype(np.float32), *args).astype(a.dtype)
        return kernel(a, *args)

    run.__name__, run.__doc__ = kernel.__name__, kernel.__doc__
    return run


def _float32_route(name, kernel):
    """A fused kernel of numpy_kernels.py as a backend method. 16-bit floats take the contract's route:
    Backend.<name> widens them to float32 and calls this method again, which then reaches the kernel."""
    contract = getattr(Backend, name)

    def run(self, a, *args):
        if a.dtype in _HALF:
            return contract(self, a, *args)
        return kernel(a, *args)

    run.__name__, run.__doc__ = name, kernel.__doc__
    return run


class NumpyBackend(Backend):
    """Primitives on numpy ndarrays, on the host CPU."""

    name = "numpy"
    array_type = np.ndarray

    # dtypes and transfer
    @staticmethod
    def native_dtype(dtype):
        return _NATIVE[dtype]

    @staticmethod
    def dtype_of(a):
        return _FROM_NATIVE[a.dtype]

    @staticmethod
    def asarray(obj, dtype):
        return np.array(obj, dtype=_NATIVE[dtype], copy=None)

    @staticmethod
    def to_numpy(a):
        return a

    @staticmethod
    def astype(a, dtype):
        with np.errstate(all="ignore"):  # 70000.0 to float16 is inf, NaN to int is arbitrary: as in PyTorch, no warning
            return a.astype(_NATIVE[dtype])

    @staticmethod
    def copy(a):
        return np.array(a, copy=True, order="C")

    # creation
    @staticmethod
    def empty(shape, dtype):
        return np.empty(shape, _NATIVE[dtype])

    @staticmethod
    def zeros(shape, dtype):
        return np.zeros(shape, _NATIVE[dtype])

    @staticmethod
    def ones(shape, dtype):
        return np.ones(shape, _NATIVE[dtype])

    @staticmethod
    def full(shape, value, dtype):
        return np.full(shape, value, _NATIVE[dtype])

    @staticmethod
    def arange(start, stop, step, dtype):
        return np.arange(start, stop, step, dtype=_NATIVE[dtype])

    # elementwise, one input
    neg = _ufunc(np.negative)
    abs = _ufunc(np.abs)
    exp = _ufunc(np.exp, quiet=True)
    log = _ufunc(np.log, quiet=True)
    log1p = _ufunc(np.log1p, quiet=True)
    expm1 = _ufunc(np.expm1, quiet=True)
    sqrt = _ufunc(np.sqrt, quiet=True)
    sin = _ufunc(np.sin)
    cos = _ufunc(np.cos)
    tan = _ufunc(np.tan)
    tanh = _ufunc(np.tanh)
    sign = _ufunc(np.sign)
    floor = _ufunc(np.floor)
    ceil = _ufunc(np.ceil)
    round = _ufunc(np.rint)  # round half to even, as PyTorch does
    erf = staticmethod(_half_in_float32(kernels.erf))
    isnan = _ufunc(np.isnan)
    isinf = _ufunc(np.isinf)
    logical_not = _ufunc(np.logical_not)

    # elementwise, two inputs
    add = _ufunc(np.add)
    sub = _ufunc(np.subtract)
    mul = _ufunc(np.multiply)
    div = _ufunc(np.true_divide, quiet=True)
    pow = _ufunc(np.power, quiet=True)
    floor_divide = _ufunc(np.floor_divide, quiet=True)
    remainder = _ufunc(np.remainder, quiet=True)
    maximum = _ufunc(np.maximum)
    minimum = _ufunc(np.minimum)
    eq = _ufunc(np.equal)
    ne = _ufunc(np.not_equal)
    lt = _ufunc(np.less)
    le = _ufunc(np.less_equal)
    gt = _ufunc(np.greater)
    ge = _ufunc(np.greater_equal)
    logical_and = _ufunc(np.logical_and)
    logical_or = _ufunc(np.logical_or)
    logical_xor = _ufunc(np.logical_xor)

    # more elementwise maths (quiet: out-of-domain inputs give NaN without a warning, as in PyTorch)
    arcsin = _ufunc(np.arcsin, quiet=True)
    arccos = _ufunc(np.arccos, quiet=True)
    arctan = _ufunc(np.arctan)
    sinh = _ufunc(np.sinh, quiet=True)
    cosh = _ufunc(np.cosh, quiet=True)
    arcsinh = _ufunc(np.arcsinh)
    arccosh = _ufunc(np.arccosh, quiet=True)
    arctanh = _ufunc(np.arctanh, quiet=True)
    log2 = _ufunc(np.log2, quiet=True)
    log10 = _ufunc(np.log10, quiet=True)
    erfc = staticmethod(kernels.erfc)
    arctan2 = _ufunc(np.arctan2)
    hypot = _ufunc(np.hypot)
    copysign = _ufunc(np.copysign)
    fmod = _ufunc(np.fmod, quiet=True)
    nextafter = _ufunc(np.nextafter)
    logaddexp = _ufunc(np.logaddexp, quiet=True)
    logaddexp2 = _ufunc(np.logaddexp2, quiet=True)
    gcd = _ufunc(np.gcd)
    lcm = _ufunc(np.lcm)
    bitwise_and = _ufunc(np.bitwise_and)
    bitwise_or = _ufunc(np.bitwise_or)
    bitwise_xor = _ufunc(np.bitwise_xor)
    bitwise_not = _ufunc(np.invert)
    left_shift = _ufunc(np.left_shift)  # shifting by the width or more gives 0 (or -1), as in PyTorch
    right_shift = _ufunc(np.right_shift)

    @staticmethod
    def frexp(a):
        mantissa, exponent = np.frexp(a)
        return np.asarray(mantissa), np.asarray(exponent, dtype=np.int32)

    @staticmethod
    def where(cond, a, b):
        return np.asarray(np.where(cond, a, b))

    # reductions
    sum = staticmethod(_reduction(np.sum))
    prod = staticmethod(_reduction(np.prod))
    max = staticmethod(_reduction(np.max))
    min = staticmethod(_reduction(np.min))
    all = staticmethod(_reduction(np.all))
    any = staticmethod(_reduction(np.any))

    @staticmethod
    def argmax(a, axis=None, keepdims=False):
        return np.asarray(np.argmax(a, axis=axis, keepdims=keepdims))

    @staticmethod
    def argmin(a, axis=None, keepdims=False):
        return np.asarray(np.argmin(a, axis=axis, keepdims=keepdims))

    @staticmethod
    def cumsum(a, axis):
        return np.cumsum(a, axis=axis)

    @staticmethod
    def cumprod(a, axis):
        return np.cumprod(a, axis=axis)

    @staticmethod
    def cummax(a, axis):
        return np.maximum.accumulate(a, axis=axis)

    @staticmethod
    def cummin(a, axis):
        return np.minimum.accumulate(a, axis=axis)

    @staticmethod
    def argsort(a, axis):
        return np.argsort(a, axis=axis, kind="stable")

    # movement
    @staticmethod
    def reshape(a, shape):
        return a.reshape(shape)

    @staticmethod
    def permute(a, axes):
        return a.transpose(axes)

    @staticmethod
    def broadcast_to(a, shape):
        return np.broadcast_to(a, shape)

    @staticmethod
    def getitem(a, index):
        return np.asarray(a[index])

    @staticmethod
    def setitem(a, index, value):
        a[index] = value

    @staticmethod
    def add_at(a, index, values):
        np.add.at(a, index, values)

    @staticmethod
    def positions_in_base(base, view):
        if view.size == 0:
            return np.zeros(view.shape, np.int64)
        def address(a):  # where the array's first element lives: views of one array differ by offsets
            return a.__array_interface__["data"][0]

        (low, high), (view_low, view_high), item = byte_bounds(base), byte_bounds(view), base.itemsize
        if view.itemsize != item or view_low < low or view_high > high:
            raise ValueError("the view does not lie in its base's memory")
        if base.flags.c_contiguous:  # memory order is row-major order: an element's index is its offset
            positions = np.full(view.shape, (address(view) - address(base)) // item, np.int64)
            for axis, (n, stride) in enumerate(zip(view.shape, view.strides)):
                positions += (np.arange(n) * (stride // item)).reshape((n,) + (1,) * (view.ndim - axis - 1))
            return positions
        # any other layout: label base's memory with row-major indices, then read the labels through the view
        labels = np.empty((high - low) // item, np.int64)

        def through(a):
            start = labels[(address(a) - low) // item:]
            return np.lib.stride_tricks.as_strided(start, a.shape, tuple(s // item * labels.itemsize for s in a.strides))

        through(base)[...] = np.arange(base.size).reshape(base.shape)
        return through(view).copy()

    @staticmethod
    def multiply_at(a, index, values):
        np.multiply.at(a, index, values)

    @staticmethod
    def maximum_at(a, index, values):
        np.maximum.at(a, index, values)

    @staticmethod
    def minimum_at(a, index, values):
        np.minimum.at(a, index, values)

    @staticmethod
    def diagonal(a, offset, axis1, axis2):
        # np.diagonal's view is read-only; the same strides through as_strided give a writable one
        start = [slice(None)] * a.ndim
        start[axis2 if offset >= 0 else axis1] = slice(abs(offset), None)
        a = a[tuple(start)]
        length = max(0, min(a.shape[axis1], a.shape[axis2]))
        keep = [i for i in range(a.ndim) if i not in (axis1, axis2)]
        shape = tuple(a.shape[i] for i in keep) + (length,)
        strides = tuple(a.strides[i] for i in keep) + (a.strides[axis1] + a.strides[axis2],)
        return np.lib.stride_tricks.as_strided(a, shape, strides, writeable=a.flags.writeable)

    @staticmethod
    def isub(a, b):  # fused kernel (see Backend.isub): no temporary, no copy
        np.subtract(a, b, a)  # (out given by position: as a keyword it costs 10% more on small arrays)

    @staticmethod
    def iadd(a, b):  # fused kernel (see Backend.iadd); the engine adds a node's later gradients with it
        np.add(a, b, a)

    @staticmethod
    def imul(a, b):  # fused kernel (see Backend.imul)
        np.multiply(a, b, a)

    @staticmethod
    def concatenate(arrays, axis):
        return np.concatenate(arrays, axis=axis)

    @staticmethod
    def stack(arrays, axis):
        return np.stack(arrays, axis=axis)

    @staticmethod
    def flip(a, axes):
        return np.flip(a, axes)

    @staticmethod
    def roll(a, shifts, axes):
        return np.roll(a, shifts, axes)

    @staticmethod
    def pad(a, pad_width, value):
        return np.pad(a, pad_width, mode="constant", constant_values=value)

    @staticmethod
    def take_along_axis(a, index, axis):
        return np.take_along_axis(a, index, axis=axis)

    @staticmethod
    def tril(a, k):
        return np.tril(a, k)

    @staticmethod
    def triu(a, k):
        return np.triu(a, k)

    @staticmethod
    def is_contiguous(a):
        return a.flags.c_contiguous

    @staticmethod
    def sliding_windows(a, window_shape, axes, steps, dilation):
        """A strided view, no copy: a window axis steps through memory by dilation elements of its axis."""
        shape, strides = list(a.shape), list(a.strides)
        for ax, k, s, d in zip(axes, window_shape, steps, dilation):
            shape[ax] = (a.shape[ax] - d * (k - 1) - 1) // s + 1
            strides[ax] = a.strides[ax] * s
        shape += window_shape
        strides += [a.strides[ax] * d for ax, d in zip(axes, dilation)]
        return np.lib.stride_tricks.as_strided(a, tuple(shape), tuple(strides), writeable=False)

    @staticmethod
    def fold_windows(windows, shape, axes, steps, dilation):
        out = np.zeros(shape, windows.dtype)
        window_shape = windows.shape[len(shape):]
        disjoint = all(s > d * (k - 1) for k, s, d in zip(window_shape, steps, dilation))  # each position once
        for tap, index in _taps(shape, window_shape, axes, steps, dilation, windows.shape):
            if disjoint:
                out[index] = windows[(Ellipsis,) + tap]
            else:
                out[index] += windows[(Ellipsis,) + tap]
        return out

    # linear algebra
    _blas_matmul = _ufunc(np.matmul)

    @staticmethod
    def matmul(a, b):
        if a.dtype in _HALF:  # BLAS has no 16-bit floats; PyTorch accumulates their products in float32 too
            return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(a.dtype)
        return NumpyBackend._blas_matmul(a, b)

    @staticmethod
    def matmul_into(a, b, out):  # fused kernel (see Backend.matmul_into): BLAS writes through out's strides
        if out.dtype in _HALF:
            out[...] = NumpyBackend.matmul(a, b)
        else:
            np.matmul(a, b, out=out)

    @staticmethod
    def einsum(subscripts, *arrays):
        if arrays[0].dtype in _HALF:  # as matmul: the products summed in float32
            half = arrays[0].dtype
            return NumpyBackend.einsum(subscripts, *(a.astype(np.float32) for a in arrays)).astype(half)
        return np.asarray(np.einsum(subscripts, *arrays, optimize=len(arrays) > 2))

    # fused kernels (numpy_kernels.py; the rest use the composed fallbacks of the contract)
    def ndtr(self, a):
        """Φ(a): the float32 kernel for float32 (16-bit floats through it), the contract's exact composition otherwise."""
        if a.dtype in _HALF:
            return self.ndtr(a.astype(np.float32)).astype(a.dtype)
        return kernels.ndtr(a) if a.dtype == np.float32 else Backend.ndtr(self, a)

    softmax = _float32_route("softmax", kernels.softmax)
    sigmoid = staticmethod(kernels.sigmoid)
    log_softmax = _float32_route("log_softmax", kernels.log_softmax)
    softmax_backward = _float32_route("softmax_backward", kernels.softmax_backward)
    log_softmax_backward = _float32_route("log_softmax_backward", kernels.log_softmax_backward)
    layer_norm = _float32_route("layer_norm", kernels.layer_norm)
    layer_norm_backward = _float32_route("layer_norm_backward", kernels.layer_norm_backward)
    # gelu and silu are the contract's compositions: on numpy they already run the ndtr / sigmoid kernels
    # above and write every later step in place (imul, iadd), so an override would change nothing

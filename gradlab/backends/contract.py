"""The backend contract: the small set of primitives every device must provide.

Every op in ``gradlab.ops`` computes through these names and nothing else, so a new device is
exactly this list implemented on its own arrays. Arrays here are the backend's own (numpy
``ndarray``, ``mlx.core.array``, ...); dtypes arrive as ``gradlab.dtypes.DType`` and each backend
maps them with ``native_dtype``. Below the primitives sit the optional fused kernels: each has a
fallback composed from primitives, and a backend overrides it only to be faster.
"""

from __future__ import annotations

import itertools

import numpy as np

from .. import dtypes as dt
from ..dtypes import DType
from .linalg_kernels import LinalgKernels

PRIMITIVES = {
    # dtypes and transfer
    "native_dtype": "the backend's dtype object for a gradlab DType",
    "dtype_of": "the gradlab DType of a backend array",
    "asarray": "a backend array from Python data or a numpy array, in the given DType",
    "to_numpy": "a numpy array with the same values (a copy off the host, maybe a view on it)",
    "astype": "a copy of the array converted to another DType",
    "copy": "a contiguous copy of the array",
    # creation
    "empty": "an uninitialised array of a shape and DType",
    "zeros": "an array of zeros",
    "ones": "an array of ones",
    "full": "an array filled with one value",
    "arange": "values from start to stop (exclusive) in steps",
    # elementwise, one input
    "neg abs exp log log1p expm1 sqrt sin cos tan tanh sign floor ceil round erf": "elementwise maths",
    "isnan isinf logical_not": "elementwise predicates giving bool arrays",
    # elementwise, two inputs (arrays or Python numbers, broadcasting)
    "add sub mul div pow floor_divide remainder maximum minimum": "elementwise arithmetic",
    "eq ne lt le gt ge logical_and logical_or logical_xor": "elementwise comparisons giving bool arrays",
    "where": "cond ? a : b, elementwise with broadcasting",
    "arcsin arccos arctan sinh cosh arcsinh arccosh arctanh log2 log10 erfc": "more elementwise maths, one input",
    "arctan2 hypot copysign fmod nextafter logaddexp logaddexp2 gcd lcm": "more elementwise maths, two inputs",
    "bitwise_and bitwise_or bitwise_xor bitwise_not left_shift right_shift": "bitwise ops on integer and bool arrays",
    "frexp": "(mantissa, exponent) of each element, mantissa in [0.5, 1) times a power of two",
    # reductions over an axis tuple (or None for all), with keepdims
    "sum prod max min all any": "reductions",
    "argmax argmin": "index of the largest/smallest value along one axis (or of the flattened array)",
    "cumsum cumprod": "running sum/product along one axis",
    "cummax cummin": "running max/min along one axis (a NaN, once met, stays)",
    "argsort": "the positions that sort one axis ascending: stable (equal values keep their order), NaN last",
    # movement: views where the array type allows them
    "reshape": "same data, new shape (a view when the layout allows)",
    "permute": "axes reordered (a view)",
    "broadcast_to": "stretch size-1 axes without copying (a read-only view)",
    "getitem": "index with ints, slices, None, Ellipsis, bool masks and integer arrays",
    "setitem": "write values into an indexed region, in place",
    "add_at": "a[index] += values, in place, adding repeated indices (the gradient of indexing)",
    "positions_in_base": "for each element of a view, the row-major index of the base element it shares memory with",
    "multiply_at maximum_at minimum_at": "a[index] *= / max= / min= values, in place, each repeated index in turn",
    "diagonal": "the diagonal of two axes as a writable view, its length the last axis",
    "concatenate stack": "join arrays along an existing / a new axis",
    "flip roll pad": "reverse, rotate and pad along axes",
    "take_along_axis": "gather values along one axis by an index array",
    "tril triu": "keep the lower / upper triangle of the last two axes",
    "is_contiguous": "whether the array is laid out row-major without gaps",
    "sliding_windows": "every window along some axes as a read-only view (axes become window counts, window dims last)",
    "fold_windows": "the adjoint of sliding_windows: each window element added back where it was taken from",
    # linear algebra
    "matmul": "matrix product with batch broadcasting",
    "einsum": "Einstein summation over explicit subscripts",
}
# Factorizations and solvers (lu_factor, solve, cholesky, qr, svd, eigh, ...) are not in this list: every
# backend inherits host versions of them from LinalgKernels (linalg_kernels.py) and may override them.


class Backend(LinalgKernels):
    """Base class of every backend: fused kernels composed from the primitives above.

    Subclasses implement each primitive in ``PRIMITIVES``; the methods below are the optional fused
    kernels, written once in terms of primitives, and are overridden only to be faster.
    """

    name = "abstract"

    # --- fused kernels with composed fallbacks -------------------------------------------------

    def _in_float32(self, kernel, a, *args):
        """A 16-bit float input computed in float32 and the result rounded back, as PyTorch does for sums."""
        half = self.dtype_of(a)
        return self.astype(kernel(self.astype(a, dt.float32), *args), half)

    def logsumexp(self, a, axis, keepdims):
        """log(sum(exp(a))) without overflow: subtract the maximum first."""
        if self.dtype_of(a) in dt.HALF_DTYPES:
            return self._in_float32(self.logsumexp, a, axis, keepdims)
        m = self.max(a, axis, True)
        m = self.where(self.isinf(m), self.zeros_like(m), m)
        s = self.log(self.sum(self.exp(self.sub(a, m)), axis, True))
        out = self.add(s, m)
        return out if keepdims else self.reshape(out, _drop_axes(out.shape, axis))

    def softmax(self, a, axis):
        """exp(a - max) / sum(exp(a - max)): the maximum keeps exp from overflowing."""
        if self.dtype_of(a) in dt.HALF_DTYPES:
            return self._in_float32(self.softmax, a, axis)
        e = self.exp(self.sub(a, self.max(a, (axis,), True)))
        return self.div(e, self.sum(e, (axis,), True))

    def log_softmax(self, a, axis):
        """(a - max) - log(sum(exp(a - max))): shifting first keeps float32 digits for large logits."""
        if self.dtype_of(a) in dt.HALF_DTYPES:
            return self._in_float32(self.log_softmax, a, axis)
        shifted = self.sub(a, self.max(a, (axis,), True))
        return self.sub(shifted, self.log(self.sum(self.exp(shifted), (axis,), True)))

    def sigmoid(self, a):
        """1 / (1 + exp(-a)), written so that exp never overflows."""
        e = self.exp(self.neg(self.abs(a)))
        pos = self.div(1.0, self.add(e, 1.0))
        return self.where(self.ge(a, 0), pos, self.sub(1.0, pos))

    def matmul_into(self, a, b, out):
        """out[...] = a @ b, written into an array the caller owns (maybe a strided view of a bigger one,
        e.g. one head's slot of a packed buffer); composed as matmul + setitem."""
        self.setitem(out, Ellipsis, self.matmul(a, b))

    def ndtr(self, a):
        """Φ(a), the standard normal CDF (GELU's gate): (1 + erf(a / √2)) / 2."""
        return self.mul(self.add(self.erf(self.mul(a, 0.7071067811865476)), 1.0), 0.5)

    def zeros_like(self, a):
        return self.zeros(a.shape, self.dtype_of(a))

    def isub(self, a, b):
        """a -= b, written into a's own memory (the optimizers' parameter update); composed as sub + setitem."""
        self.setitem(a, Ellipsis, self.sub(a, b))

    def iadd(self, a, b):
        """a += b in a's own memory, for an array the caller made and owns; composed as add + setitem."""
        self.setitem(a, Ellipsis, self.add(a, b))

    def imul(self, a, b):
        """a *= b in a's own memory, for an array the caller made and owns; composed as mul + setitem."""
        self.setitem(a, Ellipsis, self.mul(a, b))

    # --- windows (convolution, pooling): composed from slices, a backend overrides with views ----

    def sliding_windows(self, a, window_shape, axes, steps, dilation):
        """Every window of ``window_shape`` along ``axes``, moving ``steps`` apart, taps ``dilation`` apart.

        Each axis in ``axes`` becomes the number of windows along it, and the window dims are appended:
        windows[..., i, j, ki, kj] = a[..., i * step + ki * dilation, j * step + kj * dilation].
        Composed: one strided slice per tap, stacked (a copy where the backend has no strided views).
        """
        pieces = [self.getitem(a, index) for _, index in _taps(a.shape, window_shape, axes, steps, dilation)]
        out = self.stack(pieces, -1)
        return self.reshape(out, out.shape[:-1] + tuple(window_shape))

    def fold_windows(self, windows, shape, axes, steps, dilation):
        """The adjoint of sliding_windows: an array of ``shape`` in which every position holds the sum
        of the window elements that were taken from it (col2im)."""
        out = self.zeros(shape, self.dtype_of(windows))
        window_shape = windows.shape[len(shape):]
        for tap, index in _taps(shape, window_shape, axes, steps, dilation, windows.shape):
            self.setitem(out, index, self.add(self.getitem(out, index), self.getitem(windows, (Ellipsis,) + tap)))
        return out

    # --- random numbers: drawn on the host with numpy's generator, then moved ------------------

    def random_uniform(self, rng: np.random.Generator, shape, low, high, dtype: DType):
        """Uniform floats in [low, high); a fixed seed gives the same values on every backend."""
        return self.asarray(rng.uniform(low, high, size=shape), dtype)

    def random_normal(self, rng: np.random.Generator, shape, mean, std, dtype: DType):
        return self.asarray(rng.normal(mean, std, size=shape), dtype)

    def random_integers(self, rng: np.random.Generator, low, high, shape, dtype: DType):
        return self.asarray(rng.integers(low, high, size=shape), dtype)

    def random_permutation(self, rng: np.random.Generator, n, dtype: DType):
        return self.asarray(rng.permutation(n), dtype)

    def synchronize(self):
        """Wait for queued work to finish (a no-op on synchronous backends)."""

    def materialize(self, arrays):
        """Compute these arrays now, so a lazy backend's graph stops growing (a no-op on eager backends).

        The optimizers call it after each step with the parameters and their state."""

    def __repr__(self):
        return f"<gradlab backend {self.name!r}>"


def _taps(shape, window_shape, axes, steps, dilation, windows_shape=None):
    """(tap, index) for every position inside a window: index slices out that tap of every window."""
    counts = [windows_shape[ax] if windows_shape else (shape[ax] - d * (k - 1) - 1) // s + 1
              for ax, k, s, d in zip(axes, window_shape, steps, dilation)]
    for tap in itertools.product(*(range(k) for k in window_shape)):
        index = [slice(None)] * len(shape)
        for ax, t, s, d, n in zip(axes, tap, steps, dilation, counts):
            index[ax] = slice(t * d, t * d + (n - 1) * s + 1, s)
        yield tap, tuple(index)


def _drop_axes(shape, axis):
    if axis is None:
        return ()
    ndim = len(shape)
    axes = {ax % ndim for ax in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple(n for i, n in enumerate(shape) if i not in axes)

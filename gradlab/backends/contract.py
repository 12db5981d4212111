"""The backend contract: the small set of primitives every device must provide.

Every op in ``gradlab.ops`` computes through these names and nothing else, so a new device is
exactly this list implemented on its own arrays. Arrays here are the backend's own (numpy
``ndarray``, ``mlx.core.array``, ...); dtypes arrive as ``gradlab.dtypes.DType`` and each backend
maps them with ``native_dtype``. Below the primitives sit the optional fused kernels
(``FUSED_KERNELS``): each has a fallback in ``Backend`` composed from primitives, so a new backend
gets all of them for free, and overrides one only to be faster. They are the heavy paths of a
network: softmax and log-softmax with their backwards, GELU and SiLU with theirs, layer norm
forward and backward, plus in-place updates and random numbers.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import dtypes as dt
from ..dtypes import DType
from .linalg_kernels import LinalgKernels

GELU_TANH_SCALE = math.sqrt(2.0 / math.pi)  # gelu's tanh approximation: Φ(x) ≈ (1 + tanh(k · (x + c · x³))) / 2
GELU_TANH_CUBIC = 0.044715
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)  # φ(0), the normal density's peak

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
FUSED_KERNELS = {
    # reductions that must not overflow, and their backwards
    "logsumexp": "log Σ exp(a) over axes, the maximum subtracted first so exp cannot overflow",
    "softmax log_softmax": "exp(a) / Σ exp(a) along one axis, and its log, computed stably",
    "softmax_backward": "y · (g − Σ g·y) along the axis, y the softmax output",
    "log_softmax_backward": "g − exp(y) · Σ g along the axis, y the log_softmax output",
    # activations: forward saves what its backward needs
    "sigmoid": "1 / (1 + exp(−a)) without overflow",
    "ndtr": "Φ(a), the standard normal CDF (GELU's gate)",
    "gelu gelu_backward": "a · Φ(a) (or its tanh form) and the saved arrays; g · (Φ(a) + a · φ(a))",
    "silu silu_backward": "a · σ(a); g · σ(a) · (1 + a · (1 − σ(a)))",
    # normalisation
    "layer_norm layer_norm_backward": "(a − mean) / σ over the last n axes, · weight + bias; its three gradients",
    # writes into memory the caller owns
    "matmul_into": "out[...] = a @ b, into an existing (maybe strided) array",
    "isub iadd imul": "a −= b, a += b, a *= b in a's own memory",
    # random numbers (host numpy PCG64, then moved: one seed, the same numbers everywhere)
    "random_uniform random_normal random_integers random_permutation": "random arrays from a numpy Generator",
}
# sliding_windows / fold_windows also have composed fallbacks in Backend, but are listed under PRIMITIVES.
# All take and return backend arrays; a 16-bit float input computes in float32 and returns its own dtype.

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
        """1 / (1 + exp(-a)), written so that exp never overflows: e = exp(-|a|) ≤ 1, and for a < 0 the
        value is e / (1 + e) (not 1 − 1/(1 + e), which rounds to 0 long before the sigmoid underflows)."""
        e = self.exp(self.neg(self.abs(a)))
        pos = self.div(1.0, self.add(e, 1.0))
        return self.where(self.ge(a, 0), pos, self.mul(e, pos))

    def matmul_into(self, a, b, out):
        """out[...] = a @ b, written into an array the caller owns (maybe a strided view of a bigger one,
        e.g. one head's slot of a packed buffer); composed as matmul + setitem."""
        self.setitem(out, Ellipsis, self.matmul(a, b))

    def ndtr(self, a):
        """Φ(a), the standard normal CDF (GELU's gate): (1 + erf(a / √2)) / 2."""
        return self.mul(self.add(self.erf(self.mul(a, 0.7071067811865476)), 1.0), 0.5)

    def any_true(self, a) -> bool:
        """Whether any element of a is true, read back to the host as a Python bool (the one way an op
        asks a question of device data: a device array cannot be handed to ``bool`` directly)."""
        return bool(self.to_numpy(self.any(a)))

    def check(self, validate, *arrays):
        """``validate(backend, *arrays)``: an op checking its input's values (raising a clear error when
        they are out of range). Named as a check, a compiled step runs it again every time, rather than
        holding the values it read once as part of the program."""
        return validate(self, *arrays)

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

    # --- fused kernels of the heavy paths (activations, softmax's backward, layer norm) ---
    # Each is written once from primitives (and the kernels above); 16-bit floats are widened to float32
    # first, the results rounded back, the saved arrays kept in float32.

    def _widen(self, a):
        """a as float32 if it is a 16-bit float (None and other dtypes pass as they are)."""
        return self.astype(a, dt.float32) if a is not None and self.dtype_of(a) in dt.HALF_DTYPES else a

    def gelu(self, a, approximate):
        """a · Φ(a), Φ the normal CDF (exactly, or tanh's approximation 'tanh'), and what backward needs.

        saved is (Φ(a),) for 'none' and (tanh(k·(a + c·a³)),) for 'tanh': the costly erf / tanh is
        computed once. Every step after the first writes into the array that step made.
        """
        half = self.dtype_of(a)
        if half in dt.HALF_DTYPES:
            out, saved = self.gelu(self.astype(a, dt.float32), approximate)
            return self.astype(out, half), saved
        if approximate == "tanh":
            inner = self.mul(a, a)
            self.imul(inner, GELU_TANH_CUBIC)
            self.iadd(inner, 1.0)
            self.imul(inner, a)
            self.imul(inner, GELU_TANH_SCALE)  # k · (a + c · a³)
            t = self.tanh(inner)
            out = self.add(t, 1.0)
            self.imul(out, 0.5)  # Φ(a) ≈ (1 + t) / 2
            self.imul(out, a)
            return out, (t,)
        cdf = self.ndtr(a)
        return self.mul(a, cdf), (cdf,)

    def gelu_backward(self, g, a, saved, approximate):
        """g · gelu'(a): Φ(a) + a · φ(a) exactly, or the tanh form's slope, from what gelu saved.

        An empty ``saved`` recomputes Φ (or t), so a backend may override gelu alone and save nothing.
        """
        half = self.dtype_of(a)
        if half in dt.HALF_DTYPES:
            return self.astype(self.gelu_backward(self._widen(g), self.astype(a, dt.float32), saved, approximate), half)
        if approximate == "tanh":
            t = saved[0] if saved else self.gelu(a, approximate)[1][0]
            # slope = (1 + t) / 2 + a · (1 − t²) · (1 + 3c · a²) · k / 2
            slope = self.sub(1.0, self.mul(t, t))
            self.imul(slope, a)
            cubic = self.mul(a, a)
            self.imul(cubic, 3 * GELU_TANH_CUBIC)
            self.iadd(cubic, 1.0)
            self.imul(slope, cubic)
            self.imul(slope, 0.5 * GELU_TANH_SCALE)
            self.iadd(slope, self.mul(t, 0.5))
            self.iadd(slope, 0.5)
        else:
            cdf = saved[0] if saved else self.ndtr(a)
            slope = self.mul(a, a)
            self.imul(slope, -0.5)
            slope = self.exp(slope)
            self.imul(slope, a)
            self.imul(slope, _INV_SQRT_2PI)  # a · φ(a)
            self.iadd(slope, cdf)
        self.imul(slope, g)
        return slope

    def silu(self, a):
        """a · σ(a) (also called swish), σ the sigmoid kernel."""
        if self.dtype_of(a) in dt.HALF_DTYPES:
            return self._in_float32(self.silu, a)
        out = self.sigmoid(a)
        self.imul(out, a)
        return out

    def silu_backward(self, g, a):
        """g · σ(a) · (1 + a · (1 − σ(a))): silu's slope, σ recomputed (one sigmoid, cheaper than saving it)."""
        half = self.dtype_of(a)
        if half in dt.HALF_DTYPES:
            return self.astype(self.silu_backward(self._widen(g), self.astype(a, dt.float32)), half)
        s = self.sigmoid(a)
        slope = self.sub(1.0, s)
        self.imul(slope, a)
        self.iadd(slope, 1.0)
        self.imul(slope, s)
        self.imul(slope, g)
        return slope

    def softmax_backward(self, y, g, axis):
        """y · (g − Σ g·y) along axis, y = softmax(x): the Jacobian diag(y) − y yᵀ applied to g, row by row."""
        half = self.dtype_of(y)
        if half in dt.HALF_DTYPES:
            return self.astype(self.softmax_backward(self.astype(y, dt.float32), self._widen(g), axis), half)
        out = self.sub(g, self.sum(self.mul(g, y), (axis,), True))
        self.imul(out, y)
        return out

    def log_softmax_backward(self, y, g, axis):
        """g − exp(y) · Σ g along axis, y = log_softmax(x): exp(y) is the softmax, never recomputed from x."""
        half = self.dtype_of(y)
        if half in dt.HALF_DTYPES:
            return self.astype(self.log_softmax_backward(self.astype(y, dt.float32), self._widen(g), axis), half)
        p = self.exp(y)
        self.imul(p, self.sum(g, (axis,), True))
        return self.sub(g, p)

    def layer_norm(self, a, weight, bias, n, eps):
        """x̂ = (a − mean) / σ over the last n axes (σ² the biased variance, plus eps), then x̂ · weight + bias.

        saved is (x̂, 1/σ): backward needs nothing else. weight and bias have shape a.shape[-n:] or are None.
        """
        if self.dtype_of(a) in dt.HALF_DTYPES:
            out, saved = self.layer_norm(self.astype(a, dt.float32), self._widen(weight), self._widen(bias), n, eps)
            return self.astype(out, self.dtype_of(a)), saved
        axes, scale = _trailing(a.shape, n)
        mean = self.sum(a, axes, True)
        self.imul(mean, scale)
        x_hat = self.sub(a, mean)
        var = self.sum(self.mul(x_hat, x_hat), axes, True)
        self.imul(var, scale)
        self.iadd(var, eps)
        inv_std = self.div(1.0, self.sqrt(var))
        self.imul(x_hat, inv_std)
        out = self.copy(x_hat) if weight is None else self.mul(x_hat, weight)  # never x̂ itself: it is saved
        if bias is not None:
            self.iadd(out, bias)
        return out, (x_hat, inv_std)

    def layer_norm_backward(self, g, a, weight, saved, n, needs):
        """The three gradients of layer_norm, for those ``needs`` asks (None for the others).

        grad_a = (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)) / σ with ĝ = g · weight, means over the last n axes;
        grad_weight = Σ g · x̂ and grad_bias = Σ g over the leading axes.
        """
        half = self.dtype_of(g)
        if half in dt.HALF_DTYPES:
            grads = self.layer_norm_backward(self.astype(g, dt.float32), self._widen(a), self._widen(weight), saved,
                                             n, needs)
            dtypes = (half, None if weight is None else self.dtype_of(weight), half)
            return tuple(None if x is None else self.astype(x, d) for x, d in zip(grads, dtypes))
        x_hat, inv_std = saved
        axes, scale = _trailing(g.shape, n)
        lead = tuple(range(g.ndim - n))
        grad_a = grad_weight = grad_bias = None
        if needs[1]:
            grad_weight = self.sum(self.mul(g, x_hat), lead, False) if lead else self.mul(g, x_hat)
        if needs[2]:
            grad_bias = self.sum(g, lead, False) if lead else self.copy(g)
        if needs[0]:
            gy = g if weight is None else self.mul(g, weight)
            mean_gy = self.sum(gy, axes, True)
            self.imul(mean_gy, scale)
            mean_gy_xh = self.sum(self.mul(gy, x_hat), axes, True)
            self.imul(mean_gy_xh, scale)
            shift = self.mul(x_hat, mean_gy_xh)
            self.iadd(shift, mean_gy)
            grad_a = self.sub(gy, shift)
            self.imul(grad_a, inv_std)
        return grad_a, grad_weight, grad_bias

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
        """Normal floats with the given mean and std, drawn on the host and moved."""
        return self.asarray(rng.normal(mean, std, size=shape), dtype)

    def random_integers(self, rng: np.random.Generator, low, high, shape, dtype: DType):
        """Integers in [low, high), drawn on the host and moved."""
        return self.asarray(rng.integers(low, high, size=shape), dtype)

    def random_permutation(self, rng: np.random.Generator, n, dtype: DType):
        """A random ordering of 0 … n − 1, drawn on the host and moved."""
        return self.asarray(rng.permutation(n), dtype)

    def synchronize(self):
        """Wait for queued work to finish (a no-op on synchronous backends)."""

    def materialize(self, arrays):
        """Compute these arrays now, so a lazy backend's graph stops growing (a no-op on eager backends).

        The optimizers call it after each step with the parameters and their state."""

    # The DTypes this backend's arrays can hold; a backend without, say, float64 narrows it, and
    # tensors are refused before any work when asked for one it lacks (device.backend_for).
    supported_dtypes = frozenset(dt.ALL_DTYPES)

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


def _trailing(shape, n):
    """The last n axes of shape, and 1 / the number of elements they hold (the scale of a mean over them)."""
    axes = tuple(range(len(shape) - n, len(shape)))
    return axes, 1.0 / max(math.prod(shape[len(shape) - n:]), 1)


def _drop_axes(shape, axis):
    if axis is None:
        return ()
    ndim = len(shape)
    axes = {ax % ndim for ax in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple(n for i, n in enumerate(shape) if i not in axes)

"""The numba backend's kernels: loops compiled by numba, one pass per row, the rows shared among the cores.

Three kinds, each written once:

* scalar maths (``exp32``, ``tanh32``, ``erf32``, ``ndtr32``, ``sigmoid``): plain arithmetic on one
  number, so that LLVM can vectorise the loops that call them. libm's expf is one call per element
  and stops vectorisation; exp32 builds 2^k from its bits instead and runs 8 lanes at a time.
* elementwise kernels, made by ``_kernel`` from a scalar function and a loop template:
  ``out[i] = f(x[i])`` over flat arrays, ``prange`` splitting the elements among the threads.
* row kernels (softmax, log-softmax, layer norm, ...): ``prange`` over the rows of a C-contiguous
  (rows, n) array, each row read a few times while it sits in the L1 cache.

Every parallel kernel has a serial twin (``<name>_serial``) for small arrays and forked children.
Every kernel is ``cache=True``: compiled once per dtype, then loaded from ``__pycache__`` by the next
process. Arrays come in float32 or float64 (the backend sends 16-bit floats through float32).
"""

from __future__ import annotations

import math
import os
import types as pytypes

import numpy as np
from llvmlite import ir
from numba import njit, prange, types
from numba.extending import intrinsic, overload

from .numpy_kernels import _ERF_EDGE, _ERF_NEAR, _ERF_TAIL, _NDTR_EDGE, _NDTR_NEAR

_SQRT_HALF = 0.7071067811865476
_INV_SQRT_2PI = 0.3989422804014327
_TANH_SCALE = 0.7978845608028654  # sqrt(2 / pi), the tanh approximation of gelu: tanh(k * (x + c * x^3))
_TANH_CUBIC = 0.044715


# --- scalar maths ------------------------------------------------------------------------------

def like(x, value):
    """``value`` in x's precision. numba types a Python float as float64 and float32 · float64 as
    float64, so a float32 kernel writes its constants through this to stay in float32 lanes."""
    return value


@overload(like, inline="always")
def _like(x, value):
    if x == types.float32:
        return lambda x, value: np.float32(value)
    return lambda x, value: np.float64(value)


@intrinsic
def _float32_from_bits(typingctx, bits):
    """The float32 whose bit pattern is the int32 ``bits`` (no conversion: the same 32 bits read as a float)."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.FloatType())

    return types.float32(types.int32), codegen


@njit(inline="always")
def exp32(x):
    """e^x in float32 within 1 ulp (Cephes' expf): e^x = 2^k · e^r with r = x − k·ln2 in [−ln2/2, ln2/2].

    e^r is a degree-7 polynomial; 2^k is written straight into a float's exponent bits, in two halves
    so that results below float32's smallest normal number come out as the right subnormals (or 0).
    """
    c = min(max(x, np.float32(-104.0)), np.float32(89.0))  # beyond these e^x is 0 or inf in float32
    k = np.floor(c * np.float32(1.4426950408889634) + np.float32(0.5))
    r = c - k * np.float32(0.693359375) + k * np.float32(2.12194440e-4)  # ln2 in two parts: r exact
    p = np.float32(1.9875691500e-4)
    p = p * r + np.float32(1.3981999507e-3)
    p = p * r + np.float32(8.3334519073e-3)
    p = p * r + np.float32(4.1665795894e-2)
    p = p * r + np.float32(1.6666665459e-1)
    p = p * r + np.float32(5.0000001201e-1)
    p = p * (r * r) + r + np.float32(1.0)
    ki = np.int32(k)
    half = ki >> 1
    out = p * _float32_from_bits((half + 127) << 23) * _float32_from_bits((ki - half + 127) << 23)
    return out if x == x else x  # NaN stays NaN


def fast_exp(x):
    """e^x: exp32 for float32, libm's exp for float64 (chosen when the kernel is compiled)."""
    return math.exp(x)


@overload(fast_exp, inline="always")
def _fast_exp(x):
    if x == types.float32:
        return lambda x: exp32(x)
    return lambda x: math.exp(x)


@njit(inline="always")
def sigmoid(x):
    """1 / (1 + e^−x); e^−x overflowing to inf gives exactly 0, as it should."""
    one = like(x, 1.0)
    return one / (one + fast_exp(-x))


def tanh_of(x):
    """tanh(x): a vectorisable float32 form, libm's tanh for float64."""
    return math.tanh(x)


@njit(inline="always")
def tanh32(x):
    """tanh in float32 (Cephes' tanhf): an odd polynomial near 0, 1 − 2 / (e^2|x| + 1) beyond, both
    computed and one selected, so the loop has no branch."""
    z = x * x
    p = np.float32(-5.70498872745e-3)
    p = p * z + np.float32(2.06390887954e-2)
    p = p * z + np.float32(-5.37397155531e-2)
    p = p * z + np.float32(1.33314422036e-1)
    p = p * z + np.float32(-3.33332819422e-1)
    near = x * (np.float32(1.0) + z * p)  # x · (...) keeps the sign of −0
    a = abs(x)
    far = np.float32(1.0) - np.float32(2.0) / (exp32(a + a) + np.float32(1.0))
    far = far if x >= 0 else -far
    return near if a < np.float32(0.625) else far


@overload(tanh_of, inline="always")
def _tanh_of(x):
    if x == types.float32:
        return lambda x: tanh32(x)
    return lambda x: math.tanh(x)


@njit(inline="always")
def _horner32(coefficients, v):
    p = np.float32(0.0)
    for c in coefficients:
        p = p * v + np.float32(c)
    return p


@njit
def _erf_tail(t, cdf):
    """erf(t), or Φ's (1 + erf(t)) / 2, in float64 through erfc(|t|) = e^−t² · R(1/|t|) (numpy_kernels' fit)."""
    s = abs(float(t))
    u = 1.0 / s
    r = 0.0
    for c in _ERF_TAIL:
        r = r * u + c
    erfc = r * u * math.exp(-s * s)
    if cdf:  # the lower tail 0.5·erfc keeps its relative precision
        return 1.0 - 0.5 * erfc if t > 0 else 0.5 * erfc
    return math.copysign(1.0 - erfc, t)


@njit(inline="always")
def erf32(x):
    """erf in float32: t + t·y(t²) from numpy_kernels' minimax polynomial for |t| <= 0.8, the float64 tail beyond."""
    if abs(x) <= _ERF_EDGE:
        return _horner32(_ERF_NEAR, x * x) * x + x
    return np.float32(_erf_tail(x, False))


@njit(inline="always")
def ndtr32(x):
    """Φ(x) in float32: 1/2 + x·w(x²) for |x| <= 1.5 (numpy_kernels' polynomial), the float64 tail beyond."""
    if abs(x) <= _NDTR_EDGE:
        return _horner32(_NDTR_NEAR, x * x) * x + np.float32(0.5)
    return np.float32(_erf_tail(x * _SQRT_HALF, True))


def erf_of(x):
    return math.erf(x)


@overload(erf_of, inline="always")
def _erf_of(x):
    if x == types.float32:
        return lambda x: erf32(x)
    return lambda x: math.erf(x)


def ndtr_of(x):
    return 0.5 * math.erfc(-x * _SQRT_HALF)


@overload(ndtr_of, inline="always")
def _ndtr_of(x):
    if x == types.float32:
        return lambda x: ndtr32(x)
    return lambda x: 0.5 * math.erfc(-x * _SQRT_HALF)  # erfc: Φ's lower tail keeps its relative precision


@njit(inline="always")
def silu(x):
    return x * sigmoid(x)


@njit(inline="always")
def silu_slope(g, x):
    s, one = sigmoid(x), like(x, 1.0)
    return g * s * (one + x * (one - s))


@njit(inline="always")
def gelu_tanh(x):
    """x · (1 + tanh(u)) / 2 with u = k(x + c x³), written as x · sigmoid(2u): the same function, one exp."""
    u = x * (like(x, 1.0) + like(x, _TANH_CUBIC) * x * x) * like(x, _TANH_SCALE)
    return x * sigmoid(u + u)


@njit(inline="always")
def gelu_tanh_slope(g, x):
    """g · d/dx of gelu_tanh: s + 2k · x · s(1 − s)(1 + 3c x²), s = sigmoid(2u) = (1 + tanh u) / 2."""
    one = like(x, 1.0)
    u = x * (one + like(x, _TANH_CUBIC) * x * x) * like(x, _TANH_SCALE)
    s = sigmoid(u + u)
    return g * (s + like(x, 2.0 * _TANH_SCALE) * x * s * (one - s) * (one + like(x, 3.0 * _TANH_CUBIC) * x * x))


# --- parallel kernels, and their serial twins for small arrays and forked children -----------------

PARALLEL_KERNELS: dict = {}  # name -> the Python function of every parallel kernel below
PARALLEL_MIN_SIZE = 32768  # elements: below this the backend calls a kernel's serial twin


def _parallel(fn, name=None):
    """``@njit(parallel=True, cache=True)``, plus a serial twin ``<name>_serial`` (the same loop, prange
    read as range), compiled on its first call.

    Waking the other threads costs a few µs on an idle machine and milliseconds on a busy one (a
    thread that is not scheduled stalls the whole loop): more than a small array's work, which the
    backend therefore gives to the twin. A forked child uses only the twins (``_serial_in_this_process``).
    """
    name = name or fn.__name__
    PARALLEL_KERNELS[name] = fn
    twin = pytypes.FunctionType(fn.__code__, fn.__globals__, name + "_serial")
    twin.__qualname__ = name + "_serial"
    globals()[name + "_serial"] = njit(cache=True)(twin)
    return njit(parallel=True, cache=True)(fn)


def _serial_in_this_process():
    """GNU OpenMP cannot run in a child forked after its threads started (numba aborts the child), so a
    forked child (a DataLoader worker) runs every kernel's serial twin."""
    module = globals()
    for name in PARALLEL_KERNELS:
        module[name] = module[name + "_serial"]


os.register_at_fork(after_in_child=_serial_in_this_process)


# --- elementwise kernels, one per scalar function -------------------------------------------------

def _map_template(x, out):
    for i in prange(x.size):
        out[i] = scalar(x[i])  # noqa: F821 (the scalar function, in this kernel's own globals)


def _zip_template(g, x, out):
    for i in prange(x.size):
        out[i] = scalar(g[i], x[i])  # noqa: F821


def _kernel(template, scalar, name):
    """A parallel kernel from a template loop, with ``scalar`` as a global of its own, not a closure:
    numba's cache keys a closure by the objects it holds (new in every process), a global by name."""
    fn = pytypes.FunctionType(template.__code__, {**globals(), "scalar": scalar}, name)
    fn.__qualname__ = name
    return _parallel(fn, name)


map_exp = _kernel(_map_template, fast_exp, "map_exp")
map_tanh = _kernel(_map_template, tanh_of, "map_tanh")
map_erf = _kernel(_map_template, erf_of, "map_erf")
map_ndtr = _kernel(_map_template, ndtr_of, "map_ndtr")
map_sigmoid = _kernel(_map_template, sigmoid, "map_sigmoid")
map_silu = _kernel(_map_template, silu, "map_silu")
map_gelu_tanh = _kernel(_map_template, gelu_tanh, "map_gelu_tanh")
zip_silu_backward = _kernel(_zip_template, silu_slope, "zip_silu_backward")
zip_gelu_tanh_backward = _kernel(_zip_template, gelu_tanh_slope, "zip_gelu_tanh_backward")


@_parallel
def gelu_erf(x, out, cdf):
    """out = x · Φ(x), keeping Φ(x) for backward (erf is the costly part)."""
    for i in prange(x.size):
        p = ndtr_of(x[i])
        cdf[i] = p
        out[i] = x[i] * p


@_parallel
def gelu_erf_backward(g, x, cdf, out):
    """g · (Φ(x) + x · φ(x)), φ the standard normal density, Φ(x) saved by forward."""
    for i in prange(x.size):
        v = x[i]
        out[i] = g[i] * (cdf[i] + v * fast_exp(like(v, -0.5) * v * v) * like(v, _INV_SQRT_2PI))


# --- sums along a row: in float64, with reassociation so that LLVM keeps partial sums in vector lanes --
# (a float32 running sum of 10,000 terms drifts by ~1e-5 even split over 32 lanes; float64 does not)

@njit(fastmath={"reassoc", "nsz"}, cache=True)
def _sum(row):
    s = 0.0
    for v in row:
        s += v
    return row.dtype.type(s)


@njit(fastmath={"reassoc", "nsz"}, cache=True)
def _dot(a, b):
    s = 0.0
    for j in range(a.size):
        s += float(a[j]) * b[j]
    return a.dtype.type(s)


@njit(fastmath={"reassoc", "nsz"}, cache=True)
def _squared_deviation(row, mean):
    s, m = 0.0, float(mean)
    for v in row:
        d = v - m
        s += d * d
    return s


@njit(inline="always")
def _max(row):
    """The largest value; NaN if there is one (a comparison with NaN is false, so it is kept once met)."""
    m = row[0]
    for v in row:
        m = v if (v > m or v != v) else m
    return m


# --- row kernels: prange over the rows of C-contiguous (rows, n) arrays ------------------------------

@_parallel
def softmax_rows(x, out):
    """exp(x − max) / Σ: the maximum keeps exp from overflowing; a row of −inf gives NaN, as numpy's does."""
    for i in prange(x.shape[0]):
        row, o = x[i], out[i]
        m = _max(row)
        for j in range(row.size):
            o[j] = fast_exp(row[j] - m)
        inv = like(m, 1.0) / _sum(o)
        for j in range(row.size):
            o[j] *= inv


@_parallel
def log_softmax_rows(x, out):
    """(x − max) − log Σ exp(x − max); the exps go through out before it takes the result."""
    for i in prange(x.shape[0]):
        row, o = x[i], out[i]
        m = _max(row)
        for j in range(row.size):
            o[j] = fast_exp(row[j] - m)
        shift = m + math.log(_sum(o))
        for j in range(row.size):
            o[j] = row[j] - shift


@_parallel
def logsumexp_rows(x, out):
    """max + log Σ exp(x − max) per row; an infinite max is not subtracted (−inf stays −inf, inf stays inf)."""
    for i in prange(x.shape[0]):
        row = x[i]
        m = _max(row)
        if math.isinf(m):
            m = row.dtype.type(0)
        e = np.empty_like(row)
        for j in range(row.size):
            e[j] = fast_exp(row[j] - m)
        out[i] = m + math.log(_sum(e))


@_parallel
def softmax_backward_rows(y, g, out):
    """y · (g − Σ g·y), y = softmax's output."""
    for i in prange(y.shape[0]):
        yi, gi, o = y[i], g[i], out[i]
        dot = _dot(gi, yi)
        for j in range(yi.size):
            o[j] = yi[j] * (gi[j] - dot)


@_parallel
def log_softmax_backward_rows(y, g, out):
    """g − exp(y) · Σ g, y = log_softmax's output."""
    for i in prange(y.shape[0]):
        yi, gi, o = y[i], g[i], out[i]
        total = _sum(gi)
        for j in range(yi.size):
            o[j] = gi[j] - fast_exp(yi[j]) * total


@_parallel
def layer_norm_rows(x, weight, bias, eps, out, mean, rstd):
    """(x − mean) / sqrt(var + eps) · weight + bias per row, keeping each row's mean and 1/σ for backward.

    The variance is the mean squared deviation from the mean (two passes: no cancellation)."""
    n = x.shape[1]
    for i in prange(x.shape[0]):
        row, o = x[i], out[i]
        mu = _sum(row) * like(row[0], 1.0 / n)
        r = like(mu, 1.0 / math.sqrt(_squared_deviation(row, mu) / n + eps))
        mean[i], rstd[i] = mu, r
        for j in range(n):
            o[j] = (row[j] - mu) * r * weight[j] + bias[j]


@_parallel
def layer_norm_backward_rows(g, x, weight, mean, rstd, grad_x, grad_w, grad_b, need_x, need_params):
    """dx = (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)) / σ with ĝ = g · weight; grad_w[c] and grad_b[c] get Σ g · x̂
    and Σ g over chunk c of the rows (each thread its own chunk; the caller adds the chunks up)."""
    rows, n = x.shape
    chunks = grad_w.shape[0]
    for c in prange(chunks):
        gw, gb = grad_w[c], grad_b[c]
        x_hat = np.empty(n, x.dtype)
        g_hat = np.empty(n, x.dtype)
        for i in range(c * rows // chunks, (c + 1) * rows // chunks):
            gi, mu, r = g[i], mean[i], rstd[i]
            for j in range(n):
                x_hat[j] = (x[i, j] - mu) * r
            if need_params:
                for j in range(n):
                    gw[j] += gi[j] * x_hat[j]
                    gb[j] += gi[j]
            if need_x:
                for j in range(n):
                    g_hat[j] = gi[j] * weight[j]
                mean_g = _sum(g_hat) * like(r, 1.0 / n)
                mean_gx = _dot(g_hat, x_hat) * like(r, 1.0 / n)
                for j in range(n):
                    grad_x[i, j] = (g_hat[j] - mean_g - x_hat[j] * mean_gx) * r

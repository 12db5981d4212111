"""The numba backend (``device="numba"``): numpy's arrays, with numba-compiled loops where a loop beats numpy.

numba works on numpy ndarrays, so this backend is ``NumpyBackend`` with some primitives translated
into ``@njit(parallel=True)`` kernels (``numba_kernels.py``). Read it beside ``numpy_backend.py``:
the sections are the same, in the same order, and each says which primitives stay numpy's (where
one numpy call is already the whole work: views, copies, memory-bound arithmetic, BLAS) and which
are compiled loops (where numpy needs several passes, or a slow scalar libm call per element).

A parallel loop pays only on large arrays: waking the threads costs a few µs on an idle machine
(and stalls for milliseconds when another process holds the second core), a small numpy op about
1 µs. So the elementwise primitives use their kernel from ``PARALLEL_MIN_SIZE``
elements on and numpy's call below it; the fused kernels (softmax, layer norm, GELU, ...) replace
several numpy calls each, so they run at every size, as their serial twin below it. float16 and
bfloat16 are computed in float32 and rounded back, as the numpy backend does.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from . import numba_kernels
from .numpy_backend import _HALF, NumpyBackend, dt

PARALLEL_MIN_SIZE = numba_kernels.PARALLEL_MIN_SIZE  # elements

_K = numba_kernels.__dict__  # kernels looked up by name at each call: a forked child swaps in serial twins
_FLOATS = {np.dtype(np.float32), np.dtype(np.float64)}
_CHUNKS_PER_THREAD = 4  # layer-norm backward: row chunks, each summing its own share of Σ g·x̂ and Σ g


def _kernel(name, size):
    """The parallel kernel for a large array, its serial twin for a small one (see numba_kernels._parallel)."""
    return _K[name if size >= PARALLEL_MIN_SIZE else name + "_serial"]


def _compute(a):
    """a as a C-contiguous float32/float64 array (16-bit floats widened to float32), or None if not a float."""
    if a.dtype in _FLOATS:
        return np.ascontiguousarray(a)
    if a.dtype in _HALF:
        return np.ascontiguousarray(a, dtype=np.float32)
    return None


def _like(out, a):
    """The kernel's result in a's dtype and shape (rounded back if a is a 16-bit float)."""
    out = out.reshape(a.shape)
    return out.astype(a.dtype) if out.dtype != a.dtype else out


def _elementwise(kernel, numpy_fn):
    """A one-input primitive: the compiled kernel on large float arrays, numpy's call otherwise."""
    def run(a):
        if a.size < PARALLEL_MIN_SIZE or (x := _compute(a)) is None:
            return numpy_fn(a)
        out = np.empty(x.shape, x.dtype)
        _K[kernel](x.reshape(-1), out.reshape(-1))
        return _like(out, a)

    run.__name__ = numpy_fn.__name__
    return staticmethod(run)


def _last_axis(axis, ndim):
    """Whether an axis argument (None, an int or a tuple) names exactly the last axis."""
    if isinstance(axis, tuple):
        if len(axis) != 1:
            return False
        axis = axis[0]
    if axis is None:
        return ndim == 1
    return ndim > 0 and axis % ndim == ndim - 1


def _rows(a, axis):
    """a as a C-contiguous (rows, n) compute array when ``axis`` is its last axis and it has elements, else None."""
    if a.ndim == 0 or a.size == 0 or axis % a.ndim != a.ndim - 1:
        return None
    x = _compute(a)
    return None if x is None else x.reshape(-1, a.shape[-1])


def _flat(a, dtype):
    """a flattened, C-contiguous, in the kernel's dtype."""
    return np.ascontiguousarray(a, dtype=dtype).reshape(-1)


class NumbaBackend(NumpyBackend):
    """numpy's primitives, with compiled parallel loops for transcendental maths and the fused kernels."""

    name = "numba"
    supported_dtypes = frozenset(dt.ALL_DTYPES)

    # dtypes and transfer: numpy's (the arrays are numpy arrays)
    # creation: numpy's (allocation and filling are one call each)

    # elementwise, one input: exp, tanh and erf are compiled loops (exp32 and tanh32 are vectorised
    # float32 maths, numpy's float32 exp and tanh a scalar libm call per element here); neg, abs,
    # sign, floor, ... are memory-bound, one numpy pass each; log, sqrt and the rest stay numpy's
    # (not translated yet)
    exp = _elementwise("map_exp", NumpyBackend.exp)
    tanh = _elementwise("map_tanh", NumpyBackend.tanh)
    erf = _elementwise("map_erf", NumpyBackend.erf)

    # elementwise, two inputs: numpy's (one memory-bound pass each, with numpy's broadcasting)
    # more elementwise maths: numpy's

    # reductions: numpy's. Measured (4096×1024 float32, one thread): numpy's SIMD row sum and max take
    # 2.0 ms, a compiled row loop 3.3–4.3 ms, so a parallel loop would at best tie on two cores. The
    # fused kernels below do their row sums inside the pass that needs them (in float64, see _sum).

    # movement: numpy's (views, copies and gathers; sliding_windows must stay a view, as Tensor.unfold
    # and as_strided share memory through it). fold_windows (col2im) is numpy's strided add per tap.

    # linear algebra: numpy's (matmul is BLAS, already multi-threaded)

    # fused kernels (numba_kernels.py; each replaces several numpy calls, so it runs at every size,
    # as its serial twin below PARALLEL_MIN_SIZE)
    def ndtr(self, a):
        """Φ(a): float32 from numpy_kernels' polynomial, float64 as 0.5·erfc(−a/√2)."""
        if a.size < PARALLEL_MIN_SIZE or (x := _compute(a)) is None:
            return super().ndtr(a)
        out = np.empty(x.shape, x.dtype)
        _K["map_ndtr"](x.reshape(-1), out.reshape(-1))
        return _like(out, a)

    sigmoid = _elementwise("map_sigmoid", NumpyBackend.sigmoid)

    def softmax(self, a, axis):
        x = _rows(a, axis)
        if x is None:  # another axis (numpy's kernel), or an empty array
            return super().softmax(a, axis)
        out = np.empty_like(x)
        _kernel("softmax_rows", x.size)(x, out)
        return _like(out, a)

    def log_softmax(self, a, axis):
        x = _rows(a, axis)
        if x is None:
            return super().log_softmax(a, axis)
        out = np.empty_like(x)
        _kernel("log_softmax_rows", x.size)(x, out)
        return _like(out, a)

    def logsumexp(self, a, axis, keepdims):
        if a.size == 0 or not _last_axis(axis, a.ndim) or (x := _rows(a, -1)) is None:
            return super().logsumexp(a, axis, keepdims)
        out = np.empty(x.shape[0], x.dtype)
        _kernel("logsumexp_rows", x.size)(x, out)
        return _like(out, np.empty(a.shape[:-1] + ((1,) if keepdims else ()), a.dtype))

    def softmax_backward(self, y, g, axis):
        """y · (g − Σ g·y) along axis, y = softmax's output."""
        out = _row_backward("softmax_backward_rows", y, g, axis)
        return super().softmax_backward(y, g, axis) if out is None else out

    def log_softmax_backward(self, y, g, axis):
        """g − exp(y) · Σ g along axis, y = log_softmax's output."""
        out = _row_backward("log_softmax_backward_rows", y, g, axis)
        return super().log_softmax_backward(y, g, axis) if out is None else out

    def gelu(self, a, approximate):
        """x · Φ(x) (saving Φ(x) for backward), or the tanh form, x · sigmoid(2k(x + c x³)) (saving nothing)."""
        x = _flat(a, _compute_dtype(a))
        out = np.empty_like(x)
        if approximate == "tanh":
            if x.size:
                _kernel("map_gelu_tanh", x.size)(x, out)
            return _like(out, a), ()
        cdf = np.empty_like(x)
        if x.size:
            _kernel("gelu_erf", x.size)(x, out, cdf)
        return _like(out, a), (cdf,)

    def gelu_backward(self, g, a, saved, approximate):
        x = _flat(a, _compute_dtype(a))
        gx, out = _flat(g, x.dtype), np.empty_like(x)
        if x.size:
            if approximate == "tanh":
                _kernel("zip_gelu_tanh_backward", x.size)(gx, x, out)
            else:
                _kernel("gelu_erf_backward", x.size)(gx, x, _flat(saved[0], x.dtype), out)
        return _like(out, a)

    def silu(self, a):
        x = _flat(a, _compute_dtype(a))
        out = np.empty_like(x)
        if x.size:
            _kernel("map_silu", x.size)(x, out)
        return _like(out, a)

    def silu_backward(self, g, a):
        """g · s · (1 + a · (1 − s)), s = sigmoid(a)."""
        x = _flat(a, _compute_dtype(a))
        out = np.empty_like(x)
        if x.size:
            _kernel("zip_silu_backward", x.size)(_flat(g, x.dtype), x, out)
        return _like(out, a)

    def layer_norm(self, a, weight, bias, n, eps):
        """Normalise over the last n axes, then · weight + bias; saves each row's mean and 1/σ (not x̂)."""
        x, m = self._norm_rows(a, n)
        out = np.empty_like(x)
        mean, rstd = np.empty(x.shape[0], x.dtype), np.empty(x.shape[0], x.dtype)
        if x.size:
            w = np.ones(m, x.dtype) if weight is None else _flat(weight, x.dtype)
            b = np.zeros(m, x.dtype) if bias is None else _flat(bias, x.dtype)
            _kernel("layer_norm_rows", x.size)(x, w, b, float(eps), out, mean, rstd)
        return _like(out, a), (mean, rstd)

    def layer_norm_backward(self, g, a, weight, saved, n, needs):
        x, m = self._norm_rows(a, n)
        gx = _flat(g, x.dtype).reshape(x.shape)
        mean, rstd = saved
        need_x, need_params = bool(needs[0]), bool(needs[1] or needs[2])
        chunks = max(1, min(x.shape[0], _CHUNKS_PER_THREAD * numba.config.NUMBA_NUM_THREADS))
        grad_x = np.empty_like(x) if need_x else np.empty((0, 0), x.dtype)
        sums = (np.zeros((chunks, m if need_params else 0), x.dtype) for _ in range(2))
        grad_w, grad_b = sums
        if x.size:
            w = np.ones(m, x.dtype) if weight is None else _flat(weight, x.dtype)
            _kernel("layer_norm_backward_rows", x.size)(gx, x, w, mean, rstd, grad_x, grad_w, grad_b, need_x, need_params)
        param_shape = a.shape[a.ndim - n:]
        return (_like(grad_x, a) if need_x else None,
                grad_w.sum(0).reshape(param_shape).astype(weight.dtype) if needs[1] else None,
                grad_b.sum(0).reshape(param_shape).astype(a.dtype) if needs[2] else None)

    # --- helpers of the fused kernels ----------------------------------------------------------

    @staticmethod
    def _norm_rows(a, n):
        """a as (rows, m) in the compute dtype, m the size of the last n axes."""
        rows, m = math.prod(a.shape[:a.ndim - n]), math.prod(a.shape[a.ndim - n:])
        return _flat(a, _compute_dtype(a)).reshape(rows, m), m

    # --- first-call compile time, on its own ------------------------------------------------------

    def warm_up(self, dtypes=(np.float32,)):
        """Compile (or load from numba's cache) the common kernels for ``dtypes``, parallel and serial
        twin both; seconds per kernel name.

        The first call of a kernel in a process compiles it, or loads the machine code a previous
        process cached; timing this separately keeps that cost out of a benchmark's measurements.
        """
        times = {}
        for dtype in dtypes:
            for x in (np.linspace(-3, 3, 2 * PARALLEL_MIN_SIZE, dtype=dtype).reshape(-1, 64),
                      np.linspace(-3, 3, 256, dtype=dtype).reshape(-1, 64)):
                self._warm(x, times)
        return times

    def _warm(self, x, times):
        dtype = x.dtype
        w = np.ones(x.shape[1], x.dtype)
        calls = {
            "exp": lambda: self.exp(x), "tanh": lambda: self.tanh(x), "erf": lambda: self.erf(x),
            "ndtr": lambda: self.ndtr(x), "sigmoid": lambda: self.sigmoid(x),
            "softmax": lambda: self.softmax_backward(self.softmax(x, 1), x, 1),
            "log_softmax": lambda: self.log_softmax_backward(self.log_softmax(x, 1), x, 1),
            "logsumexp": lambda: self.logsumexp(x, (1,), False),
            "gelu": lambda: self.gelu_backward(x, x, self.gelu(x, "none")[1], "none"),
            "gelu_tanh": lambda: self.gelu_backward(x, x, self.gelu(x, "tanh")[1], "tanh"),
            "silu": lambda: self.silu_backward(x, self.silu(x)),
            "layer_norm": lambda: self.layer_norm_backward(x, x, w, self.layer_norm(x, w, w, 1, 1e-5)[1], 1,
                                                           (True, True, True)),
        }
        twin = "" if x.size >= PARALLEL_MIN_SIZE else " (serial)"
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[f"{name} {dtype.name}{twin}"] = time.perf_counter() - start


def _row_backward(kernel, y, g, axis):
    """A softmax-family backward as one pass per row (y and g laid out as rows along axis), or None
    where the layout needs the numpy backend's kernel."""
    x, gx = _rows(y, axis), _rows(g, axis) if g.shape == y.shape else None
    if x is None or gx is None:
        return None
    out = np.empty_like(x)
    _kernel(kernel, x.size)(x, gx.astype(x.dtype, copy=False), out)
    return _like(out, y)


def _compute_dtype(a):
    return np.float32 if a.dtype in _HALF or a.dtype not in _FLOATS else a.dtype

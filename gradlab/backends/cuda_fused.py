"""The CUDA backend's fused and heavy kernels, kept apart from the primitives in ``cuda_backend.py``.

``CudaBackend`` inherits this mixin, so a learner reads the primitives (one small kernel each) in one
file and the kernels that fuse many steps into one launch (softmax, layer norm, GELU, im2col, the tiled
matmul, the random generator) in this one. Every kernel is plain ``numba.cuda`` and runs unchanged under
numba's simulator (``NUMBA_ENABLE_CUDASIM=1``). Kernels are made per dtype by small factories, so that
float32 data is computed in float32 (a Python constant would turn it into float64); 16-bit floats are
computed in float32, as PyTorch does.

Random numbers are drawn on the device by xoroshiro128+ generators (``numba.cuda.random``), one per
thread, seeded from one draw of the host generator: a seed gives the same numbers every run, but not
the numbers the CPU backends draw for it (PyTorch's CPU and CUDA generators differ in the same way),
and the simulator, which runs fewer generator threads, draws other numbers than a GPU.
"""

from __future__ import annotations

import functools
import math
import warnings
from types import SimpleNamespace

import numpy as np
from numba import cuda
from numba.cuda.np.numpy_support import from_dtype
from numba.cuda.random import xoroshiro128p_dtype, xoroshiro128p_next

from .. import dtypes as dt
from .contract import Backend
from .cuda_kernels import device_array

_THREADS = 256  # threads per block of the elementwise kernels
_ROW_THREADS = (32, 128)  # threads one row gets: a power of two in this range, for the tree reductions
_TILE = 16  # the tiled matmul works on TILE x TILE blocks of its operands in shared memory
_COLUMN_LANES = (32, 8)  # column reductions: 32 columns per block, 8 threads summing each one's rows
_RNG_THREADS = 1 << 16  # most generators one random draw runs; each draws several numbers beyond this
_ROWS_PER_CHUNK, _MAX_CHUNKS = 64, 128  # layer norm's weight/bias gradients: rows summed per block

if cuda.config.ENABLE_CUDASIM:
    # each simulated GPU thread is a Python thread: the same kernels in small blocks keep the simulator
    # fast (and the generator count small, so its random numbers differ from a GPU's for one seed)
    _THREADS, _ROW_THREADS, _TILE, _COLUMN_LANES, _RNG_THREADS = 16, (4, 8), 4, (4, 2), 32
    _ROWS_PER_CHUNK = 2
    # xoroshiro and splitmix multiply uint64s modulo 2**64 on purpose; in the simulator each thread is
    # Python with numpy scalars, which warn on the wraparound that the GPU does silently
    warnings.filterwarnings("ignore", r"overflow encountered in scalar", RuntimeWarning,
                            r"gradlab\.backends\.cuda_fused|numba\.cuda\.random")


def _blocks(n, threads=_THREADS):
    return max(1, min((n + threads - 1) // threads, 1 << 20))  # grid-stride loops cover the rest


def _row_threads(n):
    """Threads for a row of n: the power of two at or above n, within _ROW_THREADS (one warp at least)."""
    return min(_ROW_THREADS[1], max(_ROW_THREADS[0], 1 << max(0, n - 1).bit_length()))


def _float_type(op, a):
    """The numpy float type a kernel computes a's dtype in; 16-bit floats are widened by the caller."""
    if a.dtype not in (np.float32, np.float64):
        raise TypeError(f"{op}: the CUDA kernel takes float32 or float64 arrays (16-bit floats are computed "
                        f"in float32), got an array of dtype {a.dtype}; convert it with .float() first")
    return a.dtype.type


# --- shared-memory tree reductions (one block cooperates on one row) -----------------------------

def _tree(combine):
    """A device function: every thread of the block brings a value, every thread gets the combination of all.

    The values go into shared memory; each round half the threads fold in the other half's values, so
    a block of 2^k threads needs k rounds.
    """
    @cuda.jit(device=True)
    def reduce(buf, value):
        tid = cuda.threadIdx.x
        buf[tid] = value
        cuda.syncthreads()
        step = cuda.blockDim.x // 2
        while step > 0:
            if tid < step:
                buf[tid] = combine(buf[tid], buf[tid + step])
            cuda.syncthreads()
            step //= 2
        total = buf[0]
        cuda.syncthreads()  # everyone has read buf[0] before the next reduction writes buf again
        return total

    return reduce


@cuda.jit(device=True)
def _add(x, y):
    return x + y


@cuda.jit(device=True)
def _larger(x, y):
    return x if x > y or y != y else y  # y != y: a NaN wins, so it reaches the result as in numpy


_tree_sum = _tree(_add)
_tree_max = _tree(_larger)


# --- softmax, log_softmax, logsumexp and their gradients: one block per row -----------------------
# Arrays arrive as (outer, n, inner) views: the row is a[o, :, i], so any axis is "last" logically.

@functools.cache
def _softmax_kernels(ftype):
    acc = _numba_type(ftype)
    zero, neg_inf = ftype(0), ftype(-np.inf)

    def row_max_and_sum(buf, a, o, i):
        """The row's maximum m (0 if it is infinite, as the composed kernel shifts) and Σ exp(a - m)."""
        tid, step, n = cuda.threadIdx.x, cuda.blockDim.x, a.shape[1]
        m = neg_inf
        for j in range(tid, n, step):
            m = _larger(m, a[o, j, i])
        m = _tree_max(buf, m)
        s = zero
        for j in range(tid, n, step):
            s += math.exp(a[o, j, i] - m)
        return m, _tree_sum(buf, s)

    row_max_and_sum = cuda.jit(device=True)(row_max_and_sum)

    @cuda.jit
    def softmax(a, out):
        buf = cuda.shared.array(_ROW_THREADS[1], acc)
        o, i = cuda.blockIdx.x // a.shape[2], cuda.blockIdx.x % a.shape[2]
        m, s = row_max_and_sum(buf, a, o, i)
        for j in range(cuda.threadIdx.x, a.shape[1], cuda.blockDim.x):
            out[o, j, i] = math.exp(a[o, j, i] - m) / s

    @cuda.jit
    def log_softmax(a, out):
        buf = cuda.shared.array(_ROW_THREADS[1], acc)
        o, i = cuda.blockIdx.x // a.shape[2], cuda.blockIdx.x % a.shape[2]
        m, s = row_max_and_sum(buf, a, o, i)
        shift = m + math.log(s)  # s >= 1: the maximum itself contributes exp(0)
        for j in range(cuda.threadIdx.x, a.shape[1], cuda.blockDim.x):
            out[o, j, i] = a[o, j, i] - shift

    @cuda.jit
    def logsumexp(a, out):  # out: (outer, inner)
        buf = cuda.shared.array(_ROW_THREADS[1], acc)
        o, i = cuda.blockIdx.x // a.shape[2], cuda.blockIdx.x % a.shape[2]
        tid, step, n = cuda.threadIdx.x, cuda.blockDim.x, a.shape[1]
        m = neg_inf
        for j in range(tid, n, step):
            m = _larger(m, a[o, j, i])
        m = _tree_max(buf, m)
        if m == -neg_inf or m == neg_inf:  # all -inf (or an inf): shift by 0, as the composed kernel does
            m = zero
        s = zero
        for j in range(tid, n, step):
            s += math.exp(a[o, j, i] - m)
        s = _tree_sum(buf, s)
        if tid == 0:
            out[o, i] = m + math.log(s) if s > zero else neg_inf

    @cuda.jit
    def softmax_backward(y, g, out):  # y * (g - Σ g·y)
        buf = cuda.shared.array(_ROW_THREADS[1], acc)
        o, i = cuda.blockIdx.x // y.shape[2], cuda.blockIdx.x % y.shape[2]
        tid, step, n = cuda.threadIdx.x, cuda.blockDim.x, y.shape[1]
        s = zero
        for j in range(tid, n, step):
            s += g[o, j, i] * y[o, j, i]
        s = _tree_sum(buf, s)
        for j in range(tid, n, step):
            out[o, j, i] = y[o, j, i] * (g[o, j, i] - s)

    @cuda.jit
    def log_softmax_backward(y, g, out):  # g - exp(y) · Σ g
        buf = cuda.shared.array(_ROW_THREADS[1], acc)
        o, i = cuda.blockIdx.x // y.shape[2], cuda.blockIdx.x % y.shape[2]
        tid, step, n = cuda.threadIdx.x, cuda.blockDim.x, y.shape[1]
        s = zero
        for j in range(tid, n, step):
            s += g[o, j, i]
        s = _tree_sum(buf, s)
        for j in range(tid, n, step):
            out[o, j, i] = g[o, j, i] - math.exp(y[o, j, i]) * s

    return SimpleNamespace(softmax=softmax, log_softmax=log_softmax, logsumexp=logsumexp, softmax_backward=softmax_backward,
                           log_softmax_backward=log_softmax_backward)


# --- layer norm: one block per row forward and for grad_a; a column reduction for weight and bias ----

@functools.cache
def _layer_norm_kernels(ftype):
    acc = _numba_type(ftype)
    zero, one = ftype(0), ftype(1)

    @cuda.jit
    def forward(a, weight, bias, has_weight, has_bias, eps, inv_n, out, mean, rstd):
        buf = cuda.shared.array(_ROW_THREADS[1], acc)
        row, tid, step, n = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x, a.shape[1]
        s = zero
        for j in range(tid, n, step):
            s += a[row, j]
        mu = _tree_sum(buf, s) * inv_n
        s = zero
        for j in range(tid, n, step):  # the second pass keeps the variance exact when |mean| >> std
            d = a[row, j] - mu
            s += d * d
        r = one / math.sqrt(_tree_sum(buf, s) * inv_n + eps)
        for j in range(tid, n, step):
            v = (a[row, j] - mu) * r
            if has_weight:
                v *= weight[j]
            if has_bias:
                v += bias[j]
            out[row, j] = v
        if tid == 0:
            mean[row], rstd[row] = mu, r

    @cuda.jit
    def backward_input(g, a, weight, has_weight, mean, rstd, inv_n, out):
        """grad_a = rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂)), with ĝ = g · weight and x̂ the normalised row."""
        buf = cuda.shared.array(_ROW_THREADS[1], acc)
        row, tid, step, n = cuda.blockIdx.x, cuda.threadIdx.x, cuda.blockDim.x, a.shape[1]
        mu, r = mean[row], rstd[row]
        s1, s2 = zero, zero
        for j in range(tid, n, step):
            gw = g[row, j] * weight[j] if has_weight else g[row, j]
            s1 += gw
            s2 += gw * (a[row, j] - mu) * r
        s1 = _tree_sum(buf, s1) * inv_n
        s2 = _tree_sum(buf, s2) * inv_n
        for j in range(tid, n, step):
            gw = g[row, j] * weight[j] if has_weight else g[row, j]
            out[row, j] = r * (gw - s1 - (a[row, j] - mu) * r * s2)

    lanes_x, lanes_y = _COLUMN_LANES

    @cuda.jit
    def backward_affine(g, a, mean, rstd, per_chunk, partial_weight, partial_bias):
        """Column j's sums over one chunk of rows (blockIdx.y): partial_weight[chunk, j] = Σ g · x̂ and
        partial_bias[chunk, j] = Σ g; lanes_y threads share a column, then fold their sums together."""
        sums_w = cuda.shared.array(_COLUMN_LANES, acc)  # [column in block, lane]
        sums_b = cuda.shared.array(_COLUMN_LANES, acc)
        tx, ty, chunk = cuda.threadIdx.x, cuda.threadIdx.y, cuda.blockIdx.y
        j = cuda.blockIdx.x * lanes_x + tx
        rows, n = a.shape
        sw, sb = zero, zero
        if j < n:
            for row in range(chunk * per_chunk + ty, min(rows, (chunk + 1) * per_chunk), lanes_y):
                gv = g[row, j]
                sb += gv
                sw += gv * (a[row, j] - mean[row]) * rstd[row]
        sums_w[tx, ty] = sw
        sums_b[tx, ty] = sb
        cuda.syncthreads()
        step = lanes_y // 2
        while step > 0:
            if ty < step:
                sums_w[tx, ty] += sums_w[tx, ty + step]
                sums_b[tx, ty] += sums_b[tx, ty + step]
            cuda.syncthreads()
            step //= 2
        if ty == 0 and j < n:
            partial_weight[chunk, j] = sums_w[tx, 0]
            partial_bias[chunk, j] = sums_b[tx, 0]

    return forward, backward_input, backward_affine


@cuda.jit
def _sum_chunks(partial, out):
    """out[j] = Σ_chunk partial[chunk, j], in a fixed order: the same inputs always give the same sums."""
    for j in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        total = partial[0, j]
        for chunk in range(1, partial.shape[0]):
            total += partial[chunk, j]
        out[j] = total


# --- elementwise activations: one formula per device function, one kernel shape for all ----------

@functools.cache
def _formulas(ftype):
    """The activations and their gradients as device functions, with constants in the compute dtype."""
    half, one, three = ftype(0.5), ftype(1), ftype(3)
    rsqrt2 = ftype(1 / math.sqrt(2))
    inv_sqrt_2pi = ftype(1 / math.sqrt(2 * math.pi))
    k_tanh, c_tanh = ftype(math.sqrt(2 / math.pi)), ftype(0.044715)

    @cuda.jit(device=True)
    def sigmoid(x):
        e = math.exp(-abs(x))  # never overflows; x >= 0 and x < 0 take the two exact forms
        return one / (one + e) if x >= 0 else e / (one + e)

    @cuda.jit(device=True)
    def ndtr(x):
        return half * math.erfc(-x * rsqrt2)  # erfc keeps the lower tail's digits (no 1 - 1 cancellation)

    @cuda.jit(device=True)
    def gelu(x):
        return x * ndtr(x)

    @cuda.jit(device=True)
    def gelu_grad(g, x):
        return g * (ndtr(x) + x * inv_sqrt_2pi * math.exp(-half * x * x))

    @cuda.jit(device=True)
    def gelu_tanh(x):
        return half * x * (one + math.tanh(k_tanh * (x + c_tanh * x * x * x)))

    @cuda.jit(device=True)
    def gelu_tanh_grad(g, x):
        t = math.tanh(k_tanh * (x + c_tanh * x * x * x))
        return g * (half * (one + t) + half * x * (one - t * t) * k_tanh * (one + three * c_tanh * x * x))

    @cuda.jit(device=True)
    def silu(x):
        return x * sigmoid(x)

    @cuda.jit(device=True)
    def silu_grad(g, x):
        s = sigmoid(x)
        return g * s * (one + x * (one - s))

    return dict(sigmoid=sigmoid, ndtr=ndtr, gelu=gelu, gelu_grad=gelu_grad, gelu_tanh=gelu_tanh,
                gelu_tanh_grad=gelu_tanh_grad, silu=silu, silu_grad=silu_grad)


@functools.cache
def _map_kernel(name, ftype):
    """out[i] = f(x[i]) (or f(g[i], x[i]) for a gradient) over flat contiguous arrays, grid-stride."""
    f = _formulas(ftype)[name]
    if name.endswith("_grad"):
        @cuda.jit
        def map2(g, x, out):
            for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
                out[i] = f(g[i], x[i])

        return map2

    @cuda.jit
    def map1(x, out):
        for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
            out[i] = f(x[i])

    return map1


# --- windows: im2col as a gather, col2im as a scatter, both through the strides of numpy's view ----

@cuda.jit(device=True)
def _offset(f, shape, strides):
    """The memory offset (in elements) of row-major element f of an array of this shape and these strides."""
    offset = 0
    for d in range(len(shape) - 1, -1, -1):
        offset += (f % shape[d]) * strides[d]
        f //= shape[d]
    return offset


@cuda.jit
def _gather_windows(src, out, shape, strides):
    for f in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[f] = src[_offset(f, shape, strides)]


@cuda.jit
def _scatter_windows(windows, out, shape, strides, overlapping):
    for f in range(cuda.grid(1), windows.size, cuda.gridsize(1)):
        if overlapping:  # several windows share this position: their adds must not race
            cuda.atomic.add(out, _offset(f, shape, strides), windows[f])
        else:
            out[_offset(f, shape, strides)] = windows[f]


def _window_view(shape, window_shape, axes, steps, dilation):
    """The shape and element strides of numpy's sliding-window view of a C-contiguous array of ``shape``."""
    strides = [math.prod(shape[i + 1:]) for i in range(len(shape))]
    view_shape, view_strides = list(shape), list(strides)
    for ax, k, s, d in zip(axes, window_shape, steps, dilation):
        view_shape[ax] = (shape[ax] - d * (k - 1) - 1) // s + 1
        view_strides[ax] = strides[ax] * s
    view_shape += window_shape
    view_strides += [strides[ax] * d for ax, d in zip(axes, dilation)]
    return tuple(view_shape), tuple(view_strides)


# --- matmul into a strided output: shared-memory tiles --------------------------------------------

@functools.cache
def _matmul_kernel(dtype):
    acc = _numba_type(dtype.type)
    zero = dtype.type(0)

    @cuda.jit
    def matmul(a, b, out):
        """out[z0, z1] = a[z0, z1] @ b[z0, z1] (size-1 batch dims broadcast); each block makes a TILE² tile
        of out, walking k one TILE at a time through shared-memory copies of a's rows and b's columns."""
        tile_a = cuda.shared.array((_TILE, _TILE), acc)
        tile_b = cuda.shared.array((_TILE, _TILE), acc)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col, row = cuda.blockIdx.x * _TILE + tx, cuda.blockIdx.y * _TILE + ty
        m, k, n = out.shape[2], a.shape[3], out.shape[3]
        for z in range(cuda.blockIdx.z, out.shape[0] * out.shape[1], cuda.gridDim.z):
            z0, z1 = z // out.shape[1], z % out.shape[1]
            a0, a1 = (z0 if a.shape[0] > 1 else 0), (z1 if a.shape[1] > 1 else 0)
            b0, b1 = (z0 if b.shape[0] > 1 else 0), (z1 if b.shape[1] > 1 else 0)
            total = zero
            for t in range(0, k, _TILE):
                tile_a[ty, tx] = a[a0, a1, row, t + tx] if row < m and t + tx < k else zero
                tile_b[ty, tx] = b[b0, b1, t + ty, col] if t + ty < k and col < n else zero
                cuda.syncthreads()
                for q in range(_TILE):
                    total += tile_a[ty, q] * tile_b[q, tx]
                cuda.syncthreads()
            if row < m and col < n:
                out[z0, z1, row, col] = total

    return matmul


# --- random numbers: one xoroshiro128+ generator per thread, seeded from the host generator -------

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


@cuda.jit(device=True)
def _splitmix(z):
    """SplitMix64's output function: a bijection of uint64 that scatters nearby inputs far apart."""
    z = (z ^ (z >> np.uint32(30))) * _MIX1
    z = (z ^ (z >> np.uint32(27))) * _MIX2
    return z ^ (z >> np.uint32(31))


@cuda.jit(device=True)
def _seed(states, t, key):
    """Thread t's generator starts from numbers 2t+1 and 2t+2 of the SplitMix64 stream that begins at key
    (the seeding xoroshiro's authors recommend): every thread gets a different, well-mixed state."""
    z = key + np.uint64(2 * t + 1) * _GOLDEN
    states[t]["s0"] = _splitmix(z)
    states[t]["s1"] = _splitmix(z + _GOLDEN)


@cuda.jit(device=True)
def _unit_float32(x):
    return np.float32(x >> np.uint32(40)) * np.float32(2.0 ** -24)  # 24 bits: exactly representable, < 1


@cuda.jit(device=True)
def _unit_float64(x):
    return np.float64(x >> np.uint32(11)) * np.float64(2.0 ** -53)


@functools.cache
def _random_kernels(ftype):
    unit = _unit_float32 if ftype is np.float32 else _unit_float64
    spacing, two, two_pi = ftype(2.0 ** -24 if ftype is np.float32 else 2.0 ** -53), ftype(-2), ftype(2 * math.pi)

    @cuda.jit
    def uniform(states, threads, key, low, span, out):
        t = cuda.grid(1)
        if t < threads:
            _seed(states, t, key)
            for i in range(t, out.size, threads):
                out[i] = low + span * unit(xoroshiro128p_next(states, t))

    @cuda.jit
    def normal(states, threads, key, mean, std, out):
        """Box–Muller: sqrt(-2 log u1) cos(2π u2) is N(0, 1) for independent uniforms, u1 in (0, 1]."""
        t = cuda.grid(1)
        if t < threads:
            _seed(states, t, key)
            for i in range(t, out.size, threads):
                u1 = unit(xoroshiro128p_next(states, t)) + spacing
                u2 = unit(xoroshiro128p_next(states, t))
                out[i] = mean + std * math.sqrt(two * math.log(u1)) * math.cos(two_pi * u2)

    return uniform, normal


@cuda.jit
def _random_integers(states, threads, key, low, span, out):
    """low + (x mod span): the bias of the modulo is below span / 2^64, far under anything measurable."""
    t = cuda.grid(1)
    if t < threads:
        _seed(states, t, key)
        for i in range(t, out.size, threads):
            out[i] = low + np.int64(xoroshiro128p_next(states, t) % span)


_states = [None]  # the generators' state array, reused: every draw re-seeds the part it uses


def _generators(n, rng):
    """(states, threads, key) for a draw of n numbers: the threads depend on n alone and the key is one draw
    from the host generator, so the same seed gives the same device numbers."""
    threads = max(1, min(n, _RNG_THREADS))
    if _states[0] is None or _states[0].size < threads:
        _states[0] = cuda.device_array(threads, dtype=xoroshiro128p_dtype)
    key = np.uint64(rng.integers(0, 2 ** 64, dtype=np.uint64))
    return _states[0], threads, key


def _numba_type(ftype):
    """numba's type for a numpy scalar type (what cuda.shared.array wants)."""
    return from_dtype(np.dtype(ftype))


# --- the mixin ------------------------------------------------------------------------------------

class CudaFusedKernels:
    """Fused kernels for device arrays; each overrides a composed fallback of ``contract.Backend``.

    The methods use the backend's primitives (``copy``, ``astype``, ``zeros``, ``argsort``...) for the
    small glue around each launch and launch one kernel for the work itself.
    """

    __slots__ = ()

    def _contiguous(self, a):
        return a if self.is_contiguous(a) else self.copy(a)

    def _widened(self, a):
        """a in the dtype the kernels compute in: 16-bit floats as float32 (the caller rounds back)."""
        return self.astype(a, dt.float32) if self.dtype_of(a) in dt.HALF_DTYPES else self._contiguous(a)

    def _narrowed(self, out, like):
        half = self.dtype_of(like)
        return self.astype(out, half) if half in dt.HALF_DTYPES else out

    # rows: a contiguous array seen as (outer, n, inner) so that a reduction runs along the middle axis
    @staticmethod
    def _rows(a, axis):
        axis %= max(a.ndim, 1)
        shape = a.shape or (1,)
        return a.reshape((math.prod(shape[:axis]), shape[axis] if a.ndim else 1, math.prod(shape[axis + 1:])))

    def _kernels(self, op, a):
        """The softmax-family kernels for a's compute dtype (float32 for 16-bit floats)."""
        return _softmax_kernels(np.float32 if self.dtype_of(a) in dt.HALF_DTYPES else _float_type(op, a))

    def _row_launch(self, kernel, op, axis, *arrays):
        """out = kernel(*arrays) with one block per row along axis; arrays share a shape and dtype."""
        like = arrays[0]
        arrays = [self._widened(x) for x in arrays]
        _float_type(op, arrays[0])
        out = device_array(arrays[0].shape, arrays[0].dtype)
        if out.size:
            rows = [self._rows(x, axis) for x in arrays + [out]]
            kernel[rows[0].shape[0] * rows[0].shape[2], _row_threads(rows[0].shape[1])](*rows)
        return self._narrowed(out, like)

    def softmax(self, a, axis):
        """exp(a - max) / Σ exp(a - max) along axis: one block per row, max and sum by tree reductions."""
        return self._row_launch(self._kernels("softmax", a).softmax, "softmax", axis, a)

    def log_softmax(self, a, axis):
        """(a - max) - log Σ exp(a - max) along axis, one block per row."""
        return self._row_launch(self._kernels("log_softmax", a).log_softmax, "log_softmax", axis, a)

    def softmax_backward(self, y, g, axis):
        """y · (g - Σ g·y) along axis, from the softmax output y."""
        return self._row_launch(self._kernels("softmax_backward", y).softmax_backward, "softmax_backward", axis, y, g)

    def log_softmax_backward(self, y, g, axis):
        """g - exp(y) · Σ g along axis, from the log_softmax output y."""
        return self._row_launch(self._kernels("log_softmax_backward", y).log_softmax_backward, "log_softmax_backward", axis, y, g)

    def logsumexp(self, a, axis, keepdims):
        """log Σ exp(a) over some axes: the axes are brought together (a copy only if they are not
        neighbours already), then one block reduces each row."""
        like, a = a, self._widened(a)
        ftype = _float_type("logsumexp", a)
        ndim = a.ndim
        axes = tuple(range(ndim)) if axis is None else tuple(sorted({ax % max(ndim, 1) for ax in
                                                                     (axis if isinstance(axis, tuple) else (axis,))}))
        kept_shape = tuple(1 if i in axes else n for i, n in enumerate(a.shape))
        out_shape = kept_shape if keepdims else tuple(n for i, n in enumerate(a.shape) if i not in axes)
        if not axes or ndim == 0:
            rows = a.reshape((1, 1, max(a.size, 1)) if ndim == 0 else (math.prod(a.shape), 1, 1))
        elif axes == tuple(range(axes[0], axes[-1] + 1)):  # neighbours: the contiguous array is already rows
            rows = a.reshape((math.prod(a.shape[:axes[0]]), math.prod(a.shape[axes[0]:axes[-1] + 1]),
                              math.prod(a.shape[axes[-1] + 1:])))
        else:
            rest = tuple(i for i in range(ndim) if i not in axes)
            moved = self.copy(self.permute(a, rest + axes))
            rows = moved.reshape((math.prod(a.shape[i] for i in rest), math.prod(a.shape[i] for i in axes), 1))
        out = device_array((rows.shape[0], rows.shape[2]), a.dtype)
        if out.size:
            _softmax_kernels(ftype).logsumexp[out.size, _row_threads(rows.shape[1])](rows, out)
        return self._narrowed(out.reshape(out_shape), like)

    def sigmoid(self, a):
        """1 / (1 + exp(-a)) elementwise, in the form that never overflows."""
        return self._map("sigmoid", a)

    def ndtr(self, a):
        """Φ(a) = erfc(-a / √2) / 2, the standard normal CDF."""
        return self._map("ndtr", a)

    def gelu(self, a, approximate):
        """x · Φ(x) ('none') or its tanh approximation ('tanh'); saves nothing (backward recomputes from a)."""
        return self._map("gelu" if approximate == "none" else "gelu_tanh", a), ()

    def gelu_backward(self, g, a, saved, approximate):
        return self._map("gelu_grad" if approximate == "none" else "gelu_tanh_grad", a, g)

    def silu(self, a):
        """x · sigmoid(x)."""
        return self._map("silu", a)

    def silu_backward(self, g, a):
        """g · s · (1 + a · (1 - s)), s = sigmoid(a)."""
        return self._map("silu_grad", a, g)

    def _map(self, name, a, g=None):
        """One elementwise kernel over a (and the gradient g for the *_grad formulas)."""
        like, a = a, self._widened(a)
        kernel = _map_kernel(name, _float_type(name.replace("_grad", "_backward"), a))
        out = device_array(a.shape, a.dtype)
        if out.size:
            flat = [x.reshape(a.size) for x in ([a] if g is None else [self._widened(g), a]) + [out]]
            kernel[_blocks(a.size), _THREADS](*flat)
        return self._narrowed(out, like)

    def layer_norm(self, a, weight, bias, n, eps):
        """(a - mean) / sqrt(var + eps) · weight + bias over the last n axes, one block per row; saves
        each row's mean and 1/std (float32 for 16-bit inputs) for the backward."""
        like, a = a, self._widened(a)
        ftype = _float_type("layer_norm", a)
        rows, cols = math.prod(a.shape[:a.ndim - n]), math.prod(a.shape[a.ndim - n:])
        mean, rstd = device_array(rows, a.dtype), device_array(rows, a.dtype)
        out = device_array(a.shape, a.dtype)
        w = mean if weight is None else self._widened(weight).reshape(cols)  # mean stands in, never read
        b = mean if bias is None else self._widened(bias).reshape(cols)
        if out.size:
            forward = _layer_norm_kernels(ftype)[0]
            forward[rows, _row_threads(cols)](
                a.reshape((rows, cols)), w, b, weight is not None, bias is not None, ftype(eps),
                ftype(1 / max(cols, 1)), out.reshape((rows, cols)), mean, rstd)
        return self._narrowed(out, like), (mean, rstd)

    def layer_norm_backward(self, g, a, weight, saved, n, needs):
        """(grad_a, grad_weight, grad_bias) of layer_norm; an entry is None where needs says so."""
        like, a, g = a, self._widened(a), self._widened(g)
        ftype = _float_type("layer_norm_backward", a)
        mean, rstd = saved
        rows, cols = math.prod(a.shape[:a.ndim - n]), math.prod(a.shape[a.ndim - n:])
        a2, g2 = a.reshape((rows, cols)), g.reshape((rows, cols))
        _, backward_input, backward_affine = _layer_norm_kernels(ftype)
        grad_a = grad_weight = grad_bias = None
        if needs[0]:
            grad_a = device_array(a.shape, a.dtype)
            w = mean if weight is None else self._widened(weight).reshape(cols)
            if grad_a.size:
                backward_input[rows, _row_threads(cols)](g2, a2, w, weight is not None, mean, rstd,
                                                         ftype(1 / max(cols, 1)), grad_a.reshape((rows, cols)))
            grad_a = self._narrowed(grad_a, like)
        if needs[1] or needs[2]:
            # rows are cut into chunks so that many blocks share the work; each chunk's column sums are
            # added up by a second small kernel (no atomics: the result does not depend on the timing)
            chunks = max(1, min(_MAX_CHUNKS, -(-rows // _ROWS_PER_CHUNK)))
            partial_w, partial_b = (device_array((chunks, cols), a.dtype) for _ in range(2))
            if cols:
                backward_affine[(_blocks(cols, _COLUMN_LANES[0]), chunks), _COLUMN_LANES](
                    g2, a2, mean, rstd, -(-rows // chunks), partial_w, partial_b)

            def column_sums(partial):
                total = device_array(cols, a.dtype)
                if cols:
                    _sum_chunks[_blocks(cols), _THREADS](partial, total)
                return self._narrowed(total.reshape(a.shape[a.ndim - n:]), like)

            grad_weight = column_sums(partial_w) if needs[1] else None
            grad_bias = column_sums(partial_b) if needs[2] else None
        return grad_a, grad_weight, grad_bias

    # windows
    def sliding_windows(self, a, window_shape, axes, steps, dilation):
        """im2col: every window copied out into a new contiguous array, windows[..., i, j, ki, kj] =
        a[..., i·step + ki·dilation, ...]; the gather reads through the strides numpy's view would have."""
        a = self._contiguous(a)
        shape, strides = _window_view(a.shape, list(window_shape), axes, steps, dilation)
        out = device_array(shape, a.dtype)
        if out.size:
            _gather_windows[_blocks(out.size), _THREADS](a.reshape(a.size), out.reshape(out.size), shape, strides)
        return out

    def fold_windows(self, windows, shape, axes, steps, dilation):
        """col2im, the adjoint of sliding_windows: each window element added back where it was read —
        atomically where windows overlap, a plain write where each position belongs to one window."""
        like, windows = windows, self._widened(windows)
        window_shape = list(windows.shape[len(shape):])
        view_shape, strides = _window_view(tuple(shape), window_shape, axes, steps, dilation)
        overlapping = not all(s > d * (k - 1) for k, s, d in zip(window_shape, steps, dilation))
        out = self.zeros(tuple(shape), self.dtype_of(windows))
        if windows.size:
            _scatter_windows[_blocks(windows.size), _THREADS](windows.reshape(windows.size), out.reshape(out.size),
                                                              tuple(windows.shape), strides, overlapping)
        return self._narrowed(out, like)

    # linear algebra
    def matmul_into(self, a, b, out):
        """out[...] = a @ b written through out's own strides (a head's slot of a packed buffer) by a tiled
        shared-memory kernel; batch dims broadcast. Ranks above 4 use the composed form."""
        if not 2 <= max(a.ndim, b.ndim, out.ndim) <= 4 or min(a.ndim, b.ndim) < 2:
            return Backend.matmul_into(self, a, b, out)
        expected = _matmul_shape(tuple(a.shape), tuple(b.shape))
        if expected is None or tuple(out.shape) != expected:
            raise ValueError(f"matmul_into: a {tuple(a.shape)} @ b {tuple(b.shape)} gives "
                             f"{'no product' if expected is None else expected}, but out has shape {tuple(out.shape)}")
        half = self.dtype_of(out) in dt.HALF_DTYPES
        target = device_array(out.shape, np.float32) if half else out
        a, b = self._widened(a), self._widened(b)
        a4, b4, out4 = (x.reshape((1,) * (4 - x.ndim) + tuple(x.shape)) for x in (a, b, target))
        if out4.size:
            m, n, batch = out4.shape[2], out4.shape[3], out4.shape[0] * out4.shape[1]
            grid = ((n + _TILE - 1) // _TILE, (m + _TILE - 1) // _TILE, min(batch, 65535))
            _matmul_kernel(np.dtype(target.dtype))[grid, (_TILE, _TILE)](a4, b4, out4)
        if half:
            self.setitem(out, Ellipsis, self.astype(target, self.dtype_of(out)))

    # random numbers
    def random_uniform(self, rng, shape, low, high, dtype):
        """Uniform floats in [low, high), drawn on the device (see random_normal)."""
        ftype = np.float64 if dtype is dt.float64 else np.float32
        out = device_array(shape, ftype)
        if out.size:
            states, threads, key = _generators(out.size, rng)
            uniform, _ = _random_kernels(ftype)
            uniform[_blocks(threads), _THREADS](states, threads, key, ftype(low), ftype(high - low), out.reshape(out.size))
        return out if dtype in (dt.float32, dt.float64) else self.astype(out, dtype)

    def random_normal(self, rng, shape, mean, std, dtype):
        """Normal floats drawn on the device by xoroshiro128+ generators that one number from the host
        generator seeds: the same seed gives the same numbers, but not the CPU's numbers (as in PyTorch)."""
        ftype = np.float64 if dtype is dt.float64 else np.float32
        out = device_array(shape, ftype)
        if out.size:
            states, threads, key = _generators(out.size, rng)
            _, normal = _random_kernels(ftype)
            normal[_blocks(threads), _THREADS](states, threads, key, ftype(mean), ftype(std), out.reshape(out.size))
        return out if dtype in (dt.float32, dt.float64) else self.astype(out, dtype)

    def random_integers(self, rng, low, high, shape, dtype):
        """Integers in [low, high), drawn on the device as int64 (then converted to dtype)."""
        if high <= low:
            raise ValueError(f"random_integers: high ({high}) must be above low ({low})")
        out = device_array(shape, np.int64)
        if out.size:
            states, threads, key = _generators(out.size, rng)
            _random_integers[_blocks(threads), _THREADS](states, threads, key, np.int64(low), np.uint64(high - low),
                                                         out.reshape(out.size))
        return out if dtype is dt.int64 else self.astype(out, dtype)

    def random_permutation(self, rng, n, dtype):
        """A random order of 0..n-1: the positions that sort n random 63-bit keys (argsort on the device)."""
        keys = self.random_integers(rng, 0, 2 ** 63 - 1, (n,), dt.int64)
        order = self.argsort(keys, 0)
        return order if self.dtype_of(order) is dtype else self.astype(order, dtype)


def _matmul_shape(a, b):
    """The shape of a @ b for arrays of rank >= 2, or None when the inner dims or batch dims disagree."""
    if a[-1] != b[-2]:
        return None
    batch_a, batch_b = (1,) * (len(b) - len(a)) + tuple(a[:-2]), (1,) * (len(a) - len(b)) + tuple(b[:-2])
    batch = []
    for x, y in zip(batch_a, batch_b):
        if x != y and 1 not in (x, y):
            return None
        batch.append(max(x, y))
    return tuple(batch) + (a[-2], b[-1])

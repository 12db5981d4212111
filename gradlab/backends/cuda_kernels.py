"""The CUDA backend's kernels: a handful of generic numba.cuda kernels built by factories.

Every kernel reads its inputs as a flat 1-D window of device memory plus a shape and strides
counted in elements (stride 0 on a broadcast axis), so one compiled kernel serves every layout:
contiguous, permuted, sliced or broadcast. Elementwise kernels are made from a scalar
``@cuda.jit(device=True)`` function (minitorch's ``map``/``zip``); reductions give each output one
block that sums through shared memory; scans give each row one thread. The same code runs on a GPU
and under numba's simulator (``NUMBA_ENABLE_CUDASIM=1``), where device memory is a numpy array.
"""

from __future__ import annotations

import math

import numpy as np
from numba import config, cuda, from_dtype

SIMULATOR = bool(config.ENABLE_CUDASIM)
THREADS = 8 if SIMULATOR else 256  # threads per block (the simulator runs one Python thread each)
TILE = 4 if SIMULATOR else 16  # matmul tile edge: TILE x TILE threads share two TILE x TILE tiles

class Transfers:
    """How many arrays crossed between host and device, either way: the one number that says whether a
    training step stayed on the GPU."""

    count = 0


transfers = Transfers()


class _HostReads:
    """``bool(a)``, ``int(a)``, ``float(a)`` of a one-element device array read it back (a counted
    transfer), as ``bool(cuda_tensor)`` does in PyTorch; ops use them for data-dependent checks."""

    __slots__ = ()

    def __bool__(self):
        return bool(download(self))

    def __int__(self):
        return int(download(self))

    def __float__(self):
        return float(download(self))


if SIMULATOR:
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray as ArrayType

    class _Window:
        """Memory described by __array_interface__: numpy's way to view bytes with any shape and strides."""

        def __init__(self, owner, address, shape, strides, dtype):
            self.owner = owner  # keeps the memory alive as long as the view
            self.__array_interface__ = {"data": (address, False), "shape": shape, "strides": strides,
                                        "typestr": dtype.str, "version": 3}

    class DeviceArray(_HostReads, ArrayType):
        """The simulator's device array (a numpy array inside) with a plain tuple for its shape, as a real
        DeviceNDArray has on the host (the simulator's own refuses negative indices there)."""

        @property
        def shape(self):
            return self._ary.shape

    def device_array(shape, dtype):
        """Uninitialised device memory."""
        return DeviceArray(np.empty(shape, dtype))

    def address(a):
        """Where a device array's first element lives."""
        return a._ary.__array_interface__["data"][0]

    def strided_view(a, shape, strides, offset=0):
        """A view of a's memory with its own shape and byte strides, ``offset`` elements past a's first one."""
        start = address(a) + offset * a.dtype.itemsize
        return DeviceArray(np.asarray(_Window(a._ary, start, tuple(shape), tuple(strides), a.dtype)))
else:
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as ArrayType

    class DeviceArray(_HostReads, ArrayType):
        """numba's device array, plus reading one element back with bool/int/float."""

    def device_array(shape, dtype):
        """Uninitialised device memory."""
        dtype, shape = np.dtype(dtype), (shape,) if isinstance(shape, int) else tuple(shape)
        return DeviceArray(shape, c_strides(shape, dtype.itemsize), dtype)

    def address(a):
        """Where a device array's first element lives."""
        return a.device_ctypes_pointer.value or 0

    def strided_view(a, shape, strides, offset=0):
        """A view of a's memory with its own shape and byte strides, ``offset`` elements past a's first one."""
        data = a.gpu_data.view(offset * a.dtype.itemsize) if math.prod(shape) else None
        return DeviceArray(tuple(shape), tuple(strides), a.dtype, gpu_data=data)


def c_strides(shape, item):
    """Row-major strides of ``shape`` in units of ``item``."""
    strides, step = [], item
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def upload(host):
    """A contiguous device copy of a host array (one counted transfer)."""
    host = np.asarray(host, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    transfers.count += 1
    out = device_array(host.shape, host.dtype)
    if host.size:
        strided_view(out, (host.size,), (host.itemsize,)).copy_to_device(host.reshape(-1))
    return out


def download(a):
    """A host copy of a device array (one counted transfer); a strided one is made contiguous on the device first."""
    transfers.count += 1
    if not a.size:
        return np.empty(a.shape, a.dtype)
    if a.ndim and any(s != c for n, s, c in zip(a.shape, a.strides, c_strides(a.shape, a.dtype.itemsize)) if n != 1):
        dense = device_array(a.shape, a.dtype)
        walk = tuple(a.shape)
        _, _, strides = flat(a)
        copy_kernel[blocks(a.size), THREADS](flat(dense)[0], flat(a)[0], walk, c_strides(walk, 1), 0, strides, 0)
        a = dense
    return strided_view(a, (a.size,), (a.dtype.itemsize,)).copy_to_host().reshape(a.shape)


def flat(a):
    """(memory, shape, strides): a as a 1-D window from its first element plus how to walk it.

    0-d arrays walk as shape (1,), so every kernel loops over at least one axis.
    """
    item = a.dtype.itemsize
    strides = tuple(s // item for s in a.strides)
    extent = 1 + sum((n - 1) * s for n, s in zip(a.shape, strides)) if a.size else 0
    window = strided_view(a, (extent,), (item,))
    if a.ndim == 0:
        return window, (1,), (0,)
    return window, tuple(a.shape), strides


def blocks(n, threads=THREADS):
    return (n + threads - 1) // threads


@cuda.jit(device=True)
def position(i, shape, strides, offset):
    """The memory position of the i-th element (row-major) of an array with these shape and strides."""
    p = offset
    for d in range(len(shape) - 1, -1, -1):
        p += (i % shape[d]) * strides[d]
        i //= shape[d]
    return p


# --- elementwise: map (one input), zip (two), where (three) ----------------------------------------

def map_kernel(fn):
    """out[i] = fn(a[i]) for every element: out is contiguous, a is read through its own strides."""
    @cuda.jit
    def kernel(out, a, shape, sa, oa):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = fn(a[position(i, shape, sa, oa)])
    return kernel


def zip_kernels(fn):
    """out[i] = fn(a[i], b[i]) with broadcasting; one kernel for two arrays, one each for a scalar side."""
    @cuda.jit
    def arrays(out, a, b, shape, sa, oa, sb, ob):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = fn(a[position(i, shape, sa, oa)], b[position(i, shape, sb, ob)])

    @cuda.jit
    def scalar_right(out, a, b, shape, sa, oa):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = fn(a[position(i, shape, sa, oa)], b)

    @cuda.jit
    def scalar_left(out, a, b, shape, sb, ob):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = fn(a, b[position(i, shape, sb, ob)])
    return arrays, scalar_right, scalar_left


@cuda.jit
def where_kernel(out, c, a, b, shape, sc, oc, sa, oa, sb, ob):
    i = cuda.grid(1)
    if i < out.shape[0]:
        if c[position(i, shape, sc, oc)]:
            out[i] = a[position(i, shape, sa, oa)]
        else:
            out[i] = b[position(i, shape, sb, ob)]


@cuda.jit
def copy_kernel(dst, src, shape, sd, od, ss, os_):
    """dst[i] = src[i] element by element, both through their own strides: copies, casts, writes into views."""
    i = cuda.grid(1)
    n = 1
    for d in range(len(shape)):
        n *= shape[d]
    if i < n:
        dst[position(i, shape, sd, od)] = src[position(i, shape, ss, os_)]


@cuda.jit
def fill_kernel(out, value):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = value


@cuda.jit
def arange_kernel(out, start, step):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = start + i * step


# --- the scalar functions, guarded where Python's math raises (the simulator runs Python's math) ---

INF, NAN = math.inf, math.nan


@cuda.jit(device=True)
def _is_finite(x):
    return x - x == 0


@cuda.jit(device=True)
def d_floor(x):
    """floor keeping x's type (math.floor gives an int), inf and NaN unchanged."""
    if not _is_finite(x):
        return x
    return x // 1


@cuda.jit(device=True)
def d_ceil(x):
    return -d_floor(-x)


@cuda.jit(device=True)
def d_round(x):
    """Round half to even, as numpy's rint and PyTorch do."""
    f = d_floor(x)
    rest = x - f
    if rest > 0.5 or (rest == 0.5 and f % 2 != 0):
        return f + 1
    return f


@cuda.jit(device=True)
def d_exp(x):
    if x > 709.782712893384:
        return INF
    return math.exp(x)


@cuda.jit(device=True)
def d_expm1(x):
    if x > 709.782712893384:
        return INF
    return math.expm1(x)


@cuda.jit(device=True)
def d_log(x):
    if x > 0:
        return math.log(x)
    return -INF if x == 0 else NAN


@cuda.jit(device=True)
def d_log2(x):
    if x > 0:
        return math.log2(x)
    return -INF if x == 0 else NAN


@cuda.jit(device=True)
def d_log10(x):
    if x > 0:
        return math.log10(x)
    return -INF if x == 0 else NAN


@cuda.jit(device=True)
def d_log1p(x):
    if x > -1:
        return math.log1p(x)
    return -INF if x == -1 else NAN


@cuda.jit(device=True)
def d_sqrt(x):
    if x >= 0:
        return math.sqrt(x)
    return NAN


@cuda.jit(device=True)
def d_sin(x):
    return math.sin(x) if _is_finite(x) else NAN


@cuda.jit(device=True)
def d_cos(x):
    return math.cos(x) if _is_finite(x) else NAN


@cuda.jit(device=True)
def d_tan(x):
    return math.tan(x) if _is_finite(x) else NAN


@cuda.jit(device=True)
def d_sinh(x):
    if abs(x) > 710.4758600739439:
        return INF if x > 0 else -INF
    return math.sinh(x)


@cuda.jit(device=True)
def d_cosh(x):
    if abs(x) > 710.4758600739439:
        return INF
    return math.cosh(x)


@cuda.jit(device=True)
def d_arcsin(x):
    return math.asin(x) if -1 <= x <= 1 else NAN


@cuda.jit(device=True)
def d_arccos(x):
    return math.acos(x) if -1 <= x <= 1 else NAN


@cuda.jit(device=True)
def d_arccosh(x):
    return math.acosh(x) if x >= 1 else NAN


@cuda.jit(device=True)
def d_arctanh(x):
    if -1 < x < 1:
        return math.atanh(x)
    if x == 1:
        return INF
    return -INF if x == -1 else NAN


@cuda.jit(device=True)
def d_sign(x):
    if x > 0:
        return 1
    if x < 0:
        return -1
    return x  # 0 stays 0 (and -0.0), NaN stays NaN


@cuda.jit(device=True)
def d_fmod(x, y):
    if y == 0 or not _is_finite(x) or x != x or y != y:
        return NAN
    return math.fmod(x, y)


@cuda.jit(device=True)
def d_logaddexp(x, y):
    """log(e^x + e^y) = max + log1p(e^-|x - y|); equal infinities return themselves."""
    if x == y:
        return x + 0.6931471805599453
    m = max(x, y)
    if x != x or y != y:
        return NAN
    return m + math.log1p(d_exp(-abs(x - y)))


@cuda.jit(device=True)
def d_logaddexp2(x, y):
    if x == y:
        return x + 1
    m = max(x, y)
    if x != x or y != y:
        return NAN
    return m + math.log1p(d_exp(-abs(x - y) * 0.6931471805599453)) * 1.4426950408889634


@cuda.jit(device=True)
def d_maximum(x, y):
    """NaN wins, as in numpy's and PyTorch's maximum."""
    return x if (x > y or x != x) else y


@cuda.jit(device=True)
def d_minimum(x, y):
    return x if (x < y or x != x) else y


def _device(expression):
    """A scalar device function from a lambda (numba compiles lambdas like any function)."""
    return cuda.jit(device=True)(expression)


UNARY = {
    "neg": _device(lambda x: -x), "abs": _device(lambda x: abs(x)), "exp": d_exp, "log": d_log, "log1p": d_log1p,
    "expm1": d_expm1, "sqrt": d_sqrt, "sin": d_sin, "cos": d_cos, "tan": d_tan, "tanh": _device(lambda x: math.tanh(x)),
    "sign": d_sign, "floor": d_floor, "ceil": d_ceil, "round": d_round, "erf": _device(lambda x: math.erf(x)),
    "isnan": _device(lambda x: x != x), "isinf": _device(lambda x: x == INF or x == -INF),
    "logical_not": _device(lambda x: not x), "arcsin": d_arcsin, "arccos": d_arccos,
    "arctan": _device(lambda x: math.atan(x)), "sinh": d_sinh, "cosh": d_cosh,
    "arcsinh": _device(lambda x: math.asinh(x)), "arccosh": d_arccosh, "arctanh": d_arctanh, "log2": d_log2,
    "log10": d_log10, "erfc": _device(lambda x: math.erfc(x)), "bitwise_not": _device(lambda x: ~x),
    "copy": _device(lambda x: x),
}

BINARY = {
    "add": _device(lambda x, y: x + y), "sub": _device(lambda x, y: x - y), "mul": _device(lambda x, y: x * y),
    "div": _device(lambda x, y: x / y), "pow": _device(lambda x, y: x ** y),
    "floor_divide": _device(lambda x, y: x // y), "remainder": _device(lambda x, y: x % y),
    "maximum": d_maximum, "minimum": d_minimum,
    "eq": _device(lambda x, y: x == y), "ne": _device(lambda x, y: x != y), "lt": _device(lambda x, y: x < y),
    "le": _device(lambda x, y: x <= y), "gt": _device(lambda x, y: x > y), "ge": _device(lambda x, y: x >= y),
    "logical_and": _device(lambda x, y: bool(x) and bool(y)), "logical_or": _device(lambda x, y: bool(x) or bool(y)),
    "logical_xor": _device(lambda x, y: bool(x) != bool(y)),
    "arctan2": _device(lambda x, y: math.atan2(x, y)), "hypot": _device(lambda x, y: math.hypot(x, y)),
    "copysign": _device(lambda x, y: math.copysign(x, y)), "fmod": d_fmod,
    "logaddexp": d_logaddexp, "logaddexp2": d_logaddexp2,
    "bitwise_and": _device(lambda x, y: x & y), "bitwise_or": _device(lambda x, y: x | y),
    "bitwise_xor": _device(lambda x, y: x ^ y),
}

MAP = {name: map_kernel(fn) for name, fn in UNARY.items()}
ZIP = {name: zip_kernels(fn) for name, fn in BINARY.items()}


# --- reductions: one block per output element, a tree in shared memory -----------------------------

_REDUCERS = {
    "sum": _device(lambda x, y: x + y), "prod": _device(lambda x, y: x * y),
    "max": d_maximum, "min": d_minimum,
    "all": _device(lambda x, y: x and y), "any": _device(lambda x, y: x or y),
}
_IDENTITY = {"sum": 0, "prod": 1}  # max/min/all/any start from an element of their own row instead
_reduce_cache: dict = {}


def reduce_kernel(op, dtype):
    """out[o] = combine over the R trailing elements of output o (the reduced axes moved last).

    Thread t of block o combines elements t, t + THREADS, ...; then the block halves its partial
    results in shared memory until one is left. Threads start from element t % R, which a max, min,
    all or any may see twice without harm; sum and prod start from their identity.
    """
    key = (op, dtype)
    if key not in _reduce_cache:
        combine, acc = _REDUCERS[op], from_dtype(dtype)
        has_identity = op in _IDENTITY
        identity = dtype.type(_IDENTITY.get(op, 0))

        @cuda.jit
        def kernel(out, a, shape, sa, oa, r):
            partial = cuda.shared.array(THREADS, acc)
            o, t = cuda.blockIdx.x, cuda.threadIdx.x
            if has_identity:
                total = identity
            else:
                total = a[position(o * r + t % r, shape, sa, oa)]
            for j in range(t, r, THREADS):
                total = combine(total, a[position(o * r + j, shape, sa, oa)])
            partial[t] = total
            cuda.syncthreads()
            half = THREADS // 2
            while half > 0:
                if t < half:
                    partial[t] = combine(partial[t], partial[t + half])
                cuda.syncthreads()
                half //= 2
            if t == 0:
                out[o] = partial[0]
        _reduce_cache[key] = kernel
    return _reduce_cache[key]


@cuda.jit(device=True)
def _better(largest, v, i, best, bi):
    """Whether (v, i) beats (best, bi) for argmax/argmin: the first NaN wins, then ties go to the lower index."""
    if v != v or best != best:
        return v != v and (best == best or i < bi)
    if v == best:
        return i < bi
    return v > best if largest else v < best


_arg_cache: dict = {}
_INDEX = from_dtype(np.dtype(np.int64))


def arg_reduce_kernel(dtype):
    """The index of the largest (or smallest) of each output's R trailing elements, as reduce_kernel does."""
    if dtype not in _arg_cache:
        value_type = from_dtype(dtype)

        @cuda.jit
        def kernel(out, a, shape, sa, oa, r, largest):
            values = cuda.shared.array(THREADS, value_type)
            where = cuda.shared.array(THREADS, _INDEX)
            o, t = cuda.blockIdx.x, cuda.threadIdx.x
            bi = t % r
            best = a[position(o * r + bi, shape, sa, oa)]
            for j in range(t, r, THREADS):
                v = a[position(o * r + j, shape, sa, oa)]
                if _better(largest, v, j, best, bi):
                    best, bi = v, j
            values[t], where[t] = best, bi
            cuda.syncthreads()
            half = THREADS // 2
            while half > 0:
                if t < half and _better(largest, values[t + half], where[t + half], values[t], where[t]):
                    values[t], where[t] = values[t + half], where[t + half]
                cuda.syncthreads()
                half //= 2
            if t == 0:
                out[o] = where[0]
        _arg_cache[dtype] = kernel
    return _arg_cache[dtype]


_SCANS = {"cumsum": _REDUCERS["sum"], "cumprod": _REDUCERS["prod"], "cummax": d_maximum, "cummin": d_minimum}
_scan_cache: dict = {}


def scan_kernel(op):
    """A running sum/product/max/min along the last axis of ``shape``: one thread walks each row."""
    if op not in _scan_cache:
        combine = _SCANS[op]

        @cuda.jit
        def kernel(out, a, shape, sa, oa, rows, n):
            row = cuda.grid(1)
            if row < rows:
                total = a[position(row * n, shape, sa, oa)]
                out[row * n] = total
                for j in range(1, n):
                    total = combine(total, a[position(row * n + j, shape, sa, oa)])
                    out[row * n + j] = total
        _scan_cache[op] = kernel
    return _scan_cache[op]


# --- indexing with integer arrays: gather, scatter, scatter-add -------------------------------------

@cuda.jit(device=True)
def indexed_position(i, shape, strides, offset, bmul, index, index_strides, index_sizes, error):
    """Where output element i of ``a[index]`` lives in a: the sliced axes walk their strides, the axes
    of the broadcast index arrays pick row b of ``index`` (one row per indexed axis of a).

    An index out of range reads and writes nothing: it gives -1 and is reported in ``error``
    (1, the index, which row) for the host to raise, as numpy raises before it touches memory.
    """
    p = offset
    b = 0
    for d in range(len(shape) - 1, -1, -1):
        k = i % shape[d]
        i //= shape[d]
        p += k * strides[d]
        b += k * bmul[d]
    for j in range(len(index_strides)):
        k = index[j, b]
        if k < -index_sizes[j] or k >= index_sizes[j]:
            error[0], error[1], error[2] = 1, k, j
            return -1
        if k < 0:
            k += index_sizes[j]
        p += k * index_strides[j]
    return p


@cuda.jit
def gather_kernel(out, a, shape, strides, offset, bmul, index, index_strides, index_sizes, error):
    i = cuda.grid(1)
    if i < out.shape[0]:
        p = indexed_position(i, shape, strides, offset, bmul, index, index_strides, index_sizes, error)
        if p >= 0:
            out[i] = a[p]


@cuda.jit
def check_kernel(shape, strides, offset, bmul, index, index_strides, index_sizes, n, error):
    """Only the bounds of every index: a scatter runs this first, so a bad index writes nothing at all."""
    i = cuda.grid(1)
    if i < n:
        indexed_position(i, shape, strides, offset, bmul, index, index_strides, index_sizes, error)


@cuda.jit
def scatter_kernel(a, values, sv, ov, shape, strides, offset, bmul, index, index_strides, index_sizes, n, error):
    i = cuda.grid(1)
    if i < n:
        p = indexed_position(i, shape, strides, offset, bmul, index, index_strides, index_sizes, error)
        if p >= 0:
            a[p] = values[position(i, shape, sv, ov)]


@cuda.jit
def scatter_add_kernel(a, values, sv, ov, shape, strides, offset, bmul, index, index_strides, index_sizes, n, error):
    """a[index] += values with atomics, so that repeated indices all add up."""
    i = cuda.grid(1)
    if i < n:
        p = indexed_position(i, shape, strides, offset, bmul, index, index_strides, index_sizes, error)
        if p >= 0:
            cuda.atomic.add(a, p, values[position(i, shape, sv, ov)])


# --- matmul: tiles of a and b staged in shared memory ------------------------------------------------

_matmul_cache: dict = {}


def matmul_kernel(dtype):
    """out[z] = a[z] @ b[z]: each block computes one TILE x TILE tile of one batch's output, walking k
    in steps of TILE; each step loads a tile of a and one of b into shared memory, then every thread
    adds TILE products from there (each element is read from global memory once per tile, not per product)."""
    if dtype not in _matmul_cache:
        element = from_dtype(dtype)
        zero = dtype.type(0)

        @cuda.jit
        def kernel(out, a, b, batch_shape, sa, oa, sb, ob, m, k, n, am, ak, bk, bn, z0):
            tile_a = cuda.shared.array((TILE, TILE), element)
            tile_b = cuda.shared.array((TILE, TILE), element)
            z = z0 + cuda.blockIdx.z  # the batch entry (launches take at most 65535 along z)
            pa = position(z, batch_shape, sa, oa)
            pb = position(z, batch_shape, sb, ob)
            ty, tx = cuda.threadIdx.y, cuda.threadIdx.x
            row = cuda.blockIdx.y * TILE + ty
            col = cuda.blockIdx.x * TILE + tx
            total = zero
            for start in range(0, k, TILE):
                if row < m and start + tx < k:
                    tile_a[ty, tx] = a[pa + row * am + (start + tx) * ak]
                else:
                    tile_a[ty, tx] = zero
                if col < n and start + ty < k:
                    tile_b[ty, tx] = b[pb + (start + ty) * bk + col * bn]
                else:
                    tile_b[ty, tx] = zero
                cuda.syncthreads()
                for j in range(TILE):
                    total += tile_a[ty, j] * tile_b[j, tx]
                cuda.syncthreads()
            if row < m and col < n:
                out[(z * m + row) * n + col] = total
        _matmul_cache[dtype] = kernel
    return _matmul_cache[dtype]

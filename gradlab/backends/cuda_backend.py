"""The CUDA backend: every primitive as a numba.cuda kernel on device arrays that stay on the GPU.

A tensor's array is a numba device array; ops chain kernels on it without coming back to the host.
``asarray`` (host to device) and ``to_numpy`` (device to host) are the only copies across, and
``CudaBackend.transfers.count`` counts them, so a test can check that a training step reads nothing but
its loss. Views (reshape, permute, broadcast_to, slices, diagonal) are new shapes and strides on
the same device memory. The kernels live in ``cuda_kernels.py``; the fused ones (softmax, layer
norm, im2col, random numbers) in ``cuda_fused.py``. Without a GPU, numba's simulator
(``NUMBA_ENABLE_CUDASIM=1``) runs the same kernels on the CPU, slowly.
"""

from __future__ import annotations

import math
import operator

import numpy as np

import numba_cuda  # noqa: F401  the maintained CUDA target; missing, device.py names the extra to install
from numba import cuda

from .. import dtypes as dt
from . import cuda_kernels as kernels
from .contract import Backend
from .cuda_fused import CudaFusedKernels

if not kernels.SIMULATOR and not cuda.is_available():
    raise RuntimeError("the 'cuda' device needs an NVIDIA GPU: no CUDA GPU found (or its driver is missing); "
                       "set NUMBA_ENABLE_CUDASIM=1 to run on numba's simulator (slow), or use device='cpu'")

try:  # cuBLAS through CuPy where both a GPU and CuPy are there; the tiled kernel otherwise
    if kernels.SIMULATOR:
        raise ImportError
    import cupy
except ImportError:
    cupy = None

class _Natives(dict):
    """gradlab dtype -> numpy dtype (device arrays carry numpy dtypes); a dtype not here is a clear error."""

    def __missing__(self, dtype):
        names = ", ".join(d.name for d in self)
        raise TypeError(f"the 'cuda' device has no {getattr(dtype, 'name', dtype)} arrays (it has {names}); "
                        f"convert the tensor first, e.g. with .float()")


_NATIVE = _Natives({d: np.dtype(d.name) for d in (dt.float32, dt.float64, dt.int64, dt.int32, dt.int16, dt.int8,
                                                  dt.uint8, dt.bool_)})
_FROM_NATIVE = {v: key for key, v in _NATIVE.items()}
dt.register_native_dtypes(_NATIVE)
_ATOMIC_ADD = {np.dtype(t) for t in ("float32", "float64", "int32", "int64")}  # what cuda.atomic.add takes

HOST_ROUND_TRIPS = (
    ("frexp", "rare (ldexp/frexp only); a bit-level kernel per float width is not worth it"),
    ("gcd lcm", "integer-only and rare; Euclid's loop is numpy's job"),
    ("nextafter", "rare, and the CUDA math library's nextafter is not in numba's simulator"),
    ("left_shift right_shift", "numpy's rule for shifts by the width or more (0 or -1) is not CUDA's"),
    ("argsort", "a stable sort with NaN last is a whole sorting network; sorting is off the training path"),
    ("multiply_at maximum_at minimum_at", "scatter_reduce only; CUDA has no atomic multiply"),
    ("add_at on bool/int8/int16/uint8", "cuda.atomic.add has no 8- or 16-bit integers"),
    ("getitem/setitem with a bool mask", "the mask's nonzero positions decide the output size: one read per mask"),
    ("positions_in_base of a non-contiguous base", "in-place ops on views of views only"),
    ("einsum with a repeated subscript in one operand", "a diagonal inside einsum: rare"),
    ("LinalgKernels (lu_factor, solve, qr, svd, eigh, ...)", "factorizations run on the host, as on every backend"),
)


# --- helpers: device arrays, output dtypes, launching ------------------------------------------------

def _is_scalar(x):
    return isinstance(x, (int, float, bool, np.generic))


def _device(x):
    """A device array for x: device arrays pass, host arrays and lists are copied up (and counted)."""
    if isinstance(x, np.ndarray) or isinstance(x, (list, tuple)):
        return _to_device(np.asarray(x))
    return x


_dtype_cache: dict = {}


def _result(function, *operands):
    """The dtype numpy gives ``function(*operands)``: arrays stand for their dtype, Python numbers are weak."""
    key = (function,) + tuple(type(x) if _is_scalar(x) else x.dtype for x in operands)
    found = _dtype_cache.get(key)
    if found is None:
        samples = [x if _is_scalar(x) else np.ones(1, x.dtype) for x in operands]
        with np.errstate(all="ignore"):
            found = _dtype_cache[key] = np.asarray(function(*samples)).dtype
    return found


def _scalar_in(value, like):
    """A Python number as the numpy scalar it computes as next to an array of ``like``'s dtype."""
    return np.result_type(like.dtype, value).type(value)


def _flat_out(out):
    """A fresh contiguous array as the 1-D window that kernels write."""
    return kernels.strided_view(out, (out.size,), (out.dtype.itemsize,))


def _walk_as(a, shape):
    """(window, strides) that read a broadcast to ``shape`` (which has at least one axis)."""
    window, _, strides = kernels.flat(a)
    if a.ndim == 0:
        return window, (0,) * len(shape)
    own = a.shape
    while len(own) > len(shape) and own[0] == 1:  # numpy lets a value carry extra leading 1s
        own, strides = own[1:], strides[1:]
    lead = len(shape) - len(own)
    return window, (0,) * lead + tuple(0 if n == 1 and m != 1 else s for n, m, s in zip(own, shape[lead:], strides))


def _launch(kernel, n):
    """A kernel configured with enough blocks of THREADS threads for n elements, one thread each."""
    return kernel[kernels.blocks(n), kernels.THREADS]


def _empty(shape, dtype):
    return kernels.device_array(tuple(shape), dtype)


def _fill(out, value):
    if out.size:
        _launch(kernels.fill_kernel, out.size)(_flat_out(out), out.dtype.type(value))
    return out


def _strided_copy(a, shape, strides, offset, dtype=None):
    """A new contiguous array of ``shape`` read from a's memory at offset + Σ index·stride (elements)."""
    out = _empty(shape, a.dtype if dtype is None else dtype)
    if out.size:
        walk_shape = tuple(shape) or (1,)
        _launch(kernels.copy_kernel, out.size)(
            _flat_out(out), kernels.flat(a)[0], walk_shape, kernels.c_strides(walk_shape, 1), 0,
            tuple(strides) or (0,), offset)
    return out


def _map(name, reference):
    """A one-input primitive: the MAP kernel of ``name``, its output dtype numpy's for ``reference``."""
    kernel = kernels.MAP[name]

    def primitive(a):
        a = _device(a)
        out = _empty(a.shape, _result(reference, a))
        if out.size:
            window, shape, strides = kernels.flat(a)
            _launch(kernel, out.size)(_flat_out(out), window, shape, strides, 0)
        return out

    primitive.__name__ = name
    return staticmethod(primitive)


def _zip(name, reference):
    """A two-input primitive with broadcasting; either side may be a Python number."""
    arrays, scalar_right, scalar_left = kernels.ZIP[name]

    def primitive(a, b):
        a, b = _device(a), _device(b)
        if _is_scalar(b):
            out = _empty(a.shape, _result(reference, a, b))
            if out.size:
                window, shape, strides = kernels.flat(a)
                _launch(scalar_right, out.size)(_flat_out(out), window, _scalar_in(b, a), shape, strides, 0)
            return out
        if _is_scalar(a):
            out = _empty(b.shape, _result(reference, a, b))
            if out.size:
                window, shape, strides = kernels.flat(b)
                _launch(scalar_left, out.size)(_flat_out(out), _scalar_in(a, b), window, shape, strides, 0)
            return out
        shape = np.broadcast_shapes(a.shape, b.shape)
        out = _empty(shape, _result(reference, a, b))
        if out.size:
            walk = shape or (1,)
            wa, sa = _walk_as(a, walk)
            wb, sb = _walk_as(b, walk)
            _launch(arrays, out.size)(_flat_out(out), wa, wb, walk, sa, 0, sb, 0)
        return out

    primitive.__name__ = name
    return staticmethod(primitive)


def _on_host(name, function):
    """A primitive computed by numpy on the host (see HOST_ROUND_TRIPS): down, numpy, up, all counted."""
    def primitive(*args, **kwargs):
        host = [_to_host(x) if _is_device(x) else x for x in args]
        with np.errstate(all="ignore"):
            result = function(*host, **kwargs)
        if isinstance(result, tuple):
            return tuple(_to_device(np.asarray(r)) for r in result)
        return _to_device(np.asarray(result))

    primitive.__name__ = name
    return staticmethod(primitive)


def _is_device(x):
    return hasattr(x, "copy_to_host")  # numba's device arrays (and the simulator's) have it, numpy's do not


def _to_host(a):
    return kernels.download(a)


def _to_device(host):
    if host.dtype not in _FROM_NATIVE:  # float16, uint16, ... from numpy: the nearest dtype this backend has
        host = host.astype(np.float32 if host.dtype.kind == "f" else np.int64)
    return kernels.upload(host)


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    return tuple(sorted({operator.index(ax) % max(ndim, 1) for ax in axes})) if ndim else ()


def _reduction(op, reference):
    """A reduction over an axis tuple: the reduced axes are moved last (a view), then one block per output."""
    def primitive(a, axis=None, keepdims=False):
        a = _device(a)
        axes = _axes(axis, a.ndim)
        kept = tuple(i for i in range(a.ndim) if i not in axes)
        out_dtype = np.dtype(bool) if op in ("all", "any") else _result(reference, a)
        if a.dtype != out_dtype:
            a = CudaBackend.astype(a, _FROM_NATIVE[out_dtype])
        moved = CudaBackend.permute(a, kept + axes)
        n_out = math.prod(a.shape[i] for i in kept)
        r = math.prod(a.shape[i] for i in axes)
        out = _empty((n_out,), out_dtype)
        if n_out and r:
            window, shape, strides = kernels.flat(moved)
            kernels.reduce_kernel(op, out_dtype)[n_out, kernels.THREADS](out, window, shape, strides, 0, r)
        elif n_out:
            if op in ("max", "min"):
                raise ValueError(f"zero-size array to reduction operation {op}imum which has no identity")
            _fill(out, {"sum": 0, "prod": 1, "all": True, "any": False}[op])
        shape = tuple(1 if i in axes else n for i, n in enumerate(a.shape)) if keepdims else \
            tuple(a.shape[i] for i in kept)
        return CudaBackend.reshape(out, shape)

    primitive.__name__ = op
    return staticmethod(primitive)


def _arg_reduction(largest):
    def primitive(a, axis=None, keepdims=False):
        a = _device(a)
        if axis is None:
            moved, r, kept_shape = a, a.size, ()
        else:
            axis = operator.index(axis) % max(a.ndim, 1)
            kept = tuple(i for i in range(a.ndim) if i != axis)
            moved, r = CudaBackend.permute(a, kept + (axis,)), a.shape[axis] if a.ndim else 1
            kept_shape = tuple(a.shape[i] for i in kept)
        if r == 0:
            raise ValueError(f"attempt to get {'argmax' if largest else 'argmin'} of an empty sequence")
        n_out = math.prod(kept_shape)
        out = _empty((n_out,), np.int64)
        if n_out:
            window, shape, strides = kernels.flat(moved)
            kernels.arg_reduce_kernel(a.dtype)[n_out, kernels.THREADS](out, window, shape, strides, 0, r, largest)
        if keepdims:
            shape = (1,) * a.ndim if axis is None else tuple(1 if i == axis else n for i, n in enumerate(a.shape))
        else:
            shape = kept_shape
        return CudaBackend.reshape(out, shape)

    return staticmethod(primitive)


def _scan(op, reference):
    """A running reduction along one axis: the axis moved last, one thread per row, moved back."""
    def primitive(a, axis):
        a = _device(a)
        out_dtype = _result(reference, a)
        if a.dtype != out_dtype:
            a = CudaBackend.astype(a, _FROM_NATIVE[out_dtype])
        if a.ndim == 0:
            return CudaBackend.copy(a)
        axis = operator.index(axis) % a.ndim
        order = tuple(i for i in range(a.ndim) if i != axis) + (axis,)
        moved = CudaBackend.permute(a, order)
        out = _empty(moved.shape, out_dtype)
        n = a.shape[axis]
        if out.size:
            rows = out.size // n
            window, shape, strides = kernels.flat(moved)
            _launch(kernels.scan_kernel(op), rows)(_flat_out(out), window, shape, strides, 0, rows, n)
        if axis == a.ndim - 1:
            return out
        return CudaBackend.copy(CudaBackend.permute(out, tuple(np.argsort(order))))

    primitive.__name__ = op
    return staticmethod(primitive)


# --- indexing: an index as shape, strides and offset in a's memory, plus integer-array rows -----------

class _Plan:
    """Where ``a[index]`` reads: output shape, element strides and offset into a, and for integer-array
    indices the broadcast index rows (``index``, one row per indexed axis) and where each output axis
    steps through them (``bmul``)."""

    __slots__ = ("out_shape", "shape", "strides", "offset", "bmul", "index", "index_strides", "index_sizes",
                 "index_axes")


def _plan(a, index):
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple(_device(i) if isinstance(i, (list, np.ndarray)) else i for i in index)
    advanced = any(_is_device(i) for i in index)
    if advanced and any(_is_device(i) and i.dtype == np.bool_ for i in index):
        index = _masks_to_positions(a, index)  # host round trip: the mask's size decides the output's
    if any(i is Ellipsis for i in index):
        at = next(n for n, i in enumerate(index) if i is Ellipsis)
        used = sum(1 for i in index if not _new_axis(i) and i is not Ellipsis)
        index = index[:at] + (slice(None),) * (a.ndim - used) + index[at + 1:]
    used = sum(1 for i in index if not _new_axis(i))
    if used > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but {used} were indexed")
    index = index + (slice(None),) * (a.ndim - used)
    item = a.dtype.itemsize
    plan = _Plan()
    shape, strides, offset, d = [], [], 0, 0
    arrays, places = [], []  # the integer arrays with (stride, size) of their axes; their positions in index
    for n, i in enumerate(index):
        if _new_axis(i):  # None, or a Python bool: a new axis of length 1 (0 for False), as in numpy
            shape.append(0 if i is False or i is np.False_ else 1)
            strides.append(0)
            continue
        size, stride = a.shape[d], a.strides[d] // item
        if isinstance(i, slice):
            start, stop, step = i.indices(size)
            shape.append(len(range(start, stop, step)))
            strides.append(stride * step)
            offset += start * stride
        elif _is_device(i) or (advanced and hasattr(i, "__index__")):
            arrays.append((i, stride, size, d))
            places.append(n)
        else:
            position = operator.index(i)
            if not -size <= position < size:
                raise IndexError(f"index {position} is out of bounds for axis {d} with size {size}")
            offset += (position % size) * stride
        d += 1
    plan.offset = offset
    if not arrays:
        plan.shape, plan.strides, plan.bmul, plan.index = tuple(shape), tuple(strides), None, None
        plan.out_shape = plan.shape
        return plan
    b_shape = np.broadcast_shapes(*(np.shape(i) if not _is_device(i) else i.shape for i, _, _, _ in arrays))
    adjacent = places == list(range(places[0], places[0] + len(places)))
    before = sum(1 for i in index[:places[0]] if _new_axis(i) or isinstance(i, slice)) if adjacent else 0
    b_strides = kernels.c_strides(b_shape, 1)
    plan.shape = plan.out_shape = tuple(shape[:before]) + tuple(b_shape) + tuple(shape[before:])
    plan.strides = tuple(strides[:before]) + (0,) * len(b_shape) + tuple(strides[before:])
    plan.bmul = (0,) * before + b_strides + (0,) * (len(shape) - before)
    rows = _empty((len(arrays), math.prod(b_shape)), np.int64)
    for j, (i, _, _, _) in enumerate(arrays):
        row = kernels.strided_view(rows, b_shape, kernels.c_strides(b_shape, 8), j * rows.shape[1])
        if _is_device(i):
            CudaBackend.setitem(row, Ellipsis, i)
        else:
            _fill(row, operator.index(i))
    plan.index = rows
    plan.index_strides = tuple(s for _, s, _, _ in arrays)
    plan.index_sizes = tuple(n for _, _, n, _ in arrays)
    plan.index_axes = tuple(d for _, _, _, d in arrays)
    if not plan.shape:  # every index a 0-d array: walk one element
        plan.shape, plan.strides, plan.bmul = (1,), (0,), (0,)
    return plan


def _broadcasts(shape, target):
    """Whether an array of ``shape`` broadcasts to ``target``."""
    return len(shape) <= len(target) and all(n in (1, m) for n, m in zip(shape[::-1], target[::-1]))


def _new_axis(i):
    return i is None or isinstance(i, (bool, np.bool_))


def _masks_to_positions(a, index):
    """Each bool mask in an index becomes one integer array per axis it covers (numpy's nonzero)."""
    def width(i):  # how many of a's axes an index entry uses
        return 0 if _new_axis(i) or i is Ellipsis else (i.ndim if _is_device(i) and i.dtype == np.bool_ else 1)

    out, axis = [], 0
    for n, i in enumerate(index):
        if i is Ellipsis:
            axis = a.ndim - sum(width(j) for j in index[n + 1:])
        elif _is_device(i) and i.dtype == np.bool_:
            for offset, (got, size) in enumerate(zip(i.shape, a.shape[axis:])):
                if got != size:
                    raise IndexError(f"boolean index did not match indexed array along axis {axis + offset}; size of "
                                     f"axis is {size} but size of corresponding boolean axis is {got}")
            out.extend(_to_device(p) for p in np.nonzero(_to_host(i)))
            axis += i.ndim
            continue
        out.append(i)
        axis += width(i)
    return tuple(out)


def _plan_launch(kernel, a, plan, values, n):
    """Run a scatter kernel over a plan with ``values`` broadcast to the plan's shape."""
    wv, sv = _walk_as(values, plan.shape)
    _launch(kernel, n)(kernels.flat(a)[0], wv, sv, 0, plan.shape, plan.strides, plan.offset, plan.bmul,
                       plan.index, plan.index_strides, plan.index_sizes, n, _index_error())
    _raise_index_error(plan)


_error_slot: list = []


def _index_error():
    """The device array in which indexing kernels report an index out of range: (flag, index, row)."""
    if not _error_slot:
        _error_slot.append(_fill(_empty((3,), np.int64), 0))
    return _error_slot[0]


def _raise_index_error(plan):
    """numpy's IndexError for an index out of range, read back from the kernel's report (one small
    transfer per integer-array index: the price of raising where numpy raises, before the result is used)."""
    flag, bad, row = (int(x) for x in _to_host(_index_error()))
    if flag:
        _fill(_index_error(), 0)
        raise IndexError(f"index {bad} is out of bounds for axis {plan.index_axes[row]} with size "
                         f"{plan.index_sizes[row]}")


def _overlaps(a, b):
    """Whether two device arrays' memory ranges meet (then a write from one into the other must copy first)."""
    def bounds(x):
        start = kernels.address(x)
        return start, start + (1 + sum((n - 1) * s for n, s in zip(x.shape, x.strides))) if x.size else start
    (lo, hi), (lo2, hi2) = bounds(a), bounds(b)
    return lo < hi2 and lo2 < hi


def _reshape_strides(shape, strides, new):
    """Strides that show the same memory in shape ``new``, or None when only a copy can (numpy's rule)."""
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    olddims, oldstrides = [n for n, _ in old], [s for _, s in old]
    result = [0] * len(new)
    oi, oj, ni, nj = 0, 1, 0, 1
    while ni < len(new) and oi < len(olddims):
        np_, op = new[ni], olddims[oi]
        while np_ != op:
            if np_ < op:
                np_ *= new[nj]
                nj += 1
            else:
                op *= olddims[oj]
                oj += 1
        for ok in range(oi, oj - 1):
            if oldstrides[ok] != olddims[ok + 1] * oldstrides[ok + 1]:
                return None
        result[nj - 1] = oldstrides[oj - 1]
        for nk in range(nj - 1, ni, -1):
            result[nk - 1] = result[nk] * new[nk]
        ni, nj, oi, oj = nj, nj + 1, oj, oj + 1
    last = result[ni - 1] if ni >= 1 else 1
    for nk in range(ni, len(new)):
        result[nk] = last
    return tuple(result)


def _parse_einsum(subscripts, arrays):
    """'ij,jk->ik' as (input label strings, output labels), '...' replaced by capital letters."""
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    terms = inputs.split(",")
    ell = max((a.ndim - len(t.replace("...", "")) for t, a in zip(terms, arrays) if "..." in t), default=0)
    fill = "".join(chr(ord("A") + i) for i in range(ell))
    terms = [t.replace("...", fill[len(fill) - (a.ndim - len(t.replace("...", ""))):]) for t, a in zip(terms, arrays)]
    if not arrow:
        counts = {c: "".join(terms).count(c) for c in "".join(terms)}
        output = fill + "".join(sorted(c for c, m in counts.items() if m == 1 and c not in fill))
    return terms, output.replace("...", fill)


class CudaBackend(CudaFusedKernels, Backend):
    """Primitives as numba.cuda kernels on device arrays (numba's simulator without a GPU)."""

    name = "cuda"
    array_type = kernels.ArrayType
    supported_dtypes = frozenset(_NATIVE)
    transfers = kernels.transfers  # .count: arrays copied between host and device (asarray, to_numpy, HOST_ROUND_TRIPS)
    host_round_trips = HOST_ROUND_TRIPS

    # dtypes and transfer
    @staticmethod
    def native_dtype(dtype):
        return _NATIVE[dtype]

    @staticmethod
    def dtype_of(a):
        return _FROM_NATIVE[a.dtype]

    @staticmethod
    def asarray(obj, dtype):
        if _is_device(obj):
            return obj if obj.dtype == _NATIVE[dtype] else CudaBackend.astype(obj, dtype)
        with np.errstate(all="ignore"):
            return _to_device(np.array(obj, dtype=_NATIVE[dtype], copy=None))

    @staticmethod
    def to_numpy(a):
        return _to_host(a)

    @staticmethod
    def astype(a, dtype):
        a = _device(a)
        return _strided_copy(a, a.shape, kernels.flat(a)[2], 0, _NATIVE[dtype])

    @staticmethod
    def copy(a):
        return _strided_copy(a, a.shape, kernels.flat(a)[2], 0)

    # creation
    @staticmethod
    def empty(shape, dtype):
        return _empty(shape, _NATIVE[dtype])

    @staticmethod
    def zeros(shape, dtype):
        return _fill(_empty(shape, _NATIVE[dtype]), 0)

    @staticmethod
    def ones(shape, dtype):
        return _fill(_empty(shape, _NATIVE[dtype]), 1)

    @staticmethod
    def full(shape, value, dtype):
        return _fill(_empty(shape, _NATIVE[dtype]), value)

    @staticmethod
    def arange(start, stop, step, dtype):
        n = max(0, math.ceil((stop - start) / step))
        out = _empty((n,), _NATIVE[dtype])
        if n:
            _launch(kernels.arange_kernel, n)(out, start, step)
        return out

    # elementwise, one input
    neg = _map("neg", np.negative)
    abs = _map("abs", np.abs)
    exp = _map("exp", np.exp)
    log = _map("log", np.log)
    log1p = _map("log1p", np.log1p)
    expm1 = _map("expm1", np.expm1)
    sqrt = _map("sqrt", np.sqrt)
    sin = _map("sin", np.sin)
    cos = _map("cos", np.cos)
    tan = _map("tan", np.tan)
    tanh = _map("tanh", np.tanh)
    sign = _map("sign", np.sign)
    floor = _map("floor", np.floor)
    ceil = _map("ceil", np.ceil)
    round = _map("round", np.rint)
    erf = _map("erf", np.sin)  # numpy has no erf ufunc; sin has the same dtype rule
    isnan = _map("isnan", np.isnan)
    isinf = _map("isinf", np.isinf)
    logical_not = _map("logical_not", np.logical_not)

    # elementwise, two inputs
    add = _zip("add", np.add)
    sub = _zip("sub", np.subtract)
    mul = _zip("mul", np.multiply)
    div = _zip("div", np.true_divide)
    pow = _zip("pow", np.power)
    floor_divide = _zip("floor_divide", np.floor_divide)
    remainder = _zip("remainder", np.remainder)
    maximum = _zip("maximum", np.maximum)
    minimum = _zip("minimum", np.minimum)
    eq = _zip("eq", np.equal)
    ne = _zip("ne", np.not_equal)
    lt = _zip("lt", np.less)
    le = _zip("le", np.less_equal)
    gt = _zip("gt", np.greater)
    ge = _zip("ge", np.greater_equal)
    logical_and = _zip("logical_and", np.logical_and)
    logical_or = _zip("logical_or", np.logical_or)
    logical_xor = _zip("logical_xor", np.logical_xor)

    # more elementwise maths
    arcsin = _map("arcsin", np.arcsin)
    arccos = _map("arccos", np.arccos)
    arctan = _map("arctan", np.arctan)
    sinh = _map("sinh", np.sinh)
    cosh = _map("cosh", np.cosh)
    arcsinh = _map("arcsinh", np.arcsinh)
    arccosh = _map("arccosh", np.arccosh)
    arctanh = _map("arctanh", np.arctanh)
    log2 = _map("log2", np.log2)
    log10 = _map("log10", np.log10)
    erfc = _map("erfc", np.sin)
    arctan2 = _zip("arctan2", np.arctan2)
    hypot = _zip("hypot", np.hypot)
    copysign = _zip("copysign", np.copysign)
    fmod = _zip("fmod", np.fmod)
    nextafter = _on_host("nextafter", np.nextafter)
    logaddexp = _zip("logaddexp", np.logaddexp)
    logaddexp2 = _zip("logaddexp2", np.logaddexp2)
    gcd = _on_host("gcd", np.gcd)
    lcm = _on_host("lcm", np.lcm)
    bitwise_and = _zip("bitwise_and", np.bitwise_and)
    bitwise_or = _zip("bitwise_or", np.bitwise_or)
    bitwise_xor = _zip("bitwise_xor", np.bitwise_xor)

    @staticmethod
    def bitwise_not(a):
        if a.dtype == np.bool_:  # ~ on a bool is not: numpy's invert of bools is logical not
            return CudaBackend.logical_not(a)
        return CudaBackend._invert(a)

    _invert = _map("bitwise_not", np.invert)
    left_shift = _on_host("left_shift", np.left_shift)
    right_shift = _on_host("right_shift", np.right_shift)
    frexp = _on_host("frexp", lambda a: (lambda m, e: (m, e.astype(np.int32)))(*np.frexp(a)))

    @staticmethod
    def where(cond, a, b):
        cond, a, b = _device(cond), _device(a), _device(b)
        dtype = _result(np.where, np.ones(1, bool), a, b)  # the cond sample is never looked at
        a = CudaBackend.full((), a, _FROM_NATIVE[dtype]) if _is_scalar(a) else a
        b = CudaBackend.full((), b, _FROM_NATIVE[dtype]) if _is_scalar(b) else b
        shape = np.broadcast_shapes(cond.shape, a.shape, b.shape)
        out = _empty(shape, dtype)
        if out.size:
            walk = shape or (1,)
            (wc, sc), (wa, sa), (wb, sb) = _walk_as(cond, walk), _walk_as(a, walk), _walk_as(b, walk)
            _launch(kernels.where_kernel, out.size)(_flat_out(out), wc, wa, wb, walk, sc, 0, sa, 0, sb, 0)
        return out

    # reductions
    sum = _reduction("sum", np.sum)
    prod = _reduction("prod", np.prod)
    max = _reduction("max", np.max)
    min = _reduction("min", np.min)
    all = _reduction("all", np.all)
    any = _reduction("any", np.any)
    argmax = _arg_reduction(True)
    argmin = _arg_reduction(False)
    cumsum = _scan("cumsum", np.cumsum)
    cumprod = _scan("cumprod", np.cumprod)
    cummax = _scan("cummax", lambda a: a)
    cummin = _scan("cummin", lambda a: a)
    argsort = _on_host("argsort", lambda a, axis: np.argsort(a, axis=axis, kind="stable"))

    # movement
    @staticmethod
    def reshape(a, shape):
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if -1 in shape:
            known = math.prod(n for n in shape if n != -1)
            shape = tuple(a.size // known if n == -1 and known else (0 if n == -1 else n) for n in shape)
        if math.prod(shape) != a.size:
            raise ValueError(f"cannot reshape array of size {a.size} into shape {shape}")
        item = a.dtype.itemsize
        strides = kernels.c_strides(shape, item) if not a.size else _reshape_strides(a.shape, a.strides, shape)
        if strides is None:
            a, strides = CudaBackend.copy(a), kernels.c_strides(shape, item)
        return kernels.strided_view(a, shape, strides)

    @staticmethod
    def permute(a, axes):
        axes = tuple(operator.index(ax) % a.ndim for ax in axes) if a.ndim else ()
        return kernels.strided_view(a, tuple(a.shape[i] for i in axes), tuple(a.strides[i] for i in axes))

    @staticmethod
    def broadcast_to(a, shape):
        a, shape = _device(a), tuple(shape)
        np.broadcast_shapes(a.shape, shape)  # numpy's error when they do not broadcast
        if np.broadcast_shapes(a.shape, shape) != shape:
            raise ValueError(f"cannot broadcast an array of shape {a.shape} to {shape}")
        lead = len(shape) - a.ndim
        strides = (0,) * lead + tuple(0 if n == 1 and m != 1 else s
                                      for n, m, s in zip(a.shape, shape[lead:], a.strides))
        return kernels.strided_view(a, shape, strides)

    @staticmethod
    def getitem(a, index):
        plan = _plan(a, index)
        if plan.index is None:
            if all(s >= 0 for s in plan.strides):  # a view (a negative step is a copy: see flip)
                item = a.dtype.itemsize
                return kernels.strided_view(a, plan.shape, tuple(s * item for s in plan.strides), plan.offset)
            return _strided_copy(a, plan.shape, plan.strides, plan.offset)
        n = math.prod(plan.shape)
        out = _empty(plan.out_shape, a.dtype)
        if n:
            _launch(kernels.gather_kernel, n)(_flat_out(out), kernels.flat(a)[0], plan.shape, plan.strides,
                                              plan.offset, plan.bmul, plan.index, plan.index_strides,
                                              plan.index_sizes, _index_error())
            _raise_index_error(plan)
        return out

    @staticmethod
    def setitem(a, index, value):
        plan = _plan(a, index)
        value = _device(value)
        if _is_scalar(value):
            value = CudaBackend.full((), value, _FROM_NATIVE[a.dtype])
        elif _overlaps(a, value):
            value = CudaBackend.copy(value)
        own = value.shape
        while len(own) > len(plan.out_shape) and own[0] == 1:  # numpy lets a value carry extra leading 1s
            own = own[1:]
        if not _broadcasts(own, plan.out_shape):
            raise ValueError(f"could not broadcast input array from shape {value.shape} into shape {plan.out_shape}")
        n = math.prod(plan.shape)
        if not n:
            return
        walk = plan.shape or (1,)
        if plan.index is None:
            wv, sv = _walk_as(value, walk)
            _launch(kernels.copy_kernel, n)(kernels.flat(a)[0], wv, walk, plan.strides or (0,), plan.offset, sv, 0)
        else:
            _plan_launch(kernels.scatter_kernel, a, plan, value, n)

    @staticmethod
    def add_at(a, index, values):
        values = _device(values)
        if _is_scalar(values):
            values = CudaBackend.full((), values, _FROM_NATIVE[a.dtype])
        if a.dtype not in _ATOMIC_ADD:  # no 8/16-bit atomics: numpy does it on the host
            _at_on_host(np.add, a, index, values)
            return
        plan = _plan(a, index)
        if plan.index is None:  # a slice has no repeats: read, add, write back
            CudaBackend.setitem(a, index, CudaBackend.add(CudaBackend.getitem(a, index), values))
            return
        if values.dtype != a.dtype:
            values = CudaBackend.astype(values, _FROM_NATIVE[a.dtype])
        n = math.prod(plan.shape)
        if n:
            _plan_launch(kernels.scatter_add_kernel, a, plan, values, n)

    @staticmethod
    def positions_in_base(base, view):
        if not view.size:
            return CudaBackend.zeros(view.shape, dt.int64)
        item = base.dtype.itemsize
        if not CudaBackend.is_contiguous(base):  # computed from the strides alone, then copied up
            return _to_device(_positions_on_host(base, view))
        positions = CudaBackend.full(view.shape, (kernels.address(view) - kernels.address(base)) // item, dt.int64)
        for axis, (n, stride) in enumerate(zip(view.shape, view.strides)):
            steps = CudaBackend.arange(0, n * (stride // item), stride // item, dt.int64) if stride else \
                CudaBackend.zeros((n,), dt.int64)
            positions = CudaBackend.add(positions, CudaBackend.reshape(steps, (n,) + (1,) * (view.ndim - axis - 1)))
        return positions

    @staticmethod
    def multiply_at(a, index, values):
        _at_on_host(np.multiply, a, index, values)

    @staticmethod
    def maximum_at(a, index, values):
        _at_on_host(np.maximum, a, index, values)

    @staticmethod
    def minimum_at(a, index, values):
        _at_on_host(np.minimum, a, index, values)

    @staticmethod
    def diagonal(a, offset, axis1, axis2):
        item = a.dtype.itemsize
        start = offset * a.strides[axis2] if offset >= 0 else -offset * a.strides[axis1]
        length = max(0, min(a.shape[axis1] - max(-offset, 0), a.shape[axis2] - max(offset, 0)))
        keep = [i for i in range(a.ndim) if i not in (axis1, axis2)]
        shape = tuple(a.shape[i] for i in keep) + (length,)
        strides = tuple(a.strides[i] for i in keep) + (a.strides[axis1] + a.strides[axis2],)
        return kernels.strided_view(a, shape, strides, start // item if length else 0)

    @staticmethod
    def isub(a, b):  # fused kernel (see Backend.isub): the zip kernel writes into a itself
        _in_place("sub", a, b) or Backend.isub(CudaBackend, a, b)

    @staticmethod
    def iadd(a, b):  # fused kernel (see Backend.iadd)
        _in_place("add", a, b) or Backend.iadd(CudaBackend, a, b)

    @staticmethod
    def imul(a, b):  # fused kernel (see Backend.imul)
        _in_place("mul", a, b) or Backend.imul(CudaBackend, a, b)

    @staticmethod
    def concatenate(arrays, axis):
        arrays = [_device(x) for x in arrays]
        first = arrays[0]
        axis = operator.index(axis) % first.ndim
        dtype = np.result_type(*(x.dtype for x in arrays))
        shape = list(first.shape)
        shape[axis] = sum(x.shape[axis] for x in arrays)
        out = _empty(shape, dtype)
        start = 0
        for x in arrays:
            region = (slice(None),) * axis + (slice(start, start + x.shape[axis]),)
            CudaBackend.setitem(out, region, x)
            start += x.shape[axis]
        return out

    @staticmethod
    def stack(arrays, axis):
        arrays = [_device(x) for x in arrays]
        axis = operator.index(axis) % (arrays[0].ndim + 1)
        grown = [CudaBackend.reshape(x, x.shape[:axis] + (1,) + x.shape[axis:]) for x in arrays]
        return CudaBackend.concatenate(grown, axis)

    @staticmethod
    def flip(a, axes):
        """A copy read backwards: start at the last element of each flipped axis and step by -stride."""
        item = a.dtype.itemsize
        axes = _axes(axes, a.ndim)
        strides = [s // item for s in a.strides]
        offset = 0
        for ax in axes:
            offset += (a.shape[ax] - 1) * strides[ax] if a.shape[ax] else 0
            strides[ax] = -strides[ax]
        return _strided_copy(a, a.shape, strides, offset)

    @staticmethod
    def roll(a, shifts, axes):
        if axes is None:
            return CudaBackend.reshape(CudaBackend.roll(CudaBackend.reshape(a, (-1,)), shifts, 0), a.shape)
        shifts = shifts if isinstance(shifts, (tuple, list)) else (shifts,)
        axes = axes if isinstance(axes, (tuple, list)) else (axes,)
        if len(shifts) == 1 and len(axes) > 1:
            shifts = tuple(shifts) * len(axes)
        for shift, axis in zip(shifts, axes):
            n = a.shape[axis]
            s = shift % n if n else 0
            if s:
                lead = (slice(None),) * (axis % a.ndim)
                a = CudaBackend.concatenate([CudaBackend.getitem(a, lead + (slice(n - s, None),)),
                                             CudaBackend.getitem(a, lead + (slice(0, n - s),))], axis)
        return a

    @staticmethod
    def pad(a, pad_width, value):
        widths = np.broadcast_to(np.asarray(pad_width, dtype=np.int64).reshape(-1, 2) if np.ndim(pad_width) else
                                 np.full((a.ndim, 2), pad_width), (a.ndim, 2))
        shape = tuple(n + lo + hi for n, (lo, hi) in zip(a.shape, widths.tolist()))
        out = CudaBackend.full(shape, value, _FROM_NATIVE[a.dtype])
        CudaBackend.setitem(out, tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape, widths.tolist())), a)
        return out

    @staticmethod
    def take_along_axis(a, index, axis):
        """Gather with an integer array along one axis and aranges along the others (numpy's rule)."""
        index = _device(index)
        axis = operator.index(axis) % a.ndim
        parts = []
        for d in range(a.ndim):
            if d == axis:
                parts.append(index)
            else:
                steps = CudaBackend.arange(0, a.shape[d], 1, dt.int64)
                parts.append(CudaBackend.reshape(steps, (1,) * d + (a.shape[d],) + (1,) * (a.ndim - d - 1)))
        return CudaBackend.getitem(a, tuple(parts))

    @staticmethod
    def tril(a, k):
        return _triangle(a, k, lower=True)

    @staticmethod
    def triu(a, k):
        return _triangle(a, k, lower=False)

    @staticmethod
    def is_contiguous(a):
        step = a.dtype.itemsize
        for n, s in zip(reversed(a.shape), reversed(a.strides)):
            if n != 1 and s != step:
                return a.size == 0
            step *= n
        return True

    # linear algebra
    @staticmethod
    def matmul(a, b):
        a, b = _device(a), _device(b)
        if cupy is not None:
            return cuda.as_cuda_array(cupy.matmul(cupy.asarray(a), cupy.asarray(b)))
        vector_a, vector_b = a.ndim == 1, b.ndim == 1
        if vector_a:
            a = CudaBackend.reshape(a, (1, a.shape[0]))
        if vector_b:
            b = CudaBackend.reshape(b, (b.shape[0], 1))
        (m, ka), (kb, n) = a.shape[-2:], b.shape[-2:]
        if ka != kb:
            raise ValueError(f"matmul: Input operand 1 has a mismatch in its core dimension 0 (size {kb} "
                             f"is different from {ka})")
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
        dtype = _result(np.matmul, a, b)
        a = CudaBackend.astype(a, _FROM_NATIVE[dtype]) if a.dtype != dtype else a
        b = CudaBackend.astype(b, _FROM_NATIVE[dtype]) if b.dtype != dtype else b
        a = CudaBackend.broadcast_to(a, batch + (m, ka))
        b = CudaBackend.broadcast_to(b, batch + (kb, n))
        out = _empty(batch + (m, n), dtype)
        if out.size and ka == 0:
            _fill(out, 0)
        elif out.size:
            wa, _, sa = kernels.flat(a)
            wb, _, sb = kernels.flat(b)
            z = math.prod(batch)
            walk = batch or (1,)
            for z0 in range(0, z, 65535):
                grid = (kernels.blocks(n, kernels.TILE), kernels.blocks(m, kernels.TILE), min(65535, z - z0))
                kernels.matmul_kernel(dtype)[grid, (kernels.TILE, kernels.TILE)](
                    _flat_out(out), wa, wb, walk, sa[:-2] or (0,), 0, sb[:-2] or (0,), 0, m, ka, n,
                    sa[-2], sa[-1], sb[-2], sb[-1], z0)
        if vector_a or vector_b:
            shape = batch + ((m,) if not vector_a else ()) + ((n,) if not vector_b else ())
            out = CudaBackend.reshape(out, shape)
        return out

    @staticmethod
    def einsum(subscripts, *arrays):
        """Composed: each operand's axes laid out over all labels (size 1 where it has none), their
        product, then a sum over the labels the output drops (memory-hungry, but kernels all the way)."""
        arrays = [_device(x) for x in arrays]
        terms, output = _parse_einsum(subscripts, arrays)
        if any(len(set(t)) != len(t) for t in terms):
            return _on_host("einsum", np.einsum).__func__(subscripts, *arrays)
        labels = list(output) + sorted({c for t in terms for c in t} - set(output))
        product = None
        for term, x in zip(terms, arrays):
            x = CudaBackend.permute(x, tuple(term.index(c) for c in labels if c in term))
            x = CudaBackend.reshape(x, tuple(x.shape[[c for c in labels if c in term].index(c)] if c in term else 1
                                             for c in labels))
            product = x if product is None else CudaBackend.mul(product, x)
        summed = tuple(range(len(output), len(labels)))
        if summed:
            return CudaBackend.sum(product, summed)
        return CudaBackend.copy(product)

    def synchronize(self):
        cuda.synchronize()


def _in_place(name, a, b):
    """a = a op b in one launch, each thread reading and writing its own element of a; True if done.

    Only for a contiguous a that b's memory does not overlap and whose dtype the result keeps
    (else the composed fallback, op then setitem, runs)."""
    b = _device(b)
    if not CudaBackend.is_contiguous(a) or not a.size:
        return not a.size
    arrays, scalar_right, _ = kernels.ZIP[name]
    if _is_scalar(b):
        if np.result_type(a.dtype, b) != a.dtype:
            return False
        window, shape, strides = kernels.flat(a)
        _launch(scalar_right, a.size)(_flat_out(a), window, _scalar_in(b, a), shape, strides, 0)
        return True
    if _overlaps(a, b) or np.result_type(a.dtype, b.dtype) != a.dtype or not _broadcasts(b.shape, a.shape):
        return False
    walk = a.shape or (1,)
    wa, sa = _walk_as(a, walk)
    wb, sb = _walk_as(b, walk)
    _launch(arrays, a.size)(_flat_out(a), wa, wb, walk, sa, 0, sb, 0)
    return True


def _triangle(a, offset, lower):
    """Keep where column - row <= offset (lower) or >= offset (upper): a mask from two aranges, then where."""
    m, n = a.shape[-2:]
    rows = CudaBackend.reshape(CudaBackend.arange(0, m, 1, dt.int64), (m, 1))
    columns = CudaBackend.arange(0, n, 1, dt.int64)
    distance = CudaBackend.sub(columns, rows)
    mask = CudaBackend.le(distance, offset) if lower else CudaBackend.ge(distance, offset)
    return CudaBackend.where(mask, a, CudaBackend.zeros((), _FROM_NATIVE[a.dtype]))


def _at_on_host(ufunc, a, index, values):
    """a[index] op= values by numpy's ufunc.at on a host copy, written back into a (see HOST_ROUND_TRIPS)."""
    host = _to_host(a)
    index = index if isinstance(index, tuple) else (index,)
    with np.errstate(all="ignore"):
        ufunc.at(host, tuple(_to_host(i) if _is_device(i) else i for i in index),
                 _to_host(values) if _is_device(values) else values)
    CudaBackend.setitem(a, Ellipsis, _to_device(host))


def _positions_on_host(base, view):
    """numpy_backend's labelling trick on metadata alone: number base's memory in row-major order, read
    the numbers through the view's strides. No element of either array is read."""
    item = base.dtype.itemsize

    def bounds(x):
        start = kernels.address(x)
        return (start + sum(min(0, (n - 1) * s) for n, s in zip(x.shape, x.strides)),
                start + sum(max(0, (n - 1) * s) for n, s in zip(x.shape, x.strides)) + item)

    (low, high), (view_low, view_high) = bounds(base), bounds(view)
    if view.dtype.itemsize != item or view_low < low or view_high > high:
        raise ValueError("the view does not lie in its base's memory")
    labels = np.zeros((high - low) // item, np.int64)

    def through(x):
        start = labels[(kernels.address(x) - low) // item:]
        return np.lib.stride_tricks.as_strided(start, x.shape, tuple(s // item * 8 for s in x.strides))

    through(base)[...] = np.arange(base.size).reshape(base.shape)
    return through(view).copy()

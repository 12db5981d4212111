"""The MLX backend: every primitive on ``mlx.core`` arrays (Apple silicon's GPU; the CPU on Linux).

A translation of ``numpy_backend.py``, primitive for primitive. Three things differ from numpy:

* **MLX is lazy.** An op only records work; ``mx.eval`` runs it. The backend evaluates wherever a
  value leaves MLX (``to_numpy``: ``.item()``, ``.numpy()``, printing), in ``synchronize`` (timing)
  and in ``materialize``, which the optimizers call after each step so that a training loop's graph
  is one step long, never the whole history.
* **MLX has no views**: a slice or a reshape is a new array. gradlab's views share memory (a write
  through ``x[0]`` changes ``x``, a write into ``x`` shows in ``x[0]``), so the backend remembers
  which arrays stand for views of which (``_ViewTable``) and carries every in-place write across.
* **What MLX lacks runs on the host** (``_ON_HOST``): evaluate, copy out, compute with numpy, copy
  in. On the CPU that is cheap; on the GPU it is a round trip, paid only by these rarer ops.
"""

from __future__ import annotations

import builtins
import collections
import inspect
import weakref

import mlx.core as mx
import numpy as np

from .. import dtypes as dt
from . import numpy_kernels
from .contract import PRIMITIVES, Backend

_NATIVE = {dt.bool_: mx.bool_, dt.uint8: mx.uint8, dt.int8: mx.int8, dt.int16: mx.int16, dt.int32: mx.int32,
           dt.int64: mx.int64, dt.uint16: mx.uint16, dt.uint32: mx.uint32, dt.uint64: mx.uint64,
           dt.float16: mx.float16, dt.bfloat16: mx.bfloat16, dt.float32: mx.float32, dt.float64: mx.float64}
_FROM_NATIVE = {v: k for k, v in _NATIVE.items()}
_BY_NAME = {k.name: v for k, v in _NATIVE.items()}  # numpy's dtype names are gradlab's
dt.register_native_dtypes(_NATIVE)

# numpy's sums and products of small integers (and bools) come out in the 64-bit integer of their sign
_WIDE_SUM = {mx.bool_: mx.int64, mx.int8: mx.int64, mx.int16: mx.int64, mx.int32: mx.int64,
             mx.uint8: mx.uint64, mx.uint16: mx.uint64, mx.uint32: mx.uint64}


def float64_on_gpu_error(op: str, dtype, device) -> str | None:
    """The message refusing float64 on MLX's GPU (Metal has no 64-bit floats), or None where it can run.

    ``device`` is MLX's device (``mx.default_device()``); its CPU runs float64.
    """
    if dtype is not dt.float64 or device.type != mx.DeviceType.gpu:
        return None
    return (f"{op}: float64 is not supported on MLX's GPU ({device}): Metal has no 64-bit floats. Use float32 "
            "(dtype=gradlab.float32, or tensor.float()), or run the 'mlx' device on MLX's CPU stream: "
            "mlx.core.set_default_device(mlx.core.cpu)")


def _check_float64(op: str, dtype) -> None:
    """Raise float64_on_gpu_error's message before any work is done (called where arrays are made)."""
    if dtype is dt.float64:
        message = float64_on_gpu_error(op, dtype, mx.default_device())
        if message:
            raise TypeError(message)


class _ViewTable:
    """Which mx arrays stand for views of which, and how each is read from its source.

    Every movement primitive (reshape, permute, basic indexing, diagonal, ...) records its result
    with the function that reads it from its source. Every in-place primitive then calls
    ``written(a)``: the new values go up to the root array, through the view's positions in its
    source, and down again into every live view of that root, so all of them agree as numpy's
    views do. An array with no views costs one dictionary lookup per write.
    """

    def __init__(self):
        self.source = {}  # id(view) -> [source, read (source -> view), writable, contiguous (cached)]
        self.views = {}  # id(source) -> {id(view): weak reference to the view}

    def record(self, source, view, read, writable=True):
        if view is source:
            return view
        above = self.source.get(id(source))
        writable = writable and (above is None or above[2])  # a view of a read-only view is read-only
        ref = _ViewRef(view, self._forget)
        ref.key, ref.parent = id(view), id(source)
        self.source[ref.key] = [source, read, writable, None]
        siblings = self.views.get(ref.parent)
        if siblings is None:
            siblings = self.views[ref.parent] = {}
        siblings[ref.key] = ref
        return view

    def _forget(self, ref):
        """A view died: it leaves the table (and its source's entry, if it was the last view of it)."""
        self.source.pop(ref.key, None)
        siblings = self.views.get(ref.parent)
        if siblings is not None:
            siblings.pop(ref.key, None)
            if not siblings:
                del self.views[ref.parent]

    def linked(self, a) -> bool:
        return id(a) in self.source or id(a) in self.views

    def check_writable(self, a) -> None:
        entry = self.source.get(id(a))
        if entry is not None and not entry[2]:  # numpy's message, which the in-place ops translate
            raise ValueError("assignment destination is read-only")

    def written(self, a) -> None:
        """``a`` was just written in place: carry its values up to its root, then into every view below."""
        root = a
        while id(root) in self.source:
            source, read = self.source[id(root)][:2]
            positions = mx.reshape(read(_labels(source.shape)), (-1,))
            flat = mx.reshape(source, (-1,))
            flat[positions] = mx.reshape(root, (-1,))
            source[...] = mx.reshape(flat, source.shape)
            root = source
        self._refresh(root)

    def _refresh(self, source) -> None:
        for ref in list(self.views.get(id(source), {}).values()):
            view = ref()
            if view is not None:
                view[...] = self.source[id(view)][1](source)
                self._refresh(view)

    def chain(self, base, view) -> list:
        """The reads that lead from ``base`` to ``view`` (first first); ValueError if view is not one of base's."""
        reads = []
        while view is not base:
            entry = self.source.get(id(view))
            if entry is None:
                raise ValueError("the view does not lie in its base's memory")
            view = entry[0]
            reads.append(entry[1])
        return reads[::-1]

    def root(self, a):
        while id(a) in self.source:
            a = self.source[id(a)][0]
        return a

    def live_views(self, arrays) -> list:
        """Every live view below the given arrays (materialize evaluates them with their bases)."""
        found, stack = [], list(arrays)
        while stack:
            for ref in self.views.get(id(stack.pop()), {}).values():
                view = ref()
                if view is not None:
                    found.append(view)
                    stack.append(view)
        return found


class _ViewRef(weakref.ref):
    """A weak reference to a view that knows its own key and its source's, to leave the table when it dies."""

    __slots__ = ("key", "parent")


def _labels(shape):
    """Each element's row-major index, in an array of ``shape``: read through a view, its positions."""
    n = 1
    for size in shape:
        n *= size
    return mx.reshape(mx.arange(n, dtype=mx.int64), shape)


_VIEWS = _ViewTable()


def _in_place(write):
    """An in-place primitive that also reaches the views of its array and the array it is a view of."""
    def primitive(a, *args):
        if _VIEWS.linked(a):
            _VIEWS.check_writable(a)
            write(a, *args)
            _VIEWS.written(a)
        else:
            write(a, *args)

    primitive.__name__ = write.__name__
    return staticmethod(primitive)


def _index(a, index):
    """(index as MLX takes it, whether it is basic), checked first as numpy checks it: MLX reads and
    writes out of bounds without a word (even for a plain int), so a bad index is numpy's IndexError
    here, before any work. Numpy arrays become mx arrays, a bool mask its nonzero() positions (MLX
    cannot index with masks: the result's shape depends on the values). (None, False) means: do it on
    the host (a Python bool in the index). Basic indices (ints, slices, None, ...) make views."""
    items = index if type(index) is tuple else (index,)
    shape = a.shape
    ndim, used, basic = len(shape), 0, True
    for item in items:
        if isinstance(item, (mx.array, np.ndarray)):
            if item.dtype in (mx.bool_, np.bool_):
                if item.ndim == 0:
                    return None, False
                used += item.ndim
            else:
                used += 1
            basic = False
        elif isinstance(item, bool):
            return None, False
        elif item is not None and item is not Ellipsis:
            used += 1
    if used > ndim:
        raise IndexError(f"too many indices for array: array is {ndim}-dimensional, but {used} were indexed")
    if basic:
        dim = 0
        for item in items:
            if item is Ellipsis:
                dim += ndim - used
            elif item is not None:
                if type(item) is not slice and not -shape[dim] <= item < shape[dim]:
                    raise IndexError(f"index {item} is out of bounds for axis {dim} with size {shape[dim]}")
                dim += 1
        return items, True
    out, dim, arrays = [], 0, []
    for item in items:
        if item is Ellipsis:
            out.append(item)
            dim += ndim - used
        elif item is None:
            out.append(item)
        elif isinstance(item, (slice, int, np.integer)):
            if not isinstance(item, slice) and not -shape[dim] <= item < shape[dim]:
                raise IndexError(f"index {item} is out of bounds for axis {dim} with size {shape[dim]}")
            out.append(item)
            dim += 1
        elif item.dtype in (mx.bool_, np.bool_):
            mask_shape, axes = tuple(item.shape), tuple(shape[dim:dim + item.ndim])
            if mask_shape != axes:
                raise IndexError(f"boolean index did not match indexed array along axis {dim}; size of axis is "
                                 f"{axes} but size of corresponding boolean axis is {mask_shape}")
            positions = [mx.array(p) for p in np.nonzero(np.asarray(item))]
            out.extend(positions)
            arrays.extend(positions)
            dim += item.ndim
        else:
            item = mx.array(item) if isinstance(item, np.ndarray) else item
            if item.size:
                low, high = mx.min(item), mx.max(item)
                mx.eval(low, high)
                for end in (low.item(), high.item()):
                    if not -shape[dim] <= end < shape[dim]:
                        raise IndexError(f"index {end} is out of bounds for axis {dim} with size {shape[dim]}")
            out.append(item)
            arrays.append(item)
            dim += 1
    if len(arrays) > 1:
        try:
            mx.broadcast_shapes(*(tuple(x.shape) for x in arrays))
        except ValueError:
            shapes = " ".join(str(tuple(x.shape)) for x in arrays)
            raise IndexError(f"shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}") \
                from None
    return tuple(out), False


def _host_index(index):
    items = index if isinstance(index, tuple) else (index,)
    return tuple(_host(item) for item in items)


def _host(a):
    """A numpy copy of an mx array's values (evaluating it); Python numbers pass through."""
    if not isinstance(a, mx.array):
        return a
    if a.dtype == mx.bfloat16:  # numpy has no bfloat16 of its own: through float32, exactly
        return np.array(a.astype(mx.float32)).astype(dt.numpy_bfloat16())
    return np.array(a)


def _on_host(function):
    """A primitive MLX lacks, computed by numpy on the host and copied back (a tuple of results stays one).
    Quietly: out-of-domain inputs give NaN without a warning, as in PyTorch."""
    def run(*args):
        with np.errstate(all="ignore"):
            result = function(*(_host(a) for a in args))
        if isinstance(result, tuple):
            return tuple(_from_host(r) for r in result)
        return _from_host(result)

    run.__name__ = getattr(function, "__name__", "host")
    return staticmethod(run)


def _from_host(result):
    result = np.asarray(result)
    return mx.array(result, dtype=_BY_NAME[result.dtype.name])


def _exact_in_float64(mlx_function, numpy_function):
    """MLX computes float64 exp, sin, cos and erf only to float32's accuracy: float64 goes to numpy."""
    host = _on_host(numpy_function).__func__

    def run(*args):
        for a in args:
            if isinstance(a, mx.array) and a.dtype == mx.float64:
                return host(*args)
        return mlx_function(*args)

    run.__name__ = mlx_function.__name__
    return staticmethod(run)


def _reduction(reduce, identity=None, widen=False):
    """A reduction over an axis tuple (or None). Empty arrays get the identity (0 for sum, 1 for prod, ...)
    explicitly: MLX's full reductions of empty arrays can return garbage. ``widen``: sums and products of
    small integers and bools come out in 64 bits, as numpy's do."""
    def run(a, axis=None, keepdims=False):
        if widen and a.dtype in _WIDE_SUM:
            a = a.astype(_WIDE_SUM[a.dtype])
        if a.size == 0:
            axes = range(a.ndim) if axis is None else [ax % a.ndim for ax in axis]
            shape = tuple(1 if i in axes else n for i, n in enumerate(a.shape) if keepdims or i not in axes)
            if identity is None and builtins.any(a.shape[i] == 0 for i in axes):
                raise ValueError("zero-size array to reduction operation which has no identity")
            out_dtype = mx.bool_ if isinstance(identity, bool) else a.dtype  # all/any give bools
            return mx.full(shape, mx.array(identity or 0, dtype=out_dtype))
        return reduce(a, axis=axis, keepdims=keepdims)

    return staticmethod(run)


def _scatter(a, index, values, combine):
    """a[index] op= values, each repeated index in turn, written back into a (MLX's .at[] makes a new array)."""
    checked = _index(a, index)[0]
    if builtins.any(isinstance(item, mx.array) and item.size == 0 for item in checked):
        return  # no positions: nothing to do (MLX refuses empty updates)
    a[...] = getattr(a.at[checked], combine)(values)


def _arg_reduction(arg, a, axis, keepdims):
    """argmax/argmin as int64 (numpy's index dtype; MLX's is uint32). Along a non-empty axis of an
    empty array the answer is empty, as in numpy (MLX refuses every empty array)."""
    if a.size == 0 and axis is not None and a.shape[axis]:
        shape = list(a.shape)
        shape[axis] = 1
        return mx.zeros(tuple(shape) if keepdims else tuple(shape[:axis] + shape[axis + 1:]), mx.int64)
    return arg(a, axis=axis, keepdims=keepdims).astype(mx.int64)


# What MLX lacks, done on the host by numpy, with the reason for each.
_ON_HOST = (
    ("argsort", "mx.argsort is not stable and does not put NaN last"),
    ("erfc", "mx has no erfc, and 1 - erf loses the tail's digits"),
    ("exp sin cos erf logaddexp (float64)", "MLX computes them to float32's accuracy only, also in float64"),
    ("hypot copysign fmod nextafter logaddexp2 gcd lcm frexp", "mx has no such functions"),
    ("left_shift right_shift", "mx wraps the shift count; numpy and PyTorch give 0 (or -1) from the width on"),
    ("matmul einsum (integers)", "mx multiplies floating-point matrices only"),
    ("bool masks in an index", "mx cannot index with a mask: its nonzero() positions are found on the host"),
    ("Python bools in an index", "mx has no meaning for x[True]: numpy's (a new axis of 1 or 0) on the host"),
    ("lu_factor solve cholesky qr svd eigh ... (LinalgKernels)", "mx.linalg runs on the CPU stream only and "
     "reports no LAPACK info/pivots; the host kernels are inherited unchanged"),
    ("random_*", "drawn by numpy's PCG64 on the host (inherited): one seed, the same numbers on every backend"),
)


class MlxBackend(Backend):
    """Primitives on mlx.core arrays, evaluated lazily by MLX (on its default device)."""

    name = "mlx"
    array_type = mx.array
    supported_dtypes = frozenset(_NATIVE)  # float64 on MLX's CPU only: refused on its GPU, see float64_on_gpu_error

    # dtypes and transfer
    @staticmethod
    def native_dtype(dtype):
        return _NATIVE[dtype]

    @staticmethod
    def dtype_of(a):
        return _FROM_NATIVE[a.dtype]

    @staticmethod
    def asarray(obj, dtype):
        _check_float64("asarray", dtype)
        if isinstance(obj, mx.array):
            return obj if obj.dtype == _NATIVE[dtype] else obj.astype(_NATIVE[dtype])
        host = np.asarray(obj, dtype=dt.numpy_bfloat16() if dtype is dt.bfloat16 else dtype.name)
        return mx.array(host, dtype=_NATIVE[dtype])

    @staticmethod
    def to_numpy(a):
        return _host(a)  # np.array evaluates the array first: this is where lazy work is forced

    @staticmethod
    def astype(a, dtype):
        _check_float64("astype", dtype)
        return a.astype(_NATIVE[dtype])

    @staticmethod
    def copy(a):
        return mx.array(a)

    # creation
    @staticmethod
    def empty(shape, dtype):
        _check_float64("empty", dtype)
        return mx.zeros(shape, dtype=_NATIVE[dtype])  # MLX has no uninitialised arrays

    @staticmethod
    def zeros(shape, dtype):
        _check_float64("zeros", dtype)
        return mx.zeros(shape, dtype=_NATIVE[dtype])

    @staticmethod
    def ones(shape, dtype):
        _check_float64("ones", dtype)
        return mx.ones(shape, dtype=_NATIVE[dtype])

    @staticmethod
    def full(shape, value, dtype):
        _check_float64("full", dtype)
        return mx.full(shape, mx.array(value, dtype=_NATIVE[dtype]))  # (mx.full's dtype= loses to the value's type)

    @staticmethod
    def arange(start, stop, step, dtype):
        _check_float64("arange", dtype)  # numpy's length and values (mx.arange loses int64 beyond 2**53)
        return mx.array(np.arange(start, stop, step, dtype=dtype.name), dtype=_NATIVE[dtype])

    # elementwise, one input
    neg = staticmethod(mx.negative)
    abs = staticmethod(mx.abs)
    exp = _exact_in_float64(mx.exp, np.exp)
    log = staticmethod(mx.log)
    log1p = staticmethod(mx.log1p)
    expm1 = staticmethod(mx.expm1)
    sqrt = staticmethod(mx.sqrt)
    sin = _exact_in_float64(mx.sin, np.sin)
    cos = _exact_in_float64(mx.cos, np.cos)
    tan = staticmethod(mx.tan)
    tanh = staticmethod(mx.tanh)

    @staticmethod
    def sign(a):  # MLX's sign(NaN) is 0; numpy's and PyTorch's is NaN
        return mx.where(mx.isnan(a), a, mx.sign(a)) if mx.issubdtype(a.dtype, mx.floating) else mx.sign(a)

    floor = staticmethod(mx.floor)
    ceil = staticmethod(mx.ceil)
    round = staticmethod(mx.round)  # round half to even, as PyTorch does
    erf = _exact_in_float64(mx.erf, numpy_kernels._erf_exact)
    isnan = staticmethod(mx.isnan)
    isinf = staticmethod(mx.isinf)
    logical_not = staticmethod(mx.logical_not)

    # elementwise, two inputs
    add = staticmethod(mx.add)
    sub = staticmethod(mx.subtract)
    mul = staticmethod(mx.multiply)
    div = staticmethod(mx.divide)
    pow = staticmethod(mx.power)
    floor_divide = staticmethod(mx.floor_divide)
    remainder = staticmethod(mx.remainder)
    maximum = staticmethod(mx.maximum)
    minimum = staticmethod(mx.minimum)
    eq = staticmethod(mx.equal)
    ne = staticmethod(mx.not_equal)
    lt = staticmethod(mx.less)
    le = staticmethod(mx.less_equal)
    gt = staticmethod(mx.greater)
    ge = staticmethod(mx.greater_equal)
    logical_and = staticmethod(mx.logical_and)
    logical_or = staticmethod(mx.logical_or)
    logical_xor = staticmethod(mx.logical_xor)

    # more elementwise maths
    arcsin = staticmethod(mx.arcsin)
    arccos = staticmethod(mx.arccos)
    arctan = staticmethod(mx.arctan)
    sinh = staticmethod(mx.sinh)
    cosh = staticmethod(mx.cosh)
    arcsinh = staticmethod(mx.arcsinh)
    arccosh = staticmethod(mx.arccosh)
    arctanh = staticmethod(mx.arctanh)
    log2 = staticmethod(mx.log2)
    log10 = staticmethod(mx.log10)
    erfc = _on_host(numpy_kernels.erfc)
    arctan2 = staticmethod(mx.arctan2)
    hypot = _on_host(np.hypot)
    copysign = _on_host(np.copysign)
    fmod = _on_host(np.fmod)
    nextafter = _on_host(np.nextafter)
    logaddexp = _exact_in_float64(mx.logaddexp, np.logaddexp)
    logaddexp2 = _on_host(np.logaddexp2)
    gcd = _on_host(np.gcd)
    lcm = _on_host(np.lcm)
    bitwise_and = staticmethod(mx.bitwise_and)
    bitwise_or = staticmethod(mx.bitwise_or)
    bitwise_xor = staticmethod(mx.bitwise_xor)
    bitwise_not = staticmethod(mx.bitwise_invert)
    left_shift = _on_host(np.left_shift)
    right_shift = _on_host(np.right_shift)
    frexp = _on_host(lambda a: (np.frexp(a)[0], np.frexp(a)[1].astype(np.int32)))

    @staticmethod
    def where(cond, a, b):
        return mx.where(cond, a, b)

    # reductions
    sum = _reduction(mx.sum, 0, widen=True)
    prod = _reduction(mx.prod, 1, widen=True)
    max = _reduction(mx.max)
    min = _reduction(mx.min)
    all = _reduction(mx.all, True)
    any = _reduction(mx.any, False)

    @staticmethod
    def argmax(a, axis=None, keepdims=False):
        return _arg_reduction(mx.argmax, a, axis, keepdims)

    @staticmethod
    def argmin(a, axis=None, keepdims=False):
        return _arg_reduction(mx.argmin, a, axis, keepdims)

    @staticmethod
    def cumsum(a, axis):
        return mx.cumsum(a.astype(_WIDE_SUM[a.dtype]) if a.dtype in _WIDE_SUM else a, axis=axis)

    @staticmethod
    def cumprod(a, axis):
        return mx.cumprod(a.astype(_WIDE_SUM[a.dtype]) if a.dtype in _WIDE_SUM else a, axis=axis)

    @staticmethod
    def cummax(a, axis):
        return mx.cummax(a, axis=axis)

    @staticmethod
    def cummin(a, axis):
        return mx.cummin(a, axis=axis)

    argsort = _on_host(lambda a, axis: np.argsort(a, axis=axis, kind="stable"))

    # movement: each result is recorded as a view of its input (see _ViewTable)
    @staticmethod
    def reshape(a, shape):
        return _VIEWS.record(a, mx.reshape(a, shape), lambda s: mx.reshape(s, shape))

    @staticmethod
    def permute(a, axes):
        return _VIEWS.record(a, mx.transpose(a, axes), lambda s: mx.transpose(s, axes))

    @staticmethod
    def broadcast_to(a, shape):
        return _VIEWS.record(a, mx.broadcast_to(a, shape), lambda s: mx.broadcast_to(s, shape), writable=False)

    @staticmethod
    def getitem(a, index):
        checked, basic = _index(a, index)
        if checked is None:  # a Python bool in the index: numpy's meaning, on the host
            return _from_host(_host(a)[_host_index(index)])
        if basic:  # ints, slices, None and Ellipsis make views, as in numpy
            return _VIEWS.record(a, a[checked], lambda s: s[checked])
        return a[checked]  # integer arrays and masks make copies, as in numpy

    @_in_place
    def setitem(a, index, value):
        checked = _index(a, index)[0]
        if checked is None:
            host = _host(a)
            host[_host_index(index)] = _host(value)
            a[...] = _from_host(host)
        else:
            try:
                a[checked] = value
            except ValueError:  # numpy drops a value's extra leading 1s; MLX's tuple indexing does not
                if not isinstance(value, mx.array):
                    raise
                while value.ndim > a[checked].ndim and value.shape[0] == 1:
                    value = mx.squeeze(value, 0)
                a[checked] = value

    @_in_place
    def add_at(a, index, values):
        _scatter(a, index, values, 'add')

    @staticmethod
    def positions_in_base(base, view):
        labels = _labels(base.shape)
        for read in _VIEWS.chain(base, view):
            labels = read(labels)
        return mx.array(labels)  # a copy: the positions are not themselves a view of anything

    @_in_place
    def multiply_at(a, index, values):
        _scatter(a, index, values, 'multiply')

    @_in_place
    def maximum_at(a, index, values):
        _scatter(a, index, values, 'maximum')

    @_in_place
    def minimum_at(a, index, values):
        _scatter(a, index, values, 'minimum')

    @staticmethod
    def diagonal(a, offset, axis1, axis2):
        return _VIEWS.record(a, mx.diagonal(a, offset, axis1, axis2), lambda s: mx.diagonal(s, offset, axis1, axis2))

    # isub, iadd, imul: the contract's (op, then setitem), which reaches the views

    @staticmethod
    def concatenate(arrays, axis):
        if builtins.any(a.ndim == 0 for a in arrays):
            raise ValueError("zero-dimensional arrays cannot be concatenated")  # numpy's message
        return mx.concatenate(list(arrays), axis=axis)

    @staticmethod
    def stack(arrays, axis):
        return mx.stack(list(arrays), axis=axis)

    @staticmethod
    def flip(a, axes):
        axes = range(a.ndim) if axes is None else (axes,) if isinstance(axes, int) else axes
        index = [slice(None)] * a.ndim
        for axis in axes:
            index[axis] = slice(None, None, -1)
        return a[tuple(index)]

    @staticmethod
    def roll(a, shifts, axes):
        return mx.roll(a, shifts, axes)

    @staticmethod
    def pad(a, pad_width, value):
        return mx.pad(a, [tuple(w) for w in pad_width], constant_values=value)

    @staticmethod
    def take_along_axis(a, index, axis):
        if index.size:  # MLX reads out of bounds without a word: numpy's IndexError first
            low, high, n = mx.min(index).item(), mx.max(index).item(), a.shape[axis]
            if not (-n <= low and high < n):
                raise IndexError(f"index {high if high >= n else low} is out of bounds for axis {axis} with size {n}")
        return mx.take_along_axis(a, index, axis=axis)

    @staticmethod
    def tril(a, k):
        return mx.tril(a, k)

    @staticmethod
    def triu(a, k):
        return mx.triu(a, k)

    @staticmethod
    def is_contiguous(a):
        """Whether the (emulated) view's elements lie in its root in row-major order without gaps."""
        entry = _VIEWS.source.get(id(a))
        if entry is None:
            return True  # an array of its own: MLX arrays are row-major
        if entry[3] is None:
            positions = mx.reshape(MlxBackend.positions_in_base(_VIEWS.root(a), a), (-1,))
            entry[3] = positions.size == 0 or builtins.bool(
                mx.all(positions == positions[0] + mx.arange(positions.size, dtype=mx.int64)).item())
        return entry[3]

    @staticmethod
    def sliding_windows(a, window_shape, axes, steps, dilation):
        """One strided read of a row-major copy (mx.as_strided), recorded as a read-only view."""
        def read(s):
            strides = [1] * s.ndim
            for axis in range(s.ndim - 2, -1, -1):
                strides[axis] = strides[axis + 1] * s.shape[axis + 1]
            shape, window_strides = list(s.shape), list(strides)
            for ax, k, st, d in zip(axes, window_shape, steps, dilation):
                shape[ax] = (s.shape[ax] - d * (k - 1) - 1) // st + 1
                window_strides[ax] = strides[ax] * st
            shape += window_shape
            window_strides += [strides[ax] * d for ax, d in zip(axes, dilation)]
            return mx.as_strided(mx.contiguous(s), tuple(shape), tuple(window_strides))

        return _VIEWS.record(a, read(a), read, writable=False)

    # fold_windows: the contract's (one slice per tap, added in)

    # linear algebra
    _host_matmul = _on_host(np.matmul)
    _host_einsum = _on_host(lambda subscripts, *arrays: np.einsum(subscripts, *arrays))

    @staticmethod
    def matmul(a, b):
        if not mx.issubdtype(a.dtype, mx.floating):  # integer matrices: numpy's exact integer products
            return MlxBackend._host_matmul(a, b)
        return mx.matmul(a, b)

    @staticmethod
    def einsum(subscripts, *arrays):
        if not mx.issubdtype(arrays[0].dtype, mx.floating):
            out = MlxBackend._host_einsum(subscripts, *arrays)
        else:
            out = mx.einsum(subscripts, *arrays)
        inputs, _, output = subscripts.replace(" ", "").partition("->")
        if len(arrays) == 1 and output and set(inputs) <= set(output):  # nothing summed: a permutation or a
            return _VIEWS.record(arrays[0], out, lambda s: MlxBackend.einsum(subscripts, s))  # diagonal, a view
        return out

    # fused kernels (MLX's own; the rest use the composed fallbacks of the contract)
    def sigmoid(self, a):
        return Backend.sigmoid(self, a) if a.dtype == mx.float64 else mx.sigmoid(a)  # float64: through exact exp

    # --- lazy evaluation made explicit ------------------------------------------------------------

    @staticmethod
    def materialize(arrays):
        """Evaluate these arrays now (and the views of them), so their graphs are cut here."""
        arrays = list(arrays)
        mx.eval(arrays + _VIEWS.live_views(arrays))

    @staticmethod
    def synchronize():
        """Run what is queued: the recent results MLX has not computed yet (and all they depend on)."""
        alive = [a for a in (ref() for ref in _RECENT) if a is not None]
        _RECENT.clear()
        mx.eval(alive)
        mx.synchronize()


# The results synchronize must compute: weak references to the last few arrays each primitive made.
# Everything an array was computed from is evaluated with it, so the most recent results cover the work.
_RECENT = collections.deque(maxlen=64)


def _noting_results(primitive):
    """A primitive (a staticmethod, or a method inherited from the contract) whose results are noted."""
    function = primitive.__func__ if isinstance(primitive, staticmethod) else primitive

    def run(*args, **kwargs):
        out = function(*args, **kwargs)
        if isinstance(out, mx.array):
            _RECENT.append(weakref.ref(out))
        return out

    run.__name__, run.__doc__ = function.__name__, function.__doc__
    return staticmethod(run) if isinstance(primitive, staticmethod) else run


_NOT_ARRAYS = {"native_dtype", "dtype_of", "to_numpy", "is_contiguous", "setitem", "add_at", "multiply_at",
               "maximum_at", "minimum_at"}
for _name in " ".join(PRIMITIVES).split():
    if _name not in _NOT_ARRAYS:
        setattr(MlxBackend, _name, _noting_results(inspect.getattr_static(MlxBackend, _name)))
del _name

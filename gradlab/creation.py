"""Factories: tensors from data, constant tensors, ranges and identity matrices.

They take PyTorch's arguments (``dtype``, ``device``, ``requires_grad``) and give PyTorch's default
dtypes: Python floats make the default float dtype (float32), Python ints make int64, bools bool.
"""

from __future__ import annotations

import math

import numpy as np

from . import dtypes as dt
from .backends.device import backend_for, resolve_device
from .layouts import check_options
from .tensor import Tensor, as_backend_array



def _finish(array, device, requires_grad: bool, op: str) -> Tensor:
    """Wrap a fresh backend array as a leaf tensor; only floating-point leaves may require grad."""
    t = Tensor._from_array(array, device)
    if requires_grad:
        if not t.dtype.is_floating_point:
            raise RuntimeError(
                f"{op}: only Tensors of floating point dtype can require gradients, but this one is {t.dtype.name}; "
                "pass a float dtype (dtype=gradlab.float32) or drop requires_grad=True"
            )
        t.requires_grad = True
    return t


def _size(op: str, size: tuple) -> tuple:
    """Sizes may come as zeros(2, 3), zeros((2, 3)) or zeros([2, 3])."""
    if len(size) == 1 and not isinstance(size[0], (int, np.integer)):
        try:
            size = tuple(size[0])
        except TypeError:
            raise TypeError(f"{op}: size must be integers or a tuple/list of integers, got {size[0]!r}") from None
    for n in size:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"{op}: size must be integers or a tuple/list of integers, got {size!r}")
        if n < 0:
            raise RuntimeError(f"{op}: Trying to create tensor with negative dimension {n}: {list(size)}")
    return tuple(int(n) for n in size)


def _float_default(dtype) -> dt.DType:
    return dt.as_dtype(dtype) if dtype is not None else dt.get_default_dtype()


# --- tensors from data -------------------------------------------------------------------------


def tensor(data, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, a numpy array or a tensor)."""
    check_options("tensor", pin_memory=pin_memory)
    array, device = as_backend_array(data, dtype, device, "tensor", copy=True)
    return _finish(array, device, requires_grad, "tensor")


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a numpy array or tensor when dtype and device allow."""
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    array, device = as_backend_array(data, dtype, device, "as_tensor")
    return Tensor._from_array(array, device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor that shares memory with a numpy array: changes to one show in the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    if array.dtype.name not in dt.NUMPY_NAMES or not array.dtype.isnative:
        raise TypeError(
            f"from_numpy: can't convert np.ndarray of type {array.dtype}. The only supported types are: "
            f"{', '.join(sorted(dt.NUMPY_NAMES))}; convert it first, e.g. array.astype(np.float32)"
        )
    return Tensor._from_array(array, resolve_device("cpu"))


# --- constant tensors --------------------------------------------------------------------------


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False) -> Tensor:
    """A tensor filled with one value; its dtype follows the value (bool, int64 or the default float)."""
    check_options("full", layout, pin_memory)
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    dtype = dt.as_dtype(dtype) if dtype is not None else dt.scalar_dtype(fill_value)
    dt.check_int_fits("full", fill_value, dtype)
    device = resolve_device(device)
    array = backend_for("full", device, dtype).full(_size("full", (size,)), fill_value, dtype)
    return _finish(array, device, requires_grad, "full")


def zeros(*size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False) -> Tensor:
    check_options("zeros", layout, pin_memory)
    device, dtype = resolve_device(device), _float_default(dtype)
    array = backend_for("zeros", device, dtype).zeros(_size("zeros", size), dtype)
    return _finish(array, device, requires_grad, "zeros")


def ones(*size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False) -> Tensor:
    check_options("ones", layout, pin_memory)
    device, dtype = resolve_device(device), _float_default(dtype)
    array = backend_for("ones", device, dtype).ones(_size("ones", size), dtype)
    return _finish(array, device, requires_grad, "ones")


def empty(*size, dtype=None, device=None, requires_grad=False,
          layout=None, pin_memory=False, memory_format=None) -> Tensor:
    """A tensor whose values are whatever was in memory: fill it before reading it."""
    check_options("empty", layout, pin_memory, memory_format)
    device, dtype = resolve_device(device), _float_default(dtype)
    array = backend_for("empty", device, dtype).empty(_size("empty", size), dtype)
    return _finish(array, device, requires_grad, "empty")


def _like(op, fill, input, dtype, device, requires_grad):
    """A tensor of input's shape, dtype and device (each overridable), filled with ``fill`` (None: uninitialised)."""
    device = resolve_device(device) if device is not None else input.device
    dtype = dt.as_dtype(dtype) if dtype is not None else input.dtype
    backend = backend_for(op, device, dtype)
    array = backend.empty(input.shape, dtype) if fill is None else backend.full(input.shape, fill, dtype)
    return _finish(array, device, requires_grad, op)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False,
               layout=None, pin_memory=False, memory_format=None) -> Tensor:
    check_options("zeros_like", layout, pin_memory, memory_format, ndim=input.ndim)
    return _like("zeros_like", 0, input, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False,
              layout=None, pin_memory=False, memory_format=None) -> Tensor:
    check_options("ones_like", layout, pin_memory, memory_format, ndim=input.ndim)
    return _like("ones_like", 1, input, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False,
              layout=None, pin_memory=False, memory_format=None) -> Tensor:
    check_options("full_like", layout, pin_memory, memory_format, ndim=input.ndim)
    return _like("full_like", fill_value, input, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False,
               layout=None, pin_memory=False, memory_format=None) -> Tensor:
    check_options("empty_like", layout, pin_memory, memory_format, ndim=input.ndim)
    return _like("empty_like", None, input, dtype, device, requires_grad)


# --- ranges ------------------------------------------------------------------------------------


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False,
           layout=None, pin_memory=False) -> Tensor:
    """Values from start up to (not including) end; int64 unless an argument is a float.

    There are ceil((end - start) / step) values, start + i * step, so a negative step counts down.
    """
    check_options("arange", layout, pin_memory)
    if end is None:
        start, end = 0, start
    start, end, step = (v.item() if isinstance(v, Tensor) else v for v in (start, end, step))
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(
            f"arange: upper bound and larger bound inconsistent with step sign: start={start}, end={end}, "
            f"step={step} never reaches end; flip the sign of step"
        )
    integral = all(isinstance(v, (int, np.integer)) for v in (start, end, step))
    if dtype is None:
        dtype = dt.int64 if integral else dt.get_default_dtype()
    dtype = dt.as_dtype(dtype)
    device = resolve_device(device)
    backend = backend_for("arange", device, dtype)
    if integral:  # exact, even beyond 2**53
        array = backend.arange(start, end, step, dtype)
    else:
        count = max(0, math.ceil((end - start) / step))
        array = backend.asarray(np.arange(count, dtype=np.float64) * step + start, dtype)
    return _finish(array, device, requires_grad, "arange")


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False) -> Tensor:
    """``steps`` evenly spaced values from start to end, both included."""
    check_options("linspace", layout, pin_memory)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"linspace: steps must be an integer, got {steps!r}")
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    device, dtype = resolve_device(device), _float_default(dtype)
    array = backend_for("linspace", device, dtype).asarray(np.linspace(start, end, steps), dtype)
    return _finish(array, device, requires_grad, "linspace")


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False) -> Tensor:
    """The n×m identity matrix (ones on the diagonal); square when m is not given."""
    check_options("eye", layout, pin_memory)
    m = n if m is None else m
    for name, value in (("n", n), ("m", m)):
        if value < 0:
            raise RuntimeError(f"eye: {name} must be greater or equal to 0, got {value}")
    device, dtype = resolve_device(device), _float_default(dtype)
    array = backend_for("eye", device, dtype).asarray(np.eye(n, m), dtype)
    return _finish(array, device, requires_grad, "eye")


def _triangle_indices(op, keep, row, col, offset, dtype, device) -> Tensor:
    for name, value in (("row", row), ("col", col)):
        if value < 0:
            raise RuntimeError(f"{op}: {name} must be non-negative, got {value}")
    rows, cols = np.nonzero(keep(np.ones((row, col), dtype=bool), offset))
    device, dtype = resolve_device(device), dt.int64 if dtype is None else dt.as_dtype(dtype)
    array = backend_for(op, device, dtype).asarray(np.stack([rows, cols]), dtype)
    return _finish(array, device, False, op)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (row, column) pairs of a row × col matrix's lower triangle (on and below the offset-th diagonal),
    as a 2 × N int64 tensor, row by row: x[tuple(tril_indices(n, n))] reads that triangle."""
    return _triangle_indices("tril_indices", np.tril, row, col, offset, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None) -> Tensor:
    """The (row, column) pairs of a row × col matrix's upper triangle (on and above the offset-th diagonal)."""
    return _triangle_indices("triu_indices", np.triu, row, col, offset, dtype, device)

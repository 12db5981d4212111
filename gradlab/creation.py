"""Factories: tensors from data, constant tensors, ranges and identity matrices.

They take PyTorch's arguments (``dtype``, ``device``, ``requires_grad``) and give PyTorch's default
dtypes: Python floats make the default float dtype (float32), Python ints make int64.
"""

from __future__ import annotations

import math

import numpy as np

from . import dtypes as dt
from .backends.device import resolve_device
from .tensor import Tensor, as_backend_array


def _finish(array, device, requires_grad: bool) -> Tensor:
    t = Tensor._from_array(array, device)
    return t.requires_grad_(True) if requires_grad else t


def _size(size) -> tuple:
    """Sizes may come as zeros(2, 3), zeros((2, 3)) or zeros([2, 3])."""
    if len(size) == 1 and not isinstance(size[0], int):
        size = tuple(size[0])
    for n in size:
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
            raise TypeError(f"sizes must be integers, got {size!r}")
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(size)}")
    return tuple(int(n) for n in size)


def tensor(data, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, a numpy array or a tensor)."""
    array, device = as_backend_array(data, dtype, device, "tensor")
    if isinstance(data, (np.ndarray, Tensor)) and device.type == "cpu":
        array = array.copy() if np.shares_memory(array, np.asarray(data)) else array
    return _finish(array, device, requires_grad)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a numpy array or tensor when dtype and device allow."""
    if isinstance(data, Tensor) and (dtype is None or dt.as_dtype(dtype) is data.dtype) and (
        device is None or resolve_device(device) is data.device
    ):
        return data
    array, device = as_backend_array(data, dtype, device, "as_tensor")
    return Tensor._from_array(array, device)


def from_numpy(array: np.ndarray) -> Tensor:
    """A CPU tensor that shares memory with a numpy array: changes to one show in the other."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {type(array).__name__})")
    if array.dtype.kind == "f" and array.dtype.name not in ("float16", "float32", "float64") or array.dtype.kind not in "fiub":
        raise TypeError(f"from_numpy: can't convert np.ndarray of type {array.dtype}; supported: bool, int32, int64, float16, float32, float64")
    if array.dtype.kind in "iu" and array.dtype.name not in ("int32", "int64"):
        raise TypeError(f"from_numpy: numpy {array.dtype} has no gradlab dtype; convert it first, e.g. array.astype(np.int64)")
    return Tensor._from_array(array, resolve_device("cpu"))


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value.item() if isinstance(fill_value, Tensor) else fill_value)
    device = resolve_device(device)
    return _finish(device.backend.full(_size((size,) if isinstance(size, int) else (tuple(size),)), fill_value, dt.as_dtype(dtype)), device, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = resolve_device(device)
    return _finish(device.backend.zeros(_size(size), dt.as_dtype(dtype or dt.get_default_dtype())), device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = resolve_device(device)
    return _finish(device.backend.ones(_size(size), dt.as_dtype(dtype or dt.get_default_dtype())), device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    device = resolve_device(device)
    return _finish(device.backend.empty(_size(size), dt.as_dtype(dtype or dt.get_default_dtype())), device, requires_grad)


def _like(fill, input, dtype, device, requires_grad):
    device = resolve_device(device) if device is not None else input.device
    dtype = dt.as_dtype(dtype) if dtype is not None else input.dtype
    return _finish(device.backend.full(input.shape, fill, dtype), device, requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(0, input, dtype, device, requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(1, input, dtype, device, requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(fill_value, input, dtype, device, requires_grad)


def empty_like(input, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    return _like(0, input, dtype, device, requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values from start up to (not including) end; int64 unless an argument is a float."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError(f"arange: upper bound and larger bound inconsistent with step sign (start={start}, end={end}, step={step})")
    if dtype is None:
        dtype = dt.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else dt.int64
    dtype = dt.as_dtype(dtype)
    device = resolve_device(device)
    count = max(0, math.ceil((end - start) / step))
    array = device.backend.asarray(np.arange(count, dtype=np.float64) * step + start, dtype)
    return _finish(array, device, requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from start to end, both included."""
    if steps < 0:
        raise RuntimeError(f"linspace: number of steps must be non-negative, got {steps}")
    device = resolve_device(device)
    array = device.backend.asarray(np.linspace(start, end, steps), dt.as_dtype(dtype or dt.get_default_dtype()))
    return _finish(array, device, requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The n×m identity matrix (ones on the diagonal)."""
    device = resolve_device(device)
    array = device.backend.asarray(np.eye(n, m), dt.as_dtype(dtype or dt.get_default_dtype()))
    return _finish(array, device, requires_grad)

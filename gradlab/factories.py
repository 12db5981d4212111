"""More of PyTorch's factories: ``scalar_tensor``, ``asarray``, ``frombuffer``, ``empty_strided``, ``logspace``
and the signal windows (``hann_window``, ``hamming_window``, ``blackman_window``, ``bartlett_window``,
``kaiser_window``).

The values are computed in float64 with numpy and then put in the requested dtype, as the other
factories in ``creation`` are. A periodic window of length N is the symmetric one of length N + 1
without its last point (the form a spectrogram wants).
"""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .backends.device import backend_for, resolve_device
from .creation import _finish, _float_default, _size, as_tensor, from_numpy
from .layouts import check_options
from .tensor import Tensor


def _native(dtype) -> np.dtype:
    return dt.numpy_bfloat16() if dtype is dt.bfloat16 else np.dtype(dtype.name)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False) -> Tensor:
    """A 0-d tensor holding ``s``, in the default float dtype unless ``dtype`` says otherwise (as torch)."""
    check_options("scalar_tensor", layout, pin_memory)
    device, dtype = resolve_device(device), _float_default(dtype)
    array = backend_for("scalar_tensor", device, dtype).asarray(np.asarray(s), dtype)
    return _finish(array, device, requires_grad, "scalar_tensor")


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=False) -> Tensor:
    """A tensor from ``obj``, sharing its memory when dtype and device allow (``copy=None``), always copying
    (``copy=True``), or refusing to copy (``copy=False``)."""
    out = as_tensor(obj, dtype=dtype, device=device)
    aliased = isinstance(obj, (Tensor, np.ndarray)) and _same_memory(obj, out)
    if copy is True and aliased:
        out = out.detach().clone()
    elif copy is False and not aliased:
        raise ValueError(f"asarray: can't alias {type(obj).__name__} with the requested dtype/device without a "
                         "copy; pass copy=None (copy only if needed) or copy=True")
    if requires_grad:
        out = (out.detach() if out is obj else out).requires_grad_(True)
    return out


def _same_memory(obj, out) -> bool:
    if isinstance(obj, Tensor):
        return obj.array is out.array or np.shares_memory(obj.array, out.array)
    return np.shares_memory(obj, out.array)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False) -> Tensor:
    """A 1-D CPU tensor over the bytes of a Python buffer (bytes, bytearray, memoryview, array.array),
    sharing its memory: ``count`` elements of ``dtype`` starting ``offset`` bytes in (-1: all that fit)."""
    dtype = dt.as_dtype(dtype)
    length = memoryview(buffer).nbytes
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % dtype.itemsize:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({dtype.itemsize})")
        count = (length - offset) // dtype.itemsize
    elif offset + count * dtype.itemsize > length:
        raise ValueError(f"requested buffer length ({count} * {dtype.itemsize} bytes) after offset ({offset} bytes) "
                         f"must not be greater than actual buffer length ({length} bytes)")
    t = from_numpy(np.frombuffer(buffer, dtype=_native(dtype), count=count, offset=offset))
    return t.requires_grad_(True) if requires_grad else t


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False,
                  layout=None, pin_memory=False) -> Tensor:
    """An uninitialised tensor with the given strides (in elements), laid over just enough memory."""
    check_options("empty_strided", layout, pin_memory)
    size, stride = _size("empty_strided", (size,)), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"empty_strided: mismatch in length of strides and shape: size {list(size)} has "
                           f"{len(size)} dimensions, stride {list(stride)} has {len(stride)}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"empty_strided: as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    device = resolve_device(device)
    if device.type != "cpu":
        raise RuntimeError(f"empty_strided: strides can be chosen on 'cpu' only (got device '{device}'); use "
                           "gradlab.empty there")
    dtype = _float_default(dtype) if dtype is None or dt.as_dtype(dtype).is_floating_point else dt.as_dtype(dtype)
    storage = 0 if 0 in size else 1 + sum((n - 1) * s for n, s in zip(size, stride))
    native = _native(dtype)
    base = np.empty(storage, dtype=native)
    array = np.lib.stride_tricks.as_strided(base, size, tuple(s * native.itemsize for s in stride))
    return _finish(array, device, requires_grad, "empty_strided")


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False,
             layout=None, pin_memory=False) -> Tensor:
    """``steps`` values from base**start to base**end, evenly spaced in the exponent."""
    check_options("logspace", layout, pin_memory)
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"logspace: steps must be an integer, got {steps!r}")
    if steps < 0:
        raise RuntimeError(f"logspace: number of steps must be non-negative, got {steps}")
    device, dtype = resolve_device(device), _float_default(dtype)
    values = np.power(float(base), np.linspace(float(start), float(end), steps))
    return _finish(backend_for("logspace", device, dtype).asarray(values, dtype), device, requires_grad, "logspace")


# --- windows -------------------------------------------------------------------------------------------


def _window(op, symmetric, window_length, periodic, dtype, device, requires_grad) -> Tensor:
    """A window from its symmetric form ``symmetric(n)`` (length n, float64 numpy)."""
    if isinstance(window_length, bool) or not isinstance(window_length, (int, np.integer)) or window_length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got window_length={window_length}")
    if dtype is not None and not dt.as_dtype(dtype).is_floating_point:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dt.as_dtype(dtype).name}")
    if window_length <= 1:
        values = np.ones(window_length)
    else:
        values = symmetric(window_length + 1)[:-1] if periodic else symmetric(window_length)
    device, dtype = resolve_device(device), _float_default(dtype)
    return _finish(backend_for(op, device, dtype).asarray(values, dtype), device, requires_grad, op)


def _cosine_sum(*coefficients):
    """a0 - a1 cos(2πn/(N-1)) + a2 cos(4πn/(N-1)) - ...: the family of hann, hamming and blackman."""
    def window(n):
        phase = 2 * np.pi * np.arange(n) / (n - 1)
        return sum((-1) ** k * a * np.cos(k * phase) for k, a in enumerate(coefficients))

    return window


def hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False,
                layout=None, pin_memory=False) -> Tensor:
    """0.5 - 0.5 cos(2πn/(N-1))."""
    check_options("hann_window", layout, pin_memory)
    return _window("hann_window", _cosine_sum(0.5, 0.5), window_length, periodic, dtype, device, requires_grad)


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, device=None,
                   requires_grad=False,
                   layout=None, pin_memory=False) -> Tensor:
    """alpha - beta cos(2πn/(N-1))."""
    check_options("hamming_window", layout, pin_memory)
    return _window("hamming_window", _cosine_sum(alpha, beta), window_length, periodic, dtype, device, requires_grad)


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False,
                    layout=None, pin_memory=False) -> Tensor:
    """0.42 - 0.5 cos(2πn/(N-1)) + 0.08 cos(4πn/(N-1))."""
    check_options("blackman_window", layout, pin_memory)
    return _window("blackman_window", _cosine_sum(0.42, 0.5, 0.08), window_length, periodic, dtype, device,
                   requires_grad)


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False,
                    layout=None, pin_memory=False) -> Tensor:
    """The triangle ``1 - |2n/(N-1) - 1|``."""
    check_options("bartlett_window", layout, pin_memory)
    return _window("bartlett_window", lambda n: 1 - np.abs(2 * np.arange(n) / (n - 1) - 1), window_length, periodic,
                   dtype, device, requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None, requires_grad=False,
                  layout=None, pin_memory=False) -> Tensor:
    """I0(beta sqrt(1 - (2n/(N-1) - 1)²)) / I0(beta), with I0 the modified Bessel function of order 0."""
    check_options("kaiser_window", layout, pin_memory)
    return _window("kaiser_window", lambda n: np.kaiser(n, beta), window_length, periodic, dtype, device,
                   requires_grad)

"""DLPack: tensors shared with other libraries (numpy, PyTorch, CuPy, MLX) without a copy where both allow.

DLPack is the common description of an array in memory: where it lives (a device type and index),
its dtype, shape and strides. ``gradlab.from_dlpack(x)`` makes a gradlab tensor over another
library's memory, and ``torch.from_dlpack(t)`` / ``np.from_dlpack(t)`` / ``cupy.from_dlpack(t)`` do the
reverse through ``Tensor.__dlpack__``. Where memory is shared, each side sees the other's writes.

What is shared and what is copied:

* host memory (numpy, PyTorch on the CPU, gradlab 'cpu'): shared both ways;
* an MLX array becomes a tensor on gradlab's 'mlx' device holding that same array (on the 'cpu'
  device as a read-only numpy view when the 'mlx' backend does not load); the other way, MLX 0.32
  copies whatever it imports (``mx.from_dlpack`` cannot import host memory without a copy), while
  PyTorch imports an MLX-backed tensor without one;
* GPU memory (CuPy, PyTorch on CUDA) becomes a 'cuda:N' tensor over the same memory, read through
  ``__cuda_array_interface__`` (numba's ``cuda.as_cuda_array``); a 'cuda' tensor exports through its
  array's own ``__dlpack__``, or through CuPy over ``__cuda_array_interface__`` when it has none.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .backends.device import resolve_device
from .backends.interop import cupy_or_explain
from .tensor import Tensor

# DLPack's device type codes (dlpack.h, DLDeviceType)
CPU, CUDA, CUDA_HOST, METAL, CUDA_MANAGED = 1, 2, 3, 8, 13


def from_dlpack(ext_tensor) -> Tensor:
    """A tensor over ``ext_tensor``'s memory (anything with ``__dlpack__``), on the device that memory is on."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        kind = "a raw DLPack capsule" if type(ext_tensor).__name__ == "PyCapsule" else type(ext_tensor).__name__
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a torch tensor, a numpy array, ...), got "
                        f"{kind}; pass the tensor itself rather than a capsule made by to_dlpack")
    kind, index = ext_tensor.__dlpack_device__() if hasattr(ext_tensor, "__dlpack_device__") else (CPU, 0)
    if _is_mlx(ext_tensor) and kind in (CPU, METAL) and _loads("mlx"):
        return _wrap(ext_tensor, resolve_device("mlx"))
    if kind in (CPU, CUDA_HOST):
        return _from_host(ext_tensor)
    if kind in (CUDA, CUDA_MANAGED):
        return _from_cuda(ext_tensor, index)
    raise RuntimeError(f"from_dlpack: a {type(ext_tensor).__name__} on DLPack device type {kind} (index {index}) has "
                       "no gradlab device; move it to the CPU first (e.g. .cpu())")


def _from_host(ext_tensor) -> Tensor:
    try:
        array = np.from_dlpack(ext_tensor)
    except (BufferError, RuntimeError, TypeError, ValueError) as error:
        raise RuntimeError(f"from_dlpack: can't share a {type(ext_tensor).__name__} with gradlab's CPU backend "
                           f"({error}); move it to the CPU first (e.g. .cpu())") from None
    if array.dtype.name not in dt.NUMPY_NAMES:
        raise TypeError(f"from_dlpack: a {type(ext_tensor).__name__} of dtype {array.dtype} has no gradlab dtype; "
                        f"supported: {', '.join(sorted(dt.NUMPY_NAMES))}")
    return Tensor._from_array(array, resolve_device("cpu"))


def _from_cuda(ext_tensor, index: int) -> Tensor:
    """GPU memory as a 'cuda:N' tensor: numba reads the producer's __cuda_array_interface__ (no copy)."""
    device = resolve_device(f"cuda:{index}")
    device.backend  # noqa: B018  (no GPU, no package: the cuda backend's own error, before anything else)
    source = ext_tensor
    if not hasattr(source, "__cuda_array_interface__"):  # DLPack only: let CuPy read it, then share CuPy's view
        source = cupy_or_explain("from_dlpack", ext_tensor).from_dlpack(ext_tensor)
    from numba import cuda

    return _wrap(cuda.as_cuda_array(source), device)


def _wrap(array, device) -> Tensor:
    dtype = device.backend.dtype_of(array)  # an array dtype gradlab lacks fails here, naming it
    if dtype not in device.backend.supported_dtypes:
        raise TypeError(f"from_dlpack: the '{device}' device has no {dtype.name}; convert it on the producer's side")
    return Tensor._from_array(array, device)


def _is_mlx(obj) -> bool:
    return type(obj).__module__.partition(".")[0] == "mlx"


def _loads(device_type: str) -> bool:
    try:
        resolve_device(device_type).backend  # noqa: B018
    except RuntimeError:
        return False
    return True


def to_dlpack(tensor: Tensor):
    """The DLPack capsule of a tensor, for consumers that take capsules (``torch.utils.dlpack.from_dlpack``)."""
    return tensor.__dlpack__()


__all__ = ["from_dlpack", "to_dlpack"]

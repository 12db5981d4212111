"""DLPack: tensors shared with other libraries (numpy, PyTorch, CuPy, MLX) without a copy.

DLPack is the common description of an array in memory: where it lives, its dtype, shape and
strides. ``gradlab.from_dlpack(t)`` makes a gradlab tensor over another library's memory, and
``torch.from_dlpack(x)`` (or ``np.from_dlpack(x)``) does the reverse with a gradlab tensor, through
``Tensor.__dlpack__``. Both sides then see each other's writes.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .backends.device import resolve_device
from .tensor import Tensor


def from_dlpack(ext_tensor) -> Tensor:
    """A CPU tensor sharing memory with ``ext_tensor`` (anything with ``__dlpack__``: a torch tensor, a numpy array)."""
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    if not hasattr(ext_tensor, "__dlpack__"):
        kind = "a raw DLPack capsule" if type(ext_tensor).__name__ == "PyCapsule" else type(ext_tensor).__name__
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ (a torch tensor, a numpy array, ...), got "
                        f"{kind}; pass the tensor itself rather than a capsule made by to_dlpack")
    try:
        array = np.from_dlpack(ext_tensor)
    except (BufferError, RuntimeError, TypeError, ValueError) as error:
        raise RuntimeError(f"from_dlpack: can't share a {type(ext_tensor).__name__} with gradlab's CPU backend "
                           f"({error}); move it to the CPU first (e.g. .cpu())") from None
    if array.dtype.name not in dt.NUMPY_NAMES:
        raise TypeError(f"from_dlpack: a {type(ext_tensor).__name__} of dtype {array.dtype} has no gradlab dtype; "
                        f"supported: {', '.join(sorted(dt.NUMPY_NAMES))}")
    return Tensor._from_array(array, resolve_device("cpu"))


def to_dlpack(tensor: Tensor):
    """The DLPack capsule of a tensor, for consumers that take capsules (``torch.utils.dlpack.from_dlpack``)."""
    return tensor.__dlpack__()


__all__ = ["from_dlpack", "to_dlpack"]

"""How a device's arrays are handed to other libraries through DLPack, and what CuPy adds on a GPU.

A tensor's ``__dlpack__`` asks ``dlpack_source`` for the object that describes its memory: a numpy
array on 'cpu', the backend's own array where that array speaks DLPack (MLX, CuPy), and on a GPU
whose arrays offer only ``__cuda_array_interface__`` (numba's), a CuPy view over that same memory.
"""

from __future__ import annotations


def dlpack_source(device, array):
    """The object whose ``__dlpack__`` describes ``array`` (on ``device``) without copying it."""
    backend = device.backend
    backend.synchronize()  # queued (or lazy) work lands before another library reads the memory
    if device.type == "cpu":
        return backend.to_numpy(array)
    if hasattr(array, "__dlpack__"):
        return array
    if hasattr(array, "__cuda_array_interface__"):
        return cupy_or_explain(f"exporting a '{device}' tensor", array).asarray(array)  # a view: no copy
    raise TypeError(f"__dlpack__: the '{device}' device's arrays ({type(array).__name__}) have no DLPack export; "
                    "move the tensor first with .cpu()")


def cupy_or_explain(what: str, obj):
    """CuPy, imported on first use, or a TypeError saying what it was needed for and the ways around it."""
    try:
        import cupy
    except ImportError:
        raise TypeError(f"{what}: sharing a {type(obj).__name__} through DLPack needs CuPy, which is not installed "
                        "(pip install cupy-cuda12x); without it, torch.as_tensor(t, device='cuda') and "
                        "cupy.asarray(t) read a 'cuda' tensor's __cuda_array_interface__ directly") from None
    return cupy

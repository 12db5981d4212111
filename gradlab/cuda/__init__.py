"""``gradlab.cuda``: what PyTorch scripts ask before they choose a device, and how they time GPU work.

``device = "cuda" if gradlab.cuda.is_available() else "cpu"`` works unchanged: the answer is True
only when the CUDA backend can be loaded here (it needs ``pip install "gradlab[cuda]"`` and a GPU, or
numba's simulator: ``NUMBA_ENABLE_CUDASIM=1``, which ``is_simulated()`` reports). Without numba-cuda
every question is answered without importing anything. gradlab drives one GPU, device 0.

Not here: ``memory_allocated()``: numba's allocator does not count the bytes it hands out, so there
is no honest figure to give; ``mem_get_info()`` gives the device's free and total memory instead.
"""

from __future__ import annotations

import functools

from ..backends.device import _load_backend
from ..random import manual_seed
from .events import Event, Stream, _driver, _driver_missing


@functools.lru_cache(maxsize=1)
def is_available() -> bool:
    """True if tensors can be put on 'cuda' in this process (a GPU, or numba's simulator)."""
    import importlib.util

    if importlib.util.find_spec("numba_cuda") is None:  # the cheap answer: nothing to import
        return False
    try:
        _load_backend("cuda")
    except (RuntimeError, ImportError, OSError):
        return False
    return not _driver_missing()


def is_simulated() -> bool:
    """True when 'cuda' is numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): the kernels run as Python
    threads on the host, correct but slow: for tests and for reading, not for speed."""
    if not is_available():
        return False
    from numba import cuda

    return bool(cuda.config.ENABLE_CUDASIM)


def device_count() -> int:
    """How many CUDA devices gradlab uses: one when available (gradlab drives a single GPU)."""
    return 1 if is_available() else 0


def _index(op, device) -> int:
    """The GPU index a device argument names (an int, 'cuda', 'cuda:0' or a gradlab.device)."""
    if device is None:
        return 0
    if isinstance(device, int) and not isinstance(device, bool):
        index = device
    else:
        from ..backends.device import Device

        found = Device(device)
        if found.type != "cuda":
            raise ValueError(f"gradlab.cuda.{op}: expected a CUDA device, got '{found}'")
        index = found.index or 0
    if not 0 <= index < max(device_count(), 1):
        raise RuntimeError(f"gradlab.cuda.{op}: invalid device ordinal {index}: gradlab drives one GPU, device 0")
    return index


def current_device() -> int:
    """The index of the GPU in use: always 0."""
    _driver("current_device")
    return 0


def set_device(device) -> None:
    """Choose the GPU to use; gradlab drives one, so only device 0 (or 'cuda', 'cuda:0') is accepted."""
    _driver("set_device")
    _index("set_device", device)


def get_device_name(device=None) -> str:
    """The GPU's name as its driver reports it ('numba CUDA simulator' under the simulator)."""
    cuda = _driver("get_device_name")
    _index("get_device_name", device)
    name = getattr(cuda.get_current_device(), "name", None)
    if name is None:
        return "numba CUDA simulator"
    return name.decode() if isinstance(name, bytes) else str(name)


def get_device_capability(device=None) -> tuple:
    """(major, minor) compute capability of the GPU."""
    cuda = _driver("get_device_capability")
    _index("get_device_capability", device)
    return tuple(cuda.get_current_device().compute_capability)


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the GPU's memory, for the whole device (numba's simulator reports infinity)."""
    cuda = _driver("mem_get_info")
    _index("mem_get_info", device)
    free, total = cuda.current_context().get_memory_info()
    return free, total


def synchronize(device=None) -> None:
    """Wait for queued GPU work to finish (a no-op when CUDA is not available)."""
    if is_available():
        _load_backend("cuda").synchronize()


def current_stream(device=None) -> Stream:
    """The stream gradlab's kernels are queued on: the default stream."""
    cuda = _driver("current_stream")
    return Stream(_numba=cuda.default_stream())


default_stream = current_stream


def manual_seed_all(seed: int) -> None:
    """Seeds the one generator gradlab draws from on every device (the GPU's generators are seeded from it)."""
    manual_seed(seed)


def __getattr__(name):
    """``gradlab.cuda.amp`` (PyTorch's older spelling of gradlab.amp) loads on first use: it is built on
    gradlab.amp, which asks this module whether CUDA is available."""
    if name == "amp":
        import importlib

        return importlib.import_module(".amp", __name__)
    raise AttributeError(f"module 'gradlab.cuda' has no attribute {name!r}")


__all__ = ["Event", "Stream", "amp", "current_device", "current_stream", "default_stream", "device_count",
           "get_device_capability", "get_device_name", "is_available", "is_simulated", "manual_seed",
           "manual_seed_all", "mem_get_info", "set_device", "synchronize"]

"""``gradlab.cuda``: what PyTorch scripts ask before they choose a device.

``device = "cuda" if gradlab.cuda.is_available() else "cpu"`` works unchanged: the answer is True
only when the CUDA backend can be loaded here (it needs ``pip install "gradlab[cuda]"`` and a GPU).
"""

from __future__ import annotations

import functools

from ..backends.device import _load_backend
from ..random import manual_seed


@functools.lru_cache(maxsize=1)
def is_available() -> bool:
    """True if tensors can be put on 'cuda' in this process."""
    try:
        _load_backend("cuda")
    except (RuntimeError, ImportError, OSError):
        return False
    return True


def device_count() -> int:
    """How many CUDA devices gradlab uses: one when available (gradlab drives a single GPU)."""
    return 1 if is_available() else 0


def synchronize(device=None) -> None:
    """Wait for queued GPU work to finish (a no-op when CUDA is not available)."""
    if is_available():
        _load_backend("cuda").synchronize()


def manual_seed_all(seed: int) -> None:
    """Seeds the one generator gradlab draws from on every device."""
    manual_seed(seed)


def __getattr__(name):
    """``gradlab.cuda.amp`` (PyTorch's older spelling of gradlab.amp) loads on first use: it is built on
    gradlab.amp, which asks this module whether CUDA is available."""
    if name == "amp":
        import importlib

        return importlib.import_module(".amp", __name__)
    raise AttributeError(f"module 'gradlab.cuda' has no attribute {name!r}")


__all__ = ["amp", "device_count", "is_available", "manual_seed", "manual_seed_all", "synchronize"]

"""``gradlab.backends.cudnn``: PyTorch's cuDNN switches, kept so training scripts run unchanged.

``cudnn.benchmark = True`` and ``cudnn.deterministic = True`` are the first lines of many scripts
(PyTorch's ImageNet example among them). gradlab has no cuDNN: the flags are plain module
attributes you may set and read back, and they change nothing on the numpy CPU backend, which
computes the same way every time (so it is already deterministic).
"""

from __future__ import annotations

import contextlib

enabled = True  # use cuDNN where it is available (never, here)
benchmark = False  # let cuDNN time several algorithms and keep the fastest
benchmark_limit = None  # how many algorithms benchmark mode tries (None, as PyTorch reports without cuDNN)
deterministic = False  # ask cuDNN for deterministic algorithms only
allow_tf32 = True  # let cuDNN convolutions use TensorFloat-32 on Ampere GPUs

_FLAGS = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")


def is_available() -> bool:
    """False: gradlab has no cuDNN, whatever the machine."""
    return False


def version():
    """None, as PyTorch answers when cuDNN is not available."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take this tensor: never, since there is no cuDNN."""
    return False


@contextlib.contextmanager
def flags(enabled=False, benchmark=False, benchmark_limit=10, deterministic=False, allow_tf32=True):
    """Set the flags inside a ``with`` block and put the old values back after it (PyTorch's defaults)."""
    module = globals()
    saved = {name: module[name] for name in _FLAGS}
    module.update(enabled=enabled, benchmark=benchmark, benchmark_limit=benchmark_limit,
                  deterministic=deterministic, allow_tf32=allow_tf32)
    try:
        yield
    finally:
        module.update(saved)

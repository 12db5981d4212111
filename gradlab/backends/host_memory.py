"""Keep freed host memory for reuse, so each training step does not fault its arrays in anew.

numpy allocates every array through the C library's malloc. glibc returns large freed blocks to
the operating system at once, so the next step's arrays of the same sizes arrive as fresh pages
and each page costs a fault on first touch — measured here as up to half of a small CNN's step.
PyTorch avoids this with a caching allocator of its own; gradlab asks glibc to keep up to
256 MiB of freed memory instead. Set GRADLAB_KEEP_FREED_MEMORY=0 to leave malloc as it was.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers
_M_MMAP_THRESHOLD = -3


def keep_freed_memory(trim_threshold: int = 256 << 20, mmap_threshold: int = 32 << 20) -> bool:
    """Raise glibc's trim and mmap thresholds; True if it took effect (False off glibc, or opted out)."""
    if os.environ.get("GRADLAB_KEEP_FREED_MEMORY", "1") == "0":
        return False
    name = ctypes.util.find_library("c")
    if not name:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):  # not glibc (macOS, musl, Windows): nothing to tune
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold))

"""Keep freed host memory for reuse, so each training step does not fault its arrays in anew.

numpy allocates every array through the C library's malloc. glibc returns large freed blocks to
the operating system at once, so the next step's arrays of the same sizes arrive as fresh pages
and each page costs a fault on first touch — measured here as up to half of a small CNN's step.
PyTorch avoids this with a caching allocator of its own; gradlab asks glibc to keep up to
256 MiB of freed memory instead.

This is a process-wide choice, made in one place: ``gradlab.backends.device`` calls
``keep_freed_memory()`` once, when the 'cpu' backend first loads. Set the environment variable
``GRADLAB_KEEP_FREED_MEMORY=0`` (before that) to leave malloc as it was.
"""

from __future__ import annotations

import ctypes
import os

ENV_VAR = "GRADLAB_KEEP_FREED_MEMORY"
_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers
_M_MMAP_THRESHOLD = -3

kept: bool | None = None  # whether the choice took effect (None until it was made)


def keep_freed_memory(trim_threshold: int = 256 << 20, mmap_threshold: int = 32 << 20) -> bool:
    """Raise glibc's trim and mmap thresholds; True if it took effect (False off glibc, or opted out)."""
    global kept
    if os.environ.get(ENV_VAR, "1") == "0":
        kept = False
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library the process already runs on
    except (OSError, AttributeError, TypeError):  # not glibc (macOS, musl, Windows): nothing to tune
        kept = False
        return False
    kept = bool(mallopt(_M_MMAP_THRESHOLD, mmap_threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, trim_threshold))
    return kept

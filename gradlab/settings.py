"""Process-wide switches that PyTorch scripts set at the top: threads, determinism, matmul precision, warnings.

What each one does on gradlab's numpy backend is said where it is defined. Most are answered
honestly and remembered: the numpy backend is already deterministic and computes float32 products
in full float32, so the switches that trade exactness for speed have nothing to trade.
"""

from __future__ import annotations

import os
import warnings

from .autograd import anomaly as _anomaly
from .autograd import observers as _observers
from .backends.device import default_device

# --- threads --------------------------------------------------------------------------------------------

_threads = {"intra": os.cpu_count() or 1, "interop": os.cpu_count() or 1}


def _positive(op: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RuntimeError(f"{op} expects a positive integer, got {value!r}")
    return value


def get_num_threads() -> int:
    """The threads the CPU backend's matrix products may use (the core count unless set)."""
    return _threads["intra"]


def set_num_threads(int) -> None:  # noqa: A002  (PyTorch names the parameter 'int')
    """Limit numpy's BLAS to that many threads (through threadpoolctl when it is installed; gradlab's
    own Python code runs in the calling thread)."""
    num = _threads["intra"] = _positive("set_num_threads", int)
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # without it numpy's BLAS keeps the count it read from OMP_NUM_THREADS at start
        return
    threadpool_limits(limits=num, user_api="blas")


def get_num_interop_threads() -> int:
    """The threads for running independent ops in parallel: gradlab runs ops one after another."""
    return _threads["interop"]


def set_num_interop_threads(int) -> None:  # noqa: A002  (PyTorch names the parameter 'int')
    """Remembered for ``get_num_interop_threads``; gradlab runs ops one after another whatever it is."""
    _threads["interop"] = _positive("set_num_interop_threads", int)


# --- determinism --------------------------------------------------------------------------------------------

_determinism = {"enabled": False, "warn_only": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Ask for deterministic algorithms only. Every gradlab CPU op already gives the same bits on every
    run (no atomics, no algorithm search), so there is nothing to refuse; the setting is remembered."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' must be bool, not {type(mode).__name__}")
    _determinism.update(enabled=mode, warn_only=bool(warn_only))


def are_deterministic_algorithms_enabled() -> bool:
    return _determinism["enabled"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _determinism["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """0/'default' (off), 1/'warn' (on, warn only), 2/'error' (on): PyTorch's shorthand for the above."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _determinism["enabled"]:
        return 0
    return 1 if _determinism["warn_only"] else 2


# --- float32 matrix products ----------------------------------------------------------------------------------

_matmul_precision = {"value": "highest"}


def get_float32_matmul_precision() -> str:
    return _matmul_precision["value"]


def set_float32_matmul_precision(precision: str) -> None:
    """'highest', 'high' or 'medium': on GPUs the lower ones allow TF32/bfloat16 products. numpy's BLAS
    computes float32 products in float32 whatever is set, so 'highest' is what you always get."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", stacklevel=2)
        return
    _matmul_precision["value"] = precision


# --- warnings, anomaly mode, the default device ---------------------------------------------------------------

_warn_always = {"value": False}


def set_warn_always(b: bool) -> None:
    """PyTorch warns some things only once per process; with this set it would warn every time. gradlab's
    own warnings come through Python's ``warnings`` module, whose filters decide that (``warnings.simplefilter``)."""
    _warn_always["value"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _warn_always["value"]


_anomaly_handle = []


def set_anomaly_enabled(mode: bool, check_nan: bool = True) -> None:
    """Switch ``detect_anomaly`` on or off for the rest of the program, rather than for a ``with`` block."""
    on = bool(mode) and bool(check_nan)
    _anomaly.anomaly_state.enabled = on
    if on and not _anomaly_handle:
        _anomaly_handle.append(_observers.subscribe(_anomaly._remember_forward, all_threads=True))
    elif not on and _anomaly_handle:
        _anomaly_handle.pop().remove()


def is_anomaly_enabled() -> bool:
    return _anomaly.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """gradlab's anomaly mode is its NaN check, so this is the same answer as ``is_anomaly_enabled``."""
    return _anomaly.is_anomaly_enabled()


def get_default_device():
    """The device new tensors go to (``gradlab.set_default_device`` changes it)."""
    return default_device()

"""``gradlab.autocast``: a ``with`` block (or decorator) that runs the marked ops in lower precision.

Entering saves this thread's autocast switches for the device type and sets new ones; leaving puts
them back (and drops the cache of cast weights when the outermost region closes). Which ops change
dtype is decided where they are defined, by ``gradlab.ops.autocast.autocast_op``.
"""

from __future__ import annotations

import collections.abc
import functools
import warnings

from .. import cuda
from .. import dtypes as dt
from ..autograd.function import TrackedTensor
from ..ops import autocast as state

_SUPPORTED_DTYPES = (dt.bfloat16, dt.float16)


class autocast:
    """``with gradlab.autocast("cpu"):`` runs matmul/linear/conv/attention in bfloat16 and losses in float32.

    ``dtype`` defaults to bfloat16 on 'cpu' and float16 on 'cuda'; ``enabled=False`` makes the block (or
    decorated function) run as written. Asking for 'cuda' without a GPU warns and disables, as PyTorch does.
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
        if not state.is_autocast_available(device_type):
            raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
        self.device = device_type
        self.fast_dtype = state.get_autocast_dtype(device_type) if dtype is None else dt.as_dtype(dtype)
        self._cache_enabled = state.is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        if enabled and device_type == "cuda" and not cuda.is_available():
            warnings.warn("CUDA is not available. Disabling autocast.", stacklevel=2)
            enabled = False
        elif enabled and self.fast_dtype not in _SUPPORTED_DTYPES:
            name = device_type.upper()
            warnings.warn(f"In {name} autocast, but the target dtype is not supported. Disabling autocast.\n"
                          f"{name} Autocast only supports dtypes of gradlab.bfloat16, gradlab.float16 currently.",
                          stacklevel=2)
            enabled = False
        self._enabled = bool(enabled)

    def __enter__(self):
        self.prev_cache_enabled = state.is_autocast_cache_enabled()
        self.prev = state.is_autocast_enabled(self.device)
        self.prev_fastdtype = state.get_autocast_dtype(self.device)
        state.set_autocast_enabled(self.device, self._enabled)
        state.set_autocast_dtype(self.device, self.fast_dtype)
        state.autocast_increment_nesting()
        state.set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if state.autocast_decrement_nesting() == 0:
            state.clear_autocast_cache()
        state.set_autocast_enabled(self.device, self.prev)
        state.set_autocast_dtype(self.device, self.prev_fastdtype)
        state.set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"autocast()(func) requires a callable, but got {type(func).__name__}. Did you mean to "
                            "use autocast as a context manager? For example:\n"
                            "    with gradlab.autocast(device_type=...):\n"
                            "        output = model(input)")

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast(value, device_type: str, dtype):
    """Floating tensors (not float64) on ``device_type`` cast to ``dtype``, inside containers too."""
    if isinstance(value, TrackedTensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype is not dt.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, collections.abc.Mapping):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    return value


def _check_device_type(device_type) -> None:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """For ``Function.forward``: remember the autocast state for backward; with ``cast_inputs``, cast the
    floating inputs to that dtype and run forward with autocast off (only inside an autocast region)."""
    _check_device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = state.get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = state.is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if state.is_autocast_enabled(device_type):
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """For ``Function.backward``: run it with the autocast state its forward ran with."""
    _check_device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd

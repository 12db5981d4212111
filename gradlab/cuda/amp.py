"""``gradlab.cuda.amp``: PyTorch's older CUDA spellings of ``gradlab.amp``, deprecated there as here.

``gradlab.cuda.amp.autocast()`` is ``gradlab.autocast("cuda")`` and ``gradlab.cuda.amp.GradScaler()`` is
``gradlab.amp.GradScaler("cuda")``; without a GPU both warn and switch themselves off.
"""

from __future__ import annotations

import warnings

from .. import amp as _amp
from .. import dtypes as dt


class autocast(_amp.autocast):
    """``gradlab.cuda.amp.autocast(args...)``: deprecated, use ``gradlab.amp.autocast("cuda", args...)``."""

    def __init__(self, enabled: bool = True, dtype=dt.float16, cache_enabled: bool = True):
        warnings.warn("`gradlab.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`gradlab.amp.autocast('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """``gradlab.cuda.amp.GradScaler(args...)``: deprecated, use ``gradlab.amp.GradScaler("cuda", args...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        warnings.warn("`gradlab.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`gradlab.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """``gradlab.amp.custom_fwd(device_type="cuda")`` under its older name."""
    return _amp.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """``gradlab.amp.custom_bwd(device_type="cuda")`` under its older name."""
    return _amp.custom_bwd(bwd, device_type="cuda")


__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]

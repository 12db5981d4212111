"""``gradlab.cpu.amp``: PyTorch's older CPU spellings of ``gradlab.amp``, deprecated there as here."""

from __future__ import annotations

import warnings

from .. import amp as _amp
from .. import dtypes as dt


class autocast(_amp.autocast):
    """``gradlab.cpu.amp.autocast(args...)``: deprecated, use ``gradlab.amp.autocast("cpu", args...)``."""

    def __init__(self, enabled: bool = True, dtype=dt.bfloat16, cache_enabled: bool = True):
        warnings.warn("`gradlab.cpu.amp.autocast(args...)` is deprecated. Please use "
                      "`gradlab.amp.autocast('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_amp.GradScaler):
    """``gradlab.cpu.amp.GradScaler(args...)``: deprecated, use ``gradlab.amp.GradScaler("cpu", args...)``."""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True):
        warnings.warn("`gradlab.cpu.amp.GradScaler(args...)` is deprecated. Please use "
                      "`gradlab.amp.GradScaler('cpu', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cpu", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)


__all__ = ["GradScaler", "autocast"]

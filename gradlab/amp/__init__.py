"""``gradlab.amp``: automatic mixed precision, as ``torch.amp`` — ``autocast`` and ``GradScaler``."""

from ..ops.autocast import is_autocast_available
from .autocast_mode import autocast, custom_bwd, custom_fwd
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]

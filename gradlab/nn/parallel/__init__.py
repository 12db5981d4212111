"""``gradlab.nn.parallel``: PyTorch's multi-device wrappers, for scripts that wrap their model by habit.

gradlab computes on one device in one process. ``DataParallel`` therefore does what PyTorch's does
without GPUs: it runs the module it wraps (and keeps it as ``.module``, so checkpoints have the
same ``module.`` keys). ``DistributedDataParallel`` needs a process group, which gradlab never has.
"""

from .data_parallel import DataParallel, DistributedDataParallel, data_parallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]

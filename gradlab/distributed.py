"""``gradlab.distributed``: importable, as ``torch.distributed`` is, and honest that it has nothing to offer.

gradlab trains in one process on one device. ``is_available()`` and ``is_initialized()`` are False,
so the usual guard ``if dist.is_available() and dist.is_initialized():`` skips the distributed code;
every collective or process-group call raises a RuntimeError that names the call and says why.
"""

from __future__ import annotations

import enum


class ReduceOp(enum.Enum):
    """The reductions a collective may apply (kept so ``op=dist.ReduceOp.SUM`` still parses)."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7
    PREMUL_SUM = 8


def is_available() -> bool:
    """False: gradlab has no distributed package (it trains in one process)."""
    return False


def is_initialized() -> bool:
    """False: there is never a process group."""
    return False


def is_torchelastic_launched() -> bool:
    return False


def _backend_available() -> bool:
    return False


is_nccl_available = is_gloo_available = is_mpi_available = _backend_available


def _refusal(name: str):
    def refuse(*args, **kwargs):
        raise RuntimeError(f"gradlab.distributed.{name}: gradlab trains in one process, so there is no process "
                           f"group (gradlab.distributed.is_available() is False). Guard distributed code with "
                           f"`if dist.is_available() and dist.is_initialized():`, or run the script without a "
                           f"launcher such as torchrun.")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Raises RuntimeError: ``{name}`` needs a process group, and gradlab trains in one process."
    return refuse


_PROCESS_GROUP_CALLS = (
    "init_process_group", "destroy_process_group", "new_group", "get_rank", "get_world_size", "get_backend",
    "barrier", "monitored_barrier", "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor",
    "all_gather_object", "gather", "gather_object", "scatter", "scatter_object_list", "reduce_scatter",
    "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "broadcast_object_list", "send", "recv", "isend",
    "irecv", "batch_isend_irecv",
)
globals().update({name: _refusal(name) for name in _PROCESS_GROUP_CALLS})

__all__ = ["ReduceOp", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
           "is_nccl_available", "is_torchelastic_launched", *_PROCESS_GROUP_CALLS]

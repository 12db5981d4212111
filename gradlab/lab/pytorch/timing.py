"""PyTorch's rows in ``compare_devices``: the same step on torch's CPU and CUDA, timed by the same clock.

timing.py does the timing for every row (the first call apart, warm-up, repeats, the budget); this
module gives it what is PyTorch's own: which devices torch has and why one is missing, copies of the
caller's models and tensors on each, and a wait for CUDA's queued kernels before the clock stops
(PyTorch's CPU ops are synchronous). The note says how many threads each side computed on.
"""

from __future__ import annotations

import torch

from ..device_copy import copy_to_device as copy_between_devices

DEVICES = ("cpu", "cuda")


def availability(device: str) -> tuple:
    """(available, why not) for one of torch's device types."""
    if device == "cpu":
        return True, ""
    if torch.version.cuda is None:
        return False, (f"this PyTorch ({torch.__version__}) was built without CUDA, so torch.cuda.is_available() "
                       "is False; a CUDA build of PyTorch on a machine with an NVIDIA GPU gives this row")
    if not torch.cuda.is_available():
        return False, "torch.cuda.is_available() is False: PyTorch sees no CUDA GPU on this machine"
    return True, ""


def note(device: str) -> str:
    """What is worth knowing to read the row fairly: the threads it ran on, the GPU it ran on."""
    if device == "cpu":
        return (f"PyTorch {torch.__version__} on {torch.get_num_threads()} threads (torch.get_num_threads())"
                f"{_blas_threads()}; every row has the same repeats, warm-up and time budget")
    return f"{torch.cuda.get_device_name()}; the clock stops after torch.cuda.synchronize()"


def _blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn and scipy, not with gradlab
        return ""
    blas = [pool for pool in threadpool_info() if pool.get("user_api") == "blas"]
    if not blas:
        return ""
    return f", gradlab's numpy on {blas[0]['num_threads']} ({blas[0].get('internal_api', 'BLAS')})"


class TorchPlace:
    """One torch device: the arguments copied there, and a call made to finish before the clock stops."""

    def __init__(self, device: str):
        self.device = torch.device(device)

    def copy(self, args: list) -> list:
        return copy_to_device(args, self.device)

    def settle(self, result) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)


def copy_to_device(value, device):
    """``value`` with every torch Module and Tensor in it copied to ``device`` (device_copy.py); the caller's
    own are never moved."""
    return copy_between_devices(value, device, torch.nn.Module, torch.Tensor)


def describe(value) -> str | None:
    """A torch argument in a few words ('torch.Tensor 64×2 float32', 'Sequential (4,738 parameters)'), or None."""
    if isinstance(value, torch.Tensor):
        shape = "×".join(str(n) for n in value.shape) or "scalar"
        return f"torch.Tensor {shape} {str(value.dtype).replace('torch.', '')}"
    if isinstance(value, torch.nn.Module):
        return f"{type(value).__name__} ({sum(p.numel() for p in value.parameters()):,} parameters)"
    return None

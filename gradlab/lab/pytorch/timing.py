"""PyTorch's rows in ``compare_devices``: the same step on torch's CPU and CUDA, timed by the same clock.

timing.py does the timing for every row (the first call apart, warm-up, repeats, the budget); this
module gives it what is PyTorch's own: which devices torch has and why one is missing, copies of the
caller's models and tensors on each, and a wait for CUDA's queued kernels before the clock stops
(PyTorch's CPU ops are synchronous). The note says how many threads each side computed on.
"""

from __future__ import annotations

import copy

import torch

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


def copy_to_device(value, device, memo=None):
    """``value`` with every torch Module and Tensor in it (also inside lists, tuples and dicts) copied to
    ``device``; a tensor keeps requires_grad and its .grad, and one seen twice is copied once (a model and
    one of its parameters stay linked). The caller's own are never moved."""
    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, torch.nn.Module):
        moved = copy.deepcopy(value, memo).to(device)  # Module.to swaps each parameter's data in place
    elif isinstance(value, torch.Tensor):
        moved = copy.deepcopy(value if value.is_leaf else value.detach(), memo)
        moved.data = moved.data.to(device)  # in place, so every reference the memo handed out follows
        if moved.grad is not None:
            moved.grad = moved.grad.to(device)
    elif isinstance(value, (list, tuple)):
        items = [copy_to_device(item, device, memo) for item in value]
        moved = type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    elif isinstance(value, dict):
        moved = type(value)((key, copy_to_device(item, device, memo)) for key, item in value.items())
    else:
        return value
    memo[id(value)] = moved
    return moved


def describe(value) -> str | None:
    """A torch argument in a few words ('torch.Tensor 64×2 float32', 'Sequential (4,738 parameters)'), or None."""
    if isinstance(value, torch.Tensor):
        shape = "×".join(str(n) for n in value.shape) or "scalar"
        return f"torch.Tensor {shape} {str(value.dtype).replace('torch.', '')}"
    if isinstance(value, torch.nn.Module):
        return f"{type(value).__name__} ({sum(p.numel() for p in value.parameters()):,} parameters)"
    return None

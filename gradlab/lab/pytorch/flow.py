"""GradientFlow's reader for a ``torch.nn.Module``: PyTorch's tensors, measured where they live.

The figures are the same as for gradlab (flow.py computes them); only the tensor work is PyTorch's.
The weights' copy before the step stays on the parameter's device and the norms are reduced there, so
a model on a GPU sends one number per tensor to the host, not its values (the histogram, taken every
``histogram_every`` steps, copies the gradient itself). On the CPU the copy and the norms are numpy's,
on the tensors' own memory.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import torch

from ..arguments import described
from ..flow_errors import FlowError

_EXACT = (torch.float32, torch.float64)  # summed in their own dtype, as numpy sums gradlab's; others as float32


def _host_view(value: torch.Tensor):
    """The tensor's values as a numpy array on its own memory, where it can be one (a dense CPU tensor of
    float32 or float64); else None."""
    if value.device.type != "cpu" or value.layout != torch.strided or value.dtype not in _EXACT:
        return None
    return value.detach().numpy()


def _flat(value: torch.Tensor) -> torch.Tensor:
    """The values of a tensor (dense, detached, one line), in a dtype whose sum of squares does not overflow."""
    value = value.detach()
    if value.is_sparse:  # an nn.Embedding(sparse=True)'s gradient: the rows it touched
        value = value.coalesce().values()
    value = value.reshape(-1)
    return value if value.dtype in _EXACT else value.float()


def _sq(value) -> float:
    """‖value‖², nan and inf carried through. A CPU tensor goes through numpy on its own memory (one BLAS call:
    torch.dot on a small tensor costs more in calling and waking its thread pool than in the sum); a GPU
    tensor is reduced on its device, and only the number comes back."""
    array = value if isinstance(value, np.ndarray) else _host_view(value)
    if array is not None:
        return float(np.vdot(array, array))
    flat = _flat(value)
    return float(torch.dot(flat, flat))


class TorchReader:
    """PyTorch's tensors: hooks on ``grad_fn`` outputs, norms reduced on the tensor's own device."""

    engine = "PyTorch"
    recorded = True  # record() watches PyTorch too: an opened layer's graph has module boxes

    @staticmethod
    def training_forward() -> bool:
        return torch.is_grad_enabled()

    @staticmethod
    def watch(output, on_grad) -> None:
        for out in output if isinstance(output, tuple) else (output,):
            if isinstance(out, torch.Tensor) and out.requires_grad:
                out.register_hook(on_grad)

    @staticmethod
    def snapshot(param):
        """A numpy copy of a CPU parameter; a copy on its own device of any other (a GPU's stays there)."""
        array = _host_view(param)
        return array.copy() if array is not None else param.detach().clone()

    @staticmethod
    def squared(value) -> float:
        return _sq(value)

    @staticmethod
    def squared_moved(param, snapshot) -> float:
        if isinstance(snapshot, np.ndarray):
            return _sq(_host_view(param) - snapshot)
        now = param.detach()
        if now.dtype not in _EXACT:  # (bfloat16's 8 bits would round the difference itself: subtract in float32)
            now, snapshot = now.float(), snapshot.float()
        return _sq(now - snapshot)

    @staticmethod
    def flat_values(grad) -> np.ndarray:
        return _flat(grad).cpu().numpy()

    @staticmethod
    def loss_number(loss) -> float:
        if isinstance(loss, torch.Tensor):
            if loss.numel() != 1:
                raise FlowError(f"GradientFlow.update(loss=...): loss is the one number the step minimised, got a "
                                f"torch tensor of shape {list(loss.shape)}; pass the scalar loss (loss.mean(), or "
                                "the loss function's result), or leave loss out")
            return float(loss.detach().item())
        if isinstance(loss, Real) and not isinstance(loss, bool):
            return float(loss)
        raise TypeError(f"GradientFlow.update(loss=...): loss is a number or a one-element tensor (the step's "
                        f"loss), or leave it out; got {described(loss)}")

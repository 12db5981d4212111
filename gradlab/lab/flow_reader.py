"""How ``Flow`` reads a model of one engine: the few things that differ between gradlab and PyTorch.

Both engines have the same module API (``named_modules``, ``parameters(recurse=False)``, forward hooks,
``.grad``), so ``flow.py`` walks either model itself. What differs is the tensors: how a gradient hook
is put on an output, how a parameter's values are copied and measured, how a loss becomes a number.
A reader is that difference, and nothing else; ``reader_for(model)`` picks one
(``pytorch/flow.py`` is PyTorch's, loaded only when a torch model arrives).
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from ..autograd import is_grad_enabled
from ..tensor import Tensor
from .arguments import described
from .flow_errors import FlowError
from .pytorch import is_torch_module
from .summary import as_numpy


def host(value) -> np.ndarray:
    """The values of a tensor as a host array (the array itself on the numpy backend: no copy)."""
    array = getattr(value, "array", None)
    return array if type(array) is np.ndarray else as_numpy(value)


def squared_norm(array: np.ndarray) -> float:
    """‖array‖² in one BLAS call over all its elements (nan and inf carry through, as they should)."""
    return float(np.vdot(array, array))


class GradlabReader:
    """gradlab's tensors: values read as numpy arrays, the snapshot a numpy copy."""

    engine = "gradlab"
    recorded = True  # record() watches its forward: an opened layer's graph has module boxes

    @staticmethod
    def training_forward() -> bool:
        """Is the forward now running one that backward will follow (grad mode on)?"""
        return is_grad_enabled()

    @staticmethod
    def watch(output, on_grad) -> None:
        """Call ``on_grad(grad)`` when backward reaches each tensor of ``output`` that needs a gradient."""
        for out in output if isinstance(output, tuple) else (output,):
            if isinstance(out, Tensor) and out.requires_grad:
                out.register_hook(on_grad)

    @staticmethod
    def snapshot(param):
        """A copy of the parameter's values, kept while the optimizer moves the parameter itself."""
        return host(param).copy()

    @staticmethod
    def squared(value) -> float:
        """‖value‖² of a tensor (a parameter, a gradient) or a snapshot."""
        return squared_norm(host(value))

    @staticmethod
    def squared_moved(param, snapshot) -> float:
        """‖param − snapshot‖²: how far the step moved it."""
        return squared_norm(host(param) - snapshot)

    @staticmethod
    def flat_values(grad) -> np.ndarray:
        """The values of a gradient as one flat host array (the histogram counts them)."""
        return host(grad).ravel()

    @staticmethod
    def loss_number(loss) -> float:
        """The loss update() was given, as a float: a number, or a tensor of one element."""
        if isinstance(loss, Tensor):
            if loss.numel() != 1:
                raise FlowError(f"GradientFlow.update(loss=...): loss is the one number the step minimised, got "
                                 f"a tensor of shape {list(loss.shape)}; pass the scalar loss (loss.mean(), or the "
                                 "loss function's result), or leave loss out")
            return float(loss.item())
        if isinstance(loss, Real) and not isinstance(loss, bool):
            return float(loss)
        size = getattr(loss, "size", None)
        if hasattr(loss, "item") and (size == 1 or callable(size)):  # a numpy scalar or array of one
            try:
                return float(loss.item())
            except (TypeError, ValueError, RuntimeError):
                pass
        raise TypeError(f"GradientFlow.update(loss=...): loss is a number or a one-element tensor (the step's "
                        f"loss), or leave it out; got {described(loss)}")


def reader_for(model):
    """The reader of ``model``'s engine: PyTorch's for a ``torch.nn.Module``, else gradlab's."""
    if is_torch_module(model):
        from .pytorch.flow import TorchReader
        return TorchReader
    return GradlabReader

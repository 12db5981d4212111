"""Which source steps what: gradlab's tensors, the Scalar twin, or PyTorch (loaded only for a torch tensor)."""

from __future__ import annotations

from ..autograd.function import TrackedTensor
from ..scalar import Scalar
from .capture import CaptureError, capture
from .pytorch import is_torch_tensor
from .record import Recording
from .scalar_source import ScalarSource
from .step_source import BackwardSource
from .tensor_source import TensorSource


def source_for(target, graph=None) -> BackwardSource:
    """The source that steps ``target``: a gradlab loss tensor, a Scalar, a PyTorch loss, or a recording of one."""
    if isinstance(target, Recording):
        graph = graph or capture(target)
        target = target.output
        if target is None:
            raise CaptureError("BackpropStepper: the recording produced no tensor to start backward from")
    if isinstance(target, TrackedTensor):
        return TensorSource(target, graph)
    if isinstance(target, Scalar):
        return ScalarSource(target, graph)
    if is_torch_tensor(target):
        from .pytorch.step_source import TorchSource
        return TorchSource(target, graph)
    raise CaptureError(f"BackpropStepper: cannot step a {type(target).__name__}; give it a loss tensor, a "
                       "recording (with gl.lab.record() as rec: ...), a gradlab.Scalar or a PyTorch loss tensor")

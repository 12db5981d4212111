"""Reverse-mode automatic differentiation: Functions, the graph, and backward run as steps.

``Function.apply`` records each operation (and tells observers about it); ``backward_steps``
walks the recorded graph backwards one node at a time. ``functional`` and ``gradcheck`` are tools
built on Tensor and are imported by ``gradlab`` itself once Tensor exists.
"""

from . import anomaly as anomaly_mode  # torch.autograd.anomaly_mode
from .anomaly import detect_anomaly, is_anomaly_check_nan_enabled, is_anomaly_enabled, set_detect_anomaly
from .engine import BackwardStep, backward, backward_steps, grad
from .function import AccumulateGrad, Function, Node, SavedValue, TrackedTensor
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled
from .hooks import RemovableHandle
from .observers import ObserverHandle, OpRecord, subscribe


__all__ = [
    "AccumulateGrad", "BackwardStep", "Function", "Node", "ObserverHandle", "OpRecord", "RemovableHandle",
    "SavedValue", "TrackedTensor", "anomaly_mode", "backward", "backward_steps", "detect_anomaly", "enable_grad",
    "grad", "inference_mode", "is_anomaly_check_nan_enabled", "is_anomaly_enabled", "is_grad_enabled",
    "is_inference_mode_enabled", "is_tensor_like", "no_grad", "set_detect_anomaly", "set_grad_enabled",
    "subscribe",
]


def is_tensor_like(inp) -> bool:
    """True for a tensor autograd can record (``torch.autograd.is_tensor_like``)."""
    return isinstance(inp, TrackedTensor)

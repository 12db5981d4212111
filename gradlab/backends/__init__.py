"""Backends: where array work is done. The contract lists the primitives; devices find backends."""

from .contract import FUSED_KERNELS, PRIMITIVES, Backend
from .device import Device, default_device, resolve_device, set_default_device

__all__ = ["PRIMITIVES", "Backend", "Device", "default_device", "resolve_device", "set_default_device", "FUSED_KERNELS"]

_FLAG_MODULES = ("cuda", "cudnn", "mkldnn", "mps", "openmp")  # PyTorch's switches, with no effect here


def __getattr__(name):
    """``gradlab.backends.cudnn.benchmark = True`` works without importing the flag module first, as in torch."""
    if name in _FLAG_MODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gradlab.backends' has no attribute {name!r}")

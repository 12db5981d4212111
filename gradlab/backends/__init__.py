"""Backends: where array work is done. The contract lists the primitives; devices find backends."""

from .contract import PRIMITIVES, Backend
from .device import Device, default_device, resolve_device, set_default_device

__all__ = ["PRIMITIVES", "Backend", "Device", "default_device", "resolve_device", "set_default_device"]

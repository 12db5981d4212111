"""Devices, named as in PyTorch, and how a device string finds its backend.

A ``Device`` is an interned value object: ``resolve_device("cpu")`` always returns the same
instance, so ops compare devices with ``is``. Each device type names a backend module that is
imported only when a tensor is first put on that device.
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import NamedTuple

# device type -> (module, class, the extra that installs what it needs)
_BACKENDS = {
    "cpu": ("gradlab.backends.numpy_backend", "NumpyBackend", None),
    "numba": ("gradlab.backends.numba_backend", "NumbaBackend", "numba"),
    "cuda": ("gradlab.backends.cuda_backend", "CudaBackend", "cuda"),
    "mlx": ("gradlab.backends.mlx_backend", "MlxBackend", "mlx"),
}

_instances: dict = {}  # (type, index) -> the one Device for that place
_named: dict = {}  # 'cuda:0' -> its Device, so resolving a string is one lookup after the first
_backend_objects: dict = {}


class Device:
    """Where a tensor's data lives: a type ('cpu', 'cuda', 'numba', 'mlx') and an index.

    ``gradlab.device('cuda:1')`` or ``gradlab.device('cuda', 1)``; there is one Device object per
    place, so ``a.device is b.device`` is the whole test for "same device". Index 0 is the same
    place as no index: 'cuda' and 'cuda:0' are one device.
    """

    __slots__ = ("type", "index", "backend")

    def __new__(cls, type, index: int | None = None):
        if isinstance(type, Device) and index is None:
            return type
        if not isinstance(type, str):
            raise TypeError(f"device: expected a device string like 'cpu' or 'cuda:0', got {type!r}")
        type_, parsed = _parse(type)
        if index is not None:
            if parsed is not None:
                raise RuntimeError(f"device: the index is given twice, in '{type}' and as index={index}")
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise RuntimeError(f"device: the index must be a non-negative integer, got {index!r}")
            parsed = index
        key = (type_, parsed or None)
        found = _instances.get(key)
        if found is None:
            found = _instances[key] = object.__new__(cls)
            found.type, found.index = type_, key[1]
        return found

    def __getattr__(self, name):
        """``device.backend``, the object that computes here, is imported on first use; after that
        it is a plain attribute, read on every op."""
        if name != "backend":
            raise AttributeError(f"'device' object has no attribute '{name}'")
        backend = _load_backend(self.type)
        object.__setattr__(self, "backend", backend)
        return backend

    def __repr__(self):
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = resolve_device(other)
            except RuntimeError:
                return False
        return isinstance(other, Device) and other.type == self.type and other.index == self.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (resolve_device, (str(self),))


def _load_backend(type_: str):
    if type_ not in _backend_objects:
        module_name, class_name, extra = _BACKENDS[type_]
        try:
            backend = getattr(importlib.import_module(module_name), class_name)()
        except RuntimeError:
            raise  # the backend's own explanation (no GPU, a simulator in use, ...) reaches the user as it is
        except ModuleNotFoundError as error:
            if error.name == module_name:
                raise RuntimeError(
                    f"the '{type_}' backend is not part of this gradlab build yet; use device='cpu'"
                ) from None
            hint = f'pip install "gradlab[{extra}]"' if extra else "reinstall gradlab"
            raise RuntimeError(
                f"the '{type_}' device needs the package '{error.name}', which is not installed; "
                f"install it with: {hint}"
            ) from None
        except Exception as error:  # e.g. a driver library that fails to load: say which device, keep the cause
            raise RuntimeError(f"the '{type_}' device could not start: {type(error).__name__}: {error}") from error
        if type_ == "cpu":  # the one place the process-wide malloc choice is made (see host_memory)
            from .host_memory import keep_freed_memory

            keep_freed_memory()
        _backend_objects[type_] = backend
    return _backend_objects[type_]


def backend_for(op: str, device: Device, dtype):
    """The backend that computes on ``device``, once it is known to hold ``dtype`` (checked before any work)."""
    backend = device.backend
    if dtype not in backend.supported_dtypes:
        raise unsupported_dtype(op, device, dtype)
    return backend


# the dtype to suggest in place of one a device lacks: the first of its category the device has
_ALTERNATIVES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int16", "int8", "uint8", "bool")


def unsupported_dtype(op: str, device: Device, dtype) -> TypeError:
    """The error for a dtype the device's backend cannot hold, naming device, dtype and what to use instead."""
    backend = device.backend
    names = {d.name: d for d in backend.supported_dtypes}
    same_kind = [name for name in _ALTERNATIVES if name in names and names[name].category == dtype.category]
    instead = f"use {same_kind[0]} there, or" if same_kind else "use"
    has = ", ".join(name for name in _ALTERNATIVES if name in names)
    return TypeError(f"{op}: the '{device}' device ({backend.name} backend) has no {dtype.name} (it has {has}); "
                     f"{instead} device='cpu' for {dtype.name}")


def _parse(spec: str) -> tuple[str, int | None]:
    """'cuda:1' -> ('cuda', 1); 'cpu' -> ('cpu', None)."""
    type_, colon, index = spec.strip().lower().partition(":")
    if type_ not in _BACKENDS:
        known = ", ".join(f"'{name}'" for name in _BACKENDS)
        raise RuntimeError(f"unknown device '{spec}': expected one of {known}, optionally with ':N' (e.g. 'cuda:0')")
    if colon:
        if not index.isdigit():
            raise RuntimeError(f"invalid device '{spec}': the index after ':' must be a non-negative integer")
        return type_, int(index)
    return type_, None


def resolve_device(device=None) -> Device:
    """Turn None (the default device), a string like 'cuda:0', or a Device into the interned Device."""
    if device is None:
        return _default[0] if _default else default_device()
    if isinstance(device, Device):
        return device
    if isinstance(device, str):
        found = _named.get(device)
        if found is None:
            found = _named[device] = Device(device)
        return found
    raise TypeError(f"expected a device string like 'cpu' or 'cuda:0' or a gradlab.device, got {type(device).__name__}")


_default: list = []


def default_device() -> Device:
    """The device new tensors go to: $GRADLAB_DEVICE if set, else 'cpu'."""
    if not _default:
        spec = os.environ.get("GRADLAB_DEVICE") or "cpu"
        try:
            found = resolve_device(spec)
        except RuntimeError as error:
            raise RuntimeError(f"the environment variable GRADLAB_DEVICE={spec!r} is not a device: {error}") from None
        _default.append(found)
    return _default[0]


def set_default_device(device) -> None:
    """Change the device that factories use when none is given (``torch.set_default_device``)."""
    _default[:] = [resolve_device(device)]


def reset_default_device() -> None:
    """Forget the chosen default device, so that the next tensor reads $GRADLAB_DEVICE again."""
    _default.clear()


# --- what this machine offers ----------------------------------------------------------------------


class DeviceInfo(NamedTuple):
    """One device type as ``gradlab.devices()`` reports it: whether tensors can go there, and if not, why.

    ``note`` says something worth knowing about an available one (CUDA kernels run on numba's simulator).
    """

    type: str
    available: bool
    reason: str = ""
    note: str = ""

    def __repr__(self):
        extra = "".join(f", {name}={value!r}" for name, value in (("reason", self.reason), ("note", self.note)) if value)
        return f"DeviceInfo(type={self.type!r}, available={self.available}{extra})"


def devices() -> list:
    """Every device type gradlab knows, each tried once: available, or the reason it is not.

    Trying a device imports its backend (and the package it needs), so this is the one call that
    loads every optional backend; ``import gradlab`` loads none.
    """
    return [device_info(type_) for type_ in _BACKENDS]


def device_info(type_: str) -> DeviceInfo:
    """One device type ('cpu', 'cuda', ...) tried: available, or the reason it is not. Only its backend loads."""
    if type_ not in _BACKENDS:
        raise ValueError(f"device_info: unknown device type {type_!r}; the known types are {', '.join(_BACKENDS)}")
    try:
        _load_backend(type_)
    except RuntimeError as error:
        return DeviceInfo(type_, False, str(error))
    return DeviceInfo(type_, True, note=_simulator_note(type_))


def _simulator_note(type_: str) -> str:
    """For 'cuda' under numba's simulator: say so, since it is correct but thousands of times slower."""
    if type_ != "cuda":
        return ""
    config = getattr(sys.modules.get("numba.core.config"), "ENABLE_CUDASIM", None)
    simulated = config if config is not None else os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    return ("numba's CUDA simulator (NUMBA_ENABLE_CUDASIM=1): no GPU is used; the kernels run as Python "
            "threads, correct but slow") if simulated else ""

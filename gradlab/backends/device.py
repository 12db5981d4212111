"""Devices, named as in PyTorch, and how a device string finds its backend.

A ``Device`` is an interned value object: ``resolve_device("cpu")`` always returns the same
instance, so ops compare devices with ``is``. Each device type names a backend module that is
imported only when a tensor is first put on that device.
"""

from __future__ import annotations

import importlib
import os

# device type -> (module, class, the extra that installs what it needs)
_BACKENDS = {
    "cpu": ("gradlab.backends.numpy_backend", "NumpyBackend", None),
    "numba": ("gradlab.backends.numba_backend", "NumbaBackend", "numba"),
    "cuda": ("gradlab.backends.cuda_backend", "CudaBackend", "cuda"),
    "mlx": ("gradlab.backends.mlx_backend", "MlxBackend", "mlx"),
}

_instances: dict = {}
_backend_objects: dict = {}


class Device:
    """Where a tensor's data lives: a type ('cpu', 'cuda', 'numba', 'mlx') and an index."""

    __slots__ = ("type", "index", "_backend")

    def __init__(self, type: str, index: int | None = None):
        self.type = type
        self.index = index
        self._backend = None

    @property
    def backend(self):
        """The backend object that computes on this device (imported on first use)."""
        backend = self._backend
        if backend is None:
            backend = self._backend = _load_backend(self.type)
        return backend

    def __repr__(self):
        index = "" if self.index is None else f", index={self.index}"
        return f"device(type='{self.type}'{index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            other = resolve_device(other)
        return isinstance(other, Device) and other.type == self.type and other.index == self.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (resolve_device, (str(self),))


def _load_backend(type_: str):
    if type_ not in _backend_objects:
        module_name, class_name, extra = _BACKENDS[type_]
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                raise RuntimeError(f"the '{type_}' backend is not part of this gradlab build yet") from None
            hint = f'pip install "gradlab[{extra}]"' if extra else "reinstall gradlab"
            raise RuntimeError(
                f"the '{type_}' device needs the package '{error.name}', which is not installed; "
                f"install it with: {hint}"
            ) from None
        _backend_objects[type_] = getattr(module, class_name)()
    return _backend_objects[type_]


def _parse(spec: str) -> tuple[str, int | None]:
    text = spec.strip().lower()
    type_, _, index = text.partition(":")
    if type_ not in _BACKENDS:
        known = ", ".join(f"'{name}'" for name in _BACKENDS)
        raise RuntimeError(f"unknown device '{spec}': expected one of {known}, optionally with ':N' (e.g. 'cuda:0')")
    if index:
        if not index.isdigit():
            raise RuntimeError(f"invalid device '{spec}': the index after ':' must be a non-negative integer")
        return type_, int(index)
    return type_, None


def resolve_device(device=None) -> Device:
    """Turn None (the default device), a string like 'cuda:0', or a Device into the interned Device."""
    if device is None:
        return default_device()
    if isinstance(device, Device):
        key = (device.type, device.index)
    elif isinstance(device, str):
        key = _parse(device)
    else:
        raise TypeError(f"expected a device string like 'cpu' or 'cuda:0' or a gradlab.device, got {type(device).__name__}")
    if key == ("cuda", 0):
        key = ("cuda", None)  # 'cuda' and 'cuda:0' are one device: only one GPU is used
    found = _instances.get(key)
    if found is None:
        found = _instances[key] = Device(*key)
    return found


_default: list = []


def default_device() -> Device:
    """The device new tensors go to: $GRADLAB_DEVICE if set, else 'cpu'."""
    if not _default:
        _default.append(resolve_device(os.environ.get("GRADLAB_DEVICE", "cpu") or "cpu"))
    return _default[0]


def set_default_device(device) -> None:
    """Change the device that factories use when none is given (``torch.set_default_device``)."""
    found = resolve_device(device)
    _default[:] = [found]

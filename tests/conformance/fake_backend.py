"""A test-only second device: numpy's maths on arrays of their own type, every primitive call recorded.

It lets the conformance suite run every case on two devices even where no optional backend is
installed, and it checks what a real accelerator needs: its arrays are ``DeviceArray`` (a numpy
subclass standing for device memory), ``asarray`` and ``to_numpy`` always copy (host and device never
share memory), and a plain host ndarray reaching a primitive is an error — an op that built an array
with numpy behind the backend's back would fail the same way on CUDA or MLX. It also notes the
primitives each case reaches, which the primitive sweep reads (``recording``).
"""

from __future__ import annotations

import contextlib
import functools
import inspect

import numpy as np

from gradlab.backends.contract import PRIMITIVES
from gradlab.backends.numpy_backend import NumpyBackend

DEVICE_TYPE = "fake"
PRIMITIVE_NAMES = tuple(name for names in PRIMITIVES for name in names.split())


class DeviceArray(np.ndarray):
    """An array that lives on the fake device: numpy memory, but never to be mixed with host arrays."""


class HostArrayOnDevice(TypeError):
    """A host numpy array was handed to a device primitive."""


_recorders: list = []  # one set of primitive names per open ``recording()`` block


@contextlib.contextmanager
def recording():
    """Collect the names of the backend methods called inside the block (``with recording() as seen:``)."""
    seen: set = set()
    _recorders.append(seen)
    try:
        yield seen
    finally:
        _recorders.remove(seen)


def _note(name):
    for seen in _recorders:
        seen.add(name)


def _on_device(value):
    """Results retyped as DeviceArray (a view, no copy); tuples of results too."""
    if type(value) is np.ndarray:
        return value.view(DeviceArray)
    if isinstance(value, tuple):
        return tuple(_on_device(v) for v in value)
    return value


def _refuse_host_arrays(name, args):
    for arg in args:
        for item in arg if isinstance(arg, (list, tuple)) else (arg,):
            if type(item) is np.ndarray and item.ndim > 0:
                raise HostArrayOnDevice(
                    f"fake device: the backend method '{name}' was given a host numpy array of shape "
                    f"{item.shape} ({item.dtype}); a device op must make its arrays through the backend")


def _device_method(name, method, static):
    """numpy's method behind the device boundary: host arrays refused, results retyped, the call noted.

    A static method gets plain ndarrays (so numpy's own type rules apply, exactly as on 'cpu'); an
    instance method (a fused kernel that calls other primitives through self) gets the DeviceArrays.
    """
    @functools.wraps(method)
    def device_method(self, *args, **kwargs):
        _note(name)
        _refuse_host_arrays(name, args)
        if not static:
            return _on_device(method(self, *args, **kwargs))
        plain = [a.view(np.ndarray) if isinstance(a, DeviceArray) else a for a in args]
        return _on_device(method(*plain, **kwargs))

    return device_method


class FakeDeviceBackend(NumpyBackend):
    """numpy's primitives behind a device boundary: DeviceArrays in and out, copies across it."""

    name = "fake"
    array_type = DeviceArray

    @staticmethod
    def asarray(obj, dtype):
        _note("asarray")
        if isinstance(obj, DeviceArray):
            obj = obj.view(np.ndarray)
        return np.array(NumpyBackend.asarray(obj, dtype), copy=True).view(DeviceArray)

    @staticmethod
    def to_numpy(a):
        _note("to_numpy")
        return np.array(a.view(np.ndarray) if isinstance(a, DeviceArray) else a, copy=True)


# Every public method of numpy_backend (its primitives and fused overrides) and of the contract's Backend (the
# composed fused kernels, the host linalg kernels) is wrapped, present and future, so each call is checked and noted.
for _name in dir(NumpyBackend):
    if _name.startswith("_") or _name in vars(FakeDeviceBackend) or not callable(getattr(NumpyBackend, _name)):
        continue
    _static = isinstance(inspect.getattr_static(NumpyBackend, _name), staticmethod)
    setattr(FakeDeviceBackend, _name, _device_method(_name, getattr(NumpyBackend, _name), _static))

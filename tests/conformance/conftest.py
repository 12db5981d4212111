"""Which backends the suite runs on, found when it runs, and the fixtures every case takes.

The reference is the numpy backend ('cpu'). Each optional backend (numba, mlx, cuda) is tried with
``gradlab.device(type).backend``; one that does not load is skipped with the reason its RuntimeError
gives. The fake device (fake_backend.py) always runs: numpy's maths behind a device boundary, so every
case crosses devices even on a machine with no optional backend.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import pytest

import gradlab as gl
from gradlab.backends import device as device_module

from . import fake_backend

OPTIONAL = ("numba", "mlx", "cuda")


def _id(device_type: str) -> str:
    if device_type == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return "cuda-sim"
    return {"cpu": "numpy"}.get(device_type, device_type)


def _available():
    """[(id, device type, why it is skipped or None)] for the reference, the fake device and each optional one."""
    found = [("numpy", "cpu", None), ("fake", fake_backend.DEVICE_TYPE, None)]
    for device_type in OPTIONAL:
        try:
            gl.device(device_type).backend
            reason = None
        except RuntimeError as error:
            reason = f"the '{device_type}' backend does not load here: {error}"
        found.append((_id(device_type), device_type, reason))
    return found


BACKENDS = _available()


@pytest.fixture(scope="package", autouse=True)
def fake_device_registered():
    """The fake device type exists while this package's tests run, and is gone again after them
    (other tests check the list of device types)."""
    entry = (fake_backend.__name__, "FakeDeviceBackend", None)
    device_module._BACKENDS[fake_backend.DEVICE_TYPE] = entry
    yield
    del device_module._BACKENDS[fake_backend.DEVICE_TYPE]
    device_module._backend_objects.pop(fake_backend.DEVICE_TYPE, None)
    device_module._named.pop(fake_backend.DEVICE_TYPE, None)
    device_module._instances.pop((fake_backend.DEVICE_TYPE, None), None)


def backend_params(include_reference: bool = False):
    """pytest params over the backends under test (numpy itself only where asked: it is the reference)."""
    return [pytest.param(device_type, id=name,
                         marks=[pytest.mark.skip(reason=reason)] if reason else [])
            for name, device_type, reason in BACKENDS if include_reference or device_type != "cpu"]


@dataclass(frozen=True)
class Sizes:
    """Shapes for one device. Each is small but crosses the edges kernels get wrong: lengths that are not
    multiples of a tile or block (16, 32), odd sizes, more rows than one block. The CUDA simulator runs a
    Python thread per GPU thread, so it gets the smallest that still cross a 16-wide tile."""

    rows: int = 7
    cols: int = 37
    inner: int = 45
    image: int = 9
    channels: int = 3
    batch: int = 4
    seq: int = 6


SIMULATOR_SIZES = Sizes(rows=5, cols=17, inner=19, image=6, channels=2, batch=2, seq=4)


def simulated(device_type: str) -> bool:
    return device_type == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection reads the marks
def pytest_collection_modifyitems(items):
    """What the CUDA simulator runs. It starts a Python thread per GPU thread (~0.15 s for one launch of a
    128-thread block here), so it cannot take every case in the quick selection: there it runs the cases that
    reach every primitive (primitive_table.py) in float32; the other float32 cases and the training runs are
    marked slow (CI runs them), as are the random-number tests, and the float64 variants are skipped, since they run the same kernels (they
    run on numba, mlx and a real GPU)."""
    from .harness import CASES
    from .primitive_table import PRIMITIVE_CASES

    core = set(PRIMITIVE_CASES.values())
    for item in items:
        params = getattr(item, "callspec", None)
        if params is None or not simulated(params.params.get("backend_device", "")):
            continue
        case_name = params.params.get("case_name")
        if case_name is None:
            if item.module.__name__.rsplit(".", 1)[-1] in ("test_training", "test_random"):
                item.add_marker(pytest.mark.slow)
        elif CASES[case_name].dtype is gl.float64:
            item.add_marker(pytest.mark.skip(reason="the CUDA simulator runs the float32 variant of each case"))
        elif case_name not in core:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(params=backend_params())
def backend_device(request):
    """A device under test (each available backend but the reference)."""
    return gl.device(request.param)


@pytest.fixture
def sizes(backend_device):
    return SIMULATOR_SIZES if simulated(backend_device.type) else Sizes()

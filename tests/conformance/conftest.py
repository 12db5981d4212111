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
    Python thread per GPU thread, so it gets the smallest sizes that still cross its own (smaller) tiles."""

    rows: int = 7
    cols: int = 37
    inner: int = 45
    image: int = 9
    channels: int = 3
    batch: int = 4
    seq: int = 6


# The simulator's kernels use 32-thread blocks and 4-wide matmul tiles (cuda_kernels.py): these still cross both.
SIMULATOR_SIZES = Sizes(rows=3, cols=6, inner=5, image=5, channels=2, batch=2, seq=3)


def simulated(device_type: str) -> bool:
    return device_type == "cuda" and os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


# On the simulator the quick selection runs these (one case per family of primitives, the cheapest there). The
# rest of primitive_table.py's cases take ~6 min more there: they run with GRADLAB_FULL_SIMULATION=1 (and always on
# a real GPU); tests/test_cuda_backend.py and test_cuda_fused.py check every primitive and fused kernel on the
# simulator in the default run.
FULL_SIMULATION = os.environ.get("GRADLAB_FULL_SIMULATION") == "1"
SIMULATOR_QUICK = {"creation", "casts_and_copies", "comparisons", "integer_ops", "predicates[float32]",
                   "exp[float32]", "add[float32]", "where_and_masked_fill[float32]", "sums_and_means[float32]",
                   "basic_indexing[float32]", "advanced_and_boolean_indexing[float32]", "matmul_shapes[float32]",
                   "logsumexp_softmax[float32]"}  # ~60 s there (16 tests); the slow rest ~6 min more


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection reads the marks
def pytest_collection_modifyitems(items):
    """What the CUDA simulator runs. It starts a Python thread per GPU thread, so a case that takes a
    fraction of a second elsewhere takes seconds to minutes there: it runs SIMULATOR_QUICK in the quick
    selection and, with GRADLAB_FULL_SIMULATION=1, the other cases of primitive_table.py (which together reach
    every primitive and fused kernel) as slow ones, in float32, at SIMULATOR_SIZES. The remaining cases and the float64 variants are
    skipped there (they run on a real GPU, and on numba and mlx), as are the training runs; the
    random-number tests are slow."""
    from .harness import CASES
    from .primitive_table import FUSED_CASES, PRIMITIVE_CASES

    core = set(PRIMITIVE_CASES.values()) | set(FUSED_CASES.values())
    for item in items:
        params = getattr(item, "callspec", None)
        if params is None or not simulated(params.params.get("backend_device", "")):
            continue
        case_name = params.params.get("case_name")
        module = item.module.__name__.rsplit(".", 1)[-1]
        if module == "test_training":
            item.add_marker(pytest.mark.skip(reason="the examples' models are too wide for the CUDA simulator "
                                                    "(see test_training.py); they train on a GPU"))
        elif case_name is None:
            if module == "test_random":
                item.add_marker(pytest.mark.slow)
        elif CASES[case_name].dtype is gl.float64:
            item.add_marker(pytest.mark.skip(reason="the CUDA simulator runs the float32 variant of each case"))
        elif case_name not in core:
            item.add_marker(pytest.mark.skip(reason="the CUDA simulator runs only primitive_table.py's cases "
                                                    "(every case runs on a GPU)"))
        elif case_name not in SIMULATOR_QUICK:
            if not FULL_SIMULATION:
                item.add_marker(pytest.mark.skip(reason="the CUDA simulator runs SIMULATOR_QUICK; set "
                                                        "GRADLAB_FULL_SIMULATION=1 for the rest of primitive_table.py "
                                                        "(~6 min), which tests/test_cuda_*.py cover primitive by primitive"))
            item.add_marker(pytest.mark.slow)


@pytest.fixture(params=backend_params())
def backend_device(request):
    """A device under test (each available backend but the reference)."""
    return gl.device(request.param)


@pytest.fixture
def sizes(backend_device):
    return SIMULATOR_SIZES if simulated(backend_device.type) else Sizes()

"""Every contract primitive: each backend has it, and a conformance case reaches it.

``contract.PRIMITIVES`` is the list a new device must implement. A backend that forgot one fails
``test_backend_has_every_primitive`` loudly; a primitive added to the contract without a case that uses
it fails ``test_the_table_names_every_primitive``; and each entry of the table below is checked to be
true — its case, run on the recording fake device, really calls that primitive — so the cases that run on
every backend (test_cases.py) cover the whole contract.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import gradlab as gl
from gradlab.backends.numpy_backend import NumpyBackend

from . import cases_nn, cases_ops  # noqa: F401  (importing them registers their cases)
from .conftest import backend_params
from .fake_backend import PRIMITIVE_NAMES, recording
from .harness import CASES, run
from .primitive_table import DIRECT, PRIMITIVE_CASES

def test_the_table_names_every_primitive():
    assert sorted(PRIMITIVE_CASES) == sorted(PRIMITIVE_NAMES), (
        f"primitives without a case: {sorted(set(PRIMITIVE_NAMES) - set(PRIMITIVE_CASES))}; "
        f"table entries that are not primitives: {sorted(set(PRIMITIVE_CASES) - set(PRIMITIVE_NAMES))}")
    unknown = {c for c in PRIMITIVE_CASES.values() if c not in CASES and c not in DIRECT}
    assert not unknown, f"the table names cases that do not exist: {sorted(unknown)}"


@pytest.mark.parametrize("primitive", sorted(set(PRIMITIVE_CASES) - {p for p, c in PRIMITIVE_CASES.items()
                                                                      if c in DIRECT}))
def test_the_named_case_reaches_the_primitive(primitive):
    """Run on the fake device (numpy's composition of every fused kernel), the case calls the primitive."""
    from .conftest import Sizes

    case_ = CASES[PRIMITIVE_CASES[primitive]]
    with recording() as seen:
        run(case_, gl.device("fake"), Sizes())
    assert primitive in seen, f"the case {case_.name} never calls the primitive '{primitive}' (it calls {sorted(seen)})"


@pytest.mark.parametrize("device_type", backend_params(include_reference=True))
def test_backend_has_every_primitive(device_type):
    backend = gl.device(device_type).backend
    missing = [name for name in PRIMITIVE_NAMES if not callable(getattr(backend, name, None))]
    assert not missing, f"the {backend.name} backend lacks the primitives {missing}"
    if not isinstance(backend.asarray([1.0], gl.float32), np.ndarray):
        # arrays that are not numpy's must never meet numpy's primitives (inherited or borrowed): they would be
        # pulled to the host, or fail
        borrowed = [name for name in PRIMITIVE_NAMES
                    if inspect.getattr_static(type(backend), name, None) is inspect.getattr_static(NumpyBackend, name)]
        assert not borrowed, f"the {backend.name} backend uses numpy's own code for {borrowed}"


@pytest.mark.parametrize("device_type", backend_params(include_reference=True))
def test_native_dtypes_round_trip(device_type):
    """native_dtype is the backend's name for a gradlab dtype: an array made in it reads back as that dtype."""
    backend = gl.device(device_type).backend
    supported = getattr(backend, "supported_dtypes", None)
    for dtype in (gl.float32, gl.float64, gl.int64, gl.int32, gl.int16, gl.int8, gl.uint8, gl.bool):
        if supported is not None and dtype not in supported:
            continue
        array = backend.asarray([1, 0, 1], dtype)
        assert backend.dtype_of(array) is dtype, f"{backend.name}: an array made as {dtype} reads as {backend.dtype_of(array)}"
        assert array.dtype == backend.native_dtype(dtype), f"{backend.name}: {dtype}'s array has dtype {array.dtype}"
        assert gl.tensor([1, 0, 1], dtype=dtype, device=device_type).dtype is dtype

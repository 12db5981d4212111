"""Every contract primitive and fused kernel: each backend has it, and a conformance case reaches it.

``contract.PRIMITIVES`` is the list a new device must implement, ``contract.FUSED_KERNELS`` the heavy
paths it may override. A backend that lacks one fails ``test_backend_has_every_primitive`` loudly; a name
added to the contract without a case that uses it fails ``test_the_table_names_every_...``; and each
entry of primitive_table.py is checked to be true — its case, run on the recording fake device, really
calls that name — so the cases that run on every backend (test_cases.py) cover the whole contract.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import gradlab as gl
from gradlab.backends import contract
from gradlab.backends.numpy_backend import NumpyBackend

from . import cases_nn, cases_ops  # noqa: F401  (importing them registers their cases)
from .conftest import backend_params
from .fake_backend import PRIMITIVE_NAMES, recording
from .harness import CASES, run
from .primitive_table import DIRECT, FUSED_CASES, PRIMITIVE_CASES

def test_the_table_names_every_primitive():
    assert sorted(PRIMITIVE_CASES) == sorted(PRIMITIVE_NAMES), (
        f"primitives without a case: {sorted(set(PRIMITIVE_NAMES) - set(PRIMITIVE_CASES))}; "
        f"table entries that are not primitives: {sorted(set(PRIMITIVE_CASES) - set(PRIMITIVE_NAMES))}")
    unknown = {c for c in PRIMITIVE_CASES.values() if c not in CASES and c not in DIRECT}
    assert not unknown, f"the table names cases that do not exist: {sorted(unknown)}"


# the fused kernels of the contract (a list that arrived with the fused-kernel work; none before it)
FUSED_NAMES = tuple(name for names in getattr(contract, "FUSED_KERNELS", {}) for name in names.split())
TABLE = {**PRIMITIVE_CASES, **{name: FUSED_CASES[name] for name in FUSED_NAMES if name in FUSED_CASES}}


def test_the_table_names_every_fused_kernel():
    missing = sorted(set(FUSED_NAMES) - set(FUSED_CASES))
    assert not missing, f"fused kernels without a case in primitive_table.FUSED_CASES: {missing}"
    unknown = {c for c in FUSED_CASES.values() if c not in CASES and c not in DIRECT}
    assert not unknown, f"the table names cases that do not exist: {sorted(unknown)}"


@pytest.mark.parametrize("kernel", sorted(name for name, case_name in TABLE.items() if case_name not in DIRECT))
def test_the_named_case_reaches_the_kernel(kernel):
    """Run on the fake device (numpy's kernels, and the contract's composed fused ones), the case calls it."""
    from .conftest import Sizes

    case_ = CASES[TABLE[kernel]]
    with recording() as seen:
        run(case_, gl.device("fake"), Sizes())
    assert kernel in seen, f"the case {case_.name} never calls '{kernel}' (it calls {sorted(seen)})"


@pytest.mark.parametrize("device_type", backend_params(include_reference=True))
def test_backend_has_every_primitive(device_type):
    backend = gl.device(device_type).backend
    missing = [name for name in PRIMITIVE_NAMES + FUSED_NAMES if not callable(getattr(backend, name, None))]
    assert not missing, f"the {backend.name} backend lacks {missing}"
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

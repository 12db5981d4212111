"""Every registered case on every backend under test agrees with the numpy backend, forward and backward."""

from __future__ import annotations

import pytest

from . import cases_nn, cases_ops  # noqa: F401  (importing them registers their cases)
from .harness import CASES, check


def _params():
    return [pytest.param(name, id=name, marks=[pytest.mark.slow] if c.slow else []) for name, c in CASES.items()]


@pytest.mark.parametrize("case_name", _params())
def test_case_matches_numpy(case_name, backend_device, sizes):
    check(CASES[case_name], backend_device, sizes)

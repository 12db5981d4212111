"""The API coverage report (benchmarks/api_coverage.py) stays honest: its exclusions are real, its figure holds."""

import importlib.util
from pathlib import Path

import pytest

from helpers import requires_torch

REPORT = Path(__file__).resolve().parent.parent / "benchmarks" / "api_coverage.py"

GOAL = 0.90  # of the in-scope names: present, with PyTorch's parameter names, and named in a test


@pytest.fixture(scope="module")
def coverage():
    spec = importlib.util.spec_from_file_location("api_coverage", REPORT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, module.report()


@requires_torch
def test_every_out_of_scope_rule_excludes_some_name(coverage):
    module, result = coverage
    used = {reason for groups in result["results"].values() for _, reason in groups["out of scope"]}
    unused = [reason for reason, _, _ in module._OUT_OF_SCOPE if reason not in used]
    assert not unused, f"exclusion rules that match no PyTorch name (remove them): {unused}"


@requires_torch
def test_a_name_gradlab_has_counts_in_scope_even_in_an_excluded_family(coverage):
    _, result = coverage
    tensor = result["results"]["torch.Tensor"]
    assert "conj" not in [name for name, _ in tensor["out of scope"]]  # complex dtypes are out; conj of a real is in
    assert "to_sparse" in [name for name, _ in tensor["out of scope"]]


@requires_torch
def test_at_least_90_percent_of_the_in_scope_names_are_covered(coverage):
    _, result = coverage
    assert result["covered"] >= GOAL * result["in_scope"], (
        f"{result['covered']} of {result['in_scope']} in-scope names covered, under {GOAL:.0%}; "
        "python benchmarks/api_coverage.py --list missing shows what is left")

"""The suite must import and collect on a machine without PyTorch: torch is read only inside tests.

A module-level use of ``torch.`` (a parametrize list, a constant, a class body) runs at collection and
stops the whole run where torch is absent, before any test has a chance to skip. This scan finds such
uses in every test file, so the run *with* torch fails on them too; ``.ci/run`` also collects and runs
the fast tests in a venv without torch.
"""

import ast
import pathlib

import pytest

TESTS = pathlib.Path(__file__).parent


def _mentions_torch(node) -> bool:
    return any(isinstance(n, ast.Name) and n.id == "torch" for n in ast.walk(node))


def _torch_uses_run_at_import(tree) -> list:
    """Lines where ``torch.<name>`` is evaluated when the module is imported (not inside a function body,
    and not under an ``if`` that tests torch itself, such as ``if torch is not None:``)."""
    found = []

    def visit(node, guarded):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for part in node.decorator_list + node.args.defaults + node.args.kw_defaults:
                if part is not None:
                    visit(part, guarded)
            return  # the body runs only when the test runs
        if isinstance(node, ast.Lambda):
            return
        if isinstance(node, ast.If) and _mentions_torch(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, guarded)
            return
        if isinstance(node, ast.Try) and any(isinstance(h.type, ast.Name) and h.type.id in ("ImportError",
                                                                                            "ModuleNotFoundError")
                                             for h in node.handlers):
            for child in node.body:  # try: import torch / except ImportError: the import itself is allowed
                visit(child, True)
            for part in node.handlers + node.orelse + node.finalbody:
                visit(part, guarded)
            return
        if (not guarded and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "torch"):
            found.append(node.lineno)
        for child in ast.iter_child_nodes(node):
            visit(child, guarded)

    skipped_without_torch = False  # after `torch = pytest.importorskip("torch")` the module is not collected without it
    for statement in tree.body:
        visit(statement, skipped_without_torch)
        skipped_without_torch = skipped_without_torch or _imports_or_skips_torch(statement)
    return found


def _imports_or_skips_torch(statement) -> bool:
    return (isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Attribute) and statement.value.func.attr == "importorskip"
            and bool(statement.value.args) and isinstance(statement.value.args[0], ast.Constant)
            and statement.value.args[0].value == "torch")


@pytest.mark.parametrize("path", sorted(TESTS.rglob("*.py")), ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_module_reads_torch_when_it_is_imported(path):
    lines = _torch_uses_run_at_import(ast.parse(path.read_text(), filename=str(path)))
    assert not lines, (
        f"{path.relative_to(TESTS)} uses torch at import time on line(s) {lines}: without PyTorch the whole suite "
        "stops at collection. Move the torch name inside the test function (parametrize by name and getattr(torch, "
        "name) inside), or guard it with `if torch is not None:`.")


def test_the_scan_finds_a_module_level_use_and_allows_uses_inside_tests():
    source = '''
import pytest
from helpers import torch
try:
    import torch.nn.functional as TF
except ImportError:
    TF = None
if torch is not None:
    DTYPES = [torch.float32]
@pytest.mark.parametrize("fn", [torch.atan2])
def test_a(fn):
    return torch.tensor([1.0])
class TestB:
    kind = torch.float64
    def test_c(self):
        return torch.ones(2)
CASES = [lambda: torch.zeros(1)]
'''
    assert _torch_uses_run_at_import(ast.parse(source)) == [10, 14]


def test_the_scan_allows_torch_at_module_level_after_importorskip():
    source = '''
import pytest
EARLY = torch.float32
torch = pytest.importorskip("torch", reason="not installed")
class Cube(torch.autograd.Function):
    pass
'''
    assert _torch_uses_run_at_import(ast.parse(source)) == [3]

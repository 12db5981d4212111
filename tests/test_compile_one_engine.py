"""The compiler holds no derivative: it compiles what the backend was asked to do, so every gradient comes
from the engine's own backward (gradlab/ops, gradlab/nn/functional), written once.

Read from the source of every module under gradlab/compile: none imports an op's class (the way a rule
table would, to restate its backward), none defines or calls a ``backward`` or ``derivative``, and none
names a Function's ``forward``; only the engine's backward is run (``trace.py`` steps through it, and a step
that falls back to eager calls ``loss.backward()``).
"""

from __future__ import annotations

import ast
import pathlib

import pytest

import gradlab

COMPILE = pathlib.Path(gradlab.__file__).parent / "compile"
MODULES = sorted(COMPILE.glob("*.py"))
# What compile may take from the engine: grad mode, the engine's backward and its observers, the tracer,
# autocast's state (part of a signature), tensors' creation, dtypes, the container and optimizer it drives.
ALLOWED = {"autograd.grad_mode", "autograd.engine", "autograd.observers", "autograd.function", "jit.tracer",
           "ops.autocast", "creation", "dtypes", "generator", "nn.modules.container", "optim.optimizer",
           "backends.numpy_backend", "backends.numpy_kernels"}


def _engine_imports(tree, module):
    """(dotted name relative to gradlab, names) of each import of the engine in the module."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level >= 2:
            yield node.module or "", [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gradlab."):
            yield node.module[len("gradlab."):], [a.name for a in node.names]


def test_the_compiler_modules_are_the_ones_the_docs_name():
    names = {p.stem for p in MODULES}
    assert not any(n.startswith("rules") for n in names) and not {"plan", "generic"} & names, sorted(names)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_no_compile_module_imports_an_op_or_restates_a_backward(path):
    tree = ast.parse(path.read_text(), str(path))
    for module, names in _engine_imports(tree, path):
        for name in names:  # (from ..ops import autocast: the module gradlab.ops.autocast)
            assert module in ALLOWED or f"{module}.{name}" in ALLOWED, f"{path.name} imports {name} from gradlab.{module}"
        if module == "autograd.function":
            assert names == ["TrackedTensor"], f"{path.name} imports {names} from autograd.function"
    eager = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef) and f.name == "_eager" for n in ast.walk(f)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            assert "backward" not in node.name.lower() and "derivative" not in node.name.lower(), \
                f"{path.name}:{node.lineno} defines {node.name}"
        if isinstance(node, ast.Attribute) and id(node) not in eager:  # (the eager fallback: loss.backward())
            assert node.attr not in ("backward", "derivative", "forward", "_node_type"), \
                f"{path.name}:{node.lineno} uses .{node.attr}"

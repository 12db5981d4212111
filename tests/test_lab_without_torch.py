"""Only the lab's PyTorch adapter (gradlab/lab/pytorch) imports torch, and only once a torch object reaches the lab.

A user without torch loses nothing: ``import gradlab``, drawing and stepping a gradlab model never
load it (these tests run in CI's first check, on a machine without torch).
"""

from __future__ import annotations

import ast
import pathlib
import subprocess
import sys

GRADLAB = pathlib.Path(__file__).resolve().parent.parent / "gradlab"


def _torch_imports_outside_the_adapter() -> list:
    found = []
    for path in GRADLAB.rglob("*.py"):
        if "pytorch" in path.relative_to(GRADLAB).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            if any(name == "torch" or name.startswith("torch.") for name in names):
                found.append(f"{path.relative_to(GRADLAB)}:{node.lineno}")
    return found


def test_only_the_adapter_imports_torch():
    assert _torch_imports_outside_the_adapter() == []


def test_drawing_a_gradlab_model_never_loads_torch():
    code = ("import sys, gradlab as gl\n"
            "model = gl.nn.Sequential(gl.nn.Linear(3, 4), gl.nn.Tanh(), gl.nn.Linear(4, 1))\n"
            "with gl.lab.record() as rec:\n"
            "    loss = model(gl.randn(5, 3)).sum()\n"
            "view = gl.lab.GraphView(rec)\n"
            "gl.lab.BackpropStepper(loss).run_to_end()\n"
            "print('torch' in sys.modules, len(view.graph.nodes) > 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]

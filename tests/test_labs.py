"""Every lab notebook and every solution runs top to bottom, headless (the labs are product, not decoration).

A lab ships with its exercises unsolved: each check says "not done yet" (○) and none fails (✗). Its
solution in ``labs/solutions/`` solves every one of them: all pass (✓), none is left undone. A lab that
runs PyTorch beside gradlab (lab 13) skips where PyTorch is not installed, and says so.
"""

from __future__ import annotations

import re
import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "labs"
LABS = sorted(ROOT.glob("*.ipynb"))
SOLUTIONS = sorted((ROOT / "solutions").glob("*.ipynb"))
VERDICT = re.compile(r"^([✓✗○]) ", re.MULTILINE)  # how a gl.lab check's verdict prints (exercises.Verdict)


_RUNS: dict = {}  # path -> verdicts: a lab runs once even when its solution's test compares with it


def needs_pytorch(path: Path) -> bool:
    """Whether the notebook imports PyTorch (lab 13 runs it beside gradlab)."""
    return "import torch" in path.read_text(encoding="utf-8")


def run(path: Path, tmp_path: Path) -> list:
    """Execute the notebook in a fresh kernel; the verdict symbols its outputs printed, in order."""
    if path in _RUNS:
        return _RUNS[path]
    if needs_pytorch(path) and importlib.util.find_spec("torch") is None:
        pytest.skip(f"{path.name} runs PyTorch beside gradlab, and PyTorch is not installed (pip install torch==2.13.0); "
                    "without it the lab's first cell says how to install it")
    nbformat = pytest.importorskip("nbformat", reason="nbformat comes with the dev extra: pip install -e '.[dev]'")
    nbclient = pytest.importorskip("nbclient", reason="nbclient comes with the dev extra: pip install -e '.[dev]'")
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        f"{path.name} is stored with outputs; clear them before committing"
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    texts = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            texts.append(output.get("text", "") if output.get("output_type") == "stream"
                         else output.get("data", {}).get("text/plain", ""))
    _RUNS[path] = VERDICT.findall("\n".join(texts))
    return _RUNS[path]


@pytest.mark.slow
@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_lab_runs_top_to_bottom_with_its_exercises_unsolved(path, tmp_path):
    verdicts = run(path, tmp_path)
    assert "✗" not in verdicts, f"{path.name}: an exercise fails as shipped; unsolved, each must say 'not done yet'"
    solution = ROOT / "solutions" / path.name
    if solution.exists():
        assert verdicts.count("○") >= 2, f"{path.name}: a lab has at least two checked exercises"


@pytest.mark.slow
@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.name for p in SOLUTIONS])
def test_each_solution_passes_every_check_of_its_lab(path, tmp_path):
    lab = ROOT / path.name
    assert lab.exists(), f"solutions/{path.name} has no lab of that name in labs/"
    verdicts = run(path, tmp_path)
    assert verdicts and set(verdicts) == {"✓"}, f"solutions/{path.name}: every check passes, got {verdicts}"
    unsolved = run(lab, tmp_path)
    assert len(verdicts) == len(unsolved), (f"solutions/{path.name} checks {len(verdicts)} answers, "
                                            f"labs/{path.name} {len(unsolved)}: the two should ask the same")


@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_every_lab_has_a_browser_test(path):
    """A lab is product only once a real browser has run it: some test under tests/browser opens it."""
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT.parent / "tests" / "browser").glob("test_*.py"))
    assert path.name in sources or path.stem in sources, \
        f"{path.name}: no test under tests/browser opens it (write tests/browser/test_lab{path.name[:2]}_in_browser.py)"

"""benchmarks/compare_commits.py: two trees timed in alternating subprocesses, each importing its own gradlab."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "benchmarks", "compare_commits.py")


@pytest.mark.slow
def test_two_trees_are_timed_in_pairs_and_compared(tmp_path):
    done = subprocess.run([sys.executable, SCRIPT, ROOT, ROOT, "--pairs", "2", "--repeats", "2", "--no-torch"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert len(re.findall(r"pair \d: old [\d.]+ µs/op, new [\d.]+ µs/op", out)) == 2
    for title in ("chain of 100 adds", "MLP 784-256-256-10 SGD step"):
        assert title in out
    ratios = [float(r) for r in re.findall(r"new / old .*\(median ([\d.]+)\)", out)]
    assert len(ratios) == 2 and all(r > 0 for r in ratios)  # a figure each; its size is the machine's noise, not a test
    assert "/ torch" not in out and "PyTorch" not in out


def test_a_worker_imports_the_tree_it_is_given_or_says_so(tmp_path):
    (tmp_path / "gradlab").mkdir()
    (tmp_path / "gradlab" / "__init__.py").write_text("raise ImportError('not this one')\n")
    done = subprocess.run([sys.executable, SCRIPT, "--worker", str(tmp_path), "--repeats", "1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "not this one" in done.stderr

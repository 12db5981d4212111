"""compare_devices' PyTorch rows where there is no PyTorch: they say how to install it, gradlab's rows are timed.

Run in a fresh Python where ``import torch`` fails as it does where torch is not installed, so these
hold on any machine; test_lab_torch_timings.py times the rows with torch.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import gradlab as gl
from gradlab.lab.timing import NO_TORCH, compare_devices


def run_without_torch(code: str) -> str:
    """``code`` in a fresh Python where ``import torch`` fails as it does where torch is not installed."""
    prelude = "import sys\nsys.modules['torch'] = None  # what a missing package looks like to import\n"
    done = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_without_torch_the_pytorch_rows_say_how_to_install_it_and_gradlabs_are_timed():
    out = run_without_torch("""
        import numpy as np, gradlab as gl
        from gradlab.lab.timing import compare_devices
        table = compare_devices(lambda a: a * 2, gl.randn(4), devices=["cpu"], repeats=3, budget_s=None,
                                torch=(lambda a: a * 2, np.ones(4)))
        for row in table:
            print(row.device, row.label, row.available, row.timed, row.reason, sep="|")
    """)
    assert out.splitlines() == ["cpu|cpu (numpy)|True|True|",
                                f"torch:cpu|PyTorch cpu|False|False|{NO_TORCH}",
                                f"torch:cuda|PyTorch cuda|False|False|{NO_TORCH}"]
    assert NO_TORCH == "PyTorch is not installed: pip install torch"


def test_a_table_without_torch_rows_never_loads_torch():
    code = ("import sys, gradlab as gl\nfrom gradlab.lab.timing import compare_devices\n"
            "table = compare_devices(lambda a: a + 1, gl.randn(3), devices=['cpu'], repeats=2)\n"
            "assert [r.device for r in table] == ['cpu']\nprint('torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_torch_call_that_is_not_a_function_and_its_arguments_is_a_clear_error():
    for wrong in ("torch", 3, (), (gl.randn(2),)):
        with pytest.raises(TypeError, match=r"compare_devices\(fn, \*args, torch=...\): torch is the same work "
                                            r"written for PyTorch, as \(torch_fn, \*torch_args\), e\.g\. "
                                            r"torch=\(torch_step, torch_model, x, y\); got "):
            compare_devices(lambda a: a, gl.randn(2), devices=["cpu"], repeats=1, torch=wrong)

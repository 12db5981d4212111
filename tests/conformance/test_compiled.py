"""Every conformance program, compiled: a step made from the backend calls it recorded gives eager's gradients.

Each case's ``forward_backward(fn, *leaves)`` runs here twice: eagerly, as the case defines it, and as a
``gl.compile.make_step`` whose model computes ``fn(*leaves)`` and whose loss is the same weighted sum.
The step's second call runs the program planned from what the first call asked the backend to do
(``gradlab/compile/trace.py``, ``lower.py``); on numpy every gradient must equal eager's bit for bit. A
step may fall back to eager only with a reason it states (a value read into Python); only the cases named in
``CAPTURED_INDEX`` may fall back for an array their record cannot account for.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import gradlab as gl

from . import cases_nn, cases_ops, harness  # noqa: F401  (importing them registers their cases)
from .conftest import Sizes
from .harness import CASES

# max_min_reductions returns from fn two tensors it computed before (x.max(-1), x.min(0)): the eager backward
# frees their graph, so no second run of fn can go back through it (eager raises too). cumulative does the same
# with graphs that keep nothing saved: its step runs eagerly, saying why (a tensor computed before the step).
# These index with a tensor made before the step (captured by fn); its op takes the index's .array, which the
# record cannot tell from an array computed with numpy inside the op: such a step runs eagerly, saying so.
CAPTURED_INDEX = {"advanced_and_boolean_indexing", "index_add_scatter_gather", "scatter_reduce_prod_amax_amin"}
CPU_CASES = [name for name, c in CASES.items() if c.dtype in (None, gl.float64) and not name.startswith("max_min")]


def _compiled_twin(original, seen):
    """``forward_backward`` that also compiles the same program and compares its gradients with eager's."""

    def forward_backward(fn, *leaves, seed=99):
        results = original(fn, *leaves, seed=seed)
        grads = {i: x.grad for i, x in enumerate(leaves) if isinstance(x, gl.Tensor) and x.grad is not None}
        if not grads:
            return results
        weights = {}

        def model(_):
            outs = fn(*leaves)
            return dict(outs) if isinstance(outs, dict) else {"out": outs}

        def loss_fn(outs, _):
            total = None
            for i, out in enumerate(outs.values()):
                if isinstance(out, gl.Tensor) and out.requires_grad:
                    w = weights.setdefault(i, harness.on(out.device, harness.host(out.shape, seed + i), out.dtype))
                    term = (out * w).sum()
                    total = term if total is None else total + term
            return total

        step = gl.compile.make_step(model, loss_fn)
        x = gl.zeros(1, dtype=gl.float64)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", gl.compile.CompileWarning)
            for _ in range(2):  # the first call traces (eagerly), the second runs the program
                for t in leaves:
                    if isinstance(t, gl.Tensor):
                        t.grad = None
                step(x, x)
        compiled = next(iter(step.cache.values()), None)
        seen.append((step.fallback, compiled, [str(w.message) for w in caught]))
        for i, want in grads.items():
            got = leaves[i].grad
            assert got is not None, f"leaf {i} got no gradient from the compiled step"
            np.testing.assert_array_equal(got.numpy(), want.numpy(), err_msg=f"leaf {i}: compiled != eager")
            leaves[i].grad = want  # the case goes on with eager's results
        return results

    return forward_backward


@pytest.mark.parametrize("case_name", [pytest.param(n, marks=[pytest.mark.slow] if CASES[n].slow else [])
                                       for n in CPU_CASES])
def test_the_compiled_step_gives_eager_gradients_bit_for_bit(case_name, monkeypatch):
    seen: list = []
    monkeypatch.setattr(harness, "forward_backward", _compiled_twin(harness.forward_backward, seen))
    for module in (cases_ops, cases_nn):
        if hasattr(module, "forward_backward"):
            monkeypatch.setattr(module, "forward_backward", harness.forward_backward)
    gl.manual_seed(0)
    CASES[case_name].fn(gl.device("cpu"), Sizes(), CASES[case_name].dtype)
    for fallback, compiled, messages in seen:
        if fallback is not None:
            assert messages and "running this step eagerly" in messages[0], fallback
            outside = "made outside the backend's calls" in fallback
            assert outside == (case_name.split("[")[0] in CAPTURED_INDEX), f"{case_name}: {fallback}"
            continue
        assert compiled is not None, f"{case_name}: no program and no fallback"

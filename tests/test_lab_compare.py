"""compare_engines' matching and verdicts, without torch: parameters by name, shapes, weights, gradients.

The two models' parameters reach compare.py as plain sides (shape, dtype, float64 values and gradient);
these tests make the sides by hand. test_lab_torch_compare.py runs one model in both engines.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.lab.compare import EngineComparison, Side, compare_engines, match


def side(name, grad, value=None, dtype="float32"):
    grad = None if grad is None else np.asarray(grad, dtype=np.float64)
    shape = list(np.shape(grad if value is None else value))
    value = np.ones(shape) if value is None else np.asarray(value, dtype=np.float64)
    return Side(name, shape, dtype, value, grad)


# --- matching, without torch --------------------------------------------------------------------------

def test_each_parameter_gets_its_verdict_and_why():
    g = {"fc.weight": side("fc.weight", [[1.0, 2.0]]), "fc.bias": side("fc.bias", [0.5]),
         "out.weight": side("out.weight", [[1.0, 0.0]]), "extra": side("extra", [1.0]),
         "cut.weight": side("cut.weight", None, value=[1.0])}
    t = {"fc.weight": side("fc.weight", [[1.0, 2.0 + 1e-6]]), "fc.bias": side("fc.bias", [0.75]),
         "out.weight": side("out.weight", [[1.0], [0.0]]), "cut.weight": side("cut.weight", [1.0]),
         "only_torch": side("only_torch", [2.0])}
    rows = {row.name: row for row in match(g, t)}
    assert list(rows) == ["fc.weight", "fc.bias", "out.weight", "extra", "cut.weight", "only_torch"]
    assert rows["fc.weight"].verdict == "same" and rows["fc.weight"].max_abs == pytest.approx(1e-6)
    assert rows["fc.weight"].relative == pytest.approx(1e-6 / (2.0 + 1e-6))
    assert rows["fc.bias"].verdict == "differs" and rows["fc.bias"].relative == pytest.approx(0.25 / 0.75)
    assert rows["fc.bias"].why == ("the gradients differ: max |Δ| 0.25 is 3.3e-01 of the largest |∂L/∂W| "
                                   "(tolerance 1e-04)")
    assert rows["out.weight"].verdict == "mismatch"
    assert rows["out.weight"].why == "shapes differ: [1, 2] in gradlab, [2, 1] in PyTorch"
    assert rows["extra"].why == "only in the gradlab model: the PyTorch model has no parameter 'extra'"
    assert rows["only_torch"].why == "only in the PyTorch model: the gradlab model has no parameter 'only_torch'"
    assert rows["cut.weight"].verdict == "no gradient" and rows["cut.weight"].why.startswith(
        "no gradient in gradlab: call backward() on its loss first, or the parameter is not used by the loss")
    assert {row.module for row in rows.values()} == {"fc", "out", "", "cut"}


def test_different_weights_are_a_mismatch_not_a_gradient_difference():
    rows = match({"w": side("w", [1.0], value=[0.5])}, {"w": side("w", [1.0], value=[0.7])})
    assert rows[0].verdict == "mismatch" and rows[0].why == ("the weights differ (max |Δ| 0.2): not the same numbers, "
                                                             "so their gradients cannot agree")


def test_the_tolerance_is_float32s_or_float64s_or_the_one_given():
    g64, t64 = side("w", [1.0], dtype="float64"), side("w", [1.0 + 1e-8], dtype="float64")
    assert match({"w": g64}, {"w": t64})[0].verdict == "differs"  # 1e-8 is far above float64's rounding
    assert match({"w": side("w", [1.0])}, {"w": side("w", [1.0 + 1e-8])})[0].verdict == "same"
    assert match({"w": g64}, {"w": t64}, tolerance=1e-6)[0].verdict == "same"
    nan = match({"w": side("w", [np.nan])}, {"w": side("w", [1.0])})[0]
    assert nan.verdict == "differs" and nan.relative == float("inf")


def test_the_headline_says_when_the_models_are_not_the_same_model():
    g = {"a.weight": side("a.weight", [[1.0, 2.0]]), "b.weight": side("b.weight", [1.0])}
    t = {"a.weight": side("a.weight", [[1.0], [2.0]]), "c.weight": side("c.weight", [1.0])}
    comparison = EngineComparison(match(g, t), {"a": ("Linear", "Linear"), "b": ("Linear", None),
                                                "c": (None, "Linear")}, (1.0, 1.5))
    assert not comparison.models_match and not comparison.same
    assert comparison.headline() == (
        "These are not the same model: 1 parameter only in gradlab (b.weight); 1 parameter only in PyTorch "
        "(c.weight); 1 shape differs (a.weight: [1, 2] vs [2, 1]). Only parameters in both, of the same shape and "
        "weights, are compared; each graph is its own engine's (loss 1 in gradlab, 1.5 in PyTorch).")
    assert [line[2] for line in comparison.table()] == ["1×2 vs 2×1", "1", "1"]
    html = comparison.to_html()
    assert html.count('class="gl-compare-row gl-compare-mismatch"') == 3
    assert "var(--jp-error-color1, #b91c1c)" in html  # the alarm ink follows the learner's theme
    with pytest.raises(KeyError, match=r"no parameter 'd'; the parameters are a.weight, b.weight, c.weight"):
        comparison["d"]


def test_the_table_groups_the_parameters_by_module_and_names_each_modules_class():
    g = {"fc.weight": side("fc.weight", [1.0]), "fc.bias": side("fc.bias", [1.0]), "w": side("w", [1.0])}
    comparison = EngineComparison(match(g, dict(g)), {"fc": ("Linear", "Linear"), "": ("Net", "TorchNet")},
                                  (0.5, 0.5))
    assert comparison.same
    assert [line[:2] for line in comparison.table()] == [["fc (Linear)", "fc.weight"], ["fc (Linear)", "fc.bias"],
                                                         ["(the model) (Net in gradlab, TorchNet in PyTorch)", "w"]]
    assert comparison.headline().startswith("The same model in both engines (3 parameters in 2 modules), and the "
                                            "same gradients: all 3 agree")
    assert str(comparison).splitlines()[1].split() == ["module", "parameter", "shape", "max", "|Δ∂L/∂W|",
                                                       "relative", "verdict"]


def test_gradlab_inputs_in_the_torch_places_are_clear_errors():
    gl.manual_seed(0)
    model = nn.Linear(2, 1)
    loss = model(gl.randn(3, 2)).sum()
    with pytest.raises(TypeError, match=r"compare_engines\(loss, torch_loss, model, torch_model\): torch_loss is "
                                        r"the PyTorch loss \(a torch.Tensor\), got "):
        compare_engines(loss, loss, model, model)
    with pytest.raises(TypeError, match=r"loss is the gradlab loss \(a gradlab Tensor\), got "):
        compare_engines(1.0, loss, model, model)
    with pytest.raises(TypeError, match=r"model is the gradlab model \(a gradlab.nn.Module\), got "):
        compare_engines(loss, loss, "model", model)


def test_compare_engines_is_in_gl_lab_and_loads_no_torch_until_asked():
    code = ("import sys, gradlab as gl\nassert callable(gl.lab.compare_engines)\n"
            "from gradlab.lab.compare import match\nprint('torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"

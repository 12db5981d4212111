"""compare_engines: one model in gradlab and in PyTorch, matched parameter by parameter after both backwards.

The matching and the verdicts (compare.py) need no torch and are tested on hand-made sides; the rest
runs the same model in both engines, with its weights copied across, and checks each difference
against the two engines' own ``.grad``.
"""

from __future__ import annotations

import subprocess
import sys
from html import escape

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.lab.compare import EngineComparison, Side, compare_engines, match

NO_TORCH = "PyTorch is not installed (pip install torch==2.13.0)"


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


# --- the same model in both engines -------------------------------------------------------------------

torch = pytest.importorskip("torch", reason=NO_TORCH)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + gl.relu(self.fc(self.norm(x)))


class Net(nn.Module):
    def __init__(self, width=6, depth=2):
        super().__init__()
        self.inp = nn.Linear(3, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth)])
        self.out = nn.Linear(width, 2)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


class TorchBlock(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.fc = torch.nn.Linear(width, width)

    def forward(self, x):
        return x + torch.relu(self.fc(self.norm(x)))


class TorchNet(torch.nn.Module):
    def __init__(self, width=6, depth=2, out=2):
        super().__init__()
        self.inp = torch.nn.Linear(3, width)
        self.blocks = torch.nn.ModuleList([TorchBlock(width) for _ in range(depth)])
        self.out = torch.nn.Linear(width, out)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def copied(model, torch_model):
    """The torch model with the gradlab model's weights (where names and shapes agree)."""
    theirs = torch_model.state_dict()
    torch_model.load_state_dict({k: torch.tensor(v.numpy()) if k in theirs and list(theirs[k].shape) == list(v.shape)
                                 else theirs[k] for k, v in model.state_dict().items() if k in theirs}, strict=False)
    return torch_model


def both(model=None, torch_model=None, torch_loss_of=None, backward=(True, True)):
    gl.manual_seed(0)
    torch.manual_seed(0)
    model = model or Net()
    torch_model = copied(model, torch_model or TorchNet())
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    loss = (model(gl.tensor(x)) ** 2).mean()
    torch_loss = (torch_loss_of or (lambda out: (out ** 2).mean()))(torch_model(torch.tensor(x)))
    if backward[0]:
        loss.backward()
    if backward[1]:
        torch_loss.backward()
    return loss, torch_loss, model, torch_model


def test_the_same_residual_net_has_the_same_gradients_in_both_engines():
    loss, torch_loss, model, torch_model = both()
    comparison = compare_engines(loss, torch_loss, model, torch_model, draw=False)
    assert comparison.models_match and comparison.same
    torch_grads = {k: p.grad.double().numpy() for k, p in torch_model.named_parameters()}
    assert [row.name for row in comparison.rows] == [k for k, _ in model.named_parameters()] == list(torch_grads)
    for name, p in model.named_parameters():
        mine, theirs = p.grad.numpy().astype(np.float64), torch_grads[name]
        row = comparison[name]
        assert row.max_abs == np.abs(mine - theirs).max()
        assert row.relative == pytest.approx(row.max_abs / max(np.abs(mine).max(), np.abs(theirs).max()))
        assert row.relative < 1e-4
    assert comparison.modules["blocks.1.norm"] == ("LayerNorm", "LayerNorm")
    assert comparison.losses == (pytest.approx(loss.item()), pytest.approx(torch_loss.item()))
    assert [line[0] for line in comparison.table()][:4] == ["inp (Linear)", "inp (Linear)",
                                                            "blocks.0.norm (LayerNorm)", "blocks.0.norm (LayerNorm)"]


def test_a_different_torch_loss_is_told_apart_parameter_by_parameter():
    loss, torch_loss, model, torch_model = both(torch_loss_of=lambda out: (out ** 2).sum())  # sum, not mean
    comparison = compare_engines(loss, torch_loss, model, torch_model, draw=False)
    assert comparison.models_match and not comparison.same
    assert {row.verdict for row in comparison.rows} == {"differs"}
    assert comparison.headline().startswith("The same model in both engines, but 12 of 12 gradients differ")


def test_a_torch_model_with_another_layer_or_shape_is_said_not_to_match():
    loss, torch_loss, model, torch_model = both(torch_model=TorchNet(depth=3, out=4))
    comparison = compare_engines(loss, torch_loss, model, torch_model, draw=False)
    assert not comparison.models_match
    assert [r.name for r in comparison.mismatches] == ["out.weight", "out.bias", "blocks.2.norm.weight",
                                                       "blocks.2.norm.bias", "blocks.2.fc.weight", "blocks.2.fc.bias"]
    assert comparison.headline().startswith(
        "These are not the same model: 4 parameters only in PyTorch (blocks.2.norm.weight, blocks.2.norm.bias, "
        "blocks.2.fc.weight, blocks.2.fc.bias); 2 shapes differ (out.weight: [2, 6] vs [4, 6], out.bias: [2] vs [4])")
    assert comparison["inp.weight"].verdict == "differs"  # the models differ downstream: so do the gradients


def test_weights_not_copied_across_are_named_as_the_reason():
    gl.manual_seed(0)
    torch.manual_seed(0)
    model, torch_model = nn.Linear(3, 2), torch.nn.Linear(3, 2)  # each engine's own random weights
    x = np.ones((4, 3), dtype=np.float32)
    loss, torch_loss = model(gl.tensor(x)).sum(), torch_model(torch.tensor(x)).sum()
    loss.backward()
    torch_loss.backward()
    comparison = compare_engines(loss, torch_loss, model, torch_model, draw=False)
    assert comparison["weight"].verdict == "mismatch" and comparison["weight"].why.startswith("the weights differ")
    assert comparison.headline().startswith(
        "These are not the same model: different weights in weight, bias (copy them across first: "
        "torch_model.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()}))")


def test_a_missing_torch_backward_is_no_gradient_not_a_difference():
    loss, torch_loss, model, torch_model = both(backward=(True, False))
    comparison = compare_engines(loss, torch_loss, model, torch_model, draw=False)
    assert {row.verdict for row in comparison.rows} == {"no gradient"}
    assert comparison["out.bias"].why.startswith("no gradient in PyTorch: call backward() on its loss first")


def test_torch_inputs_in_gradlabs_places_are_clear_errors():
    loss, torch_loss, model, torch_model = both()
    with pytest.raises(TypeError, match=r"gradlab's loss and model come first, PyTorch's second; got a torch tensor "
                                        r"first"):
        compare_engines(torch_loss, loss, torch_model, model)
    with pytest.raises(ValueError, match=r"torch_loss is the one number backward started from, got shape \[5, 2\]"):
        compare_engines(loss, torch_model(torch.ones(5, 3)), model, torch_model)
    with pytest.raises(ValueError, match=r"tolerance=...\): a positive relative difference such as 1e-4, got 0"):
        compare_engines(loss, torch_loss, model, torch_model, tolerance=0)


# --- the two graphs ---------------------------------------------------------------------------------------

@pytest.fixture
def drawn():
    pytest.importorskip("anywidget", reason="the graphs need anywidget: pip install 'gradlab[lab]'")
    loss, torch_loss, model, torch_model = both()
    return compare_engines(loss, torch_loss, model, torch_model), model, torch_model


def test_each_engine_draws_its_own_graph_with_every_parameter_named(drawn):
    comparison, model, torch_model = drawn
    g_view, t_view = comparison.views
    assert t_view.graph.source == "torch" and g_view.graph.source == "tensor"
    names = [k for k, _ in model.named_parameters()]
    for view in comparison.views:
        assert sorted(view._compare_params.values()) == sorted(names)
        assert all(view.graph.nodes[i].kind == "param" and view.graph.nodes[i].label == n
                   for i, n in view._compare_params.items())
    # PyTorch's Linear transposes its weight in a node of its own (TBackward0); gradlab's Addmm takes it as it is
    t_ops = [n.op for n in t_view.graph.nodes.values() if n.kind == "op"]
    assert t_ops.count("TBackward0") == 4 and "TBackward0" not in {n.op for n in g_view.graph.nodes.values()}
    assert "PyTorch's alone: TBackward0 ×4" in comparison.graphs_line()
    assert escape(comparison.graphs_line()) in comparison.to_html() and comparison.graphs_line() in str(comparison)


def test_both_graphs_are_coloured_by_each_parameters_difference(drawn):
    comparison, _, _ = drawn
    for view in comparison.views:
        assert view.color_mode == "difference" and view.color_labels["difference"] == "difference between the engines"
        sizes = view._added_modes["difference"][0]
        for node_id, name in view._compare_params.items():
            assert sizes[node_id] == max(comparison[name].relative, 1e-8)
        assert all(sizes[n] is None for n in view.graph.nodes if n not in view._compare_params)


def test_a_parameter_selected_in_one_graph_is_selected_in_the_other(drawn):
    comparison, _, _ = drawn
    g_view, t_view = comparison.views
    by_name = {view: {n: i for i, n in view._compare_params.items()} for view in comparison.views}
    g_view.selected = by_name[g_view]["blocks.1.fc.weight"]  # what a click in gradlab's graph sets
    assert t_view.selected == by_name[t_view]["blocks.1.fc.weight"]
    t_view.selected = by_name[t_view]["inp.bias"]
    assert g_view.selected == by_name[g_view]["inp.bias"]
    comparison.select("out.weight")
    assert [view.selected for view in comparison.views] == [by_name[v]["out.weight"] for v in comparison.views]
    op = next(n.id for n in g_view.graph.nodes.values() if n.kind == "op")
    g_view.selected = op  # an operation has no match: the other graph keeps its selection
    assert t_view.selected == by_name[t_view]["out.weight"]


def test_the_widget_puts_the_table_above_the_two_graphs(drawn):
    comparison, _, _ = drawn
    widget = comparison.widget
    top, columns = widget.children
    assert "gradlab-compare" in widget._dom_classes and escape(comparison.headline()) in top.value
    assert [column.children[1] for column in columns.children] == list(comparison.views)
    data, _ = comparison._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data and data["text/html"] == comparison.to_html()


def test_models_that_do_not_match_are_drawn_each_as_its_own_and_said_not_to_match():
    pytest.importorskip("anywidget", reason="the graphs need anywidget: pip install 'gradlab[lab]'")
    loss, torch_loss, model, torch_model = both(torch_model=TorchNet(depth=3))
    comparison = compare_engines(loss, torch_loss, model, torch_model)
    g_view, t_view = comparison.views
    assert "blocks.2.fc.weight" in t_view._compare_params.values()
    assert "blocks.2.fc.weight" not in g_view._compare_params.values()
    only_torch = next(i for i, n in t_view._compare_params.items() if n == "blocks.2.fc.weight")
    assert t_view._added_modes["difference"][0][only_torch] == 1.0  # nothing to compare with: the top of the scale
    t_view.selected = only_torch
    assert g_view.selected == ""  # no such parameter in gradlab's graph: nothing selected there
    assert "These are not the same model" in comparison.to_html()

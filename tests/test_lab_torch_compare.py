"""compare_engines: one model in gradlab and in PyTorch, matched parameter by parameter after both backwards.

The matching and the verdicts (compare.py) need no torch and are tested in test_lab_compare.py; here
the same model runs in both engines, its weights copied across, and each difference is checked
against the two engines' own ``.grad``.
"""

from __future__ import annotations

from html import escape

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.lab.compare import compare_engines

NO_TORCH = "PyTorch is not installed (pip install torch==2.13.0)"


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
    assert "application/vnd.jupyter.widget-view+json" in data and data["text/html"].startswith(comparison.to_html())
    saved = data["text/html"][len(comparison.to_html()):]  # a saved notebook's picture: both graphs, as drawn
    assert saved.count('<svg xmlns="http://www.w3.org/2000/svg"') == 2
    assert all(saved.count(f">{row.name}</text>") == 2 for row in comparison.rows)  # each parameter, in each graph


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

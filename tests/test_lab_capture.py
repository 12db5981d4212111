"""gradlab.lab.capture: the lab's graph of a tensor, of a recorded forward pass, and of a Scalar."""

import json
import math
import re
import sys

import numpy as np
import pytest
from lab_models import Cube, Net, batch, mlp, recorded_net

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab import Scalar
from gradlab.lab import CaptureError, capture
from gradlab.lab.summary import HISTOGRAM_BINS, summarize


class Twice(nn.Module):
    """One Linear applied twice in the same forward."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return self.fc(self.fc(x))


def ops(graph):
    return [n for n in graph.nodes.values() if n.kind == "op"]


# --- from a tensor --------------------------------------------------------------------------------

def test_tensor_graph_has_one_op_node_per_grad_fn():
    model = mlp()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    graph = capture(loss)
    # Linear, Tanh, Linear, cross entropy (log_softmax then nll_loss): five nodes, named as PyTorch names them
    assert [n.op for n in ops(graph)] == ["AddmmBackward0", "TanhBackward0", "AddmmBackward0", "LogSoftmaxBackward0",
                                          "NllLossBackward0"]
    assert [n.label for n in ops(graph)] == ["Addmm", "Tanh", "Addmm", "LogSoftmax", "NllLoss"]  # boxes: short
    assert graph.outputs == [graph.node_for(loss.grad_fn).id]


def test_tensor_graph_has_one_node_per_parameter_named_by_named_parameters():
    model = mlp()
    x, y = batch()
    graph = capture(F.cross_entropy(model(x), y), names=dict(model.named_parameters()))
    params = [n for n in graph.nodes.values() if n.kind == "param"]
    assert sorted(n.label for n in params) == ["0.bias", "0.weight", "2.bias", "2.weight"]
    for name, p in model.named_parameters():
        assert graph.node_for(p).label == name
        assert graph.node_for(p).output_shape == list(p.shape)


def test_tensor_graph_without_names_draws_unnamed_leaves():
    model = mlp()
    x, y = batch()
    graph = capture(F.cross_entropy(model(x), y))
    kinds = sorted(n.kind for n in graph.nodes.values())
    assert kinds == ["leaf"] * 4 + ["op"] * 5


def test_tensor_graph_edges_go_from_input_to_consumer():
    model = mlp()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    graph = capture(loss, names=dict(model.named_parameters()))
    by_label = {}
    for n in graph.nodes.values():
        by_label.setdefault(n.label, []).append(n.id)
    first_linear, second_linear = by_label["Addmm"]
    (tanh,) = by_label["Tanh"]
    (log_softmax,) = by_label["LogSoftmax"]
    (nll,) = by_label["NllLoss"]
    expected = {
        (by_label["0.weight"][0], first_linear), (by_label["0.bias"][0], first_linear), (first_linear, tanh),
        (tanh, second_linear), (by_label["2.weight"][0], second_linear), (by_label["2.bias"][0], second_linear),
        (second_linear, log_softmax), (log_softmax, nll),
    }
    assert set(graph.edges) == expected and len(graph.edges) == len(expected)


def test_tensor_graph_is_json_serialisable():
    model = mlp()
    x, y = batch()
    graph = capture(F.cross_entropy(model(x), y), names=dict(model.named_parameters()))
    data = json.loads(json.dumps(graph.to_json(), allow_nan=False))
    assert data["source"] == "tensor"
    assert len(data["nodes"]) == len(graph.nodes) and len(data["edges"]) == len(graph.edges)
    assert "ref" not in data["nodes"][0]


def test_graph_with_nan_values_is_still_strict_json():
    w = gl.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    graph = capture((w.log() + w.sqrt()).sum())  # log(-1) is NaN, log(0) is -inf
    json.dumps(graph.to_json(), allow_nan=False)  # JSON has no NaN: the browser would refuse it


def test_capture_of_a_leaf_says_what_to_draw_instead():
    w = gl.randn(3, requires_grad=True)
    with pytest.raises(CaptureError, match="it is a leaf") as info:
        capture(w)
    assert "gl.lab.record()" in str(info.value) and "requires_grad=True" in str(info.value)


def test_capture_of_a_tensor_without_requires_grad_names_the_fix():
    with pytest.raises(CaptureError, match="does not require grad") as info:
        capture(gl.randn(3) * 2)
    assert "requires_grad=True" in str(info.value)


def test_capture_of_a_non_tensor_lists_what_can_be_drawn():
    with pytest.raises(CaptureError) as info:
        capture(3)
    message = str(info.value)
    assert "int" in message and "gl.lab.record()" in message and "Scalar" in message and "grad_fn" in message


# --- from a recording -------------------------------------------------------------------------------

def test_recorded_ops_carry_their_module_path():
    _, rec, _ = recorded_net()
    graph = capture(rec)
    assert [(n.op, n.group) for n in ops(graph)] == [
        ("AddmmBackward0", "encoder.0"), ("ReluBackward0", "encoder.1"), ("AddmmBackward0", "head"),
        ("SumBackward0", None)]


def test_recorded_groups_nest_as_the_modules_do():
    _, rec, _ = recorded_net()
    graph = capture(rec)
    parents = {g.id: g.parent for g in graph.groups.values()}
    assert parents == {"Net": None, "encoder": "Net", "encoder.0": "encoder", "encoder.1": "encoder", "head": "Net"}
    assert graph.groups["encoder"].label == "encoder (Sequential)"


def test_recorded_parameters_are_named_by_module_path():
    net, rec, _ = recorded_net()
    graph = capture(rec)
    for name, p in net.named_parameters():
        node = graph.node_for(p)
        assert (node.kind, node.label) == ("param", name)
    assert graph.node_for(net.encoder[0].weight).group == "encoder.0"


def test_recorded_data_inputs_are_kind_input():
    gl.manual_seed(0)
    model = mlp()
    x, y = batch()
    with gl.lab.record() as rec:
        F.cross_entropy(model(x), y)
    graph = capture(rec)
    assert graph.node_for(x).kind == "input" and graph.node_for(y).kind == "input"
    assert not graph.node_for(x).requires_grad
    assert [n.kind for n in graph.nodes.values()].count("input") == 2


def test_a_module_called_twice_gets_a_second_group():
    gl.manual_seed(0)
    model = Twice()
    with gl.lab.record() as rec:
        model(gl.randn(2, 3)).sum()
    graph = capture(rec)
    assert [n.group for n in ops(graph) if n.op == "AddmmBackward0"] == ["fc", "fc#2"]
    assert graph.groups["fc#2"].parent == "Twice"
    assert graph.node_for(model.fc.weight).label == "fc.weight"  # named once, by its first call


def test_a_model_called_twice_numbers_its_second_call():
    net = Net()
    x, _ = batch()
    with gl.lab.record() as rec:
        (net(x) + net(x)).sum()
    graph = capture(rec)
    assert {"Net", "Net#2", "encoder#2", "head#2"} <= set(graph.groups)
    assert graph.groups["encoder#2"].parent == "Net#2"
    assert [n.group for n in ops(graph) if n.op == "AddmmBackward0"][2:] == ["encoder#2.0", "head#2"]


def test_ops_inside_a_custom_function_are_not_recorded_separately():
    w = gl.randn(4, requires_grad=True)
    with gl.lab.record() as rec:
        Cube.apply(w).sum()
    graph = capture(rec)
    assert [n.op for n in ops(graph)] == ["CubeBackward", "SumBackward0"]  # not the two Muls inside forward


def test_a_recorded_op_points_at_the_line_that_ran_it():
    w = gl.randn(3, requires_grad=True)
    with gl.lab.record() as rec:
        line = sys._getframe().f_lineno + 1
        out = (w * 2.0).sum()  # noqa: F841
    graph = capture(rec)
    mul = next(n for n in ops(graph) if n.op == "MulBackward0")
    assert mul.source.startswith("test_lab_capture.py") and re.search(rf"\b{line}$", mul.source), mul.source
    assert mul.code == "out = (w * 2.0).sum()  # noqa: F841"


def test_a_layer_s_op_points_at_the_user_s_line_not_at_gradlab_code():
    """F.linear is wrapped for autocast by generated code: that code must read as gradlab's, not <string>."""
    layer = gl.nn.Linear(3, 2)
    with gl.lab.record() as rec:
        line = sys._getframe().f_lineno + 1
        layer(gl.randn(4, 3))
    linear = next(n for n in ops(capture(rec)) if n.op == "AddmmBackward0")
    assert linear.source == f"test_lab_capture.py, line {line}", linear.source


def test_the_frameworks_that_run_a_widget_s_callbacks_are_not_the_user_s_code():
    """A forward started by a click (GradientFlow.open from a comm callback) has no line of the user's:
    ipywidgets' or ipykernel's line must not be shown as if it were."""
    import importlib
    import os
    import threading

    import traitlets

    recording_module = importlib.import_module("gradlab.lab.record")  # (gl.lab.record is the context manager)

    with gl.lab.record():
        pass
    assert os.path.dirname(traitlets.__file__) + os.sep in recording_module._not_users
    assert threading.__file__ in recording_module._not_users  # the file itself: not the whole standard library
    assert recording_module.PACKAGE_DIR in recording_module._not_users
    assert not any(folder == os.sep or __file__.startswith(folder) for folder in recording_module._not_users)


def test_a_recording_cannot_be_drawn_while_it_runs():
    w = gl.randn(3, requires_grad=True)
    with gl.lab.record() as rec:
        (w * 2).sum()
        with pytest.raises(CaptureError, match="still running"):
            capture(rec)


def test_an_empty_recording_says_to_run_the_forward_inside_the_block():
    with gl.lab.record() as rec:
        pass
    with pytest.raises(CaptureError, match="empty") as info:
        capture(rec)
    assert "inside the block" in str(info.value)


def test_no_grad_ops_are_recorded_with_requires_grad_false():
    w = gl.randn(3, requires_grad=True)
    with gl.lab.record() as rec:
        kept = (w * 2).sum()  # noqa: F841
        with gl.no_grad():
            (w * 3).sum()
    graph = capture(rec)
    assert [(n.op, n.requires_grad) for n in ops(graph)] == [
        ("MulBackward0", True), ("SumBackward0", True), ("MulBackward0", False), ("SumBackward0", False)]


# --- from a Scalar ------------------------------------------------------------------------------------

B = 6.8813735870195432  # micrograd's bias: tanh(n) = 1/√2 at the output


def neuron():
    """micrograd's neuron: o = tanh(x1·w1 + x2·w2 + b)."""
    x1, x2 = Scalar(2.0, "x1"), Scalar(0.0, "x2")
    w1, w2 = Scalar(-3.0, "w1"), Scalar(1.0, "w2")
    b = Scalar(B, "b")
    return (x1 * w1 + x2 * w2 + b).tanh(), (x1, x2, w1, w2, b)


def test_scalar_neuron_has_five_leaves_and_five_ops():
    o, _ = neuron()
    graph = capture(o)
    # leaves x1 x2 w1 w2 b; ops *, *, +, +, tanh
    assert len(graph.nodes) == 10
    assert sorted(n.kind for n in graph.nodes.values()) == ["leaf"] * 5 + ["op"] * 5
    assert sorted(n.label for n in ops(graph)) == ["*", "*", "+", "+", "tanh"]


def test_scalar_neuron_has_nine_edges_into_its_ops():
    o, (x1, x2, w1, w2, b) = neuron()
    graph = capture(o)
    # two into each *, two into each +, one into tanh
    assert len(graph.edges) == 9
    ids = {s.label: graph.node_for(s).id for s in (x1, x2, w1, w2, b)}
    mul_of_x1 = {t for s, t in graph.edges if s == ids["x1"]}
    assert mul_of_x1 == {t for s, t in graph.edges if s == ids["w1"]}  # x1 and w1 meet in one *
    fan_in = {}
    for _, t in graph.edges:
        fan_in[graph.nodes[t].label] = fan_in.get(graph.nodes[t].label, 0) + 1
    assert fan_in == {"*": 4, "+": 4, "tanh": 1}


def test_scalar_leaves_are_drawn_by_label_with_their_values():
    o, leaves = neuron()
    graph = capture(o)
    for s in leaves:
        node = graph.node_for(s)
        assert node.label == s.label and node.value["values"] == [s.data]


def test_a_labelled_scalar_op_shows_its_symbol_and_label():
    x, w = Scalar(2.0, "x"), Scalar(-3.0, "w")
    xw = x * w
    xw.label = "xw"
    graph = capture(xw.tanh())
    assert graph.node_for(xw).label == "* xw"


def test_scalar_value_summaries_hold_the_forward_values():
    o, _ = neuron()
    graph = capture(o)
    n = 2.0 * -3.0 + 0.0 * 1.0 + B
    assert graph.nodes[graph.outputs[0]].value["values"] == [math.tanh(n)]
    assert graph.nodes[graph.outputs[0]].value["values"][0] == pytest.approx(1 / math.sqrt(2))
    assert sorted(node.value["values"][0] for node in ops(graph) if node.label == "*") == [-6.0, 0.0]


def test_scalar_saves_of_mul_are_named_for_its_inputs():
    x, w = Scalar(2.0, "x"), Scalar(-3.0, "w")
    graph = capture(x * w)
    saved = graph.nodes[graph.outputs[0]].saved
    assert [(s["name"], s["values"]) for s in saved] == [("x", [2.0]), ("y", [-3.0])]


def test_scalar_saves_of_mul_of_equal_numbers_are_still_x_and_y():
    a, b = Scalar(3.0, "a"), Scalar(3.0, "b")
    graph = capture(a * b)
    assert [s["name"] for s in graph.nodes[graph.outputs[0]].saved] == ["x", "y"]


# --- every op states its rule ---------------------------------------------------------------------------

def test_every_op_of_a_transformer_layer_states_its_rule():
    gl.manual_seed(0)
    layer = nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16)
    with gl.lab.record() as rec:
        layer(gl.randn(3, 2, 8)).sum()
    graph = capture(rec)
    assert len(ops(graph)) > 20
    for node in ops(graph):
        assert node.words and "no rule written" not in node.words, node.op
        assert node.math and "no derivative given" not in node.math, node.op


def test_a_function_without_a_docstring_says_how_to_add_its_rule():
    class Double(gl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    graph = capture(Double.apply(gl.randn(3, requires_grad=True)))
    (node,) = ops(graph)
    assert "docstring" in node.words and "derivative" in node.math


# --- summaries ------------------------------------------------------------------------------------------

def test_summary_counts_nan_and_inf_and_ignores_them_in_the_statistics():
    s = summarize(gl.tensor([1.0, float("nan"), float("inf"), -float("inf"), 3.0]))
    assert (s["numel"], s["nan"], s["inf"]) == (5, 1, 2)
    assert (s["min"], s["max"], s["mean"]) == (1.0, 3.0, 2.0)
    assert s["norm"] == pytest.approx(math.sqrt(10))
    assert s["values"] == [1.0, None, None, None, 3.0]  # JSON has no NaN or inf


def test_summary_of_an_empty_tensor_has_no_statistics():
    s = summarize(gl.zeros(0, 3))
    assert s["shape"] == [0, 3] and s["numel"] == 0
    assert s["min"] is None and s["max"] is None and s["mean"] is None and s["norm"] is None and s["hist"] is None


def test_summary_of_integers_and_booleans_is_numeric():
    ints = summarize(gl.tensor([1, 2, 3]))
    assert (ints["dtype"], ints["min"], ints["max"], ints["mean"]) == ("int64", 1.0, 3.0, 2.0)
    bools = summarize(gl.tensor([True, False, True]))
    assert bools["dtype"] == "bool" and bools["values"] == [1.0, 0.0, 1.0] and bools["mean"] == pytest.approx(2 / 3)


def test_summary_of_a_float_is_a_scalar():
    s = summarize(2.5)
    assert s["shape"] == [] and s["numel"] == 1 and s["values"] == [2.5] and s["norm"] == 2.5


def test_summary_of_none_is_none():
    assert summarize(None) is None


def test_summary_histogram_counts_every_finite_number():
    data = np.random.default_rng(0).standard_normal(200)
    data[:7] = np.nan
    data[7:10] = np.inf
    s = summarize(gl.tensor(data))
    assert len(s["hist"]["counts"]) == HISTOGRAM_BINS
    assert sum(s["hist"]["counts"]) == 190
    assert "values" not in s  # too many to list one by one
    finite = data[np.isfinite(data)]
    assert (s["hist"]["low"], s["hist"]["high"]) == (finite.min(), finite.max())


def test_summary_histogram_of_a_constant_tensor_has_one_full_bin():
    s = summarize(gl.full((20,), 4.0))
    assert sum(s["hist"]["counts"]) == 20 and max(s["hist"]["counts"]) == 20
    assert s["hist"]["low"] < 4.0 < s["hist"]["high"]


def test_a_tensor_graph_made_under_detect_anomaly_knows_its_source_lines():
    x = gl.randn(3, requires_grad=True)
    with gl.autograd.detect_anomaly():
        y = (x * 2).sin().sum()  # the line the graph should name
    graph = capture(y)
    sources = {n.label: (n.source, n.code) for n in graph.nodes.values() if n.kind == "op"}
    assert set(sources) == {"Mul", "Sin", "Sum"}
    for source, code in sources.values():
        assert source.startswith("test_lab_capture.py, line ")
        assert code == "y = (x * 2).sin().sum()  # the line the graph should name"

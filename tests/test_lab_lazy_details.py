"""A big graph's details are worked out when first read, and read later they are what they were at capture:
the values are copied at capture, so an in-place change after it cannot reach them (summary.LaterSummary)."""

import numpy as np

import gradlab as gl
import gradlab.nn as nn
import gradlab.lab.summary as summary_module
from gradlab.lab.capture import capture


def recorded_with_in_place_ops():
    """Linear, relu_ on its output, a product that saves it, add_ and mul_ on the results, and the tensors."""
    gl.manual_seed(0)
    linear = nn.Linear(3, 4)
    x = gl.randn(5, 3)
    with gl.lab.record() as rec:
        h = linear(x)
        h.relu_()
        z = h * h
        z.add_(1)
        w = z * 2
        w.mul_(3)
        loss = w.sum()
    return rec, linear, (x, h, z, w, loss)


def details(graph) -> dict:
    return {node_id: node.to_json() for node_id, node in graph.nodes.items()}


def test_details_read_after_in_place_changes_are_those_of_capture_time():
    rec, linear, tensors = recorded_with_in_place_ops()
    read_at_once = details(capture(rec))
    read_later = capture(rec)
    with gl.no_grad():  # everything the graph holds changes after the capture: parameters, input, outputs
        linear.weight.mul_(-5)
        linear.bias.add_(10)
        for t in tensors:
            t.add_(100)
    assert details(read_later) == read_at_once
    assert details(capture(rec)) != read_at_once  # (a capture now sees the changes, and says so)


def test_a_value_changed_after_capture_keeps_the_numbers_the_forward_computed():
    rec, _, (x, h, z, w, loss) = recorded_with_in_place_ops()
    graph = capture(rec)
    mul = [n for n in graph.nodes.values() if n.label == "Mul"][-2]  # w = z * 2 (the last: w.mul_(3))
    expected = (z.detach().numpy() * 2).ravel()
    with gl.no_grad():
        w.add_(1000)
    np.testing.assert_allclose(mul.value["min"], expected.min(), rtol=1e-6)
    np.testing.assert_allclose(mul.value["max"], expected.max(), rtol=1e-6)
    assert "changed" not in mul.value


def test_a_view_of_a_long_chain_summarises_only_the_boxes_it_draws(monkeypatch):
    x = gl.randn(4, requires_grad=True)
    with gl.lab.record() as rec:
        y = x
        for _ in range(1000):
            y = y * 1.0001 + 0.001
        y.sum()
    histograms = []  # one per value summarised (saved tensors are summarised without one)
    real = summary_module._histogram
    monkeypatch.setattr(summary_module, "_histogram", lambda *a: histograms.append(1) or real(*a))
    view = gl.lab.GraphView(rec)  # 2,002 nodes: drawn as runs of a hundred, closed
    assert len(histograms) == len(view.nodes) == 0
    view.reveal("n1000")  # opens the runs around it: their boxes are drawn, and only theirs summarised
    assert 0 < len(histograms) == len(view.nodes) < len(view.graph.nodes) / 4
    assert view.nodes["n1000"]["value"]["hist"] is not None
    view.close()


def big_linear_recorded():
    """A Linear with 64 × 40 weights (more than summary.KEPT_FOR_LATER values: not copied) and its recording."""
    gl.manual_seed(0)
    linear = nn.Linear(40, 64)
    with gl.lab.record() as rec:
        linear(gl.randn(8, 40)).sum()
    return linear, rec


def test_a_big_value_is_summarised_when_first_read_from_the_tensor_itself():
    linear, rec = big_linear_recorded()
    assert linear.weight.numel() > summary_module.KEPT_FOR_LATER
    graph = capture(rec)
    weight = next(n for n in graph.nodes.values() if n.label.endswith("weight"))
    held = weight.__dict__["_value"]
    assert isinstance(held, summary_module.LaterTensorSummary) and held.tensor is linear.weight  # no copy
    values = linear.weight.detach().numpy().astype(np.float64).ravel()
    np.testing.assert_allclose(weight.norm("value"), np.linalg.norm(values), rtol=1e-12)  # known at once
    shown = weight.value
    np.testing.assert_allclose([shown["min"], shown["max"], shown["mean"], shown["norm"]],
                               [values.min(), values.max(), values.mean(), np.linalg.norm(values)], rtol=1e-12)
    assert sum(shown["hist"]["counts"]) == values.size and "changed" not in shown


def test_a_big_value_changed_before_it_is_read_shows_its_values_now_and_says_so():
    linear, rec = big_linear_recorded()
    graph = capture(rec)
    weight = next(n for n in graph.nodes.values() if n.label.endswith("weight"))
    then = linear.weight.version
    with gl.no_grad():
        linear.weight.add_(5.0)  # an optimizer step, say, before the node is opened
    values = linear.weight.detach().numpy().astype(np.float64).ravel()
    shown = weight.value
    np.testing.assert_allclose([shown["min"], shown["max"]], [values.min(), values.max()], rtol=1e-12)
    assert f"changed in place since the forward used it (version {then} → {then + 1}" in shown["changed"]
    assert "these are its values now" in shown["changed"]

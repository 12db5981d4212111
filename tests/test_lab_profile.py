"""The profile on the graph: per-node forward and backward time, saved memory, and how GraphView shows them.

No timing is asserted beyond an order with a wide margin: a Function that sleeps 30 ms must come
first among operations that take microseconds.
"""

from __future__ import annotations

import importlib.util
import time

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn

SLEEP_S = 0.03


class Slow(gl.autograd.Function):
    """y = 2x, after a nap: the slowest node in any graph it is in."""

    derivative = "∂L/∂x = 2g"

    @staticmethod
    def forward(ctx, x):
        time.sleep(SLEEP_S)
        return x * 2

    @staticmethod
    def backward(ctx, g):
        time.sleep(SLEEP_S)
        return g * 2


def slow_net():
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    x = gl.randn(5, 3)

    def step():
        return Slow.apply(model(x)).pow(2).mean()

    return model, x, step


def slow_id(graph) -> str:
    return next(n.id for n in graph.nodes.values() if n.label == "Slow")


# --- the times -------------------------------------------------------------------------------------

def test_a_slow_function_is_the_top_node_in_both_directions():
    _, _, step = slow_net()
    prof = gl.lab.profile(step)
    for by in ("time", "forward", "backward"):
        top = prof.top(3, by=by)
        assert top[0]["label"] == "Slow", by
        print(by, [(r["label"], r[{"time": "total_s", "forward": "forward_s", "backward": "backward_s"}[by]])
                   for r in top])
    slow = prof.figures[slow_id(prof.graph)]
    assert slow["forward_s"] >= SLEEP_S and slow["backward_s"] >= SLEEP_S  # the sleep is inside each, whole


def test_every_timed_node_has_a_positive_time_and_ops_have_both():
    _, _, step = slow_net()
    prof = gl.lab.profile(step)
    ops = [n for n in prof.graph.nodes.values() if n.kind == "op"]
    for node in ops:
        figures = prof.figures[node.id]
        assert figures["forward_s"] > 0 and figures["backward_s"] > 0, node.label
    params = [n for n in prof.graph.nodes.values() if n.kind == "param"]
    assert len(params) == 4 and all(prof.figures[n.id]["backward_s"] > 0 for n in params)  # the accumulations
    assert all(prof.figures[n.id]["forward_s"] is None for n in params)
    assert not any(n.id in prof.figures for n in prof.graph.nodes.values() if n.kind == "input")
    totals = prof.totals
    assert totals["forward_s"] == pytest.approx(sum(prof.figures[n.id]["forward_s"] for n in ops))
    assert totals["forward_s"] <= totals["forward_wall_s"]  # the ops' times are parts of the forward


def test_repeats_take_medians_and_run_fn_that_many_times():
    _, _, step = slow_net()
    calls = []

    def counted():
        calls.append(1)
        return step()

    prof = gl.lab.profile(counted, repeats=3)
    assert len(calls) == 3 and prof.totals["repeats"] == 3
    assert prof.top(1)[0]["label"] == "Slow"
    assert "medians of 3 runs" in str(prof)


def test_record_notes_each_ops_forward_time():
    _, x, _ = slow_net()
    with gl.lab.record() as rec:
        Slow.apply(x).sum()
    assert len(rec.forward_seconds) == len(rec) == 2
    assert rec.forward_seconds[0] >= SLEEP_S > rec.forward_seconds[1] > 0


def test_the_clock_waits_for_the_device_after_every_op_and_step(monkeypatch):
    """On an async or lazy device (CUDA, MLX) each reading waits for the work (numpy: a no-op we count)."""
    model, x, _ = slow_net()

    def step():  # (no Slow: its forward's own x * 2 is one more operation to wait for)
        return model(x).pow(2).mean()

    backend = gl.randn(1).device.backend
    calls = []
    monkeypatch.setattr(type(backend), "synchronize", lambda self: calls.append(1))
    prof = gl.lab.profile(step)
    n_ops = len(prof.recording)
    n_steps = sum(1 for f in prof.figures.values() if f["backward_s"] is not None)
    assert len(calls) == n_ops + n_steps
    calls.clear()
    with gl.lab.record():
        step()
    assert calls == []  # a plain recording does not wait


# --- memory ----------------------------------------------------------------------------------------

def test_memory_is_the_saved_tensors_bytes():
    w = gl.randn(4, 3, requires_grad=True)  # float32: 4 * 3 * 4 = 48 bytes each
    x = gl.randn(4, 3)

    def f():
        h = w * x  # saves w and x: given to the forward, held anyway
        e = h.exp()  # saves its output: held only for backward
        return (e * h).sum()  # saves e and h: both made by the forward

    prof = gl.lab.profile(f)
    ops = [n for n in prof.graph.nodes.values() if n.kind == "op"]
    memory = [(n.label, prof.figures[n.id]["saved_bytes"], prof.figures[n.id]["saved_for_backward_bytes"]) for n in ops]
    assert memory == [("Mul", 96, 0), ("Exp", 48, 48), ("Mul", 96, 96), ("Sum", 0, 0)]
    assert prof.totals["saved_bytes"] == 4 * 48  # w, x, e, h: e is saved twice but held once
    assert prof.totals["saved_for_backward_bytes"] == 2 * 48
    assert prof.top(1, by="memory")[0]["saved_bytes"] == 96


def test_memory_counts_the_arrays_a_node_keeps_on_itself_as_forward_left_them():
    # a convolution keeps its im2col columns on the node for the weight's gradient (and drops them in backward);
    # max-pooling keeps where each window's maximum was. Both are memory the graph holds.
    x = gl.randn(16, 1, 8, 8)  # given: held anyway
    conv, pool = nn.Conv2d(1, 4, 3, bias=False), nn.MaxPool2d(2)
    prof = gl.lab.profile(lambda: pool(conv(x)).sum())
    figures = {n.label: prof.figures[n.id] for n in prof.graph.nodes.values() if n.kind == "op"}
    columns = 16 * (1 * 3 * 3) * (6 * 6) * 4  # N · C·k² · H_out·W_out float32 numbers
    assert figures["ConvNd"]["saved_for_backward_bytes"] == columns
    assert figures["ConvNd"]["saved_bytes"] == columns + x.nbytes + conv.weight.nbytes
    assert figures["MaxPoolNd"]["saved_for_backward_bytes"] > 0
    assert prof.totals["saved_for_backward_bytes"] >= columns + figures["MaxPoolNd"]["saved_for_backward_bytes"]


# --- the training state is left alone --------------------------------------------------------------

def test_the_profiled_graph_shows_the_gradients_of_its_backward():
    model, _, step = slow_net()
    prof = gl.lab.profile(step)
    step().backward()
    for name, p in model.named_parameters():
        drawn = prof.graph.node_for(p).grad
        assert drawn["norm"] == pytest.approx(float(np.linalg.norm(p.grad.numpy().astype(np.float64))), rel=1e-5), name
    assert all(n.grad is not None for n in prof.graph.nodes.values() if n.kind == "op")


def test_profile_restores_every_grad():
    model, _, step = slow_net()
    first, second = list(model.parameters())[:2]
    first.grad = gl.ones(*first.shape) * 3
    own, before = first.grad, first.grad.numpy().copy()
    gl.lab.profile(step, repeats=2)
    assert first.grad is own  # the same tensor, with the same numbers
    np.testing.assert_array_equal(first.grad.numpy(), before)
    assert second.grad is None


def test_keep_grads_keeps_one_backwards_gradients():
    model, _, step = slow_net()
    step().backward()
    expected = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    gl.lab.profile(step, repeats=2, keep_grads=True)
    for p, want in zip(model.parameters(), expected):
        np.testing.assert_allclose(p.grad.numpy(), want, rtol=1e-6)


# --- bad input ------------------------------------------------------------------------------------

def test_a_non_scalar_output_says_to_sum_it():
    w = gl.randn(4, 3, requires_grad=True)
    with pytest.raises(gl.lab.CaptureError, match=r"profile: backward starts from one number.*shape \[4, 3\].*out\.sum\(\)"):
        gl.lab.profile(lambda: w * 2)


def test_a_function_that_builds_no_graph_is_refused():
    x = gl.randn(3)
    with pytest.raises(gl.lab.CaptureError, match="profile: fn returned a tensor with no graph.*requires_grad=True"):
        gl.lab.profile(lambda: (x * 2).sum())
    with pytest.raises(gl.lab.CaptureError, match="profile: fn returned a float, not a tensor"):
        gl.lab.profile(lambda: 1.0)


def test_what_is_not_a_function_or_a_count_is_refused_before_any_work():
    with pytest.raises(TypeError, match=r"profile: the first argument is the function to profile, got a Tensor"):
        gl.lab.profile(gl.ones(1))
    calls = []
    with pytest.raises(ValueError, match="repeats is how many times to run fn"):
        gl.lab.profile(lambda: calls.append(1), repeats=0)
    assert calls == []
    _, _, step = slow_net()
    with pytest.raises(ValueError, match="top\\(by='size'\\) sorts by one of 'time', 'forward', 'backward', 'memory'"):
        gl.lab.profile(step).top(by="size")


def test_tables_as_text_and_html():
    _, _, step = slow_net()
    prof = gl.lab.profile(step)
    text = str(prof)
    assert text.splitlines()[0] == "top 10 nodes by time (forward + backward)" and text.splitlines()[2].startswith("Slow")
    assert "total: forward" in text
    assert "<table>" in prof._repr_html_() and "Slow" in prof._repr_html_()
    assert prof.table(2, by="memory").splitlines()[1].split()[:3] == ["node", "module", "saved"]


# --- GraphView: colour modes, the table, the inspector ------------------------------------------------

needs_widgets = pytest.mark.skipif(
    any(importlib.util.find_spec(name) is None for name in ("ipywidgets", "anywidget")),
    reason="the lab widgets need ipywidgets and anywidget: pip install 'gradlab[lab]'")

YELLOW = "#fde725"  # the top of the scale


@needs_widgets
def test_graph_view_of_a_profile_colours_by_time():
    _, _, step = slow_net()
    prof = gl.lab.profile(step)
    view = gl.lab.GraphView(prof, color="time")
    slow = slow_id(view.graph)
    assert view.color_mode == "time"
    assert {"time", "forward", "backward", "memory"} <= set(view.color_labels)
    for mode in ("time", "forward", "backward"):
        assert view.colors[mode][slow][0] == YELLOW, mode
    assert "log scale" in view.legends["time"]["title"] and view.legends["time"]["missing_text"] == "not timed"
    data = next(n for n in view.graph.nodes.values() if n.kind == "input")
    assert view.colors["time"][data.id][0] == "#e6e6e6"
    assert all(text.endswith(("ns", "µs", "ms", " s")) for text, _ in view.legends["time"]["stops"])  # "29 µs"
    assert all(text.endswith("B") for text, _ in view.legends["memory"]["stops"])  # "4 KiB"
    svg = view.to_svg()
    assert "time (forward + backward), log scale" in svg and YELLOW in svg


@needs_widgets
def test_the_side_table_lists_the_top_ten_in_each_mode():
    _, _, step = slow_net()
    prof = gl.lab.profile(step)
    view = gl.lab.GraphView(prof, color="time")
    table = view.tables["time"]
    assert table["title"] == "top 10 nodes by time (forward + backward)"
    assert table["columns"] == ["node", "module", "forward", "backward", "total"]
    assert len(table["rows"]) == 10 and table["rows"][0]["id"] == slow_id(view.graph)
    assert [r["id"] for r in table["rows"]] == [r["id"] for r in prof.top(10)]
    memory = view.tables["memory"]
    sizes = [prof.figures[r["id"]]["saved_bytes"] for r in memory["rows"]]
    assert sizes == sorted(sizes, reverse=True) and all(sizes)


@needs_widgets
def test_the_inspector_gets_each_nodes_times_and_memory():
    _, _, step = slow_net()
    prof = gl.lab.profile(step)
    view = gl.lab.GraphView(prof)
    node = view.nodes[slow_id(view.graph)]
    assert node["profile"]["forward_s"] >= SLEEP_S and node["profile"]["backward_s"] >= SLEEP_S
    assert set(node["profile"]) == {"forward_s", "backward_s", "saved_bytes", "saved_for_backward_bytes"}
    data = next(n for n in view.graph.nodes.values() if n.kind == "input")
    assert view.nodes[data.id]["profile"] is None


@needs_widgets
def test_a_click_on_a_row_opens_the_module_around_the_node():
    _, _, step = slow_net()
    view = gl.lab.GraphView(gl.lab.profile(step), color="memory")
    linear = next(n for n in view.graph.nodes.values() if n.kind == "op" and n.group == "0")
    view.toggle("0")
    assert f'data-id="{linear.id}"' not in view.svg
    view._on_front_end_message(None, {"type": "reveal", "id": linear.id})
    assert f'data-id="{linear.id}"' in view.svg and view.selected == linear.id and not view.notice


@needs_widgets
def test_a_recording_has_forward_times_and_a_tensor_memory():
    _, _, step = slow_net()
    with gl.lab.record() as rec:
        loss = step()
    view = gl.lab.GraphView(rec, color="time")
    assert view.colors["time"][slow_id(view.graph)][0] == YELLOW
    assert "backward not timed" in view.legends["time"]["title"] and "forward" not in view.color_labels
    assert view.tables["time"]["title"].endswith("by forward time")
    tensor_view = gl.lab.GraphView(loss, color="memory")
    assert tensor_view.color_mode == "memory" and "time" not in tensor_view.color_labels
    with pytest.raises(ValueError, match="color='time' is not a colour mode of this graph.*gl.lab.profile"):
        gl.lab.GraphView(loss, color="time")


@needs_widgets
def test_a_recordings_view_times_the_backward_run_later():
    _, _, step = slow_net()
    with gl.lab.record() as rec:
        loss = step()
    view = gl.lab.GraphView(rec, color="time")
    slow = slow_id(view.graph)
    assert view.nodes[slow]["profile"]["backward_s"] is None
    loss.backward()
    view.refresh()  # (a notebook calls it when the cell ends)
    assert view.nodes[slow]["profile"]["backward_s"] >= SLEEP_S
    assert {"forward", "backward"} <= set(view.color_labels)
    assert view.legends["time"]["title"] == "time (forward + backward), log scale"
    assert view.tables["backward"]["rows"][0]["id"] == slow
    ops = [n.id for n in view.graph.nodes.values() if n.kind == "op"]
    assert all(view.nodes[i]["profile"]["backward_s"] > 0 for i in ops)

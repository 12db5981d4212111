"""A GraphView tells the truth and cleans up: it says when a value changed since the forward, and the
hooks it puts on the graph come off when it is closed or collected."""

import gc
import tracemalloc

import pytest
from lab_models import recorded_net

pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")

import gradlab as gl  # noqa: E402
import gradlab.nn as nn  # noqa: E402
from gradlab.lab.capture import reachable  # noqa: E402


def hooks_on(root) -> int:
    """How many backward hooks sit on the nodes of root's graph."""
    return sum(len(node._pre_hooks or ()) + len(node._post_hooks or ()) for node in reachable(root.grad_fn))


def small_recording():
    w = gl.randn(4, 4, requires_grad=True)
    x = gl.randn(8, 4)
    with gl.lab.record() as rec:
        loss = ((x @ w).relu() * 2).sum()
    return rec, loss


# --- a value changed since the forward ----------------------------------------------------------------------

def test_a_view_after_optimizer_step_sends_the_inspector_words_for_the_changed_weights():
    net, rec, loss = recorded_net()
    loss.backward()
    gl.optim.SGD(net.parameters(), lr=0.1).step()
    view = gl.lab.GraphView(rec)
    params = [node for node in view.nodes.values() if node["kind"] == "param"]
    assert len(params) == 4
    for node in params:
        assert "changed in place since the forward used it" in node["value"]["changed"], node["label"]
    assert not any(node["value"].get("changed") for node in view.nodes.values() if node["kind"] != "param")
    view.close()


# --- the hooks a view installs come off when it goes ----------------------------------------------------------

def test_a_hundred_views_closed_leave_no_hook_on_the_graph():
    rec, loss = small_recording()
    assert hooks_on(loss) == 0
    for _ in range(100):
        view = gl.lab.GraphView(rec)
        assert hooks_on(loss) > 0  # while open, it listens for a later backward
        view.close()
        del view
    gc.collect()
    assert hooks_on(loss) == 0


def test_a_view_collected_without_close_takes_its_hooks_off():
    from ipywidgets.widgets.widget import _instances

    rec, loss = small_recording()
    view = gl.lab.GraphView(rec)
    _instances.pop(view.model_id)  # as when its comm goes away without close(): then nothing but this name
    view.comm.close()  # holds the view
    del view
    gc.collect()
    assert hooks_on(loss) == 0


def test_views_made_and_closed_keep_memory_bounded():
    rec, loss = small_recording()
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        view = gl.lab.GraphView(rec)
        one_view = tracemalloc.get_traced_memory()[0] - start
        view.close()
        del view
        for _ in range(20):  # caches (layouts, code locations, traitlets' own) fill in these
            gl.lab.GraphView(rec).close()
        gc.collect()
        after_20 = tracemalloc.get_traced_memory()[0]
        for _ in range(40):
            gl.lab.GraphView(rec).close()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - after_20
    finally:
        tracemalloc.stop()
    # (ipywidgets and traitlets keep a few hundred bytes per widget ever made; a leak of the views is 40 of them)
    assert grown < one_view, f"40 more closed views retain {grown} bytes; one open view holds {one_view}"


def test_a_closed_view_no_longer_hears_backward_but_an_open_one_does():
    rec, loss = small_recording()
    closed, open_ = gl.lab.GraphView(rec), gl.lab.GraphView(rec)
    closed.close()
    loss.backward()
    root = open_.graph.outputs[0]
    assert open_.graph.nodes[root].grad is not None
    assert closed.graph.nodes[root].grad is None
    open_.close()


def test_a_stepper_closes_like_a_view():
    gl.manual_seed(0)
    model = nn.Linear(3, 1)
    loss = model(gl.randn(2, 3)).sum()
    stepper = gl.lab.BackpropStepper(loss)
    stepper.run_to_end()
    stepper.close()
    assert hooks_on(loss) == 0


def test_a_view_stops_listening_for_notebook_cells_when_closed(notebook_shell):
    Shell = notebook_shell
    w = gl.tensor([1.0, 2.0], requires_grad=True)
    loss = (w * 3).sum()
    view = gl.lab.GraphView(loss)
    [cell_ended] = Shell.events.callbacks["post_execute"]
    loss.backward(retain_graph=True)
    cell_ended()  # what IPython does after each cell: the view shows the gradients
    assert view.nodes[view.graph.outputs[0]]["grad"] is not None
    view.close()
    assert Shell.events.callbacks["post_execute"] == []


def test_a_view_hears_your_backward_but_not_a_stepper_replay_or_a_profile():
    from gradlab.lab.ownership import lab_pass
    rec, loss = small_recording()
    view = gl.lab.GraphView(rec)
    with lab_pass(counts=False):  # what a stepper's replay and a profile's backward say about themselves
        loss.backward(retain_graph=True)
    ops = [node for node in view.graph.nodes.values() if node.kind == "op"]
    assert all(node.grad is None for node in ops)
    assert not view._backward_seen
    loss.backward()
    assert all(node.grad is not None for node in ops)
    assert set(view._backward_seen) == {node.id for node in ops if node.id in view._figures}

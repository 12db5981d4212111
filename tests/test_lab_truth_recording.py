"""A recording tells the truth: module calls close when forward raises, each thread records its own work,
in-place operations are drawn as they ran, and a value that changed since the forward says so."""

import threading

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
from gradlab.lab.capture import capture
from gradlab.nn.modules import module as module_hooks


def ops_of(graph):
    return [n for n in graph.nodes.values() if n.kind == "op"]


def node_labelled(graph, label):
    (node,) = [n for n in graph.nodes.values() if n.label == label]
    return node


def edges_by_label(graph):
    return sorted((graph.nodes[a].label, graph.nodes[b].label) for a, b in graph.edges)


class Raises(nn.Module):
    """Multiplies, then raises: a forward that fails half-way."""

    def forward(self, x):
        x = x * 2
        raise ValueError("this forward fails")


class CatchesItsChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = Raises()

    def forward(self, x):
        try:
            self.child(x)
        except ValueError:
            pass
        return x * 3


# --- a module whose forward raised is closed -------------------------------------------------------------

def test_ops_after_a_caught_exception_are_not_drawn_inside_the_module_that_raised():
    w = gl.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with gl.lab.record() as rec:
        try:
            Raises()(w)
        except ValueError:
            pass
        loss = (w * 3).sum()
    graph = capture(rec)
    groups = [(n.label, n.group) for n in ops_of(graph)]
    assert groups == [("Mul", "Raises"), ("Mul", None), ("Sum", None)]
    assert loss.item() == pytest.approx(6.0)


def test_a_parent_that_catches_its_childs_error_goes_on_in_its_own_box():
    w = gl.tensor([1.0, 2.0], requires_grad=True)
    with gl.lab.record() as rec:
        CatchesItsChild()(w).sum()
    groups = [(n.label, n.group) for n in ops_of(capture(rec))]
    assert groups == [("Mul", "child"), ("Mul", "CatchesItsChild"), ("Sum", None)]


def test_a_trace_closes_the_module_that_raised_too():
    def fn(x):
        try:
            Raises()(x)
        except ValueError:
            pass
        return (x * 3).sum()

    tape = gl.jit.trace(fn, gl.tensor([1.0, 2.0]))
    assert [(op.function.__name__, op.module) for op in tape.ops] == [("Mul", "Raises"), ("Mul", ""), ("Sum", "")]


def test_an_always_call_forward_hook_runs_with_output_none_when_forward_raises():
    seen = []
    always = module_hooks.register_module_forward_hook(lambda m, args, out: seen.append(("always", out)),
                                                       always_call=True)
    normal = module_hooks.register_module_forward_hook(lambda m, args, out: seen.append(("normal", out)))
    try:
        with pytest.raises(ValueError, match="this forward fails"):
            Raises()(gl.ones(2))
        out = nn.Identity()(gl.ones(1))
    finally:
        always.remove()
        normal.remove()
    assert [(kind, o is None, o is out) for kind, o in seen] == [
        ("always", True, False), ("always", False, True), ("normal", False, True)]


@requires_torch
def test_always_call_hooks_run_as_pytorchs_do():
    def calls(hooks, module_cls, bad_cls, x):
        seen = []
        handles = [hooks.register_module_forward_hook(lambda m, a, o: seen.append(("always", o is None)),
                                                      always_call=True),
                   hooks.register_module_forward_hook(lambda m, a, o: seen.append(("normal", o is None)))]
        try:
            try:
                bad_cls()(x)
            except ValueError:
                seen.append("raised")
            module_cls()(x)
        finally:
            for h in handles:
                h.remove()
        return seen

    class TorchRaises(torch.nn.Module):
        def forward(self, x):
            raise ValueError("this forward fails")

    ours = calls(module_hooks, nn.Identity, Raises, gl.ones(2))
    theirs = calls(torch.nn.modules.module, torch.nn.Identity, TorchRaises, torch.ones(2))
    assert ours == theirs


# --- each thread records its own work ----------------------------------------------------------------------

def run_beside(work, *args):
    """Start ``work`` on another thread; return (go, finished): set go to let it run, wait on finished."""
    go, finished = threading.Event(), threading.Event()

    def body():
        go.wait(10)
        work(*args)
        finished.set()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return go, finished, thread


def another_threads_work():
    gl.manual_seed(3)
    layer = nn.Linear(2, 2)
    (layer(gl.ones(1, 2)).tanh() * 5).sum()


def test_a_recording_holds_none_of_another_threads_ops_or_module_calls():
    w = gl.tensor([1.0, 2.0], requires_grad=True)
    go, finished, thread = run_beside(another_threads_work)
    with gl.lab.record() as rec:
        y = w * 2
        go.set()
        assert finished.wait(10)
        y.sum()
    thread.join(10)
    assert [op.record.function.__name__ for op in rec.ops] == ["Mul", "Sum"]
    assert rec.calls == {}
    assert [n.label for n in capture(rec).nodes.values()] == ["leaf", "Mul", "Sum"]


def test_two_threads_recording_at_once_each_hold_their_own():
    turns = [threading.Event() for _ in range(4)]
    recordings = {}

    def first():
        with gl.lab.record() as rec:
            x = gl.tensor([1.0, 2.0], requires_grad=True)
            turns[0].set()
            turns[1].wait(10)  # the other thread records its ops while this one is recording
            (x * 2).sum()
            turns[2].set()
        recordings["first"] = rec

    def second():
        turns[0].wait(10)
        with gl.lab.record() as rec:
            nn.Tanh()(gl.tensor([0.5], requires_grad=True)).exp()
            turns[1].set()
            turns[2].wait(10)
            gl.tensor([1.0], requires_grad=True).neg()
        recordings["second"] = rec

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    names = {key: [op.record.function.__name__ for op in rec.ops] for key, rec in recordings.items()}
    assert names == {"first": ["Mul", "Sum"], "second": ["Tanh", "Exp", "Neg"]}
    assert list(recordings["first"].calls) == [] and list(recordings["second"].calls) == ["Tanh"]


def test_a_trace_holds_none_of_another_threads_ops():
    go, finished, thread = run_beside(another_threads_work)

    def fn(x):
        y = x * 2
        go.set()
        assert finished.wait(10)
        return y.sum()

    tape = gl.jit.trace(fn, gl.tensor([1.0, 2.0]))
    thread.join(10)
    assert [op.function.__name__ for op in tape.ops] == ["Mul", "Sum"]
    assert all(op.module == "" for op in tape.ops)


def test_a_profile_holds_none_of_another_threads_ops():
    w = gl.tensor([1.0, 2.0], requires_grad=True)
    go, finished, thread = run_beside(another_threads_work)

    def fn():
        y = w * 2
        go.set()
        assert finished.wait(10)
        return y.sum()

    prof = gl.lab.profile(fn)
    thread.join(10)
    assert [n.label for n in ops_of(prof.graph)] == ["Mul", "Sum"]


def test_an_observer_sees_its_own_thread_unless_it_asks_for_every_thread():
    mine, every = [], []
    with gl.autograd.subscribe(mine.append), gl.autograd.subscribe(every.append, all_threads=True):
        thread = threading.Thread(target=lambda: gl.ones(2).exp())
        thread.start()
        thread.join(10)
        gl.ones(2).neg()
    assert [r.function.__name__ for r in mine] == ["Neg"]
    assert sorted(r.function.__name__ for r in every) == ["Exp", "Neg"]


# --- in-place operations are drawn as they ran ---------------------------------------------------------------

def test_add_in_place_is_a_node_fed_by_what_fed_it_with_the_values_forward_computed():
    w = gl.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with gl.lab.record() as rec:
        y = w * 2
        y.add_(1)
        y.sum()
    graph = capture(rec)
    assert [n.label for n in graph.nodes.values()] == ["leaf", "Mul", "Add", "Sum"]
    assert edges_by_label(graph) == [("Add", "Sum"), ("Mul", "Add"), ("leaf", "Mul")]
    w_np = np.array([1.0, -2.0, 3.0])
    assert node_labelled(graph, "Mul").value["values"] == (w_np * 2).tolist()  # before add_ changed it
    assert node_labelled(graph, "Add").value["values"] == (w_np * 2 + 1).tolist()
    assert node_labelled(graph, "Sum").value["values"] == [(w_np * 2 + 1).sum()]
    assert not any(n.value.get("changed") for n in graph.nodes.values())


def test_relu_in_place_is_fed_by_the_linear_and_the_linear_shows_its_own_output():
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True))
    x = gl.randn(5, 3)
    with gl.lab.record() as rec:
        model(x).sum()
    graph = capture(rec)
    assert "computed before recording" not in [n.label for n in graph.nodes.values()]
    assert edges_by_label(graph) == [("0.bias", "Linear"), ("0.weight", "Linear"), ("Linear", "Relu"),
                                     ("Relu", "Sum"), ("input", "Linear")]
    weight, bias = model[0].weight.detach().numpy(), model[0].bias.detach().numpy()
    linear = x.numpy() @ weight.T + bias  # an independent forward
    assert (linear < 0).any()
    np.testing.assert_allclose(node_labelled(graph, "Linear").value["min"], linear.min(), rtol=1e-6)
    np.testing.assert_allclose(node_labelled(graph, "Relu").value["min"], 0.0)
    np.testing.assert_allclose(node_labelled(graph, "Relu").value["norm"], np.linalg.norm(np.maximum(linear, 0)),
                               rtol=1e-6)


def test_a_tensor_that_needs_no_grad_written_in_place_with_one_that_does_is_input_data():
    w = gl.tensor([1.0, -2.0, 3.0], requires_grad=True)
    with gl.lab.record() as rec:
        buffer = gl.zeros(3)
        buffer.add_(w)
        buffer.sum()
    graph = capture(rec)
    assert [(n.kind, n.label) for n in graph.nodes.values()] == [
        ("input", "input"), ("leaf", "leaf"), ("op", "Add"), ("op", "Sum")]
    assert graph.nodes["n0"].value["values"] == [0.0, 0.0, 0.0]


def test_a_value_overwritten_with_no_copy_kept_says_so():
    w = gl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with gl.lab.record() as rec:
        data = gl.tensor([1.0, 2.0, 3.0]) * 1  # needs no grad: mul_ writes into it without keeping a copy
        data.mul_(2)
        (data * w).sum()
    mul = ops_of(capture(rec))[0]
    assert mul.value["values"] == [2.0, 4.0, 6.0]  # its values now
    assert "changed in place after this operation computed it (version 0 → 1)" in mul.value["changed"]
    assert "these are its values now" in mul.value["changed"]


def test_a_saved_tensor_changed_since_it_was_saved_shows_what_was_saved_and_warns_of_backward():
    w = gl.tensor([0.0, 1.0], requires_grad=True)
    with gl.lab.record() as rec:
        a = w.exp()
        a.mul_(2)
        loss = a.sum()
    exp = node_labelled(capture(rec), "Exp")
    (saved,) = exp.saved
    np.testing.assert_allclose(saved["values"], np.exp([0.0, 1.0]), rtol=1e-6)
    np.testing.assert_allclose(exp.value["values"], np.exp([0.0, 1.0]), rtol=1e-6)
    assert "backward will raise an error" in saved["changed"] and "shown: the values it saved" in saved["changed"]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@requires_torch
def test_in_place_values_match_pytorchs_forward():
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 2))
    x = gl.randn(6, 3)
    with gl.lab.record() as rec:
        out = model(x)
        out.mul_(3)
        out.sum()
    twin = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    with torch.no_grad():
        for ours, theirs in zip(model.parameters(), twin.parameters()):
            theirs.copy_(torch.tensor(ours.detach().numpy()))
    t = torch.tensor(x.numpy(), dtype=torch.float64)
    expected = {"Linear": [twin[0](t), twin[2](twin[1](twin[0](t)))], "Relu": [twin[1](twin[0](t))]}
    expected["Mul"] = [expected["Linear"][1] * 3]
    shown = {}
    for node in ops_of(capture(rec)):
        shown.setdefault(node.label, []).append(node.value)
    for label, tensors in expected.items():
        for summary, tensor in zip(shown[label], tensors, strict=True):
            np.testing.assert_allclose(summary["min"], tensor.min().item(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(summary["norm"], tensor.norm().item(), rtol=1e-5)
            assert "changed" not in summary


# --- a value changed after the forward -------------------------------------------------------------------------

def test_weights_changed_by_an_optimizer_step_are_marked_with_the_versions():
    gl.manual_seed(0)
    model = nn.Linear(2, 1)
    optimizer = gl.optim.SGD(model.parameters(), lr=0.5)
    x = gl.ones(1, 2)
    with gl.lab.record() as rec:
        loss = model(x).sum()
    before = capture(rec)
    assert not any(n.value.get("changed") for n in before.nodes.values())
    loss.backward()
    version = model.weight.version
    optimizer.step()
    graph = capture(rec)
    weight = node_labelled(graph, "weight")
    assert f"changed in place since the forward used it (version {version} → {version + 1}" in weight.value["changed"]
    assert "these are its values now, not the ones the forward used" in weight.value["changed"]
    np.testing.assert_allclose(weight.value["values"], model.weight.detach().numpy().ravel())
    assert "changed" not in node_labelled(graph, "input").value
    assert "changed" not in node_labelled(graph, "Linear").value  # its output is its own, untouched

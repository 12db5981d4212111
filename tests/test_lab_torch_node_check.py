""""Check this node" on PyTorch's nodes: finite differences where the forward is known, and otherwise only what
the node alone can show (its backward is linear in the gradient), said as such — never a pass it did not earn."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
import gradlab as gl  # noqa: E402


def cube(name, derivative):
    """A custom Function computing x³ whose backward is ``derivative(x, g)``."""
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return derivative(x, g)
    methods = {"forward": staticmethod(forward), "backward": staticmethod(backward)}
    return type(name, (torch.autograd.Function,), methods)


RIGHT = cube("Cube", lambda x, g: 3 * x * x * g)
SIGN_SLIP = cube("SignSlip", lambda x, g: -3 * x * x * g)
FORGETS_G = cube("ForgetsG", lambda x, g: 3 * x * x)


def graph_of(function):
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    h = lin(torch.randn(4, 3))
    out = function.apply(h)
    graph = gl.lab.capture(out.tanh().sum(), lin)
    return graph, graph.by_ref[id(out.grad_fn)], h


def test_a_node_of_a_tensor_graph_is_not_claimed_checked_and_says_why():
    graph, node_id, _ = graph_of(RIGHT)
    result = gl.lab.check_node(graph, node_id)
    assert result["ok"] is None and result["linear"] is True
    assert result["inputs"] == [] and result["linearity"]  # no finite difference shown, since none was taken
    assert "cannot compare it with finite differences" in result["message"]
    assert "gl.lab.record()" in result["message"] and "that is all this check can say" in result["message"]


def test_a_backward_that_forgets_the_incoming_gradient_fails_even_from_the_node_alone():
    graph, node_id, _ = graph_of(FORGETS_G)
    result = gl.lab.check_node(graph, node_id)
    assert result["ok"] is False and result["linear"] is False
    assert "ForgetsG: backward is NOT linear in the gradient g it receives" in result["message"]


def test_pytorchs_own_nodes_are_linear_in_their_gradient():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    graph = gl.lab.capture(model(torch.randn(5, 3)).pow(2).mean(), model)
    for node in graph.nodes.values():
        if node.kind == "op":
            result = gl.lab.check_node(graph, node.id)
            assert result["ok"] is None and result["linear"] is True, (node.op, result["message"])


def test_where_a_recording_kept_the_forward_finite_differences_in_float64_judge_the_node():
    graph, node_id, h = graph_of(RIGHT)
    graph.calls[node_id] = (RIGHT.apply, (h,))  # what a recording keeps: the function and the inputs it got
    result = gl.lab.check_node(graph, node_id)
    assert result["ok"] is True and "agrees with finite differences" in result["message"]
    assert result["inputs"][0]["name"] == "x" and result["inputs"][0]["error"] < 1e-8

    graph, node_id, h = graph_of(SIGN_SLIP)
    graph.calls[node_id] = (SIGN_SLIP.apply, (h,))
    result = gl.lab.check_node(graph, node_id)
    assert result["ok"] is False and "a sign slip" in result["message"]


def test_a_recorded_dropout_is_checked_with_torchs_random_state_replayed():
    torch.manual_seed(2)
    x = torch.randn(6, 5, requires_grad=True)
    out = torch.nn.functional.dropout(x, 0.5, training=True)
    graph = gl.lab.capture(out.sum(), {"x": x})
    node_id = graph.by_ref[id(out.grad_fn)]
    graph.calls[node_id] = (torch.nn.functional.dropout, (x,), {"p": 0.5, "training": True})
    state = torch.get_rng_state()
    result = gl.lab.check_node(graph, node_id)
    assert result["ok"] is True and result["random"] is True
    assert torch.equal(torch.get_rng_state(), state)  # the check draws nothing from your random stream


def _recorded_mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    x, y = torch.randn(5, 3), torch.tensor([0, 1, 0, 1, 1])
    with gl.lab.record() as rec:
        torch.nn.functional.cross_entropy(model(x), y)
    return gl.lab.capture(rec)


def test_a_recorded_torch_call_is_checked_against_finite_differences():
    graph = _recorded_mlp()
    for op in ("TanhBackward0", "AddmmBackward0"):
        node = next(n for n in graph.nodes.values() if n.op == op)
        answer = gl.lab.check_node(graph, node.id)
        assert answer["ok"] is True, answer["message"]
        assert answer["inputs"] and max(row["error"] for row in answer["inputs"]) < 1e-6
        assert "agrees with finite differences" in answer["message"]
    addmm = next(n for n in graph.nodes.values() if n.op == "AddmmBackward0")  # F.linear made T and Addmm
    assert "checked as the whole call linear, which made it together with T" in gl.lab.check_node(graph, addmm.id)["message"]


def test_a_node_the_recording_did_not_see_made_says_why_it_is_not_compared():
    torch.manual_seed(0)
    lin = torch.nn.Linear(3, 3)
    with gl.lab.record() as rec:
        RIGHT.apply(lin(torch.randn(4, 3))).tanh().sum()  # a custom Function's apply is no torch function
    graph = gl.lab.capture(rec)
    node = next(n for n in graph.nodes.values() if n.op == "CubeBackward")
    answer = gl.lab.check_node(graph, node.id)
    assert answer["ok"] is None and answer["inputs"] == []
    assert "a call the recording does not see made it" in answer["message"]
    assert "drawn from a tensor" not in answer["message"]

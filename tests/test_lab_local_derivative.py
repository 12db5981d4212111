"""Lab 1's inspector on Scalar graphs: a click shows each op's local derivative beside a finite-difference
probe; "check this node" catches a Scalar backward that forgets g; check_centred_difference names the slips."""

import math

import pytest

import gradlab as gl
from gradlab import Scalar
from gradlab.lab import capture
from gradlab.lab.node_check import check_node
from gradlab.scalar import ScalarFunction


def neuron():
    x1, x2 = Scalar(2.0, "x1"), Scalar(0.0, "x2")
    w1, w2 = Scalar(-3.0, "w1"), Scalar(1.0, "w2")
    b = Scalar(6.8813735870195432, "b")
    return (x1 * w1 + x2 * w2 + b).tanh(), (x1, w1)


def op_node(graph, op):
    return next(n for n in graph.nodes.values() if n.kind == "op" and n.op == op)


def cube(backward):
    """x³ with the backward given as backward(g, x)."""
    class Cube(ScalarFunction):
        """x³: d/dx = 3x²."""
        op = "cube"

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_values
            return backward(grad, x)
    return Cube


def test_the_tanh_node_shows_one_minus_out_squared_beside_its_centred_difference():
    out, _ = neuron()
    tanh = op_node(capture(out), "Tanh")
    (row,) = tanh.local
    n = 2.0 * -3.0 + 6.8813735870195432
    assert (row["name"], row["of"], row["at"]) == ("x", "+", n)
    assert row["derivative"] == pytest.approx(1 - math.tanh(n) ** 2, rel=1e-15)  # 0.5, by the rule
    assert row["probe"] == pytest.approx(1 - math.tanh(n) ** 2, rel=1e-8) and row["probe"] != row["derivative"]
    assert tanh.to_json()["local"] == tanh.local


def test_a_product_node_shows_each_input_the_other_input():
    out, (x1, w1) = neuron()
    graph = capture(out)
    product = graph.nodes[graph.by_ref[id(out.parents[0].parents[0].parents[0])]]  # x1 * w1
    assert [(r["name"], r["of"], r["derivative"]) for r in product.local] == [("x", "x1", -3.0), ("y", "w1", 2.0)]
    assert all(r["probe"] == pytest.approx(r["derivative"], rel=1e-9) for r in product.local)


def test_a_leaf_and_a_constant_input_have_no_row():
    x = Scalar(1.5, "x")
    graph = capture(x * 4.0)
    assert graph.nodes[graph.by_ref[id(x)]].local == []
    (row,) = op_node(graph, "Mul").local  # the 4.0 is a constant: no row of its own
    assert (row["name"], row["derivative"]) == ("x", 4.0)


def test_an_unwritten_backward_draws_with_no_rows_and_is_not_done_yet():
    out = cube(lambda g, x: ...).apply(Scalar(1.5, "x"))
    view = gl.lab.GraphView(out)
    (node_id,) = view.find("cube")
    assert view.nodes[node_id]["local"] == []
    assert gl.lab.check_this_node("Cube", view, node_id).status == "not done"


def test_check_this_node_catches_a_scalar_backward_that_ignores_g():
    out = cube(lambda g, x: 3 * x ** 2).apply(Scalar(1.5, "x"))
    graph = capture(out)
    result = check_node(graph, graph.outputs[0])
    assert result["ok"] is False
    assert "does not multiply by the gradient g" in result["message"] and "6.75" in result["message"]
    assert "scaled" not in result["inputs"][0]


def test_check_this_node_names_a_sign_slip_and_passes_the_right_backward():
    slip = cube(lambda g, x: -g * 3 * x ** 2).apply(Scalar(1.5, "x"))
    graph = capture(slip)
    assert "the wrong sign" in check_node(graph, graph.outputs[0])["message"]
    right = cube(lambda g, x: g * 3 * x ** 2).apply(Scalar(1.5, "x"))
    graph = capture(right)
    assert check_node(graph, graph.outputs[0])["ok"] is True


def test_every_built_in_scalar_op_multiplies_by_g():
    x, y = Scalar(0.7, "x"), Scalar(1.3, "y")
    expressions = [x + y, x - y, x * y, x / y, x ** y, -x, x.exp(), x.log(), x.tanh(), x.sigmoid(), x.relu(),
                   x.sin(), x.cos(), x.sqrt()]
    for expression in expressions:
        graph = capture(expression)
        result = check_node(graph, graph.outputs[0])
        assert result["ok"] is True, result["message"]


def centred(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


@pytest.mark.parametrize("mine", [centred, lambda f, x, h: (f(x + h) - f(x - h)) / 2 / h])
def test_check_centred_difference_passes_the_formula_however_it_is_written(mine):
    assert gl.lab.check_centred_difference("centred", mine).passed


@pytest.mark.parametrize("mine, words", [
    (lambda f, x, h: (f(x + h) - f(x)) / h, "forward difference"),
    (lambda f, x, h: (f(x) - f(x - h)) / h, "backward difference"),
    (lambda f, x, h: (f(x + h) - f(x - h)) / h, "2h apart"),
    (lambda f, x, h: (f(x - h) - f(x + h)) / (2 * h), "wrong sign"),
    (lambda f, x, h: float("nan"), "yours is nan"),
    (lambda f, x, h: "slope", "return a number"),
])
def test_check_centred_difference_names_each_slip(mine, words):
    verdict = gl.lab.check_centred_difference("centred", mine)
    assert verdict.status == "fail" and words in verdict.message


def test_check_centred_difference_is_not_done_while_it_returns_the_placeholder():
    assert gl.lab.check_centred_difference("centred", ...).status == "not done"
    assert gl.lab.check_centred_difference("centred", lambda f, x, h: ...).status == "not done"


def test_a_scalar_view_drawn_by_kind_stays_so_until_a_gradient_reaches_its_operations():
    x = Scalar(1.5, "x")
    x.grad = 2.0  # a gradient from another graph's backward: none has come through this one
    view = gl.lab.GraphView((x * 3.0).tanh(), color="kind")
    view.refresh()  # (what runs after each cell)
    assert view.color_mode == "kind"
    view.graph.nodes[view.graph.outputs[0]].ref.backward()
    view.refresh()
    assert view.color_mode == "grad"

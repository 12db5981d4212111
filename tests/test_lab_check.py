""""Check this node": an operation's backward against central finite differences on its real inputs."""

import json

import pytest
from lab_models import Cube, WrongCube, mlp

import gradlab as gl
import gradlab.nn.functional as F
from gradlab import Scalar
from gradlab.lab import CaptureError, capture
from gradlab.lab.node_check import check_node
from gradlab.scalar import ScalarFunction


class WrongScale(gl.autograd.Function):
    """a · s: right for a, wrong for s (it returns g·a·2)."""

    @staticmethod
    def forward(ctx, a, scale):
        ctx.save_for_backward(a, scale)
        return a * scale

    @staticmethod
    def backward(ctx, grad):
        a, scale = ctx.saved_tensors
        return grad * scale, (grad * a * 2).sum()


class WrongSquare(ScalarFunction):
    """x²: with a backward that says g·x."""

    op = "sq"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_values
        return grad * x


def recorded_mlp():
    model = mlp()  # seeds 0; x and y follow from the same stream, not from batch()
    x, y = gl.randn(5, 3), gl.tensor([0, 1, 0, 1, 1])
    with gl.lab.record() as rec:
        F.cross_entropy(model(x), y)
    return capture(rec)


def node_of(graph, op):
    return next(n.id for n in graph.nodes.values() if n.op == op)


@pytest.mark.parametrize("op", ["AddmmBackward0", "TanhBackward0", "LogSoftmaxBackward0", "NllLossBackward0"])
def test_built_in_ops_of_a_recorded_mlp_agree_with_finite_differences(op):
    graph = recorded_mlp()
    result = check_node(graph, node_of(graph, op))
    assert result["ok"] is True, result["message"]
    assert result["inputs"] and all(row["error"] <= result["tolerance"] for row in result["inputs"])
    assert "agrees" in result["message"]


def test_linear_is_checked_for_each_of_its_inputs():
    graph = recorded_mlp()
    result = check_node(graph, node_of(graph, "AddmmBackward0"))
    assert [row["name"] for row in result["inputs"]] == ["x", "w", "b"]


def test_cross_entropy_checks_the_logits_not_the_integer_targets():
    graph = recorded_mlp()
    result = check_node(graph, node_of(graph, "NllLossBackward0"))
    assert len(result["inputs"]) == 1


def test_a_wrong_custom_backward_is_flagged_and_names_its_input():
    w = gl.randn(4, requires_grad=True)
    with gl.lab.record() as rec:
        WrongCube.apply(w).sum()
    graph = capture(rec)
    result = check_node(graph, node_of(graph, "WrongCubeBackward"))
    assert result["ok"] is False
    assert "DISAGREES" in result["message"] and "'x'" in result["message"]
    (row,) = result["inputs"]
    assert row["analytic"] == pytest.approx(row["numeric"] * 2 / 3, rel=1e-4)  # 2x² where 3x² is right


def test_a_backward_wrong_for_one_input_names_that_input():
    a, s = gl.randn(4, requires_grad=True), gl.tensor(1.5, requires_grad=True)
    with gl.lab.record() as rec:
        WrongScale.apply(a, s).sum()
    graph = capture(rec)
    result = check_node(graph, node_of(graph, "WrongScaleBackward"))
    assert result["ok"] is False and "'scale'" in result["message"]
    assert {row["name"]: row["error"] <= result["tolerance"] for row in result["inputs"]} == {"a": True, "scale": False}


def test_a_correct_custom_function_passes():
    w = gl.randn(4, requires_grad=True)
    with gl.lab.record() as rec:
        Cube.apply(w).sum()
    graph = capture(rec)
    result = check_node(graph, node_of(graph, "CubeBackward"))
    assert result["ok"] is True, result["message"]


def test_every_op_of_a_scalar_neuron_passes():
    x, w, b = Scalar(0.5, "x"), Scalar(-1.5, "w"), Scalar(0.25, "b")
    graph = capture((x * w + b).tanh() / x)
    for node in graph.nodes.values():
        if node.kind == "op":
            result = check_node(graph, node.id)
            assert result["ok"] is True and result["inputs"], (node.label, result["message"])


def test_a_wrong_scalar_function_is_flagged():
    x = Scalar(1.5, "x")
    graph = capture(WrongSquare.apply(x))
    result = check_node(graph, graph.outputs[0])
    assert result["ok"] is False
    (row,) = result["inputs"]
    assert (row["analytic"], row["numeric"]) == (1.5, pytest.approx(3.0, rel=1e-6))


def test_a_leaf_has_nothing_to_check():
    graph = recorded_mlp()
    result = check_node(graph, next(n.id for n in graph.nodes.values() if n.kind == "param"))
    assert result["ok"] is True and result["inputs"] == [] and "no backward of its own" in result["message"]


def test_a_graph_drawn_from_a_tensor_says_to_record_the_forward():
    w = gl.randn(3, requires_grad=True)
    graph = capture((w * 2).sum())
    with pytest.raises(CaptureError, match="gl.lab.record()"):
        check_node(graph, graph.outputs[0])


def test_an_unknown_node_id_is_a_key_error():
    with pytest.raises(KeyError, match="n999"):
        check_node(recorded_mlp(), "n999")


def test_checking_an_op_whose_input_holds_nan_gives_strict_json():
    w = gl.tensor([-1.0, 2.0], requires_grad=True)
    with gl.lab.record() as rec:
        (w.log() * 3.0).sum()  # log(-1) is NaN: the Mul's input holds it
    graph = capture(rec)
    result = check_node(graph, node_of(graph, "MulBackward0"))
    json.dumps(result, allow_nan=False)

""""Check this node" says what it found: a kink, a forward that draws random numbers, or why it cannot check.

Issue 17: a correct ReLU at 0 (and a max with ties) was reported as *disagrees*, abs at 0 passed with
no word about its kink, and a Function whose forward draws random numbers was *disagrees* too.
"""

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn.functional as F
from gradlab import Scalar
from gradlab.lab import capture
from gradlab.lab.node_check import check_node


def check_op(op, fn, values, **kw):
    """Record ``fn(x).sum()`` on a float32 x holding ``values`` and check the node named ``op``."""
    x = gl.tensor(values, dtype=gl.float32, requires_grad=True)
    with gl.lab.record() as rec:
        fn(x).sum()
    graph = capture(rec)
    node = next(n for n in graph.nodes.values() if n.op == op)
    return check_node(graph, node.id, **kw)


ON_A_KINK = [0.0, 1.0, -1.0, 2.0]  # ReLU's, abs's and clamp's kink is x[0]


# --- kinks ---------------------------------------------------------------------------------------------

def test_relu_at_zero_is_a_kink_and_the_engines_choice_is_one_side():
    result = check_op("ReluBackward0", lambda x: x.relu(), ON_A_KINK)
    assert result["ok"] is True, result["message"]
    assert ("x[0] = 0 is a kink of Relu: the one-sided slopes are 0 (from the left) and 1 (from the right); "
            "the engine's choice 0 is one of them") in result["message"]
    assert "DISAGREES" not in result["message"]
    (kink,) = result["kinks"]
    assert kink["where"] == "x[0]" and kink["engine"] == 0.0
    assert kink["left"] == pytest.approx(0.0, abs=1e-6) and kink["right"] == pytest.approx(1.0, rel=1e-6)


def test_a_relu_of_one_number_at_zero_names_it_without_an_index():
    result = check_op("ReluBackward0", lambda x: x.relu(), 0.0)
    assert result["message"].startswith("Relu: x = 0 is a kink of Relu")


def test_abs_at_zero_agrees_only_on_average_and_says_so():
    result = check_op("AbsBackward0", lambda x: x.abs(), ON_A_KINK)
    assert result["ok"] is True
    assert ("x[0] = 0 is a kink of Abs: the one-sided slopes are -1 (from the left) and 1 (from the right); "
            "the engine's choice 0 is between them") in result["message"]


def test_max_with_ties_is_a_kink_for_each_tied_element():
    result = check_op("MaxBackward0", lambda x: x.max(0).values, [0.0, 2.0, -1.0, 2.0])
    assert result["ok"] is True, result["message"]
    assert "x[1] = 2 is a kink of MaxDim" in result["message"] and "one of them" in result["message"]
    assert [k["where"] for k in result["kinks"]] == ["x[1]", "x[3]"]


def test_amax_with_ties_splits_the_gradient_between_the_sides():
    result = check_op("AmaxBackward0", lambda x: x.amax(), [0.0, 2.0, -1.0, 2.0])
    assert result["ok"] is True and "the engine's choice 0.5 is between them" in result["message"]


@pytest.mark.parametrize("op, fn", [("HardtanhBackward0", F.hardtanh), ("ClampBackward1", lambda x: x.clamp(0.0, 1.0))])
def test_the_ends_of_a_clamp_are_kinks(op, fn):
    result = check_op(op, fn, [1.0, 0.5, -3.0, 0.25])
    assert result["ok"] is True, result["message"]
    assert "x[0] = 1 is a kink" in result["message"]


class WrongAtZero(gl.autograd.Function):
    """ReLU with a backward that says 3 at 0: neither side's slope."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0.0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * ((x > 0).to(grad.dtype) + 3 * (x == 0).to(grad.dtype))


class WrongAwayFromTheKink(WrongAtZero):
    """ReLU with a backward that says 2 where x > 0."""

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 2 * (x > 0).to(grad.dtype)


def test_a_choice_outside_the_two_sides_is_a_wrong_backward():
    result = check_op("WrongAtZeroBackward", WrongAtZero.apply, ON_A_KINK)
    assert result["ok"] is False
    assert "x[0] = 0 is a kink of WrongAtZero" in result["message"]
    assert "backward gives 3, which is neither of them nor between them" in result["message"]


def test_a_backward_wrong_where_there_is_a_derivative_still_disagrees_beside_a_kink():
    result = check_op("WrongAwayFromTheKinkBackward", WrongAwayFromTheKink.apply, ON_A_KINK)
    assert result["ok"] is False
    assert ("DISAGREES with finite differences at x[1], where the function has a derivative: backward says 2, "
            "the slope is 1") in result["message"]


def test_a_kink_in_an_input_too_big_to_search_is_reported_as_unchecked():
    values = np.zeros(3000)
    values[::2] = np.linspace(0.5, 2.0, 1500)
    result = check_op("ReluBackward0", lambda x: x.relu(), values.tolist())
    assert result["ok"] is None
    assert "sits on a kink" in result["message"] and "too many elements" in result["message"]


def test_a_kink_in_a_big_input_where_backward_agrees_on_average_is_still_named():
    values = np.zeros(3000)
    values[::2] = np.linspace(0.5, 2.0, 1500)
    result = check_op("AbsBackward0", lambda x: x.abs(), values.tolist())
    message = result["message"]
    assert result["ok"] is True
    assert "its input 'x' sits on a kink" in message and "agrees with the central difference" in message


def test_a_smooth_function_with_a_strong_curve_is_no_kink():
    result = check_op("ReciprocalBackward0", lambda x: x.reciprocal(), [0.01, 0.02, 1.0])
    assert result["ok"] is True and "kinks" not in result and "agrees" in result["message"]


def test_a_scalar_relu_at_zero_is_a_kink():
    graph = capture(Scalar(0.0, "a").relu())
    result = check_node(graph, graph.outputs[0])
    assert result["ok"] is True
    assert result["message"].startswith("relu: x = 0 is a kink of relu: the one-sided slopes are 0 (from the left) "
                                        "and 1 (from the right); the engine's choice 0 is one of them")


# --- a forward that draws random numbers -------------------------------------------------------------------

class Dropout(gl.autograd.Function):
    """Dropout as a user writes it: the forward draws its mask from gradlab's generator."""

    @staticmethod
    def forward(ctx, x):
        mask = (gl.rand(*x.shape) > 0.5).to(x.dtype) * 2.0
        ctx.save_for_backward(mask)
        return x * mask

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask


class NumpyNoise(gl.autograd.Function):
    """x plus noise from a fresh, unseeded numpy generator: no state the check can rewind."""

    @staticmethod
    def forward(ctx, x):
        return x + x.new_tensor(np.random.default_rng().standard_normal(tuple(x.shape)))

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_a_random_forward_is_checked_with_its_random_state_replayed():
    gl.manual_seed(0)
    result = check_op("DropoutBackward", Dropout.apply, [0.5, -1.0, 2.0, 0.25, 1.5, -0.75])
    assert result["ok"] is True, result["message"]
    assert result["random"] is True and "agrees" in result["message"]
    assert "Its forward draws random numbers: each run of the check replays the random state" in result["message"]


def test_checking_a_random_forward_leaves_your_random_state_as_it_was():
    gl.manual_seed(0)
    x = gl.tensor([0.5, -1.0, 2.0], requires_grad=True)
    with gl.lab.record() as rec:
        Dropout.apply(x).sum()
    graph = capture(rec)
    node = next(n for n in graph.nodes.values() if n.op == "DropoutBackward")
    gl.manual_seed(1)
    expected = gl.rand(4)
    gl.manual_seed(1)
    check_node(graph, node.id)
    assert np.array_equal(gl.rand(4).numpy(), expected.numpy())  # the check drew nothing from your stream


def test_a_forward_whose_randomness_cannot_be_replayed_cannot_be_checked():
    result = check_op("NumpyNoiseBackward", NumpyNoise.apply, [0.5, 1.0])
    assert result["ok"] is None
    assert "different outputs on the same inputs" in result["message"] and "cannot check it" in result["message"]

"""Lab 1's exercises (labs/01-derivatives-and-your-first-graph.ipynb): each one's setup rebuilt as the lab builds
it; the right answer passes its check, and each plausible wrong answer fails with the hint that points at its
mistake. The right answers are written here from calculus, not read from the engine."""

import math

import pytest

import gradlab as gl
from gradlab import Scalar, lab
from gradlab.scalar import ScalarFunction

B = 6.8813735870195432  # Karpathy's bias: n = 0.8814, out = 1/√2


# --- Exercise 1: the centred difference --------------------------------------------------------------------

def test_exercise_1_centred_difference():
    assert lab.check_centred_difference("centred_difference", lambda f, x, h: (f(x + h) - f(x - h)) / (2 * h))
    forward = lab.check_centred_difference("centred_difference", lambda f, x, h: (f(x + h) - f(x)) / h)
    assert not forward and "forward difference" in forward.message and "both sides" in forward.message
    halved = lab.check_centred_difference("centred_difference", lambda f, x, h: (f(x + h) - f(x - h)) / h)
    assert "2h apart" in halved.message  # the 2 of 2h forgotten
    flipped = lab.check_centred_difference("centred_difference", lambda f, x, h: (f(x - h) - f(x + h)) / (2 * h))
    assert "wrong sign" in flipped.message


def test_exercise_1_unsolved_is_not_done_and_the_hint_never_shows_the_answer():
    assert lab.check_centred_difference("centred_difference", lambda f, x, h: ...).status == "not done"
    forward = lab.check_centred_difference("centred_difference", lambda f, x, h: (f(x + h) - f(x)) / h)
    centred = ((1.5 + 1e-3) ** 3 - (1.5 - 1e-3) ** 3) / 2e-3  # the first function checked, x³ at 1.5
    assert "x³ at x = 1.5" in forward.message and f"{centred:.7g}" not in forward.message


def test_section_2_the_best_steps_the_lab_describes():
    """The lab says: the forward difference does best near h = 1e-8, the centred one near 1e-5, 100 times better."""
    steps = [10.0 ** -k for k in range(1, 16)]
    truth = math.cos(1.0)
    forward = [abs((math.sin(1 + h) - math.sin(1)) / h - truth) for h in steps]
    centred = [abs((math.sin(1 + h) - math.sin(1 - h)) / (2 * h) - truth) for h in steps]
    assert steps[forward.index(min(forward))] == 1e-8 and 1e-9 < min(forward) < 1e-8
    assert steps[centred.index(min(centred))] == 1e-5 and min(centred) < min(forward) / 100


# --- Exercise 2: (x + y) · z by the chain rule ---------------------------------------------------------------

@pytest.fixture
def gates():
    x, y, z = Scalar(-2.0, "x"), Scalar(5.0, "y"), Scalar(-4.0, "z")
    ((x + y) * z).backward()
    return [x.grad, y.grad, z.grad]


def test_exercise_2_gates(gates):
    name = "[∂f/∂x, ∂f/∂y, ∂f/∂z]"
    assert lab.check(name, [-4.0, -4.0, 3.0], gates).passed  # z, z and q = x + y
    no_chain = lab.check(name, [1.0, 1.0, 3.0], gates)  # only the sum's local 1, not times ∂f/∂q = z
    assert not no_chain and "2 of 3 elements are off" in no_chain.message
    assert "wrong sign" in lab.check(name, [4.0, 4.0, -3.0], gates).message
    swapped = lab.check(name, [3.0, 3.0, -4.0], gates)  # the product's inputs swapped: x got q, z got z
    assert "3 of 3 elements are off" in swapped.message


def test_exercise_2_half_written_is_not_done_yet(gates):
    assert lab.check("[∂f/∂x, ∂f/∂y, ∂f/∂z]", [-4.0, ..., ...], gates).status == "not done"
    assert lab.check("[∂f/∂x, ∂f/∂y, ∂f/∂z]", [..., ..., ...], gates).status == "not done"


# --- Exercise 3: the neuron's five gradients -----------------------------------------------------------------

@pytest.fixture
def neuron_grads():
    """The lab's check: the engine's backward on a copy of tanh(x1·w1 + x2·w2 + b)."""
    twin = [Scalar(v) for v in (2.0, -3.0, 0.0, 1.0, B)]
    (twin[0] * twin[1] + twin[2] * twin[3] + twin[4]).tanh().backward()
    return [t.grad for t in twin]


def test_exercise_3_neuron(neuron_grads):
    name = "[∂out/∂x1, ∂out/∂w1, ∂out/∂x2, ∂out/∂w2, ∂out/∂b]"
    d_n = 1 - math.tanh(2.0 * -3.0 + 0.0 * 1.0 + B) ** 2  # = 0.5
    right = [d_n * -3.0, d_n * 2.0, d_n * 1.0, d_n * 0.0, d_n]
    assert lab.check(name, right, neuron_grads).passed
    forgot_tanh = lab.check(name, [-3.0, 2.0, 1.0, 0.0, 1.0], neuron_grads)  # tanh's factor 1 − out² left out
    assert not forgot_tanh and "off by the same factor" in forgot_tanh.message
    assert "wrong sign" in lab.check(name, [-g for g in right], neuron_grads).message
    own_input = lab.check(name, [d_n * 2.0, d_n * -3.0, d_n * 0.0, d_n * 1.0, d_n], neuron_grads)  # x·… for ∂/∂x
    assert not own_input and "4 of 5 elements are off" in own_input.message
    tanh_not_squared = [(1 - math.tanh(0.8813735870195432)) * g for g in (-3.0, 2.0, 1.0, 0.0, 1.0)]
    assert "off by the same factor" in lab.check(name, tanh_not_squared, neuron_grads).message


# --- Exercise 4: Cube's backward, by check this node ---------------------------------------------------------

def cube_with(backward):
    class Cube(ScalarFunction):
        """x³, the cube."""
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


def check_cube(backward):
    x1, x2, w1, w2, b = Scalar(2.0, "x1"), Scalar(0.0, "x2"), Scalar(-3.0, "w1"), Scalar(1.0, "w2"), Scalar(B, "b")
    view = gl.lab.GraphView(cube_with(backward).apply(x1 * w1 + x2 * w2 + b), color="kind")
    (box,) = view.find("cube")
    return lab.check_this_node("Cube backward", view, box), view.nodes[box]


def test_exercise_4_cube():
    verdict, node = check_cube(lambda g, x: g * 3 * x ** 2)
    assert verdict.passed and "agrees with finite differences" in verdict.message
    ((row),) = node["local"]  # the inspector's table: 3n² beside its probe
    assert row["derivative"] == pytest.approx(3 * 0.8813735870195432 ** 2, rel=1e-14)
    assert row["probe"] == pytest.approx(row["derivative"], rel=1e-8)
    forgot_g, _ = check_cube(lambda g, x: 3 * x ** 2)  # the chain rule's factor g left out
    assert not forgot_g and "does not multiply by the gradient g" in forgot_g.message
    slip, _ = check_cube(lambda g, x: -g * 3 * x ** 2)
    assert not slip and "wrong sign" in slip.message
    no_three, node = check_cube(lambda g, x: g * x ** 2)
    assert not no_three and "DISAGREES" in no_three.message and "2.33046" in no_three.message  # the slope
    assert node["local"][0]["derivative"] == pytest.approx(0.8813735870195432 ** 2)  # the table shows it too
    assert check_cube(lambda g, x: ...)[0].status == "not done"

"""Lab 2's exercises (labs/02-backprop-as-an-algorithm.ipynb) and their checkers (gradlab/lab/algorithm_exercises.py).

Each exercise's setup is rebuilt as the lab builds it; the right answer passes its check, and each plausible wrong
answer fails with the hint that points at its mistake. The lab's claims that are not exercises (the level-by-level
order breaks on its network, the two arrivals at Tanh, the second backward's error) are checked here too.
"""

import math

import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab import lab


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(2, 3)
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        h = self.hidden(x).tanh()
        return self.out(h) + 0.5 * h.sum(dim=1, keepdim=True)


@pytest.fixture
def net():
    gl.manual_seed(0)
    model = TinyNet()
    x = gl.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 0.75], [1.0, 1.0]])
    target = gl.tensor([[1.0], [0.0], [0.5], [2.0]])
    loss_fn = lambda: ((model(x) - target) ** 2).mean()  # noqa: E731
    return model, loss_fn


def depth_first(output):
    """The solution's answer to exercise 1."""
    order, visited = [], set()

    def visit(node):
        if node in visited:
            return
        visited.add(node)
        for child, _ in node.next_functions:
            if child is not None:
                visit(child)
        order.append(node)

    visit(output.grad_fn)
    return order


def level_by_level(output):
    """The lab's wrong way: breadth first from the output, reversed."""
    order, seen, queue = [], {output.grad_fn}, [output.grad_fn]
    while queue:
        node = queue.pop(0)
        order.append(node)
        for child, _ in node.next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                queue.append(child)
    return order[::-1]


# --- exercise 1: a topological order --------------------------------------------------------------------

def test_exercise_1_topological_order(net):
    model, loss_fn = net
    loss = loss_fn()
    right = depth_first(loss)
    assert len(right) == 13 and lab.check_topological_order("order", right, loss).passed
    assert lab.check_topological_order("order", ..., loss).status == "not done"
    assert lab.check_topological_order("order", None, loss).status == "not done"

    bfs = lab.check_topological_order("order", level_by_level(loss), loss)  # the lab says this one breaks
    assert not bfs and "SumBackward1 comes before its input TanhBackward0" in bfs.message
    assert "level by level" in bfs.message
    backwards = lab.check_topological_order("order", right[::-1], loss)
    assert "that is the order backward runs in" in backwards.message


def test_exercise_1_hints_for_a_walk_without_visited_set_or_without_leaves(net):
    _, loss_fn = net
    loss = loss_fn()

    def no_visited_set(node):  # post-order, but a node reached twice goes in twice
        out = []
        for child, _ in node.next_functions:
            if child is not None:
                out += no_visited_set(child)
        return out + [node]

    twice = lab.check_topological_order("order", no_visited_set(loss.grad_fn), loss)
    assert "TanhBackward0 is in your list 2 times" in twice.message and "visited" in twice.message
    no_leaves = [n for n in depth_first(loss) if n.name() != "AccumulateGrad"]
    missing = lab.check_topological_order("order", no_leaves, loss)
    assert "4 of the 13 nodes are missing (AccumulateGrad ×4)" in missing.message
    assert "next_functions all the way down" in missing.message
    branch_lost = [n for n in depth_first(loss) if n.name() not in ("MulBackward0", "SumBackward1")]
    some = lab.check_topological_order("order", branch_lost, loss)  # only the first input of Add followed
    assert "2 of the 13 nodes are missing (MulBackward0, SumBackward1)" in some.message
    assert "follow every edge" in some.message
    tensors = lab.check_topological_order("order", [loss], loss)
    assert "your list holds tensors" in tensors.message
    strangers = lab.check_topological_order("order", depth_first(loss) + ["x"], loss)
    assert "1 of your items are not nodes of this graph" in strangers.message


def test_topological_order_on_scalars_and_bad_outputs():
    a, b = gl.Scalar(2.0, label="a"), gl.Scalar(-1.0, label="b")
    c = a * b
    out = (c + a).tanh()
    assert lab.check_topological_order("order", out.topological_order(), out).passed
    order = out.topological_order()
    assert "that is the order backward runs in" in lab.check_topological_order("order", order[::-1], out).message
    assert "a is in your list 2 times" in lab.check_topological_order("order", [a] + order, out).message
    with pytest.raises(ValueError, match="give the output of a graph"):
        lab.check_topological_order("order", [], gl.tensor([1.0]))


# --- section 3: the two arrivals at Tanh (the lab's claim) ------------------------------------------------

def test_the_stepper_sends_tanh_two_contributions_that_sum_to_what_it_receives(net):
    model, loss_fn = net
    with lab.record() as rec:
        loss_fn()
    stepper = lab.BackpropStepper(rec)
    (tanh,) = stepper.find("Tanh")
    stepper.run_to(tanh)
    titles = [step["title"].split(": ")[1] for step in stepper.steps]
    assert titles == ["Mean", "Pow", "Sub", "Add", "Mul", "Sum", "Linear", "out.bias", "out.weight", "Tanh"]
    arrivals = [(row["contribution"], row["of"], row["grad"]["values"]) for step in stepper.steps
                for row in step["sent"] if row["to"] == tanh]
    assert [(c, o) for c, o, _ in arrivals] == [(1, 2), (2, 2)]
    received = stepper.steps[-1]["grads_in"][0]["values"]
    assert all(math.isclose(a + b, r, rel_tol=1e-6, abs_tol=1e-7)
               for a, b, r in zip(arrivals[0][2], arrivals[1][2], received))
    stepper.close()


# --- exercise 2: .grad after another backward, without zero_grad -----------------------------------------

def test_exercise_2_prediction(net):
    model, loss_fn = net
    loss_fn().backward()
    once = model.out.bias.grad.clone()
    (3 * loss_fn()).backward()
    truth = model.out.bias.grad
    mistakes = {  # as the lab writes them
        "that is the gradient of 3·L alone: .grad is added into, never overwritten": 3 * once,
        "what is left from before is there, but the new backward is of 3 times the loss": 2 * once,
        "that is what one backward left: the new call adds its gradient to it": once,
    }
    assert lab.check_prediction("predicted", once + 3 * once, truth, mistakes).passed
    assert lab.check_prediction("predicted", ..., truth, mistakes).status == "not done"
    overwritten = lab.check_prediction("predicted", 3 * once, truth, mistakes)
    assert not overwritten and "never overwritten" in overwritten.message
    same_loss = lab.check_prediction("predicted", 2 * once, truth, mistakes)
    assert "3 times the loss" in same_loss.message
    assert "adds its gradient" in lab.check_prediction("predicted", once, truth, mistakes).message
    other = lab.check_prediction("predicted", 5 * once, truth, mistakes)  # no known mistake: check's own words
    assert not other and "predicted" in repr(other)
    shape = lab.check_prediction("predicted", gl.zeros(2), truth, mistakes)
    assert not shape and "shape" in shape.message


# --- section 6: a second backward through a freed graph ---------------------------------------------------

def test_a_second_backward_says_what_happened_and_what_to_do(net):
    model, loss_fn = net
    loss = loss_fn()
    loss.backward()
    with pytest.raises(RuntimeError) as error:
        loss.backward()
    message = str(error.value)
    assert "backward through the graph a second time" in message
    assert "freed" in message and "retain_graph=True" in message
    model.zero_grad()
    loss = loss_fn()
    loss.backward(retain_graph=True)
    first = model.hidden.weight.grad.clone()
    loss.backward()
    assert (model.hidden.weight.grad.numpy() == 2 * first.numpy()).all()


# --- exercise 3: dual numbers ------------------------------------------------------------------------------

def lift(number, cls):
    return number if isinstance(number, cls) else cls(float(number), 0.0)


def make_dual(mul, tanh):
    """A Dual class as the lab gives it, with the learner's __mul__ and tanh."""

    class Dual:
        def __init__(self, value, tangent=0.0):
            self.value, self.tangent = value, tangent

        def __add__(self, other):
            other = lift(other, Dual)
            return Dual(self.value + other.value, self.tangent + other.tangent)

        __radd__ = __add__

        def __mul__(self, other):
            return mul(self, lift(other, Dual))

        __rmul__ = __mul__

        def tanh(self):
            return tanh(self)

    return Dual


RIGHT_MUL = lambda a, b: type(a)(a.value * b.value, a.tangent * b.value + a.value * b.tangent)  # noqa: E731
RIGHT_TANH = lambda a: type(a)(math.tanh(a.value), (1 - math.tanh(a.value) ** 2) * a.tangent)  # noqa: E731


def test_exercise_3_dual_numbers_right_and_unsolved():
    Dual = make_dual(RIGHT_MUL, RIGHT_TANH)
    assert lab.check_dual("Dual", Dual).passed
    assert lab.check_dual("Dual", make_dual(lambda a, b: None, lambda a: None)).status == "not done"
    assert lab.check_dual("Dual", make_dual(RIGHT_MUL, lambda a: None)).status == "not done"
    # and the right Dual's forward-mode column agrees with the engine's jvp on the lab's f
    W = [[0.3, -1.2, 0.5], [1.1, 0.4, -0.7]]
    xs = [0.2, -0.5, 1.3]
    ys = [(sum((w * x for w, x in zip(row, [Dual(a, 1.0 if j == 0 else 0.0) for j, a in enumerate(xs)])),
               Dual(0.0)).tanh() * Dual(xs[0], 1.0)) for row in W]
    Wt = gl.tensor(W, dtype=gl.float64)
    _, jv = gl.autograd.functional.jvp(lambda x: (Wt @ x).tanh() * x[0], gl.tensor(xs, dtype=gl.float64),
                                       gl.tensor([1.0, 0.0, 0.0], dtype=gl.float64))
    assert lab.check("J v", [y.tangent for y in ys], jv).passed


def test_exercise_3_wrong_product_rules_and_tanh_slopes():
    tangents_multiplied = make_dual(lambda a, b: type(a)(a.value * b.value, a.tangent * b.tangent), RIGHT_TANH)
    verdict = lab.check_dual("Dual", tangents_multiplied)
    assert not verdict and "__mul__" in verdict.message and "multiplied the two tangents" in verdict.message
    one_term = make_dual(lambda a, b: type(a)(a.value * b.value, a.tangent * b.value), RIGHT_TANH)
    assert "Only one of the two terms" in lab.check_dual("Dual", one_term).message
    no_chain = make_dual(RIGHT_MUL, lambda a: type(a)(math.tanh(a.value), 1 - math.tanh(a.value) ** 2))
    verdict = lab.check_dual("Dual", no_chain)
    assert "tanh" in verdict.message and "chain rule" in verdict.message and "tangent" in verdict.message
    wrong_slope = make_dual(RIGHT_MUL, lambda a: type(a)(math.tanh(a.value), (1 - math.tanh(a.value)) * a.tangent))
    assert "the slope of tanh at the value is not" in lab.check_dual("Dual", wrong_slope).message
    wrong_value = make_dual(lambda a, b: type(a)(a.value + b.value, a.tangent * b.value + a.value * b.tangent),
                            RIGHT_TANH)
    assert "the value part" in lab.check_dual("Dual", wrong_value).message
    floats = make_dual(lambda a, b: a.value * b.value, RIGHT_TANH)
    assert "should give a Dual, got a float" in lab.check_dual("Dual", floats).message
    raises = make_dual(lambda a, b: a.nope, RIGHT_TANH)
    assert "raised AttributeError" in lab.check_dual("Dual", raises).message
    assert "give the class itself" in lab.check_dual("Dual", tangents_multiplied(1.0, 0.0)).message
    with pytest.raises(ValueError, match="no probes for"):
        lab.check_dual("Dual", tangents_multiplied, operations=("sin",))


# --- exercise 4: the mode with fewer passes ---------------------------------------------------------------

RIGHT_MODES = {(784, 10): "reverse", (1, 1000): "forward", (3, 50): "forward", (10**6, 1): "reverse"}


def test_exercise_4_cheaper_mode():
    assert lab.check_cheaper_mode("cheaper", RIGHT_MODES).passed
    assert lab.check_cheaper_mode("cheaper", {**RIGHT_MODES, (3, 50): "jvp", (784, 10): "VJP"}).passed
    assert lab.check_cheaper_mode("cheaper", {**RIGHT_MODES, (3, 50): ...}).status == "not done"
    swapped = {shape: {"forward": "reverse", "reverse": "forward"}[mode] for shape, mode in RIGHT_MODES.items()}
    verdict = lab.check_cheaper_mode("cheaper", swapped)
    assert not verdict and "every answer is swapped" in verdict.message
    always_reverse = {shape: "reverse" for shape in RIGHT_MODES}  # "backward is always cheaper"
    verdict = lab.check_cheaper_mode("cheaper", always_reverse)
    assert "2 of 4 wrong (R^1 → R^1000, R^3 → R^50)" in verdict.message and "columns" in verdict.message
    assert "answer 'forward' or 'reverse'" in lab.check_cheaper_mode("cheaper", {(1, 5): "sideways"}).message
    with pytest.raises(ValueError, match="both modes take as many passes"):
        lab.check_cheaper_mode("cheaper", {(4, 4): "forward"})


def test_the_pass_counts_the_lab_reports():
    """forward-mode runs fn n + 1 times and reaches x n times; reverse runs it once and reaches x m times."""
    gl.manual_seed(2)
    n, m = 3, 2
    W = gl.randn(m, n, dtype=gl.float64)
    counts = {}

    def fn(x):
        counts["ran"] += 1
        x.register_hook(lambda g: counts.__setitem__("reached", counts["reached"] + 1))
        return (W @ x).tanh() * x[0]

    expected = {"forward-mode": {"ran": n + 1, "reached": n}, "reverse-mode": {"ran": 1, "reached": m}}
    for strategy in expected:
        counts.update(ran=0, reached=0)
        gl.autograd.functional.jacobian(fn, gl.randn(n, dtype=gl.float64), strategy=strategy)
        assert counts == expected[strategy], strategy

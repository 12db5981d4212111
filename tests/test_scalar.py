import itertools
import math
import sys
import warnings

import numpy as np
import pytest

import gradlab as gl
from gradlab.scalar import Scalar, ScalarFunction

H = 1e-6
TOL = 1e-5


def central_difference(f, values, i):
    """d f / d values[i] by a central finite difference, evaluated on plain Scalars."""
    def at(shift):
        shifted = list(values)
        shifted[i] += shift
        return f(*(Scalar(v) for v in shifted)).data
    return (at(H) - at(-H)) / (2 * H)


def check_gradients(f, *values):
    inputs = [Scalar(v) for v in values]
    f(*inputs).backward()
    for i, x in enumerate(inputs):
        assert x.grad == pytest.approx(central_difference(f, values, i), abs=TOL, rel=TOL)


UNARY = {
    "neg": (lambda x: -x, [-1.5, 0.3, 2.0]),
    "exp": (lambda x: x.exp(), [-1.5, 0.3, 2.0]),
    "log": (lambda x: x.log(), [0.2, 1.0, 3.5]),
    "tanh": (lambda x: x.tanh(), [-2.0, 0.1, 1.3]),
    "sigmoid": (lambda x: x.sigmoid(), [-3.0, 0.0, 2.5]),
    "relu": (lambda x: x.relu(), [-1.2, 0.7, 2.5]),
    "sin": (lambda x: x.sin(), [-2.0, 0.4, 3.0]),
    "cos": (lambda x: x.cos(), [-2.0, 0.4, 3.0]),
    "sqrt": (lambda x: x.sqrt(), [0.04, 1.0, 6.25]),
}


@pytest.mark.parametrize("name", UNARY)
def test_unary_op_matches_finite_difference(name):
    f, points = UNARY[name]
    for x in points:
        check_gradients(f, x)


BINARY = {
    "+": lambda x, y: x + y,
    "-": lambda x, y: x - y,
    "*": lambda x, y: x * y,
    "/": lambda x, y: x / y,
    "**": lambda x, y: x ** y,
}


@pytest.mark.parametrize("name", BINARY)
def test_binary_op_matches_finite_difference(name):
    for x, y in [(0.5, 1.5), (2.0, -0.7), (3.1, 2.2)]:
        check_gradients(BINARY[name], x, y)


@pytest.mark.parametrize("f", [
    lambda x: x + 2, lambda x: 2 + x, lambda x: x - 2, lambda x: 2 - x,
    lambda x: x * 2.5, lambda x: 2.5 * x, lambda x: x / 2, lambda x: 2 / x,
    lambda x: x ** 3, lambda x: x ** -1.5, lambda x: 2 ** x, lambda x: x ** 0.5,
])
def test_ops_with_a_plain_number_match_finite_difference(f):
    for x in [0.3, 1.7, 2.9]:
        check_gradients(f, x)


def test_plain_numbers_are_constants_not_graph_nodes():
    x = Scalar(3.0)
    for y in (x + 2, 2 + x, 2 - x, 2 * x, 2 / x, x ** 2, 2 ** x):
        assert y.parents == (x,)
    assert (x ** 2).op == "**"


def test_integer_power_of_negative_base():
    check_gradients(lambda x: x ** 3, -1.5)
    x = Scalar(-2.0)
    (x ** 2).backward()
    assert x.grad == -4.0


def test_attributes_of_leaves_and_results():
    x, y = Scalar(2, label="x"), Scalar(-1.0)
    z = x * y
    assert isinstance(x.data, float) and x.data == 2.0
    assert (x.grad, x.grad_fn, x.op, x.parents, x.label) == (0.0, None, "", (), "x")
    assert z.op == "*" and z.parents == (x, y) and z.grad_fn is not None
    assert (-x).op == "neg" and (x - y).op == "-" and x.tanh().op == "tanh"


def test_repr():
    x = Scalar(1.0)
    y = x.tanh()
    y.grad = 0.42
    assert repr(y) == "Scalar(data=0.7616, grad=0.4200)"
    assert repr(Scalar(1.0, label="b")) == "Scalar(data=1.0000, grad=0.0000, label='b')"


def neuron():
    """The neuron from micrograd's walkthrough: o = tanh(x1*w1 + x2*w2 + b)."""
    x1, x2 = Scalar(2.0, "x1"), Scalar(0.0, "x2")
    w1, w2 = Scalar(-3.0, "w1"), Scalar(1.0, "w2")
    b = Scalar(6.8813735870195432, "b")
    o = (x1 * w1 + x2 * w2 + b).tanh()
    return o, (x1, x2, w1, w2, b)


def test_neuron_against_hand_derived_gradients():
    o, (x1, x2, w1, w2, b) = neuron()
    o.backward()
    # n = x1*w1 + x2*w2 + b = 0.8814, o = tanh(n) = 1/sqrt(2), do/dn = 1 - o**2 = 0.5
    assert o.data == pytest.approx(1 / math.sqrt(2))
    dn = 1 - o.data ** 2
    assert dn == pytest.approx(0.5)
    assert x1.grad == pytest.approx(w1.data * dn)  # -1.5
    assert w1.grad == pytest.approx(x1.data * dn)  # 1.0
    assert x2.grad == pytest.approx(w2.data * dn)  # 0.5
    assert w2.grad == pytest.approx(x2.data * dn)  # 0.0
    assert b.grad == pytest.approx(dn)
    assert o.grad == 1.0


def test_neuron_against_torch():
    torch = pytest.importorskip("torch")
    o, inputs = neuron()
    o.backward()
    t = [torch.tensor(x.data, dtype=torch.float64, requires_grad=True) for x in inputs]
    x1, x2, w1, w2, b = t
    to = torch.tanh(x1 * w1 + x2 * w2 + b)
    to.backward()
    assert o.data == pytest.approx(to.item(), abs=1e-12)
    for ours, theirs in zip(inputs, t):
        assert ours.grad == pytest.approx(theirs.grad.item(), abs=1e-12)


def test_value_used_twice_accumulates():
    x = Scalar(3.0)
    (x * x).backward()
    assert x.grad == 6.0
    x = Scalar(3.0)
    (x + x).backward()
    assert x.grad == 2.0
    x = Scalar(3.0)
    a = x * 2.0
    (a * x + a).backward()  # d/dx (2x**2 + 2x) = 4x + 2
    assert x.grad == pytest.approx(14.0)


def test_backward_twice_accumulates_and_zero_grad_resets():
    o, inputs = neuron()
    o.backward()
    first = [x.grad for x in o.topological_order()]
    o.backward()
    assert [x.grad for x in o.topological_order()] == [2 * g for g in first]
    o.zero_grad()
    assert all(x.grad == 0.0 for x in o.topological_order())
    o.backward()
    assert [x.grad for x in o.topological_order()] == first


def test_topological_order_puts_inputs_first():
    o, inputs = neuron()
    order = o.topological_order()
    assert order[-1] is o
    assert len(order) == len(set(map(id, order))) == 10  # 5 leaves, 2 *, 2 +, tanh
    position = {id(n): i for i, n in enumerate(order)}
    for node in order:
        assert all(position[id(p)] < position[id(node)] for p in node.parents)
    assert set(map(id, inputs)) <= set(position)


def test_backward_steps_visit_each_node_once_consumers_first():
    x, y = Scalar(0.5, "x"), Scalar(-1.2, "y")
    a = x * y
    out = (a + x).tanh() * a + y.exp()
    steps = list(out.backward_steps())
    nodes = [s.node for s in steps]
    assert len(nodes) == len(set(map(id, nodes))) == len(out.topological_order())
    assert nodes[0] is out and steps[0].grads_in == (1.0,)
    assert [s.index for s in steps] == list(range(len(steps)))
    position = {id(n): i for i, n in enumerate(nodes)}
    for step in steps:
        assert all(position[id(p)] > position[id(step.node)] for p in step.node.parents)
        assert len(step.grads_out) == len(step.node.parents)
        assert step.grads_in == (step.node.grad,)  # fresh graph: each node is visited once
        assert step.leaf is (step.node if not step.node.parents else None)
    # what flows into a node is the sum of what its consumers sent it
    sent = {}
    for step in steps:
        for parent, g in zip(step.node.parents, step.grads_out):
            sent[id(parent)] = sent.get(id(parent), 0.0) + g
    for step in steps[1:]:
        assert step.grads_in[0] == pytest.approx(sent[id(step.node)])


def test_exhausting_backward_steps_equals_backward():
    def build():
        x, y = Scalar(0.5), Scalar(-1.2)
        a = x * y
        return (a + x).tanh() * a + y.exp() / x
    stepped, plain = build(), build()
    for _ in stepped.backward_steps():
        pass
    plain.backward()
    assert ([n.grad for n in stepped.topological_order()]
            == [n.grad for n in plain.topological_order()])


def test_long_chain_needs_no_recursion():
    x = Scalar(0.5)
    y = x
    for _ in range(10_000):
        y = y + 1.0
    limit = sys.getrecursionlimit()
    assert len(y.topological_order()) == 10_001
    y.backward()
    assert y.data == 10_000.5
    assert x.grad == 1.0
    y.zero_grad()
    assert x.grad == 0.0
    assert sys.getrecursionlimit() == limit


def test_custom_function_follows_the_same_protocol():
    class Cube(ScalarFunction):
        op = "cube"

        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_values
            return grad * 3 * x * x

    x = Scalar(2.0)
    y = Cube.apply(x)
    y.backward()
    assert (y.data, y.op, y.parents, x.grad) == (8.0, "cube", (x,), 12.0)


@pytest.mark.parametrize("bad", ["1.0", [1.0], None, 1j])
def test_scalar_rejects_non_numbers(bad):
    with pytest.raises(TypeError, match=f"Scalar: cannot make a Scalar from {type(bad).__name__}"):
        Scalar(bad)


@pytest.mark.parametrize("op, method", [
    (lambda x: x + "a", "__add__"),
    (lambda x: x - [1], "__sub__"),
    (lambda x: [1] - x, "__rsub__"),
    (lambda x: x * None, "__mul__"),
    (lambda x: x / "2", "__truediv__"),
    (lambda x: x ** "2", "__pow__"),
    (lambda x: {} ** x, "__rpow__"),
])
def test_operators_reject_non_numbers(op, method):
    with pytest.raises(TypeError, match=rf"Scalar\.{method}: cannot combine Scalar with \w+; "
                                        "use a float, an int or a Scalar"):
        op(Scalar(1.0))


def test_add_error_message_is_exact():
    with pytest.raises(TypeError) as info:
        Scalar(1.0) + "a"
    assert str(info.value) == ("Scalar.__add__: cannot combine Scalar with str; "
                               "use a float, an int or a Scalar")


def test_edges_give_what_a_float64_tensor_gives_instead_of_python_errors():
    """Where plain Python raises (1 / 0, math.log(0), math.exp(1000), math.sin(inf)), a Scalar is IEEE 754."""
    assert (Scalar(1.0) / 0).data == math.inf and (Scalar(-1.0) / Scalar(0.0)).data == -math.inf
    assert math.isnan((Scalar(0.0) / 0).data) and (2 / Scalar(-0.0)).data == -math.inf
    assert Scalar(0.0).log().data == -math.inf and math.isnan(Scalar(-1.0).log().data)
    assert math.isnan(Scalar(-4.0).sqrt().data) and math.isnan((Scalar(-8.0) ** 0.5).data)
    assert (Scalar(0.0) ** -1).data == math.inf and (Scalar(-0.0) ** -1).data == -math.inf
    assert Scalar(1e300).exp().data == math.inf and (Scalar(1e300) ** 2).data == math.inf
    assert math.isnan(Scalar(math.inf).sin().data) and math.isnan(Scalar(math.nan).relu().data)
    x = Scalar(0.0)
    (x ** 0).backward()
    assert x.grad == 0.0  # d/dx x^0 is 0 everywhere, 0 at 0 too (not 0 · inf)
    assert Scalar(709.79).exp().data == math.inf  # just past the largest float


def test_an_int_too_big_for_a_float_is_refused_by_name():
    with pytest.raises(OverflowError, match=r"^Scalar: an int of 401 digits is too large for a float"):
        Scalar(10 ** 400)
    with pytest.raises(OverflowError, match=r"^Scalar\.__rpow__: an int of 401 digits"):
        (10 ** 400) ** Scalar(2.0)


def test_vertical_slopes_at_zero_are_infinite_as_in_pytorch():
    x = Scalar(0.0)
    x.sqrt().backward()
    assert x.grad == math.inf
    y = Scalar(0.0)
    (y ** 0.5).backward()
    assert y.grad == math.inf


# --- the Scalar twin agrees with the float64 tensor ops at every edge -----------------------------

EDGES = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 30.0, 800.0, -800.0, 5e-324, 1e-300, 1e300, -1e300,
         math.inf, -math.inf, math.nan]
TWINS = {  # each works on a Scalar and on a Tensor alike
    "neg": lambda x: -x, "exp": lambda x: x.exp(), "log": lambda x: x.log(), "tanh": lambda x: x.tanh(),
    "sigmoid": lambda x: x.sigmoid(), "relu": lambda x: x.relu(), "sin": lambda x: x.sin(),
    "cos": lambda x: x.cos(), "sqrt": lambda x: x.sqrt(),
    "+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y, "/": lambda x, y: x / y,
    "**": lambda x, y: x ** y,
}


def _same(a, b, signed_zero=True):
    """Bit for bit, except that every nan is the same nan (and, for gradients, 0 is -0), and one unit in
    the last place: numpy's SIMD loops on some CPUs (AVX-512's pow) are not correctly rounded, Python's are."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a != b and math.isfinite(a) and math.isfinite(b) and a != 0 and b != 0:
        return abs(a - b) <= math.ulp(max(abs(a), abs(b)))
    return a == b and (not signed_zero or a != 0 or math.copysign(1, a) == math.copysign(1, b))


def _one_element_tensor(value):
    return gl.tensor([value], dtype=gl.float64, requires_grad=True)


def _run(make, f, values, constant, gradient):
    """f on the values (a plain number where ``constant`` says so) and the gradients of the others."""
    inputs = [v if c else make(v) for v, c in zip(values, constant)]
    out = f(*inputs)
    if isinstance(out, Scalar):
        out.backward(gradient)
        return out.data, [x.grad for x in inputs if isinstance(x, Scalar)]
    out.backward(gl.tensor([gradient], dtype=gl.float64))
    return out.detach().numpy()[0].item(), [x.grad.numpy()[0].item() for x in inputs if isinstance(x, gl.Tensor)]


@pytest.mark.parametrize("op", TWINS)
def test_scalar_agrees_with_the_float64_tensor_op_at_every_edge(op):
    """Every Scalar op against its float64 tensor twin (one-element tensors: numpy's array arithmetic)
    over 0, -0, ±1, tiny, huge, ±inf, nan and negative bases, with incoming gradients 1 and 0."""
    f = TWINS[op]
    arity = f.__code__.co_argcount
    layouts = [(False,)] if arity == 1 else [(False, False), (False, True), (True, False)]
    wrong = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # numpy's overflow and invalid-value warnings
        for constant in layouts:
            for values in itertools.product(EDGES, repeat=arity):
                for gradient in (1.0, 0.0):
                    expected = _run(_one_element_tensor, f, values, constant, gradient)
                    got = _run(Scalar, f, values, constant, gradient)
                    if not _same(got[0], expected[0]) or not all(
                            _same(g, e, signed_zero=False) for g, e in zip(got[1], expected[1])):
                        wrong.append(f"{op} {values} constant={constant} gradient={gradient}: Scalar gives {got}, "
                                     f"the tensor op {expected}")
    assert not wrong, f"{len(wrong)} edges differ, e.g.\n" + "\n".join(wrong[:10])

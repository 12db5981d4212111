"""Arithmetic: + - * / ** // %, unary -, comparisons and logical operators.

Values vs numpy and PyTorch, result dtypes by PyTorch's promotion rule, float64 gradchecks (first and
second order) with broadcasting and non-contiguous inputs, gradients vs PyTorch, hypothesis properties
on random broadcastable shapes, and the error messages.
"""

import math
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck
from helpers import assert_close, leaf, noncontiguous_leaf, randn, requires_torch, to_torch, torch

OPS = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow,
    "//": operator.floordiv, "%": operator.mod,
    "==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    "&": operator.and_, "|": operator.or_, "^": operator.xor,
}
NP_OPS = {
    "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "**": np.power,
    "//": np.floor_divide, "%": np.remainder,
    "==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
    "&": np.logical_and, "|": np.logical_or, "^": np.logical_xor,
}
DIFF_OPS = ["+", "-", "*", "/", "**", "%"]
HIGHER_ORDER_OPS = ["+", "-", "*", "/", "**"]

# (shape of a, shape of b): broadcasting both ways, a 0-d tensor on either side, and equal shapes
TENSOR_CASES = [((3, 1), (1, 4)), ((2, 3), (3,)), ((3,), (2, 3)), ((), (2, 3)), ((2, 3), ()), ((2, 3), (2, 3))]
CASE_IDS = ["3x1+1x4", "2x3+3", "3+2x3", "0d+2x3", "2x3+0d", "2x3+2x3"]


def operands(op, shape_a, shape_b, seed=0):
    """float64 inputs where ``op`` is smooth: divisors away from 0, positive bases under a tensor
    exponent, and a / b away from integers for % (where the remainder jumps)."""
    for attempt in range(1000):
        rng = np.random.default_rng([seed, attempt])
        a, b = np.asarray(rng.standard_normal(shape_a)), np.asarray(rng.standard_normal(shape_b))
        if op in ("/", "%", "//"):
            b = np.sign(b) * rng.uniform(0.5, 1.5, shape_b)
        if op == "**":
            a, b = rng.uniform(0.5, 2.0, shape_a), rng.uniform(-1.5, 2.5, shape_b)
        if op != "%":
            return a, b
        a = 3 * a
        frac = np.mod(a / b, 1.0)
        if np.all((frac > 0.1) & (frac < 0.9)):
            return a, b
    raise AssertionError(f"no smooth inputs for {op} with shapes {shape_a} and {shape_b}")


# a Python number on one side: (id, function usable on gradlab, torch and numpy alike, input domain)
NUMBER_CASES = [
    ("x+2.5", lambda x: x + 2.5, "normal"),
    ("2.5+x", lambda x: 2.5 + x, "normal"),
    ("x-2.5", lambda x: x - 2.5, "normal"),
    ("2.5-x", lambda x: 2.5 - x, "normal"),
    ("x*-1.5", lambda x: x * -1.5, "normal"),
    ("3*x", lambda x: 3 * x, "normal"),
    ("x/2.5", lambda x: x / 2.5, "normal"),
    ("2.5/x", lambda x: 2.5 / x, "away"),
    ("x**3", lambda x: x ** 3, "normal"),
    ("x**2.5", lambda x: x ** 2.5, "positive"),
    ("x**-1.5", lambda x: x ** -1.5, "positive"),
    ("x**0", lambda x: x ** 0, "normal"),
    ("2.5**x", lambda x: 2.5 ** x, "normal"),
    ("0.5**x", lambda x: 0.5 ** x, "normal"),
    ("x%1.3", lambda x: x % 1.3, "mod"),
    ("7.5%x", lambda x: 7.5 % x, "rmod"),
    ("-x", lambda x: -x, "normal"),
]


def number_case_input(domain, seed=0):
    rng = np.random.default_rng(seed)
    if domain == "away":
        return np.sign(rng.standard_normal((2, 3))) * rng.uniform(0.5, 2.0, (2, 3))
    if domain == "positive":
        return rng.uniform(0.5, 2.0, (2, 3))
    if domain == "mod":  # x / 1.3 = integer + a fraction in [0.1, 0.9]
        return 1.3 * (rng.integers(-2, 3, (2, 3)) + rng.uniform(0.1, 0.9, (2, 3)))
    if domain == "rmod":  # 7.5 / x away from integers
        return np.array([[1.7, 2.2, -1.6], [3.1, -2.9, 4.4]])
    return rng.standard_normal((2, 3))


def np_unbroadcast(g, shape):
    """Sum a gradient of the broadcast shape back to an input's shape (numpy, independent of gradlab)."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and g.shape[i] != 1)
    return g.sum(axis=axes, keepdims=True).reshape(shape)


def np_partials(op, a, b):
    """d(a op b)/da and d(a op b)/db, elementwise in numpy."""
    one = np.ones(np.broadcast_shapes(a.shape, b.shape))
    if op == "+":
        return one, one
    if op == "-":
        return one, -one
    if op == "*":
        return b * one, a * one
    if op == "/":
        return one / b, -a / b ** 2
    if op == "**":
        return b * a ** (b - 1), a ** b * np.log(a)
    raise ValueError(op)


# --- forward values vs numpy ----------------------------------------------------------------------


@pytest.mark.parametrize("shapes", TENSOR_CASES, ids=CASE_IDS)
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", "//", "%"])
def test_forward_matches_numpy(op, shapes):
    a, b = operands(op, *shapes)
    out = OPS[op](leaf(a, requires_grad=False), leaf(b, requires_grad=False))
    assert out.dtype == gl.float64
    assert_close(out, NP_OPS[op](a, b), rtol=1e-12)


@pytest.mark.parametrize("name, fn, domain", NUMBER_CASES, ids=[c[0] for c in NUMBER_CASES])
def test_forward_with_a_python_number_matches_numpy(name, fn, domain):
    x = number_case_input(domain)
    out = fn(leaf(x, requires_grad=False))
    assert out.dtype == gl.float64 and out.shape == (2, 3)
    assert_close(out, fn(x), rtol=1e-12)


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_comparisons_give_bool_without_grad(op):
    a = leaf([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]])
    b = leaf([2.0, 2.0, 2.0])
    for other, np_other in ((b, np.array([2.0, 2.0, 2.0])), (2.0, 2.0), (2, 2)):
        out = OPS[op](a, other)
        assert out.dtype == gl.bool and out.shape == (2, 3)
        assert not out.requires_grad and out.grad_fn is None
        np.testing.assert_array_equal(out.numpy(), NP_OPS[op](a.detach().numpy(), np_other))


def test_comparison_methods_and_aliases():
    a, b = gl.tensor([1, 2, 3]), gl.tensor([2, 2, 2])
    for method, np_fn in [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                          ("gt", np.greater), ("ge", np.greater_equal), ("greater", np.greater),
                          ("greater_equal", np.greater_equal), ("less", np.less), ("less_equal", np.less_equal),
                          ("not_equal", np.not_equal)]:
        np.testing.assert_array_equal(getattr(a, method)(b).numpy(), np_fn([1, 2, 3], [2, 2, 2]))


@pytest.mark.parametrize("op", ["&", "|", "^"])
def test_logical_operators_on_bool_tensors(op):
    a_np = np.array([[True, False, True, False]])
    b_np = np.array([[True], [False]])
    a, b = gl.tensor(a_np), gl.tensor(b_np)
    out = OPS[op](a, b)
    assert out.dtype == gl.bool and out.shape == (2, 4)
    np.testing.assert_array_equal(out.numpy(), NP_OPS[op](a_np, b_np))
    for flag in (True, False):  # a Python bool on either side
        np.testing.assert_array_equal(OPS[op](a, flag).numpy(), NP_OPS[op](a_np, flag))
        np.testing.assert_array_equal(OPS[op](flag, a).numpy(), NP_OPS[op](flag, a_np))
    np.testing.assert_array_equal((~a).numpy(), ~a_np)
    method = {"&": "logical_and", "|": "logical_or", "^": "logical_xor"}[op]
    np.testing.assert_array_equal(getattr(a, method)(b).numpy(), NP_OPS[op](a_np, b_np))


def test_unary_minus():
    x = np.array([1.5, -2.0, 0.0])
    assert_close(-leaf(x, requires_grad=False), -x)
    out = -gl.tensor([1, -2, 3])
    assert out.dtype == gl.int64 and out.tolist() == [-1, 2, -3]
    assert (+gl.tensor([1.0])).tolist() == [1.0]
    assert gl.neg(gl.tensor([2.0])).tolist() == [-2.0]


# --- result dtypes: PyTorch's promotion rule ---------------------------------------------------------

LEFT = {"b": [True, False, True], "i32": [3, 2, 5], "i64": [3, 2, 5],
        "f16": [1.5, 0.5, 3.0], "f32": [1.5, 0.5, 3.0], "f64": [1.5, 0.5, 3.0]}
RIGHT = {"b": [True, True, True], "i32": [2, 1, 3], "i64": [2, 1, 3],
         "f16": [0.5, 2.0, 1.5], "f32": [0.5, 2.0, 1.5], "f64": [0.5, 2.0, 1.5]}
ZERO_D = {"b": True, "i32": 2, "i64": 2, "f16": 1.5, "f32": 1.5, "f64": 1.5}
DTYPE_NAMES = {"b": "bool", "i32": "int32", "i64": "int64", "f16": "float16", "f32": "float32", "f64": "float64"}

# (op, left, right, result dtype): tensors of shape (3,) by code, "0d:..." 0-d tensors, Python numbers as they are
DTYPE_TABLE = [
    ("+", "i32", "i64", "int64"),
    ("+", "b", "i32", "int32"),
    ("+", "b", "i64", "int64"),
    ("+", "b", 1, "int64"),  # bool + int
    ("+", 1, "b", "int64"),
    ("+", "b", True, "bool"),
    ("+", "b", "b", "bool"),
    ("+", "b", 1.5, "float32"),
    ("+", "i32", 2, "int32"),  # a Python int never widens an int tensor
    ("+", 2, "i32", "int32"),
    ("+", "i64", 2.5, "float32"),  # ...a Python float lifts it to the default float dtype
    ("+", 2.5, "i64", "float32"),
    ("+", "f64", 2.5, "float64"),
    ("+", "f16", 2.5, "float16"),
    ("+", "f32", "f64", "float64"),
    ("+", "f16", "f32", "float32"),
    ("-", "i32", "f16", "float16"),
    ("+", "i32", "0d:i64", "int32"),  # a 0-d tensor only decides when of a higher category
    ("+", "i32", "0d:f64", "float64"),
    ("+", "f32", "0d:f64", "float32"),
    ("+", "0d:f64", "f32", "float32"),
    ("+", "b", "0d:i64", "int64"),
    ("+", "b", "0d:f64", "float64"),
    ("+", "0d:i64", "0d:f32", "float32"),  # two 0-d tensors promote as usual
    ("+", "0d:i32", "0d:i64", "int64"),
    ("*", "b", "b", "bool"),
    ("*", "i64", 2.5, "float32"),
    ("/", "i64", "i64", "float32"),  # int / int is true division into the default float dtype
    ("/", "i32", "i32", "float32"),
    ("/", "i32", 2, "float32"),
    ("/", 2, "i32", "float32"),
    ("/", "b", "b", "float32"),
    ("/", "i64", "0d:f64", "float64"),
    ("/", "f64", 2, "float64"),
    ("/", 2, "f64", "float64"),
    ("**", "i64", 2, "int64"),
    ("**", "i64", 2.5, "float32"),
    ("**", "f32", "i64", "float32"),
    ("**", "i64", "i32", "int64"),
    ("**", 2, "i64", "int64"),  # number ** int tensor keeps the integers
    ("**", 2, "i32", "int32"),
    ("**", 2.5, "i32", "float32"),
    ("**", 2, "f64", "float64"),
    ("**", 2, "b", "int64"),
    ("//", "i64", "i32", "int64"),
    ("//", "i32", 2.5, "float32"),
    ("//", 7, "i32", "int32"),
    ("//", 7.5, "i64", "float32"),
    ("%", "i64", 2, "int64"),
    ("%", 7.5, "i32", "float32"),
    ("%", "f32", "0d:f64", "float32"),
    ("<", "i64", 2.5, "bool"),
    ("==", "f32", "i64", "bool"),
    (">=", "0d:f64", "i32", "bool"),
    ("&", "b", True, "bool"),
]


def make_operand(spec, side, lib):
    """A tensor (gradlab or torch) from a DTYPE_TABLE spec; Python numbers pass through."""
    if not isinstance(spec, str):
        return spec
    code = spec[3:] if spec.startswith("0d:") else spec
    values = ZERO_D[code] if spec.startswith("0d:") else (LEFT if side == 0 else RIGHT)[code]
    module = gl if lib == "gl" else torch
    return module.tensor(values, dtype=getattr(module, DTYPE_NAMES[code]))


def np_values(spec, side):
    if not isinstance(spec, str):
        return np.float64(spec)
    code = spec[3:] if spec.startswith("0d:") else spec
    return np.asarray(ZERO_D[code] if spec.startswith("0d:") else (LEFT if side == 0 else RIGHT)[code], np.float64)


@pytest.mark.parametrize("op, left, right, expected", DTYPE_TABLE)
def test_result_dtype(op, left, right, expected):
    out = OPS[op](make_operand(left, 0, "gl"), make_operand(right, 1, "gl"))
    assert out.dtype.name == expected
    expected_values = NP_OPS[op](np_values(left, 0), np_values(right, 1))
    if expected == "bool" and op in ("+", "*"):  # bool + bool is logical or, bool * bool logical and
        expected_values = NP_OPS[op](np_values(left, 0).astype(bool), np_values(right, 1).astype(bool))
    assert out.shape == np.shape(expected_values)
    assert_close(np.asarray(out.numpy(), np.float64), np.asarray(expected_values, np.float64), rtol=1e-3)


@requires_torch
@pytest.mark.parametrize("op, left, right, expected", DTYPE_TABLE)
def test_result_dtype_matches_torch(op, left, right, expected):
    ours = OPS[op](make_operand(left, 0, "gl"), make_operand(right, 1, "gl"))
    theirs = OPS[op](make_operand(left, 0, "torch"), make_operand(right, 1, "torch"))
    assert str(theirs.dtype) == f"torch.{expected}"
    assert ours.dtype.name == expected
    assert_close(np.asarray(ours.numpy(), np.float64), theirs.double().numpy(), rtol=1e-3)


def test_true_division_follows_the_default_dtype():
    previous = gl.get_default_dtype()
    gl.set_default_dtype(gl.float64)
    try:
        assert (gl.tensor([1, 2]) / gl.tensor([2, 4])).dtype == gl.float64
        assert (gl.tensor([1, 2]) + 2.5).dtype == gl.float64
        assert (gl.tensor([1.0, 2.0], dtype=gl.float32) + 2.5).dtype == gl.float32
    finally:
        gl.set_default_dtype(previous)


# --- add/sub alpha, div rounding modes, remainder, fmod, floor division ---------------------------------


def test_add_and_sub_with_alpha():
    a, b = randn(2, 3), randn(3, seed=1)
    assert_close(gl.add(leaf(a, False), leaf(b, False), alpha=2), a + 2 * b)
    assert_close(leaf(a, False).add(leaf(b, False), alpha=-0.5), a - 0.5 * b)
    assert_close(gl.sub(leaf(a, False), leaf(b, False), alpha=3), a - 3 * b)
    assert_close(leaf(a, False).sub(1.5, alpha=2), a - 3.0)
    assert gl.add(gl.tensor([1, 2]), gl.tensor([3, 4]), alpha=2).tolist() == [7, 10]
    x, y = leaf(a), leaf(b)
    gradcheck(lambda x, y: gl.sub(x, y, alpha=2.5), (x, y))
    gl.add(x, y, alpha=3).sum().backward()
    assert_close(x.grad, np.ones((2, 3)))
    assert_close(y.grad, np.full(3, 6.0))


def test_float_alpha_needs_a_floating_point_result():
    with pytest.raises(RuntimeError, match="add: For integral input tensors, argument alpha must not be a floating"):
        gl.add(gl.tensor([1]), gl.tensor([2]), alpha=0.5)
    with pytest.raises(RuntimeError, match="sub: For integral input tensors"):
        gl.tensor([1]).sub(2, alpha=1.5)
    assert gl.add(gl.tensor([1.0]), gl.tensor([2]), alpha=0.5).tolist() == [2.0]


@requires_torch
def test_alpha_matches_torch():
    a, b = randn(2, 3), randn(3, seed=1)
    ta, tb = to_torch(a), to_torch(b)
    assert_close(gl.add(leaf(a, False), leaf(b, False), alpha=2.5), torch.add(ta, tb, alpha=2.5))
    assert_close(gl.sub(leaf(a, False), leaf(b, False), alpha=-3), torch.sub(ta, tb, alpha=-3))
    with pytest.raises(RuntimeError, match="For integral input tensors, argument alpha must not be a floating"):
        torch.add(torch.tensor([1]), torch.tensor([2]), alpha=0.5)


SIGNED_A = np.array([-7.0, -6.5, 7.0, 6.5, -0.5, 0.5, 5.0])
SIGNED_B = np.array([2.0, -2.0, -2.0, 2.0, 3.0, -3.0, 2.5])


def test_div_rounding_modes():
    a, b = leaf(SIGNED_A, False), leaf(SIGNED_B, False)
    assert_close(gl.div(a, b), SIGNED_A / SIGNED_B)
    assert_close(a.div(b, rounding_mode="floor"), np.floor_divide(SIGNED_A, SIGNED_B))
    assert_close(a.div(b, rounding_mode="trunc"), np.trunc(SIGNED_A / SIGNED_B))
    assert_close(a.divide(b, rounding_mode="trunc"), np.trunc(SIGNED_A / SIGNED_B))
    ia, ib = gl.tensor([-7, 7, -6, 5]), gl.tensor([2, -2, 4, 5])
    floor, trunc = ia.div(ib, rounding_mode="floor"), ia.div(ib, rounding_mode="trunc")
    assert floor.dtype == gl.int64 and floor.tolist() == [-4, -4, -2, 1]
    assert trunc.dtype == gl.int64 and trunc.tolist() == [-3, -3, -1, 1]
    assert ia.true_divide(ib).dtype == gl.float32
    by_float = gl.tensor([7, -7]).div(2.5, rounding_mode="trunc")  # a float divisor: a float result
    assert by_float.dtype == gl.float32 and by_float.tolist() == [2.0, -2.0]
    with pytest.raises(RuntimeError, match="div: rounding_mode must be None, 'floor' or 'trunc', got 'round'"):
        a.div(b, rounding_mode="round")


def test_remainder_floor_divide_and_fmod():
    a, b = leaf(SIGNED_A, False), leaf(SIGNED_B, False)
    assert_close(a % b, np.remainder(SIGNED_A, SIGNED_B))  # sign of the divisor, like Python
    assert_close(a.remainder(b), np.remainder(SIGNED_A, SIGNED_B))
    assert_close(a.fmod(b), np.fmod(SIGNED_A, SIGNED_B))  # sign of the dividend, like C
    assert_close(a // b, np.floor_divide(SIGNED_A, SIGNED_B))
    assert_close(a.floor_divide(b), np.floor_divide(SIGNED_A, SIGNED_B))
    assert_close(a % 2.5, np.remainder(SIGNED_A, 2.5))
    assert_close(a.fmod(2.5), np.fmod(SIGNED_A, 2.5))
    assert_close(7.5 % b, np.remainder(7.5, SIGNED_B))
    assert_close(7.5 // b, np.floor_divide(7.5, SIGNED_B))
    ia, ib = gl.tensor([-7, 7, -6, 5]), gl.tensor([2, -2, 4, 3])
    for out, expected in [(ia % ib, np.remainder([-7, 7, -6, 5], [2, -2, 4, 3])),
                          (ia.fmod(ib), np.fmod([-7, 7, -6, 5], [2, -2, 4, 3])),
                          (ia // ib, np.floor_divide([-7, 7, -6, 5], [2, -2, 4, 3])),
                          (7 // ib, np.floor_divide(7, [2, -2, 4, 3])),
                          (7 % ib, np.remainder(7, [2, -2, 4, 3]))]:
        assert out.dtype == gl.int64 and out.tolist() == expected.tolist()
    mixed = 7.5 % gl.tensor([2, -2])  # the Python float keeps its fraction
    assert mixed.dtype == gl.float32 and mixed.tolist() == [1.5, -0.5]


@requires_torch
def test_rounding_remainder_and_fmod_match_torch():
    ta, tb = to_torch(SIGNED_A), to_torch(SIGNED_B)
    a, b = leaf(SIGNED_A, False), leaf(SIGNED_B, False)
    for mode in (None, "floor", "trunc"):
        assert_close(a.div(b, rounding_mode=mode), ta.div(tb, rounding_mode=mode))
    assert_close(a % b, ta % tb)
    assert_close(a.fmod(b), ta.fmod(tb))
    assert_close(a.fmod(2.5), ta.fmod(2.5))
    assert_close(7.5 % b, 7.5 % tb)
    ints = [-7, 7, -6, 5], [2, -2, 4, 3]
    for name in ("remainder", "fmod", "floor_divide"):
        ours = getattr(gl.tensor(ints[0]), name)(gl.tensor(ints[1]))
        theirs = getattr(torch.tensor(ints[0]), name)(torch.tensor(ints[1]))
        assert ours.tolist() == theirs.tolist() and str(theirs.dtype) == f"torch.{ours.dtype.name}"


# --- gradients: float64 gradcheck and gradgradcheck ---------------------------------------------------


@pytest.mark.parametrize("shapes", TENSOR_CASES, ids=CASE_IDS)
@pytest.mark.parametrize("op", DIFF_OPS)
def test_gradcheck(op, shapes):
    a, b = operands(op, *shapes)
    assert gradcheck(OPS[op], (leaf(a), leaf(b)))
    assert gradcheck(OPS[op], (leaf(a), leaf(b, requires_grad=False)))  # one input without grad
    assert gradcheck(OPS[op], (leaf(a, requires_grad=False), leaf(b)))


@pytest.mark.parametrize("shapes", TENSOR_CASES, ids=CASE_IDS)
@pytest.mark.parametrize("op", HIGHER_ORDER_OPS)
def test_gradgradcheck(op, shapes):
    a, b = operands(op, *shapes, seed=1)
    assert gradgradcheck(OPS[op], (leaf(a), leaf(b)))


@pytest.mark.parametrize("name, fn, domain", NUMBER_CASES, ids=[c[0] for c in NUMBER_CASES])
def test_gradcheck_with_a_python_number(name, fn, domain):
    x = leaf(number_case_input(domain))
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


@pytest.mark.parametrize("op", DIFF_OPS)
def test_gradcheck_noncontiguous(op):
    a, b = operands(op, (3, 4), (3, 4), seed=2)
    x, y = noncontiguous_leaf(a), noncontiguous_leaf(b)
    assert not x.is_contiguous() and not y.is_contiguous()
    assert_close(OPS[op](x, y), NP_OPS[op](a, b), rtol=1e-12)
    assert gradcheck(OPS[op], (x, y))
    a, b = operands(op, (3, 4), (4,), seed=3)  # non-contiguous and broadcast at once
    assert gradcheck(OPS[op], (noncontiguous_leaf(a), leaf(b)))
    if op in HIGHER_ORDER_OPS:
        assert gradgradcheck(OPS[op], (x, y))


def test_gradcheck_catches_a_wrong_formula():
    """The checks above can fail: a Function with a deliberately wrong backward does not pass."""

    class WrongMul(gl.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            return grad * b, grad * b  # the second should be grad * a

    a, b = operands("*", (2, 3), (2, 3))
    assert not gradcheck(WrongMul.apply, (leaf(a), leaf(b)), raise_exception=False)


@requires_torch
@pytest.mark.parametrize("shapes", TENSOR_CASES, ids=CASE_IDS)
@pytest.mark.parametrize("op", DIFF_OPS)
def test_forward_and_gradients_match_torch(op, shapes):
    a_np, b_np = operands(op, *shapes)
    w = randn(*np.broadcast_shapes(*shapes), seed=7)  # a non-uniform upstream gradient
    a, b = leaf(a_np), leaf(b_np)
    out = OPS[op](a, b)
    (out * leaf(w, requires_grad=False)).sum().backward()
    ta, tb = to_torch(a_np, True), to_torch(b_np, True)
    t_out = OPS[op](ta, tb)
    (t_out * to_torch(w)).sum().backward()
    assert_close(out, t_out, rtol=1e-12)
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad)


@requires_torch
@pytest.mark.parametrize("name, fn, domain", NUMBER_CASES, ids=[c[0] for c in NUMBER_CASES])
def test_python_number_cases_match_torch(name, fn, domain):
    x_np = number_case_input(domain)
    w = randn(2, 3, seed=7)
    x, tx = leaf(x_np), to_torch(x_np, True)
    out, t_out = fn(x), fn(tx)
    assert str(t_out.dtype) == "torch.float64" and out.dtype == gl.float64
    assert_close(out, t_out, rtol=1e-12)
    if name == "7.5%x":
        pytest.skip("PyTorch has no derivative of remainder(Scalar, Tensor); gradcheck covers ours")
    (out * leaf(w, requires_grad=False)).sum().backward()
    (t_out * to_torch(w)).sum().backward()
    assert_close(x.grad, tx.grad)


@requires_torch
@pytest.mark.parametrize("op", ["*", "/", "**"])  # the others have constant first derivatives
def test_second_derivatives_match_torch(op):
    a_np, b_np = operands(op, (3, 1), (1, 4), seed=4)
    a, b = leaf(a_np), leaf(b_np)
    ga, gb = gl.autograd.grad(OPS[op](a, b).sum(), (a, b), create_graph=True)
    second = gl.autograd.grad((ga * ga).sum() + (gb * gb).sum(), (a, b), allow_unused=True)
    ta, tb = to_torch(a_np, True), to_torch(b_np, True)
    tga, tgb = torch.autograd.grad(OPS[op](ta, tb).sum(), (ta, tb), create_graph=True)
    t_second = torch.autograd.grad((tga * tga).sum() + (tgb * tgb).sum(), (ta, tb), allow_unused=True)
    assert_close(ga, tga)
    assert_close(gb, tgb)
    for ours, theirs, x in zip(second, t_second, (a_np, b_np)):
        ours = np.zeros(x.shape) if ours is None else ours
        theirs = np.zeros(x.shape) if theirs is None else theirs
        assert_close(ours, theirs)


# --- hypothesis: random broadcastable shapes ---------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(shapes=hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, min_side=1, max_side=4),
       op=st.sampled_from(HIGHER_ORDER_OPS), seed=st.integers(0, 2**16))
def test_broadcasting_property(shapes, op, seed):
    shape_a, shape_b = shapes.input_shapes
    a_np, b_np = operands(op, shape_a, shape_b, seed)
    a, b = leaf(a_np), leaf(b_np)
    out = OPS[op](a, b)
    assert out.shape == shapes.result_shape
    assert_close(out, NP_OPS[op](a_np, b_np), rtol=1e-12)
    w = np.random.default_rng(seed).standard_normal(shapes.result_shape)
    (out * leaf(w, requires_grad=False)).sum().backward()
    da, db = np_partials(op, a_np, b_np)
    assert a.grad.shape == shape_a and b.grad.shape == shape_b
    assert_close(a.grad, np_unbroadcast(w * da, shape_a))
    assert_close(b.grad, np_unbroadcast(w * db, shape_b))


# --- 0 ** 0 and other edges of pow -------------------------------------------------------------------

# base, exponent, d/d base, d/d exponent, as PyTorch defines them: no gradient from 0^b where b == 0
# (to the base) or b >= 0 (to the exponent), which the formulas would turn into 0 * inf = nan
ZERO_BASE = np.array([0.0, 0.0, 0.0, 0.0, 2.0, 0.0])
EXPONENT = np.array([0.0, 1.0, -1.0, 2.0, 0.0, 0.5])
GRAD_BASE = np.array([0.0, 1.0, -np.inf, 0.0, 0.0, np.inf])
GRAD_EXPONENT = np.array([0.0, 0.0, -np.inf, 0.0, math.log(2.0), 0.0])


def test_zero_to_the_zero_gradients():
    a, b = leaf(ZERO_BASE), leaf(EXPONENT)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0 * inf along the way
        out = a ** b
        out.sum().backward()
    with np.errstate(divide="ignore"):
        assert_close(out, np.power(ZERO_BASE, EXPONENT))
    np.testing.assert_array_equal(a.grad.numpy(), GRAD_BASE)
    np.testing.assert_array_equal(b.grad.numpy(), GRAD_EXPONENT)


def test_zero_to_the_zero_with_a_0d_exponent_and_a_number_base():
    x = leaf([0.0, 1.0, 3.0])
    (x ** leaf(0.0, requires_grad=False)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 0.0, 0.0])
    y = leaf([0.0, 1.0, -1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (0.0 ** y).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 0.0, -np.inf, 0.0])
    z = leaf([0.0, 2.0])
    (z ** 0).sum().backward()
    np.testing.assert_array_equal(z.grad.numpy(), [0.0, 0.0])
    n = leaf([0.5, 1.0])
    ((-2.0) ** n).sum().backward()  # a negative base has no real logarithm
    assert np.isnan(n.grad.numpy()).all()


@requires_torch
def test_zero_to_the_zero_gradients_match_torch():
    a, b = leaf(ZERO_BASE), leaf(EXPONENT)
    (a ** b).sum().backward()
    ta, tb = to_torch(ZERO_BASE, True), to_torch(EXPONENT, True)
    (ta ** tb).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), ta.grad.numpy())
    np.testing.assert_array_equal(b.grad.numpy(), tb.grad.numpy())
    for base in (0.0, 0, 2.5, -2.0):
        y, ty = leaf(EXPONENT), to_torch(EXPONENT, True)
        (base ** y).sum().backward()
        (base ** ty).sum().backward()
        np.testing.assert_array_equal(y.grad.numpy(), ty.grad.numpy())


def test_pow_functional_forms():
    x = np.array([0.5, 1.5, 2.0])
    assert_close(gl.pow(leaf(x, False), 2), x ** 2)
    assert_close(gl.pow(leaf(x, False), leaf(x, False)), x ** x)
    assert_close(gl.pow(2.0, leaf(x, False)), 2.0 ** x)
    assert_close(leaf(x, False).pow(0.5), np.sqrt(x))
    assert gl.pow(gl.tensor([2, 3]), 2).tolist() == [4, 9]


# --- reflected operators and the functional forms ------------------------------------------------------


@pytest.mark.parametrize("number", [3, 2.5])
@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", "//", "%"])
def test_reflected_operators_match_numpy(op, number):
    x = np.array([[1.5, -2.0, 0.75], [3.0, 1.25, -0.5]])
    out = OPS[op](number, leaf(x, False))
    assert out.dtype == gl.float64
    assert_close(out, NP_OPS[op](number, x), rtol=1e-12)
    ints = np.array([1, 2, 4])
    out = OPS[op](number, gl.tensor(ints))
    expected = NP_OPS[op](np.float64(number), ints.astype(np.float64))
    float_result = isinstance(number, float) or op == "/"
    assert out.dtype == (gl.float32 if float_result else gl.int64)
    assert_close(np.asarray(out.numpy(), np.float64), expected, rtol=1e-6)


def test_functional_forms():
    a, b = randn(2, 3), randn(3, seed=1) + 3.0
    x, y = leaf(a, False), leaf(b, False)
    assert_close(gl.add(x, y), a + b)
    assert_close(gl.sub(x, y), a - b)
    assert_close(gl.mul(x, y), a * b)
    assert_close(gl.div(x, y), a / b)
    assert_close(gl.div(x, y, rounding_mode="floor"), np.floor_divide(a, b))
    assert_close(x.mul(y), a * b)
    assert_close(x.multiply(y), a * b)
    assert_close(x.subtract(y), a - b)


# --- in-place operators -------------------------------------------------------------------------------


def test_in_place_operators():
    a, b = randn(2, 3), randn(3, seed=1) + 3.0
    x = leaf(a, False)
    same, version = x, x._version_count
    x += leaf(b, False)
    x -= 1.5
    x *= leaf(b, False)
    x /= 2
    assert x is same and x._version_count == version + 4
    assert_close(x, (a + b - 1.5) * b / 2)
    x **= 2
    assert_close(x, ((a + b - 1.5) * b / 2) ** 2)
    i = gl.tensor([1, 2, 3])
    i += 2
    i *= 3
    assert i.dtype == gl.int64 and i.tolist() == [9, 12, 15]
    with pytest.raises(RuntimeError, match=r"result type float32 can't be cast to the desired output type int64"):
        i /= 2
    with pytest.raises(RuntimeError, match=r"output with shape \(3\) doesn't match the broadcast shape \(2, 3\)"):
        gl.zeros(3).add_(gl.ones(2, 3))


def test_in_place_operators_record_gradients():
    a, w = randn(2, 3), randn(2, 3, seed=1)
    x, wt = leaf(a), leaf(w)
    y = x * 1.0
    y += wt
    y *= x
    y -= 2.0
    y /= 4.0
    y.sum().backward()
    assert_close(x.grad, (2 * a + w) / 4)  # y = ((x + w) * x - 2) / 4
    assert_close(wt.grad, a / 4)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        x += 1.0


@requires_torch
def test_in_place_operators_match_torch():
    a, w = randn(2, 3), randn(3, seed=1)
    x, wt = leaf(a), leaf(w)
    tx, tw = to_torch(a, True), to_torch(w, True)
    for base, other in ((x, wt), (tx, tw)):
        y = base * 1.0
        y += other
        y *= base
        y **= 2
        y /= other
        y.sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(wt.grad, tw.grad)


# --- errors ---------------------------------------------------------------------------------------------

BROADCAST_ERRORS = [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul), ("div", operator.truediv),
                    ("pow", operator.pow), ("floor_divide", operator.floordiv), ("remainder", operator.mod),
                    ("eq", operator.eq), ("ne", operator.ne), ("lt", operator.lt), ("le", operator.le),
                    ("gt", operator.gt), ("ge", operator.ge)]


@pytest.mark.parametrize("name, fn", BROADCAST_ERRORS, ids=[n for n, _ in BROADCAST_ERRORS])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_shapes_that_do_not_broadcast(name, fn, requires_grad):
    a = gl.ones(2, 3).requires_grad_(requires_grad)
    b = gl.ones(4).requires_grad_(requires_grad)
    message = rf"{name}: shapes \(2, 3\) and \(4\) cannot be broadcast together: at dimension -1 the sizes are 3 and 4"
    with pytest.raises(RuntimeError, match=message):
        fn(a, b)


def test_logical_shapes_that_do_not_broadcast():
    a, b = gl.ones(2, 3) > 0, gl.ones(4) > 0
    with pytest.raises(RuntimeError, match=r"logical_and: shapes \(2, 3\) and \(4\) cannot be broadcast"):
        a.logical_and(b)
    with pytest.raises(RuntimeError, match=r"bitwise_xor: shapes \(2, 3\) and \(4\) cannot be broadcast"):
        a ^ b  # & | ^ are the bitwise ops, as in PyTorch (the logical ones on bools)


@requires_torch
@pytest.mark.parametrize("name, fn", BROADCAST_ERRORS, ids=[n for n, _ in BROADCAST_ERRORS])
def test_torch_also_raises_runtime_error_for_shapes(name, fn):
    with pytest.raises(RuntimeError, match="must match the size"):
        fn(torch.ones(2, 3), torch.ones(4))


def _second_device():
    for name in ("numba", "cuda", "mlx"):
        try:
            return gl.zeros(3, device=name).device
        except Exception:  # that backend is not installed here
            continue
    return None


def test_mixing_devices():
    other = _second_device()
    if other is None:
        pytest.skip("only the cpu device exists here")
    with pytest.raises(RuntimeError, match="add: expected all tensors to be on the same device"):
        gl.zeros(3) + gl.zeros(3, device=other)


BOOL_NEGATION = r"egation, the `-` operator, on a bool tensor is not supported\. If you are trying to invert a mask, " \
                r"use the `~` or `logical_not\(\)` operator instead\."
BOOL_SUBTRACTION = r"Subtraction, the `-` operator, with two bool tensors is not supported\. " \
                   r"Use the `\^` or `logical_xor\(\)` operator instead\."
NEGATIVE_POWER = r"(?i:integers) to negative integer powers are not allowed"


def test_negating_a_bool_tensor():
    with pytest.raises(RuntimeError, match="neg: n" + BOOL_NEGATION):
        -gl.tensor([True, False])
    with pytest.raises(RuntimeError, match=BOOL_NEGATION):
        gl.neg(gl.tensor(True))
    with pytest.raises(RuntimeError, match="sub: " + BOOL_SUBTRACTION):
        gl.tensor([True]) - gl.tensor([False])


def test_integer_to_a_negative_integer_power():
    with pytest.raises(RuntimeError, match=NEGATIVE_POWER + r" \(int64 tensor of shape \(2\) on cpu \*\* -1\)"):
        gl.tensor([2, 3]) ** -1
    with pytest.raises(RuntimeError, match=r"pow: .*convert the base with \.float\(\)"):
        gl.tensor([2, 3]).pow(-2)
    with pytest.raises(RuntimeError, match="pow: " + NEGATIVE_POWER):  # numpy refuses a negative tensor exponent too
        gl.tensor([2, 3]) ** gl.tensor([-1, 1])
    assert_close(gl.tensor([2.0, 4.0]) ** -1, [0.5, 0.25])  # a float base is fine
    assert (gl.tensor([2, 3]) ** 0).tolist() == [1, 1]


@pytest.mark.parametrize("op", ["**", "//", "%"])
def test_bool_operands_where_pytorch_has_no_kernel(op):
    name = {"**": "pow", "//": "floor_divide", "%": "remainder"}[op]
    with pytest.raises(NotImplementedError, match=rf"{name}: \"{name}\" not implemented for 'Bool'"):
        OPS[op](gl.tensor([True, False]), gl.tensor([True, True]))


@requires_torch
def test_bool_and_power_errors_match_torch():
    with pytest.raises(RuntimeError, match="N" + BOOL_NEGATION):
        -torch.tensor([True, False])
    with pytest.raises(RuntimeError, match=BOOL_SUBTRACTION):
        torch.tensor([True]) - torch.tensor([False])
    with pytest.raises(RuntimeError, match=NEGATIVE_POWER):
        torch.tensor([2, 3]) ** -1
    for op in ("**", "//", "%"):
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            OPS[op](torch.tensor([True, False]), torch.tensor([True, True]))


@pytest.mark.parametrize("op", ["&", "|", "^"])
def test_bitwise_operators_refuse_floats_and_combine_bools_with_integers(op):
    name = {"&": "bitwise_and", "|": "bitwise_or", "^": "bitwise_xor"}[op]
    with pytest.raises(NotImplementedError, match=rf"{name}: \"{name}\" not implemented for 'Float' \(float32 tensor"):
        OPS[op](gl.ones(3), gl.ones(3) > 0)
    out = OPS[op](gl.tensor([True, False]), gl.tensor([1, 3]))  # bool with int64 is int64, as in PyTorch
    assert out.dtype is gl.int64
    assert out.tolist() == {"&": [1, 0], "|": [1, 3], "^": [0, 3]}[op]
    with pytest.raises(TypeError, match=r"~: ~ \(operator.invert\) is only implemented on integer and Boolean-type "
                                        r"tensors, got float32 tensor"):
        ~gl.ones(3)


NON_NUMBERS = [
    ("add", lambda t: t + "a"), ("add", lambda t: [1.0] + t), ("sub", lambda t: t - None), ("sub", lambda t: "a" - t),
    ("mul", lambda t: t * [1.0]), ("mul", lambda t: [1.0] * t), ("div", lambda t: t / "a"),
    ("div", lambda t: "a" / t), ("pow", lambda t: t ** "a"), ("pow", lambda t: "a" ** t),
    ("floor_divide", lambda t: t // "a"), ("floor_divide", lambda t: "a" // t), ("remainder", lambda t: t % [1]),
    ("remainder", lambda t: None % t), ("lt", lambda t: t < "a"), ("ge", lambda t: t >= [1.0]),
    ("add", lambda t: t.add({1: 2}, alpha=1)),
]


@pytest.mark.parametrize("name, fn", NON_NUMBERS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(NON_NUMBERS)])
@pytest.mark.parametrize("dtype", [gl.float32, gl.int64], ids=["float32", "int64"])
def test_non_number_operands(name, fn, dtype):
    with pytest.raises(TypeError, match=rf"{name}: unsupported operand Python \w+ .*expected a gradlab Tensor or a "
                                        r"Python number"):
        fn(gl.ones(3, dtype=dtype))


@pytest.mark.parametrize("op", [lambda a, b: a // b, lambda a, b: a % b], ids=["floordiv", "remainder"])
@pytest.mark.parametrize("divisor", [0, "tensor"])
def test_integer_division_by_zero_raises_as_in_torch(op, divisor):
    a = gl.tensor([1, 2])
    b = gl.tensor([0, 1]) if divisor == "tensor" else divisor
    with pytest.raises(RuntimeError, match="ZeroDivisionError: integer division by zero"):
        op(a, b)


def test_float_division_by_zero_gives_inf():
    assert (gl.tensor([1.0, -2.0]) // 0).tolist() == [float("inf"), float("-inf")]

"""Elementwise maths and activations: values vs numpy and PyTorch, gradients, dtypes, errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck
from helpers import assert_close, leaf, noncontiguous_leaf, requires_torch, to_torch, torch

np_erf = np.vectorize(math.erf, otypes=[np.float64])


def np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def np_softplus(x, beta, threshold):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def domain(kind, shape=(3, 4), seed=0):
    """float64 inputs where an op is smooth: away from kinks, poles and rounding steps."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if kind == "positive":
        return rng.uniform(0.5, 3.0, shape)
    if kind == "log1p":
        return rng.uniform(-0.5, 2.0, shape)
    if kind == "tan":
        return rng.uniform(-1.2, 1.2, shape)
    if kind == "away":  # |x| >= 0.2: no kink at 0
        return x + 0.2 * np.sign(x)
    if kind == "steps":  # k/10 + 0.03: never on an integer, a .5 or a .x5 rounding boundary
        return rng.integers(-30, 30, shape) / 10 + 0.03
    if kind == "softplus":  # beta=2, threshold=3: away from the switch at x = 1.5
        return np.resize([-4.0, -1.3, -0.2, 0.4, 1.2, 1.8, 2.5, 4.0, -0.7, 0.9, 3.1, -2.2], shape)
    return 3 * x if kind == "wide" else x


# name: (gradlab function, numpy reference, torch function, input domain, differentiable)
UNARY = {
    "exp": (gl.exp, np.exp, lambda t: torch.exp(t), "normal", True),
    "log": (gl.log, np.log, lambda t: torch.log(t), "positive", True),
    "log1p": (gl.log1p, np.log1p, lambda t: torch.log1p(t), "log1p", True),
    "expm1": (gl.expm1, np.expm1, lambda t: torch.expm1(t), "normal", True),
    "sqrt": (gl.sqrt, np.sqrt, lambda t: torch.sqrt(t), "positive", True),
    "rsqrt": (gl.rsqrt, lambda x: 1 / np.sqrt(x), lambda t: torch.rsqrt(t), "positive", True),
    "reciprocal": (gl.reciprocal, lambda x: 1 / x, lambda t: torch.reciprocal(t), "away", True),
    "sin": (gl.sin, np.sin, lambda t: torch.sin(t), "wide", True),
    "cos": (gl.cos, np.cos, lambda t: torch.cos(t), "wide", True),
    "tan": (gl.tan, np.tan, lambda t: torch.tan(t), "tan", True),
    "tanh": (gl.tanh, np.tanh, lambda t: torch.tanh(t), "normal", True),
    "erf": (gl.erf, np_erf, lambda t: torch.erf(t), "normal", True),
    "abs": (gl.abs, np.abs, lambda t: torch.abs(t), "away", True),
    "square": (gl.square, np.square, lambda t: torch.square(t), "normal", True),
    "sigmoid": (gl.sigmoid, np_sigmoid, lambda t: torch.sigmoid(t), "wide", True),
    "relu": (gl.relu, lambda x: np.maximum(x, 0), lambda t: torch.relu(t), "away", True),
    "leaky_relu": (lambda t: gl.leaky_relu(t, 0.2), lambda x: np.where(x > 0, x, 0.2 * x),
                   lambda t: torch.nn.functional.leaky_relu(t, 0.2), "away", True),
    "elu": (lambda t: gl.elu(t, alpha=1.5), lambda x: np.where(x > 0, x, 1.5 * np.expm1(x)),
            lambda t: torch.nn.functional.elu(t, alpha=1.5), "away", True),
    "gelu": (gl.gelu, lambda x: 0.5 * x * (1 + np_erf(x / math.sqrt(2))),
             lambda t: torch.nn.functional.gelu(t), "wide", True),
    "gelu_tanh": (lambda t: gl.gelu(t, approximate="tanh"), np_gelu_tanh,
                  lambda t: torch.nn.functional.gelu(t, approximate="tanh"), "wide", True),
    "silu": (gl.silu, lambda x: x * np_sigmoid(x), lambda t: torch.nn.functional.silu(t), "wide", True),
    "softplus": (lambda t: gl.softplus(t, beta=2, threshold=3), lambda x: np_softplus(x, 2, 3),
                 lambda t: torch.nn.functional.softplus(t, beta=2, threshold=3), "softplus", True),
    "sign": (gl.sign, np.sign, lambda t: torch.sign(t), "steps", False),
    "floor": (gl.floor, np.floor, lambda t: torch.floor(t), "steps", False),
    "ceil": (gl.ceil, np.ceil, lambda t: torch.ceil(t), "steps", False),
    "round": (gl.round, np.round, lambda t: torch.round(t), "steps", False),
    "round_decimals": (lambda t: gl.round(t, decimals=1), lambda x: np.round(x, 1),
                       lambda t: torch.round(t, decimals=1), "steps", False),
    "trunc": (gl.trunc, np.trunc, lambda t: torch.trunc(t), "steps", False),
}
SMOOTH = [name for name, spec in UNARY.items() if spec[4]]
STEPS = [name for name, spec in UNARY.items() if not spec[4]]


@pytest.mark.parametrize("name", UNARY)
def test_unary_forward_matches_numpy(name):
    fn, reference, _, kind, _ = UNARY[name]
    x = domain(kind)
    out = fn(leaf(x, requires_grad=False))
    assert out.dtype is gl.float64
    assert_close(out, reference(x), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", UNARY)
def test_unary_gradcheck_contiguous_and_not(name):
    fn, _, _, kind, _ = UNARY[name]
    x = domain(kind, (3, 4), seed=1)
    assert gradcheck(fn, (leaf(x),))
    assert gradcheck(fn, (noncontiguous_leaf(x),))


@pytest.mark.parametrize("name", SMOOTH)
def test_unary_gradgradcheck(name):
    fn, _, _, kind, _ = UNARY[name]
    assert gradgradcheck(fn, (leaf(domain(kind, (2, 3), seed=2)),))


@pytest.mark.parametrize("name", STEPS)
def test_piecewise_constant_ops_have_zero_gradients(name):
    x = leaf(domain("steps"))
    out = UNARY[name][0](x)
    assert out.requires_grad and out.grad_fn is not None
    out.sum().backward()
    assert_close(x.grad, np.zeros(x.shape))


@requires_torch
@pytest.mark.parametrize("name", UNARY)
def test_unary_matches_torch_values_and_gradients(name):
    fn, _, torch_fn, kind, _ = UNARY[name]
    x = domain(kind, seed=3)
    weights = domain("normal", seed=4)
    ours, theirs = leaf(x), to_torch(x, requires_grad=True)
    out, expected = fn(ours), torch_fn(theirs)
    assert_close(out, expected, rtol=1e-10, atol=1e-12)
    (out * leaf(weights, requires_grad=False)).sum().backward()
    (expected * to_torch(weights)).sum().backward()
    assert_close(ours.grad, theirs.grad, rtol=1e-10, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("name", SMOOTH)
def test_unary_second_derivative_matches_torch(name):
    fn, _, torch_fn, kind, _ = UNARY[name]
    x = domain(kind, seed=5)
    ours, theirs = leaf(x), to_torch(x, requires_grad=True)
    (g,) = gl.autograd.grad(fn(ours).sum(), ours, create_graph=True)
    (expected,) = torch.autograd.grad(torch_fn(theirs).sum(), theirs, create_graph=True)
    assert_close(g, expected, rtol=1e-10, atol=1e-12)
    (gg,) = gl.autograd.grad(g.sum(), ours, allow_unused=True) if g.requires_grad else (None,)
    (expected_gg,) = torch.autograd.grad(expected.sum(), theirs, allow_unused=True)
    zeros = np.zeros(x.shape)  # relu and abs have a second derivative of zero: either side may leave it out
    assert_close(zeros if gg is None else gg, zeros if expected_gg is None else expected_gg.numpy(force=True),
                 rtol=1e-9, atol=1e-12)


METHODS = ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "tanh", "erf", "abs",
           "square", "sigmoid", "relu", "sign", "floor", "ceil", "round", "trunc"]
ACTIVATION_METHODS = ["leaky_relu", "elu", "gelu", "silu", "softplus"]


@pytest.mark.parametrize("name", METHODS + ACTIVATION_METHODS)
def test_tensor_method_equals_functional_form(name):
    x = leaf(domain("positive" if name in ("log", "sqrt", "rsqrt") else "away"), requires_grad=False)
    assert_close(getattr(x, name)(), getattr(gl, name)(x), rtol=0, atol=0)


@pytest.mark.parametrize("name", METHODS)
def test_in_place_method_writes_values_and_keeps_the_graph(name):
    kind = "positive" if name in ("log", "sqrt", "rsqrt") else "away"
    x = domain(kind)
    expected_leaf = leaf(x)
    getattr(gl, name)(expected_leaf * 1).sum().backward()

    a = leaf(x)
    y = a * 1
    version = y._version_count
    assert getattr(y, name + "_")() is y
    assert y._version_count == version + 1
    assert_close(y, getattr(gl, name)(leaf(x, requires_grad=False)), rtol=0, atol=0)
    y.sum().backward()
    assert_close(a.grad, expected_leaf.grad, rtol=0, atol=0)


def test_in_place_activation_flags_and_round_decimals():
    x = domain("away")
    for fn, kwargs, reference in [(gl.leaky_relu, {"negative_slope": 0.3}, np.where(x > 0, x, 0.3 * x)),
                                  (gl.elu, {"alpha": 2.0}, np.where(x > 0, x, 2 * np.expm1(x))),
                                  (gl.silu, {}, x * np_sigmoid(x))]:
        t = leaf(x, requires_grad=False)
        assert fn(t, inplace=True, **kwargs) is t
        assert_close(t, reference)
    t = leaf(domain("steps"), requires_grad=False)
    t.round_(decimals=1)
    assert_close(t, np.round(domain("steps"), 1))


def test_in_place_cannot_turn_an_int_tensor_into_floats():
    with pytest.raises(RuntimeError, match="exp_: result type float32 can't be cast to the desired output type int64"):
        gl.tensor([1, 2]).exp_()


def test_grad_fn_is_named_after_the_op():
    x = leaf(domain("positive"))
    assert gl.exp(x).grad_fn.name() == "ExpBackward0"
    assert gl.leaky_relu(x).grad_fn.name() == "LeakyReluBackward0"
    assert gl.where(x > 1, x, 0.0).grad_fn.name() == "WhereBackward0"


# --- dtypes --------------------------------------------------------------------------------------

FLOAT_OPS = ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "tanh", "erf",
             "sigmoid"]
INT_KEEPING = {"relu": lambda x: np.maximum(x, 0), "abs": np.abs, "sign": np.sign, "floor": lambda x: x,
               "ceil": lambda x: x, "round": lambda x: x, "trunc": lambda x: x, "square": np.square}


@pytest.mark.parametrize("name", FLOAT_OPS)
def test_float_ops_promote_integer_and_bool_inputs_to_the_default_dtype(name):
    reference = UNARY[name][1]
    values = np.array([1, 2, 3])
    out = getattr(gl, name)(gl.tensor(values))
    assert out.dtype is gl.float32
    assert_close(out, reference(values.astype(np.float64)).astype(np.float32), rtol=1e-6)
    assert getattr(gl, name)(gl.tensor([True, False])).dtype is gl.float32
    gl.set_default_dtype(gl.float64)
    try:
        assert getattr(gl, name)(gl.tensor(values)).dtype is gl.float64
    finally:
        gl.set_default_dtype(gl.float32)


@pytest.mark.parametrize("name", FLOAT_OPS + list(INT_KEEPING) + ACTIVATION_METHODS)
@pytest.mark.parametrize("dtype", [gl.float32, gl.float16])
def test_float_inputs_keep_their_dtype(name, dtype):
    assert getattr(gl, name)(gl.tensor([0.5, 1.5], dtype=dtype)).dtype is dtype


@pytest.mark.parametrize("name", INT_KEEPING)
@pytest.mark.parametrize("dtype", [gl.int64, gl.int32])
def test_integer_keeping_ops(name, dtype):
    values = np.array([-3, 0, 2, 7])
    out = getattr(gl, name)(gl.tensor(values, dtype=dtype))
    assert out.dtype is dtype
    np.testing.assert_array_equal(out.numpy(), INT_KEEPING[name](values))


def test_bool_inputs_follow_pytorch():
    b = gl.tensor([True, False])
    assert gl.sign(b).dtype is gl.bool and gl.sign(b).tolist() == [True, False]
    assert gl.square(b).dtype is gl.int64 and gl.square(b).tolist() == [1, 0]
    for name in ("relu", "abs", "floor", "ceil", "round", "trunc"):
        with pytest.raises(RuntimeError, match=f"{name}: bool inputs are not supported"):
            getattr(gl, name)(b)


@pytest.mark.parametrize("name", ACTIVATION_METHODS + ["softmax", "log_softmax"])
def test_nn_activations_refuse_integer_tensors(name):
    args = (0,) if "softmax" in name else ()
    message = f"{name}: expected a floating-point tensor but got int64 tensor of shape \\(3\\)"
    with pytest.raises(RuntimeError, match=message):
        getattr(gl, name)(gl.tensor([1, 2, 3]), *args)


def test_bad_arguments():
    with pytest.raises(RuntimeError, match="round: decimals=2 needs a floating-point tensor, got int64"):
        gl.round(gl.tensor([1, 2]), decimals=2)
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh', got 'fast'"):
        gl.gelu(gl.tensor([1.0]), approximate="fast")


# --- predicates ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,reference", [("isnan", np.isnan), ("isinf", np.isinf), ("isfinite", np.isfinite),
                                            ("logical_not", np.logical_not)])
def test_predicates(name, reference):
    x = np.array([1.5, np.nan, np.inf, -np.inf, 0.0, -2.0])
    t = leaf(x)
    out = getattr(t, name)()
    assert out.dtype is gl.bool and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), reference(x))
    ints = np.array([0, 3, -1])
    np.testing.assert_array_equal(getattr(gl, name)(gl.tensor(ints)).numpy(), reference(ints))


def test_logical_not_in_place_keeps_the_dtype():
    t = gl.tensor([0.0, 2.0])
    t.logical_not_()
    assert t.dtype is gl.float32 and t.tolist() == [1.0, 0.0]


# --- clamp -------------------------------------------------------------------------------------------

def test_clamp_with_numbers():
    x = domain("wide")
    assert_close(gl.clamp(leaf(x), -1.0, 2.0), np.clip(x, -1.0, 2.0))
    assert_close(leaf(x).clamp(min=0.5), np.maximum(x, 0.5))
    assert_close(leaf(x).clip(max=0.5), np.minimum(x, 0.5))
    assert_close(gl.clamp_min(leaf(x), 0.5), np.maximum(x, 0.5))
    assert_close(gl.clamp_max(leaf(x), 0.5), np.minimum(x, 0.5))
    assert_close(gl.clamp(leaf(x), 1.0, -1.0), np.full(x.shape, -1.0))  # min > max: everything becomes max


def test_clamp_gradient_passes_inside_the_closed_interval():
    x = leaf([-2.0, -1.0, 0.0, 1.0, 3.0])
    x.clamp(-1.0, 1.0).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0, 1.0, 0.0]


def test_clamp_gradcheck_with_number_and_tensor_bounds():
    x = domain("wide", (3, 4), seed=6)
    assert gradcheck(lambda t: t.clamp(-0.95, 1.05), (leaf(x),))
    lo, hi = domain("normal", (4,), seed=7) - 1.01, domain("normal", (3, 1), seed=8) + 1.01
    assert gradcheck(gl.clamp, (leaf(x), leaf(lo), leaf(hi)))
    assert gradcheck(gl.clamp, (noncontiguous_leaf(x), leaf(lo), leaf(hi)))
    assert gradgradcheck(gl.clamp, (leaf(x), leaf(lo), leaf(hi)))
    assert gradcheck(lambda t, m: gl.clamp(t, min=m), (leaf(x), leaf(lo)))
    assert gradcheck(lambda t, m: gl.clamp(t, max=m), (leaf(x), leaf(hi)))


def test_clamp_with_tensor_bounds_broadcasts():
    x, lo, hi = np.zeros((3,)), np.array([[-1.0], [0.5]]), np.array(1.0)
    out = gl.clamp(leaf(x), leaf(lo), leaf(hi))
    assert out.shape == (2, 3)
    assert_close(out, np.minimum(np.maximum(x, lo), hi))


def test_clamp_dtypes():
    ints = gl.tensor([-2, 0, 5])
    assert gl.clamp(ints, 0, 3).dtype is gl.int64 and gl.clamp(ints, 0, 3).tolist() == [0, 0, 3]
    assert gl.clamp(ints, min=0.5).dtype is gl.float32 and gl.clamp(ints, min=0.5).tolist() == [0.5, 0.5, 5.0]
    assert gl.clamp(gl.tensor([True, False]), min=0).dtype is gl.int64
    assert gl.clamp(ints, min=gl.tensor([0.5, 0.5, 0.5])).dtype is gl.float32
    assert gl.clamp(gl.tensor([1.0], dtype=gl.float16), 0.0, 0.5).dtype is gl.float16


def test_clamp_in_place():
    t = gl.tensor([-2.0, 0.5, 3.0])
    assert t.clamp_(-1, 1) is t and t.tolist() == [-1.0, 0.5, 1.0]
    t.clamp_min_(0.0).clamp_max_(0.25)
    assert t.tolist() == [0.0, 0.25, 0.25]
    t.clip_(max=gl.tensor([0.1, 0.1, 0.1]))
    assert_close(t, [0.0, 0.1, 0.1])


def test_clamp_errors():
    with pytest.raises(RuntimeError, match="clamp: at least one of 'min' or 'max' must not be None"):
        gl.clamp(gl.tensor([1.0]))
    with pytest.raises(RuntimeError, match=r"shapes \(2\) and \(3\) cannot be broadcast together"):
        gl.clamp(gl.zeros(2), min=gl.zeros(3))
    with pytest.raises(RuntimeError, match=r"clamp: shapes \(2\) and \(3\) cannot be broadcast together"):
        gl.clamp(gl.zeros(2), gl.zeros(3), 1.0)


@requires_torch
@pytest.mark.parametrize("bounds", ["numbers", "tensors", "min_tensor", "max_tensor", "crossed"])
def test_clamp_matches_torch(bounds):
    x = np.array([[-2.0, -1.0, 0.0, 0.5, 1.0, 3.0]] * 2)
    lo, hi = np.array([[-1.0], [0.6]]), np.array([1.0, 1.0, 1.0, 0.5, 0.4, 2.0])
    if bounds == "crossed":
        lo, hi = hi + 0.1, lo
    args = {"numbers": (-1.0, 1.0), "tensors": (lo, hi), "min_tensor": (lo, None), "max_tensor": (None, hi),
            "crossed": (lo, hi)}[bounds]
    ours = [leaf(a) if isinstance(a, np.ndarray) else a for a in (x, *args)]
    theirs = [to_torch(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in (x, *args)]
    out, expected = gl.clamp(*ours), torch.clamp(*theirs)
    assert_close(out, expected)
    weights = domain("normal", out.shape, seed=9)
    (out * leaf(weights, requires_grad=False)).sum().backward()
    (expected * to_torch(weights)).sum().backward()
    for a, b in zip(ours, theirs):
        if isinstance(a, gl.Tensor):
            assert_close(a.grad, b.grad)


# --- maximum / minimum -----------------------------------------------------------------------------

@pytest.mark.parametrize("name,reference", [("maximum", np.maximum), ("minimum", np.minimum)])
def test_maximum_minimum_broadcast(name, reference):
    a, b = domain("normal", (3, 1, 4), seed=10), domain("normal", (2, 1), seed=11)
    fn = getattr(gl, name)
    out = fn(leaf(a), leaf(b))
    assert out.shape == (3, 2, 4)
    assert_close(out, reference(a, b))
    assert_close(getattr(leaf(a), name)(leaf(b)), reference(a, b))
    assert gradcheck(fn, (leaf(a), leaf(b)))
    assert gradcheck(fn, (noncontiguous_leaf(domain("normal", (3, 4), seed=12)), leaf(domain("normal", (4,), seed=22))))
    assert gradgradcheck(fn, (leaf(a), leaf(b)))


@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_split_ties_evenly(name):
    a, b = leaf([1.0, 2.0, 3.0]), leaf([1.0, 5.0, 0.0])
    getattr(gl, name)(a, b).sum().backward()
    winner_a = [0.5, 0.0, 1.0] if name == "maximum" else [0.5, 1.0, 0.0]
    assert a.grad.tolist() == winner_a
    assert b.grad.tolist() == [1.0 - g for g in winner_a]


def test_maximum_minimum_dtypes_and_errors():
    ints = gl.tensor([1, 5])
    assert gl.maximum(ints, gl.tensor([3, 2])).tolist() == [3, 5] and gl.maximum(ints, ints).dtype is gl.int64
    assert gl.minimum(ints, gl.tensor([1.5, 9.0])).dtype is gl.float32
    assert gl.maximum(gl.tensor([True]), gl.tensor([False])).dtype is gl.bool
    assert math.isnan(gl.maximum(gl.tensor([float("nan")]), gl.tensor([1.0])).item())
    with pytest.raises(TypeError, match="maximum: expected two tensors, got Python int 2; for a number use clamp_min"):
        gl.maximum(ints, 2)
    with pytest.raises(RuntimeError, match=r"shapes \(2\) and \(3\) cannot be broadcast together"):
        gl.minimum(gl.zeros(2), gl.zeros(3))


@requires_torch
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum_match_torch_with_ties_and_nan(name):
    a = np.array([[1.0, 2.0, np.nan, 4.0], [0.0, -1.0, 3.0, np.nan]])
    b = np.array([1.0, 3.0, 0.5, np.nan])
    ours, theirs = (leaf(a), leaf(b)), (to_torch(a, True), to_torch(b, True))
    out, expected = getattr(gl, name)(*ours), getattr(torch, name)(*theirs)
    assert_close(out, expected)
    out.sum().backward()
    expected.sum().backward()
    for x, y in zip(ours, theirs):
        assert_close(x.grad, y.grad)


# --- where ----------------------------------------------------------------------------------------

def test_where_selects_and_routes_gradients():
    cond = gl.tensor([True, False, True])
    a, b = leaf([1.0, 2.0, 3.0]), leaf([10.0, 20.0, 30.0])
    out = gl.where(cond, a, b)
    assert out.tolist() == [1.0, 20.0, 3.0]
    out.backward(gl.tensor([1.0, 2.0, 3.0], dtype=gl.float64))
    assert a.grad.tolist() == [1.0, 0.0, 3.0] and b.grad.tolist() == [0.0, 2.0, 0.0]


def test_where_broadcasting_and_scalars():
    c = domain("normal", (3, 1), seed=13) > 0
    a, b = domain("normal", (4,), seed=14), domain("normal", (2, 1, 1), seed=15)
    cond = gl.tensor(c)
    out = gl.where(cond, leaf(a), leaf(b))
    assert out.shape == (2, 3, 4)
    assert_close(out, np.where(c, a, b))
    assert gradcheck(lambda x, y: gl.where(cond, x, y), (leaf(a), leaf(b)))
    assert gradcheck(lambda x, y: gl.where(cond, x, y), (noncontiguous_leaf(domain("normal", (3, 4))), leaf(b)))
    assert gradgradcheck(lambda x, y: gl.where(cond, x, y), (leaf(a), leaf(b)))
    assert gradcheck(lambda x: gl.where(cond, x, 0.5), (leaf(a),))
    assert gradcheck(lambda x: gl.where(cond, -1.0, x), (leaf(b),))
    assert_close(gl.where(cond, 1.0, leaf(b)), np.where(c, 1.0, b))
    assert_close(leaf(a).where(cond, 7.0), np.where(c, a, 7.0))


def test_where_dtypes():
    cond = gl.tensor([True, False])
    assert gl.where(cond, gl.tensor([1, 2]), 0.5).dtype is gl.float32
    assert gl.where(cond, gl.tensor([1, 2]), 0).dtype is gl.int64
    int32s, float64s = gl.tensor([1, 2], dtype=gl.int32), gl.tensor([1.0, 2.0], dtype=gl.float64)
    assert gl.where(cond, int32s, float64s).dtype is gl.float64
    assert gl.where(cond, 1, 2).dtype is gl.int64 and gl.where(cond, 1, 2).tolist() == [1, 2]
    assert gl.where(cond, 1, 2.5).dtype is gl.float32 and gl.where(cond, 1, 2.5).tolist() == [1.0, 2.5]
    assert gl.where(cond, gl.tensor([1.0], dtype=gl.float16), 2.0).dtype is gl.float16


def test_where_errors():
    with pytest.raises(RuntimeError, match="where: expected condition to be a bool tensor, but got float32 tensor"):
        gl.where(gl.tensor([1.0, 0.0]), gl.tensor([1.0, 2.0]), 0.0)
    with pytest.raises(RuntimeError, match=r"where: .*shapes \(2\) and \(3\) cannot be broadcast together"):
        gl.where(gl.tensor([True, False]), gl.zeros(3), 0.0)
    with pytest.raises(TypeError, match="where: expected tensors or Python numbers for both branches"):
        gl.where(gl.tensor([True]), [1.0], 2.0)


@requires_torch
def test_where_matches_torch():
    c = np.array([[True, False, True]])
    a, b = domain("normal", (2, 3), seed=16), domain("normal", (3,), seed=17)
    ours, theirs = (leaf(a), leaf(b)), (to_torch(a, True), to_torch(b, True))
    out, expected = gl.where(gl.tensor(c), *ours), torch.where(torch.tensor(c), *theirs)
    assert_close(out, expected)
    (out * out).sum().backward()
    (expected * expected).sum().backward()
    for x, y in zip(ours, theirs):
        assert_close(x.grad, y.grad)


def _sum_to(grad, shape):
    """Reference for reducing a broadcast gradient back to an input's shape, in plain numpy."""
    grad = grad.sum(axis=tuple(range(grad.ndim - len(shape))))
    return grad.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)


@settings(max_examples=25, deadline=None)
@given(hnp.mutually_broadcastable_shapes(num_shapes=3, max_dims=3, max_side=3),
       st.sampled_from(["maximum", "where", "clamp"]))
def test_broadcasting_ops_on_random_shapes(shapes, op):
    s0, s1, s2 = shapes.input_shapes
    rng = np.random.default_rng(0)
    x, y, z = (rng.standard_normal(s) for s in (s0, s1, s2))
    if op == "maximum":
        inputs = (leaf(x), leaf(y))
        out = gl.maximum(*inputs)
        wins = np.broadcast_to(x > y, np.broadcast_shapes(s0, s1))
        expected, grads = np.maximum(x, y), (wins, ~wins)
    elif op == "where":
        cond = x > 0
        inputs = (leaf(y), leaf(z))
        out = gl.where(gl.tensor(cond), *inputs)
        chosen = np.broadcast_to(cond, shapes.result_shape)  # all three shapes take part
        expected, grads = np.where(cond, y, z), (chosen, ~chosen)
    else:
        lo, hi = y - 0.5, z + 0.5
        inputs = (leaf(x), leaf(lo), leaf(hi))
        out = gl.clamp(*inputs)
        below, above = np.broadcast_to(x < lo, shapes.result_shape), np.broadcast_to(x > hi, shapes.result_shape)
        crossed = np.broadcast_to(lo > hi, shapes.result_shape)
        expected = np.minimum(np.maximum(x, lo), hi)
        grads = (~below & ~above & ~crossed, below & ~crossed, above | crossed)
    assert out.shape == expected.shape
    assert_close(out, expected)
    out.sum().backward()
    for t, g in zip(inputs, grads):
        assert t.grad.shape == t.shape
        assert_close(t.grad, _sum_to(g.astype(np.float64), t.shape))


# --- softmax / log_softmax -------------------------------------------------------------------------

def np_log_softmax(x, dim):
    shifted = x - x.max(axis=dim, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=dim, keepdims=True))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_softmax_and_log_softmax_on_every_dim(dim):
    x = domain("wide", (2, 3, 4), seed=18)
    assert_close(gl.softmax(leaf(x), dim), np.exp(np_log_softmax(x, dim)), rtol=1e-12)
    assert_close(gl.log_softmax(leaf(x), dim), np_log_softmax(x, dim), rtol=1e-12)
    assert_close(leaf(x).softmax(dim), np.exp(np_log_softmax(x, dim)), rtol=1e-12)
    assert_close(leaf(x).log_softmax(dim=dim), np_log_softmax(x, dim), rtol=1e-12)
    for fn in (gl.softmax, gl.log_softmax):
        assert gradcheck(lambda t: fn(t, dim), (leaf(x),))
        assert gradcheck(lambda t: fn(t, dim % 2), (noncontiguous_leaf(x[0]),))
        assert gradgradcheck(lambda t: fn(t, dim), (leaf(x[:, :2, :3]),))


def test_softmax_dtype_argument_and_edge_shapes():
    ints = gl.tensor([1, 2, 3])
    assert gl.softmax(ints, 0, dtype=gl.float64).dtype is gl.float64
    assert_close(gl.log_softmax(ints, 0, dtype=gl.float32), np_log_softmax(np.array([1.0, 2, 3]), 0), rtol=1e-6)
    x = leaf([0.0, 1.0])
    y = gl.softmax(x, 0, dtype=gl.float32)
    assert y.dtype is gl.float32
    (y * gl.tensor([1.0, 0.0])).sum().backward()
    s = np.exp([0.0, 1.0]) / np.exp([0.0, 1.0]).sum()
    assert x.grad.dtype is gl.float64
    assert_close(x.grad, [s[0] * (1 - s[0]), -s[0] * s[1]], rtol=1e-6)
    assert gl.softmax(leaf(np.array(3.0)), 0).item() == 1.0
    assert gl.log_softmax(leaf(np.array(3.0)), -1).item() == 0.0
    assert gl.softmax(gl.zeros((2, 0)), 1).shape == (2, 0)
    assert gl.softmax(gl.zeros((0, 3)), 1).shape == (0, 3)
    with pytest.raises(IndexError, match=r"softmax: Dimension out of range \(expected .* of \[-2, 1\], but got 2\)"):
        gl.softmax(gl.zeros((2, 3)), 2)


@pytest.mark.parametrize("dtype", [gl.float64, gl.float32])
def test_softmax_is_stable_for_huge_logits(dtype):
    x = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, -1e4], [1e4, 1e4, 1e4 - 1]])
    t = gl.tensor(x, dtype=dtype, requires_grad=True)
    w = gl.tensor(domain("normal", (3, 3), seed=19), dtype=dtype)
    probs, logs = gl.softmax(t, 1), gl.log_softmax(t, 1)
    assert gl.isfinite(probs).all().item() and gl.isfinite(logs).all().item()
    assert_close(probs.detach().sum(1), np.ones(3), rtol=1e-6)
    tolerance = {"rtol": 1e-6} if dtype is gl.float64 else {"rtol": 1e-6, "atol": 1e-4}  # float32 ulp at 1e4 is 1e-3
    assert_close(logs.detach().numpy()[:2], np.array([[0.0, -2e4, -1e4], [-math.log(3)] * 3]), **tolerance)
    ((probs * w).sum() + (logs * w).sum()).backward()
    assert np.isfinite(t.grad.numpy()).all()


@requires_torch
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_matches_torch(name, dim):
    x = domain("wide", (3, 5), seed=20)
    x[0, 0] = 1e4
    w = domain("normal", (3, 5), seed=21)
    ours, theirs = leaf(x), to_torch(x, True)
    out, expected = getattr(gl, name)(ours, dim), getattr(torch, name)(theirs, dim)
    assert_close(out, expected, rtol=1e-10, atol=1e-12)
    (g,) = gl.autograd.grad((out * leaf(w, False)).sum(), ours, create_graph=True)
    (h,) = torch.autograd.grad((expected * to_torch(w)).sum(), theirs, create_graph=True)
    assert_close(g, h, rtol=1e-10, atol=1e-12)
    (g * g).sum().backward()
    (h * h).sum().backward()
    assert_close(ours.grad, theirs.grad, rtol=1e-8, atol=1e-10)

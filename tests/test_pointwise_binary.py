"""Two- and three-input pointwise ops: atan2, hypot, xlogy, logaddexp, fmod, fmax, lerp, addcmul, ...

A table drives the values (against NumPy/SciPy and PyTorch), the float64 gradchecks and the
gradients against PyTorch; the edge cases the formulas special-case (xlogy at x = 0, hypot at 0,
atan2 in every quadrant, lerp's weight) and the dtype rules and errors follow.
"""

import numpy as np
import pytest
import scipy.special as sp

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck
from helpers import assert_close, leaf, requires_torch, to_torch, torch


def pair(kind, shape=(3, 4), seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal(shape), rng.standard_normal(shape)
    if kind == "positive":
        return a, rng.uniform(0.3, 3.0, shape)
    if kind == "apart":  # |a − b| ≥ 0.2 and b away from 0: no ties, no steps of trunc(a / b) near here
        b = b + 0.5 * np.sign(b)
        q = np.trunc(a / b) + np.resize([0.3, 0.6], shape)
        return q * b, b
    if kind == "distinct":
        return a, a + np.resize([0.4, -0.7, 1.1], shape)
    if kind == "zeta":
        return rng.uniform(1.5, 5.0, shape), rng.uniform(0.5, 4.0, shape)
    if kind == "gamma":  # both sides of x = a + 1, where the series hands over to the continued fraction
        return rng.uniform(0.2, 6.0, shape), rng.uniform(0.05, 12.0, shape)
    return a, b


def np_lerp(a, b, w):
    return a + w * (b - a)


# name: (gradlab function of (a, b), reference, torch function, domain, which inputs get gradients)
BINARY = {
    "atan2": (gl.atan2, np.arctan2, lambda a, b: torch.atan2(a, b), "normal", (0, 1)),
    "arctan2": (gl.arctan2, np.arctan2, lambda a, b: torch.arctan2(a, b), "normal", (0, 1)),
    "hypot": (gl.hypot, np.hypot, lambda a, b: torch.hypot(a, b), "normal", (0, 1)),
    "copysign": (gl.copysign, np.copysign, lambda a, b: torch.copysign(a, b), "normal", (0,)),
    "fmod": (gl.fmod, np.fmod, lambda a, b: torch.fmod(a, b), "apart", (0, 1)),
    "remainder": (gl.remainder, np.remainder, lambda a, b: torch.remainder(a, b), "apart", (0, 1)),
    "xlogy": (gl.xlogy, sp.xlogy, lambda a, b: torch.xlogy(a, b), "positive", (0, 1)),
    "xlog1py": (gl.special.xlog1py, sp.xlog1py, lambda a, b: torch.special.xlog1py(a, b), "positive", (0, 1)),
    "logaddexp": (gl.logaddexp, np.logaddexp, lambda a, b: torch.logaddexp(a, b), "normal", (0, 1)),
    "logaddexp2": (gl.logaddexp2, np.logaddexp2, lambda a, b: torch.logaddexp2(a, b), "normal", (0, 1)),
    "fmax": (gl.fmax, np.fmax, lambda a, b: torch.fmax(a, b), "distinct", (0, 1)),
    "fmin": (gl.fmin, np.fmin, lambda a, b: torch.fmin(a, b), "distinct", (0, 1)),
    "float_power": (gl.float_power, np.float_power, lambda a, b: torch.float_power(a, b), "positive_base", (0, 1)),
    "lerp_number": (lambda a, b: gl.lerp(a, b, 0.3), lambda a, b: np_lerp(a, b, 0.3),
                    lambda a, b: torch.lerp(a, b, 0.3), "normal", (0, 1)),
    "lerp_tensor": (lambda a, b: gl.lerp(a, b, a * 0 + b.abs()), lambda a, b: np_lerp(a, b, np.abs(b)),
                    lambda a, b: torch.lerp(a, b, b.abs()), "normal", (0, 1)),
    "addcmul": (lambda a, b: gl.addcmul(a, a, b, value=0.5), lambda a, b: a + 0.5 * a * b,
                lambda a, b: torch.addcmul(a, a, b, value=0.5), "normal", (0, 1)),
    "addcdiv": (lambda a, b: gl.addcdiv(a, a, b, value=-2), lambda a, b: a - 2 * a / b,
                lambda a, b: torch.addcdiv(a, a, b, value=-2), "positive", (0, 1)),
    "rsub": (lambda a, b: gl.rsub(a, b, alpha=2), lambda a, b: b - 2 * a, lambda a, b: torch.rsub(a, b, alpha=2),
             "normal", (0, 1)),
    "zeta": (gl.special.zeta, sp.zeta, lambda a, b: torch.special.zeta(a, b), "zeta", (1,)),
    "igamma": (gl.igamma, sp.gammainc, lambda a, b: torch.igamma(a, b), "gamma", (1,)),
    "igammac": (gl.igammac, sp.gammaincc, lambda a, b: torch.igammac(a, b), "gamma", (1,)),
    "special.gammainc": (gl.special.gammainc, sp.gammainc, lambda a, b: torch.special.gammainc(a, b), "gamma", (1,)),
}


def inputs(kind, seed=0, shape=(3, 4)):
    if kind == "positive_base":
        a, b = pair("normal", shape, seed)
        return np.abs(a) + 0.3, b
    return pair(kind, shape, seed)


@pytest.mark.parametrize("name", BINARY)
def test_forward_matches_numpy_and_scipy(name):
    fn, reference, _, kind, _ = BINARY[name]
    a, b = inputs(kind)
    assert_close(fn(leaf(a, False), leaf(b, False)), reference(a, b), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", BINARY)
def test_float64_gradcheck(name):
    fn, _, _, kind, differentiable = BINARY[name]
    a, b = inputs(kind, seed=1, shape=(2, 3))
    ta, tb = leaf(a, 0 in differentiable), leaf(b, 1 in differentiable)
    assert gradcheck(fn, (ta, tb))


@pytest.mark.parametrize("name", ["atan2", "hypot", "xlogy", "logaddexp", "lerp_tensor", "addcdiv"])
def test_second_derivatives(name):
    fn, _, _, kind, _ = BINARY[name]
    a, b = inputs(kind, seed=2, shape=(2, 3))
    assert gradgradcheck(fn, (leaf(a), leaf(b)))


@requires_torch
@pytest.mark.parametrize("name", BINARY)
def test_values_and_gradients_match_torch(name):
    fn, _, torch_fn, kind, differentiable = BINARY[name]
    a, b = inputs(kind, seed=3)
    ours = [leaf(a, 0 in differentiable), leaf(b, 1 in differentiable)]
    theirs = [to_torch(a, 0 in differentiable), to_torch(b, 1 in differentiable)]
    out, expected = fn(*ours), torch_fn(*theirs)
    assert_close(out, expected, rtol=1e-10, atol=1e-12)
    weights = np.random.default_rng(4).standard_normal(out.shape)
    (out * gl.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for i in differentiable:
        assert_close(ours[i].grad, theirs[i].grad, rtol=1e-9, atol=1e-12)


@requires_torch
def test_broadcasting_gradients_come_back_in_each_shape():
    a, b = np.random.default_rng(5).standard_normal((3, 1)), np.random.default_rng(6).uniform(0.5, 2, (4,))
    for fn, torch_fn in [(gl.atan2, torch.atan2), (gl.xlogy, torch.xlogy), (gl.hypot, torch.hypot),
                         (gl.logaddexp, torch.logaddexp)]:
        ours, theirs = [leaf(a), leaf(b)], [to_torch(a, True), to_torch(b, True)]
        fn(*ours).sum().backward()
        torch_fn(*theirs).sum().backward()
        for o, t in zip(ours, theirs):
            assert o.grad.shape == o.shape
            assert_close(o.grad, t.grad, rtol=1e-10)


@requires_torch
def test_atan2_in_every_quadrant_and_on_the_axes():
    ys = [1.0, 1.0, -1.0, -1.0, 0.0, 0.0, 2.0, -2.0, 0.0, -0.0]
    xs = [1.0, -1.0, -1.0, 1.0, 1.0, -1.0, 0.0, 0.0, -0.0, -1.0]
    out = gl.atan2(gl.tensor(ys, dtype=gl.float64), gl.tensor(xs, dtype=gl.float64))
    np.testing.assert_array_equal(out.numpy(), np.arctan2(ys, xs))
    np.testing.assert_array_equal(out.numpy(), torch.atan2(torch.tensor(ys, dtype=torch.float64),
                                                           torch.tensor(xs, dtype=torch.float64)).numpy())
    assert gradcheck(gl.atan2, (leaf(np.array(ys[:4])), leaf(np.array(xs[:4]))))


@requires_torch
def test_xlogy_at_zero_and_hypot_at_the_origin_follow_torch():
    x, y = np.array([0.0, 0.0, 0.0, 2.0]), np.array([0.0, 3.0, np.nan, 0.5])
    ours, theirs = [leaf(x), leaf(y)], [to_torch(x, True), to_torch(y, True)]
    out, expected = gl.xlogy(*ours), torch.xlogy(*theirs)
    np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())  # 0 · log 0 = 0, NaN stays
    out.sum().backward()
    expected.sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_array_equal(o.grad.numpy(), t.grad.numpy())
    assert_close(gl.xlogy(2.0, gl.tensor([1.0, 4.0])), [0.0, 2 * np.log(4)])  # a number first, as torch allows
    assert_close(gl.xlogy(gl.tensor([1.0, 4.0]), 2), [np.log(2), 4 * np.log(2)])
    h, th = leaf(np.zeros(2)), to_torch(np.zeros(2), True)
    gl.hypot(h, h * 2).sum().backward()
    torch.hypot(th, th * 2).sum().backward()
    np.testing.assert_array_equal(h.grad.numpy(), th.grad.numpy())  # NaN at the origin, as in PyTorch


def test_incomplete_gamma_edges_and_the_missing_shape_derivative():
    a = gl.tensor([0.0, 0.0, 1.0, -1.0, float("inf"), 2.0], dtype=gl.float64)
    x = gl.tensor([0.0, 1.0, 0.0, 1.0, 1.0, float("inf")], dtype=gl.float64)
    np.testing.assert_array_equal(gl.igamma(a, x).numpy(), [np.nan, 1.0, 0.0, np.nan, 0.0, 1.0])
    np.testing.assert_array_equal(gl.igammac(a, x).numpy(), [np.nan, 0.0, 1.0, np.nan, 1.0, 0.0])
    rng = np.random.default_rng(8)
    big_a, big_x = rng.uniform(0.01, 60, 300), rng.uniform(0, 100, 300)
    assert_close(gl.igamma(gl.tensor(big_a), gl.tensor(big_x)), sp.gammainc(big_a, big_x), rtol=1e-11, atol=1e-14)
    assert_close(gl.igammac(gl.tensor(big_a), gl.tensor(big_x)), sp.gammaincc(big_a, big_x), rtol=1e-11, atol=1e-14)
    shape = leaf(np.array([1.5]))
    with pytest.raises(NotImplementedError, match="igamma: the derivative with respect to input .* is not implemented"):
        gl.igamma(shape, gl.tensor([2.0], dtype=gl.float64)).backward()


def test_lerp_gradient_with_respect_to_the_weight():
    start, end = leaf(np.array([0.0, 1.0, -2.0])), leaf(np.array([1.0, 3.0, 2.0]))
    weight = leaf(np.array([0.2, 0.7, 1.5]))
    assert gradcheck(gl.lerp, (start, end, weight))
    out = start.lerp(end, weight)
    out.sum().backward()
    assert_close(weight.grad, end.detach().numpy() - start.detach().numpy())
    assert gl.lerp(gl.tensor([1.0]), gl.tensor([3.0]), 1.0).tolist() == [3.0]  # exact at weight 1
    with pytest.raises(RuntimeError, match="lerp: expected dtype float64 for `end` but got dtype float32"):
        gl.lerp(gl.ones(2, dtype=gl.float64), gl.ones(2), 0.5)
    with pytest.raises(NotImplementedError, match="lerp: \"lerp_kernel\" not implemented for integer tensors"):
        gl.lerp(gl.tensor([1, 2]), gl.tensor([3, 4]), 0.5)


@requires_torch
@pytest.mark.parametrize("name", ["atan2", "copysign", "xlogy", "fmod", "remainder", "fmax", "fmin", "ldexp",
                                  "float_power", "heaviside", "gcd", "lcm"])
def test_integer_inputs_give_torch_dtypes_and_values(name):
    fn, torch_fn = getattr(gl, name), getattr(torch, name)
    a, b = [6, -4, 9], [4, 6, 3]
    out, expected = fn(gl.tensor(a), gl.tensor(b)), torch_fn(torch.tensor(a), torch.tensor(b))
    assert out.dtype.name == str(expected.dtype).replace("torch.", "")
    assert_close(out, expected, rtol=1e-6)


@pytest.mark.parametrize("call, error, message", [
    (lambda: gl.logaddexp(gl.tensor([1]), gl.tensor([2])), NotImplementedError,
     r"logaddexp: \"logaddexp\" not implemented for 'Long' \(int64 tensor of shape \(1\)"),
    (lambda: gl.nextafter(gl.tensor([1]), gl.tensor([2])), NotImplementedError, "not implemented for 'Long'"),
    (lambda: gl.hypot(gl.tensor([3]), gl.tensor([4])), NotImplementedError, r"hypot: \"hypot\" not implemented"),
    (lambda: gl.gcd(gl.ones(2), gl.ones(2)), NotImplementedError, r"gcd: \"gcd\" not implemented for 'Float'"),
    (lambda: gl.lcm(gl.tensor([True]), gl.tensor([True])), NotImplementedError, "not implemented for 'Bool'"),
    (lambda: gl.fmod(gl.tensor([True]), gl.tensor([True])), NotImplementedError, "not implemented for 'Bool'"),
    (lambda: gl.atan2(gl.ones(2), 2.0), TypeError,
     r"atan2\(\): argument 'other' \(position 2\) must be Tensor, not float"),
    (lambda: gl.atan2(2.0, gl.ones(2)), TypeError, r"atan2\(\): argument 'input' \(position 1\) must be Tensor"),
    (lambda: gl.hypot(gl.ones(2), 1), TypeError, r"hypot\(\): argument 'other' .* must be Tensor, not int"),
    (lambda: gl.fmax(gl.ones(2), 1.0), TypeError, r"fmax\(\): argument 'other'"),
    (lambda: gl.ldexp(gl.ones(2), 2), TypeError, r"ldexp\(\): argument 'other'"),
    (lambda: gl.heaviside(gl.tensor([1, 0]), gl.tensor([0.5, 0.5])), RuntimeError,
     "heaviside is not yet implemented for tensors with different dtypes"),
    (lambda: gl.atan2(gl.ones(2, 3), gl.ones(4)), RuntimeError,
     r"atan2: shapes \(2, 3\) and \(4\) cannot be broadcast"),
    (lambda: gl.fmod(gl.tensor([3, 4]), 0), RuntimeError, "fmod: ZeroDivisionError"),
    (lambda: gl.xlogy(2.0, 3.0), TypeError, "xlogy: expected at least one tensor, got Python float 2.0 and Python float"),
    (lambda: gl.frexp(gl.tensor([1, 2])), RuntimeError, r"frexp: torch.frexp\(\) only supports floating-point dtypes"),
    (lambda: gl.addcmul(gl.tensor([1]), gl.tensor([2]), gl.tensor([3]), value=0.5), RuntimeError,
     "addcmul: For integral input tensors, argument value must not be a floating point number"),
    (lambda: gl.addcdiv(gl.tensor([1]), gl.tensor([2]), gl.tensor([3])), RuntimeError,
     "addcdiv: Integer division with addcdiv is no longer supported"),
])
def test_bad_inputs_raise_errors_naming_the_op(call, error, message):
    with pytest.raises(error, match=message):
        call()


@requires_torch
def test_no_gradient_ops_give_no_grad_fn_or_no_gradient():
    a, b = leaf(np.array([1.5, -2.0])), leaf(np.array([0.5, 3.0]))
    for out in (gl.eq(a, b), gl.isclose(a, b), gl.signbit(a), gl.isin(a, b), gl.isposinf(a)):
        assert out.grad_fn is None and not out.requires_grad
    for fn in (gl.nextafter, gl.heaviside):
        out = fn(a, b)
        out.sum().backward()
    assert a.grad is None and b.grad is None  # piecewise constant: nothing reaches the leaves


@requires_torch
def test_heaviside_nextafter_frexp_ldexp_match_torch():
    x, v = [-1.5, 0.0, 2.0, 0.0], [0.5, 0.25, 0.5, 1.0]
    expected = torch.heaviside(torch.tensor(x), torch.tensor(v))
    assert gl.heaviside(gl.tensor(x), gl.tensor(v)).tolist() == expected.tolist()
    a, b = gl.tensor([1.0, 2.0], dtype=gl.float64), gl.tensor([2.0, 0.0], dtype=gl.float64)
    ta, tb = torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([2.0, 0.0], dtype=torch.float64)
    assert gl.nextafter(a, b).tolist() == torch.nextafter(ta, tb).tolist()
    mantissa, exponent = gl.frexp(gl.tensor([0.0, 3.5, -0.1, 1024.0]))
    tm, te = torch.frexp(torch.tensor([0.0, 3.5, -0.1, 1024.0]))
    assert mantissa.tolist() == tm.tolist() and exponent.tolist() == te.tolist() and exponent.dtype is gl.int32
    assert gl.frexp(gl.ones(1)).mantissa.tolist() == [0.5]  # a namedtuple, as torch.return_types.frexp
    x = leaf(np.array([3.5, -0.1, 40.0]))
    assert gradcheck(lambda t: gl.frexp(t).mantissa, (x,))
    assert_close(gl.ldexp(gl.tensor([1.5, 2.0]), gl.tensor([3, -1])), [12.0, 1.0])


@requires_torch
def test_fmax_fmin_let_numbers_beat_nan_and_ties_go_to_the_first():
    a, b = np.array([np.nan, 1.0, 2.0, np.nan]), np.array([1.0, np.nan, 2.0, np.nan])
    for fn, torch_fn in [(gl.fmax, torch.fmax), (gl.fmin, torch.fmin)]:
        ours, theirs = [leaf(a), leaf(b)], [to_torch(a, True), to_torch(b, True)]
        out, expected = fn(*ours), torch_fn(*theirs)
        np.testing.assert_array_equal(out.detach().numpy(), expected.detach().numpy())
        out.sum().backward()
        expected.sum().backward()
        for o, t in zip(ours, theirs):
            np.testing.assert_array_equal(o.grad.numpy(), t.grad.numpy())


def test_scalars_on_either_side_where_torch_takes_them():
    x = gl.tensor([3, 4])
    assert gl.remainder(7, x).tolist() == [1, 3]
    assert gl.floor_divide(7, x).tolist() == [2, 1]
    assert gl.rsub(x, 10).tolist() == [7, 6]
    assert gl.copysign(x, -1).tolist() == [-3.0, -4.0]
    assert gl.float_power(2, x).tolist() == [8.0, 16.0] and gl.float_power(2, x).dtype is gl.float64
    assert gl.fmod(gl.tensor([7.5, -7.5]), 2).tolist() == [1.5, -1.5]


def test_aliases_are_the_same_ops():
    a, b = gl.tensor([6.0, -3.0]), gl.tensor([4.0, 2.0])
    for alias, op in [(gl.multiply, gl.mul), (gl.divide, gl.div), (gl.true_divide, gl.div), (gl.subtract, gl.sub),
                      (gl.greater, gl.gt), (gl.less_equal, gl.le), (gl.not_equal, gl.ne)]:
        assert alias(a, b).tolist() == op(a, b).tolist()
    assert a.divide(b, rounding_mode="floor").tolist() == [1.0, -2.0]
    assert gl.absolute(a).tolist() == [6.0, 3.0] and gl.negative(a).tolist() == [-6.0, 3.0]


@pytest.mark.parametrize("dtype", [gl.float16, gl.float32])
def test_narrow_floats_keep_their_dtype_with_numbers_and_tensors(dtype):
    x, y = gl.tensor([0.3, 0.6], dtype=dtype), gl.tensor([0.5, 0.2], dtype=dtype)
    for name in ("atan2", "hypot", "copysign", "fmod", "remainder", "xlogy", "logaddexp", "logaddexp2", "fmax",
                 "fmin", "nextafter", "igamma", "igammac"):
        assert getattr(gl, name)(x, y).dtype is dtype, name
    for out in (gl.xlogy(x, 2), gl.xlogy(2, x), gl.copysign(x, -1), gl.fmod(x, 0.25), gl.lerp(x, y, 0.3),
                gl.lerp(x, y, 0.7), gl.lerp(x, y, x), gl.addcmul(x, x, y, value=2), gl.special.zeta(3.0, x + 1)):
        assert out.dtype is dtype

"""One-input pointwise maths beyond the core: inverse trig, hyperbolic, other bases, special functions.

One table drives every check: values against SciPy/NumPy and PyTorch, float64 gradcheck (and a
second derivative for the smooth ones), gradients against PyTorch, and the output dtype.
"""

import numpy as np
import pytest
import scipy.special as sp

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck
from helpers import assert_close, leaf, requires_torch, to_torch, torch


def domain(kind, shape=(3, 4), seed=0):
    """float64 inputs where an op is smooth (away from poles, branch points and rounding steps)."""
    rng = np.random.default_rng(seed)
    if kind == "unit":  # inside (−1, 1): asin, atanh, erfinv
        return rng.uniform(-0.9, 0.9, shape)
    if kind == "prob":  # inside (0, 1): logit
        return rng.uniform(0.05, 0.95, shape)
    if kind == "positive":
        return rng.uniform(0.3, 4.0, shape)
    if kind == "above_one":  # acosh
        return rng.uniform(1.2, 4.0, shape)
    if kind == "gamma":  # both signs, away from the poles at 0, −1, −2, ...
        return np.resize([-2.5, -1.7, -0.3, 0.2, 0.5, 1.0, 1.5, 2.0, 3.3, 7.9, 12.5, 30.25], shape)
    if kind == "bessel":  # both branches of the kernels: the series below 30, the expansion above
        return np.resize([-40.0, -12.0, -2.5, -0.4, 0.3, 1.0, 2.2, 7.5, 18.0, 29.0, 31.0, 55.0], shape)
    if kind == "steps":  # never on an integer
        return rng.integers(-30, 30, shape) / 10 + 0.03
    if kind == "mvlgamma":  # mvlgamma with p = 3 needs x > 1
        return rng.uniform(1.3, 5.0, shape)
    return 2 * rng.standard_normal(shape)


def np_mvlgamma(x, p):
    return sp.multigammaln(x, p) if np.ndim(x) == 0 else np.vectorize(lambda v: sp.multigammaln(v, p))(x)


# name: (gradlab function, reference, torch function, input domain, differentiable)
UNARY = {
    "asin": (gl.asin, np.arcsin, lambda t: torch.asin(t), "unit", True),
    "arcsin": (gl.arcsin, np.arcsin, lambda t: torch.arcsin(t), "unit", True),
    "acos": (gl.acos, np.arccos, lambda t: torch.acos(t), "unit", True),
    "arccos": (gl.arccos, np.arccos, lambda t: torch.arccos(t), "unit", True),
    "atan": (gl.atan, np.arctan, lambda t: torch.atan(t), "normal", True),
    "arctan": (gl.arctan, np.arctan, lambda t: torch.arctan(t), "normal", True),
    "sinh": (gl.sinh, np.sinh, lambda t: torch.sinh(t), "normal", True),
    "cosh": (gl.cosh, np.cosh, lambda t: torch.cosh(t), "normal", True),
    "asinh": (gl.asinh, np.arcsinh, lambda t: torch.asinh(t), "normal", True),
    "arcsinh": (gl.arcsinh, np.arcsinh, lambda t: torch.arcsinh(t), "normal", True),
    "acosh": (gl.acosh, np.arccosh, lambda t: torch.acosh(t), "above_one", True),
    "arccosh": (gl.arccosh, np.arccosh, lambda t: torch.arccosh(t), "above_one", True),
    "atanh": (gl.atanh, np.arctanh, lambda t: torch.atanh(t), "unit", True),
    "arctanh": (gl.arctanh, np.arctanh, lambda t: torch.arctanh(t), "unit", True),
    "sinc": (gl.sinc, np.sinc, lambda t: torch.sinc(t), "normal", True),
    "deg2rad": (gl.deg2rad, np.deg2rad, lambda t: torch.deg2rad(t), "normal", True),
    "rad2deg": (gl.rad2deg, np.rad2deg, lambda t: torch.rad2deg(t), "normal", True),
    "log2": (gl.log2, np.log2, lambda t: torch.log2(t), "positive", True),
    "log10": (gl.log10, np.log10, lambda t: torch.log10(t), "positive", True),
    "exp2": (gl.exp2, np.exp2, lambda t: torch.exp2(t), "normal", True),
    "erfc": (gl.erfc, sp.erfc, lambda t: torch.erfc(t), "normal", True),
    "erfinv": (gl.erfinv, sp.erfinv, lambda t: torch.erfinv(t), "unit", True),
    "lgamma": (gl.lgamma, sp.gammaln, lambda t: torch.lgamma(t), "gamma", True),
    "digamma": (gl.digamma, sp.digamma, lambda t: torch.digamma(t), "gamma", True),
    "polygamma0": (lambda t: gl.polygamma(0, t), sp.digamma, lambda t: torch.polygamma(0, t), "gamma", True),
    "polygamma1": (lambda t: gl.polygamma(1, t), lambda x: sp.polygamma(1, x), lambda t: torch.polygamma(1, t),
                   "gamma", True),
    "polygamma2": (lambda t: gl.polygamma(2, t), lambda x: sp.polygamma(2, x), lambda t: torch.polygamma(2, t),
                   "gamma", True),
    "polygamma3": (lambda t: gl.polygamma(3, t), lambda x: sp.polygamma(3, x), lambda t: torch.polygamma(3, t),
                   "gamma", True),
    "mvlgamma": (lambda t: gl.mvlgamma(t, 3), lambda x: np_mvlgamma(x, 3), lambda t: torch.mvlgamma(t, 3),
                 "mvlgamma", True),
    "i0": (gl.i0, sp.i0, lambda t: torch.i0(t), "bessel", True),
    "special.i0e": (gl.special.i0e, sp.i0e, lambda t: torch.special.i0e(t), "bessel", True),
    "special.i1": (gl.special.i1, sp.i1, lambda t: torch.special.i1(t), "bessel", True),
    "special.i1e": (gl.special.i1e, sp.i1e, lambda t: torch.special.i1e(t), "bessel", True),
    "special.ndtr": (gl.special.ndtr, sp.ndtr, lambda t: torch.special.ndtr(t), "normal", True),
    "special.erfcx": (gl.special.erfcx, sp.erfcx, lambda t: torch.special.erfcx(t), "normal", True),
    "special.ndtri": (gl.special.ndtri, sp.ndtri, lambda t: torch.special.ndtri(t), "prob", True),
    "special.log_ndtr": (gl.special.log_ndtr, sp.log_ndtr, lambda t: torch.special.log_ndtr(t), "normal", True),
    "special.entr": (gl.special.entr, sp.entr, lambda t: torch.special.entr(t), "positive", True),
    "logit": (gl.logit, sp.logit, lambda t: torch.logit(t), "prob", True),
    "logit_eps": (lambda t: gl.logit(t, eps=0.2), lambda x: sp.logit(np.clip(x, 0.2, 0.8)),
                  lambda t: torch.logit(t, eps=0.2), "prob", True),
    "frac": (gl.frac, lambda x: x - np.trunc(x), lambda t: torch.frac(t), "steps", True),
    "nan_to_num": (gl.nan_to_num, np.nan_to_num, lambda t: torch.nan_to_num(t), "normal", True),
    "sgn": (gl.sgn, np.sign, lambda t: torch.sgn(t), "steps", False),
    "fix": (gl.fix, np.fix, lambda t: torch.fix(t), "steps", False),
    "negative": (gl.negative, np.negative, lambda t: torch.negative(t), "normal", True),
    "absolute": (gl.absolute, np.absolute, lambda t: torch.absolute(t), "steps", True),
    "angle": (gl.angle, np.angle, lambda t: torch.angle(t), "steps", False),
}
# PyTorch's trigamma (the polygamma(1) and the gradient of digamma) is accurate to about 1e-9;
# ours agrees with SciPy to 1e-14 (test_forward_matches_scipy_and_numpy), so those compare looser
TORCH_RTOL = {"polygamma1": 1e-8, "digamma": 1e-8, "polygamma0": 1e-8, "lgamma": 1e-8}
SMOOTH = [name for name, spec in UNARY.items() if spec[4] and name not in ("frac", "absolute", "logit_eps")]


@pytest.mark.parametrize("name", UNARY)
def test_forward_matches_scipy_and_numpy(name):
    fn, reference, _, kind, _ = UNARY[name]
    x = domain(kind)
    out = fn(leaf(x, requires_grad=False))
    assert out.dtype is gl.float64
    assert_close(out, reference(x), rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("name", [n for n, spec in UNARY.items() if spec[4]])
def test_float64_gradcheck(name):
    fn, _, _, kind, _ = UNARY[name]
    assert gradcheck(fn, (leaf(domain(kind, (2, 6), seed=1)),))


@pytest.mark.parametrize("name", ["lgamma", "digamma", "polygamma2", "erfinv", "asin", "special.i1", "logit", "sinc"])
def test_second_derivatives(name):
    fn, _, _, kind, _ = UNARY[name]
    assert gradgradcheck(fn, (leaf(domain(kind, (2, 3), seed=2)),))


@requires_torch
@pytest.mark.parametrize("name", UNARY)
def test_values_and_gradients_match_torch(name):
    fn, _, torch_fn, kind, differentiable = UNARY[name]
    x, weights = domain(kind, seed=3), domain("normal", seed=4)
    ours, theirs = leaf(x), to_torch(x, requires_grad=True)
    out, expected = fn(ours), torch_fn(theirs)
    rtol = TORCH_RTOL.get(name, 1e-10)
    assert_close(out, expected, rtol=rtol, atol=1e-12)
    (out * leaf(weights, requires_grad=False)).sum().backward()
    if not differentiable:  # piecewise constant: torch's gradient is a ZeroTensor, ours zeros
        assert not ours.grad.numpy().any()
        return
    (expected * to_torch(weights)).sum().backward()
    assert_close(ours.grad, theirs.grad, rtol=max(rtol, 1e-9), atol=1e-12)


FLOAT_RESULTS = [n for n in UNARY if n not in ("frac", "sgn", "fix", "negative", "absolute", "nan_to_num", "logit_eps")]
INTEGER_CASES = [(n, "int64") for n in FLOAT_RESULTS] + [(n, "bool") for n in FLOAT_RESULTS if n != "mvlgamma"]


@requires_torch
@pytest.mark.parametrize("name, dtype", INTEGER_CASES)  # mvlgamma(p=3) is not defined at 0 and 1, so no bool case
def test_integer_and_bool_inputs_give_the_default_float(name, dtype):
    fn, _, torch_fn, _, _ = UNARY[name]
    values = [3, 1, 2] if dtype == "int64" else [True, False, True]
    if name == "mvlgamma":
        values = [3, 2, 4]
    out, expected = fn(gl.tensor(values)), torch_fn(torch.tensor(values))
    assert out.dtype is gl.float32 and str(expected.dtype) == "torch.float32"
    assert_close(out, expected.double(), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("dtype", [gl.float16, gl.float32])
def test_narrow_floats_keep_their_dtype(dtype):
    x = gl.tensor([0.25, 0.5, 1.5], dtype=dtype)
    for fn in (gl.lgamma, gl.digamma, gl.erfinv, gl.i0, gl.asin, gl.log2, gl.erfc):
        assert fn(x.clamp(max=0.9)).dtype is dtype


def test_edges_of_the_gamma_family_follow_pytorch():
    x = gl.tensor([0.0, -0.0, -1.0, -2.5, float("inf"), float("-inf"), float("nan"), 1.0, 2.0], dtype=gl.float64)
    inf, nan = np.inf, np.nan
    np.testing.assert_array_equal(gl.lgamma(x).numpy()[[0, 1, 2, 4, 5, 7, 8]], [inf, inf, inf, inf, inf, 0, 0])
    digamma = gl.digamma(x).numpy()
    np.testing.assert_array_equal(digamma[[0, 1, 4]], [-inf, inf, inf])  # ψ's pole is signed like the zero
    assert np.isnan(digamma[[2, 5, 6]]).all()
    np.testing.assert_array_equal(gl.erfinv(gl.tensor([1.0, -1.0, 0.0])).numpy(), [inf, -inf, 0.0])
    assert np.isnan(gl.erfinv(gl.tensor([1.5, -2.0, nan])).numpy()).all()
    assert gl.polygamma(1, gl.tensor([0.0, -2.0])).tolist() == [inf, inf]


def test_erfinv_is_float64_accurate_near_plus_and_minus_one():
    x = np.concatenate([1 - np.geomspace(1e-16, 0.4, 50), -1 + np.geomspace(1e-16, 0.4, 50)])
    assert_close(gl.erfinv(gl.tensor(x, dtype=gl.float64)), sp.erfinv(x), rtol=1e-14, atol=0)


def test_normal_tails_stay_accurate_where_the_cdf_underflows():
    p = np.geomspace(1e-310, 0.4, 60)
    assert_close(gl.special.ndtri(gl.tensor(p, dtype=gl.float64)), sp.ndtri(p), rtol=1e-13)
    x = -np.geomspace(1.0, 1e4, 40)
    assert_close(gl.special.log_ndtr(gl.tensor(x, dtype=gl.float64)), sp.log_ndtr(x), rtol=1e-13)
    big = np.geomspace(1.0, 1e100, 40)
    assert_close(gl.special.erfcx(gl.tensor(big, dtype=gl.float64)), sp.erfcx(big), rtol=1e-13)
    assert gl.special.ndtri(gl.tensor([0.0, 1.0, 0.5])).tolist() == [-np.inf, np.inf, 0.0]


def test_special_function_accuracy_over_a_wide_range():
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-30, 30, 400), np.geomspace(1e-6, 1e5, 100)])
    t = gl.tensor(x, dtype=gl.float64)
    assert_close(gl.lgamma(t), sp.gammaln(x), rtol=1e-12, atol=1e-12)
    assert_close(gl.digamma(t), sp.digamma(x), rtol=1e-11, atol=1e-11)
    for n in (1, 2, 4):
        assert_close(gl.polygamma(n, t), sp.polygamma(n, x), rtol=1e-11, atol=1e-11)
    assert_close(gl.i0(t[t.abs() < 700]), sp.i0(x[np.abs(x) < 700]), rtol=1e-13)
    assert_close(gl.special.i1e(t), sp.i1e(x), rtol=1e-13, atol=1e-300)


def test_polygamma_and_mvlgamma_errors():
    with pytest.raises(RuntimeError, match=r"polygamma\(n, x\) does not support negative n .*got n=-1"):
        gl.polygamma(-1, gl.ones(2))
    with pytest.raises(RuntimeError, match=r"mvlgamma: All elements must be greater than \(p-1\)/2 = 1.0 for p=3"):
        gl.mvlgamma(gl.tensor([0.5, 2.0]), 3)
    with pytest.raises(RuntimeError, match="mvlgamma: p has to be greater than or equal to 1, got p=0"):
        gl.mvlgamma(gl.ones(2), 0)
    assert gl.ones(2).polygamma(1).tolist() == pytest.approx([np.pi ** 2 / 6] * 2)


def test_frac_refuses_integers_and_positive_refuses_bool():
    with pytest.raises(RuntimeError, match=r"frac: expected a floating-point tensor but got int64 tensor"):
        gl.frac(gl.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"positive: The `\+` operator, on a bool tensor is not supported"):
        gl.positive(gl.tensor([True]))
    x = gl.ones(3)
    assert gl.positive(x) is x and x.positive() is x  # torch.positive returns its input


@requires_torch
def test_nan_to_num_defaults_and_arguments_match_torch():
    values = [float("nan"), float("inf"), float("-inf"), 1.5]
    for dtype in ("float16", "float32", "float64"):
        ours, theirs = gl.tensor(values, dtype=dtype), torch.tensor(values, dtype=getattr(torch, dtype))
        assert ours.nan_to_num().tolist() == theirs.nan_to_num().tolist()
        assert gl.nan_to_num(ours, nan=2.0, posinf=9.0, neginf=-9.0).tolist() == [2.0, 9.0, -9.0, 1.5]
    assert gl.nan_to_num(gl.tensor([1, 2])).tolist() == [1, 2]
    x = leaf(np.array(values))
    gl.nan_to_num(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0, 1.0]


@requires_torch
def test_signbit_and_sgn():
    values = [-0.0, 0.0, -2.5, 3.0, float("-inf")]
    np.testing.assert_array_equal(gl.signbit(gl.tensor(values)).numpy(), torch.signbit(torch.tensor(values)).numpy())
    assert gl.signbit(gl.tensor([-1, 0, 2])).tolist() == [True, False, False]
    assert gl.signbit(gl.tensor([True])).tolist() == [False]
    assert gl.signbit(leaf(np.array([1.0]))).grad_fn is None  # a bool result is outside the graph
    assert gl.tensor([-3, 0, 5]).sgn().tolist() == [-1, 0, 1]


def test_sinc_at_zero_and_its_gradient():
    x = leaf(np.array([0.0, 1.0, -0.5]))
    out = gl.sinc(x)
    assert out.tolist()[0] == 1.0
    out.sum().backward()
    assert x.grad.tolist()[0] == 0.0
    assert gradcheck(gl.sinc, (leaf(np.array([0.0, 1e-3, 2.0])),))


def test_gl_special_names():
    x = gl.tensor([0.2, 0.7], dtype=gl.float64)
    assert_close(gl.special.gammaln(x), sp.gammaln(x.numpy()))
    assert_close(gl.special.psi(x), sp.digamma(x.numpy()))
    assert_close(gl.special.expit(x), sp.expit(x.numpy()))
    assert_close(gl.special.multigammaln(x + 2, 2), np_mvlgamma(x.numpy() + 2, 2))
    assert_close(gl.special.xlog1py(x, x), sp.xlog1py(x.numpy(), x.numpy()))
    assert_close(gl.special.zeta(x + 2, x), sp.zeta(x.numpy() + 2, x.numpy()))
    assert_close(gl.special.zeta(3.0, x), sp.zeta(3.0, x.numpy()))
    assert_close(gl.special.logsumexp(x, 0), np.log(np.exp(x.numpy()).sum()))


@requires_torch
def test_real_tensors_answer_the_complex_api_as_torch_does():
    x, t = gl.tensor([1.0, -2.0]), torch.tensor([1.0, -2.0])
    for name in ("conj", "conj_physical", "resolve_conj", "resolve_neg", "real"):
        assert getattr(gl, name)(x) is x and (getattr(torch, name)(t) is t)
    assert x.conj() is x and x.real is x and x.conj_physical_() is x
    assert gl.is_complex(x) is torch.is_complex(t) is False
    assert x.is_conj() is False and x.is_neg() is False and x.is_complex() is False
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        gl.imag(x)
    with pytest.raises(RuntimeError, match="imag is not implemented for tensors with non-complex dtypes"):
        x.imag


def test_apply_and_map_call_python_on_each_element():
    x = gl.tensor([1.0, 2.0, 3.0])
    assert x.apply_(lambda v: v * v) is x and x.tolist() == [1.0, 4.0, 9.0]
    assert x.map_(gl.tensor(2.0), lambda a, b: a + b).tolist() == [3.0, 6.0, 11.0]  # the other broadcasts
    assert x.map2_(gl.ones(3), gl.tensor([0.0, 1.0, 2.0]), lambda a, b, c: a - b * c).tolist() == [3.0, 5.0, 9.0]
    assert gl.tensor([[1, 2], [3, 4]]).apply_(lambda v: -v).tolist() == [[-1, -2], [-3, -4]]
    with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that requires grad"):
        gl.ones(2, requires_grad=True).apply_(abs)

"""nn.init: each scheme's distribution (bounds and moments from theory and from PyTorch's formulas),
in-place/no-grad behaviour, reproducibility, and PyTorch's error messages. The RNGs differ, so values
are compared statistically, never bit for bit."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
from gradlab.nn import init

N = 60_000  # samples per statistic: a mean is then good to about 0.4% of a standard deviation


def values(t):
    return t.detach().numpy().astype(np.float64).ravel()


def assert_moments(x, mean, std, sigmas=5.0):
    """Sample mean and standard deviation within `sigmas` standard errors of the theory."""
    n = x.size
    assert abs(x.mean() - mean) < sigmas * std / math.sqrt(n), (x.mean(), mean)
    assert abs(x.std() - std) < sigmas * std / math.sqrt(2 * n) * 1.5, (x.std(), std)


# --- gains and fans -----------------------------------------------------------------------------------


def test_calculate_gain_values():
    assert init.calculate_gain("linear") == 1 and init.calculate_gain("conv2d") == 1
    assert init.calculate_gain("sigmoid") == 1
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01**2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


@requires_torch
def test_calculate_gain_matches_torch():
    for name in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                 "sigmoid", "tanh", "relu", "leaky_relu", "selu"):
        assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    for slope in (None, 0, 0.1, 3, math.sqrt(5)):
        assert init.calculate_gain("leaky_relu", slope) == pytest.approx(torch.nn.init.calculate_gain("leaky_relu", slope))


@requires_torch
@pytest.mark.parametrize("shape", [(3, 4), (16, 8, 3, 3), (5, 2, 7), (1, 1)])
def test_fans_match_torch(shape):
    assert init._calculate_fan_in_and_fan_out(gl.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))


def test_fan_errors():
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"):
        init.xavier_uniform_(gl.empty(5))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of \['fan_in', 'fan_out'\]"):
        init.kaiming_uniform_(gl.empty(3, 4), mode="fan_avg")
    assert init._calculate_fan_in_and_fan_out(gl.empty(16, 8, 3, 3)) == (72, 144)


# --- the distributions ------------------------------------------------------------------------------------


def test_uniform_and_normal_moments():
    gl.manual_seed(0)
    x = values(init.uniform_(gl.empty(N), -2.0, 4.0))
    assert x.min() >= -2.0 and x.max() < 4.0
    assert_moments(x, 1.0, 6.0 / math.sqrt(12))
    x = values(init.uniform_(gl.empty(N)))  # default [0, 1)
    assert x.min() >= 0.0 and x.max() < 1.0
    x = values(init.normal_(gl.empty(N, dtype=gl.float64), mean=3.0, std=0.5))
    assert_moments(x, 3.0, 0.5)


def test_constant_zeros_ones_eye():
    assert np.all(values(init.constant_(gl.empty(2, 3), 0.25)) == 0.25)
    assert np.all(values(init.zeros_(gl.ones(4))) == 0.0)
    assert np.all(values(init.ones_(gl.zeros(4))) == 1.0)
    np.testing.assert_array_equal(init.eye_(gl.empty(2, 4)).numpy(), np.eye(2, 4))
    np.testing.assert_array_equal(init.eye_(gl.empty(3, 2, dtype=gl.float64)).numpy(), np.eye(3, 2))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(gl.empty(2, 2, 2))


@requires_torch
def test_deterministic_fills_match_torch():
    for g, t in ((init.eye_(gl.empty(3, 5)), torch.nn.init.eye_(torch.empty(3, 5))),
                 (init.constant_(gl.empty(2, 2), -1.5), torch.nn.init.constant_(torch.empty(2, 2), -1.5)),
                 (init.ones_(gl.empty(3)), torch.nn.init.ones_(torch.empty(3)))):
        np.testing.assert_array_equal(g.numpy(), t.numpy())
        assert str(g.dtype).split(".")[1] == str(t.dtype).split(".")[1]


@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier(gain):
    shape = (200, 300)
    bound = gain * math.sqrt(6.0 / (200 + 300))
    x = values(init.xavier_uniform_(gl.empty(*shape), gain=gain))
    assert np.abs(x).max() <= bound * (1 + 1e-6) and np.abs(x).max() > 0.99 * bound
    assert_moments(x, 0.0, bound / math.sqrt(3))
    x = values(init.xavier_normal_(gl.empty(*shape), gain=gain))
    assert_moments(x, 0.0, gain * math.sqrt(2.0 / 500))


@pytest.mark.parametrize("a, mode, nonlinearity", [(0, "fan_in", "leaky_relu"), (math.sqrt(5), "fan_in", "leaky_relu"),
                                                   (0, "fan_out", "relu"), (0.1, "FAN_IN", "tanh")])
def test_kaiming(a, mode, nonlinearity):
    shape = (60, 50, 4, 5)  # fan_in 1000, fan_out 1200
    fan = 1000 if mode.lower() == "fan_in" else 1200
    gain = init.calculate_gain(nonlinearity, a)
    std = gain / math.sqrt(fan)
    x = values(init.kaiming_uniform_(gl.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity))
    bound = math.sqrt(3.0) * std
    assert np.abs(x).max() <= bound * (1 + 1e-6) and np.abs(x).max() > 0.99 * bound
    assert_moments(x, 0.0, std)
    x = values(init.kaiming_normal_(gl.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity))
    assert_moments(x, 0.0, std)


def test_kaiming_uniform_sqrt5_is_linears_default_bound():
    """Linear's weight init, kaiming_uniform_(a=√5), is U(-1/√fan_in, 1/√fan_in)."""
    x = values(init.kaiming_uniform_(gl.empty(300, 400), a=math.sqrt(5)))
    assert np.abs(x).max() <= 1 / math.sqrt(400) * (1 + 1e-6)
    assert np.abs(x).max() > 0.99 / math.sqrt(400)


@requires_torch
@pytest.mark.parametrize("scheme, kwargs", [("xavier_uniform_", {"gain": 1.7}), ("kaiming_uniform_", {"a": math.sqrt(5)}),
                                            ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"}),
                                            ("xavier_normal_", {}), ("kaiming_normal_", {"nonlinearity": "tanh"}),
                                            ("trunc_normal_", {"std": 0.02}), ("orthogonal_", {"gain": 2.0})])
def test_spread_matches_torch(scheme, kwargs):
    """Same shape and arguments: the two frameworks' samples have the same range and spread."""
    torch.manual_seed(0)
    ours = values(getattr(init, scheme)(gl.empty(150, 40, 3), **kwargs))
    theirs = getattr(torch.nn.init, scheme)(torch.empty(150, 40, 3), **kwargs).numpy().astype(np.float64).ravel()
    assert abs(ours.std() - theirs.std()) < 0.03 * theirs.std()
    assert abs(ours.mean() - theirs.mean()) < 0.05 * theirs.std()
    assert abs(np.abs(ours).max() - np.abs(theirs).max()) < 0.25 * np.abs(theirs).max()
    if "uniform" in scheme:
        assert abs(np.abs(ours).max() - np.abs(theirs).max()) < 0.01 * np.abs(theirs).max()


def _truncated_moments(mean, std, a, b):
    phi = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2  # noqa: E731
    alpha, beta = (a - mean) / std, (b - mean) / std
    z = cdf(beta) - cdf(alpha)
    m = (phi(alpha) - phi(beta)) / z
    var = 1 + (alpha * phi(alpha) - beta * phi(beta)) / z - m * m
    return mean + std * m, std * math.sqrt(var)


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04), (0.5, 1.0, 0.0, 3.0),
                                             (0.0, 1.0, 1.5, 2.5), (0.0, 1.0, -0.1, 0.1)])
def test_trunc_normal(mean, std, a, b):
    gl.manual_seed(1)
    x = values(init.trunc_normal_(gl.empty(N, dtype=gl.float64), mean, std, a, b))
    assert x.min() >= a and x.max() <= b
    expected_mean, expected_std = _truncated_moments(mean, std, a, b)
    assert_moments(x, expected_mean, expected_std)


def test_trunc_normal_float32_stays_inside_and_warns_far_from_window():
    x = values(init.trunc_normal_(gl.empty(N), std=0.02, a=-0.04, b=0.04))
    assert x.min() >= np.float32(-0.04) and x.max() <= np.float32(0.04)
    with pytest.warns(UserWarning, match="mean is more than 2 std from \\[a, b\\] in nn.init.trunc_normal_"):
        x = values(init.trunc_normal_(gl.empty(1000), mean=10.0, a=-1.0, b=1.0))
    assert x.min() >= -1.0 and x.max() <= 1.0


@pytest.mark.parametrize("shape", [(6, 6), (4, 10), (10, 4), (8, 3, 2, 2)])
@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_orthogonal(shape, gain):
    q = init.orthogonal_(gl.empty(*shape, dtype=gl.float64), gain=gain).numpy().reshape(shape[0], -1) / gain
    rows, cols = q.shape
    gram = q @ q.T if rows <= cols else q.T @ q
    np.testing.assert_allclose(gram, np.eye(min(rows, cols)), atol=1e-12)


def test_orthogonal_float32_and_errors():
    q = init.orthogonal_(gl.empty(5, 5)).numpy()
    assert q.dtype == np.float32
    np.testing.assert_allclose(q @ q.T, np.eye(5), atol=1e-5)
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(gl.empty(4))
    assert init.orthogonal_(gl.empty(0, 3)).shape == (0, 3)


def test_orthogonal_is_uniformly_signed():
    """The sign fix makes Q Haar-distributed: its diagonal is not biased towards positive values."""
    gl.manual_seed(3)
    diag = np.concatenate([np.diag(init.orthogonal_(gl.empty(4, 4, dtype=gl.float64)).numpy()) for _ in range(500)])
    assert abs(diag.mean()) < 0.05


# --- in place, without a graph, reproducibly ----------------------------------------------------------------


@pytest.mark.parametrize("fill", [lambda t: init.uniform_(t, -1, 1), lambda t: init.normal_(t), init.xavier_uniform_,
                                  init.xavier_normal_, init.kaiming_uniform_, init.kaiming_normal_, init.trunc_normal_,
                                  init.orthogonal_, lambda t: init.constant_(t, 3.0), init.zeros_, init.ones_,
                                  init.eye_])
def test_in_place_on_a_parameter_without_recording(fill):
    p = nn.Parameter(gl.full((5, 4), 123.0))
    version = p._version_count
    assert fill(p) is p
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert p._version_count > version
    assert not np.any(p.detach().numpy() == 123.0)
    (p * 2).sum().backward()  # still a usable leaf
    assert p.grad is not None


@pytest.mark.parametrize("fill", [init.uniform_, init.normal_, init.xavier_uniform_, init.kaiming_normal_,
                                  init.trunc_normal_, init.orthogonal_])
def test_manual_seed_and_generator_reproduce(fill):
    gl.manual_seed(42)
    first = fill(gl.empty(6, 5)).numpy().copy()
    gl.manual_seed(42)
    np.testing.assert_array_equal(fill(gl.empty(6, 5)).numpy(), first)
    gen = gl.Generator().manual_seed(7)
    a = fill(gl.empty(6, 5), generator=gen).numpy().copy()
    gl.manual_seed(0)  # the default generator does not matter when one is given
    gen.manual_seed(7)
    np.testing.assert_array_equal(fill(gl.empty(6, 5), generator=gen).numpy(), a)
    assert not np.array_equal(a, first)


def test_float64_tensors_keep_their_dtype():
    for fill in (init.uniform_, init.normal_, init.trunc_normal_, init.orthogonal_, init.kaiming_uniform_):
        t = fill(gl.empty(3, 4, dtype=gl.float64))
        assert t.dtype is gl.float64


def test_zero_element_kaiming_warns():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        t = init.kaiming_uniform_(gl.empty(0, 3))
    assert t.shape == (0, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.xavier_uniform_(gl.empty(2, 3))


def test_bad_arguments():
    with pytest.raises(RuntimeError, match=r"nn.init.uniform_: expected a floating-point tensor, got a int64 tensor"):
        init.uniform_(gl.zeros(3, dtype=gl.int64))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0, but found std -1"):
        init.normal_(gl.empty(3), std=-1)
    with pytest.raises(RuntimeError, match=r"expects to return a \[from, to\) range, but found from=2 > to=1"):
        init.uniform_(gl.empty(3), 2, 1)

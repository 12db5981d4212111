"""Activation layers and their functional forms: values and gradients vs PyTorch, gradcheck, repr, in-place."""

import warnings

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck

CASES = [
    ("ReLU", {}), ("ReLU", {"inplace": True}), ("ReLU6", {}), ("ReLU6", {"inplace": True}),
    ("LeakyReLU", {}), ("LeakyReLU", {"negative_slope": 0.2, "inplace": True}),
    ("ELU", {}), ("ELU", {"alpha": 0.5}), ("SELU", {}), ("CELU", {"alpha": 2.0}),
    ("GELU", {}), ("GELU", {"approximate": "tanh"}), ("SiLU", {}), ("Mish", {}), ("Sigmoid", {}), ("Tanh", {}),
    ("Softmax", {"dim": 1}), ("LogSoftmax", {"dim": -1}), ("Softmin", {"dim": 0}),
    ("Softplus", {}), ("Softplus", {"beta": 2.0, "threshold": 5.0}), ("Softsign", {}), ("LogSigmoid", {}),
    ("Tanhshrink", {}), ("Hardtanh", {}), ("Hardtanh", {"min_val": -2.0, "max_val": 0.5}),
    ("Hardsigmoid", {}), ("Hardswish", {}), ("Threshold", {"threshold": 0.1, "value": 20.0}),
    ("GLU", {}), ("GLU", {"dim": 0}), ("PReLU", {}), ("PReLU", {"num_parameters": 4, "init": 0.1}),
]
IDS = [f"{name}-{kwargs}" for name, kwargs in CASES]

KINKS = np.array([0.0, -1.0, 1.0, -3.0, 3.0, 6.0, -2.0, 0.5, 0.1])


def with_kinks():
    """float64 values of all sizes, including the exact points where piecewise functions bend."""
    x = randn(6, 4, seed=0) * 4
    x.flat[:len(KINKS)] = KINKS
    x.flat[-3:] = [30.0, -30.0, 8.0]
    return x


def away_from_kinks():
    """Values at least 0.05 from every kink, where finite differences are meaningful."""
    x = np.linspace(-4.31, 4.31, 24).reshape(6, 4)
    assert np.abs(x.ravel()[:, None] - KINKS).min() > 0.05
    return x


@requires_torch
@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_activation_forward_and_gradients_match_torch(name, kwargs):
    gm, tm = getattr(nn, name)(**kwargs).double(), getattr(torch.nn, name)(**kwargs).double()
    x, up = with_kinks(), randn(6, 4, seed=1)
    gx, tx = gl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    go, to = gm(gx * 1.0), tm(tx * 1.0)  # * 1.0: in-place layers may not overwrite a leaf
    assert go.shape == tuple(to.shape) and go.dtype == gl.float64
    assert_close(go, to, rtol=1e-10, atol=1e-12)
    (go * gl.tensor(up[tuple(slice(n) for n in go.shape)])).sum().backward()
    (to * torch.tensor(up[tuple(slice(n) for n in to.shape)])).sum().backward()
    # PyTorch's hardsigmoid gradient multiplies by 1/6 rounded to float32 even for float64 inputs
    assert_close(gx.grad, tx.grad, rtol=1e-7 if name == "Hardsigmoid" else 1e-9, atol=1e-12)
    if name == "PReLU":
        assert_close(gm.weight.grad, tm.weight.grad, rtol=1e-9)


@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_activation_gradcheck_and_gradgradcheck(name, kwargs):
    module = getattr(nn, name)(**kwargs).double()
    x = gl.tensor(away_from_kinks(), requires_grad=True)
    assert gradcheck(lambda x: module(x * 1.0), (x,))
    assert gradgradcheck(lambda x: module(x * 1.0), (x,))


def test_prelu_gradcheck_wrt_its_weight():
    module = nn.PReLU(4).double()
    x = gl.tensor(away_from_kinks())
    assert gradcheck(lambda w: F.prelu(x, w), (module.weight,))


@requires_torch
@pytest.mark.parametrize("name, kwargs", CASES, ids=IDS)
def test_activation_repr_matches_torch(name, kwargs):
    assert repr(getattr(nn, name)(**kwargs)) == repr(getattr(torch.nn, name)(**kwargs))


def test_activation_reprs_spelled_out():
    assert repr(nn.LeakyReLU()) == "LeakyReLU(negative_slope=0.01)"
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"
    assert repr(nn.Softmax(dim=-1)) == "Softmax(dim=-1)"


@requires_torch
@pytest.mark.parametrize("name, args", [
    ("relu", ()), ("relu6", ()), ("leaky_relu", (0.3,)), ("elu", (0.7,)), ("selu", ()), ("celu", (1.5,)),
    ("gelu", ()), ("silu", ()), ("mish", ()), ("hardtanh", (-0.5, 2.0)), ("hardsigmoid", ()), ("hardswish", ()),
    ("softplus", (1.5, 3.0)), ("sigmoid", ()), ("tanh", ()), ("softsign", ()), ("logsigmoid", ()),
    ("tanhshrink", ()), ("threshold", (0.5, -1.0)), ("glu", (0,)), ("softmax", (0,)), ("log_softmax", (1,)),
    ("softmin", (1,)),
])
def test_functional_forms_match_torch(name, args):
    x = with_kinks()
    assert_close(getattr(F, name)(gl.tensor(x), *args), getattr(torch.nn.functional, name)(torch.tensor(x), *args),
                 rtol=1e-10, atol=1e-12)


@requires_torch
def test_functional_names_exist_in_torch():
    for name in F.activation.__all__:
        assert hasattr(torch.nn.functional, name), name


@requires_torch
@pytest.mark.parametrize("name, args", [("relu", ()), ("leaky_relu", (0.1,)), ("elu", (1.0,)), ("selu", ()),
                                        ("celu", (1.0,)), ("silu", ()), ("mish", ()), ("hardtanh", (-1.0, 1.0)),
                                        ("relu6", ()), ("hardsigmoid", ()), ("hardswish", ()),
                                        ("threshold", (0.2, 5.0))])
def test_inplace_functional_forms_write_into_the_input(name, args):
    x = with_kinks()
    g = gl.tensor(x)
    out = getattr(F, name)(g, *args, inplace=True)
    assert out is g
    assert_close(g, getattr(torch.nn.functional, name)(torch.tensor(x), *args))


def test_underscore_forms_are_inplace():
    x = gl.tensor([-1.0, 0.5, 3.0])
    assert F.relu_(x) is x
    assert_close(x, [0.0, 0.5, 3.0])
    assert_close(F.hardtanh_(x), [0.0, 0.5, 1.0])
    assert_close(F.leaky_relu_(gl.tensor([-2.0]), 0.5), [-1.0])
    assert_close(F.elu_(gl.tensor([0.0, 1.0])), [0.0, 1.0])
    assert_close(F.threshold_(gl.tensor([0.0, 1.0]), 0.5, 9.0), [9.0, 1.0])


@requires_torch
@pytest.mark.parametrize("shape", [(5,), (2, 3), (2, 3, 4), (2, 3, 4, 5)])
def test_softmax_without_dim_warns_and_picks_torchs_dim(shape):
    x = randn(*shape, seed=2)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax has been deprecated"):
        out = nn.Softmax()(gl.tensor(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = torch.nn.Softmax()(torch.tensor(x))
    assert_close(out, expected, rtol=1e-12)
    with pytest.warns(UserWarning, match="Implicit dimension choice for log_softmax"):
        F.log_softmax(gl.tensor(x))


def test_softmax_dtype_argument_converts_first():
    assert F.softmax(gl.randn(3, 4), dim=1, dtype=gl.float64).dtype == gl.float64
    assert F.log_softmax(gl.randn(3, 4), 1, dtype=gl.float64).dtype == gl.float64


def test_extreme_inputs_stay_finite():
    x = gl.tensor([-1000.0, -50.0, 0.0, 50.0, 1000.0], dtype=gl.float32, requires_grad=True)
    for fn in (F.logsigmoid, F.mish, F.softplus, F.silu, F.selu, F.hardswish, F.gelu):
        out = fn(x)
        assert np.isfinite(out.detach().numpy()).all(), fn.__name__
        (grad,) = gl.autograd.grad(out.sum(), x)
        assert np.isfinite(grad.numpy()).all(), fn.__name__
    assert_close(F.logsigmoid(x)[0], -1000.0)


def test_prelu_default_initialisation_and_channels():
    module = nn.PReLU(3)
    assert_close(module.weight.detach(), np.full(3, 0.25, dtype=np.float32))
    out = module(gl.tensor([[[-4.0], [-4.0], [4.0]]]))
    assert_close(out, [[[-1.0], [-1.0], [4.0]]])
    assert_close(F.prelu(gl.tensor([-2.0, 2.0]), gl.tensor([0.5])), [-1.0, 2.0])


def test_activation_errors_are_clear():
    with pytest.raises(RuntimeError, match=r"glu: Halving dimension must be even, but dimension 1 is size 5"):
        F.glu(gl.randn(3, 5), 1)
    with pytest.raises(RuntimeError, match=r"prelu: Mismatch of parameter numbers and input channel size. Found "
                                           r"parameter numbers = 4 and channel size = 3"):
        nn.PReLU(4)(gl.randn(2, 3))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        F.hardtanh(gl.randn(3), 1.0, -1.0)
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh'"):
        nn.GELU("fast")(gl.randn(3))
    with pytest.raises(RuntimeError, match="mish: expected a floating-point tensor"):
        F.mish(gl.tensor([1, 2]))


def test_activation_layers_have_no_parameters_except_prelu():
    for name, kwargs in CASES:
        params = list(getattr(nn, name)(**kwargs).parameters())
        assert len(params) == (1 if name == "PReLU" else 0), name

"""Linear, Bilinear, Identity, Flatten, Unflatten and F.linear / F.bilinear."""

import math

import numpy as np
import pytest
from helpers import assert_close, noncontiguous_leaf, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def copy_from_torch(layer, torch_layer):
    layer.load_state_dict({k: gl.tensor(v.detach().numpy()) for k, v in torch_layer.state_dict().items()})


def check_against_torch(layer, torch_layer, *xs):
    copy_from_torch(layer, torch_layer)
    gxs = [gl.tensor(x, requires_grad=True) for x in xs]
    txs = [torch.tensor(x, requires_grad=True) for x in xs]
    out, t_out = layer(*gxs), torch_layer(*txs)
    assert_close(out, t_out, rtol=1e-10, atol=1e-12)
    seed = randn(*out.shape, seed=9)
    out.backward(gl.tensor(seed))
    t_out.backward(torch.tensor(seed))
    for g, t in zip(gxs, txs):
        assert_close(g.grad, t.grad, rtol=1e-10, atol=1e-12)
    for p, tp in zip(layer.parameters(), torch_layer.parameters()):
        assert_close(p.grad, tp.grad, rtol=1e-10, atol=1e-12)


# --- Linear ---------------------------------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,), (2, 1, 2, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(shape, bias):
    check_against_torch(nn.Linear(3, 4, bias=bias).double(), torch.nn.Linear(3, 4, bias=bias).double(), randn(*shape))


def test_linear_against_numpy():
    x, w, b = randn(6, 3), randn(2, 3, seed=1), randn(2, seed=2)
    out = F.linear(gl.tensor(x), gl.tensor(w), gl.tensor(b))
    assert_close(out, x @ w.T + b)
    assert_close(F.linear(gl.tensor(x), gl.tensor(w)), x @ w.T)


def test_linear_gradcheck_and_gradgradcheck():
    gl.manual_seed(0)
    layer = nn.Linear(3, 2).double()
    x = gl.tensor(randn(2, 2, 3), requires_grad=True)
    assert gradcheck(lambda x, *params: layer(x), (x, *layer.parameters()))
    w, b = layer.weight, layer.bias
    assert gradgradcheck(lambda x, w, b: F.linear(x, w, b).tanh(), (x, w, b))
    xt = noncontiguous_leaf(randn(3, 4)).t()  # non-contiguous (4, 3)
    assert gradcheck(lambda x, w: F.linear(x, w), (xt, w))


def test_linear_skips_gradients_nobody_asked_for():
    layer = nn.Linear(3, 2)
    layer.weight.requires_grad_(False)
    x = gl.randn(4, 3, requires_grad=True)
    layer(x).sum().backward()
    assert layer.weight.grad is None and layer.bias.grad is not None and x.grad is not None


@requires_torch
def test_linear_repr_matches_torch():
    for args, kwargs in [((784, 128), {}), ((3, 4), dict(bias=False))]:
        assert repr(nn.Linear(*args, **kwargs)) == repr(torch.nn.Linear(*args, **kwargs))
    assert repr(nn.Linear(784, 128)) == "Linear(in_features=784, out_features=128, bias=True)"


def test_linear_default_init_statistics():
    """kaiming_uniform_(a=√5) gives U(±1/√fan_in) for the weight; the bias is U(±1/√fan_in) as well."""
    gl.manual_seed(0)
    layer = nn.Linear(256, 512)
    bound = 1 / math.sqrt(256)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    assert w.shape == (512, 256) and b.shape == (512,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert abs(b.std() - bound / math.sqrt(3)) < 0.1 * bound
    assert layer.weight.dtype == gl.float32 and layer.weight.requires_grad
    assert nn.Linear(2, 3, dtype=gl.float64).weight.dtype == gl.float64
    assert [n for n, _ in nn.Linear(2, 3).named_parameters()] == ["weight", "bias"]
    assert nn.Linear(2, 3, bias=False).bias is None


@requires_torch
def test_linear_init_matches_torch_bounds():
    torch.manual_seed(0)
    t = torch.nn.Linear(100, 300)
    layer = nn.Linear(100, 300)
    for p, tp in zip(layer.parameters(), t.parameters()):
        p, tp = p.detach().numpy(), tp.detach().numpy()
        assert abs(np.abs(p).max() - np.abs(tp).max()) < 0.01 * np.abs(tp).max()
        assert abs(p.std() - tp.std()) < 0.1 * tp.std()


def test_linear_errors_name_the_layer():
    layer = nn.Linear(784, 128)
    with pytest.raises(RuntimeError, match=r"Linear\(784→128\): expected input with 784 features in the last "
                                           r"dimension, got input of shape \(32, 783\)"):
        layer(gl.zeros(32, 783))
    with pytest.raises(RuntimeError, match=r"Linear\(784→128\): input \(float64\) and weight \(float32\) must have "
                                           r"the same dtype"):
        layer(gl.zeros(2, 784, dtype=gl.float64))
    with pytest.raises(RuntimeError, match=r"linear: expected input with 3 features .* got input of shape \(\)"):
        F.linear(gl.tensor(1.0), gl.zeros(2, 3))


# --- Bilinear --------------------------------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(bias):
    check_against_torch(nn.Bilinear(3, 2, 4, bias=bias).double(), torch.nn.Bilinear(3, 2, 4, bias=bias).double(),
                        randn(5, 3), randn(5, 2, seed=1))
    assert repr(nn.Bilinear(3, 2, 4, bias=bias)) == repr(torch.nn.Bilinear(3, 2, 4, bias=bias))


def test_bilinear_definition_gradcheck_and_init():
    x1, x2, w, b = randn(2, 3), randn(2, 2, seed=1), randn(4, 3, 2, seed=2), randn(4, seed=3)
    out = F.bilinear(gl.tensor(x1), gl.tensor(x2), gl.tensor(w), gl.tensor(b))
    assert_close(out, np.einsum("ni,oij,nj->no", x1, w, x2) + b)
    layer = nn.Bilinear(3, 2, 4).double()
    a, c = gl.tensor(x1, requires_grad=True), gl.tensor(x2, requires_grad=True)
    assert gradcheck(lambda a, c, *params: layer(a, c), (a, c, *layer.parameters()))
    gl.manual_seed(0)
    big = nn.Bilinear(25, 4, 200)
    bound = 1 / math.sqrt(25)
    assert np.abs(big.weight.detach().numpy()).max() <= bound
    assert abs(big.weight.detach().numpy().std() - bound / math.sqrt(3)) < 0.05 * bound
    with pytest.raises(RuntimeError, match=r"Bilinear\(3×2→4\): input2 size does not match weight size: expected 2"):
        layer(gl.zeros(2, 3, dtype=gl.float64), gl.zeros(2, 3, dtype=gl.float64))


# --- Identity, Flatten, Unflatten --------------------------------------------------------------------

def test_identity():
    x = gl.randn(2, 3)
    assert nn.Identity(54, unused="argument")(x) is x
    assert repr(nn.Identity()) == "Identity()"


def test_flatten_unflatten():
    x = gl.tensor(randn(2, 3, 4, 5), requires_grad=True)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 20))(nn.Flatten()(x)).shape == (2, 3, 20)
    assert nn.Unflatten(-1, (-1, 2, 2))(nn.Flatten()(x)).shape == (2, 15, 2, 2)
    assert gradcheck(lambda x: nn.Unflatten(1, (2, 30))(nn.Flatten()(x)), (x,))
    if torch is not None:
        assert repr(nn.Flatten()) == repr(torch.nn.Flatten())
        assert repr(nn.Unflatten(1, (2, 5))) == repr(torch.nn.Unflatten(1, (2, 5)))

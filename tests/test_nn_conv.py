"""Convolution layers and functions: Conv1d/Conv2d, ConvTranspose1d/2d, F.conv*, F.unfold/fold, window primitives."""

import math

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck
from gradlab.backends.contract import Backend
from gradlab.backends.numpy_backend import NumpyBackend


def copy_from_torch(layer, torch_layer):
    """Give a gradlab layer the torch layer's parameters (float64)."""
    layer.load_state_dict({k: gl.tensor(v.detach().numpy()) for k, v in torch_layer.state_dict().items()})
    return layer


def check_against_torch(layer, torch_layer, x, grad_input=True):
    """Same weights, same input: the outputs and the gradients for input, weight and bias must agree."""
    copy_from_torch(layer, torch_layer)
    gx = gl.tensor(x, requires_grad=grad_input)
    tx = torch.tensor(x, requires_grad=grad_input)
    out, t_out = layer(gx), torch_layer(tx)
    assert_close(out, t_out, rtol=1e-9, atol=1e-10)
    seed = randn(*out.shape, seed=7)
    out.backward(gl.tensor(seed))
    t_out.backward(torch.tensor(seed))
    if grad_input:
        assert_close(gx.grad, tx.grad, rtol=1e-9, atol=1e-10)
    for (name, p), (_, tp) in zip(layer.named_parameters(), torch_layer.named_parameters()):
        assert_close(p.grad, tp.grad, rtol=1e-9, atol=1e-10), name


def torch_double(layer):
    return layer.double()


# --- Conv2d / Conv1d vs PyTorch ------------------------------------------------------------------

CONV2D_CASES = [
    dict(kernel_size=3, padding=1),
    dict(kernel_size=3, stride=2),
    dict(kernel_size=(2, 3), stride=(2, 1), padding=(1, 0)),
    dict(kernel_size=3, dilation=2, padding=2),
    dict(kernel_size=(3, 2), dilation=(1, 2), stride=(1, 2)),
    dict(kernel_size=3, groups=2),
    dict(kernel_size=1, groups=2, bias=False),
    dict(kernel_size=4, padding="same"),
    dict(kernel_size=(2, 3), padding="same", dilation=(3, 1)),
    dict(kernel_size=3, padding="valid", stride=(1, 3)),
    dict(kernel_size=3, padding=2, stride=3, dilation=2, groups=2, bias=False),
]


@requires_torch
@pytest.mark.parametrize("kwargs", CONV2D_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_conv2d_matches_torch(kwargs):
    layer = nn.Conv2d(4, 6, **kwargs).double()
    torch_layer = torch.nn.Conv2d(4, 6, **kwargs).double()
    check_against_torch(layer, torch_layer, randn(2, 4, 9, 8))


@requires_torch
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv2d_padding_modes_match_torch(mode):
    layer = nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode).double()
    torch_layer = torch.nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode=mode).double()
    check_against_torch(layer, torch_layer, randn(2, 2, 6, 7))


@requires_torch
def test_conv2d_same_padding_with_mode_and_unbatched_input():
    layer = nn.Conv2d(2, 3, (2, 4), padding="same", padding_mode="reflect").double()
    torch_layer = torch.nn.Conv2d(2, 3, (2, 4), padding="same", padding_mode="reflect").double()
    check_against_torch(layer, torch_layer, randn(2, 5, 6))
    out = layer(gl.tensor(randn(2, 5, 6)))
    assert out.shape == (3, 5, 6)


@requires_torch
@pytest.mark.parametrize("kwargs", [dict(kernel_size=3), dict(kernel_size=2, stride=2, padding=1),
                                    dict(kernel_size=3, dilation=2, groups=2, padding="same"),
                                    dict(kernel_size=4, padding="same", bias=False)])
def test_conv1d_matches_torch(kwargs):
    layer = nn.Conv1d(4, 6, **kwargs).double()
    torch_layer = torch.nn.Conv1d(4, 6, **kwargs).double()
    check_against_torch(layer, torch_layer, randn(3, 4, 11))


@requires_torch
def test_conv2d_weight_gradient_when_input_needs_none():
    layer = nn.Conv2d(1, 4, 3, padding=1).double()
    torch_layer = torch.nn.Conv2d(1, 4, 3, padding=1).double()
    check_against_torch(layer, torch_layer, randn(2, 1, 7, 7), grad_input=False)


@requires_torch
def test_conv2d_float32_matches_torch():
    layer, torch_layer = nn.Conv2d(3, 5, 3, padding=1), torch.nn.Conv2d(3, 5, 3, padding=1)
    copy_from_torch(layer, torch_layer)
    x = randn(2, 3, 8, 8, dtype=np.float32)
    out = layer(gl.tensor(x))
    assert out.dtype == gl.float32
    assert_close(out, torch_layer(torch.tensor(x)), rtol=1e-4, atol=1e-5)


def test_conv2d_against_a_direct_sum():
    """Without torch: each output is the sum over channels and taps of input × weight (cross-correlation)."""
    x, w, b = randn(1, 2, 5, 6), randn(3, 2, 2, 3, seed=1), randn(3, seed=2)
    out = F.conv2d(gl.tensor(x), gl.tensor(w), gl.tensor(b), stride=(2, 1), padding=1).numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    expected = np.zeros((1, 3, 3, 6))
    for o in range(3):
        for i in range(3):
            for j in range(6):
                expected[0, o, i, j] = (xp[0, :, 2 * i:2 * i + 2, j:j + 3] * w[o]).sum() + b[o]
    assert_close(out, expected)


def test_conv_output_shapes():
    assert nn.Conv2d(1, 16, 3, padding=1)(gl.zeros(2, 1, 28, 28)).shape == (2, 16, 28, 28)
    assert nn.Conv2d(1, 16, 5, stride=2)(gl.zeros(2, 1, 28, 28)).shape == (2, 16, 12, 12)
    assert nn.Conv2d(2, 4, 4, padding="same")(gl.zeros(1, 2, 7, 6)).shape == (1, 4, 7, 6)
    assert nn.Conv1d(2, 4, 3, dilation=2)(gl.zeros(5, 2, 10)).shape == (5, 4, 6)
    assert nn.Conv2d(3, 6, 3)(gl.zeros(3, 5, 5)).shape == (6, 3, 3)  # unbatched (C, H, W)


# --- transposed convolution ------------------------------------------------------------------------

TRANSPOSE_CASES = [
    dict(kernel_size=3),
    dict(kernel_size=3, stride=2, padding=1, output_padding=1),
    dict(kernel_size=(2, 3), stride=(2, 3), padding=(0, 1), output_padding=(1, 2)),
    dict(kernel_size=3, dilation=2, padding=1, groups=2),
    dict(kernel_size=2, stride=1, dilation=3, output_padding=2, bias=False),
    dict(kernel_size=4, stride=2, padding=3, groups=2, bias=False),
]


@requires_torch
@pytest.mark.parametrize("kwargs", TRANSPOSE_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_conv_transpose2d_matches_torch(kwargs):
    layer = nn.ConvTranspose2d(4, 6, **kwargs).double()
    torch_layer = torch.nn.ConvTranspose2d(4, 6, **kwargs).double()
    check_against_torch(layer, torch_layer, randn(2, 4, 5, 6))


@requires_torch
def test_conv_transpose2d_output_size_and_1d():
    layer = nn.ConvTranspose2d(3, 2, 3, stride=2).double()
    torch_layer = torch.nn.ConvTranspose2d(3, 2, 3, stride=2).double()
    copy_from_torch(layer, torch_layer)
    x = randn(1, 3, 4, 4)
    out = layer(gl.tensor(x), output_size=(10, 9))
    assert out.shape == (1, 2, 10, 9)
    assert_close(out, torch_layer(torch.tensor(x), output_size=(10, 9)), rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match="valid sizes range from 9 to 10"):
        layer(gl.tensor(x), output_size=(12, 9))
    kwargs = dict(stride=2, padding=1, output_padding=1)
    layer, torch_layer = nn.ConvTranspose1d(3, 4, 3, **kwargs), torch.nn.ConvTranspose1d(3, 4, 3, **kwargs)
    check_against_torch(layer.double(), torch_layer.double(), randn(2, 3, 7))


def test_conv_transpose_is_the_adjoint_of_conv():
    """<conv(x, w), y> == <x, conv_transpose(y, w)>: the transpose sends each output back through the weight."""
    x, w, y = randn(2, 4, 7, 8), randn(6, 2, 3, 2, seed=1), randn(2, 6, 4, 4, seed=2)
    kwargs = dict(stride=2, padding=1, dilation=(1, 2), groups=2)
    conv = F.conv2d(gl.tensor(x), gl.tensor(w), **kwargs).numpy()
    back = F.conv_transpose2d(gl.tensor(y), gl.tensor(w), output_padding=(0, 1), **kwargs).numpy()
    assert back.shape == x.shape
    assert math.isclose((conv * y).sum(), (x * back).sum(), rel_tol=1e-10)


# --- gradcheck (float64, small) -------------------------------------------------------------------

def layer_gradcheck(layer, x):
    layer = layer.double()
    x = gl.tensor(x, requires_grad=True)
    assert gradcheck(lambda x, *params: layer(x), (x, *layer.parameters()))


def test_gradcheck_conv_layers():
    gl.manual_seed(0)
    layer_gradcheck(nn.Conv2d(4, 4, (2, 3), stride=(2, 1), padding=1, dilation=(1, 2), groups=2), randn(2, 4, 5, 6))
    layer_gradcheck(nn.Conv2d(2, 3, 3, padding="same", padding_mode="circular"), randn(1, 2, 4, 4))
    layer_gradcheck(nn.Conv1d(2, 3, 3, stride=2, padding=1), randn(2, 2, 7))
    layer_gradcheck(nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1, groups=2), randn(1, 4, 3, 3))
    layer_gradcheck(nn.ConvTranspose1d(2, 3, 2, stride=3, dilation=2), randn(2, 2, 3))


def test_gradcheck_noncontiguous_input():
    w = gl.tensor(randn(3, 2, 2, 2), requires_grad=True)
    x = gl.tensor(randn(1, 5, 4, 2)).permute(0, 3, 2, 1).detach().requires_grad_()  # (1, 2, 4, 5), non-contiguous
    assert not x.is_contiguous()
    assert gradcheck(lambda x, w: F.conv2d(x, w, padding=1), (x, w))


def test_gradgradcheck_conv2d_and_transpose():
    x = gl.tensor(randn(1, 2, 4, 5), requires_grad=True)
    w = gl.tensor(randn(4, 1, 2, 3, seed=1), requires_grad=True)
    b = gl.tensor(randn(4, seed=2), requires_grad=True)
    assert gradgradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(1, 2), padding=1, dilation=(2, 1), groups=2),
                         (x, w, b))
    wt = gl.tensor(randn(2, 3, 2, 2, seed=3), requires_grad=True)
    assert gradgradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, output_padding=1), (x, wt))


@requires_torch
def test_double_backward_matches_torch():
    """The gradient of a penalty on the input gradient (as in gradient penalties) agrees with PyTorch."""
    x, w = randn(2, 3, 6, 6), randn(4, 3, 3, 3, seed=1)
    gx, gw = gl.tensor(x, requires_grad=True), gl.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    (g,) = gl.autograd.grad(F.conv2d(gx, gw, stride=2, padding=1).tanh().sum(), gx, create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.conv2d(tx, tw, stride=2, padding=1).tanh().sum(), tx,
                                create_graph=True)
    (g * g).sum().backward()
    (tg * tg).sum().backward()
    assert_close(gw.grad, tw.grad, rtol=1e-9, atol=1e-10)
    assert_close(gx.grad, tx.grad, rtol=1e-9, atol=1e-10)


# --- repr and initialisation ------------------------------------------------------------------------

REPR_CASES = [
    ("Conv2d", (1, 16, 3), dict(padding=1)),
    ("Conv2d", (1, 16, (3, 5)), dict(stride=2, dilation=2, bias=False, padding_mode="reflect")),
    ("Conv2d", (4, 8, 3), dict(padding="same", groups=2)),
    ("Conv2d", (4, 8, 3), dict(padding="valid")),
    ("Conv1d", (2, 4, 3), dict()),
    ("ConvTranspose2d", (4, 2, 3), dict(stride=2, output_padding=1)),
    ("ConvTranspose2d", (4, 2, 3), dict(padding=1, dilation=2, groups=2, bias=False)),
    ("ConvTranspose1d", (4, 2, 3), dict(stride=(2,))),
]


@pytest.mark.parametrize("name,args,kwargs", REPR_CASES)
def test_repr_matches_torch(name, args, kwargs):
    text = repr(getattr(nn, name)(*args, **kwargs))
    if torch is not None:
        assert text == repr(getattr(torch.nn, name)(*args, **kwargs))
    assert text.startswith(name + "(")


def test_repr_text():
    assert repr(nn.Conv2d(1, 16, 3, padding=1)) == "Conv2d(1, 16, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))"


@pytest.mark.parametrize("layer,fan_in", [(lambda: nn.Conv2d(8, 64, 3), 72),
                                           (lambda: nn.Conv1d(6, 128, 5, groups=2), 15),
                                           (lambda: nn.ConvTranspose2d(64, 8, 3, groups=2), 36)])
def test_default_init_statistics(layer, fan_in):
    """kaiming_uniform_(a=√5) is U(±1/√fan_in) for the weight, and the bias is U(±1/√fan_in) too."""
    gl.manual_seed(0)
    conv = layer()
    bound = 1 / math.sqrt(fan_in)
    w, b = conv.weight.detach().numpy(), conv.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert abs(w.mean()) < 0.05 * bound
    assert conv.weight.dtype == gl.float32 and conv.weight.requires_grad


def test_factory_kwargs_and_reset():
    conv = nn.Conv2d(2, 3, 3, dtype=gl.float64)
    assert conv.weight.dtype == gl.float64 and conv.bias.dtype == gl.float64
    before = conv.weight.detach().numpy().copy()
    conv.reset_parameters()
    assert not np.array_equal(before, conv.weight.detach().numpy())
    assert nn.Conv2d(2, 3, 3, bias=False).bias is None
    assert [name for name, _ in nn.ConvTranspose2d(2, 3, 3).named_parameters()] == ["weight", "bias"]
    assert nn.ConvTranspose2d(4, 6, (3, 2), groups=2).weight.shape == (4, 3, 3, 2)


# --- errors -------------------------------------------------------------------------------------------

def test_wrong_input_rank_names_the_layer():
    conv = nn.Conv2d(1, 16, 3)
    with pytest.raises(RuntimeError, match=r"Conv2d\(1→16, 3×3\): expected a 4-D input \(N, C, H, W\) or 3-D "
                                           r"\(C, H, W\), got 2-D input of shape \(28, 28\)"):
        conv(gl.zeros(28, 28))
    with pytest.raises(RuntimeError, match=r"Conv2d\(1→16, 3×3\): expected a 4-D input .* got 5-D input of shape "
                                           r"\(1, 1, 1, 28, 28\)"):
        conv(gl.zeros(1, 1, 1, 28, 28))
    with pytest.raises(RuntimeError, match=r"Conv1d\(2→4, 3\): expected a 3-D input \(N, C, L\) or 2-D \(C, L\)"):
        nn.Conv1d(2, 4, 3)(gl.zeros(1, 2, 3, 4))


def test_channel_mismatch():
    with pytest.raises(RuntimeError, match=r"Conv2d\(3→8, 3×3\): Given groups=1, weight of size \[8, 3, 3, 3\], "
                                           r"expected input\[2, 1, 8, 8\] to have 3 channels, but got 1 channels"):
        nn.Conv2d(3, 8, 3)(gl.zeros(2, 1, 8, 8))
    with pytest.raises(RuntimeError, match=r"expected input\[1, 4, 5, 5\] to have 2 channels"):
        nn.ConvTranspose2d(2, 3, 3)(gl.zeros(1, 4, 5, 5))


def test_kernel_larger_than_padded_input():
    with pytest.raises(RuntimeError, match=r"Conv2d\(1→2, 5×5\): Calculated padded input size per channel: "
                                           r"\(4 x 6\)\. Kernel size: \(5 x 5\)\. Kernel size can't be greater"):
        nn.Conv2d(1, 2, 5, padding=(1, 0))(gl.zeros(1, 1, 2, 6))
    with pytest.raises(RuntimeError, match=r"Kernel size: \(5 x 5\)"):  # dilation 2 makes a 3×3 kernel reach 5
        F.conv2d(gl.zeros(1, 1, 4, 4), gl.zeros(1, 1, 3, 3), dilation=2)


def test_construction_errors():
    with pytest.raises(ValueError, match="Conv2d: in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="Conv2d: out_channels must be divisible by groups"):
        nn.Conv2d(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="groups must be a positive integer"):
        nn.Conv1d(4, 4, 3, groups=0)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="Invalid padding string 'full'"):
        nn.Conv2d(1, 1, 3, padding="full")
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")
    with pytest.raises(RuntimeError, match="stride must be positive"):
        nn.Conv2d(1, 1, 3, stride=0)


def test_functional_errors():
    x = gl.zeros(1, 2, 5, 5)
    with pytest.raises(ValueError, match="padding='same' is not supported for strided convolutions"):
        F.conv2d(x, gl.zeros(2, 2, 3, 3), stride=2, padding="same")
    with pytest.raises(RuntimeError, match=r"conv2d: input \(float32\), weight \(float64\) must have the same dtype"):
        F.conv2d(x, gl.zeros(2, 2, 3, 3, dtype=gl.float64))
    with pytest.raises(RuntimeError, match="expected bias of shape"):
        F.conv2d(x, gl.zeros(3, 2, 3, 3), gl.zeros(2))
    with pytest.raises(RuntimeError, match="output padding must be smaller than either stride or dilation"):
        F.conv_transpose2d(x, gl.zeros(2, 2, 3, 3), output_padding=1)
    with pytest.raises(RuntimeError, match="expected padding to be a single integer value or a list of 2 values"):
        F.conv2d(x, gl.zeros(2, 2, 3, 3), padding=(1, 1, 1))


# --- unfold / fold and the window primitives -----------------------------------------------------------

@requires_torch
def test_unfold_fold_match_torch():
    x = randn(2, 3, 7, 6)
    kwargs = dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=(1, 2))
    cols = F.unfold(gl.tensor(x), **kwargs)
    t_cols = torch.nn.functional.unfold(torch.tensor(x), **kwargs)
    assert_close(cols, t_cols)
    c = randn(*cols.shape, seed=3)
    assert_close(F.fold(gl.tensor(c), (7, 6), **kwargs), torch.nn.functional.fold(torch.tensor(c), (7, 6), **kwargs))


def test_unfold_fold_gradients():
    x = gl.tensor(randn(1, 2, 4, 5), requires_grad=True)
    assert gradcheck(lambda x: F.unfold(x, 2, padding=1, stride=(2, 1)), (x,))
    c = gl.tensor(randn(2 * 4, 6), requires_grad=True)  # unbatched columns
    assert gradgradcheck(lambda c: F.fold(c, (3, 4), 2, stride=(2, 1), padding=(1, 0)) ** 2, (c,))
    with pytest.raises(RuntimeError, match=r"fold: expected input of shape \(N, C × 4, 6\)"):
        F.fold(gl.zeros(1, 8, 5), (3, 4), 2, stride=(2, 1), padding=(1, 0))


@pytest.mark.parametrize("window,steps,dilation", [((3, 2), (1, 1), (1, 1)), ((2, 3), (2, 3), (2, 1)),
                                                    ((1, 3), (3, 1), (1, 2))])
def test_window_primitives(window, steps, dilation):
    """numpy's strided view equals the composed fallback, and fold_windows is its adjoint."""
    a = randn(2, 3, 9, 8)
    backend = NumpyBackend()
    view = backend.sliding_windows(a, window, (2, 3), steps, dilation)
    assert np.shares_memory(view, a)
    composed = Backend.sliding_windows(backend, a, window, (2, 3), steps, dilation)
    np.testing.assert_array_equal(view, composed)
    (i, j), (ki, kj) = (1, 1), (window[0] - 1, window[1] - 1)
    np.testing.assert_array_equal(view[..., i, j, ki, kj],
                                  a[..., i * steps[0] + ki * dilation[0], j * steps[1] + kj * dilation[1]])
    g = randn(*view.shape, seed=1)
    folded = backend.fold_windows(g, a.shape, (2, 3), steps, dilation)
    np.testing.assert_allclose(folded, Backend.fold_windows(backend, g, a.shape, (2, 3), steps, dilation))
    assert math.isclose((view * g).sum(), (a * folded).sum(), rel_tol=1e-12)


def test_second_backward_with_retained_graph():
    """The weight gradient's columns are kept from forward once; a second backward recomputes them."""
    x, w = gl.tensor(randn(2, 3, 5, 5), requires_grad=True), gl.tensor(randn(4, 3, 3, 3, seed=1), requires_grad=True)
    loss = F.conv2d(x, w, padding=1).tanh().sum()
    loss.backward(retain_graph=True)
    first = w.grad.numpy().copy()
    loss.backward()
    assert_close(w.grad, 2 * first)


@requires_torch
def test_small_cnn_matches_torch():
    """The MNIST-style stack: conv, ReLU, max-pool twice, flatten, linear — outputs and every gradient."""
    def build(nn_):
        return nn_.Sequential(nn_.Conv2d(1, 4, 3, padding=1), nn_.ReLU(), nn_.MaxPool2d(2),
                              nn_.Conv2d(4, 8, 3, padding=1), nn_.ReLU(), nn_.MaxPool2d(2),
                              nn_.Flatten(), nn_.Linear(8 * 2 * 2, 3))
    model, torch_model = build(nn).double(), build(torch.nn).double()
    check_against_torch(model, torch_model, randn(5, 1, 8, 8))

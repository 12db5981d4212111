"""Pooling: MaxPool1d/2d, AvgPool1d/2d, AdaptiveAvgPool2d and their functional forms."""

import math

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def compare(fn, torch_fn, x):
    """Forward values (and indices, when returned) and input gradients agree with PyTorch."""
    gx, tx = gl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = fn(gx), torch_fn(tx)
    if isinstance(t_out, tuple):
        np.testing.assert_array_equal(out[1].numpy(), t_out[1].numpy())
        assert out[1].dtype == gl.int64
        out, t_out = out[0], t_out[0]
    assert_close(out, t_out, rtol=1e-12, atol=1e-12)
    seed = randn(*out.shape, seed=5)
    out.backward(gl.tensor(seed))
    t_out.backward(torch.tensor(seed))
    assert_close(gx.grad, tx.grad, rtol=1e-12, atol=1e-12)


def inputs():
    rng = np.random.default_rng(1)
    return [randn(2, 3, 9, 8),
            np.maximum(randn(2, 3, 9, 8, seed=2), 0),  # ties at 0, as after a ReLU: the first tap must win
            rng.integers(0, 3, (2, 3, 9, 8)).astype(np.float64)]


MAX_CASES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(2, 3), stride=(1, 2)),
             dict(kernel_size=3, stride=1, dilation=2, padding=1), dict(kernel_size=3, stride=2, ceil_mode=True),
             dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True, dilation=(1, 2))]


@requires_torch
@pytest.mark.parametrize("kwargs", MAX_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_max_pool2d_matches_torch(kwargs):
    for x in inputs():
        compare(lambda t: F.max_pool2d(t, return_indices=True, **kwargs),
                lambda t: torch.nn.functional.max_pool2d(t, return_indices=True, **kwargs), x)
    layer, torch_layer = nn.MaxPool2d(**kwargs), torch.nn.MaxPool2d(**kwargs)
    compare(layer, torch_layer, randn(3, 9, 8))  # unbatched
    assert repr(layer) == repr(torch_layer)


@requires_torch
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True),
                                    dict(kernel_size=2, stride=1, dilation=3)])
def test_max_pool1d_matches_torch(kwargs):
    for x in inputs():
        x = x.reshape(2, 9, 24)
        compare(lambda t: F.max_pool1d(t, return_indices=True, **kwargs),
                lambda t: torch.nn.functional.max_pool1d(t, return_indices=True, **kwargs), x)
    assert repr(nn.MaxPool1d(**kwargs)) == repr(torch.nn.MaxPool1d(**kwargs))


AVG_CASES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
             dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
             dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
             dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True, count_include_pad=False),
             dict(kernel_size=3, stride=2, ceil_mode=True, divisor_override=4)]


@requires_torch
@pytest.mark.parametrize("kwargs", AVG_CASES, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_avg_pool2d_matches_torch(kwargs):
    compare(lambda t: F.avg_pool2d(t, **kwargs), lambda t: torch.nn.functional.avg_pool2d(t, **kwargs),
            randn(2, 3, 9, 8))
    layer, torch_layer = nn.AvgPool2d(**kwargs), torch.nn.AvgPool2d(**kwargs)
    compare(layer, torch_layer, randn(3, 9, 8))
    assert repr(layer) == repr(torch_layer)


@requires_torch
@pytest.mark.parametrize("kwargs", [dict(kernel_size=3), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True),
                                    dict(kernel_size=4, stride=3, padding=2, count_include_pad=False)])
def test_avg_pool1d_matches_torch(kwargs):
    compare(lambda t: F.avg_pool1d(t, **kwargs), lambda t: torch.nn.functional.avg_pool1d(t, **kwargs), randn(2, 3, 11))
    layer, torch_layer = nn.AvgPool1d(**kwargs), torch.nn.AvgPool1d(**kwargs)
    compare(layer, torch_layer, randn(3, 11))
    assert repr(layer) == repr(torch_layer)


@requires_torch
@pytest.mark.parametrize("size", [1, (2, 4), (3, None), (4, 3), (5, 7), 9, (None, 10)])
def test_adaptive_avg_pool2d_matches_torch(size):
    compare(lambda t: F.adaptive_avg_pool2d(t, size), lambda t: torch.nn.functional.adaptive_avg_pool2d(t, size),
            randn(2, 3, 9, 8))
    layer, torch_layer = nn.AdaptiveAvgPool2d(size), torch.nn.AdaptiveAvgPool2d(size)
    compare(layer, torch_layer, randn(3, 9, 8))
    assert repr(layer) == repr(torch_layer)


# --- without torch: the definitions ---------------------------------------------------------------

def test_max_pool2d_values_indices_and_gradient():
    x = np.array([[[[1., 5., 2., 0.],
                    [3., 5., 9., 9.],
                    [0., 0., -1., -2.],
                    [0., 4., -3., -4.]]]])
    t = gl.tensor(x, requires_grad=True)
    out, indices = F.max_pool2d(t, 2, return_indices=True)
    assert_close(out, [[[[5., 9.], [4., -1.]]]])
    np.testing.assert_array_equal(indices.numpy(), [[[[1, 6], [13, 10]]]])  # the first of tied maxima wins
    out.sum().backward()
    expected = np.zeros_like(x)
    expected.flat[[1, 6, 13, 10]] = 1
    assert_close(t.grad, expected)


def test_overlapping_windows_add_their_gradients():
    x = gl.tensor([[[0., 1., 9., 1., 0.]]], requires_grad=True)
    F.max_pool1d(x, 3, stride=1).sum().backward()  # 9 wins all three windows
    assert_close(x.grad, [[[0., 0., 3., 0., 0.]]])


def test_avg_pool2d_against_window_means():
    x = randn(1, 2, 5, 4)
    out = F.avg_pool2d(gl.tensor(x), 2, stride=(2, 1), padding=(1, 0), count_include_pad=False).numpy()
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (0, 0)), constant_values=np.nan)
    expected = np.array([[[[np.nanmean(xp[0, c, 2 * i:2 * i + 2, j:j + 2]) for j in range(3)] for i in range(3)]
                          for c in range(2)]])
    assert_close(out, expected)


def test_adaptive_avg_pool2d_uneven_windows():
    x = randn(1, 1, 5, 3)
    out = F.adaptive_avg_pool2d(gl.tensor(x), (3, 2)).numpy()
    rows, cols = [(0, 2), (1, 4), (3, 5)], [(0, 2), (1, 3)]  # [floor(i·n/o), ceil((i+1)·n/o))
    expected = [[x[0, 0, a:b, c:d].mean() for c, d in cols] for a, b in rows]
    assert_close(out[0, 0], expected)


def test_max_pool_nan_and_integers():
    x = gl.tensor([[[1., float("nan"), 3., 2.]]])
    out = F.max_pool1d(x, 2).numpy()
    assert math.isnan(out[0, 0, 0]) and out[0, 0, 1] == 3
    ints = gl.arange(16).reshape(1, 1, 4, 4)
    pooled = F.max_pool2d(ints, 2, padding=1)
    assert pooled.dtype == gl.int64
    np.testing.assert_array_equal(pooled.numpy(), [[[[0, 2, 3], [8, 10, 11], [12, 14, 15]]]])


def test_output_shapes_and_dtype():
    x = gl.zeros(2, 16, 28, 28)
    assert nn.MaxPool2d(2)(x).shape == (2, 16, 14, 14)
    assert nn.AvgPool2d(3, stride=2, padding=1)(x).shape == (2, 16, 14, 14)
    assert nn.MaxPool2d(3, stride=2, ceil_mode=True)(gl.zeros(1, 1, 6, 6)).shape == (1, 1, 3, 3)
    assert nn.AdaptiveAvgPool2d((1, 1))(x).shape == (2, 16, 1, 1)
    assert F.avg_pool2d(x, 2).dtype == gl.float32


# --- gradcheck ------------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda t: F.max_pool2d(t, 3, 2, 1),
    lambda t: F.max_pool2d(t, 2),  # windows that tile the input (H = 5: the last row is cropped off)
    lambda t: F.max_pool2d(t, (2, 3), 1, dilation=(2, 1), ceil_mode=True),
    lambda t: F.max_pool1d(t.flatten(2), 3, 2, ceil_mode=True),
    lambda t: F.avg_pool2d(t, 3, 2, 1, ceil_mode=True, count_include_pad=False),
    lambda t: F.avg_pool1d(t.flatten(2), 4, 3, padding=1),
    lambda t: F.adaptive_avg_pool2d(t, (4, 4)),
    lambda t: F.adaptive_avg_pool2d(t, (5, 3)),
], ids=["max2d", "max2d-tiles", "max2d-dilated", "max1d", "avg2d", "avg1d", "adaptive-uneven", "adaptive-even"])
def test_gradcheck_and_gradgradcheck(fn):
    x = gl.tensor(randn(1, 2, 5, 6), requires_grad=True)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


# --- errors ---------------------------------------------------------------------------------------

def test_errors():
    with pytest.raises(RuntimeError, match=r"max_pool2d: expected a 4-D input \(N, C, H, W\) or 3-D \(C, H, W\), "
                                           r"got 2-D input of shape \(4, 4\)"):
        F.max_pool2d(gl.zeros(4, 4), 2)
    with pytest.raises(RuntimeError, match="pad should be smaller than or equal to half of kernel size"):
        F.max_pool2d(gl.zeros(1, 1, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match="avg_pool2d: pad should be smaller than or equal to half"):
        nn.AvgPool2d(3, padding=2)(gl.zeros(1, 1, 8, 8))
    with pytest.raises(RuntimeError, match=r"Given input size: \(1x2x2\)\. Calculated output size: \(1x0x0\)\. "
                                           r"Output size is too small"):
        F.max_pool2d(gl.zeros(1, 1, 2, 2), 3)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(gl.zeros(1, 1, 4, 4), 2, divisor_override=0)
    with pytest.raises(RuntimeError, match="stride must be positive"):
        F.avg_pool1d(gl.zeros(1, 1, 4), 2, stride=0)

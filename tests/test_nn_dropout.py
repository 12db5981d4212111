"""Dropout, Dropout1d/2d/3d and F.dropout*: statistics, scaling, gradients, seeding, eval mode, errors."""

import numpy as np
import pytest
from helpers import assert_close, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_zeroes_a_fraction_p_and_scales_the_rest(p):
    gl.manual_seed(0)
    x = gl.ones(200_000)
    out = F.dropout(x, p).numpy()
    zeroed = np.mean(out == 0)
    assert abs(zeroed - p) < 0.005  # the standard error is about 0.001
    np.testing.assert_allclose(out[out != 0], 1 / (1 - p), rtol=1e-6)
    assert abs(out.mean() - 1) < 0.02  # the expected value is kept


def test_dropout_gradient_is_the_same_mask():
    gl.manual_seed(1)
    x = gl.tensor(np.random.default_rng(0).uniform(1, 2, (50, 40)), requires_grad=True)
    out = F.dropout(x, 0.3)
    out.sum().backward()
    mask = out.detach().numpy() / x.detach().numpy()  # 0 or 1/(1-p) where the element was kept
    assert set(np.round(np.unique(mask), 6)) == {0.0, round(1 / 0.7, 6)}
    assert_close(x.grad, mask, rtol=1e-12)
    assert out.dtype == gl.float64


def test_dropout_is_reproducible_under_manual_seed():
    x = gl.ones(1000)
    gl.manual_seed(42)
    a = F.dropout(x, 0.5).numpy()
    b = F.dropout(x, 0.5).numpy()
    gl.manual_seed(42)
    c = F.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, b)
    gl.manual_seed(42)
    layer = nn.Dropout(0.5)
    np.testing.assert_array_equal(layer(x).numpy(), a)


def test_dropout_is_the_identity_in_eval_and_for_p_zero():
    x = gl.randn(4, 5)
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    layer = nn.Dropout(0.5)
    layer.eval()
    assert layer(x) is x
    layer.train()
    assert not np.array_equal(layer(gl.ones(100)).numpy(), np.ones(100))


def test_dropout_p_one_zeroes_everything():
    x = gl.randn(3, 4, requires_grad=True)
    out = F.dropout(x, 1.0)
    assert_close(out, np.zeros((3, 4)))
    out.sum().backward()
    assert_close(x.grad, np.zeros((3, 4)))


def test_dropout_inplace_writes_into_the_input():
    gl.manual_seed(3)
    x = gl.ones(100)
    out = F.dropout(x, 0.5, inplace=True)
    assert out is x
    assert (x.numpy() == 0).any() and (x.numpy() == 2).any()
    y = gl.ones(10, requires_grad=True) * 1.0  # a non-leaf: in-place is recorded
    gl.manual_seed(4)
    nn.Dropout(0.5, inplace=True)(y).sum().backward()


def test_dropout2d_zeroes_whole_channels():
    gl.manual_seed(5)
    x = gl.ones(8, 16, 5, 5)
    out = nn.Dropout2d(0.5)(x).numpy()
    per_channel = out.reshape(8, 16, -1)
    zero = (per_channel == 0).all(-1)
    kept = (per_channel == 2.0).all(-1)
    assert (zero | kept).all()
    assert 0.3 < zero.mean() < 0.7


def test_dropout2d_on_3d_input_warns_and_treats_it_as_n_c_l():
    gl.manual_seed(6)
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        out = F.dropout2d(gl.ones(4, 32, 10), 0.5).numpy()
    assert ((out == 0).all(-1) | (out == 2).all(-1)).all()


def test_dropout1d_and_dropout3d_mask_shapes():
    gl.manual_seed(7)
    out = F.dropout1d(gl.ones(64, 6), 0.5).numpy()  # (C, L): whole rows
    assert ((out == 0).all(-1) | (out == 2).all(-1)).all()
    out = nn.Dropout3d(0.5)(gl.ones(2, 32, 2, 2, 2)).numpy().reshape(2, 32, -1)
    assert ((out == 0).all(-1) | (out == 2).all(-1)).all()
    out = F.dropout3d(gl.ones(32, 2, 2, 2), 0.5).numpy().reshape(32, -1)  # unbatched (C, D, H, W)
    assert ((out == 0).all(-1) | (out == 2).all(-1)).all()
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"):
        F.dropout1d(gl.ones(2, 3, 4, 5))


def test_dropout_probability_outside_zero_one_is_refused():
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, but got {p}"):
            F.dropout(gl.ones(3), p)
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            nn.Dropout(p)
        with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
            F.dropout2d(gl.ones(2, 3, 4, 4), p)


def test_dropout_of_an_integer_tensor_is_refused():
    with pytest.raises(RuntimeError, match="dropout: expected a floating-point tensor"):
        F.dropout(gl.tensor([1, 2, 3]), 0.5)


@requires_torch
@pytest.mark.parametrize("name", ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d"])
def test_dropout_repr_matches_torch(name):
    assert repr(getattr(nn, name)()) == repr(getattr(torch.nn, name)())
    assert repr(getattr(nn, name)(0.2, inplace=True)) == repr(getattr(torch.nn, name)(0.2, inplace=True))
    assert repr(nn.Dropout(0.5)) == "Dropout(p=0.5, inplace=False)"


def test_dropout_float32_stays_float32():
    gl.manual_seed(8)
    assert F.dropout(gl.randn(10), 0.5).dtype == gl.float32
    assert F.dropout(gl.randn(10, dtype=gl.float16), 0.5).dtype == gl.float16

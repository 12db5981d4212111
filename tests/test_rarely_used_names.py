"""Names real programs use now and then: the last legacy types, RNN base classes, 3-D and fractional pooling."""

import numpy as np
import pytest

import gradlab as gl
from helpers import assert_close, randn, requires_torch, torch

F = gl.nn.functional


@pytest.mark.parametrize("name, dtype", [("CharTensor", gl.int8), ("HalfTensor", gl.float16), ("IntTensor", gl.int32),
                                         ("ShortTensor", gl.int16)])
def test_legacy_types_make_their_dtype(name, dtype):
    t = getattr(gl, name)([1, 2])
    assert t.dtype is dtype and isinstance(t, getattr(gl, name)) and t.tolist() == [1, 2]


def test_detach_in_place_and_is_cuda():
    y = gl.ones(2, requires_grad=True) * 2
    assert y.detach_() is y and y.grad_fn is None and not y.requires_grad
    assert y.is_cuda is False


def test_rnn_layers_share_their_base_classes():
    assert isinstance(gl.nn.LSTM(2, 3), gl.nn.RNNBase) and isinstance(gl.nn.GRUCell(2, 3), gl.nn.RNNCellBase)


@requires_torch
def test_adaptive_max_pool3d_matches_torch():
    x = randn(1, 2, 4, 5, 6)
    assert_close(F.adaptive_max_pool3d(gl.tensor(x), (2, 3, 2)),
                 torch.nn.functional.adaptive_max_pool3d(torch.tensor(x), (2, 3, 2)))


@requires_torch
@pytest.mark.parametrize("name", ["upsample_bilinear", "upsample_nearest"])
def test_the_deprecated_upsample_functions_match_torch(name):
    x = randn(1, 2, 3, 4)
    with pytest.warns(UserWarning):
        ours = getattr(F, name)(gl.tensor(x), scale_factor=2)
    with pytest.warns(UserWarning):
        theirs = getattr(torch.nn.functional, name)(torch.tensor(x), scale_factor=2)
    assert_close(ours, theirs)


def test_fractional_max_pooling_returns_windows_maxima_and_their_indices():
    gl.manual_seed(0)
    x = gl.randn(1, 2, 8, 8)
    out, where = F.fractional_max_pool2d_with_indices(x, 2, output_size=(4, 4))
    assert out.shape == where.shape == (1, 2, 4, 4)
    np.testing.assert_array_equal(out.numpy(), x.reshape(1, 2, -1).gather(2, where.reshape(1, 2, -1)).reshape(
        1, 2, 4, 4).numpy())
    pooled = gl.nn.FractionalMaxPool3d(2, output_size=(2, 2, 2))(gl.randn(1, 1, 5, 5, 5))
    assert pooled.shape == (1, 1, 2, 2, 2)


def test_grid_sample_modes_and_memory_formats_are_named():
    assert "bilinear" in F.GRID_SAMPLE_INTERPOLATION_MODES and "border" in F.GRID_SAMPLE_PADDING_MODES
    assert gl.randn(1, 1, 2, 2, 2).contiguous(memory_format=gl.channels_last_3d).shape == (1, 1, 2, 2, 2)

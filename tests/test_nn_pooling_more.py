"""3-D pooling, LP pooling, max-unpooling and adaptive (max and average) pooling in 1-3 dims."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def leaf(*shape, seed=0):
    return gl.tensor(randn(*shape, seed=seed), requires_grad=True)


ADAPTIVE = [(1, (2, 3, 7), [3, 7, 2, 1]), (2, (2, 2, 7, 5), [(3, 2), (4, 4), (7, 5), (2, None), 1]),
            (3, (1, 2, 5, 4, 6), [(2, 3, 4), 1, (None, 2, 5)])]


@requires_torch
@pytest.mark.parametrize("nd, shape, sizes", ADAPTIVE, ids=["1d", "2d", "3d"])
def test_adaptive_pooling_matches_torch(nd, shape, sizes):
    x = randn(*shape)
    ties = np.round(x)  # ties: the first largest (in row-major order) must win, as in PyTorch
    for size in sizes:
        for data in (x, ties):
            compare_modules(getattr(nn, f"AdaptiveMaxPool{nd}d")(size, return_indices=True),
                            getattr(torch.nn, f"AdaptiveMaxPool{nd}d")(size, return_indices=True), data)
        compare_modules(getattr(nn, f"AdaptiveAvgPool{nd}d")(size), getattr(torch.nn, f"AdaptiveAvgPool{nd}d")(size), x)
    unbatched = randn(*shape[1:])
    compare_modules(getattr(nn, f"AdaptiveMaxPool{nd}d")(sizes[0]),
                    getattr(torch.nn, f"AdaptiveMaxPool{nd}d")(sizes[0]), unbatched)
    out, where = getattr(F, f"adaptive_max_pool{nd}d_with_indices")(gl.tensor(x), sizes[0])
    t_out, t_where = getattr(torch.nn.functional, f"adaptive_max_pool{nd}d_with_indices")(torch.tensor(x), sizes[0])
    assert_close(out, t_out)
    np.testing.assert_array_equal(where.numpy(), t_where.numpy())


def test_adaptive_pooling_gradcheck():
    assert gradcheck(lambda t: F.adaptive_max_pool2d(t, (2, 3)), (leaf(1, 2, 5, 4),))
    assert gradgradcheck(lambda t: F.adaptive_max_pool1d(t, 3), (leaf(1, 2, 7),))
    assert gradcheck(lambda t: F.adaptive_avg_pool3d(t, (2, 1, 3)), (leaf(1, 1, 3, 2, 5),))
    assert gradcheck(lambda t: F.adaptive_avg_pool1d(t, 4), (leaf(2, 1, 7),))


def test_adaptive_pooling_errors():
    with pytest.raises(RuntimeError, match="adaptive_max_pool2d: output_size must be 2, got 3 sizes"):
        F.adaptive_max_pool2d(gl.ones(1, 1, 4, 4), (1, 2, 3))
    with pytest.raises(RuntimeError, match=r"adaptive_avg_pool1d: expected a 3-D input \(N, C, L\) or 2-D \(C, L\), "
                                           r"got 4-D input"):
        F.adaptive_avg_pool1d(gl.ones(1, 1, 4, 4), 2)
    with pytest.raises(RuntimeError, match="greater than or equal to 0"):
        F.adaptive_max_pool1d(gl.ones(1, 1, 4), -1)


@requires_torch
def test_3d_pooling_matches_torch():
    x = randn(2, 2, 5, 4, 6)
    for kwargs in [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=(1, 2, 3))]:
        compare_modules(nn.MaxPool3d(**kwargs, return_indices=True), torch.nn.MaxPool3d(**kwargs, return_indices=True),
                        x)
        compare_modules(nn.AvgPool3d(**kwargs), torch.nn.AvgPool3d(**kwargs), x)
    compare_modules(nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
                    torch.nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False, ceil_mode=True), x)
    compare_modules(nn.MaxPool3d(2), torch.nn.MaxPool3d(2), x[0])  # unbatched
    out, where = F.max_pool3d_with_indices(gl.tensor(x), 2)
    np.testing.assert_array_equal(where.numpy(), torch.nn.functional.max_pool3d_with_indices(torch.tensor(x), 2)[1])
    assert gradcheck(lambda t: F.max_pool3d(t, 2, stride=1), (leaf(1, 1, 3, 3, 3),))
    assert gradcheck(lambda t: F.avg_pool3d(t, 2, padding=1), (leaf(1, 1, 3, 2, 3),))


@requires_torch
def test_max_pool_with_indices_always_returns_both():
    x = randn(2, 3, 8)
    for nd, data in ((1, x), (2, x.reshape(2, 3, 4, 2))):
        out, where = getattr(F, f"max_pool{nd}d_with_indices")(gl.tensor(data), 2)
        t_out, t_where = getattr(torch.nn.functional, f"max_pool{nd}d_with_indices")(torch.tensor(data), 2)
        assert_close(out, t_out)
        np.testing.assert_array_equal(where.numpy(), t_where.numpy())


@requires_torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_lp_pooling_matches_torch(nd):
    x = np.abs(randn(2, 2, *([5] * nd))) + 0.1
    for norm_type, kwargs in [(2, dict(kernel_size=2)), (3, dict(kernel_size=3, stride=1)),
                              (1.5, dict(kernel_size=2, ceil_mode=True))]:
        compare_modules(getattr(nn, f"LPPool{nd}d")(norm_type, **kwargs),
                        getattr(torch.nn, f"LPPool{nd}d")(norm_type, **kwargs), x)
    fn = getattr(F, f"lp_pool{nd}d")
    assert gradcheck(lambda t: fn(t, 2, 2), (gl.tensor(np.abs(randn(1, 1, *([3] * nd))) + 0.5, requires_grad=True),))


@requires_torch
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_matches_torch(nd):
    layer, t_layer = getattr(nn, f"MaxUnpool{nd}d")(2), getattr(torch.nn, f"MaxUnpool{nd}d")(2)
    for n, size in ((4, None), (5, (5,) * nd), (5, (2, 2) + (5,) * nd)):
        x = randn(2, 2, *([n] * nd))
        pooled, where = getattr(F, f"max_pool{nd}d")(gl.tensor(x), 2, return_indices=True)
        t_pooled, t_where = getattr(torch.nn.functional, f"max_pool{nd}d")(torch.tensor(x), 2, return_indices=True)
        p, tp = gl.tensor(pooled.numpy(), requires_grad=True), torch.tensor(t_pooled.numpy(), requires_grad=True)
        out, t_out = layer(p, where, output_size=size), t_layer(tp, t_where, output_size=size)
        assert_close(out, t_out)
        seed = randn(*out.shape, seed=2)
        out.backward(gl.tensor(seed))
        t_out.backward(torch.tensor(seed))
        assert_close(p.grad, tp.grad)
    assert repr(layer) == repr(t_layer)
    unpool = getattr(F, f"max_unpool{nd}d")
    assert gradcheck(lambda t: unpool(t, where, 2, output_size=size), (gl.tensor(pooled.numpy(), requires_grad=True),))


def test_max_unpool_errors():
    x = gl.ones(1, 1, 2, 2)
    where = gl.zeros(1, 1, 2, 2, dtype=gl.int64)
    with pytest.raises(ValueError, match=r"max_unpool2d: invalid output_size \"\[9, 9\]\""):
        F.max_unpool2d(x, where, 2, output_size=(9, 9))
    with pytest.raises(RuntimeError, match="max_unpool2d: Found an invalid max index: 16"):
        F.max_unpool2d(x, where + 16, 2)
    with pytest.raises(RuntimeError, match="expected indices to be an int64 tensor of the input's shape"):
        F.max_unpool2d(x, where.float(), 2)


@requires_torch
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2, output_size=(5, 4)),
                                    dict(kernel_size=3, output_ratio=(0.5, 0.5)),
                                    dict(kernel_size=(2, 3), output_size=(8, 6))], ids=["size", "ratio", "rect"])
def test_fractional_max_pool2d_matches_torch_for_given_samples(kwargs):
    samples = np.random.default_rng(3).random((2, 3, 2))
    layer = nn.FractionalMaxPool2d(**kwargs, return_indices=True, _random_samples=gl.tensor(samples))
    t_layer = torch.nn.FractionalMaxPool2d(**kwargs, return_indices=True, _random_samples=torch.tensor(samples))
    compare_modules(layer, t_layer, randn(2, 3, 9, 8), load=False)


@requires_torch
def test_fractional_max_pool3d_matches_torch_for_given_samples():
    samples = np.random.default_rng(3).random((2, 2, 3))
    out, where = F.fractional_max_pool3d_with_indices(gl.tensor(randn(2, 2, 6, 7, 5)), 2, output_size=(4, 5, 3),
                                                      _random_samples=gl.tensor(samples))
    t_out, t_where = torch.nn.functional.fractional_max_pool3d(torch.tensor(randn(2, 2, 6, 7, 5)), 2,
                                                               output_size=(4, 5, 3), return_indices=True,
                                                               _random_samples=torch.tensor(samples))
    assert_close(out, t_out)
    np.testing.assert_array_equal(where.numpy(), t_where.numpy())


def test_fractional_max_pool_draws_windows_and_checks_its_arguments():
    gl.manual_seed(0)
    x = leaf(2, 3, 10, 10)
    out = F.fractional_max_pool2d(x, 3, output_ratio=0.5)
    assert out.shape == (2, 3, 5, 5)
    samples = gl.tensor(np.random.default_rng(0).random((2, 3, 2)))
    assert gradcheck(lambda t: F.fractional_max_pool2d(t, 2, output_size=(4, 3), _random_samples=samples),
                     (leaf(2, 3, 6, 5),))
    with pytest.raises(ValueError, match="FractionalMaxPool2d requires specifying either an output size, or a "
                                         "pooling ratio"):
        nn.FractionalMaxPool2d(2)
    with pytest.raises(ValueError, match="output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(RuntimeError, match="fractional_max_pool2d\\(\\): pool height 3 too large relative to input "
                                           "height 4"):
        F.fractional_max_pool2d(gl.ones(1, 1, 4, 4), 3, output_size=(3, 2))

"""Hardshrink, Softshrink, RReLU, Softmax2d, the in-place selu_/celu_/rrelu_, gumbel_softmax, and the SELU
dropouts (AlphaDropout, FeatureAlphaDropout)."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck


def leaf(*shape, seed=0):
    return gl.tensor(randn(*shape, seed=seed), requires_grad=True)


@requires_torch
def test_shrink_and_softmax2d_layers_match_torch():
    x = randn(2, 3, 4, 5)
    compare_modules(nn.Hardshrink(), torch.nn.Hardshrink(), x)
    compare_modules(nn.Hardshrink(0.3), torch.nn.Hardshrink(0.3), x)
    compare_modules(nn.Softshrink(0.7), torch.nn.Softshrink(0.7), x)
    compare_modules(nn.Softmax2d(), torch.nn.Softmax2d(), x)
    compare_modules(nn.Softmax2d(), torch.nn.Softmax2d(), x[0])


@requires_torch
def test_rrelu_in_evaluation_is_leaky_relu_with_the_mean_slope():
    x = randn(3, 4)
    layer, t_layer = nn.RReLU(0.1, 0.3), torch.nn.RReLU(0.1, 0.3)
    layer.eval(), t_layer.eval()
    compare_modules(layer, t_layer, x)
    assert repr(nn.RReLU(0.1, 0.2, inplace=True)) == repr(torch.nn.RReLU(0.1, 0.2, inplace=True))
    assert_close(F.rrelu(gl.tensor(x)), torch.nn.functional.rrelu(torch.tensor(x)))


def test_rrelu_in_training_draws_a_slope_per_element_between_lower_and_upper():
    gl.manual_seed(0)
    x = -gl.ones(2000, dtype=gl.float64)
    slopes = -F.rrelu(x, 0.2, 0.5, training=True).numpy()
    assert slopes.min() >= 0.2 and slopes.max() <= 0.5 and len(np.unique(slopes)) > 1000
    assert abs(slopes.mean() - 0.35) < 0.01
    positive = gl.tensor([1.0, 2.0])
    assert F.rrelu(positive, training=True).numpy().tolist() == [1.0, 2.0]
    gl.manual_seed(1)
    x = leaf(3, 4)
    out = F.rrelu(x, training=True)
    out.sum().backward()  # the gradient is the drawn slope where x < 0, 1 elsewhere
    assert_close(x.grad, (out / x).detach())


@requires_torch
def test_inplace_activations_write_into_their_input():
    for name in ("selu_", "celu_"):
        x = gl.tensor(randn(3, 4))
        out = getattr(F, name)(x)
        assert out is x
        assert_close(x, getattr(torch.nn.functional, name)(torch.tensor(randn(3, 4))))
    x = gl.tensor(randn(5))
    assert F.rrelu_(x) is x
    assert_close(x, torch.nn.functional.rrelu(torch.tensor(randn(5))))


def test_shrink_gradcheck_and_errors():
    x = gl.tensor(randn(3, 4) + np.sign(randn(3, 4)) * 0.1, requires_grad=True)  # away from the kinks
    assert gradcheck(lambda t: F.hardshrink(t, 0.4), (x,))
    assert gradcheck(lambda t: F.softshrink(t, 0.4), (x,))
    with pytest.raises(RuntimeError, match="lambda must be greater or equal to 0, but found to be -1"):
        F.softshrink(x, -1)
    with pytest.raises(ValueError, match=r"Softmax2d: expected input to be 3D or 4D, got 2D instead"):
        nn.Softmax2d()(gl.ones(2, 2))


def test_gumbel_softmax_samples_the_softmax_distribution():
    gl.manual_seed(0)
    logits = gl.tensor(np.log([[0.2, 0.5, 0.3]]).repeat(20000, 0))
    hard = F.gumbel_softmax(logits, tau=0.5, hard=True).numpy()
    assert set(np.unique(hard)) == {0.0, 1.0} and (hard.sum(1) == 1).all()
    np.testing.assert_allclose(hard.mean(0), [0.2, 0.5, 0.3], atol=0.015)
    soft = F.gumbel_softmax(logits[:5], tau=2.0).numpy()
    np.testing.assert_allclose(soft.sum(1), 1)


def test_gumbel_softmax_hard_passes_the_soft_gradient():
    logits = leaf(4, 3)
    gl.manual_seed(3)
    hard = F.gumbel_softmax(logits, hard=True)
    gl.manual_seed(3)
    same_logits = leaf(4, 3)
    soft = F.gumbel_softmax(same_logits, hard=False)  # the same noise: the soft sample behind the hard one
    weights = gl.tensor(randn(4, 3, seed=1))
    (hard * weights).sum().backward()
    (soft * weights).sum().backward()
    assert_close(hard, np.eye(3)[soft.detach().numpy().argmax(1)])
    assert_close(logits.grad, same_logits.grad)


def test_alpha_dropout_keeps_mean_and_variance_of_standard_inputs():
    gl.manual_seed(0)
    x = gl.tensor(randn(200000))
    out = F.alpha_dropout(x, 0.3, training=True).numpy()
    assert abs(out.mean()) < 0.01 and abs(out.var() - 1) < 0.02
    dropped = np.isclose(out, 1.7580993408473766 * (0.3 - 1) / np.sqrt((1.7580993408473766 ** 2 * 0.3 + 1) * 0.7))
    assert abs(dropped.mean() - 0.3) < 0.01
    assert F.alpha_dropout(x, 0.3) is x  # training=False by default, as in PyTorch
    assert (F.alpha_dropout(x, 1.0, training=True).numpy() == 0).all()


def test_feature_alpha_dropout_drops_whole_channels():
    gl.manual_seed(0)
    x = gl.tensor(randn(8, 16, 5))
    out = F.feature_alpha_dropout(x, 0.5, training=True).numpy()
    a = 1 / np.sqrt((1.7580993408473766 ** 2 * 0.5 + 1) * 0.5)
    dropped = np.isclose(out, a * 1.7580993408473766 * (0.5 - 1)).all(axis=2)
    kept = np.isclose(out, a * x.numpy() + a * 1.7580993408473766 * 0.5).all(axis=2)
    assert (dropped | kept).all() and dropped.any() and kept.any()
    layer = nn.FeatureAlphaDropout(0.5)
    layer.eval()
    assert layer(x) is x


@requires_torch
def test_alpha_dropout_layers_print_as_torch_and_gradients_follow_the_mask():
    assert repr(nn.AlphaDropout(0.3)) == repr(torch.nn.AlphaDropout(0.3))
    assert repr(nn.FeatureAlphaDropout()) == repr(torch.nn.FeatureAlphaDropout())
    gl.manual_seed(0)
    x = leaf(50)
    out = nn.AlphaDropout(0.5)(x)
    out.sum().backward()
    scale = x.grad.numpy()
    a = 1 / np.sqrt((1.7580993408473766 ** 2 * 0.5 + 1) * 0.5)
    assert set(np.round(np.unique(scale), 12)) == {0.0, round(a, 12)}

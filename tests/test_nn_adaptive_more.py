"""AdaptiveLogSoftmaxWithLoss against PyTorch: loss, per-row output, log_prob, predict, gradients and errors."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import load_torch_state

import gradlab as gl
import gradlab.nn as nn
from gradlab.autograd import gradcheck


def pair(**kwargs):
    layer = nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], div_value=2.0, **kwargs)
    t_layer = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [4, 10, 15], div_value=2.0, **kwargs)
    load_torch_state(layer, t_layer)
    return layer, t_layer


@requires_torch
@pytest.mark.parametrize("head_bias", [False, True])
def test_adaptive_log_softmax_matches_torch(head_bias):
    layer, t_layer = pair(head_bias=head_bias)
    assert repr(layer) == repr(t_layer)
    x, target = randn(6, 8), np.array([0, 5, 12, 19, 3, 11])
    gx, tx = gl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = layer(gx, gl.tensor(target)), t_layer(tx, torch.tensor(target))
    assert out._fields == ("output", "loss")
    assert_close(out.output, t_out.output)
    assert_close(out.loss, t_out.loss)
    out.loss.backward()
    t_out.loss.backward()
    assert_close(gx.grad, tx.grad)
    for (name, p), (_, t_p) in zip(layer.named_parameters(), t_layer.named_parameters()):
        assert_close(p.grad, t_p.grad)
    assert_close(layer.log_prob(gl.tensor(x)), t_layer.log_prob(torch.tensor(x)))
    many = randn(60, 8, seed=2) * 3  # some rows predicted in the head, some in a cluster
    np.testing.assert_array_equal(layer.predict(gl.tensor(many)).numpy(), t_layer.predict(torch.tensor(many)).numpy())


@requires_torch
def test_adaptive_log_softmax_unbatched_and_normalised():
    layer, t_layer = pair()
    x = randn(8)
    out, t_out = layer(gl.tensor(x), gl.tensor(7)), t_layer(torch.tensor(x), torch.tensor(7))
    assert_close(out.output, t_out.output)
    probs = layer.log_prob(gl.tensor(randn(3, 8))).exp().sum(1)
    assert_close(probs, np.ones(3))
    assert int(layer.predict(gl.tensor(x))) == int(t_layer.predict(torch.tensor(x[None]))[0])  # torch: batches only


def test_adaptive_log_softmax_gradcheck():
    gl.manual_seed(0)
    layer = nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2, 4], div_value=1.0).double()
    target = gl.tensor([0, 3, 5])
    assert gradcheck(lambda x: layer(x, target).loss, (gl.tensor(randn(3, 4), requires_grad=True),))


def test_adaptive_log_softmax_errors():
    with pytest.raises(ValueError, match="cutoffs should be a sequence of unique, positive integers sorted"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5, 3])
    with pytest.raises(ValueError, match="cutoffs should be a sequence of length larger than 0"):
        nn.AdaptiveLogSoftmaxWithLoss(8, 10, [])
    layer = nn.AdaptiveLogSoftmaxWithLoss(8, 10, [5])
    with pytest.raises(RuntimeError, match=r"Target values should be in \[0, 9\], but values in range \[0, 12\]"):
        layer(gl.ones(2, 8), gl.tensor([0, 12]))
    with pytest.raises(RuntimeError, match="Input and target should have the same size in the batch dimension"):
        layer(gl.ones(2, 8), gl.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="0D or 1D target tensor expected, multi-target not supported"):
        layer(gl.ones(2, 8), gl.zeros(2, 1, dtype=gl.int64))

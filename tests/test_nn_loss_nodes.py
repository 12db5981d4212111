"""The losses PyTorch records as one node are one Function here, reduction (and weights) inside.

Each is checked in float64 for every reduction: its forward against a numpy formula (and PyTorch
where installed), and its gradient — for every input that takes one, weights included — by
gradcheck; the graph is one node above the leaves.
"""

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck
from helpers import leaf, randn, requires_torch, torch

REDUCTIONS = ("mean", "sum", "none")
X, Y = randn(3, 4, seed=1), randn(3, 4, seed=2)
P, T = 1 / (1 + np.exp(-randn(3, 4, seed=3))), np.random.default_rng(4).random((3, 4))
W = np.random.default_rng(5).random((3, 4)) + 0.5
POS = np.random.default_rng(6).random(4) * 3
LOGP = np.log(np.exp(randn(4, 5, seed=7)) / np.exp(randn(4, 5, seed=7)).sum(1, keepdims=True))
INDEX = np.array([1, -100, 4, 2])
CLASS_W = np.random.default_rng(8).random(5) + 0.5


def _reduce(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def _log_sigmoid(x):
    return np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x)))


def _nll(logp, target, weight, reduction):
    valid = target != -100
    picked_w = np.where(valid, weight[np.where(valid, target, 0)], 0.0)
    loss = -logp[np.arange(len(target)), np.where(valid, target, 0)] * picked_w
    return loss.sum() / picked_w.sum() if reduction == "mean" else _reduce(loss, reduction)


# name -> (call(F, tensors..., reduction), the float64 arrays, which take a gradient, the numpy formula)
LOSSES = {
    "mse_loss": (lambda F, x, y, r: F.mse_loss(x, y, reduction=r), (X, Y), (True, True),
                 lambda r: _reduce((X - Y) ** 2, r)),
    "mse_loss broadcast": (lambda F, x, y, r: F.mse_loss(x, y, reduction=r), (X, Y[:1]), (True, True),
                           lambda r: _reduce((X - Y[:1]) ** 2, r)),
    "huber_loss": (lambda F, x, y, r: F.huber_loss(x, y, reduction=r, delta=0.8), (X, Y), (True, True),
                   lambda r: _reduce(np.where(np.abs(X - Y) < 0.8, 0.5 * (X - Y) ** 2,
                                              0.8 * (np.abs(X - Y) - 0.4)), r)),
    "smooth_l1_loss": (lambda F, x, y, r: F.smooth_l1_loss(x, y, reduction=r, beta=0.6), (X, Y), (True, True),
                       lambda r: _reduce(np.where(np.abs(X - Y) < 0.6, 0.5 * (X - Y) ** 2 / 0.6,
                                                  np.abs(X - Y) - 0.3), r)),
    "binary_cross_entropy": (lambda F, x, y, r: F.binary_cross_entropy(x, y, reduction=r), (P, T), (True, True),
                             lambda r: _reduce(-(T * np.log(P) + (1 - T) * np.log(1 - P)), r)),
    "binary_cross_entropy weighted": (
        lambda F, x, y, w, r: F.binary_cross_entropy(x, y, weight=w, reduction=r), (P, T, W[0]), (True, True, True),
        lambda r: _reduce(-W[0] * (T * np.log(P) + (1 - T) * np.log(1 - P)), r)),
    "binary_cross_entropy_with_logits": (
        lambda F, x, y, r: F.binary_cross_entropy_with_logits(x, y, reduction=r), (X, T), (True, True),
        lambda r: _reduce((1 - T) * X - _log_sigmoid(X), r)),
    "binary_cross_entropy_with_logits weighted": (
        lambda F, x, y, w, p, r: F.binary_cross_entropy_with_logits(x, y, weight=w, pos_weight=p, reduction=r),
        (X, T, W[:, :1], POS), (True, True, True, True),
        lambda r: _reduce(W[:, :1] * ((1 - T) * X - (1 + (POS - 1) * T) * _log_sigmoid(X)), r)),
    "nll_loss": (lambda F, x, r: F.nll_loss(x, _index(F), reduction=r), (LOGP,), (True,),
                 lambda r: _nll(LOGP, INDEX, np.ones(5), r)),
    "nll_loss weighted": (lambda F, x, w, r: F.nll_loss(x, _index(F), weight=w, reduction=r), (LOGP, CLASS_W),
                          (True, False), lambda r: _nll(LOGP, INDEX, CLASS_W, r)),
}
ONE_NODE = {"mse_loss": "MseLossBackward0", "huber_loss": "HuberLossBackward0",
            "smooth_l1_loss": "SmoothL1LossBackward0", "binary_cross_entropy": "BinaryCrossEntropyBackward0",
            "binary_cross_entropy_with_logits": "BinaryCrossEntropyWithLogitsBackward0",
            "nll_loss": "NllLossBackward0"}


def _index(F):
    return gl.tensor(INDEX) if F is gl.nn.functional else torch.tensor(INDEX)


def _leaves(arrays, grads):
    return [leaf(a, requires_grad=g) for a, g in zip(arrays, grads)]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", list(LOSSES))
def test_forward_matches_numpy(case, reduction):
    call, arrays, grads, formula = LOSSES[case]
    out = call(F, *_leaves(arrays, grads), reduction)
    np.testing.assert_allclose(out.detach().numpy(), formula(reduction), rtol=1e-12, atol=1e-14)


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", list(LOSSES))
def test_forward_and_gradients_match_torch(case, reduction):
    call, arrays, grads, _ = LOSSES[case]
    ours = _leaves(arrays, grads)
    theirs = [torch.tensor(a, requires_grad=g and i < 2)  # (torch refuses gradients for weights: ours gradcheck)
              for i, (a, g) in enumerate(zip(arrays, grads))]
    out, expected = call(F, *ours, reduction), call(torch.nn.functional, *theirs, reduction)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-14)
    seed = np.random.default_rng(9).standard_normal(tuple(expected.shape))
    out.backward(gl.tensor(seed))
    expected.backward(torch.tensor(seed))
    for mine, t in zip(ours, theirs):
        if t.grad is not None:
            np.testing.assert_allclose(mine.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", list(LOSSES))
def test_gradcheck_every_input_that_takes_a_gradient(case, reduction):
    call, arrays, grads, _ = LOSSES[case]
    assert gradcheck(lambda *ts: call(F, *ts, reduction), _leaves(arrays, grads))


@pytest.mark.parametrize("case", ["mse_loss", "binary_cross_entropy_with_logits weighted", "huber_loss"])
def test_gradgradcheck(case):
    call, arrays, grads, _ = LOSSES[case]
    assert gradgradcheck(lambda *ts: call(F, *ts, "mean"), _leaves(arrays, grads))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", [c for c in LOSSES if c.split(" ")[0] in ONE_NODE])
def test_is_one_node_above_the_leaves(case, reduction):
    call, arrays, grads, _ = LOSSES[case]
    node = call(F, *_leaves(arrays, grads), reduction).grad_fn
    assert node.name() == ONE_NODE[case.split(" ")[0]]
    assert all(child is None or child.name() == "AccumulateGrad" for child, _ in node.next_functions)


def test_cross_entropy_is_nll_loss_after_log_softmax():
    logits = randn(4, 5, seed=10)
    x = leaf(logits)
    loss = F.cross_entropy(x, gl.tensor(INDEX))
    nll, (log_softmax, _) = loss.grad_fn, loss.grad_fn.next_functions[0]
    assert nll.name() == "NllLossBackward0" and log_softmax.name() == "LogSoftmaxBackward0"
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(loss.item(), _nll(logp, INDEX, np.ones(5), "mean"), rtol=1e-12)
    assert gradcheck(lambda t: F.cross_entropy(t, gl.tensor(INDEX)), [x])


def test_an_ignored_batch_gives_nan_but_a_zero_gradient():
    x = leaf(LOGP)
    loss = F.nll_loss(x, gl.tensor([-100, -100, -100, -100]))
    loss.backward()
    assert np.isnan(loss.item()) and not x.grad.numpy().any()


def test_the_broadcast_warning_points_at_the_callers_line():
    with pytest.warns(UserWarning, match="Using a target size \\(1, 4\\) that is different") as caught:
        F.mse_loss(leaf(X), leaf(Y[:1]))
    assert caught[0].filename == __file__

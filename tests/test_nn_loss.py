"""Loss functions and modules: forward and gradients vs PyTorch and numpy, gradcheck, stability, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import leaf, noncontiguous_leaf, randn, requires_torch, torch

import gradlab as gl
from gradlab import nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck

if torch is not None:
    import torch.nn.functional as TF

REDUCTIONS = ("mean", "sum", "none")
RNG = np.random.default_rng(1234)


def _probs(*shape, seed=0, axis=1):
    e = np.exp(randn(*shape, seed=seed))
    return e / e.sum(axis=axis, keepdims=True)


def _signs(*shape, seed=0):
    return np.where(np.random.default_rng(seed).random(shape) < 0.5, -1.0, 1.0)


# One row per loss configuration: name, the arrays (and which of them need gradients), the options.
# Arrays of integer dtype are class indices; 'weight'/'pos_weight' options are arrays made into tensors.
X34, Y34 = randn(3, 4, seed=1), randn(3, 4, seed=2)
LOGITS = randn(4, 5, seed=3)
INDICES = np.array([1, 0, 4, 2])
WITH_IGNORED = np.array([1, -100, 4, 2])
CLASS_WEIGHT = np.random.default_rng(4).random(5) + 0.5
SIGMOIDS = 1 / (1 + np.exp(-randn(3, 4, seed=5)))
TARGET_P = np.random.default_rng(6).random((3, 4))

CASES = [
    ("mse_loss", (X34, Y34), (True, True), {}),
    ("mse_loss", (X34, Y34), (True, True), {"weight": np.random.default_rng(7).random((3, 4))}),
    ("l1_loss", (X34, Y34), (True, True), {}),
    ("l1_loss", (X34, Y34), (True, False), {"weight": np.random.default_rng(8).random((3, 4))}),
    ("smooth_l1_loss", (X34, Y34), (True, True), {}),
    ("smooth_l1_loss", (X34, Y34), (True, True), {"beta": 0.5}),
    ("smooth_l1_loss", (X34, Y34), (True, False), {"beta": 0.0}),
    ("huber_loss", (X34, Y34), (True, True), {}),
    ("huber_loss", (X34, Y34), (True, True), {"delta": 0.3}),
    ("huber_loss", (X34, Y34), (True, False), {"delta": 0.7, "weight": np.random.default_rng(9).random((3, 4))}),
    ("cross_entropy", (LOGITS, INDICES), (True, False), {}),
    ("cross_entropy", (LOGITS, WITH_IGNORED), (True, False), {"weight": CLASS_WEIGHT}),
    ("cross_entropy", (LOGITS, INDICES), (True, False), {"ignore_index": 2}),
    ("cross_entropy", (LOGITS, WITH_IGNORED), (True, False), {"label_smoothing": 0.2}),
    ("cross_entropy", (LOGITS, WITH_IGNORED), (True, False), {"label_smoothing": 0.3, "weight": CLASS_WEIGHT}),
    ("cross_entropy", (randn(2, 3, 4, 2, seed=10), np.array([[[0, 2], [1, -100], [2, 2], [0, 1]],
                                                          [[1, 1], [0, 0], [2, 1], [-100, 2]]])),
     (True, False), {"weight": CLASS_WEIGHT[:3], "label_smoothing": 0.1}),
    ("cross_entropy", (randn(5, seed=11), np.array(3)), (True, False), {"label_smoothing": 0.1}),
    ("cross_entropy", (LOGITS, _probs(4, 5, seed=12)), (True, True), {}),
    ("cross_entropy", (LOGITS, _probs(4, 5, seed=12)), (True, True), {"weight": CLASS_WEIGHT, "label_smoothing": 0.25}),
    ("cross_entropy", (randn(2, 3, 4, seed=13), _probs(2, 3, 4, seed=14)), (True, True), {"weight": CLASS_WEIGHT[:3]}),
    ("nll_loss", (np.log(_probs(4, 5, seed=15)), INDICES), (True, False), {}),
    ("nll_loss", (np.log(_probs(4, 5, seed=15)), WITH_IGNORED), (True, False), {"weight": CLASS_WEIGHT}),
    ("nll_loss", (randn(2, 3, 4, seed=16), np.array([[0, 2, 1, 2], [1, 1, 0, 2]])), (True, False), {"ignore_index": 1}),
    ("nll_loss", (randn(5, seed=17), np.array(4)), (True, False), {"weight": CLASS_WEIGHT}),
    ("binary_cross_entropy", (SIGMOIDS, TARGET_P), (True, True), {}),
    ("binary_cross_entropy", (SIGMOIDS, TARGET_P), (True, True), {"weight": np.random.default_rng(18).random((3, 4))}),
    ("binary_cross_entropy", (SIGMOIDS, TARGET_P), (True, False), {"weight": np.random.default_rng(19).random(4)}),
    ("binary_cross_entropy_with_logits", (X34, TARGET_P), (True, True), {}),
    ("binary_cross_entropy_with_logits", (X34, TARGET_P), (True, True),
     {"weight": np.random.default_rng(20).random((3, 1)), "pos_weight": np.random.default_rng(21).random(4) * 3}),
    ("binary_cross_entropy_with_logits", (X34, (TARGET_P > 0.5) * 1.0), (True, False), {"pos_weight": np.full(4, 2.5)}),
    ("kl_div", (np.log(_probs(3, 4, seed=22)), _probs(3, 4, seed=23)), (True, True), {}),
    ("kl_div", (np.log(_probs(3, 4, seed=22)), np.log(_probs(3, 4, seed=23))), (True, True), {"log_target": True}),
    ("kl_div", (randn(3, 4, seed=24), np.where(_probs(3, 4, seed=25) > 0.3, 0.0, _probs(3, 4, seed=25))),
     (True, False), {}),
    ("margin_ranking_loss", (randn(6, seed=26), randn(6, seed=27), _signs(6, seed=28)), (True, True, False), {}),
    ("margin_ranking_loss", (randn(6, seed=26), randn(6, seed=27), _signs(6, seed=28)), (True, True, False),
     {"margin": 0.5}),
    ("cosine_embedding_loss", (randn(5, 3, seed=29), randn(5, 3, seed=30), _signs(5, seed=31)), (True, True, False),
     {}),
    ("cosine_embedding_loss", (randn(5, 3, seed=29), randn(5, 3, seed=30), _signs(5, seed=31)), (True, True, False),
     {"margin": -0.2}),
    ("cosine_embedding_loss", (randn(4, seed=32), randn(4, seed=33), np.array(-1.0)), (True, True, False),
     {"margin": -0.5}),
]


def _case_id(case):
    name, arrays, _, options = case
    opts = ",".join(f"{k}={v}" if not isinstance(v, np.ndarray) else k for k, v in options.items())
    return f"{name}[{'x'.join(map(str, arrays[0].shape)) or 'scalar'}]({opts})"


def _reductions(name):
    return REDUCTIONS + ("batchmean",) if name == "kl_div" else REDUCTIONS


def _run_gradlab(name, arrays, grads, options, reduction, grad_output):
    tensors = [leaf(a, requires_grad=g and a.dtype.kind == "f") for a, g in zip(arrays, grads)]
    kwargs = {k: gl.tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # kl_div's 'mean' warning is tested on its own
        out = getattr(F, name)(*tensors, reduction=reduction, **kwargs)
    out.backward(gl.tensor(grad_output))
    return out, [t.grad if t.requires_grad else None for t in tensors]


def _run_torch(name, arrays, grads, options, reduction, grad_output):
    tensors = [torch.tensor(a, requires_grad=bool(g and a.dtype.kind == "f")) for a, g in zip(arrays, grads)]
    kwargs = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(TF, name)(*tensors, reduction=reduction, **kwargs)
    if grad_output is not None:
        out.backward(torch.tensor(grad_output))
    return out, [t.grad if t.requires_grad else None for t in tensors]


@requires_torch
@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_forward_and_gradients_match_torch(case):
    name, arrays, grads, options = case
    for reduction in _reductions(name):
        expected, _ = _run_torch(name, arrays, grads, options, reduction, None)
        grad_output = RNG.standard_normal(tuple(expected.shape)) if reduction == "none" else np.array(1.0)
        expected, expected_grads = _run_torch(name, arrays, grads, options, reduction, grad_output)
        out, out_grads = _run_gradlab(name, arrays, grads, options, reduction, grad_output)
        assert out.dtype is gl.float64
        np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=f"{name} reduction={reduction}")
        assert out.shape == tuple(expected.shape)
        for i, (g, e) in enumerate(zip(out_grads, expected_grads)):
            assert (g is None) == (e is None), f"{name} input {i}"
            if e is not None:
                np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-9, atol=1e-12,
                                           err_msg=f"{name} reduction={reduction} gradient of input {i}")


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_gradcheck(case):
    name, arrays, grads, options = case
    kwargs = {k: gl.tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()}
    if name == "kl_div":
        arrays = (arrays[0], np.abs(arrays[1]) + 0.05) if not options.get("log_target") else arrays  # away from t = 0
    tensors = [leaf(a, requires_grad=g and a.dtype.kind == "f") for a, g in zip(arrays, grads)]
    for reduction in _reductions(name):
        if reduction == "sum":
            continue  # 'mean' and 'none' cover it
        def fn(*ts, reduction=reduction):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return getattr(F, name)(*ts, reduction=reduction, **kwargs)
        assert gradcheck(fn, tensors)


# --- forward against numpy formulas (these run without PyTorch) -----------------------------------

def _np_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def test_cross_entropy_matches_numpy():
    logp = _np_log_softmax(LOGITS, 1)
    keep = WITH_IGNORED != -100
    w = CLASS_WEIGHT[np.where(keep, WITH_IGNORED, 0)] * keep
    nll = -logp[np.arange(4), np.where(keep, WITH_IGNORED, 0)] * w
    out = F.cross_entropy(leaf(LOGITS), gl.tensor(WITH_IGNORED), weight=gl.tensor(CLASS_WEIGHT))
    np.testing.assert_allclose(out.item(), nll.sum() / w.sum(), rtol=1e-12)
    eps = 0.1
    smooth = -(logp * CLASS_WEIGHT).sum(1) * keep
    expected = ((1 - eps) * nll.sum() + eps / 5 * smooth.sum()) / w.sum()
    out = F.cross_entropy(leaf(LOGITS), gl.tensor(WITH_IGNORED), weight=gl.tensor(CLASS_WEIGHT), label_smoothing=eps)
    np.testing.assert_allclose(out.item(), expected, rtol=1e-12)
    probs = _probs(4, 5, seed=40)
    out = F.cross_entropy(leaf(LOGITS), leaf(probs), reduction="none")
    np.testing.assert_allclose(out.detach().numpy(), -(probs * logp).sum(1), rtol=1e-12)


def test_cross_entropy_gradient_is_softmax_minus_onehot():
    x = leaf(LOGITS)
    F.cross_entropy(x, gl.tensor(INDICES), reduction="sum").backward()
    p = np.exp(_np_log_softmax(LOGITS, 1))
    np.testing.assert_allclose(x.grad.numpy(), p - np.eye(5)[INDICES], rtol=1e-12, atol=1e-15)


def test_elementwise_losses_match_numpy():
    d = X34 - Y34
    z = np.abs(d)
    x, y = leaf(X34), leaf(Y34)
    np.testing.assert_allclose(F.mse_loss(x, y).item(), (d ** 2).mean(), rtol=1e-12)
    np.testing.assert_allclose(F.l1_loss(x, y, reduction="sum").item(), z.sum(), rtol=1e-12)
    np.testing.assert_allclose(F.smooth_l1_loss(x, y, beta=0.5, reduction="none").detach().numpy(),
                               np.where(z < 0.5, 0.5 * d ** 2 / 0.5, z - 0.25), rtol=1e-12)
    np.testing.assert_allclose(F.huber_loss(x, y, delta=0.5, reduction="none").detach().numpy(),
                               np.where(z < 0.5, 0.5 * d ** 2, 0.5 * (z - 0.25)), rtol=1e-12)


def test_binary_losses_match_numpy():
    x, y = SIGMOIDS, TARGET_P
    expected = -(y * np.log(x) + (1 - y) * np.log(1 - x))
    np.testing.assert_allclose(F.binary_cross_entropy(leaf(x), leaf(y), reduction="none").detach().numpy(), expected,
                               rtol=1e-12)
    logits = np.log(x / (1 - x))
    np.testing.assert_allclose(F.binary_cross_entropy_with_logits(leaf(logits), leaf(y), reduction="none").detach()
                               .numpy(), expected, rtol=1e-10)
    pw = np.array([1.0, 2.0, 3.0, 0.5])
    weighted = -(pw * y * np.log(x) + (1 - y) * np.log(1 - x))
    out = F.binary_cross_entropy_with_logits(leaf(logits), leaf(y), pos_weight=gl.tensor(pw), reduction="none")
    np.testing.assert_allclose(out.detach().numpy(), weighted, rtol=1e-10)


def test_bce_clamps_log_at_minus_100():
    out = F.binary_cross_entropy(gl.tensor([0.0, 1.0, 0.0]), gl.tensor([1.0, 0.0, 0.0]), reduction="none")
    np.testing.assert_allclose(out.numpy(), [100.0, 100.0, 0.0])
    x = leaf([0.0, 1.0, 0.5])
    F.binary_cross_entropy(x, gl.tensor([1.0, 0.0, 1.0], dtype=gl.float64)).backward()
    assert np.isfinite(x.grad.numpy()).all()
    np.testing.assert_allclose(x.grad.numpy(), np.array([-1e12, 1e12, -0.5 / 0.25]) / 3)


def test_kl_div_reductions_match_numpy():
    logq, p = np.log(_probs(3, 4, seed=41)), _probs(3, 4, seed=42)
    pointwise = p * (np.log(p) - logq)
    with pytest.warns(UserWarning, match="batchmean"):
        mean = F.kl_div(leaf(logq), leaf(p))
    np.testing.assert_allclose(mean.item(), pointwise.mean(), rtol=1e-12)
    np.testing.assert_allclose(F.kl_div(leaf(logq), leaf(p), reduction="batchmean").item(), pointwise.sum() / 3,
                               rtol=1e-12)
    np.testing.assert_allclose(F.kl_div(leaf(logq), leaf(np.log(p)), reduction="sum", log_target=True).item(),
                               pointwise.sum(), rtol=1e-12)
    zero = F.kl_div(leaf([-1.0, -2.0]), leaf([0.0, 0.5]), reduction="none")  # 0 log 0 counts as 0
    np.testing.assert_allclose(zero.detach().numpy(), [0.0, 0.5 * (np.log(0.5) + 2)], rtol=1e-12)


def test_margin_and_cosine_losses_match_numpy():
    x1, x2, y = randn(6, seed=50), randn(6, seed=51), _signs(6, seed=52)
    out = F.margin_ranking_loss(leaf(x1), leaf(x2), leaf(y), margin=0.3, reduction="none")
    np.testing.assert_allclose(out.detach().numpy(), np.maximum(0, -y * (x1 - x2) + 0.3), rtol=1e-12)
    a, b, t = randn(5, 3, seed=53), randn(5, 3, seed=54), np.array([1.0, -1, 1, -1, 0])
    cos = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    expected = np.where(t == 1, 1 - cos, 0) + np.where(t == -1, np.maximum(0, cos - 0.1), 0)
    out = F.cosine_embedding_loss(leaf(a), leaf(b), leaf(t), margin=0.1, reduction="none")
    np.testing.assert_allclose(out.detach().numpy(), expected, rtol=1e-10)


# --- dtypes, shapes, special cases ---------------------------------------------------------------

@pytest.mark.parametrize("reduction, shape", [("mean", ()), ("sum", ()), ("none", (2, 4))])
def test_cross_entropy_keeps_float32_and_reduces_spatial_dims(reduction, shape):
    x = gl.randn(2, 3, 4, requires_grad=True)
    out = F.cross_entropy(x, gl.randint(0, 3, (2, 4)), reduction=reduction)
    assert out.dtype is gl.float32 and out.shape == shape
    out.sum().backward()
    assert x.grad.dtype is gl.float32 and x.grad.shape == (2, 3, 4)


def test_cross_entropy_all_ignored_is_nan_with_zero_gradient():
    x = leaf(LOGITS)
    out = F.cross_entropy(x, gl.tensor([-100, -100, -100, -100]))
    assert np.isnan(out.item())
    out.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((4, 5)))


def test_cross_entropy_weight_of_other_dtype_and_no_grad_input():
    out = F.cross_entropy(gl.tensor(LOGITS, dtype=gl.float32), gl.tensor(INDICES),
                          weight=gl.tensor(CLASS_WEIGHT, dtype=gl.float64))
    assert out.dtype is gl.float32 and not out.requires_grad


def test_elementwise_losses_broadcast_with_a_warning():
    x, y = leaf(randn(3, 1, seed=60)), leaf(randn(3, seed=61))
    with pytest.warns(UserWarning, match=r"mse_loss: Using a target size \(3\) that is different to the input size "
                                         r"\(3, 1\)"):
        out = F.mse_loss(x, y, reduction="none")
    assert out.shape == (3, 3)
    out.sum().backward()
    assert x.grad.shape == (3, 1) and y.grad.shape == (3,)
    np.testing.assert_allclose(x.grad.numpy()[:, 0], (2 * (x.detach().numpy() - y.detach().numpy()[None])).sum(1))


def test_mse_promotes_integer_target():
    out = F.mse_loss(gl.tensor([1.0, 2.0]), gl.tensor([1, 4]))
    assert out.dtype is gl.float32 and out.item() == 2.0


def test_unbatched_cross_entropy_and_none_reduction_shape():
    out = F.cross_entropy(leaf(randn(5, seed=62)), gl.tensor(2), reduction="none")
    assert out.shape == ()


def test_legacy_size_average_and_reduce():
    x, y = leaf(X34), leaf(Y34)
    with pytest.warns(UserWarning, match="reduction='sum'"):
        out = F.mse_loss(x, y, size_average=False)
    np.testing.assert_allclose(out.item(), ((X34 - Y34) ** 2).sum(), rtol=1e-12)
    with pytest.warns(UserWarning, match="reduction='none'"):
        loss = nn.CrossEntropyLoss(reduce=False)
    assert loss.reduction == "none"


# --- numerical stability: logits of +-1e4 ------------------------------------------------------

HUGE = np.array([[1e4, -1e4, 0.0], [-1e4, -1e4, 1e4], [1e4, 1e4, -1e4]])


def _finite(out, *leaves):
    out.backward()
    assert np.isfinite(out.item()), out
    for t in leaves:
        assert np.isfinite(t.grad.numpy()).all(), t.grad


@pytest.mark.parametrize("dtype", [gl.float32, gl.float64])
def test_cross_entropy_is_stable_for_huge_logits(dtype):
    x = gl.tensor(HUGE, dtype=dtype, requires_grad=True)
    out = F.cross_entropy(x, gl.tensor([1, 0, 2]), label_smoothing=0.1)
    _finite(out, x)
    x = gl.tensor(HUGE, dtype=dtype, requires_grad=True)
    target = gl.tensor(_probs(3, 3, seed=70), dtype=dtype, requires_grad=True)
    _finite(F.cross_entropy(x, target), x, target)
    x = gl.tensor(HUGE, dtype=dtype, requires_grad=True)
    _finite(F.nll_loss(x.log_softmax(1), gl.tensor([1, 0, 2])), x)


@pytest.mark.parametrize("dtype", [gl.float32, gl.float64])
def test_bce_with_logits_is_stable_for_huge_logits(dtype):
    x = gl.tensor(HUGE, dtype=dtype, requires_grad=True)
    y = gl.tensor([[0.0, 1.0, 0.5], [1.0, 0.0, 1.0], [0.0, 1.0, 1.0]], dtype=dtype, requires_grad=True)
    _finite(F.binary_cross_entropy_with_logits(x, y, pos_weight=gl.tensor([2.0, 0.5, 1.0], dtype=dtype)), x, y)
    z = gl.zeros(3, requires_grad=True)  # log-sigmoid's kink: the gradient at 0 must be sigmoid(0) - 1
    F.binary_cross_entropy_with_logits(z, gl.ones(3), reduction="sum").backward()
    np.testing.assert_allclose(z.grad.numpy(), [-0.5, -0.5, -0.5])


@pytest.mark.parametrize("dtype", [gl.float32, gl.float64])
def test_kl_div_is_stable_for_huge_log_inputs(dtype):
    x = gl.tensor(HUGE, dtype=dtype, requires_grad=True)
    t = gl.tensor(_probs(3, 3, seed=71), dtype=dtype, requires_grad=True)
    _finite(F.kl_div(x.log_softmax(1), t, reduction="batchmean"), x, t)
    x = gl.tensor(HUGE, dtype=dtype, requires_grad=True)
    t = gl.tensor(-HUGE[::-1].copy(), dtype=dtype, requires_grad=True)
    _finite(F.kl_div(x.log_softmax(1), t.log_softmax(1), reduction="batchmean", log_target=True), x, t)


@requires_torch
@pytest.mark.parametrize("name, make", [
    ("cross_entropy", lambda m: ((m.tensor(HUGE, requires_grad=True),), m.tensor([1, 0, 2]), {"label_smoothing": 0.1})),
    ("binary_cross_entropy_with_logits",
     lambda m: ((m.tensor(HUGE, requires_grad=True),), m.tensor((HUGE > 0) * 1.0), {})),
])
def test_huge_logits_match_torch(name, make):
    (gx,), gt, kw = make(gl)
    (tx,), tt, _ = make(torch)
    a, b = getattr(F, name)(gx, gt, **kw), getattr(TF, name)(tx, tt, **kw)
    a.backward(), b.backward()
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-15)


# --- higher-order gradients and non-contiguous inputs ----------------------------------------------

@pytest.mark.parametrize("options", [{}, {"weight": CLASS_WEIGHT, "label_smoothing": 0.2}], ids=["plain", "smoothed"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_gradgradcheck(options, reduction):
    kwargs = {k: gl.tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()}
    target = gl.tensor(WITH_IGNORED)
    assert gradgradcheck(lambda x: F.cross_entropy(x, target, reduction=reduction, **kwargs), [leaf(LOGITS)])
    probs = leaf(_probs(4, 5, seed=80))
    assert gradgradcheck(lambda x, p: F.cross_entropy(x, p, reduction=reduction, **kwargs), [leaf(LOGITS), probs])


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_mse_gradgradcheck(reduction):
    assert gradgradcheck(lambda x, y: F.mse_loss(x, y, reduction=reduction), [leaf(X34), leaf(Y34)])


@pytest.mark.parametrize("name", ["binary_cross_entropy", "binary_cross_entropy_with_logits", "huber_loss"])
def test_more_gradgradchecks(name):
    x = leaf(SIGMOIDS if name == "binary_cross_entropy" else X34)
    assert gradgradcheck(lambda a, b: getattr(F, name)(a, b), [x, leaf(TARGET_P)])


@requires_torch
def test_cross_entropy_second_derivative_matches_torch():
    v = randn(4, 5, seed=81)
    gx = leaf(LOGITS)
    (g,) = gl.autograd.grad(F.cross_entropy(gx, gl.tensor(INDICES), label_smoothing=0.1), gx, create_graph=True)
    (g * gl.tensor(v)).sum().backward()
    tx = torch.tensor(LOGITS, requires_grad=True)
    (tg,) = torch.autograd.grad(TF.cross_entropy(tx, torch.tensor(INDICES), label_smoothing=0.1), tx, create_graph=True)
    (tg * torch.tensor(v)).sum().backward()
    np.testing.assert_allclose(gx.grad.numpy(), tx.grad.numpy(), rtol=1e-9, atol=1e-14)


def test_noncontiguous_inputs():
    target = gl.tensor(np.array([1, 0, 3, 2, 4]))
    x = noncontiguous_leaf(randn(5, 5, seed=82))
    assert gradcheck(lambda x: F.cross_entropy(x, target, label_smoothing=0.1), [x])
    assert gradcheck(lambda x, y: F.mse_loss(x, y), [noncontiguous_leaf(X34), leaf(Y34)])
    assert gradcheck(lambda x, y: F.binary_cross_entropy_with_logits(x, y), [noncontiguous_leaf(X34), leaf(TARGET_P)])


# --- modules --------------------------------------------------------------------------------------

MODULES = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "CrossEntropyLoss", "NLLLoss", "BCELoss",
           "BCEWithLogitsLoss", "KLDivLoss", "MarginRankingLoss", "CosineEmbeddingLoss"]


@pytest.mark.parametrize("name", MODULES)
def test_module_repr_and_defaults(name):
    loss = getattr(nn, name)()
    assert repr(loss) == f"{name}()"
    assert loss.reduction == "mean"
    assert list(loss.parameters()) == []


@requires_torch
@pytest.mark.parametrize("name", MODULES)
def test_module_repr_buffers_and_attributes_match_torch(name):
    ours, theirs = getattr(nn, name)(reduction="sum"), getattr(torch.nn, name)(reduction="sum")
    assert repr(ours) == repr(theirs)
    assert list(ours._buffers) == list(theirs._buffers)
    for attribute in ("reduction", "ignore_index", "label_smoothing", "beta", "delta", "margin", "log_target"):
        assert getattr(ours, attribute, None) == getattr(theirs, attribute, None), attribute


@pytest.mark.parametrize("module, function, args, options", [
    (nn.MSELoss, F.mse_loss, (X34, Y34), {"reduction": "sum"}),
    (nn.L1Loss, F.l1_loss, (X34, Y34), {"reduction": "none"}),
    (nn.SmoothL1Loss, F.smooth_l1_loss, (X34, Y34), {"beta": 0.4}),
    (nn.HuberLoss, F.huber_loss, (X34, Y34), {"delta": 0.6}),
    (nn.CrossEntropyLoss, F.cross_entropy, (LOGITS, INDICES),
     {"weight": gl.tensor(CLASS_WEIGHT), "label_smoothing": 0.1, "ignore_index": 4}),
    (nn.NLLLoss, F.nll_loss, (LOGITS, INDICES), {"weight": gl.tensor(CLASS_WEIGHT), "ignore_index": 1}),
    (nn.BCELoss, F.binary_cross_entropy, (SIGMOIDS, TARGET_P), {"weight": gl.tensor(np.ones(4) * 2)}),
    (nn.BCEWithLogitsLoss, F.binary_cross_entropy_with_logits, (X34, TARGET_P),
     {"weight": gl.tensor(np.ones(4) * 2), "pos_weight": gl.tensor(np.arange(4.0))}),
    (nn.KLDivLoss, F.kl_div, (np.log(_probs(3, 4)), _probs(3, 4, seed=1)), {"reduction": "batchmean"}),
    (nn.KLDivLoss, F.kl_div, (np.log(_probs(3, 4)), np.log(_probs(3, 4, seed=1))),
     {"log_target": True, "reduction": "sum"}),
    (nn.MarginRankingLoss, F.margin_ranking_loss, (randn(4), randn(4, seed=1), _signs(4)), {"margin": 0.2}),
    (nn.CosineEmbeddingLoss, F.cosine_embedding_loss, (X34, Y34, _signs(3)), {"margin": 0.1}),
])
def test_module_calls_functional(module, function, args, options):
    tensors = [leaf(a, requires_grad=False) for a in args]
    np.testing.assert_array_equal(module(**options)(*tensors).numpy(), function(*tensors, **options).numpy())


def test_weighted_module_buffers_follow_the_module():
    loss = nn.CrossEntropyLoss(weight=gl.tensor(CLASS_WEIGHT, dtype=gl.float32))
    assert "weight" in loss.state_dict() and loss.weight.dtype is gl.float32
    loss.double()
    assert loss.weight.dtype is gl.float64
    bce = nn.BCEWithLogitsLoss(pos_weight=gl.tensor([2.0]))
    assert list(bce.state_dict()) == ["pos_weight"]


def test_module_trains_a_linear_classifier_one_step():
    w = gl.zeros(4, 3, requires_grad=True)
    x, y = gl.tensor(randn(8, 4, seed=90), dtype=gl.float32), gl.tensor(np.arange(8) % 3)
    loss = nn.CrossEntropyLoss()(x @ w, y)
    np.testing.assert_allclose(loss.item(), np.log(3), rtol=1e-6)
    loss.backward()
    assert w.grad.shape == (4, 3)


# --- bad input -------------------------------------------------------------------------------------

@pytest.mark.parametrize("function", [F.cross_entropy, F.nll_loss])
def test_target_out_of_range_names_value_and_classes(function):
    x = gl.randn(3, 5)
    with pytest.raises(IndexError, match=f"{function.__name__}: Target 7 is out of bounds for 5 classes"):
        function(x, gl.tensor([1, 2, 7]))
    with pytest.raises(IndexError, match="Target -3 is out of bounds for 5 classes"):
        function(x, gl.tensor([1, -3, 2]))
    with pytest.raises(IndexError, match="Target 5 is out of bounds for 5 classes"):
        function(x, gl.tensor([1, 2, 5]), ignore_index=2)
    function(x, gl.tensor([1, 7, 2]), ignore_index=7)  # the ignored value may be anything


@pytest.mark.parametrize("function", [F.cross_entropy, F.nll_loss])
def test_batch_size_mismatch_names_both_shapes(function):
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(4\).*"
                                         r"input of shape \(3, 5\), target of shape \(4\)"):
        function(gl.randn(3, 5), gl.tensor([1, 2, 3, 4]))
    with pytest.raises(RuntimeError, match=r"Expected target size \(2, 4\).*input of shape \(2, 3, 4\), got target "
                                           r"of shape \(2, 5\)"):
        function(gl.randn(2, 3, 4), gl.zeros(2, 5, dtype=gl.int64))


def test_class_target_dtypes():
    with pytest.raises(RuntimeError, match=r"cross_entropy: expected target dtype to be int64 \(Long\) class indices, "
                                           r"but got float32 tensor of shape \(3\).*\.long\(\).*probabilities"):
        F.cross_entropy(gl.randn(3, 5), gl.tensor([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match=r"nll_loss: expected target dtype to be int64 \(Long\).*int32"):
        F.nll_loss(gl.randn(3, 5), gl.tensor([1, 2, 3], dtype=gl.int32))
    with pytest.raises(RuntimeError, match=r"Expected floating point type for target with class probabilities, got "
                                           r"int64 tensor of shape \(3, 5\)"):
        F.cross_entropy(gl.randn(3, 5), gl.zeros(3, 5, dtype=gl.int64))
    with pytest.raises(RuntimeError, match="cross_entropy: expected a floating-point tensor"):
        F.cross_entropy(gl.zeros(3, 5, dtype=gl.int64), gl.tensor([1, 2, 3]))
    with pytest.raises(RuntimeError, match="0-d tensor"):
        F.cross_entropy(gl.tensor(1.0), gl.tensor(0))
    with pytest.raises(TypeError, match="argument 'target' must be a gradlab Tensor"):
        F.cross_entropy(gl.randn(3, 5), [1, 2, 3])


def test_cross_entropy_options_are_checked():
    x, t = gl.randn(3, 5), gl.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match=r"weight tensor should be defined either for all 5 classes or no classes "
                                           r"but got weight tensor of shape: \(4\)"):
        F.cross_entropy(x, t, weight=gl.ones(4))
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0. Got: 1.5"):
        F.cross_entropy(x, t, label_smoothing=1.5)
    with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
        F.cross_entropy(x, gl.rand(3, 5), ignore_index=1)
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.cross_entropy(x, t, reduction="avg")
    with pytest.raises(ValueError, match="batchmean is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="batchmean")


def test_binary_cross_entropy_errors():
    with pytest.raises(RuntimeError, match=r"binary_cross_entropy: all elements of input should be between 0 and 1, "
                                           r"got values in \[0\.1, 1\.5\]; apply \.sigmoid\(\) first"):
        F.binary_cross_entropy(gl.tensor([0.1, 1.5]), gl.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"Using a target size \(3\) that is different to the input size \(3, 1\)"):
        F.binary_cross_entropy(gl.rand(3, 1), gl.rand(3))
    with pytest.raises(ValueError, match=r"Target size \(3\) must be the same as input size \(3, 1\)"):
        F.binary_cross_entropy_with_logits(gl.rand(3, 1), gl.rand(3))
    with pytest.raises(RuntimeError, match=r"expected a floating-point target.*int64.*\.float\(\)"):
        F.binary_cross_entropy(gl.rand(3), gl.tensor([0, 1, 1]))
    with pytest.raises(RuntimeError, match=r"pos_weight.*\(3\) and \(3, 4\) cannot be broadcast"):
        F.binary_cross_entropy_with_logits(gl.rand(3, 4), gl.rand(3, 4), pos_weight=gl.rand(3))
    with pytest.raises(RuntimeError, match=r"weight of shape \(2, 1\) must broadcast to the target's shape \(3\)"):
        F.binary_cross_entropy(gl.rand(3), gl.rand(3), weight=gl.rand(2, 1))


def test_elementwise_loss_errors():
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=r"mse_loss: shapes \(3, 5\) and \(4\) cannot "
                                                                      r"be broadcast together"):
        F.mse_loss(gl.randn(3, 5), gl.randn(4))
    with pytest.raises(RuntimeError, match="mse_loss: expected floating-point tensors"):
        F.mse_loss(gl.tensor([1, 2]), gl.tensor([1, 2]))
    with pytest.raises(ValueError, match=r"l1_loss: Weights and input must have the same size"):
        F.l1_loss(gl.randn(3), gl.randn(3), weight=gl.ones(1))
    with pytest.raises(RuntimeError, match="smooth_l1_loss does not support negative values for beta"):
        F.smooth_l1_loss(gl.randn(3), gl.randn(3), beta=-1)
    with pytest.raises(RuntimeError, match="huber_loss does not support non-positive values for delta"):
        F.huber_loss(gl.randn(3), gl.randn(3), delta=0)


def test_pair_loss_errors():
    with pytest.raises(RuntimeError, match=r"margin_ranking_loss: All input tensors should have same dimension"):
        F.margin_ranking_loss(gl.randn(3), gl.randn(3), gl.tensor(1.0))
    with pytest.raises(RuntimeError, match=r"margin_ranking_loss: shapes \(3\) and \(4\)"):
        F.margin_ranking_loss(gl.randn(3), gl.randn(4), gl.ones(3))
    with pytest.raises(RuntimeError, match=r"1D target tensor expects 2D input tensors, but found inputs with sizes "
                                           r"\(3, 4, 2\) and \(3, 4, 2\)"):
        F.cosine_embedding_loss(gl.randn(3, 4, 2), gl.randn(3, 4, 2), gl.ones(3))
    with pytest.raises(RuntimeError, match=r"cosine_embedding_loss: expected input1 and input2 of the same shape.*"
                                           r"target \(2\)"):
        F.cosine_embedding_loss(gl.randn(3, 4), gl.randn(3, 4), gl.ones(2))


# --- class weights that require grad get their gradient (PyTorch refuses them for nll_loss) -------

CLASS_LOGITS_3D = randn(2, 5, 3, seed=40)
CLASS_WEIGHTED = [  # name, input, target, the weight's name and value, options
    ("cross_entropy", LOGITS, WITH_IGNORED, "weight", CLASS_WEIGHT, {}),
    ("cross_entropy", LOGITS, WITH_IGNORED, "weight", CLASS_WEIGHT, {"label_smoothing": 0.3}),
    ("cross_entropy", CLASS_LOGITS_3D, np.array([[0, 4, -100], [2, 2, 1]]), "weight", CLASS_WEIGHT,
     {"label_smoothing": 0.1}),
    ("cross_entropy", randn(5, seed=41), np.array(3), "weight", CLASS_WEIGHT, {}),
    ("cross_entropy", LOGITS, _probs(4, 5, seed=42), "weight", CLASS_WEIGHT, {"label_smoothing": 0.2}),
    ("nll_loss", np.log(_probs(4, 5, seed=15)), WITH_IGNORED, "weight", CLASS_WEIGHT, {}),
    ("nll_loss", np.log(_probs(2, 5, 3, seed=43)), np.array([[0, 4, 1], [-100, 2, 3]]), "weight", CLASS_WEIGHT, {}),
    ("binary_cross_entropy", SIGMOIDS, TARGET_P, "weight", np.random.default_rng(19).random(4), {}),
    ("binary_cross_entropy_with_logits", X34, TARGET_P, "weight", np.random.default_rng(20).random((3, 1)), {}),
    ("binary_cross_entropy_with_logits", X34, TARGET_P, "pos_weight", np.random.default_rng(21).random(4) * 3, {}),
    ("multi_margin_loss", LOGITS, INDICES, "weight", CLASS_WEIGHT, {}),
]


@pytest.mark.parametrize("name, x, target, key, weight, options", CLASS_WEIGHTED,
                         ids=[f"{c[0]}[{'x'.join(map(str, c[1].shape))}]({c[3]},{c[5]})" for c in CLASS_WEIGHTED])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_class_weight_that_requires_grad_gets_its_gradient(name, x, target, key, weight, options, reduction):
    target = gl.tensor(target) if target.dtype.kind != "f" else leaf(target, requires_grad=False)

    def loss(x, w):
        return getattr(F, name)(x, target, reduction=reduction, **{key: w}, **options)

    x, w = leaf(x), leaf(weight)
    out = loss(x, w)
    fixed = loss(x, w.detach())  # the fused path, with a weight that takes no gradient
    np.testing.assert_allclose(out.detach().numpy(), fixed.detach().numpy(), rtol=1e-12, atol=1e-14)
    out.sum().backward()
    assert w.grad is not None, f"{name}: the {key} was given with requires_grad=True and got no gradient"
    grad_x = x.grad.numpy().copy()
    x.grad = None
    fixed.sum().backward()
    np.testing.assert_allclose(grad_x, x.grad.numpy(), rtol=1e-12, atol=1e-14)
    assert gradcheck(loss, (leaf(x.detach().numpy()), leaf(weight)))


@pytest.mark.parametrize("name, options", [("cross_entropy", {"label_smoothing": 0.2}), ("nll_loss", {})])
def test_class_weight_gradient_differentiates_again(name, options):
    def loss(x, w):
        return getattr(F, name)(x, gl.tensor(WITH_IGNORED), weight=w, **options)

    assert gradgradcheck(loss, (leaf(np.log(_probs(4, 5, seed=44))), leaf(CLASS_WEIGHT)))


def test_class_weight_gradient_every_target_ignored_is_nan_with_zero_gradients():
    x, w = leaf(LOGITS), leaf(CLASS_WEIGHT)
    out = F.cross_entropy(x, gl.tensor(np.full(4, -100)), weight=w)
    out.backward()
    assert np.isnan(out.item())
    assert not x.grad.numpy().any() and not w.grad.numpy().any()


ON_OFF = (randn(4, 5, seed=45) > 0) * 1.0


@pytest.mark.parametrize("make, target", [(lambda w: nn.CrossEntropyLoss(weight=w), INDICES),
                                          (lambda w: nn.NLLLoss(weight=w), INDICES),
                                          (lambda w: nn.BCEWithLogitsLoss(weight=w), ON_OFF),
                                          (lambda w: nn.BCEWithLogitsLoss(pos_weight=w), ON_OFF)])
def test_loss_modules_pass_a_class_weight_that_requires_grad(make, target):
    w, x = leaf(CLASS_WEIGHT), leaf(LOGITS)
    make(w)(x, gl.tensor(target) if target.dtype.kind != "f" else leaf(target, requires_grad=False)).backward()
    assert w.grad is not None and w.grad.shape == (5,)


@requires_torch
def test_class_weight_gradient_matches_torch_composed():
    """PyTorch refuses a weight that requires grad in nll_loss; its composed formula gives the reference."""
    xt, wt = torch.tensor(LOGITS, requires_grad=True), torch.tensor(CLASS_WEIGHT, requires_grad=True)
    tt = torch.tensor(INDICES)
    logp = xt.log_softmax(1)
    picked = wt[tt]
    (-(logp.gather(1, tt[:, None])[:, 0] * picked).sum() / picked.sum()).backward()
    x, w = leaf(LOGITS), leaf(CLASS_WEIGHT)
    F.cross_entropy(x, gl.tensor(INDICES), weight=w).backward()
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-12)

"""Lab 7's exercises (labs/07-normalisation.ipynb): each one's setup rebuilt as the lab builds it; the right
answer passes its check, and each plausible wrong answer fails with the hint that points at its mistake."""

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn.functional as F
from gradlab import lab

N, H = 32, 16


@pytest.fixture(scope="module")
def batchnorm():
    """A BatchNorm's input x, scale gamma, shift beta, the gradient dy at its output, and its x̂ and 1/σ."""
    gl.manual_seed(7)
    x = 0.5 + 2.0 * gl.randn(N, H, dtype=gl.float64)
    gamma = 1 + 0.1 * gl.randn(H, dtype=gl.float64)
    beta = 0.1 * gl.randn(H, dtype=gl.float64)
    dy = gl.randn(N, H, dtype=gl.float64)
    mean = x.mean(0)
    inv_std = (((x - mean) ** 2).mean(0) + 1e-5) ** -0.5
    return x, gamma, beta, dy, (x - mean) * inv_std, inv_std


def primitives(dim, ddof=0, eps_outside=False, affine=True):
    """A normalisation from primitives over ``dim``: the right one, or one with a slip."""
    def norm(x, gamma, beta):
        mean = x.mean(dim, keepdim=True)
        var = ((x - mean) ** 2).sum(dim, keepdim=True) / (x.shape[dim] - ddof)
        xhat = (x - mean) / (var.sqrt() + 1e-5 if eps_outside else (var + 1e-5).sqrt())
        return gamma * xhat + beta if affine else xhat
    return norm


# --- exercise 1: dγ and dβ -----------------------------------------------------------------------------------------

def test_exercise_1_dgamma_and_dbeta_pass_and_not_summing_over_the_batch_is_named(batchnorm):
    x, gamma, beta, dy, xhat, _ = batchnorm
    g, b = gamma.clone().requires_grad_(), beta.clone().requires_grad_()
    F.batch_norm(x, None, None, g, b, training=True).backward(dy)
    assert lab.check_gradients({"dgamma": ((dy * xhat).sum(0), g), "dbeta": (dy.sum(0), b)}).passed
    unsummed = lab.check_gradient("dbeta", dy, b)
    assert not unsummed and "broadcast over dimension 0" in unsummed.message
    with_x = lab.check_gradient("dgamma", (dy * x).sum(0), g)   # x where x̂ belongs
    assert not with_x and "elements are off" in with_x.message
    assert lab.check_gradient("dgamma", ..., g).status == "not done"


# --- exercise 2: BatchNorm's dx in one line ---------------------------------------------------------------------------

def test_exercise_2_the_one_line_backward_passes(batchnorm):
    x, gamma, _, dy, xhat, inv_std = batchnorm
    dx = gamma * inv_std / N * (N * dy - dy.sum(0) - xhat * (dy * xhat).sum(0))
    verdict = lab.check_norm_backward("dx", dx, x, gamma, dy)
    assert verdict.passed and verdict.error < 1e-12
    # the projection: no part of the gradient along a shift of a column, and (but for ε) none along a stretch
    assert np.abs(dx.sum(0).numpy()).max() < 1e-12
    assert 1e-12 < np.abs((dx * xhat).sum(0).numpy()).max() < 1e-4


@pytest.mark.parametrize("slip, hint", [
    (lambda dy, xh, g, s: g * s / N * (N * dy - xh * (dy * xh).sum(0)), "the mean's path is missing"),
    (lambda dy, xh, g, s: g * s / N * (N * dy - dy.sum(0)), "the variance's path is missing"),
    (lambda dy, xh, g, s: g * s * dy, "only the direct path through x̂_n is there"),
    (lambda dy, xh, g, s: s / N * (N * dy - dy.sum(0) - xh * (dy * xh).sum(0)), "γ is missing"),
])
def test_exercise_2_each_forgotten_path_gets_its_hint(batchnorm, slip, hint):
    x, gamma, _, dy, xhat, inv_std = batchnorm
    verdict = lab.check_norm_backward("dx", slip(dy, xhat, gamma, inv_std), x, gamma, dy)
    assert not verdict and verdict.status == "fail" and hint in verdict.message


def test_exercise_2_the_unbiased_variance_is_named(batchnorm):
    x, gamma, _, dy, _, _ = batchnorm
    mean = x.mean(0)
    s = (((x - mean) ** 2).sum(0) / (N - 1) + 1e-5) ** -0.5   # N − 1 where the forward divides by N
    xh = (x - mean) * s
    verdict = lab.check_norm_backward("dx", gamma * s / N * (N * dy - dy.sum(0) - xh * (dy * xh).sum(0)), x, gamma, dy)
    assert not verdict and "divided by N − 1" in verdict.message


def test_exercise_2_unsolved_says_not_done_and_bad_input_names_the_fix(batchnorm):
    x, gamma, _, dy, _, _ = batchnorm
    assert lab.check_norm_backward("dx", ..., x, gamma, dy).status == "not done"
    with pytest.raises(ValueError, match=r"over='rows'; use 'batch' \(BatchNorm: dim 0\) or 'features'"):
        lab.check_norm_backward("dx", dy, x, gamma, dy, over="rows")
    with pytest.raises(ValueError, match=r"dy is the gradient of the output, which has x's shape"):
        lab.check_norm_backward("dx", dy, x, gamma, dy[:4])
    shape = lab.check_norm_backward("dx", dy.sum(0), x, gamma, dy)
    assert not shape and "the answer has shape (32, 16)" in shape.message


def test_exercise_2_your_backward_as_one_node_is_checked_against_finite_differences(batchnorm):
    pytest.importorskip("anywidget")
    x, gamma, beta, _, _, _ = batchnorm

    def function(dx_rule):
        class BatchNormFunction(gl.autograd.Function):
            @staticmethod
            def forward(ctx, x, gamma, beta):
                mean = x.mean(0)
                inv_std = (((x - mean) ** 2).mean(0) + 1e-5) ** -0.5
                xhat = (x - mean) * inv_std
                ctx.save_for_backward(xhat, gamma, inv_std)
                return gamma * xhat + beta

            @staticmethod
            def backward(ctx, dy):
                xhat, gamma, inv_std = ctx.saved_tensors
                return dx_rule(dy, xhat, gamma, inv_std), (dy * xhat).sum(0), dy.sum(0)
        return BatchNormFunction

    def verdict(dx_rule):
        fn = function(dx_rule)
        with lab.record() as rec:
            (fn.apply(x.clone().requires_grad_(), gamma.clone().requires_grad_(), beta) ** 2).sum()
        view = lab.GraphView(rec, color="kind")
        (node,) = view.find("BatchNormFunction")
        return lab.check_this_node("your BatchNorm backward", view, node)

    right = verdict(lambda dy, xh, g, s: g * s / N * (N * dy - dy.sum(0) - xh * (dy * xh).sum(0)))
    assert right.passed and "agrees with finite differences" in right.message
    assert not verdict(lambda dy, xh, g, s: g * s / N * (N * dy - xh * (dy * xh).sum(0)))
    assert verdict(lambda dy, xh, g, s: ...).status == "not done"


# --- exercise 3: the running statistics after five steps ---------------------------------------------------------------

@pytest.fixture(scope="module")
def batches():
    gl.manual_seed(5)
    return [2.0 + 3.0 * gl.randn(N, H, dtype=gl.float64) for _ in range(5)]


def moving(batches, stat, start, weight_new=0.1):
    r = gl.full((H,), start, dtype=gl.float64)
    for b in batches:
        r = (1 - weight_new) * r + weight_new * stat(b)
    return r


def test_exercise_3_the_moving_averages_pass(batches):
    assert lab.check_running_stats("running_mean", moving(batches, lambda b: b.mean(0), 0.0), batches).passed
    assert lab.check_running_stats("running_var", moving(batches, lambda b: b.var(0), 1.0), batches,
                                   stat="var").passed
    # and they are what a real BatchNorm1d keeps, written out here by hand: 41 % of the way after 5 steps
    assert abs(moving(batches, lambda b: b.mean(0), 0.0).mean().item() - 2 * (1 - 0.9 ** 5)) < 0.1


@pytest.mark.parametrize("stat, answer, hint", [
    ("var", lambda bs: moving(bs, lambda b: b.var(0, unbiased=False), 1.0), "you kept the biased variance"),
    ("var", lambda bs: moving(bs, lambda b: b.var(0), 0.0), "running_var starts at 1"),
    ("mean", lambda bs: moving(bs, lambda b: b.mean(0), 0.0, weight_new=0.9), "the momentum's two weights are swapped"),
    ("mean", lambda bs: sum(b.mean(0) for b in bs) / len(bs), "a plain average of the batches' statistics"),
    ("mean", lambda bs: bs[-1].mean(0), "the last batch's statistic alone"),
    ("mean", lambda bs: moving(bs, lambda b: b.mean(0), 1.0), "running_mean starts at 0"),
])
def test_exercise_3_the_usual_slips_are_named(batches, stat, answer, hint):
    verdict = lab.check_running_stats(f"running_{stat}", answer(batches), batches, stat=stat)
    assert not verdict and hint in verdict.message


def test_exercise_3_unsolved_and_bad_input(batches):
    assert lab.check_running_stats("running_mean", ..., batches).status == "not done"
    with pytest.raises(ValueError, match="stat='std'; use 'mean'"):
        lab.check_running_stats("running_std", batches[0].mean(0), batches, stat="std")


# --- exercise 4: BatchNorm in eval mode -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def running(batches):
    layer = gl.nn.BatchNorm1d(H).double()
    with gl.no_grad():
        for b in batches:
            layer(b)
    return layer.running_mean, layer.running_var


def test_exercise_4_eval_mode_passes_and_training_mode_statistics_are_named(batchnorm, batches, running):
    _, gamma, beta, _, _, _ = batchnorm
    rm, rv = running

    def right(x, m, v, g, b):
        return g * (x - m) / (v + 1e-5).sqrt() + b

    assert lab.check_eval_norm("eval_norm", right, batches[0], rm, rv, gamma, beta).passed
    slips = {
        "you normalised with this batch's own mean and variance": lambda x, m, v, g, b: primitives(0)(x, g, b),
        "running_var is a variance, not a standard deviation": lambda x, m, v, g, b: g * (x - m) / (v + 1e-5) + b,
        "not scaled and shifted by γ and β": lambda x, m, v, g, b: (x - m) / (v + 1e-5).sqrt(),
    }
    for hint, slip in slips.items():
        verdict = lab.check_eval_norm("eval_norm", slip, batches[0], rm, rv, gamma, beta)
        assert not verdict and hint in verdict.message
    assert lab.check_eval_norm("eval_norm", lambda *a: ..., batches[0], rm, rv, gamma, beta).status == "not done"


# --- exercise 5: LayerNorm's forward ----------------------------------------------------------------------------------

def test_exercise_5_layer_norm_passes_and_batchnorm_dimension_is_named(batchnorm):
    x, gamma, beta, _, _, _ = batchnorm
    assert lab.check_norm_forward("layer_norm", primitives(-1), x, gamma, beta, over="features").passed
    slips = {
        "over the wrong dimension: this normalisation averages over each example's features": primitives(0),
        "divided by N − 1": primitives(-1, ddof=1),
        "ε is added in the wrong place": primitives(-1, eps_outside=True),
        "without the learned scale γ and shift β": primitives(-1, affine=False),
    }
    for hint, slip in slips.items():
        verdict = lab.check_norm_forward("layer_norm", slip, x, gamma, beta, over="features")
        assert not verdict and hint in verdict.message
    # and BatchNorm's own forward, the lab's worked example, passes as BatchNorm
    assert lab.check_norm_forward("batch_norm", primitives(0), x, gamma, beta).passed
    assert lab.check_norm_forward("layer_norm", lambda *a: ..., x, gamma, beta, over="features").status == "not done"
    raised = lab.check_norm_forward("layer_norm", lambda x, g, b: x.mean(-1) - x, x, gamma, beta, over="features")
    assert not raised and "your function raised" in raised.message   # no keepdim: (N,) against (N, H)


# --- exercise 6: LayerNorm's dx --------------------------------------------------------------------------------------------

def test_exercise_6_layer_norm_backward_passes_and_batch_sums_are_named(batchnorm):
    x, gamma, _, dy, _, _ = batchnorm
    mean = x.mean(-1, keepdim=True)
    s = (((x - mean) ** 2).mean(-1, keepdim=True) + 1e-5) ** -0.5
    xh = (x - mean) * s
    g = dy * gamma
    right = s / H * (H * g - g.sum(-1, keepdim=True) - xh * (g * xh).sum(-1, keepdim=True))
    assert lab.check_norm_backward("ln_dx", right, x, gamma, dy, over="features").passed
    no_mean = s / H * (H * g - xh * (g * xh).sum(-1, keepdim=True))
    assert "the mean's path is missing" in lab.check_norm_backward("ln_dx", no_mean, x, gamma, dy,
                                                                    over="features").message
    # BatchNorm's answer where LayerNorm's is asked: sums over the batch
    mb = x.mean(0)
    sb = (((x - mb) ** 2).mean(0) + 1e-5) ** -0.5
    xb = (x - mb) * sb
    batch = gamma * sb / N * (N * dy - dy.sum(0) - xb * (dy * xb).sum(0))
    verdict = lab.check_norm_backward("ln_dx", batch, x, gamma, dy, over="features")
    assert not verdict and "run over the wrong dimension" in verdict.message
    # γ taken out in front of the sums, as in BatchNorm: not the same here, where γ varies along the sum
    outside = gamma * s / H * (H * dy - dy.sum(-1, keepdim=True) - xh * (dy * xh).sum(-1, keepdim=True))
    verdict = lab.check_norm_backward("ln_dx", outside, x, gamma, dy, over="features")
    assert not verdict and "γ is taken out in front of the sums" in verdict.message

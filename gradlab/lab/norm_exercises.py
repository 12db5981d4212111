"""Checked exercises about normalisation: BatchNorm's and LayerNorm's forward, backward and running statistics.

The truth comes from the engine (``F.batch_norm``, ``F.layer_norm``, their backward, ``nn.BatchNorm1d``'s
buffers). A wrong answer is compared with what each usual slip would give, recomputed here with numpy: the
variance divided by N − 1, the mean's or the variance's path left out of the backward, the statistics taken
over the wrong dimension, the momentum's two weights swapped. The hint names the slip, never the answer.
"""

from __future__ import annotations

import numpy as np

from ..autograd import grad as autograd_grad
from ..creation import tensor
from ..dtypes import float64
from .exercises import Verdict, _answer_array, _compare, check, check_name, not_done, not_done_yet
from .mistakes import relative_errors
from .summary import as_numpy

CLOSE = 1e-6  # how near a slip's values must be before the hint names it
OVER = {"batch": 0, "features": -1}  # BatchNorm: statistics over the batch; LayerNorm: over each example's features


def _axis(where: str, over: str) -> int:
    if over not in OVER:
        raise ValueError(f"{where}: over={over!r}; use 'batch' (BatchNorm: dim 0) or 'features' (LayerNorm: "
                         "the last dim)")
    return OVER[over]


def _f64(value) -> np.ndarray:
    return np.asarray(as_numpy(value.detach()) if hasattr(value, "detach") else value, dtype=np.float64)


def _normalise(x: np.ndarray, axis: int, eps: float, ddof: int = 0, eps_outside: bool = False):
    """(x̂, 1/σ) over ``axis``, with the variance divided by N − ddof (ε under the root, or added to σ)."""
    mean = x.mean(axis, keepdims=True)
    var = ((x - mean) ** 2).sum(axis, keepdims=True) / (x.shape[axis] - ddof)
    inv_std = 1 / (np.sqrt(var) + eps) if eps_outside else 1 / np.sqrt(var + eps)
    return (x - mean) * inv_std, inv_std


def _named_slip(name: str, answer: np.ndarray, slips: dict, verdict: Verdict) -> Verdict:
    for hint, values in slips.items():
        if values.shape == answer.shape and relative_errors(answer, values).max(initial=0.0) <= CLOSE:
            return Verdict(name, "fail", hint, verdict.error)
    return verdict


def _reference_forward(x, gamma, beta, over: str, eps: float):
    from ..nn import functional as F
    if over == "batch":
        return F.batch_norm(x, None, None, gamma, beta, training=True, eps=eps)
    return F.layer_norm(x, (x.shape[-1],), gamma, beta, eps=eps)


def check_norm_forward(name: str, mine, x, gamma, beta, *, over: str = "batch", eps: float = 1e-5) -> Verdict:
    """The learner's normalisation ``mine(x, gamma, beta)`` against the engine's (over="batch": BatchNorm in
    training mode; over="features": LayerNorm), with hints for the unbiased variance, ε outside the root, the
    wrong dimension and a forgotten scale and shift."""
    check_name("check_norm_forward", name)
    axis = _axis(f"check_norm_forward({name!r})", over)
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function of (x, gamma, beta), got a {type(mine).__name__}")
    try:
        got = mine(x, gamma, beta)
    except Exception as error:  # the learner's code: its failure is the verdict
        return Verdict(name, "fail", f"your function raised {type(error).__name__}: {error}")
    if not_done(got):
        return not_done_yet(name)
    verdict = check(name, got, _reference_forward(x, gamma, beta, over, eps))
    answer = _answer_array(got, name)
    if verdict.passed or isinstance(answer, Verdict):
        return verdict
    xs, g, b = _f64(x), _f64(gamma), _f64(beta)
    other = 0 if axis == -1 else -1
    where = "the batch (dim 0), one mean and variance per feature" if over == "batch" else \
        "each example's features (the last dim), one mean and variance per example"
    slips = {
        "your variance is divided by N − 1 (the unbiased estimate): normalisation divides by N, the batch's own "
        "spread": g * _normalise(xs, axis, eps, ddof=1)[0] + b,
        "your ε is added in the wrong place: it keeps the division safe where the variance is 0, so it belongs "
        "with the variance": g * _normalise(xs, axis, eps, eps_outside=True)[0] + b,
        f"your statistics are taken over the wrong dimension: this normalisation averages over {where}":
            g * _normalise(xs, other, eps)[0] + b,
        "your values are the normalised x̂ without the learned scale γ and shift β": _normalise(xs, axis, eps)[0],
    }
    return _named_slip(name, answer, slips, verdict)


def check_norm_backward(name: str, mine, x, gamma, dy, *, over: str = "batch", eps: float = 1e-5) -> Verdict:
    """The learner's ∂L/∂x for a normalisation of ``x`` with scale ``gamma`` (over="batch": BatchNorm in
    training mode, over="features": LayerNorm), given the gradient ``dy`` of its output; the truth is the
    engine's backward of ``F.batch_norm`` / ``F.layer_norm`` for that ``dy``. The hints name the path left out
    (the mean's, the variance's), the unbiased variance, a forgotten γ and the sums taken over the wrong
    dimension."""
    check_name("check_norm_backward", name)
    axis = _axis(f"check_norm_backward({name!r})", over)
    if not_done(mine):
        return not_done_yet(name)
    xs, g, d = _f64(x), _f64(gamma), _f64(dy)
    if xs.shape != d.shape:
        raise ValueError(f"check_norm_backward({name!r}): x has shape {xs.shape} and dy {d.shape}; dy is the "
                         "gradient of the output, which has x's shape")
    xt = tensor(xs, dtype=float64, requires_grad=True)
    out = _reference_forward(xt, tensor(g, dtype=float64), None, over, eps)
    (truth,) = autograd_grad(out, [xt], grad_outputs=[tensor(d, dtype=float64)])
    answer = _answer_array(mine, name)
    if isinstance(answer, Verdict):
        return answer
    verdict = _compare(name, answer, as_numpy(truth), 1e-6)
    if verdict.passed:
        return verdict

    def dx(axis, ddof=0, mean_path=True, var_path=True, gamma_too=True):
        xhat, inv_std = _normalise(xs, axis, eps, ddof)
        dxhat = d * g if gamma_too else d
        n = xs.shape[axis]
        total = n * dxhat
        if mean_path:
            total = total - dxhat.sum(axis, keepdims=True)
        if var_path:
            total = total - xhat * (dxhat * xhat).sum(axis, keepdims=True)
        return inv_std / n * total

    other = 0 if axis == -1 else -1
    dim = "the batch (dim 0)" if over == "batch" else "the features (the last dim)"
    slips = {
        "the mean's path is missing: every x_n also moves the mean μ, which every x̂_m uses; that path brings "
        "a sum of dy over " + dim: dx(axis, mean_path=False),
        "the variance's path is missing: every x_n also moves σ², which every x̂_m uses; that path brings a sum "
        "that involves x̂ over " + dim: dx(axis, var_path=False),
        "only the direct path through x̂_n is there: x_n also reaches the loss through μ and through σ², "
        "and each path adds a term": dx(axis, mean_path=False, var_path=False),
        "your x̂ and σ use the variance divided by N − 1: the forward divides by N, so its backward does too":
            dx(axis, ddof=1),
        "γ is missing: the output is γ·x̂ + β, so the gradient reaches x̂ multiplied by γ": dx(axis, gamma_too=False),
        "your sums (or statistics) run over the wrong dimension: this normalisation's mean and variance are "
        "over " + dim: dx(other),
    }
    if over == "features":  # (for BatchNorm, γ is constant along the batch: out in front is right)
        slips["γ is taken out in front of the sums: in LayerNorm it varies along the features you sum over, so "
              "it multiplies dy inside them"] = g * dx(axis, gamma_too=False)
    return _named_slip(name, answer, slips, verdict)


def check_running_stats(name: str, mine, batches, *, momentum: float = 0.1, stat: str = "mean") -> Verdict:
    """The learner's ``running_mean`` (stat="mean") or ``running_var`` (stat="var") of a BatchNorm1d after
    one training step on each of ``batches`` (a list of (N, C) tensors), against the buffers of a real
    ``nn.BatchNorm1d(C, momentum=momentum)``; the hints name the momentum's weights swapped, the biased
    variance, the wrong start, and a plain average where a moving one is kept."""
    check_name("check_running_stats", name)
    if stat not in ("mean", "var"):
        raise ValueError(f"check_running_stats({name!r}): stat={stat!r}; use 'mean' (running_mean) or 'var' "
                         "(running_var)")
    if not_done(mine):
        return not_done_yet(name)
    if not batches:
        raise ValueError(f"check_running_stats({name!r}): give the list of batches the BatchNorm was trained on")
    from ..autograd.grad_mode import no_grad
    from ..nn import BatchNorm1d
    arrays = [_f64(b) for b in batches]
    layer = BatchNorm1d(arrays[0].shape[1], momentum=momentum).double()
    with no_grad():
        for b in arrays:
            layer(tensor(b, dtype=float64))
    truth = as_numpy(layer.running_mean if stat == "mean" else layer.running_var)
    answer = _answer_array(mine, name)
    if isinstance(answer, Verdict):
        return answer
    verdict = _compare(name, answer, truth, 1e-6)
    if verdict.passed:
        return verdict

    def stat_of(b, ddof):
        return b.mean(0) if stat == "mean" else b.var(0, ddof=ddof)

    def moving(new_weight, ddof=1, start=None):
        start = (0.0 if stat == "mean" else 1.0) if start is None else start
        r = np.full(arrays[0].shape[1], start)
        for b in arrays:
            r = (1 - new_weight) * r + new_weight * stat_of(b, ddof)
        return r

    slips = {
        "the momentum's two weights are swapped: in PyTorch's convention (and gradlab's) the momentum is the "
        "weight of the new batch, and the old running value keeps the rest": moving(1 - momentum),
        "that is a plain average of the batches' statistics: a running statistic is a moving average, which "
        "forgets old batches a little at each step": np.mean([stat_of(b, 1) for b in arrays], 0),
        "that is the last batch's statistic alone: the running value keeps a part of the old one at each step":
            stat_of(arrays[-1], 1),
    }
    if stat == "var":
        slips = {
            "you kept the biased variance (divided by N): the batch is normalised with it, but running_var keeps "
            "the unbiased one (divided by N − 1), the better guess of the whole data's variance": moving(momentum, 0),
            "running_var starts at 1, not 0 (so that an untrained layer in eval mode leaves its input unscaled)":
                moving(momentum, start=0.0),
            **slips}
    else:
        slips["running_mean starts at 0 (an untrained layer in eval mode subtracts nothing)"] = \
            moving(momentum, start=1.0)
    return _named_slip(name, answer, slips, verdict)


def check_eval_norm(name: str, mine, x, running_mean, running_var, gamma, beta, *, eps: float = 1e-5) -> Verdict:
    """The learner's BatchNorm in eval mode, ``mine(x, running_mean, running_var, gamma, beta)``, against
    ``F.batch_norm(..., training=False)``; the hints name the batch's own statistics used (training mode's),
    the variance used as a standard deviation, ε in the wrong place and a forgotten scale and shift."""
    check_name("check_eval_norm", name)
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", "expected a function of (x, running_mean, running_var, gamma, beta), got a "
                                     f"{type(mine).__name__}")
    try:
        got = mine(x, running_mean, running_var, gamma, beta)
    except Exception as error:  # the learner's code: its failure is the verdict
        return Verdict(name, "fail", f"your function raised {type(error).__name__}: {error}")
    if not_done(got):
        return not_done_yet(name)
    from ..nn import functional as F
    verdict = check(name, got, F.batch_norm(x, running_mean, running_var, gamma, beta, training=False, eps=eps))
    answer = _answer_array(got, name)
    if verdict.passed or isinstance(answer, Verdict):
        return verdict
    xs, rm, rv, g, b = (_f64(v) for v in (x, running_mean, running_var, gamma, beta))
    slips = {
        "you normalised with this batch's own mean and variance: that is training mode; in eval mode every "
        "example is normalised with the running statistics, so that it does not depend on its batch":
            g * _normalise(xs, 0, eps)[0] + b,
        "the same, with the unbiased variance: in eval mode the batch's statistics are not used at all, only "
        "the running ones": g * _normalise(xs, 0, eps, ddof=1)[0] + b,
        "running_var is a variance, not a standard deviation: the division is by the square root of it (and ε)":
            g * (xs - rm) / (rv + eps) + b,
        "your ε is added in the wrong place: it belongs with the variance": g * (xs - rm) / (np.sqrt(rv) + eps) + b,
        "your values are normalised but not scaled and shifted by γ and β": (xs - rm) / np.sqrt(rv + eps),
    }
    return _named_slip(name, answer, slips, verdict)

"""Lab 8's checks: inverted dropout written by hand, and early stopping with patience.

Dropout is random, so no single output can be compared: ``check_dropout`` runs the learner's function
many times, each under its own seed, and compares what must hold on average (the fraction zeroed, the
mean kept) and always (the survivors' one scale, eval is the identity). ``check_early_stopping`` runs the
learner's rule on validation curves built so that each usual slip (patience off by one, a tie counted as
progress, the best of the whole curve) gives another answer, and names the slip.
"""

from __future__ import annotations

import math

import numpy as np

from ..creation import tensor
from ..random import manual_seed
from ..autograd.function import TrackedTensor
from .exercises import Verdict, not_done, not_done_yet

RUNS, SHAPE = 20, (100, 50)  # 20 calls of 5,000 elements: the zero fraction's std is about 0.1 percentage points
ZERO_TOLERANCE, MEAN_TOLERANCE = 0.01, 0.02


def check_dropout(name: str, mine, *, p: float = 0.25) -> Verdict:
    """Call ``mine(x, p, training)`` (inverted dropout) ``RUNS`` times in training, each under its own seed,
    and once in evaluation; pass when about a fraction p is zeroed, every survivor is scaled by one factor
    that keeps the mean, the masks differ from call to call, and evaluation returns x unchanged."""
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function dropout(x, p, training), got a {type(mine).__name__}")
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < 1:
        raise ValueError(f"check_dropout({name!r}, p=...): p is a probability strictly between 0 and 1, got {p!r}")
    x_values = np.random.default_rng(8).uniform(0.5, 1.5, SHAPE).astype(np.float32)  # positive: a zero is a drop
    outputs = []
    for run in range(RUNS):
        manual_seed(1000 + run)
        got = _call(mine, tensor(x_values), p, True)
        if isinstance(got, Verdict):
            return got if got.status != "not done" else not_done_yet(name)
        if isinstance(got, str):
            return Verdict(name, "fail", f"in training, {got}")
        outputs.append(got)
    ran = _call(mine, tensor(x_values), p, False)
    if isinstance(ran, Verdict):
        return ran if ran.status != "not done" else not_done_yet(name)
    if isinstance(ran, str):
        return Verdict(name, "fail", f"in evaluation, {ran}")
    outs = np.stack(outputs)
    zeroed = float((outs == 0).mean())
    if abs(zeroed - p) > ZERO_TOLERANCE:
        return Verdict(name, "fail", _zero_hint(zeroed, p))
    if all(np.array_equal(outs[0], o) for o in outs[1:]):
        return Verdict(name, "fail", "every call zeroes the same elements: draw a new random mask at each call "
                                     "(gl.rand_like(x) draws from the seeded generator)")
    kept = outs != 0
    factors = outs[kept] / np.broadcast_to(x_values, outs.shape)[kept]
    if np.ptp(factors) > 1e-4 * max(1.0, float(np.abs(factors).max())):
        return Verdict(name, "fail", f"the elements you keep are not all scaled by one factor (from "
                                     f"{factors.min():.3g} to {factors.max():.3g}): the mask is 0 or one constant")
    ratio = float(outs.mean() / x_values.mean())
    if abs(ratio - 1) > MEAN_TOLERANCE:
        return Verdict(name, "fail", _scale_hint(float(factors[0]), p, ratio))
    if not np.array_equal(ran, x_values):
        return Verdict(name, "fail", _eval_hint(ran, x_values))
    return Verdict(name, "pass", f"zeroes {zeroed:.1%} of the elements (p = {p:g}), keeps the mean "
                                 f"({ratio:.3f} of the input's over {RUNS} calls), and is the identity in evaluation")


def _call(mine, x, p, training):
    """The learner's output as an array; a failing Verdict when it raised, a str saying what is wrong else."""
    try:
        got = mine(x, p, training)
    except Exception as error:  # the learner's code: its failure is the verdict
        if "ellipsis" in str(error):
            return not_done_yet("")
        return Verdict("", "fail", f"your function raised {type(error).__name__} (training={training}): {error}")
    if not_done(got):
        return not_done_yet("")
    if not isinstance(got, TrackedTensor):
        return f"your function returned a {type(got).__name__}; it should return a tensor like x"
    if tuple(got.shape) != tuple(x.shape):
        return f"your output has shape {tuple(got.shape)}, the input {tuple(x.shape)}: dropout keeps the shape"
    return got.detach().numpy().astype(np.float64)


def _zero_hint(zeroed: float, p: float) -> str:
    said = f"{zeroed:.1%} of the elements are zeroed, with p = {p:g}"
    if zeroed < ZERO_TOLERANCE:
        return f"{said}: nothing is dropped — is the mask applied in training?"
    if abs(zeroed - (1 - p)) <= ZERO_TOLERANCE:
        return f"{said}: you keep each element with probability p; p is the probability of dropping one"
    return f"{said}: each element should be dropped with probability p, independently"


def _scale_hint(factor: float, p: float, ratio: float) -> str:
    said = (f"the elements you keep are multiplied by {factor:.3g}, so the output's mean is {ratio:.3f} times the "
            "input's")
    if math.isclose(factor, 1.0, rel_tol=1e-4):
        return (f"{said}: without a scale the expectation shrinks with every element dropped; in evaluation "
                "nothing is dropped, so the next layer would see larger inputs than in training")
    if math.isclose(factor, p, rel_tol=1e-4) or math.isclose(factor, 1 / p, rel_tol=1e-4):
        return f"{said}: the scale comes from p, the probability of dropping; what fraction of the elements survive?"
    return f"{said}: choose the scale that makes the expected output equal to the input"


def _eval_hint(ran: np.ndarray, x: np.ndarray) -> str:
    if (ran == 0).any():
        return (f"in evaluation {float((ran == 0).mean()):.1%} of the elements are zeroed: dropout is only on in "
                "training; with training=False it returns x unchanged")
    return ("in evaluation your output is not x: inverted dropout scaled the survivors in training already, so "
            "evaluation needs no correction — it returns x unchanged")


# --- early stopping --------------------------------------------------------------------------------------------

def early_stopping(val_losses, patience: int) -> tuple:
    """The rule: an epoch improves when its loss is strictly below the best so far; stop once ``patience``
    epochs in a row have not. Returns (best epoch, last epoch run), epochs counted from 0."""
    best, best_epoch, waited = math.inf, 0, 0
    for epoch, loss in enumerate(val_losses):
        if loss < best:
            best, best_epoch, waited = loss, epoch, 0
        else:
            waited += 1
            if waited == patience:
                return best_epoch, epoch
    return best_epoch, len(val_losses) - 1


def _slips(val_losses, patience):
    """The usual wrong rules, each as (its answer, the hint that names it)."""
    late = early_stopping(val_losses, patience + 1)
    soon = early_stopping(val_losses, max(patience - 1, 1))  # (with patience 1 the slip cannot show)
    ties = _with_ties(val_losses, patience)
    whole = (int(np.argmin(val_losses)), early_stopping(val_losses, patience)[1])
    return [
        (late, "you stop one epoch late: training stops at the patience-th epoch in a row without improvement, "
               "not the one after it"),
        (soon, "you stop one epoch early: count the epochs without improvement since the best one — patience of "
               "them in a row, then stop"),
        (ties, "an epoch whose loss only equals the best is not an improvement: only a loss strictly below the best "
               "resets the count"),
        (whole, "the stop is right, the best epoch is not: it is the best of the epochs you ran, before you "
                "stopped — not of the whole curve"),
    ]


def _with_ties(val_losses, patience):
    best, best_epoch, waited = math.inf, 0, 0
    for epoch, loss in enumerate(val_losses):
        if loss <= best:
            best, best_epoch, waited = loss, epoch, 0
        else:
            waited += 1
            if waited == patience:
                return best_epoch, epoch
    return best_epoch, len(val_losses) - 1


CURVES = [  # (validation losses, patience): each slip above changes the answer of at least one
    ([1.0, 0.8, 0.7, 0.75, 0.72, 0.71, 0.69, 0.9, 1.0, 1.1], 3),
    ([0.9, 0.7, 0.6, 0.55, 0.5, 0.45, 0.44, 0.43], 2),
    ([1.2, 0.9, 0.9, 0.9, 0.8, 0.85, 0.95], 2),
    ([0.5, 0.6, 0.7, 0.4, 0.3], 2),
    ([2.0, 1.5, 1.1, 1.3, 1.0, 1.4, 1.6, 1.8], 1),
]


def check_early_stopping(name: str, mine) -> Verdict:
    """Call ``mine(val_losses, patience)`` on a few validation curves; pass when each answer is the pair
    (best epoch, last epoch run) of ``early_stopping``. A wrong answer that follows one of the usual wrong
    rules on every curve is named; otherwise the first curve it gets wrong is shown."""
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function (val_losses, patience) -> (best epoch, last epoch run), "
                                     f"got a {type(mine).__name__}")
    answers = []
    for losses, patience in CURVES:
        try:
            got = mine(list(losses), patience)
        except Exception as error:  # the learner's code: its failure is the verdict
            return Verdict(name, "fail", f"your function raised {type(error).__name__} on {losses} with "
                                         f"patience={patience}: {error}")
        if not_done(got):
            return not_done_yet(name)
        if not (isinstance(got, (tuple, list)) and len(got) == 2
                and all(isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in got)):
            return Verdict(name, "fail", f"return a pair of whole numbers (best epoch, last epoch run), counted from "
                                         f"0; got {got!r}")
        answers.append(tuple(int(e) for e in got))
    truths = [early_stopping(losses, patience) for losses, patience in CURVES]
    if answers == truths:
        return Verdict(name, "pass", f"the right best epoch and stop on all {len(CURVES)} curves")
    for slip in range(4):
        named = [_slips(losses, patience)[slip] for losses, patience in CURVES]
        if all(answer == wrong for answer, (wrong, _) in zip(answers, named)):
            return Verdict(name, "fail", named[0][1])
    number = next(i for i, (a, t) in enumerate(zip(answers, truths)) if a != t)
    losses, patience = CURVES[number]
    what = "best epoch" if answers[number][0] != truths[number][0] else "last epoch run"
    return Verdict(name, "fail", f"on the curve {losses} with patience={patience} you returned {answers[number]}: "
                                 f"the {what} is off — walk through it epoch by epoch")

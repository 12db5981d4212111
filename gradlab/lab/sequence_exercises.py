"""Checked exercises about sequences (lab 11): an RNN step, a BPTT gradient ratio, causal attention, softmax backward.

Each check runs the learner's code against the engine's own layers (``RNNCell``,
``F.scaled_dot_product_attention``) and, when it is off, tries the usual slips on the same inputs — a
missing tanh, a transposed weight, a mask left out, √d forgotten — to name the mistake without the answer.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import numpy as np

from ..autograd.engine import grad as autograd_grad
from ..autograd.grad_mode import no_grad
from ..creation import ones
from ..nn.functional import scaled_dot_product_attention
from ..nn.modules.rnn import RNNCell
from ..ops.elementwise import tanh
from ..random import get_rng_state, manual_seed, randn, set_rng_state
from .exercises import Verdict, answer_number, call_learner, check, check_name, not_done, not_done_yet
from .summary import as_numpy

RATIO_BAND = 0.02  # relative: a predicted ratio within 2 % of the measured one passes (0.107 for 0.8**10 does)


@contextmanager
def _seeded(seed: int):
    """Draw the check's inputs from ``seed``, then put the learner's random stream back as it was."""
    saved = get_rng_state()
    manual_seed(seed)
    try:
        yield
    finally:
        set_rng_state(saved)


def _same(got, value) -> bool:
    return check("", got, value).passed


def _slip(got, slips) -> str | None:
    """The hint of the first slip whose output ``got`` equals."""
    for hint, make in slips:
        try:
            if _same(got, make()):
                return hint
        except Exception:  # noqa: BLE001 — a slip that cannot even be computed on these inputs is not this one
            continue
    return None


def _verdict(name, got, want, slips, grads=None) -> Verdict:
    verdict = check(name, got, want)
    if verdict.passed and grads is not None:
        return grads(verdict)
    if verdict.passed or verdict.status != "fail" or "shape" in verdict.message:
        return verdict
    hint = _slip(got, slips)
    return Verdict(name, "fail", hint, verdict.error) if hint else verdict


def _gradients_flow(name, got, inputs, verdict) -> Verdict:
    if getattr(got, "grad_fn", None) is None:
        return Verdict(name, "fail", "the values are right, but your output has no graph: compute it with the "
                                     "engine's operations (tanh, @), not with numpy or .item()")
    got.sum().backward()
    if any(x.grad is None for x in inputs if getattr(x, "requires_grad", False)):
        return Verdict(name, "fail", "the values are right, but no gradient reaches one of the inputs "
                                     "(a .detach() in the way?)")
    return Verdict(name, "pass", f"{verdict.message}, and backward reaches every input", verdict.error)


def check_rnn_step(name: str, mine, *, hidden: int = 5, features: int = 3, batch: int = 4, seed: int = 0) -> Verdict:
    """``mine(h, x, W, U, b)`` is one step of a vanilla RNN, h_new = tanh(h Wᵀ + x Uᵀ + b), for a batch
    of rows; compared with ``RNNCell``'s step with the same weights (its two biases added into ``b``)."""
    check_name("check_rnn_step", name)
    with _seeded(seed):
        cell = RNNCell(features, hidden)
        h, x = randn(batch, hidden), randn(batch, features)
    with no_grad():
        W, U = cell.weight_hh.clone() * 2, cell.weight_ih.clone() * 2  # (so that tanh is not nearly linear)
        b = cell.bias_ih + cell.bias_hh
        cell.weight_hh.copy_(W)
        cell.weight_ih.copy_(U)
    inputs = [t.clone().requires_grad_() for t in (h, x, W, U, b)]
    got = call_learner(mine, inputs, name)
    if isinstance(got, Verdict):
        return got
    with no_grad():
        want = cell(x, h)
    slips = [
        ("these are the pre-activations: the new state is squashed by a nonlinearity before it is kept",
         lambda: h @ W.T + x @ U.T + b),
        ("W and U are used untransposed: with the state as a row, W h_{t−1} is h @ W.T", lambda: tanh(h @ W + x @ U + b)),
        ("the input's weights are used untransposed: U x_t with x as a row is x @ U.T",
         lambda: tanh(h @ W.T + x @ U + b)),
        ("the state's weights are used untransposed: W h_{t−1} with h as a row is h @ W.T",
         lambda: tanh(h @ W + x @ U.T + b)),
        ("the bias is missing", lambda: tanh(h @ W.T + x @ U.T)),
        ("the old state is missing from the step: the recurrence is what makes it an RNN",
         lambda: tanh(x @ U.T + b)),
        ("the new input is missing from the step", lambda: tanh(h @ W.T + b)),
    ]
    return _verdict(name, got, want, slips, lambda v: _gradients_flow(name, got, inputs, v))


def check_bptt_ratio(name: str, mine, *, measured: float, scale: float, steps: int) -> Verdict:
    """A predicted ‖∂L/∂h_{T−steps}‖ / ‖∂L/∂h_T‖ against the ratio ``measured`` with the engine, for a
    recurrence whose Jacobian is ``scale`` times an orthogonal matrix; within 2 % passes."""
    check_name("check_bptt_ratio", name)
    got = answer_number(mine, name)
    if isinstance(got, Verdict):
        return got
    if not math.isfinite(got) or got <= 0:
        return Verdict(name, "fail", f"a ratio of two norms is a positive number, got {got!r}")
    off = abs(got - measured) / measured
    if off <= RATIO_BAND:
        return Verdict(name, "pass", f"{got:.4g}; measured {measured:.4g}", off)
    near = lambda value: abs(got - value) <= RATIO_BAND * abs(value)  # noqa: E731
    if near(1 / measured):
        hint = "that is the ratio the other way round: the far gradient over the near one"
    elif near(scale * steps):
        hint = "the factors of the steps multiply, they do not add up: what is a product of equal factors?"
    elif near(scale):
        hint = "that is one step's factor; the gradient goes back through every step in between"
    elif near(measured / scale) or near(measured * scale):
        hint = f"one step too few or too many: count the steps from h_T back to h_(T−{steps})"
    else:
        hint = (f"{'too large' if got > measured else 'too small'} by a factor of {max(got, measured) / min(got, measured):.2g}: "
                "each step back multiplies the gradient by Wᵀ and tanh's slope — what are they here?")
    return Verdict(name, "fail", hint, off)


def check_causal_attention(name: str, mine, *, batch: int = 2, length: int = 6, dim: int = 8, seed: int = 0) -> Verdict:
    """``mine(q, k, v)`` is causal scaled dot-product attention on (batch, length, dim) tensors; compared
    with ``scaled_dot_product_attention(q, k, v, is_causal=True)``, and its gradients too."""
    check_name("check_causal_attention", name)
    with _seeded(seed):
        q, k, v = (randn(batch, length, dim) for _ in range(3))
    q = q * 2  # (large enough scores that a missing or wrong scale shows)
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    got = call_learner(mine, inputs, name)
    if isinstance(got, Verdict):
        return got
    with no_grad():
        want = scaled_dot_product_attention(q, k, v, is_causal=True)
    same_shape = tuple(getattr(got, "shape", ())) == tuple(want.shape)
    leak = _future_leak(mine, q, k, v, got) if same_shape else None  # (a wrong shape gets the shape's hint)
    future = ones(length, length).tril() == 0
    scores = q @ k.transpose(-2, -1)
    slips = [
        ("the scores are not divided by √d: with d = 8 the softmax is too peaked", lambda: scaled_dot_product_attention(
            q, k, v, is_causal=True, scale=1.0)),
        ("the scores are divided by d; the scale that keeps their variance at 1 is different",
         lambda: scaled_dot_product_attention(q, k, v, is_causal=True, scale=1 / dim)),
        ("each row of weights should sum to 1: mask the scores (with −inf) before the softmax, not the weights after",
         lambda: (scores / dim ** 0.5).softmax(-1).masked_fill(future, 0.0) @ v),
        ("the softmax runs over the wrong axis: each query's weights over the keys (the last axis) sum to 1",
         lambda: (scores / dim ** 0.5).masked_fill(future, float("-inf")).softmax(-2) @ v),
    ]
    verdict = _verdict(name, got, want, slips, lambda v_: _attention_gradients(name, got, want, inputs, (q, k, v), v_))
    if verdict.status == "fail" and verdict.message == check(name, got, want).message and leak not in (None, "same"):
        return Verdict(name, "fail", leak, verdict.error)  # no known slip, and the earlier outputs see the future
    return verdict


def _future_leak(mine, q, k, v, got) -> str | None:
    """Change the last position's key and value: a causal output at the earlier positions must not move."""
    k2, v2 = k.clone(), v.clone()
    with no_grad():
        k2[:, -1] += 3.0
        v2[:, -1] += 3.0
    try:
        moved = mine(q.clone(), k2, v2)
    except Exception:  # noqa: BLE001 — it ran once already: a failure here says nothing about the mask
        return None
    if not_done(moved):
        return None
    before, after = as_numpy(got.detach())[:, :-1], as_numpy(moved.detach())[:, :-1]
    if not np.allclose(before, after, atol=1e-5):
        return ("the future leaks: changing the last position's key and value changed the outputs at the earlier "
                "positions. Position t may only attend to positions 0…t — is the mask applied?")
    return "same"


def _attention_gradients(name, got, want, inputs, plain, verdict) -> Verdict:
    if getattr(got, "grad_fn", None) is None:
        return Verdict(name, "fail", "the values are right, but your output has no graph: compute it with the "
                                     "engine's operations, not with numpy")
    got.sum().backward()
    truth = [t.clone().requires_grad_() for t in plain]
    scaled_dot_product_attention(*truth, is_causal=True).sum().backward()
    for label, x, t in zip("qkv", inputs, truth):
        if x.grad is None:
            return Verdict(name, "fail", f"the values are right, but no gradient reaches {label} (a .detach()?)")
        g = check(f"{name} (∂/∂{label})", x.grad, t.grad)
        if not g.passed:
            return Verdict(name, "fail", f"the values are right, the gradient with respect to {label} is not: {g.message}")
    return Verdict(name, "pass", f"{verdict.message}, and so are the gradients of q, k and v", verdict.error)


def check_softmax_backward(name: str, mine, scores, upstream) -> Verdict:
    """``mine`` is ∂L/∂scores for p = softmax(scores) over the last axis and ∂L/∂p = ``upstream``: the VJP
    of softmax, compared with the engine's backward; the usual slips (the Jacobian's diagonal alone, the
    sum over the whole batch, p ⊙ forgotten) are named."""
    check_name("check_softmax_backward", name)
    if not_done(mine):
        return not_done_yet(name)
    s = scores.detach().clone().requires_grad_()
    g = upstream.detach()
    truth = autograd_grad((s.softmax(-1) * g).sum(), [s])[0]
    p = s.detach().softmax(-1)
    dot = (g * p).sum(-1, keepdim=True)
    slips = [
        ("that is the Jacobian's diagonal alone, p ⊙ g: each p_i also depends on every other score, through the "
         "sum in the softmax's denominator", lambda: p * g),
        ("g·p is one number per softmax (per row), not one for the whole batch: sum over the last axis, keeping it",
         lambda: p * (g - (g * p).sum())),
        ("the bracket is right, but the result is not multiplied by p", lambda: g - dot),
        ("g·p is the sum of g weighted by p; you summed g alone", lambda: p * (g - g.sum(-1, keepdim=True))),
        ("the sign is flipped: where g_i is above the average g·p, raising s_i raises L", lambda: -(p * (g - dot))),
    ]
    verdict = check(name, mine, truth)
    if verdict.passed or verdict.status != "fail" or "shape" in verdict.message:
        return verdict
    hint = _slip(mine, slips)
    return Verdict(name, "fail", hint, verdict.error) if hint else verdict

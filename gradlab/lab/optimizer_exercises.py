"""A checked exercise on an optimizer: your update rule, step by step, against the one in ``gl.optim``.

The learner writes one step as a function ``step(p, grad, state, group) -> new p``: ``state`` is a dict
that starts empty and carries what the rule keeps between steps (it should hold what
``optimizer.state[p]`` holds, under the same keys), ``group`` the hyperparameters (``lr``,
``momentum``, ``betas``, ...). Both run several steps on the same small loss from the same point;
the first step where they part is named, with a hint about what goes wrong there.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import TrackedTensor
from ..autograd.grad_mode import no_grad
from ..creation import tensor
from ..dtypes import float64
from ..nn.parameter import Parameter
from ..optim.optimizer import Optimizer
from .exercises import Verdict, check, not_done, not_done_yet
from .mistakes import _constant_factor

START = (1.5, -0.8, 0.3)  # the point both start from, and the loss's weights: a bowl steep in one direction
WEIGHTS = (1.0, 8.0, 0.2)


def check_optimizer_step(name: str, mine, optimizer, *, steps: int = 5) -> Verdict:
    """Run your ``mine(p, grad, state, group)`` and ``optimizer(params)`` (e.g. ``lambda params:
    gl.optim.Adam(params, lr=0.1)``) ``steps`` steps on one loss; pass when every position, and every
    entry of your ``state`` that the optimizer keeps too, agree."""
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function step(p, grad, state, group), got a {type(mine).__name__}")
    p = Parameter(tensor(list(START), dtype=float64))
    true = optimizer([p])
    if not isinstance(true, Optimizer):
        raise TypeError(f"check_optimizer_step({name!r}): optimizer builds the true optimizer from the parameters, "
                        f"e.g. lambda params: gl.optim.SGD(params, lr=0.1); it gave a {type(true).__name__}")
    group = {k: v for k, v in true.param_groups[0].items() if k != "params"}
    yours, state = tensor(list(START), dtype=float64), {}
    for t in range(1, steps + 1):
        true.zero_grad()
        loss(p).backward()
        before = yours.detach().clone()
        grad = loss_grad(before)  # at your point: the same as the optimizer's while the steps agree
        true.step()
        try:
            with no_grad():
                got = mine(before.clone(), grad, state, dict(group))
        except Exception as error:  # the learner's code: its failure is the verdict
            return Verdict(name, "fail", f"at step {t} your function raised {type(error).__name__}: {error}")
        if not_done(got):
            return not_done_yet(name)
        if not isinstance(got, TrackedTensor):
            return Verdict(name, "fail", f"your function should return the new p, a tensor like p; it returned a "
                                         f"{type(got).__name__}")
        verdict = check(name, got - before, p.detach() - before)
        if not verdict.passed:
            return Verdict(name, "fail", _step_hint(t, verdict.message, group), verdict.error)
        wrong = _state_differs(name, state, true.state[p])
        if wrong:
            return Verdict(name, "fail", f"at step {t} the position is right, but {wrong}")
        yours = got.detach()
    kept = sorted(k for k in state if k in true.state[p])
    return Verdict(name, "pass", f"the same {steps} steps as {type(true).__name__}"
                   + (f", and the same {', '.join(kept)}" if kept else ""))


def loss(p):
    """The small bowl both optimizers go down: Σ wᵢ pᵢ² / 2, plus a bend so that the gradient is not linear."""
    return (tensor(list(WEIGHTS), dtype=float64) * p * p).sum() / 2 + (p[0] * p[1]).sin()


def loss_grad(p):
    """The gradient of ``loss`` at ``p``, by the engine (a fresh leaf, so nothing of yours is touched)."""
    x = p.detach().clone().requires_grad_()
    with_grad = loss(x)
    with_grad.backward()
    return x.grad.detach()


def _step_hint(t: int, what: str, group: dict) -> str:
    if t == 1:
        hint = f"your first step is already off: {what}"
        if "betas" in group:
            hint += (". At the first steps the averages m and v are still close to their zero start: does your "
                     "step correct for that?")
        return hint
    return (f"your first {f'{t - 1} steps are' if t > 2 else 'step is'} right, step {t} is not ({what}): step 1 uses "
            "only the gradient, later steps what your state carries from step to step — check what it keeps "
            "and what it adds each step")


def _state_differs(name: str, state, true_state) -> str:
    """What is wrong in the learner's state, in words, or "" when every key both keep agrees."""
    if not isinstance(state, dict):
        return f"state should stay a dict, it is a {type(state).__name__}"
    for key, truth in true_state.items():
        if key not in state:
            return f"your state has no {key!r}: gl.optim keeps one, so store yours under that key"
        verdict = check(f"{name} {key}", state[key], truth)
        if not verdict.passed:
            yours, true = np.asarray(verdict_array(state[key]), dtype=np.float64), truth.detach().numpy()
            if yours.shape == true.shape and _constant_factor(yours, true) is not None:
                return (f"your state[{key!r}] is not what gl.optim keeps there: every element is off by the same "
                        "factor. What does the rule add into it each step: the gradient, or the step "
                        "(the learning rate comes after)?")
            return f"your state[{key!r}] is not what gl.optim keeps there: {verdict.message}"
    return ""


def verdict_array(value):
    """A state entry as numbers (a tensor, an array or a number)."""
    return value.detach().numpy() if isinstance(value, TrackedTensor) else value

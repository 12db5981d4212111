"""A check for the first exercise of the course: a centred difference written by hand.

``(f(x + h) − f(x − h)) / 2h`` measures a slope from two points placed symmetrically around x; its
error shrinks like h². The usual slips each leave a mark that the check recognises: the one-sided
(forward or backward) difference, the two points taken h apart instead of 2h, a flipped sign.
"""

from __future__ import annotations

import math
import numbers

from .exercises import Verdict, not_done, not_done_yet

# (f, how the hint names it, x): smooth functions whose one-sided and centred differences differ at h = 1e-3
CASES = ((lambda x: x ** 3, "x³", 1.5), (math.exp, "exp(x)", 0.5), (math.sin, "sin(x)", 1.0))
STEP = 1e-3
CLOSE = 1e-9  # relative: far above the rounding of the formula's ways of writing, far below its slips


def check_centred_difference(name: str, mine) -> Verdict:
    """Call ``mine(f, x, h)`` on three smooth functions with h = 1e-3 and compare it with the centred
    difference (f(x + h) − f(x − h)) / 2h; a one-sided difference, a missing 2 or a flipped sign is named."""
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function of (f, x, h), got a {type(mine).__name__}")
    worst = 0.0
    for f, text, x in CASES:
        try:
            got = mine(f, x, STEP)
        except Exception as error:  # the learner's code: its failure is the verdict, not a traceback
            return Verdict(name, "fail", f"your function raised {type(error).__name__}: {error}")
        if not_done(got):
            return not_done_yet(name)
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            return Verdict(name, "fail", f"it should return a number (the slope), returned a {type(got).__name__}")
        want = (f(x + STEP) - f(x - STEP)) / (2 * STEP)
        error = _relative(float(got), want)
        if not error <= CLOSE:  # (a nan compares false: it fails too)
            where = f"for f(x) = {text} at x = {x}, h = {STEP:g}: yours is {float(got):.10g}"
            return Verdict(name, "fail", f"{where}; {_slip(f, x, float(got), want)}", error)
        worst = max(worst, error)
    how = "exact" if worst == 0 else f"approximately (largest relative error {worst:.1e})"
    return Verdict(name, "pass", f"{how} on {len(CASES)} functions", worst)


def _slip(f, x, got: float, want: float) -> str:
    """What a wrong centred difference most likely did."""
    h = STEP
    if _relative(got, (f(x + h) - f(x)) / h) <= CLOSE:
        return ("that is the forward difference (f(x + h) − f(x)) / h, one-sided: its error shrinks only like h. "
                "Step to both sides of x")
    if _relative(got, (f(x) - f(x - h)) / h) <= CLOSE:
        return ("that is the backward difference (f(x) − f(x − h)) / h, one-sided: its error shrinks only like h. "
                "Step to both sides of x")
    if _relative(got, 2 * want) <= CLOSE:
        return "twice the slope: the two points you compare are 2h apart, not h"
    if _relative(got, -want) <= CLOSE:
        return "the right size and the wrong sign: which point is further along the x axis?"
    return f"relative error {_relative(got, want):.2g} from the centred difference"


def _relative(a: float, b: float) -> float:
    """CS231n's relative error |a − b| / (|a| + |b|) (0 when both are 0)."""
    scale = abs(a) + abs(b)
    return 0.0 if a == b else abs(a - b) / scale if scale else math.inf

"""What a wrong answer's shape and values say about the mistake behind it, without giving the answer away.

A learner's gradient that is wrong is rarely random: it has the transposed shape (the factors of a
matmul swapped), the shape before a broadcast was summed back, the sign flipped, or every element a
constant times the right one (a mean's 1/N forgotten, a square's 2). Each test here recognises one
such pattern and names it; when none fits, the hint says how many elements are off and where the worst is.
"""

from __future__ import annotations

import numpy as np

from ..autograd.broadcasting import summed_dims
from .summary import shape_text

CLOSE = 1e-6  # how near a pattern must fit (relative) before the hint names it


def shape_hint(mine: tuple, expected: tuple) -> str:
    """Why ``mine`` may have the wrong shape, always naming the shape expected."""
    want = f"the answer has shape {shape_text(expected)}, yours has {shape_text(mine)}"
    if len(mine) == len(expected) >= 2 and sorted(mine) == sorted(expected):
        return f"{want}: its dimensions in another order — check the order of a matmul's factors or a missing .T"
    summed = _broadcast_dims(expected, mine)
    if summed is not None:
        return (f"{want}: the input was broadcast over dimension{'s' if len(summed) > 1 else ''} "
                f"{', '.join(map(str, summed))} in the forward, so its gradient is summed back over "
                f"{'them' if len(summed) > 1 else 'it'}")
    if tuple(d for d in mine if d != 1) == tuple(d for d in expected if d != 1):
        return (f"{want}: the same elements, with a dimension of size 1 more or fewer — a keepdim=True, an "
                "unsqueeze or a squeeze too many?")
    if _broadcast_dims(mine, expected) is not None:
        return f"{want}: a dimension too few — did you sum over one too many (keepdims=True keeps a dimension)?"
    return want


def value_hint(mine: np.ndarray, expected: np.ndarray, errors: np.ndarray) -> str:
    """What the wrong values have in common: a flipped sign, a constant factor, a transpose, or where they are off."""
    bad = ~np.isfinite(mine) & np.isfinite(expected)
    if bad.any():
        return f"{int(bad.sum())} of {mine.size} elements of yours are nan or inf where the answer is finite"
    if not mine.any() and expected.any():
        return "yours is all zeros: nothing of the gradient reached it yet"
    if _fits(mine, -expected):
        return "every element has the right size and the wrong sign: a sign is flipped somewhere"
    if mine.size > 1 and _constant_factor(mine, expected) is not None:
        return ("every element is off by the same factor: a constant factor is missing or extra "
                "(the 1/N of a mean? the 2 of a square?)")
    if mine.ndim == 2 and mine.shape[0] == mine.shape[1] and _fits(mine, expected.T):
        return "yours is the transpose of the answer: check the order of a matmul's factors"
    off = errors > CLOSE
    worst = np.unravel_index(int(np.argmax(errors)), errors.shape) if errors.ndim else ()
    where = f"index {tuple(int(i) for i in worst)}" if errors.ndim else "it"
    if errors.size == 1:
        return f"relative error {float(errors.max()):.2g}"
    return (f"{int(off.sum())} of {errors.size} elements {'is' if off.sum() == 1 else 'are'} off; the worst at "
            f"{where}, relative error {float(errors.max()):.2g}")


def relative_errors(mine: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """CS231n's relative error, element by element: |a − b| / max(|a| + |b|, 1e-8); equal infinities count 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        errors = np.abs(mine - expected) / np.maximum(np.abs(mine) + np.abs(expected), 1e-8)
    same = (mine == expected) | (np.isnan(mine) & np.isnan(expected))
    return np.where(same, 0.0, np.nan_to_num(errors, nan=1.0, posinf=1.0))


def _fits(mine: np.ndarray, target: np.ndarray) -> bool:
    return bool(relative_errors(mine, target).max(initial=0.0) <= CLOSE)


def _constant_factor(mine: np.ndarray, expected: np.ndarray) -> float | None:
    """c when mine ≈ c · expected everywhere (c ≠ 1, c ≠ 0), else None."""
    big = np.abs(expected) > 1e-12 * np.abs(expected).max(initial=0.0)
    if not big.any() or not np.isfinite(expected).all():
        return None
    factor = float(np.median(mine[big] / expected[big]))
    if factor == 0 or abs(factor - 1) <= CLOSE or abs(factor + 1) <= CLOSE:
        return None
    return factor if _fits(mine, factor * expected) else None


def _broadcast_dims(small: tuple, big: tuple) -> tuple | None:
    """The dimensions of ``big`` a tensor of shape ``small`` was broadcast over to become ``big`` (None if it cannot)."""
    dims = summed_dims(tuple(big), tuple(small)) if tuple(small) != tuple(big) else None
    return tuple(d for d in dims if big[d] != 1) or None if dims is not None else None

"""Small 2-D classification sets, like TensorFlow Playground's: points in the plane, labels 0 or 1.

They are the first things to train on: each one needs a little more of a network than the one
before, and a 2-D set can be drawn, decision boundary and all.
"""

from __future__ import annotations

import numpy as np

from ..creation import from_numpy

__all__ = ["make_synthetic", "SYNTHETIC_NAMES"]


def _simple(rng, y):
    centres = np.where(y[:, None] == 1, 0.5, -0.5)
    return centres + 0.2 * rng.standard_normal((len(y), 2))


def _diag(rng, y):
    points = rng.uniform(-1, 1, (len(y), 2))
    low, high = points.min(axis=1), points.max(axis=1)  # reflecting in the line x2 = x1 keeps points uniform
    return np.where(y[:, None] == 1, np.stack([low, high], 1), np.stack([high, low], 1))


def _split(rng, y):
    inner = rng.uniform(-0.5, 0.5, len(y))
    outer = rng.uniform(0.5, 1.0, len(y)) * rng.choice([-1.0, 1.0], len(y))
    return np.stack([np.where(y == 1, inner, outer), rng.uniform(-1, 1, len(y))], 1)


def _xor(rng, y):
    size = rng.uniform(0.05, 1.0, (len(y), 2))  # kept off the axes, so that the label is never ambiguous
    sign = rng.choice([-1.0, 1.0], len(y))
    return size * np.stack([sign, np.where(y == 1, sign, -sign)], 1)


def _circle(rng, y):
    radius = np.where(y == 1, rng.uniform(0.0, 0.5, len(y)), rng.uniform(0.7, 1.0, len(y)))
    angle = rng.uniform(0, 2 * np.pi, len(y))
    return radius[:, None] * np.stack([np.cos(angle), np.sin(angle)], 1)


def _spiral(rng, y):
    position = np.empty(len(y))  # how far along its arm each point is, 0 (centre) to 1 (tip)
    for label in (0, 1):
        arm = y == label
        position[arm] = np.arange(arm.sum()) / max(arm.sum(), 1)
    angle = 1.75 * 2 * np.pi * position + np.where(y == 1, 0.0, np.pi)
    return position[:, None] * np.stack([np.sin(angle), np.cos(angle)], 1)


_MAKERS = {"simple": _simple, "diag": _diag, "split": _split, "xor": _xor, "circle": _circle, "spiral": _spiral}
SYNTHETIC_NAMES = tuple(_MAKERS)


def make_synthetic(name: str, n: int = 200, seed: int = 0, noise: float = 0.0):
    """``n`` labelled points in the plane: returns ``(X, y)``, X float32 of shape (n, 2), y int64 of shape (n,).

    The sets, roughly within [-1, 1]², in order of difficulty:

    - ``"simple"``: two round Gaussian blobs (std 0.2) centred at (-0.5, -0.5) (label 0) and (0.5, 0.5)
      (label 1), with a wide gap between them: one linear unit separates them.
    - ``"diag"``: points uniform in the square; label 1 above the diagonal x2 = x1, 0 below. Still one
      line, but no gap at all.
    - ``"split"``: points uniform in the square; label 1 in the vertical band ``|x1| < 0.5``, label 0 on both
      sides of it. Class 0 is split in two, so it takes two lines (a hidden layer).
    - ``"xor"``: points in the four quadrants, away from the axes; label 1 where x1 and x2 have the same
      sign (x1 * x2 > 0), 0 where they differ: the classic problem no single line solves.
    - ``"circle"``: label 1 inside the disc of radius 0.5, label 0 in the ring 0.7 < r < 1 around it.
    - ``"spiral"``: two interleaved spiral arms turning 1.75 times from the centre out to radius 1;
      label 1 one arm, label 0 the other (the same arm turned by 180°). The hard one.

    The labels are balanced (``n // 2`` points of label 1), the rows are shuffled, and ``noise`` adds
    Gaussian jitter of that standard deviation to every coordinate (0.05-0.2 blurs the boundary; the
    labels stay those of the clean points). The same ``seed`` always gives the same points.
    """
    maker = _MAKERS.get(name)
    if maker is None:
        raise ValueError(f"make_synthetic: unknown set {name!r}; choose one of {', '.join(map(repr, _MAKERS))}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
        raise ValueError(f"make_synthetic: n (the number of points) must be a positive integer, got {n!r}")
    if not noise >= 0:
        raise ValueError(f"make_synthetic: noise is a standard deviation, so it must be >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    y = (np.arange(n) < n // 2).astype(np.int64)
    order = rng.permutation(n)
    X, y = maker(rng, y)[order], y[order]
    if noise:  # drawn last, so the same seed gives the same clean points, jittered
        X = X + noise * rng.standard_normal(X.shape)
    return from_numpy(X.astype(np.float32)), from_numpy(y)

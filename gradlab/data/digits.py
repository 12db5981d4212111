"""The 8×8 handwritten digits (1,797 images, 10 classes): MNIST's little sibling, small enough to
train on in seconds. The images ship inside scikit-learn, so loading them needs no network.
"""

from __future__ import annotations

import numpy as np

from ..creation import from_numpy
from ..random import randperm

__all__ = ["load_digits", "train_test_split"]


def load_digits():
    """``(images, labels)``: images float32 of shape (1797, 1, 8, 8) scaled to [0, 1], labels int64 0-9.

    The layout is (N, C, H, W), ready for ``nn.Conv2d(1, ...)``; ``images.flatten(1)`` gives 64 features.
    """
    try:
        from sklearn.datasets import load_digits as sklearn_digits
    except ImportError:
        raise ImportError("load_digits reads the digits that ship with scikit-learn, which is not installed; "
                          'install it with: pip install scikit-learn  (or pip install "gradlab[lab]")') from None
    pixels, labels = sklearn_digits(return_X_y=True)
    images = (pixels.reshape(-1, 1, 8, 8) / 16.0).astype(np.float32)  # pixel values run 0..16
    return from_numpy(images), from_numpy(labels.astype(np.int64))


def train_test_split(*tensors, test_size: float | int = 0.2, generator=None):
    """Shuffle the rows of tensors of equal length together and cut them in two, as scikit-learn does:
    ``X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.2)``.

    ``test_size`` is a fraction of the rows or a count; pass ``generator=gradlab.Generator().manual_seed(0)``
    for the same split every time.
    """
    if not tensors:
        raise ValueError("train_test_split needs at least one tensor, e.g. train_test_split(images, labels)")
    n = len(tensors[0])
    if any(len(t) != n for t in tensors):
        raise ValueError(f"train_test_split: the tensors must have the same length, got {[len(t) for t in tensors]}")
    n_test = round(test_size * n) if isinstance(test_size, float) else test_size
    if not 0 < n_test < n:
        raise ValueError(f"train_test_split: test_size={test_size!r} leaves {n_test} of {n} rows for testing; "
                         "it must leave at least one row on each side")
    order = randperm(n, generator=generator)
    test, train = order[:n_test], order[n_test:]
    return [part for t in tensors for part in (t[train], t[test])]

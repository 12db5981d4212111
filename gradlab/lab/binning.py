"""Counting values into equal bins over a fixed range: the histograms of ActivationStats and its pictures.

A fixed range (not each batch's own min and max) is what lets one layer's histograms at different steps,
or different layers' at one step, be compared bin by bin.
"""

from __future__ import annotations

import numpy as np


def histogram_counts(values: np.ndarray, low: float, high: float, bins: int) -> np.ndarray:
    """Counts in ``bins`` equal bins over [low, high], values beyond it in the end bins (one bincount, not
    np.histogram's sort: this runs at every forward of every watched layer)."""
    index = np.floor((values.ravel() - low) * (bins / (high - low)))
    index = np.clip(np.nan_to_num(index, nan=-1), 0, bins - 1).astype(np.intp)
    finite = np.isfinite(values.ravel())
    return np.bincount(index[finite], minlength=bins)

"""Summaries of values and gradients: the few numbers (and a small histogram) the inspector shows.

A tensor of a million numbers is understood through its range, mean, norm and shape of its
distribution; a tensor of a handful is best shown whole. ``summarize`` gives both, as plain
JSON-ready Python numbers, for a tensor, a backend array or a float.
"""

from __future__ import annotations

import math

import numpy as np

SHOWN_IN_FULL = 12  # tensors this small are listed value by value
HISTOGRAM_BINS = 16


def as_numpy(value) -> np.ndarray:
    """A host numpy copy of a Tensor, a backend array or a Python number."""
    array = getattr(value, "array", None)
    device = getattr(value, "device", None)
    if array is not None and device is not None:
        return np.asarray(device.backend.to_numpy(array))
    return np.asarray(value)


def summarize(value, histogram: bool = True) -> dict | None:
    """Shape, dtype, min/max/mean/norm, NaN/inf counts and a histogram of ``value`` (None stays None)."""
    if value is None:
        return None
    data = as_numpy(value)
    summary = {"shape": list(data.shape), "dtype": str(getattr(value, "dtype", data.dtype)).replace("gradlab.", "")}
    if data.dtype == bool or not np.issubdtype(data.dtype, np.number):
        data = data.astype(np.float64)
    flat = data.astype(np.float64, copy=False).ravel()
    finite = flat[np.isfinite(flat)]
    summary.update(
        numel=int(flat.size),
        nan=int(np.isnan(flat).sum()),
        inf=int(np.isinf(flat).sum()),
        min=_number(finite.min()) if finite.size else None,
        max=_number(finite.max()) if finite.size else None,
        mean=_number(finite.mean()) if finite.size else None,
        norm=_number(np.sqrt(np.dot(finite, finite))) if finite.size else None,
        hist=_histogram(finite) if histogram else None,
    )
    if flat.size <= SHOWN_IN_FULL:
        summary["values"] = [_number(v) for v in flat]
    return summary


def _histogram(finite: np.ndarray) -> dict | None:
    if finite.size == 0:
        return None
    low, high = float(finite.min()), float(finite.max())
    if low == high:
        low, high = low - 0.5, high + 0.5
    bins = ((finite - low) * (HISTOGRAM_BINS / (high - low))).astype(np.intp)
    counts = np.bincount(np.minimum(bins, HISTOGRAM_BINS - 1), minlength=HISTOGRAM_BINS)  # the top edge joins the last bin
    return {"low": low, "high": high, "counts": counts.tolist()}


def _number(v) -> float | None:
    """A JSON-safe float: NaN and infinities become None (JSON has no spelling for them)."""
    v = float(v)
    return v if math.isfinite(v) else None

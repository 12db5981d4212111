"""Summaries of values and gradients: the few numbers (and a small histogram) the inspector shows.

A tensor of a million numbers is understood through its range, mean, norm and shape of its
distribution; a tensor of a handful is best shown whole. ``summarize`` gives both, as plain
JSON-ready Python numbers, for a tensor, a backend array or a float.
"""

from __future__ import annotations

import math

import numpy as np

from .pytorch import is_torch_tensor
from .pytorch import version_of as torch_version

SHOWN_IN_FULL = 12  # tensors this small are listed value by value
HISTOGRAM_BINS = 16


def as_numpy(value) -> np.ndarray:
    """A host numpy copy of a Tensor (gradlab's or PyTorch's), a backend array or a Python number."""
    if is_torch_tensor(value):
        value = value.detach().cpu()
        return value.double().numpy() if str(value.dtype) == "torch.bfloat16" else value.numpy()  # (numpy has no bfloat16)
    array = getattr(value, "array", None)
    device = getattr(value, "device", None)
    if array is not None and device is not None:
        return np.asarray(device.backend.to_numpy(array))
    return np.asarray(value)


def summarize(value, histogram: bool = True) -> dict | None:
    """Shape, dtype, min/max/mean/norm, NaN/inf counts and a histogram of ``value`` (None stays None).

    It reads the values CHUNK at a time, as float64, in two passes (the figures, then the histogram
    between min and max): a summary costs a few MiB whatever the tensor's size, never a copy of it."""
    if value is None:
        return None
    data = as_numpy(value)
    summary = {"shape": list(data.shape),
               "dtype": str(getattr(value, "dtype", data.dtype)).replace("gradlab.", "").replace("torch.", "")}
    figures = _figures(data)
    finite = figures.pop("finite")
    summary.update(figures)
    summary["hist"] = _histogram(data, summary["min"], summary["max"]) if histogram and finite else None
    if data.size <= SHOWN_IN_FULL:
        summary["values"] = [_number(v) for v in np.asarray(data, dtype=np.float64).ravel().tolist()]
    return summary


KEPT_FOR_LATER = 1024  # values at most copied to be summarised later (8 KiB as float64); larger: summarised now


class Later:
    """Details not worked out yet: ``make()`` gives them, the first time they are read (``GraphNode`` asks).
    A graph of 20,000 nodes draws a few hundred boxes: the rest are summarised only if someone looks."""

    def __init__(self, make):
        self.make = make


class LaterSummary(Later):
    """``summarize(value)`` as it would be now, worked out later: it keeps a float64 copy of the values (what
    summarize reads anyway), so an in-place change after this moment cannot reach the summary. ``notes``
    join it (what as_used.py says of a changed value); ``norm`` is known at once (the colours need every node's)."""

    def __init__(self, data: np.ndarray, dtype: str, histogram: bool, notes: dict):
        self.copy, self.dtype, self.histogram, self.notes = data, dtype, histogram, notes
        self._norm = ...

    @property
    def norm(self):
        if self._norm is ...:
            self._norm = _norm(self.copy)
        return self._norm

    def make(self) -> dict:
        summary = summarize(self.copy, self.histogram)
        summary["dtype"] = self.dtype
        summary.update(self.notes)
        return summary


class LaterTensorSummary(Later):
    """``summarize(t)`` of a big tensor, worked out when first read, with no copy (copying a big tensor costs
    what summarising it does, and a GPT-2's parameters are 124 million values). While ``t`` keeps the version
    it had here, its values are the ones to summarise; changed by then (an optimizer step), its values now
    are, and ``changed(then, now)`` says so in words. The norm is worked out at once: the colours need it."""

    def __init__(self, t, data: np.ndarray, histogram: bool, notes: dict, changed):
        self.tensor, self.version, self.histogram, self.notes, self.changed = t, version_of(t), histogram, notes, changed
        self.norm = _norm(data)

    def make(self) -> dict:
        summary = summarize(self.tensor, self.histogram)
        summary.update(self.notes)
        now = version_of(self.tensor)
        if now != self.version and "changed" not in summary:
            summary["changed"] = self.changed(self.version, now)
        return summary


def version_of(t) -> int | None:
    """How many in-place changes a tensor has had (gradlab's ``t.version``, PyTorch's version counter); None for
    anything else (a backend array, a number)."""
    if is_torch_tensor(t):
        return torch_version(t)
    version = getattr(t, "version", None)
    return version if isinstance(version, int) else None


def summarize_later(value, histogram: bool = True, notes: dict | None = None, changed=None):
    """What ``{**summarize(value), **notes}`` gives now, as a ``LaterSummary`` (a copy of the values, summarised
    when first read) where the value is small enough to copy; a bigger tensor as a ``LaterTensorSummary`` where
    ``changed(then, now)`` can say in words that it changed before it was read; else that summary now."""
    data = as_numpy(value)
    if data.size > KEPT_FOR_LATER:
        if changed is not None and version_of(value) is not None:
            return LaterTensorSummary(value, data, histogram, notes or {}, changed)
        return {**summarize(value, histogram), **(notes or {})}
    dtype = str(getattr(value, "dtype", data.dtype)).replace("gradlab.", "")
    return LaterSummary(np.array(data, dtype=np.float64), dtype, histogram, notes or {})


def resolved(held):
    """``held`` itself, or what a ``Later`` in its place makes."""
    return held.make() if isinstance(held, Later) else held


CHUNK = 1 << 16  # values read at a time: 512 KiB as float64


def _chunks(data: np.ndarray):
    """The values of ``data`` in order, as float64, CHUNK at a time (numpy's buffered iterator casts each
    chunk into a buffer of its own: bool, ints, float16 and bfloat16 alike, and strided arrays too)."""
    if data.size == 0:
        return
    flags = ["external_loop", "buffered", "refs_ok"]
    with np.nditer(data, flags=flags, op_dtypes=[np.float64], casting="unsafe", buffersize=CHUNK, order="C") as it:
        yield from it


def _figures(data: np.ndarray) -> dict:
    """numel, NaN and inf counts, and min/max/mean/norm of the finite values, in one pass."""
    nan = inf = finite = 0
    low, high, total, squares = math.inf, -math.inf, 0.0, 0.0
    for chunk in _chunks(data):
        least, most = float(chunk.min()), float(chunk.max())  # both finite: so is every value (NaN spreads to both)
        if math.isfinite(least) and math.isfinite(most):
            kept, nans = chunk, 0
        else:
            kept = chunk[np.isfinite(chunk)]
            nans = int(np.count_nonzero(np.isnan(chunk)))
            least, most = (float(kept.min()), float(kept.max())) if kept.size else (least, most)
        nan, inf = nan + nans, inf + chunk.size - kept.size - nans
        if kept.size:
            finite += kept.size
            low, high = min(low, least), max(high, most)
            total += float(kept.sum())
            squares += _squares(kept)
    known = finite > 0
    return {"numel": int(data.size), "nan": nan, "inf": inf, "finite": finite,
            "min": _number(low) if known else None, "max": _number(high) if known else None,
            "mean": _number(total / finite) if known else None, "norm": _number(math.sqrt(squares)) if known else None}


def _squares(chunk: np.ndarray) -> float:
    """The sum of the squares of a chunk, on this thread: np.dot would hand it to BLAS's threads, which on a
    busy machine wait for one another longer than the sum takes (seconds, for a GPT-2's parameters)."""
    return float(np.einsum("i,i->", chunk, chunk))


def _norm(data: np.ndarray) -> float | None:
    """The norm of the finite values, as ``_figures`` gives it, in one pass (None: no finite value)."""
    squares, finite = 0.0, 0
    # (a small float64 copy, a LaterSummary's, is one chunk already: numpy's buffered iterator costs more than the sum)
    chunks = [data.ravel()] if data.dtype == np.float64 and 0 < data.size <= CHUNK else _chunks(data)
    for chunk in chunks:
        part = _squares(chunk)
        if not math.isfinite(part):  # a NaN or an infinity in this chunk: the finite values only
            kept = chunk[np.isfinite(chunk)]
            part, size = _squares(kept), kept.size
        else:
            size = chunk.size
        squares += part
        finite += size
    return _number(math.sqrt(squares)) if finite else None


def _histogram(data: np.ndarray, low: float, high: float) -> dict:
    """HISTOGRAM_BINS counts of the finite values between low and high (the top edge joins the last bin)."""
    if low == high:
        low, high = low - 0.5, high + 0.5
    scale = HISTOGRAM_BINS / (high - low)
    counts = np.zeros(HISTOGRAM_BINS, dtype=np.int64)
    for chunk in _chunks(data):
        keep = np.isfinite(chunk)
        kept = chunk if keep.all() else chunk[keep]
        shifted = kept - low
        shifted *= scale
        bins = shifted.astype(np.intp)
        counts += np.bincount(np.minimum(bins, HISTOGRAM_BINS - 1, out=bins), minlength=HISTOGRAM_BINS)
    return {"low": low, "high": high, "counts": counts.tolist()}


def _number(v) -> float | None:
    """A JSON-safe float: NaN and infinities become None (JSON has no spelling for them)."""
    v = float(v)
    return v if math.isfinite(v) else None


def shape_text(shape) -> str:
    """A shape as Python writes a tuple: (), (3,), (4, 2)."""
    shape = tuple(shape)
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"

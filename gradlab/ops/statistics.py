"""Statistics built from the reductions: counts, NaN-skipping sums and means, var/std with the mean,
aminmax, covariance and correlation, distances, renorm, and histograms.

The differentiable ones are compositions of differentiable ops (sum, mean, matmul, norm, where),
so their gradients — of any order — come from those. Counting and binning (count_nonzero,
bincount, histc, histogram) give integer or piecewise-constant results: no gradient flows.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from .. import dtypes as dt
from ._common import TrackedTensor, data_in, describe, normalize_dim, shape_str
from .differences import diff
from .reductions import _correction, amax, amin, mean, norm, std, sum, var

aminmax_result = namedtuple("aminmax", ("min", "max"))
histogram_result = namedtuple("histogram", ("hist", "bin_edges"))


# --- counts and NaN-skipping reductions ------------------------------------------------------------

def count_nonzero(input, dim=None):
    """How many elements (along dim: an int or a tuple; None: all) are not zero, as int64."""
    return sum(input != 0, dim)


def nansum(input, dim=None, keepdim=False, *, dtype=None):
    """The sum with NaNs counted as zero (they get no gradient)."""
    if input.dtype.is_floating_point:
        input = input.masked_fill(input.isnan(), 0)
    return sum(input, dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):
    """The mean of the elements that are not NaN (NaN where a slice holds nothing else)."""
    target = dt.as_dtype(dtype) if dtype is not None else input.dtype
    if not target.is_floating_point:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got {describe(input)}; "
                           "convert it first with .float(), or pass dtype=gradlab.float32")
    kept = ~input.isnan()
    return nansum(input, dim, keepdim, dtype=dtype) / sum(kept, dim, keepdim).to(target)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(var, mean) over dim in one call; var divides by (count - correction), correction=1 by default."""
    dim, correction = _correction("var_mean", dim, unbiased, correction)
    return var(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim)


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """(std, mean) over dim in one call; std is the square root of var_mean's variance."""
    dim, correction = _correction("std_mean", dim, unbiased, correction)
    return std(input, dim, keepdim=keepdim, correction=correction), mean(input, dim, keepdim)


def aminmax(input, *, dim=None, keepdim=False):
    """namedtuple (min, max) over dim (None: all elements); ties share the gradient, as in amin/amax."""
    if input.numel() == 0 and dim is None:
        raise RuntimeError(f"aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           f"identity ({describe(input)}); give dim= a dimension of non-zero size")
    return aminmax_result(amin(input, dim, keepdim), amax(input, dim, keepdim))


# --- covariance, correlation, distance, renorm ----------------------------------------------------

def _observations(op, input):
    """A (variables, observations) matrix: a 1-d input is one variable; more than 2 dims are refused."""
    if input.ndim > 2:
        raise RuntimeError(f"{op}(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions ({describe(input)}); rows are variables, columns observations")
    if not input.dtype.is_floating_point:
        input = input.to(dt.get_default_dtype())
    return input.reshape(1, -1) if input.ndim < 2 else input


def _check_weights(name, w, observations):
    if not isinstance(w, TrackedTensor) or w.ndim > 1:
        raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {describe(w)}")
    if w.numel() != observations:
        raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the input "
                           f"but got {w.numel()} != {observations}")
    if name == "fweights" and w.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected fweights to have integral dtype but got {describe(w)}")
    if name == "aweights" and not w.dtype.is_floating_point:
        raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got {describe(w)}")
    if bool((w < 0).any()):
        raise RuntimeError(f"cov(): {name} cannot be negative, got {w.tolist()}")


def cov(input, *, correction=1, fweights=None, aweights=None):
    """The covariance matrix of the rows (variables) over the columns (observations), as numpy's cov.

    With weights w (fweights: integer repeat counts, aweights: importance) the mean is weighted and
    the divisor is Σw − correction · Σ(w · aweights) / Σw; a 1-d input gives a 0-d variance.
    """
    x = _observations("cov", input)
    n = x.shape[1]
    w = None
    for name, given in (("fweights", fweights), ("aweights", aweights)):
        if given is not None:
            _check_weights(name, given, n)
            given = given.to(x.dtype)
            w = given if w is None else w * given
    if w is None:
        average, divisor = x.mean(1, keepdim=True), n - correction
        centred = x - average
        c = centred @ centred.t()
    else:
        w_sum = w.sum()
        average = (x * w).sum(1, keepdim=True) / w_sum
        if aweights is None:
            divisor = w_sum - correction
        else:
            divisor = w_sum - correction * (w * aweights.to(x.dtype)).sum() / w_sum
        centred = x - average
        c = (centred * w) @ centred.t()
    c = c / (divisor.clamp_min(0) if isinstance(divisor, TrackedTensor) else builtins.max(divisor, 0))
    return c.reshape(()) if input.ndim < 2 else c


def corrcoef(input):
    """Pearson correlation coefficients of the rows: cov(x)[i, j] / (std_i · std_j), clipped to [-1, 1]."""
    x = _observations("corrcoef", input)
    centred = x - x.mean(1, keepdim=True)
    c = centred @ centred.t()
    spread = (centred * centred).sum(1).sqrt()  # the correction cancels in the ratio
    r = (c / spread.unsqueeze(1) / spread.unsqueeze(0)).clamp(-1, 1)
    return r.reshape(()) if input.ndim < 2 else r


def dist(input, other, p=2):
    """The p-norm of input − other (broadcast together), over all elements."""
    return norm(input - other, p)


def norm_except_dim(v, pow=2, dim=0):
    """The pow-norm of each slice along dim, kept as a size-1-elsewhere tensor (weight_norm's g); dim=-1:
    the norm of everything, as a 0-d tensor."""
    if dim == -1:
        return norm(v, pow)
    axis = normalize_dim("norm_except_dim", dim, v.ndim)
    return norm(v, pow, tuple(a for a in range(v.ndim) if a != axis), keepdim=True)


def frobenius_norm(input, dim, keepdim=False):
    """The 2-norm over dim (PyTorch keeps this name for old code; linalg.vector_norm is the new one)."""
    return norm(input, 2, dim, keepdim)


def renorm(input, p, dim, maxnorm):
    """Each slice along dim whose p-norm exceeds maxnorm scaled down to norm maxnorm (the others kept as they are)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"renorm: expected a floating point tensor but got {describe(input)}; "
                           "convert it with .float()")
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got p={p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: non-negative maxnorm expected, got maxnorm={maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions "
                           f"({describe(input)})")
    axis = normalize_dim("renorm", dim, input.ndim)
    others = tuple(a for a in range(input.ndim) if a != axis)
    norms = norm(input, p, others, keepdim=True)
    factor = (maxnorm / (norms + 1e-7)).where(norms > maxnorm, norms.new_ones(()))
    return input * factor


# --- counting into bins (no gradient) -------------------------------------------------------------

def bincount(input, weights=None, minlength=0):
    """How often each value 0, 1, ... appears in a 1-d non-negative integer tensor (or the sum of its weights).

    The result has max(input) + 1 entries, at least minlength: int64 counts, or weights' dtype for
    floating weights (float64 for integer weights), as in PyTorch.
    """
    if input.ndim != 1 or input.dtype.is_floating_point or input.dtype is dt.bool_:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got {describe(input)}")
    if minlength < 0:
        raise RuntimeError(f"bincount: minlength should be >= 0, got {minlength}")
    backend = input.device.backend
    index = data_in(input, dt.int64)
    if input.numel() and backend.any_true(backend.lt(index, 0)):
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, but got negative values "
                           f"{input.tolist()}")
    length = builtins.max(int(backend.to_numpy(backend.max(index, None, False))) + 1 if input.numel() else 0, minlength)
    if weights is None:
        dtype, values = dt.int64, backend.ones(input.shape, dt.int64)
    else:
        if weights.shape != input.shape:
            raise RuntimeError(f"bincount: weights should be 1-d and have the same length as input, but got "
                               f"{describe(weights)} for an input of shape {shape_str(input.shape)}")
        dtype = weights.dtype if weights.dtype.is_floating_point else dt.float64
        values = data_in(weights, dtype)
    counts = backend.zeros((length,), dtype)
    backend.add_at(counts, (index,), values)
    return input._wrap(counts)


def _bin_index(backend, data, lo, hi, bins):
    """The bin of each value in [lo, hi] for equal-width bins, (x − lo) · bins / (hi − lo) rounded down
    (the value hi itself in the last bin), as PyTorch's histc computes it."""
    position = backend.floor(backend.div(backend.mul(backend.sub(data, lo), bins), hi - lo))
    return backend.minimum(backend.maximum(backend.astype(position, dt.int64), 0), bins - 1)


def _data_range(backend, data):
    """The smallest and the largest value of a non-empty array, as Python floats."""
    return (float(backend.to_numpy(backend.min(data, None, False))),
            float(backend.to_numpy(backend.max(data, None, False))))


def histc(input, bins=100, min=0, max=0):
    """Counts in ``bins`` equal-width bins between min and max (min = max: the data's own range); values
    outside are ignored. The counts have the input's dtype."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"histc: expected a floating point tensor but got {describe(input)}; "
                           "convert it with .float()")
    if bins <= 0:
        raise RuntimeError(f"histc: bins must be > 0, but got {bins}")
    lo, hi = float(min), float(max)
    if lo > hi:
        raise RuntimeError(f"histc: max must be larger than min, but got min={lo} and max={hi}")
    backend = input.device.backend
    data = backend.reshape(input.array, (input.numel(),))
    if lo == hi and input.numel():
        lo, hi = _data_range(backend, data)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"histc: range of [{lo}, {hi}] is not finite")
    inside = backend.logical_and(backend.ge(data, lo), backend.le(data, hi))
    kept = backend.getitem(data, (inside,))
    counts = backend.zeros((bins,), input.dtype)
    index = _bin_index(backend, kept, lo, hi, bins)
    backend.add_at(counts, (index,), backend.ones(kept.shape, input.dtype))
    return input._wrap(counts)


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """namedtuple (hist, bin_edges): counts (or summed weights) per bin, bins given as a count of
    equal-width bins over range (default: the data's range) or as a 1-d tensor of increasing edges.
    Each bin holds [left, right), the last [left, right]. density=True divides by total · bin width."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"histogram: expected a floating point tensor but got {describe(input)}; "
                           "convert it with .float()")
    backend = input.device.backend
    data = backend.reshape(input.array, (input.numel(),))
    if isinstance(bins, TrackedTensor):
        if bins.ndim != 1 or bins.numel() < 2:
            raise RuntimeError(f"histogram: bins must be a 1-d tensor of at least 2 edges, got {describe(bins)}")
        edges = data_in(bins, input.dtype)
        values = backend.to_numpy(edges)
        if builtins.any(b < a for a, b in zip(values[:-1], values[1:])):
            raise RuntimeError(f"histogram: bin edges must be increasing, got {bins.tolist()}")
    else:
        if bins <= 0:
            raise RuntimeError(f"histogram: bins must be > 0, but got {bins}")
        if range is not None:
            lo, hi = (float(v) for v in range)
            if lo > hi:
                raise RuntimeError(f"histogram: min should not exceed max, but got min {lo} max {hi}")
        elif input.numel():
            lo, hi = _data_range(backend, data)
        else:
            lo, hi = 0.0, 0.0
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5  # numpy's choice for a range of one value
        step = (hi - lo) / bins  # numpy's linspace: start + i · step, and the end exactly
        edges = backend.asarray([lo + i * step for i in builtins.range(bins)] + [hi], input.dtype)
    n = edges.shape[0] - 1
    if weight is not None and weight.shape != input.shape:
        raise RuntimeError(f"histogram: if weight tensor is provided it should have the same shape as the input "
                           f"tensor, got {describe(weight)} for an input of shape {shape_str(input.shape)}")
    first, last = backend.getitem(edges, (0,)), backend.getitem(edges, (n,))
    inside = backend.logical_and(backend.ge(data, first), backend.le(data, last))
    kept = backend.getitem(data, (inside,))
    if isinstance(bins, TrackedTensor):  # the bin of a value: how many inner edges are <= it
        inner = backend.getitem(edges, (slice(1, n),))
        above = backend.ge(backend.reshape(kept, (-1, 1)), backend.reshape(inner, (1, -1)))
        index = backend.sum(backend.astype(above, dt.int64), (1,), False)
    else:  # equal widths: computed, then moved by one where rounding put a value across its edge (numpy's way)
        index = _bin_index(backend, kept, lo, hi, n)
        index = backend.where(backend.lt(kept, backend.getitem(edges, (index,))), backend.sub(index, 1), index)
        upper = backend.getitem(edges, (backend.add(index, 1),))
        index = backend.where(backend.logical_and(backend.ge(kept, upper), backend.lt(index, n - 1)),
                              backend.add(index, 1), index)
    hist = backend.zeros((n,), input.dtype)
    if weight is None:
        added = backend.ones(kept.shape, input.dtype)
    else:
        added = backend.getitem(backend.reshape(data_in(weight, input.dtype), (input.numel(),)), (inside,))
    backend.add_at(hist, (index,), added)
    if density:
        widths = backend.sub(backend.getitem(edges, (slice(1, None),)), backend.getitem(edges, (slice(0, n),)))
        total = backend.sum(hist, None, False)
        hist = backend.div(hist, backend.mul(widths, total))
    return histogram_result(input._wrap(hist), input._wrap(edges))


class StatisticsMethods:
    """Tensor's statistics methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def count_nonzero(self, dim=None):
        return count_nonzero(self, dim)

    def nansum(self, dim=None, keepdim=False, *, dtype=None):
        return nansum(self, dim, keepdim, dtype=dtype)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        return nanmean(self, dim, keepdim, dtype=dtype)

    def aminmax(self, *, dim=None, keepdim=False):
        return aminmax(self, dim=dim, keepdim=keepdim)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return cov(self, correction=correction, fweights=fweights, aweights=aweights)

    def corrcoef(self):
        return corrcoef(self)

    def dist(self, other, p=2):
        return dist(self, other, p)

    def renorm(self, p, dim, maxnorm):
        return renorm(self, p, dim, maxnorm)

    def renorm_(self, p, dim, maxnorm):
        return self._inplace("renorm_", lambda x: renorm(x, p, dim, maxnorm))

    def bincount(self, weights=None, minlength=0):
        return bincount(self, weights, minlength)

    def histc(self, bins=100, min=0, max=0):
        return histc(self, bins, min, max)

    def histogram(self, bins=100, *, range=None, weight=None, density=False):
        return histogram(self, bins, range=range, weight=weight, density=density)

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        return diff(self, n, dim, prepend, append)

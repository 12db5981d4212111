"""More reductions and statistics: nansum/nanmean, var_mean/std_mean, aminmax, logcumsumexp, cummax/cummin,
cov, corrcoef, dist, renorm, diff, gradient, trapezoid/cumulative_trapezoid, sum_to_size (differentiable), and
count_nonzero, bincount, histc, histogram (counts, no gradient); PyTorch's keyword forms throughout.

Each differentiable case is checked against numpy, finite differences in float64 and PyTorch
(values and gradients) when it is installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, leaf, randn, requires_torch, to_torch, torch

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck


def _with_nan(a):
    a = a.copy()
    a.flat[1] = np.nan
    return a


def _np_logcumsumexp(a, axis):
    return np.logaddexp.accumulate(a, axis=axis)


def _np_renorm(a, p, dim, maxnorm):
    other = tuple(i for i in range(a.ndim) if i != dim)
    norms = np.sum(np.abs(a) ** p, axis=other, keepdims=True) ** (1 / p)
    return a * np.where(norms > maxnorm, maxnorm / (norms + 1e-7), 1)


# (id, fn(lib, *tensors), input arrays' shapes, numpy reference, how to make the arrays from randn)
CASES = [
    ("nansum", lambda L, x: L.nansum(x, 1), [(3, 4)], lambda a: np.nansum(a, 1), _with_nan),
    ("nansum_keepdim_dtype", lambda L, x: x.nansum(dim=(0, 1), keepdim=True, dtype=L.float64), [(3, 4)],
     lambda a: np.nansum(a, (0, 1), keepdims=True), _with_nan),
    ("nanmean", lambda L, x: L.nanmean(x, dim=0), [(3, 4)], lambda a: np.nanmean(a, 0), _with_nan),
    ("nanmean_all", lambda L, x: x.nanmean(), [(3, 4)], np.nanmean, _with_nan),
    ("var_mean", lambda L, x: L.var_mean(x, 1), [(3, 4)], lambda a: (np.var(a, 1, ddof=1), np.mean(a, 1)), None),
    ("var_mean_correction", lambda L, x: L.var_mean(x, dim=[0, 1], correction=0, keepdim=True), [(3, 4)],
     lambda a: (np.var(a, keepdims=True), np.mean(a, keepdims=True)), None),
    ("std_mean", lambda L, x: L.std_mean(x, 0, False), [(3, 4)], lambda a: (np.std(a, 0), np.mean(a, 0)), None),
    ("std_mean_all", lambda L, x: L.std_mean(x), [(3, 4)], lambda a: (np.std(a, ddof=1), np.mean(a)), None),
    ("aminmax", lambda L, x: tuple(L.aminmax(x, dim=1)), [(3, 4)], lambda a: (a.min(1), a.max(1)), None),
    ("aminmax_all_keepdim", lambda L, x: tuple(x.aminmax(dim=None, keepdim=False)), [(3, 4)],
     lambda a: (a.min(), a.max()), None),
    ("logcumsumexp", lambda L, x: L.logcumsumexp(x, 1), [(3, 4)], lambda a: _np_logcumsumexp(a, 1), None),
    ("logcumsumexp_dim0", lambda L, x: x.logcumsumexp(dim=0), [(4, 2)], lambda a: _np_logcumsumexp(a, 0), None),
    ("cummax", lambda L, x: L.cummax(x, 1).values, [(3, 4)], lambda a: np.maximum.accumulate(a, 1), None),
    ("cummin", lambda L, x: x.cummin(dim=0)[0], [(4, 3)], lambda a: np.minimum.accumulate(a, 0), None),
    ("cov", lambda L, x: L.cov(x), [(3, 5)], np.cov, None),
    ("cov_1d", lambda L, x: x.cov(correction=0), [(5,)], lambda a: np.cov(a, ddof=0), None),
    ("cov_aweights", lambda L, x, w: L.cov(x, aweights=w.abs() + 0.5), [(2, 5), (5,)],
     lambda a, w: np.cov(a, aweights=np.abs(w) + 0.5), None),
    ("corrcoef", lambda L, x: L.corrcoef(x), [(3, 5)], np.corrcoef, None),
    ("dist", lambda L, x, y: L.dist(x, y), [(3, 4), (4,)], lambda a, b: np.linalg.norm((a - b).ravel()), None),
    ("dist_p", lambda L, x, y: x.dist(y, 3), [(3, 4), (3, 4)],
     lambda a, b: np.sum(np.abs(a - b) ** 3) ** (1 / 3), None),
    ("norm_except_dim", lambda L, x: L.norm_except_dim(x, 2, 1), [(2, 3, 4)],
     lambda a: np.sqrt((a ** 2).sum((0, 2), keepdims=True)), None),
    ("norm_except_dim_all", lambda L, x: L.norm_except_dim(x, pow=3, dim=-1), [(2, 3)],
     lambda a: (np.abs(a) ** 3).sum() ** (1 / 3), None),
    ("frobenius_norm", lambda L, x: L.frobenius_norm(x, (1, 2), keepdim=True), [(2, 3, 4)],
     lambda a: np.sqrt((a ** 2).sum((1, 2), keepdims=True)), None),
    ("renorm", lambda L, x: L.renorm(x, 2, 0, 1.5), [(3, 4)], lambda a: _np_renorm(a, 2, 0, 1.5), None),
    ("renorm_p1_dim1", lambda L, x: x.renorm(1, 1, 1.0), [(3, 4)], lambda a: _np_renorm(a, 1, 1, 1.0), None),
    ("diff", lambda L, x: L.diff(x), [(3, 4)], np.diff, None),
    ("diff_n_dim", lambda L, x: x.diff(n=2, dim=0), [(4, 3)], lambda a: np.diff(a, 2, 0), None),
    ("diff_prepend_append", lambda L, x, y: L.diff(x, 1, 1, prepend=y, append=y), [(3, 4), (3, 1)],
     lambda a, b: np.diff(a, 1, 1, prepend=b, append=b), None),
    ("diff_too_often", lambda L, x: x.diff(5), [(2, 3)], lambda a: np.diff(a, 5), None),
    ("gradient", lambda L, x: L.gradient(x), [(3, 4)], np.gradient, None),
    ("gradient_spacing_dim", lambda L, x: L.gradient(x, spacing=0.5, dim=1, edge_order=2), [(3, 4)],
     lambda a: (np.gradient(a, 0.5, axis=1, edge_order=2),), None),
    ("gradient_coordinates", lambda L, x, c: L.gradient(x, spacing=[c.abs().cumsum(0) + 0.1], dim=[0]), [(4, 3), (4,)],
     lambda a, c: (np.gradient(a, np.cumsum(np.abs(c)) + 0.1, axis=0),), None),
    ("gradient_coordinates_order_2",
     lambda L, x, c, d: L.gradient(x, spacing=(c.abs().cumsum(0) + 0.1, d.abs().cumsum(0) + 0.1), edge_order=2),
     [(3, 4), (3,), (4,)],
     lambda a, c, d: np.gradient(a, np.cumsum(np.abs(c)) + 0.1, np.cumsum(np.abs(d)) + 0.1, edge_order=2), None),
    ("trapezoid", lambda L, x: L.trapezoid(x), [(3, 4)], lambda a: np.trapezoid(a), None),
    ("trapezoid_dx_dim", lambda L, x: L.trapezoid(x, dx=0.5, dim=0), [(3, 4)],
     lambda a: np.trapezoid(a, dx=0.5, axis=0), None),
    ("trapezoid_x", lambda L, y, x: L.trapezoid(y, x, dim=0), [(4, 3), (4,)],
     lambda b, a: np.trapezoid(b, a, axis=0), None),
    ("trapezoid_x_full", lambda L, y, x: L.trapezoid(y, x), [(3, 4), (3, 4)], lambda b, a: np.trapezoid(b, a), None),
    ("trapz", lambda L, y, x: L.trapz(y, x), [(3, 4), (4,)], lambda b, a: np.trapezoid(b, a), None),
    ("trapz_dx", lambda L, y: L.trapz(y, dx=2.0), [(3, 4)], lambda b: np.trapezoid(b, dx=2.0), None),
    ("cumulative_trapezoid", lambda L, y: L.cumulative_trapezoid(y), [(3, 4)],
     lambda b: np.cumsum((b[:, 1:] + b[:, :-1]) / 2, 1), None),
    ("cumulative_trapezoid_x", lambda L, y, x: L.cumulative_trapezoid(y, x, dim=0), [(4, 2), (4,)],
     lambda b, a: np.cumsum((b[1:] + b[:-1]) / 2 * np.diff(a)[:, None], 0), None),
    ("sum_to_size", lambda L, x: x.sum_to_size(1, 4), [(3, 4)], lambda a: a.sum(0, keepdims=True), None),
    ("sum_to_size_fewer_dims", lambda L, x: x.sum_to_size((3, 1)), [(2, 3, 4)],
     lambda a: a.sum((0, 2), keepdims=True)[0], None),
    ("sum_keywords", lambda L, x: x.sum(dim=[0, 2], keepdim=True, dtype=L.float64), [(2, 3, 4)],
     lambda a: a.sum((0, 2), keepdims=True), None),
    ("mean_keywords", lambda L, x: L.mean(x, dim=(1,), keepdim=False, dtype=L.float64), [(2, 3)],
     lambda a: a.mean(1), None),
    ("prod_keywords", lambda L, x: x.prod(dim=1, keepdim=True, dtype=L.float64), [(2, 3)],
     lambda a: a.prod(1, keepdims=True), None),
    ("cumsum_keywords", lambda L, x: L.cumsum(x, dim=1, dtype=L.float64), [(2, 3)], lambda a: a.cumsum(1), None),
    ("cumprod_keywords", lambda L, x: x.cumprod(dim=0, dtype=L.float64), [(2, 3)], lambda a: a.cumprod(0), None),
    ("cumprod_in_place", lambda L, x: (x * 1).cumprod_(dim=1), [(2, 3)], lambda a: a.cumprod(1), None),
    ("cumsum_in_place", lambda L, x: (x * 1).cumsum_(0), [(2, 3)], lambda a: a.cumsum(0), None),
    ("max_other", lambda L, x, y: L.max(x, other=y), [(2, 3), (2, 3)], np.maximum, None),
    ("min_other_method", lambda L, x, y: x.min(other=y), [(2, 3), (3,)], np.minimum, None),
]
IDS = [c[0] for c in CASES]


def _arrays(shapes, make):
    arrays = [randn(*shape, seed=i) for i, shape in enumerate(shapes)]
    return [make(arrays[0])] + arrays[1:] if make else arrays


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name, fn, shapes, reference, make", CASES, ids=IDS)
def test_forward_matches_numpy(name, fn, shapes, reference, make):
    arrays = _arrays(shapes, make)
    outs = _outputs(fn(gl, *[leaf(a, requires_grad=False) for a in arrays]))
    expected = _outputs(reference(*arrays))
    assert len(outs) == len(expected)
    for out, want in zip(outs, expected):
        assert out.dtype is gl.float64
        assert_close(out, want)


@pytest.mark.parametrize("name, fn, shapes, reference, make", CASES, ids=IDS)
def test_gradcheck(name, fn, shapes, reference, make):
    inputs = [leaf(a) for a in _arrays(shapes, make)]
    assert gradcheck(lambda *xs: fn(gl, *xs), inputs)


@requires_torch
@pytest.mark.filterwarnings("ignore:at..frobenius_norm is deprecated:UserWarning")  # PyTorch on its old name
@pytest.mark.parametrize("name, fn, shapes, reference, make", CASES, ids=IDS)
def test_matches_torch(name, fn, shapes, reference, make):
    arrays = _arrays(shapes, make)
    ours = [leaf(a) for a in arrays]
    theirs = [to_torch(a, requires_grad=True) for a in arrays]
    outs, touts = _outputs(fn(gl, *ours)), _outputs(fn(torch, *theirs))
    loss, tloss = 0, 0
    for k, (out, tout) in enumerate(zip(outs, touts)):
        assert_close(out, tout)
        weight = randn(*tout.shape, seed=100 + k)
        loss = loss + (out * gl.tensor(weight)).sum()
        tloss = tloss + (tout * to_torch(weight)).sum()
    loss.backward()
    tloss.backward()
    for x, tx in zip(ours, theirs):
        assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("name", ["var_mean", "cov_aweights", "corrcoef", "renorm", "diff", "gradient_coordinates",
                                  "trapezoid_x"])
def test_gradgradcheck(name):
    _, fn, shapes, _, make = CASES[IDS.index(name)]
    assert gradgradcheck(lambda *xs: fn(gl, *xs), [leaf(a) for a in _arrays(shapes, make)])


def test_gradgradcheck_logcumsumexp_for_gradients_of_one_sign():
    # the backward takes logs of the gradient's positive and negative parts; each part is twice differentiable
    # where it is non-zero
    x = leaf(randn(3, 4))
    assert gradgradcheck(lambda t: t.logcumsumexp(1), [x], [leaf(np.abs(randn(3, 4, seed=5)) + 0.1)])
    assert gradgradcheck(lambda t: t.logcumsumexp(1), [x], [leaf(-np.abs(randn(3, 4, seed=6)) - 0.1)])


# --- logcumsumexp keeps its range ------------------------------------------------------------------

def test_logcumsumexp_neither_overflows_nor_underflows():
    x = gl.tensor([-1000.0, 0.0, 1000.0, -float("inf")], dtype=gl.float64)
    assert_close(x.logcumsumexp(0), np.logaddexp.accumulate(x.numpy()))
    assert gl.logcumsumexp(gl.full((3,), -float("inf")), 0).tolist() == [-float("inf")] * 3
    assert gl.logcumsumexp(gl.tensor([1, 2]), 0).dtype is gl.float32


def test_logcumsumexp_gradient_where_the_weights_change_sign():
    x = leaf(randn(6))
    out = x.logcumsumexp(0)
    g = randn(6, seed=3)
    out.backward(gl.tensor(g))
    expected = [sum(g[j] * np.exp(x.detach().numpy()[i] - out.detach().numpy()[j]) for j in range(i, 6))
                for i in range(6)]
    assert_close(x.grad, expected)


def test_cummax_cummin_indices_ties_and_nan_as_in_torch():
    nan = float("nan")
    values, indices = gl.cummax(gl.tensor([1.0, 1.0, 0.0, 2.0, nan, 3.0, nan, 5.0]), 0)
    assert indices.tolist() == [0, 1, 1, 3, 4, 4, 6, 6] and indices.dtype is gl.int64
    assert values.tolist()[:4] == [1.0, 1.0, 1.0, 2.0] and np.isnan(values.tolist()[4:]).all()
    result = gl.tensor([[1, 3], [2, 0]]).cummin(1)
    assert result.values.tolist() == [[1, 1], [2, 0]] and result.indices.tolist() == [[0, 0], [0, 1]]
    assert gl.cummax(gl.tensor(3.0), 0).indices.item() == 0
    if torch is not None:
        t = torch.cummin(torch.tensor([1.0, 1.0, 2.0, 0.0, nan, 3.0]), 0)
        ours = gl.cummin(gl.tensor([1.0, 1.0, 2.0, 0.0, nan, 3.0]), 0)
        assert ours.indices.tolist() == t.indices.tolist()


def test_cummax_gradient_goes_to_the_element_that_was_taken():
    x = leaf([1.0, 3.0, 2.0, 3.0])
    gl.cummax(x, 0).values.sum().backward()
    assert x.grad.tolist() == [1.0, 2.0, 0.0, 1.0]  # indices [0, 1, 1, 3]: the tie at 3 goes to the later index


# --- counts and bins: no gradient ------------------------------------------------------------------

def test_count_nonzero():
    x = gl.tensor([[0, 1, 2], [0, 0, 3]])
    assert gl.count_nonzero(x).item() == 3
    assert x.count_nonzero(dim=1).tolist() == [2, 1]
    assert gl.count_nonzero(x, dim=(0, 1)).dtype is gl.int64
    if torch is not None:
        assert torch.count_nonzero(torch.tensor(x.tolist()), dim=0).tolist() == gl.count_nonzero(x, 0).tolist()


def test_bincount_counts_and_weights():
    x = gl.tensor([0, 1, 1, 4])
    assert x.bincount().tolist() == [1, 2, 0, 0, 1]
    assert gl.bincount(x, minlength=7).tolist() == [1, 2, 0, 0, 1, 0, 0]
    weighted = gl.bincount(x, gl.tensor([0.5, 1.0, 2.0, 3.0]))
    assert weighted.dtype is gl.float32 and weighted.tolist() == [0.5, 3.0, 0.0, 0.0, 3.0]
    assert gl.bincount(x, weights=gl.tensor([1, 2, 3, 4])).dtype is gl.float64
    assert gl.bincount(gl.tensor([], dtype=gl.int64)).shape == (0,)
    if torch is not None:
        tx = torch.tensor([0, 1, 1, 4])
        assert torch.bincount(tx, torch.tensor([0.5, 1.0, 2.0, 3.0])).tolist() == weighted.tolist()


def test_histc_matches_torch_and_skips_values_outside():
    a = randn(50)
    ours = gl.histc(gl.tensor(a), bins=6, min=-1, max=1)
    inside = a[(a >= -1) & (a <= 1)]
    assert_close(ours, np.histogram(inside, 6, (-1, 1))[0])
    assert ours.dtype is gl.float64
    assert gl.tensor([1.0, 1.0]).histc(bins=3).tolist() == [0.0, 2.0, 0.0]  # one value: range [v - 1, v + 1]
    if torch is not None:
        assert_close(gl.tensor(a).histc(5), torch.histc(torch.tensor(a), 5))


@pytest.mark.parametrize("bins, kwargs", [(4, {}), (3, {"range": (-1.0, 2.0)}), (5, {"density": True}),
                                          ("edges", {"weight": True}), ("edges", {"density": True, "weight": True})])
def test_histogram_matches_numpy_and_torch(bins, kwargs):
    a, w = randn(40), np.abs(randn(40, seed=1))
    edges = np.array([-2.0, -0.5, 0.0, 0.3, 2.5])
    ours_bins = gl.tensor(edges) if bins == "edges" else bins
    ours_kwargs = dict(kwargs, weight=gl.tensor(w)) if kwargs.get("weight") else kwargs
    hist, bin_edges = gl.histogram(gl.tensor(a), ours_bins, **ours_kwargs)
    np_kwargs = {k: (w if k == "weight" else v) for k, v in kwargs.items()}
    np_kwargs = {("weights" if k == "weight" else k): v for k, v in np_kwargs.items()}
    want_hist, want_edges = np.histogram(a, edges if bins == "edges" else bins, **np_kwargs)
    assert_close(hist, want_hist)
    assert_close(bin_edges, want_edges)
    if torch is not None:
        theirs_kwargs = dict(kwargs, weight=torch.tensor(w)) if kwargs.get("weight") else kwargs
        theirs = torch.histogram(torch.tensor(a), torch.tensor(edges) if bins == "edges" else bins, **theirs_kwargs)
        assert_close(hist, theirs.hist)
        assert_close(bin_edges, theirs.bin_edges)
    result = gl.tensor(a).histogram(ours_bins, **ours_kwargs)
    assert result.hist is not None and result.bin_edges is not None  # a namedtuple, as in PyTorch


def test_aminmax_is_a_namedtuple():
    result = gl.aminmax(gl.tensor([[1.0, 5.0], [3.0, 0.0]]), dim=0)
    assert result.min.tolist() == [1.0, 0.0] and result.max.tolist() == [3.0, 5.0]


def test_var_mean_takes_unbiased_positionally():
    x = gl.tensor(randn(3, 4))
    v, m = gl.var_mean(x, 1, False)
    assert_close(v, np.var(x.numpy(), 1))
    v, m = gl.std_mean(x, unbiased=False)
    assert_close(v, np.std(x.numpy()))


def test_renorm_in_place():
    a = randn(3, 4) * 3
    x = gl.tensor(a)
    assert x.renorm_(2, 0, 1.0) is x
    assert_close(x, _np_renorm(a, 2, 0, 1.0))


def test_max_takes_dim_or_other_not_both():
    with pytest.raises(TypeError, match=r"max\(\): give dim or other, not both"):
        gl.max(gl.ones(2), 0, other=gl.ones(2))


def test_diff_of_bool_is_not_equal():
    x = gl.tensor([True, True, False, True])
    assert x.diff().tolist() == [False, True, True]


# --- errors name the op, the values and the fix -----------------------------------------------------

@pytest.mark.parametrize("call, error, message", [
    (lambda: gl.nanmean(gl.tensor([1, 2])), RuntimeError, r"nanmean\(\): expected input to have floating point dtype "
                                                         r"but got int64 tensor .*convert it first with .float\(\)"),
    (lambda: gl.var_mean(gl.ones(3), unbiased=True, correction=0), RuntimeError,
     r"var_mean\(\): cannot pass both correction and unbiased"),
    (lambda: gl.aminmax(gl.ones(0)), RuntimeError, r"aminmax\(\): cannot compute aminmax over an empty dimension"),
    (lambda: gl.cov(gl.ones(2, 2, 2)), RuntimeError, r"cov\(\): expected input to have two or fewer dimensions but got "
                                                     r"an input with 3 dimensions"),
    (lambda: gl.cov(gl.ones(2, 3), fweights=gl.tensor([1, 2])), RuntimeError,
     r"cov\(\): expected fweights to have the same numel as there are observations in the input but got 2 != 3"),
    (lambda: gl.cov(gl.ones(2, 3), fweights=gl.ones(3)), RuntimeError, r"expected fweights to have integral dtype"),
    (lambda: gl.cov(gl.ones(2, 3), aweights=gl.tensor([1, 2, 3])), RuntimeError,
     r"expected aweights to have floating point dtype"),
    (lambda: gl.cov(gl.ones(2, 3), aweights=gl.tensor([1.0, -2.0, 3.0])), RuntimeError,
     r"cov\(\): aweights cannot be negative, got \[1.0, -2.0, 3.0\]"),
    (lambda: gl.corrcoef(gl.ones(2, 2, 2)), RuntimeError, r"corrcoef\(\): expected input to have two or fewer"),
    (lambda: gl.renorm(gl.ones(3), 2, 0, 1.0), RuntimeError, r"renorm: input needs at least 2 dimensions, got 1"),
    (lambda: gl.renorm(gl.ones(2, 2), 0, 0, 1.0), RuntimeError, r"renorm: non-positive-norm not supported, got p=0"),
    (lambda: gl.renorm(gl.ones(2, 2), 2, 0, -1.0), RuntimeError, r"renorm: non-negative maxnorm expected"),
    (lambda: gl.renorm(gl.ones(2, 2), 2, 2, 1.0), IndexError, r"renorm: Dimension out of range .*but got 2"),
    (lambda: gl.renorm(gl.tensor([[1, 2]]), 2, 0, 1.0), RuntimeError, r"renorm: expected a floating point tensor"),
    (lambda: gl.bincount(gl.tensor([1.0])), RuntimeError, r"bincount only supports 1-d non-negative integral inputs"),
    (lambda: gl.bincount(gl.tensor([1, -1])), RuntimeError, r"bincount only supports .* got negative values \[1, -1\]"),
    (lambda: gl.bincount(gl.tensor([1]), minlength=-1), RuntimeError, r"bincount: minlength should be >= 0, got -1"),
    (lambda: gl.bincount(gl.tensor([1, 2]), gl.ones(3)), RuntimeError,
     r"bincount: weights should be 1-d and have the same length as input"),
    (lambda: gl.histc(gl.tensor([1, 2])), RuntimeError, r"histc: expected a floating point tensor but got int64"),
    (lambda: gl.histc(gl.ones(2), bins=0), RuntimeError, r"histc: bins must be > 0, but got 0"),
    (lambda: gl.histc(gl.ones(2), 3, 2, 1), RuntimeError, r"histc: max must be larger than min, but got min=2.0 and "
                                                          r"max=1.0"),
    (lambda: gl.histogram(gl.ones(2), 3, range=(1.0, 0.0)), RuntimeError, r"histogram: min should not exceed max"),
    (lambda: gl.histogram(gl.ones(2), gl.tensor([1.0, 0.0])), RuntimeError,
     r"histogram: bin edges must be increasing, got \[1.0, 0.0\]"),
    (lambda: gl.histogram(gl.ones(2), 2, weight=gl.ones(3)), RuntimeError,
     r"histogram: if weight tensor is provided it should have the same shape as the input"),
    (lambda: gl.diff(gl.tensor(1.0)), RuntimeError, r"diff expects input to be at least one-dimensional"),
    (lambda: gl.diff(gl.ones(3), -1), RuntimeError, r"diff: order must be non-negative but got -1"),
    (lambda: gl.diff(gl.ones(2, 3), prepend=gl.ones(3)), RuntimeError,
     r"diff expects prepend to have the same number of dimensions as input \(2\), got float32 tensor of shape \(3\)"),
    (lambda: gl.gradient(gl.ones(3), edge_order=3), RuntimeError, r"gradient only supports edge_order=1 and edge_order=2"),
    (lambda: gl.gradient(gl.ones(2), edge_order=2), RuntimeError,
     r"gradient expected each dimension size to be at least edge_order\+1, but dim 0 .* has size 2"),
    (lambda: gl.gradient(gl.ones(2, 3), spacing=[1.0]), RuntimeError,
     r"gradient expected spacing to be unspecified, a scalar, or a list of length equal to the dims .* \(2\)"),
    (lambda: gl.gradient(gl.ones(3), spacing=[gl.ones(2)]), RuntimeError,
     r"gradient expected each tensor of coordinates to have one entry per sample: 2 coordinates for size 3"),
    (lambda: gl.trapezoid(gl.ones(3), gl.ones(2)), RuntimeError,
     r"trapezoid: There must be one `x` value for each sample point, but got 2 values for 3 samples"),
    (lambda: gl.trapezoid(gl.ones(3), gl.ones(3), dx=1.0), RuntimeError, r"trapezoid: received both x and dx"),
    (lambda: gl.ones(3, 5).sum_to_size(3, 2), RuntimeError, r"sum_to_size: size \[3, 2\] is not expandable to size "
                                                            r"\[3, 5\]"),
])
def test_errors_name_the_op_and_the_values(call, error, message):
    with pytest.raises(error, match=message):
        call()

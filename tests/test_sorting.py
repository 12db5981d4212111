"""Sorting and order statistics: sort, argsort, msort, topk, kthvalue, median, nanmedian, mode, quantile,
nanquantile, cummax, cummin, unique, unique_consecutive, searchsorted, bucketize."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from helpers import assert_close, leaf, randn, requires_torch, torch

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck

NAN = float("nan")
A = randn(3, 5, seed=1)  # distinct values: every order statistic has one answer


def _torch_args(args):
    return [torch.from_numpy(a.detach().numpy().copy()) if isinstance(a, gl.Tensor) else a for a in args]


def _same(ours, theirs):
    """Compare results (tensors, tuples, named tuples) field by field, shapes and dtypes included."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        if hasattr(theirs, "_fields"):
            assert ours._fields == theirs._fields
        for a, b in zip(ours, theirs):
            _same(a, b)
        return
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=0)
    assert ours.shape == tuple(theirs.shape)


# (id, op name, args after the tensor, kwargs, input)
FORWARD = [
    ("sort", "sort", (), {}, A),
    ("sort dim 0 descending", "sort", (0, True), {}, A),
    ("sort stable keyword", "sort", (), {"dim": -1, "stable": True, "descending": True}, A),
    ("sort ties and NaN", "sort", (), {"stable": True}, np.array([2.0, NAN, 1.0, NAN, 2.0])),
    ("sort descending ties and NaN", "sort", (), {"descending": True, "stable": True}, np.array([2.0, NAN, 1.0, NAN, 2.0])),
    ("sort int", "sort", (), {"stable": True}, np.array([[3, 1, 3], [0, -2, 0]])),
    ("sort bool", "sort", (), {"stable": True}, np.array([True, False, True])),
    ("sort 0-d", "sort", (), {}, np.array(3.0)),
    ("sort empty", "sort", (1,), {}, np.zeros((2, 0))),
    ("argsort", "argsort", (1,), {"descending": True}, A),
    ("argsort stable ties", "argsort", (), {"stable": True}, np.array([1, 0, 1, 0, 1])),
    ("msort", "msort", (), {}, A),
    ("topk", "topk", (2,), {}, A),
    ("topk smallest dim 0", "topk", (2, 0, False), {}, A),
    ("topk NaN is largest", "topk", (2,), {}, np.array([1.0, NAN, 0.5, 3.0])),
    ("topk k=0", "topk", (0,), {}, A),
    ("topk 0-d", "topk", (1,), {}, np.array(2.0)),
    ("kthvalue", "kthvalue", (2,), {}, A),
    ("kthvalue dim 0 keepdim", "kthvalue", (3, 0, True), {}, A),
    ("median dim", "median", (1,), {}, A),
    ("median even count: the lower middle", "median", (0, True), {}, A[:2]),
    ("median NaN: the first NaN", "median", (0,), {}, np.array([2.0, NAN, 1.0, NAN, 2.0])),
    ("median whole tensor", "median", (), {}, A),
    ("median empty is NaN", "median", (), {}, np.zeros(0)),
    ("median int", "median", (1,), {}, np.array([[5, 1, 4], [2, 9, 0]])),
    ("median 0-d", "median", (0,), {}, np.array(4.0)),
    ("nanmedian", "nanmedian", (0,), {}, np.array([2.0, NAN, 1.0, NAN, 2.0])),
    ("nanmedian all NaN row", "nanmedian", (1,), {}, np.array([[NAN, NAN], [1.0, NAN]])),
    ("nanmedian whole", "nanmedian", (), {}, np.array([[NAN, 3.0], [1.0, NAN]])),
    ("mode: smallest of the most frequent, its last index", "mode", (), {}, np.array([3.0, 1, 1, 2, 1, 3, 3])),
    ("mode ties", "mode", (), {}, np.array([2, 1, 1, 2, 3])),
    ("mode NaNs are all different", "mode", (), {}, np.array([2.0, NAN, NAN, 1.0])),
    ("mode dim 0 keepdim", "mode", (0, True), {}, np.array([[1, 2], [1, 3], [0, 3]])),
    ("cummax", "cummax", (1,), {}, A),
    ("cummax ties and NaN", "cummax", (0,), {}, np.array([1.0, 1, 0, 1, NAN, 2, NAN, 1])),
    ("cummin ties and NaN", "cummin", (0,), {}, np.array([1.0, 1, 2, 1, NAN, 0, NAN])),
    ("cummax int dim 0", "cummax", (0,), {}, np.array([[1, 5], [3, 5], [2, 7]])),
    ("cummin 0-d", "cummin", (0,), {}, np.array(1.5)),
    ("quantile", "quantile", (0.3,), {}, A),
    ("quantile dim keepdim", "quantile", (0.3, 1, True), {}, A),
    ("quantile NaN", "quantile", (0.5, 1), {}, np.array([[1.0, 2, 3], [2, NAN, 4]])),
    ("quantile dim None keepdim", "quantile", (0.5, None, True), {}, A),
    ("quantile 0-d", "quantile", (0.5, 0, True), {}, np.array(3.0)),
    ("nanquantile", "nanquantile", (0.25, 1), {}, np.array([[1.0, 2, 3, 4], [2, NAN, 4, 0], [NAN, NAN, NAN, NAN]])),
    ("unique", "unique", (), {"return_inverse": True, "return_counts": True}, np.array([2.0, NAN, 1.0, NAN, 2.0])),
    ("unique int", "unique", (), {"return_counts": True}, np.array([[3, 1], [2, 1]])),
    ("unique inverse keeps the shape", "unique", (), {"return_inverse": True}, np.array([[3, 1], [2, 1]])),
    ("unique dim 0", "unique", (), {"dim": 0, "return_inverse": True, "return_counts": True},
     np.array([[1, 2], [0, 5], [1, 2]])),
    ("unique dim 1", "unique", (), {"dim": 1, "return_inverse": True}, np.array([[1, 2, 1, 0], [3, 1, 3, 0]])),
    ("unique empty", "unique", (), {"return_counts": True}, np.zeros(0)),
    ("unique_consecutive", "unique_consecutive", (), {"return_inverse": True, "return_counts": True},
     np.array([1, 1, 2, 2, 1, 3])),
    ("unique_consecutive dim 0", "unique_consecutive", (), {"dim": 0, "return_counts": True},
     np.array([[1, 2], [1, 2], [0, 5], [1, 2]])),
]


@requires_torch
@pytest.mark.parametrize("name, args, kwargs, data", [f[1:] for f in FORWARD], ids=[f[0] for f in FORWARD])
def test_forward_matches_torch(name, args, kwargs, data):
    ours = getattr(gl, name)(gl.tensor(data), *args, **kwargs)
    theirs = getattr(torch, name)(torch.from_numpy(np.array(data)), *args, **kwargs)
    _same(ours, theirs)


@requires_torch
@pytest.mark.parametrize("name, args, kwargs, data", [f[1:] for f in FORWARD[:12]], ids=[f[0] for f in FORWARD[:12]])
def test_method_forms_match_the_functional_forms(name, args, kwargs, data):
    x = gl.tensor(data)
    _same(getattr(x, name)(*args, **kwargs), _torch_result(getattr(gl, name)(x, *args, **kwargs)))


def _torch_result(result):
    """A gradlab result in torch's types, so _same can compare two gradlab results."""
    if isinstance(result, tuple):
        return type(result)(*(_torch_result(r) for r in result))
    return torch.from_numpy(result.numpy().copy())


# --- against numpy ----------------------------------------------------------------------------


def test_sort_against_numpy_stable():
    data = np.random.default_rng(0).integers(0, 4, size=(4, 9))
    result = gl.sort(gl.tensor(data), dim=1, stable=True)
    assert_close(result.values, np.sort(data, axis=1, kind="stable"))
    assert_close(result.indices, np.argsort(data, axis=1, kind="stable"))


def test_descending_stable_sort_keeps_equal_values_in_their_order():
    x = gl.tensor([1, 0, 1, 2, 0, 1])
    assert gl.argsort(x, descending=True, stable=True).tolist() == [3, 0, 2, 5, 1, 4]


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_against_numpy(interpolation):
    q = np.array([0.0, 0.1, 0.5, 0.625, 0.9, 1.0])
    out = gl.quantile(gl.tensor(A), gl.tensor(q), dim=1, interpolation=interpolation)
    assert_close(out, np.quantile(A, q, axis=1, method=interpolation), rtol=1e-12)


def test_nanquantile_and_nanmedian_against_numpy():
    data = A.copy()
    data[0, 1] = data[2, 4] = NAN
    assert_close(gl.nanquantile(gl.tensor(data), 0.4, dim=1), np.nanquantile(data, 0.4, axis=1), rtol=1e-12)
    lower_middle = np.nanquantile(data[:, :3], 0.5, axis=1, method="lower")  # torch and gradlab: no averaging
    assert_close(gl.nanmedian(gl.tensor(data[:, :3]), 1).values, lower_middle)


def test_unique_against_numpy():
    data = np.random.default_rng(2).integers(-3, 3, size=(4, 5))
    values, inverse, counts = gl.unique(gl.tensor(data), return_inverse=True, return_counts=True)
    expected = np.unique(data, return_inverse=True, return_counts=True)
    assert_close(values, expected[0])
    assert_close(inverse, expected[1].reshape(data.shape))
    assert_close(counts, expected[2])
    rows = np.array([[1, 2], [0, 5], [1, 2], [0, 4]])
    assert_close(gl.unique(gl.tensor(rows), dim=0), np.unique(rows, axis=0))


def test_cummax_cummin_values_against_numpy():
    assert_close(gl.cummax(gl.tensor(A), 1).values, np.maximum.accumulate(A, axis=1))
    assert_close(gl.cummin(gl.tensor(A), 0).values, np.minimum.accumulate(A, axis=0))


def test_searchsorted_against_numpy():
    seq = np.sort(randn(7, seed=3))
    values = randn(2, 4, seed=4)
    for side in ("left", "right"):
        out = gl.searchsorted(gl.tensor(seq), gl.tensor(values), side=side)
        assert out.dtype is gl.int64
        assert_close(out, np.searchsorted(seq, values, side=side))


# --- searchsorted and bucketize against torch ----------------------------------------------------

SEARCHES = [
    ("1-D boundaries", [1.0, 2, 2, 3], [[0.0, 2, 5], [2.5, 1, 3]], {}),
    ("right", [1.0, 2, 2, 3], [0.0, 2, 5], {"right": True}),
    ("side right", [1.0, 2, 2, 3], [0.0, 2, 5], {"side": "right"}),
    ("out_int32", [1, 3, 5], [0, 3, 9], {"out_int32": True}),
    ("rows", [[1.0, 2, 3], [2, 4, 6]], [[0.0, 2, 5, 9], [3, 4, 5, 7]], {}),
    ("NaN in the values and the boundaries", [[1.0, 2, 3], [2, 4, NAN]], [[0.0, 2, 5, NAN], [0, 2, 5, NAN]],
     {"right": True}),
    ("NaN left", [1.0, 2, NAN], [0.0, 2, 5, NAN], {}),
    ("empty boundaries", np.zeros(0), [1.0, 2], {}),
]


@requires_torch
@pytest.mark.parametrize("seq, values, kwargs", [s[1:] for s in SEARCHES], ids=[s[0] for s in SEARCHES])
def test_searchsorted_matches_torch(seq, values, kwargs):
    ours = gl.searchsorted(gl.tensor(seq), gl.tensor(values), **kwargs)
    _same(ours, torch.searchsorted(torch.tensor(seq), torch.tensor(values), **kwargs))


@requires_torch
def test_searchsorted_with_sorter_and_a_number():
    seq = [3.0, 1, 2]
    sorter = [1, 2, 0]
    ours = gl.searchsorted(gl.tensor(seq), gl.tensor([2.5, 0.0]), sorter=gl.tensor(sorter))
    _same(ours, torch.searchsorted(torch.tensor(seq), torch.tensor([2.5, 0.0]), sorter=torch.tensor(sorter)))
    _same(gl.searchsorted(gl.tensor([1.0, 2]), 1.5), torch.searchsorted(torch.tensor([1.0, 2]), 1.5))


@requires_torch
@pytest.mark.parametrize("right", [False, True])
def test_bucketize_matches_torch(right):
    boundaries, values = [1.0, 3, 5, 7], [[0.0, 1, 3], [4, 7, 9]]
    ours = gl.bucketize(gl.tensor(values), gl.tensor(boundaries), right=right)
    _same(ours, torch.bucketize(torch.tensor(values), torch.tensor(boundaries), right=right))


# --- return types --------------------------------------------------------------------------------


@pytest.mark.parametrize("name, call", [
    ("sort", lambda x: x.sort()), ("topk", lambda x: x.topk(1)), ("kthvalue", lambda x: x.kthvalue(1)),
    ("median", lambda x: x.median(0)), ("nanmedian", lambda x: x.nanmedian(0)), ("mode", lambda x: x.mode()),
    ("cummax", lambda x: x.cummax(0)), ("cummin", lambda x: x.cummin(0)),
])
def test_results_are_named_tuples_of_values_and_indices(name, call):
    result = call(gl.tensor([2.0, 1.0, 3.0]))
    assert isinstance(result, getattr(gl.return_types, name))
    assert type(result).__name__ == name and result._fields == ("values", "indices")
    values, indices = result
    assert values is result.values and indices.dtype is gl.int64 and not indices.requires_grad


def test_indices_of_ties_point_at_equal_values():
    x = gl.tensor([3.0, 1, 1, 2, 1, 3, 3])
    for values, indices in (x.topk(3), x.topk(3, largest=False), x.kthvalue(2), x.median(0)):
        assert_close(x[indices], values)


# --- gradients: they go to the chosen elements ---------------------------------------------------

GRADS = [
    ("sort", lambda x: gl.sort(x, 1, descending=True).values),
    ("msort", gl.msort),
    ("topk", lambda x: x.topk(2, dim=0).values),
    ("kthvalue", lambda x: x.kthvalue(3, 1, keepdim=True).values),
    ("median dim", lambda x: x.median(1).values),
    ("median", gl.median),
    ("nanmedian", lambda x: x.nanmedian(0).values),
    ("mode", lambda x: x.mode(1).values),
    ("cummax", lambda x: x.cummax(1).values),
    ("cummin", lambda x: x.cummin(0).values),
    ("quantile linear", lambda x: x.quantile(gl.tensor([0.2, 0.7], dtype=gl.float64), dim=1)),
    ("quantile whole", lambda x: x.quantile(0.45)),
    ("quantile midpoint", lambda x: x.quantile(0.5, dim=0, interpolation="midpoint")),
    ("quantile lower", lambda x: x.quantile(0.3, dim=1, keepdim=True, interpolation="lower")),
    ("quantile higher", lambda x: x.quantile(0.3, dim=1, interpolation="higher")),
    ("quantile nearest", lambda x: x.quantile(0.3, dim=1, interpolation="nearest")),
    ("nanquantile", lambda x: x.nanquantile(0.6, dim=1)),
]


@pytest.mark.parametrize("fn", [g[1] for g in GRADS], ids=[g[0] for g in GRADS])
def test_gradcheck(fn):
    assert gradcheck(fn, (leaf(A),))


def test_gradgradcheck_of_sort_and_quantile():
    assert gradgradcheck(lambda x: gl.sort(x, 0).values * x, (leaf(A),))
    assert gradgradcheck(lambda x: x.quantile(0.3, dim=1) ** 2, (leaf(A),))


def test_cummax_sends_each_gradient_to_the_running_maximum():
    x = leaf([1.0, 3.0, 2.0, 3.0, 0.0])
    x.cummax(0).values.backward(gl.tensor([1.0, 10, 100, 1000, 10000], dtype=gl.float64))
    assert x.grad.tolist() == [1.0, 110.0, 0.0, 11000.0, 0.0]  # ties go to the later element, as in torch


@requires_torch
@pytest.mark.parametrize("fn", [
    lambda m, x: m.quantile(x, 0.35, dim=1), lambda m, x: m.cummin(x, 1).values, lambda m, x: m.topk(x, 2).values,
    lambda m, x: x.median(0).values, lambda m, x: m.sort(x, 0, descending=True).values,
    lambda m, x: m.nanquantile(x, 0.8, dim=0, interpolation="midpoint"),
], ids=["quantile", "cummin", "topk", "median", "sort", "nanquantile"])
def test_gradients_match_torch(fn):
    ours, theirs = leaf(A), torch.tensor(A, requires_grad=True)
    out, expected = fn(gl, ours), fn(torch, theirs)
    weights = randn(*expected.shape, seed=9)
    (out * gl.tensor(weights)).sum().backward()
    (expected * torch.from_numpy(weights)).sum().backward()
    assert_close(ours.grad, theirs.grad)


def test_integer_inputs_sort_without_gradients():
    x = gl.tensor([[3, 1], [0, 2]])
    assert gl.sort(x).values.tolist() == [[1, 3], [0, 2]]
    assert gl.topk(x, 1, dim=0).values.dtype is gl.int64


# --- errors ------------------------------------------------------------------------------------


def test_topk_k_out_of_range():
    with pytest.raises(RuntimeError, match=r"topk\(\): selected index k out of range: k=4 but dimension -1 .* has size 3"):
        gl.topk(gl.tensor([1.0, 2, 3]), 4)


def test_kthvalue_k_out_of_range():
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension -1: k=0"):
        gl.kthvalue(gl.tensor([1.0, 2, 3]), 0)


def test_median_mode_and_kthvalue_of_an_empty_dim():
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size"):
        gl.median(gl.zeros(2, 0), 1)
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 1 to have non-zero size"):
        gl.mode(gl.zeros(2, 0), 1)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim -1 to have non-zero size"):
        gl.kthvalue(gl.zeros(0), 1)


def test_dim_must_be_an_int():
    with pytest.raises(TypeError, match=r"sort\(\): argument 'dim' must be an int, not float \(1.0\)"):
        gl.sort(gl.tensor(A), 1.0)
    with pytest.raises(IndexError, match=r"cummax: Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        gl.cummax(gl.tensor(A), 2)


@pytest.mark.parametrize("call, error, message", [
    (lambda: gl.quantile(gl.tensor([1.0, 2]), 1.5), RuntimeError, r"quantile\(\) q values must be in the range \[0, 1\]"),
    (lambda: gl.quantile(gl.tensor([1.0, 2]), NAN), RuntimeError, r"must be in the range \[0, 1\]"),
    (lambda: gl.quantile(gl.tensor([1, 2]), 0.5), RuntimeError, r"quantile\(\) input tensor must be either float or double"),
    (lambda: gl.nanquantile(gl.zeros(0), 0.5), IndexError, r"nanquantile\(\) input tensor must be non-empty"),
    (lambda: gl.quantile(gl.tensor([1.0]), 0.5, interpolation="cubic"), ValueError, r"interpolation must be one of linear"),
    (lambda: gl.quantile(gl.tensor([1.0]), gl.tensor([[0.5]])), RuntimeError, r"q must be a scalar or 1D tensor"),
    (lambda: gl.quantile(gl.tensor([1.0]), gl.tensor([0.5], dtype=gl.float64)), RuntimeError, r"q tensor must be same dtype"),
    (lambda: gl.quantile(gl.tensor([1.0]), "half"), TypeError, r"q must be a float or a tensor"),
])
def test_quantile_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_searchsorted_and_bucketize_errors():
    with pytest.raises(RuntimeError, match=r"first N-1 dimensions of boundaries tensor and input value tensor must "
                                           r"match, but we got boundaries tensor \[2, 2\] and input value tensor \[3, 2\]"):
        gl.searchsorted(gl.zeros(2, 2), gl.zeros(3, 2))
    with pytest.raises(RuntimeError, match=r"side and right can't be set to opposites"):
        gl.searchsorted(gl.zeros(2), gl.zeros(1), right=True, side="left")
    with pytest.raises(RuntimeError, match=r"side can only be 'left' or 'right' but got 'middle'"):
        gl.searchsorted(gl.zeros(2), gl.zeros(1), side="middle")
    with pytest.raises(RuntimeError, match=r"bucketize\(\): boundaries tensor must be 1 dimension, but got \[2, 2\]"):
        gl.bucketize(gl.zeros(1), gl.zeros(2, 2))
    with pytest.raises(RuntimeError, match=r"sorter must be an int64 tensor of the boundaries' shape \[3\]"):
        gl.searchsorted(gl.zeros(3), gl.zeros(1), sorter=gl.tensor([0, 1]))


# --- properties on random inputs -----------------------------------------------------------------

FLOATS_WITH_TIES_AND_NAN = arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(1, 8)),
                                  elements=st.sampled_from([-1.0, 0.0, 0.5, 2.0, NAN]))


@settings(max_examples=60, deadline=None)
@given(FLOATS_WITH_TIES_AND_NAN, st.booleans())
def test_stable_sort_matches_numpy_and_torch(data, descending):
    result = gl.sort(gl.tensor(data), dim=1, descending=descending, stable=True)
    if not descending:
        assert_close(result.indices, np.argsort(data, axis=1, kind="stable"))
    if torch is not None:
        expected = torch.sort(torch.from_numpy(data), dim=1, descending=descending, stable=True)
        assert_close(result.indices, expected.indices)
        np.testing.assert_array_equal(result.values.numpy(), expected.values.numpy())


@settings(max_examples=30, deadline=None)
@given(FLOATS_WITH_TIES_AND_NAN)
def test_order_statistics_match_torch_values(data):
    x, n = gl.tensor(data), data.shape[1]
    for k in {1, n, (n + 1) // 2}:
        assert_close(x.kthvalue(k, 1).values, np.sort(data, axis=1)[:, k - 1])
    if torch is not None:
        t = torch.from_numpy(data)
        for ours, theirs in ((x.median(1), t.median(1)), (x.nanmedian(1), t.nanmedian(1)),
                             (x.cummax(1), t.cummax(1)), (x.cummin(1), t.cummin(1))):
            np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
        for ours, theirs in ((x.cummax(1), t.cummax(1)), (x.cummin(1), t.cummin(1))):
            assert_close(ours.indices, theirs.indices)  # chosen by a rule (the later of equals): the same one
        # torch interpolates with a fused multiply-add: the last digit may differ
        assert_close(x.quantile(0.3, 1), t.quantile(0.3, 1), rtol=1e-13, atol=1e-15)
        numbers = ~np.isnan(data).any(axis=1)  # torch's mode with a NaN around depends on how its sort met it
        if numbers.any():
            ours, theirs = gl.tensor(data[numbers]).mode(1), torch.from_numpy(data[numbers]).mode(1)
            np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
            assert_close(ours.indices, theirs.indices)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.integers(0, 8), elements=st.sampled_from([-1.0, 0.0, 0.5, 2.0])),
       arrays(np.float64, st.integers(0, 5), elements=st.sampled_from([-2.0, -1.0, 0.25, 0.5, 3.0])), st.booleans())
def test_searchsorted_matches_numpy(boundaries, values, right):
    boundaries = np.sort(boundaries)
    out = gl.searchsorted(gl.tensor(boundaries), gl.tensor(values), right=right)
    assert_close(out, np.searchsorted(boundaries, values, side="right" if right else "left"))

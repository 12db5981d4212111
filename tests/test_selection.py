"""Selecting by position or mask and diagonals: nonzero, argwhere, masked_select/scatter, take, put, select,
select_scatter, slice_scatter, diagonal, diagonal_scatter, diag, diag_embed, diagflat, trace, fill_diagonal_,
tril_indices, triu_indices."""

import numpy as np
import pytest
from helpers import assert_close, leaf, randn, requires_torch, torch

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck

A = randn(3, 4, seed=5)
B = randn(2, 3, 4, seed=6)
MASK = A > 0


def _same(ours, theirs):
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _same(a, b)
        return
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, atol=0)


def _to(module, value):
    if isinstance(value, np.ndarray):
        return gl.tensor(value) if module is gl else torch.from_numpy(value.copy())
    return value


# (id, function, args): each arg a numpy array (made a tensor of either library) or a plain value
FORWARD = [
    ("nonzero", lambda m, x: m.nonzero(x), (np.array([[0, 1], [2, 0]]),)),
    ("nonzero as_tuple", lambda m, x: m.nonzero(x, as_tuple=True), (np.array([[0, 1.5], [2, 0]]),)),
    ("nonzero 0-d", lambda m, x: m.nonzero(x), (np.array(5),)),
    ("nonzero 0-d as_tuple", lambda m, x: m.nonzero(x, as_tuple=True), (np.array(0),)),
    ("nonzero bool", lambda m, x: x.nonzero(), (MASK,)),
    ("nonzero_static padded", lambda m, x: m.nonzero_static(x, size=4), (np.array([0, 1, 2]),)),
    ("nonzero_static cut", lambda m, x: m.nonzero_static(x, size=1, fill_value=9), (np.array([0, 1, 2]),)),
    ("argwhere", lambda m, x: m.argwhere(x), (B > 0,)),
    ("masked_select", lambda m, x, mask: m.masked_select(x, mask), (A, MASK)),
    ("masked_select broadcast mask", lambda m, x, mask: x.masked_select(mask), (A, MASK[0])),
    ("masked_select broadcast input", lambda m, x, mask: x.masked_select(mask), (A[0], MASK)),
    ("masked_scatter", lambda m, x, mask, s: x.masked_scatter(mask, s), (A, MASK, randn(20, seed=7))),
    ("masked_scatter broadcast", lambda m, x, mask, s: x.masked_scatter(mask, s), (A, MASK[1], randn(3, 4, seed=8))),
    ("take", lambda m, x, i: m.take(x, i), (A, np.array([[0, 11], [-1, 5]]))),
    ("put", lambda m, x, i, s: x.put(i, s), (A, np.array([-1, 0, 5]), np.array([7.0, 8.0, 9.0]))),
    ("put accumulate", lambda m, x, i, s: m.Tensor.put(x, i, s, accumulate=True), (A, np.array([0, 0, 5]),
                                                                                      np.array([7.0, 8.0, 9.0]))),
    ("select", lambda m, x: m.select(x, 1, -1), (A,)),
    ("select keywords", lambda m, x: x.select(dim=0, index=2), (A,)),
    ("select_scatter", lambda m, x, s: m.select_scatter(x, s, 1, 0), (A, np.array([7.0, 8.0, 9.0]))),
    ("slice_scatter", lambda m, x, s: m.slice_scatter(x, s, 1, 1), (A, np.ones((3, 3)))),
    ("slice_scatter step", lambda m, x, s: x.slice_scatter(s, dim=1, start=0, end=4, step=2), (A, np.ones((3, 2)))),
    ("slice_scatter dim 0 default", lambda m, x, s: m.slice_scatter(x, s), (A, np.zeros((3, 4)))),
    ("diagonal", lambda m, x: m.diagonal(x), (A,)),
    ("diagonal offset dims", lambda m, x: m.diagonal(x, 1, 0, 2), (B,)),
    ("diagonal negative offset, swapped dims", lambda m, x: x.diagonal(-1, 2, 1), (B,)),
    ("diagonal keywords", lambda m, x: x.diagonal(offset=2, dim1=-1, dim2=-2), (B,)),
    ("diagonal past the matrix", lambda m, x: m.diagonal(x, 5), (A,)),
    ("diagonal_scatter", lambda m, x, s: m.diagonal_scatter(x, s, 1), (A, np.array([1.0, 2.0, 3.0]))),
    ("diagonal_scatter dims", lambda m, x, s: x.diagonal_scatter(s, 0, 1, 2), (B, np.ones((2, 3)))),
    ("diag of a vector", lambda m, x: m.diag(x, -1), (np.array([1, 2]),)),
    ("diag of a matrix", lambda m, x: m.diag(x, 1), (A,)),
    ("diag_embed", lambda m, x: m.diag_embed(x), (A,)),
    ("diag_embed offset dims", lambda m, x: m.diag_embed(x, 1, 0, 2), (np.array([[1, 2], [3, 4]]),)),
    ("diagflat", lambda m, x: m.diagflat(x, 1), (np.array([[1, 2], [3, 4]]),)),
    ("trace", lambda m, x: m.trace(x), (A,)),
    ("trace int", lambda m, x: x.trace(), (np.arange(6).reshape(2, 3),)),
    ("fill_diagonal_", lambda m, x: x.fill_diagonal_(1.0), (np.zeros((5, 3)),)),
    ("fill_diagonal_ wrap", lambda m, x: x.fill_diagonal_(1.0, wrap=True), (np.zeros((7, 3)),)),
    ("fill_diagonal_ wide", lambda m, x: x.fill_diagonal_(2.0), (np.zeros((2, 4)),)),
    ("fill_diagonal_ cube", lambda m, x: x.fill_diagonal_(3.0), (np.zeros((3, 3, 3)),)),
    ("select_copy", lambda m, x: m.select_copy(x, 1, -1), (A,)),
    ("slice_copy", lambda m, x: m.slice_copy(x, 1, 1, 4, 2), (A,)),
    ("diagonal_copy", lambda m, x: m.diagonal_copy(x, 1, 2, 0), (B,)),
    ("tril_indices", lambda m: m.tril_indices(3, 4, 1), ()),
    ("triu_indices", lambda m: m.triu_indices(4, 3, -1), ()),
    ("tril_indices empty", lambda m: m.tril_indices(0, 3), ()),
]


@requires_torch
@pytest.mark.parametrize("fn, args", [f[1:] for f in FORWARD], ids=[f[0] for f in FORWARD])
def test_forward_matches_torch(fn, args):
    _same(fn(gl, *(_to(gl, a) for a in args)), fn(torch, *(_to(torch, a) for a in args)))


def test_against_numpy():
    x = gl.tensor(B)
    assert_close(gl.nonzero(x > 0), np.argwhere(B > 0))
    assert_close(gl.masked_select(x, x > 0), B[B > 0])
    assert_close(gl.take(x, gl.tensor([[3, -2]])), np.take(B, [[3, -2]]))
    assert_close(gl.diagonal(x, 1, 1, 2), np.diagonal(B, 1, 1, 2))
    assert_close(gl.diag(gl.tensor([1.0, 2.0]), 1), np.diag([1.0, 2.0], 1))
    assert_close(gl.trace(gl.tensor(A)), np.trace(A))
    rows, cols = gl.triu_indices(4, 5, 1)
    assert_close(rows, np.triu_indices(4, 1, 5)[0])
    assert_close(cols, np.triu_indices(4, 1, 5)[1])


def test_the_copy_forms_are_not_views():
    x = gl.tensor(A)
    for copy in (gl.select_copy(x, 0, 1), gl.slice_copy(x, 1, 0, 2), gl.diagonal_copy(x)):
        copy.fill_(0.0)
    assert_close(x, A)


@pytest.mark.parametrize("flat, shape", [
    (np.array([[0, 7], [23, 11]]), (2, 3, 4)), (np.array([[1234], [5678]]), (10, 10, 10, 10)), (np.array(5), 6),
])
def test_unravel_index_against_numpy(flat, shape):
    """(numpy, not torch: torch.unravel_index takes seconds to load on its first call)"""
    ours = gl.unravel_index(gl.tensor(flat), shape)
    expected = np.unravel_index(flat, shape)
    assert len(ours) == len(expected)
    for coordinate, expected_coordinate in zip(ours, expected):
        assert coordinate.dtype is gl.int64
        assert_close(coordinate, expected_coordinate)


def test_diagonal_is_a_view():
    x = gl.zeros(3, 3)
    d = x.diagonal(1)
    d.fill_(7.0)
    assert x.tolist() == [[0, 7, 0], [0, 0, 7], [0, 0, 0]]
    assert d._version is x._version
    assert x.select(0, 1)._base is x  # select is a view too


def test_fill_diagonal_records_the_gradient():
    w = leaf(A)
    y = w * 1.0
    y.fill_diagonal_(0.0)
    y.sum().backward()
    expected = np.ones_like(A)
    np.fill_diagonal(expected, 0.0)
    assert_close(w.grad, expected)


# --- gradients ---------------------------------------------------------------------------------

GRADS = [
    ("masked_select", lambda x: gl.masked_select(x, gl.tensor(MASK))),
    ("masked_select broadcast", lambda x: x.masked_select(gl.tensor(np.array([True, False, True, True])))),
    ("take", lambda x: gl.take(x, gl.tensor([[0, 11], [-1, 0]]))),
    ("select", lambda x: x.select(1, -2)),
    ("diagonal", lambda x: x.diagonal(1)),
    ("diag of a matrix", lambda x: gl.diag(x, -1)),
    ("diag of a vector", lambda x: gl.diag(x[0], 1)),
    ("diag_embed", lambda x: gl.diag_embed(x, -1)),
    ("diagflat", gl.diagflat),
    ("trace", gl.trace),
]


@pytest.mark.parametrize("fn", [g[1] for g in GRADS], ids=[g[0] for g in GRADS])
def test_gradcheck(fn):
    assert gradcheck(fn, (leaf(A),))


TWO_INPUT_GRADS = [
    ("masked_scatter", lambda x, s: gl.masked_scatter(x, gl.tensor(MASK), s), randn(15, seed=3)),
    ("put", lambda x, s: x.put(gl.tensor([1, -1, 4]), s), randn(3, seed=3)),
    ("put accumulate", lambda x, s: x.put(gl.tensor([1, 1, 4]), s, accumulate=True), randn(3, seed=3)),
    ("select_scatter", lambda x, s: gl.select_scatter(x, s, 1, 2), randn(3, seed=3)),
    ("slice_scatter", lambda x, s: gl.slice_scatter(x, s, 1, 1, None, 2), randn(3, 2, seed=3)),
    ("diagonal_scatter", lambda x, s: gl.diagonal_scatter(x, s, 1), randn(3, seed=3)),
]


@pytest.mark.parametrize("fn, source", [g[1:] for g in TWO_INPUT_GRADS], ids=[g[0] for g in TWO_INPUT_GRADS])
def test_gradcheck_of_writes(fn, source):
    assert gradcheck(fn, (leaf(A), leaf(source)))


def test_gradgradcheck_of_the_diagonal_pair():
    assert gradgradcheck(lambda x, s: gl.diagonal_scatter(x * x, s * s).diagonal(-1), (leaf(A), leaf(randn(3))))


@requires_torch
def test_masked_scatter_gradients_match_torch():
    source = randn(20, seed=2)
    ours_x, ours_s = leaf(A), leaf(source)
    theirs_x, theirs_s = torch.tensor(A, requires_grad=True), torch.tensor(source, requires_grad=True)
    weights = randn(3, 4, seed=4)
    (gl.masked_scatter(ours_x, gl.tensor(MASK), ours_s) * gl.tensor(weights)).sum().backward()
    (torch.masked_scatter(theirs_x, torch.tensor(MASK), theirs_s) * torch.tensor(weights)).sum().backward()
    assert_close(ours_x.grad, theirs_x.grad)
    assert_close(ours_s.grad, theirs_s.grad)


def test_in_place_forms_write_into_the_tensor():
    x = gl.tensor(A)
    assert x.put_(gl.tensor([0]), gl.tensor([5.0], dtype=gl.float64)) is x and x[0, 0].item() == 5.0
    assert x.masked_scatter_(gl.tensor(MASK), gl.zeros(12, dtype=gl.float64)) is x
    assert (x[gl.tensor(MASK)] == 0).all().item()


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("call, error, message", [
    (lambda: gl.masked_select(gl.tensor(A), gl.tensor([1, 0, 1, 1])), RuntimeError,
     r"masked_select: expected BoolTensor for mask, got int64 tensor of shape \(4\)"),
    (lambda: gl.masked_select(gl.tensor(A), gl.tensor([True, False])), RuntimeError, r"masked_select: shapes"),
    (lambda: gl.tensor(A).masked_scatter(gl.tensor(MASK), gl.zeros(2)), RuntimeError,
     r"masked_scatter: Number of elements of source < number of ones in mask: .* has 2 elements, the mask picks"),
    (lambda: gl.tensor(A).masked_scatter(gl.tensor(MASK), gl.zeros(12)), RuntimeError,
     r"masked_scatter: expected source of the same dtype as self"),
    (lambda: gl.take(gl.tensor(A), gl.tensor([12])), IndexError,
     r"take\(\): out of range: tried to access index 12 on a tensor of 12 elements \(valid indices are -12 to 11\)"),
    (lambda: gl.take(gl.tensor(A), gl.tensor([-13])), IndexError, r"tried to access index -13"),
    (lambda: gl.tensor(A).put(gl.tensor([12]), gl.tensor([1.0])), IndexError, r"put\(\): out of range: .*index 12"),
    (lambda: gl.tensor(A).put(gl.tensor([1, 2]), gl.tensor([1.0])), RuntimeError,
     r"put\(\): Expected source and index to have the same number of elements"),
    (lambda: gl.select(gl.tensor(A), 1, 4), IndexError,
     r"select\(\): index 4 out of range for tensor of size \[3, 4\] at dimension 1"),
    (lambda: gl.select(gl.tensor(2.0), 0, 0), IndexError, r"select\(\) cannot be applied to a 0-dim tensor"),
    (lambda: gl.select_scatter(gl.tensor(A), gl.zeros(4), 1, 0), RuntimeError,
     r"select_scatter\(\): expected src to have a size equal to the slice of self. src size = \[4\], slice size = \[3\]"),
    (lambda: gl.slice_scatter(gl.tensor(A), gl.zeros(3, 1), 1, 0, 4, 2), RuntimeError,
     r"slice_scatter\(\): expected src to have a size equal to the slice of self. src size = \[3, 1\], slice size = \[3, 2\]"),
    (lambda: gl.diagonal(gl.tensor(A), 0, 1, -1), RuntimeError, r"diagonal\(\): diagonal dimensions cannot be identical 1, -1"),
    (lambda: gl.diagonal(gl.zeros(3)), RuntimeError, r"diagonal\(\): expected a tensor with at least 2 dimensions"),
    (lambda: gl.diagonal_scatter(gl.zeros(3, 3), gl.ones(3), 1), RuntimeError,
     r"diagonal_scatter\(\): expected src to have a size equal to the slice of self. src size = \[3\], slice size = \[2\]"),
    (lambda: gl.diag(gl.zeros(2, 2, 2)), RuntimeError, r"diag\(\): Supports 1D or 2D tensors. Got 3D"),
    (lambda: gl.trace(gl.zeros(2, 2, 2)), RuntimeError, r"trace: expected a matrix, but got tensor with dim 3"),
    (lambda: gl.zeros(2, 3, 2).fill_diagonal_(1.0), RuntimeError,
     r"fill_diagonal_\(\): all dimensions of input must be of equal length"),
    (lambda: gl.zeros(3).fill_diagonal_(1.0), RuntimeError, r"fill_diagonal_\(\): dimensions must larger than 1"),
    (lambda: gl.tril_indices(-1, 3), RuntimeError, r"tril_indices: row must be non-negative, got -1"),
    (lambda: gl.unravel_index(gl.tensor([6]), (2, 3)), RuntimeError,
     r"unravel_index: 'indices' must be in range \[-6, 5\] for shape \[2, 3\], but got \[6\]"),
    (lambda: gl.unravel_index(gl.tensor([-7]), (2, 3)), RuntimeError, r"must be in range \[-6, 5\]"),
    (lambda: gl.unravel_index(gl.tensor([1.0]), (2, 3)), TypeError, r"expected 'indices' to be an integer tensor"),
    (lambda: gl.unravel_index(gl.tensor([1]), (2, -3)), ValueError, r"'shape' cannot have negative values"),
    (lambda: gl.slice_copy(gl.tensor(A), 0, 0, 2, 0), RuntimeError, r"slice_copy\(\): slice step must be positive"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_failed_put_leaves_the_tensor_unchanged():
    x = gl.tensor(A)
    with pytest.raises(IndexError, match="out of range"):
        x.put_(gl.tensor([0, 99]), gl.tensor([1.0, 2.0], dtype=gl.float64))
    assert_close(x, A)

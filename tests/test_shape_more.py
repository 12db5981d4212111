"""More shape ops: numpy's stacking and splitting, rot90/fliplr/flipud, atleast_nd, broadcasting,
block_diag, cartesian_prod, combinations, vander, unfold, as_strided, in-place shape changes and
the ``*_copy`` variants.

Each case in CASES is checked against numpy (forward), finite differences in float64 (gradcheck)
and PyTorch (values and gradients) when it is installed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import assert_close, leaf, noncontiguous_leaf, randn, requires_torch, to_torch, torch

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck


def _windows(a, axis, size, step):
    """numpy reference for Tensor.unfold: windows along axis as a new last dim."""
    a = np.moveaxis(a, axis, -1)
    starts = range(0, a.shape[-1] - size + 1, step)
    return np.moveaxis(np.stack([a[..., s:s + size] for s in starts], -2), -2, axis)


# (id, fn(lib, *tensors), input shapes, numpy reference); lib is gradlab or torch
CASES = [
    ("hstack", lambda L, x, y: L.hstack([x, y]), [(2, 3), (2, 2)], lambda a, b: np.hstack([a, b])),
    ("hstack_1d", lambda L, x, y: L.hstack((x, y)), [(3,), (2,)], lambda a, b: np.hstack([a, b])),
    ("vstack", lambda L, x, y: L.vstack([x, y]), [(3,), (2, 3)], lambda a, b: np.vstack([a, b])),
    ("row_stack", lambda L, x, y: L.row_stack([x, y]), [(3,), (3,)], lambda a, b: np.vstack([a, b])),
    ("dstack", lambda L, x, y: L.dstack([x, y]), [(2, 3), (2, 3, 2)], lambda a, b: np.dstack([a, b])),
    ("column_stack", lambda L, x, y: L.column_stack([x, y]), [(3,), (3, 2)], lambda a, b: np.column_stack([a, b])),
    ("atleast_1d", lambda L, x: L.atleast_1d(x), [()], np.atleast_1d),
    ("atleast_2d", lambda L, x, y: L.atleast_2d(x, y), [(3,), (2, 2)], lambda a, b: np.atleast_2d(a, b)),
    ("atleast_3d", lambda L, x, y, z: L.atleast_3d([x, y, z]), [(), (3,), (2, 3)], lambda *a: np.atleast_3d(*a)),
    ("broadcast_tensors", lambda L, x, y: L.broadcast_tensors(x, y), [(2, 1, 2), (3, 2)],
     lambda a, b: np.broadcast_arrays(a, b)),
    ("tensor_split_sections", lambda L, x: L.tensor_split(x, 3, dim=1), [(2, 7)],
     lambda a: np.array_split(a, 3, axis=1)),
    ("tensor_split_indices", lambda L, x: x.tensor_split([1, 4], 1), [(2, 6)], lambda a: np.split(a, [1, 4], 1)),
    ("tensor_split_unsorted", lambda L, x: L.tensor_split(x, [3, 1]), [(5,)], lambda a: np.split(a, [3, 1])),
    ("tensor_split_clamped", lambda L, x: L.tensor_split(x, [-2, 10]), [(5,)], lambda a: np.split(a, [3, 10])),
    ("hsplit", lambda L, x: L.hsplit(x, 2), [(3, 4)], lambda a: np.hsplit(a, 2)),
    ("hsplit_1d_indices", lambda L, x: x.hsplit([1]), [(4,)], lambda a: np.hsplit(a, [1])),
    ("vsplit", lambda L, x: L.vsplit(x, [1, 2]), [(4, 2)], lambda a: np.vsplit(a, [1, 2])),
    ("dsplit", lambda L, x: x.dsplit(2), [(2, 3, 4)], lambda a: np.dsplit(a, 2)),
    ("split_with_sizes", lambda L, x: x.split_with_sizes([1, 3], dim=1), [(2, 4)],
     lambda a: np.split(a, [1], 1)),
    ("split_with_sizes_functional", lambda L, x: L.split_with_sizes(x, [2, 1]), [(3, 2)],
     lambda a: np.split(a, [2])),
    ("unsafe_split", lambda L, x: L.unsafe_split(x, 2, 1), [(2, 5)], lambda a: np.split(a, [2, 4], 1)),
    ("unsafe_chunk", lambda L, x: L.unsafe_chunk(x, 2), [(4, 2)], lambda a: np.split(a, 2)),
    ("rot90", lambda L, x: L.rot90(x), [(2, 3)], np.rot90),
    ("rot90_twice", lambda L, x: x.rot90(2, [1, 2]), [(2, 3, 4)], lambda a: np.rot90(a, 2, (1, 2))),
    ("rot90_backwards", lambda L, x: L.rot90(x, -1, (0, 2)), [(2, 3, 4)], lambda a: np.rot90(a, -1, (0, 2))),
    ("rot90_zero", lambda L, x: L.rot90(x, 4), [(2, 3)], lambda a: a),
    ("fliplr", lambda L, x: L.fliplr(x), [(2, 3)], np.fliplr),
    ("flipud", lambda L, x: x.flipud(), [(2, 3)], np.flipud),
    ("ravel", lambda L, x: L.ravel(x), [(2, 3)], np.ravel),
    ("constant_pad_nd", lambda L, x: L.constant_pad_nd(x, (1, 2, -1, 0), value=1.5), [(3, 4)],
     lambda a: np.pad(a[1:], ((0, 0), (1, 2)), constant_values=1.5)),
    ("ravel_transposed", lambda L, x: x.t().ravel(), [(2, 3)], lambda a: a.T.ravel()),
    ("block_diag", lambda L, x, y, z: L.block_diag(x, y, z), [(2, 2), (), (3,)],
     lambda a, b, c: _block_diag([a, b.reshape(1, 1), c.reshape(1, -1)])),
    ("cartesian_prod", lambda L, x, y: L.cartesian_prod(x, y), [(2,), (3,)],
     lambda a, b: np.array(list(itertools.product(a, b)))),
    ("cartesian_prod_one", lambda L, x: L.cartesian_prod(x), [(3,)], lambda a: a),
    ("combinations", lambda L, x: L.combinations(x), [(4,)], lambda a: np.array(list(itertools.combinations(a, 2)))),
    ("combinations_replacement", lambda L, x: L.combinations(x, r=3, with_replacement=True), [(3,)],
     lambda a: np.array(list(itertools.combinations_with_replacement(a, 3)))),
    ("vander", lambda L, x: L.vander(x), [(4,)], np.vander),
    ("vander_increasing", lambda L, x: L.vander(x, N=3, increasing=True), [(4,)],
     lambda a: np.vander(a, 3, increasing=True)),
    ("unfold", lambda L, x: x.unfold(1, 2, 1), [(2, 4)], lambda a: _windows(a, 1, 2, 1)),
    ("unfold_step", lambda L, x: x.unfold(0, 2, 3), [(7, 2)], lambda a: _windows(a, 0, 2, 3)),
    ("view_copy", lambda L, x: L.view_copy(x.contiguous(), (3, 2)), [(2, 3)], lambda a: a.reshape(3, 2)),
    ("permute_copy", lambda L, x: L.permute_copy(x, (1, 0)), [(2, 3)], lambda a: a.T),
    ("expand_copy", lambda L, x: L.expand_copy(x, (2, 2, 3)), [(2, 1, 3)], lambda a: np.broadcast_to(a, (2, 2, 3))),
    ("squeeze_copy", lambda L, x: L.squeeze_copy(x, 1), [(2, 1, 3)], lambda a: a[:, 0]),
    ("unsqueeze_copy", lambda L, x: L.unsqueeze_copy(x, 0), [(2, 3)], lambda a: a[None]),
    ("transpose_copy", lambda L, x: L.transpose_copy(x, 0, 1), [(2, 3)], lambda a: a.T),
    ("t_copy", lambda L, x: L.t_copy(x), [(2, 3)], lambda a: a.T),
    ("narrow_copy", lambda L, x: x.narrow_copy(1, 1, 2), [(2, 4)], lambda a: a[:, 1:3]),
    ("narrow_copy_functional", lambda L, x: L.narrow_copy(x, 0, 0, 1), [(2, 4)], lambda a: a[:1]),
    ("unbind_copy", lambda L, x: L.unbind_copy(x, 1), [(2, 3)], lambda a: [a[:, i] for i in range(3)]),
    ("split_copy", lambda L, x: L.split_copy(x, 2), [(3, 2)], lambda a: np.split(a, [2])),
    ("split_with_sizes_copy", lambda L, x: L.split_with_sizes_copy(x, [1, 2], 1), [(2, 3)],
     lambda a: np.split(a, [1], 1)),
    ("alias_copy", lambda L, x: L.alias_copy(x), [(2, 3)], lambda a: a),
    ("unsafe_split_with_sizes", lambda L, x: L.unsafe_split_with_sizes(x, [1, 2], 1), [(2, 3)],
     lambda a: np.split(a, [1], 1)),
    ("unsafe_split_with_sizes_method", lambda L, x: x.unsafe_split_with_sizes([2, 1]), [(3, 2)],
     lambda a: np.split(a, [2])),
    ("H", lambda L, x: x.H, [(2, 3)], lambda a: a.T),
    ("mH", lambda L, x: x.mH, [(2, 3, 4)], lambda a: a.swapaxes(-1, -2)),
    ("adjoint", lambda L, x: L.adjoint(x), [(2, 3, 4)], lambda a: a.swapaxes(-1, -2)),
    ("adjoint_method", lambda L, x: x.adjoint(), [(2, 3)], lambda a: a.T),
    ("swapaxes_keywords", lambda L, x: L.swapaxes(x, axis0=0, axis1=2), [(2, 3, 4)], lambda a: a.swapaxes(0, 2)),
    ("swapaxes_method_keywords", lambda L, x: x.swapaxes(axis0=1, axis1=0), [(2, 3)], lambda a: a.T),
    ("swapdims_keywords", lambda L, x: L.swapdims(x, dim0=0, dim1=1), [(2, 3)], lambda a: a.T),
    ("tensor_split_sections_keyword", lambda L, x: L.tensor_split(x, sections=3), [(7,)],
     lambda a: np.array_split(a, 3)),
    ("tensor_split_indices_keyword", lambda L, x: x.tensor_split(indices=[1, 3], dim=1), [(2, 5)],
     lambda a: np.split(a, [1, 3], 1)),
    ("slice_copy", lambda L, x: L.slice_copy(x, 1, 1, 7, 2), [(2, 8)], lambda a: a[:, 1:7:2]),
    ("slice_copy_defaults", lambda L, x: L.slice_copy(x), [(3, 2)], lambda a: a),
    ("unfold_copy", lambda L, x: L.unfold_copy(x, 1, 2, 2), [(2, 4)], lambda a: _windows(a, 1, 2, 2)),
]
IDS = [c[0] for c in CASES]
# PyTorch's vander cannot be backpropagated (its backward trips over its own in-place AsStrided)
TORCH_FORWARD_ONLY = {"vander", "vander_increasing"}

# as_strided reads a contiguous tensor's own memory, so these run on contiguous inputs only
STRIDED_CASES = [
    ("as_strided", lambda L, x: L.as_strided(x, (2, 2), (3, 1), 1), [(9,)],
     lambda a: a[[[1, 2], [4, 5]]]),
    ("as_strided_overlapping", lambda L, x: x.as_strided((3, 2), (1, 1)), [(2, 3)],
     lambda a: a.reshape(-1)[[[0, 1], [1, 2], [2, 3]]]),
    ("as_strided_zero_stride", lambda L, x: x.as_strided((2, 3, 2), (0, 2, 1), 1), [(8,)],
     lambda a: np.broadcast_to(a[[[1, 2], [3, 4], [5, 6]]], (2, 3, 2))),
    ("as_strided_copy", lambda L, x: L.as_strided_copy(x, (2,), (2,)), [(2, 2)], lambda a: a.reshape(-1)[[0, 2]]),
]
STRIDED_IDS = [c[0] for c in STRIDED_CASES]


def _block_diag(blocks):
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _arrays(shapes):
    return [randn(*shape, seed=i) for i, shape in enumerate(shapes)]


ALL = CASES + STRIDED_CASES


@pytest.mark.parametrize("name, fn, shapes, reference", ALL, ids=IDS + STRIDED_IDS)
def test_forward_matches_numpy(name, fn, shapes, reference):
    arrays = _arrays(shapes)
    outs = _outputs(fn(gl, *[leaf(a, requires_grad=False) for a in arrays]))
    expected = _outputs(reference(*arrays))
    assert len(outs) == len(expected)
    for out, want in zip(outs, expected):
        assert out.dtype is gl.float64
        assert_close(out, want)


@pytest.mark.parametrize("name, fn, shapes, reference", CASES, ids=IDS)
def test_gradcheck_noncontiguous(name, fn, shapes, reference):
    inputs = [noncontiguous_leaf(a) for a in _arrays(shapes)]
    assert gradcheck(lambda *xs: fn(gl, *xs), inputs)


@pytest.mark.parametrize("name, fn, shapes, reference", ALL, ids=IDS + STRIDED_IDS)
def test_gradcheck_contiguous(name, fn, shapes, reference):
    inputs = [leaf(a) for a in _arrays(shapes)]
    assert gradcheck(lambda *xs: fn(gl, *xs), inputs)


@requires_torch
@pytest.mark.parametrize("name, fn, shapes, reference", ALL, ids=IDS + STRIDED_IDS)
def test_matches_torch(name, fn, shapes, reference):
    arrays = _arrays(shapes)
    ours = [leaf(a) for a in arrays]
    theirs = [to_torch(a, requires_grad=True) for a in arrays]
    outs, touts = _outputs(fn(gl, *ours)), _outputs(fn(torch, *theirs))
    assert len(outs) == len(touts)
    if name in TORCH_FORWARD_ONLY:
        for out, tout in zip(outs, touts):
            assert_close(out, tout.detach())
        return
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


@pytest.mark.parametrize("name", ["unfold", "rot90", "vander", "combinations", "block_diag"])
def test_gradgradcheck(name):
    _, fn, shapes, _ = CASES[IDS.index(name)]
    assert gradgradcheck(lambda *xs: fn(gl, *xs), [leaf(a) for a in _arrays(shapes)])


def test_gradgradcheck_as_strided():
    _, fn, shapes, _ = STRIDED_CASES[STRIDED_IDS.index("as_strided_overlapping")]
    assert gradgradcheck(lambda *xs: fn(gl, *xs), [leaf(a) for a in _arrays(shapes)])


# --- what comes back: views, copies, dtypes ---------------------------------------------------------

def test_detach_copy_is_a_copy_outside_the_graph():
    x = leaf(randn(2, 3))
    y = gl.detach_copy(x)
    assert not y.requires_grad and y.grad_fn is None and y._base is None
    assert_close(y, x.detach().numpy())
    y[0, 0] = 5.0
    assert x[0, 0].item() != 5.0


def test_deprecated_resize_is_a_reshape_that_warns():
    x = leaf(randn(2, 3))
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        y = x.resize(3, 2)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        z = x.resize_as(gl.ones(6))
    assert y.shape == (3, 2) and z.shape == (6,)
    (y.sum() + z.sum()).backward()
    assert_close(x.grad, np.full((2, 3), 2.0))
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match=r"resize: requested resize to 4 \(4 elements in "
                                                                      r"total\), but the given tensor has a size of "
                                                                      r"2x3 \(6 elements\)"):
        x.resize(4)


def test_H_mH_and_adjoint_need_matrices():
    with pytest.raises(RuntimeError, match=r"tensor.H is only supported on matrices \(2-D tensors\). Got 3-D tensor"):
        gl.ones(2, 3, 4).H
    with pytest.raises(RuntimeError, match=r"tensor.mH is only supported on matrices or batches of matrices. Got 1-D"):
        gl.ones(3).mH
    with pytest.raises(RuntimeError, match=r"tensor.adjoint\(\) is only supported on matrices or batches"):
        gl.adjoint(gl.ones(3))


def test_tensor_split_takes_exactly_one_way_of_splitting():
    with pytest.raises(TypeError, match=r"tensor_split\(\): give exactly one of indices_or_sections, sections= or "
                                        r"indices=, got 2"):
        gl.tensor_split(gl.ones(4), 2, sections=2)


def test_functional_in_place_shape_changes():
    x = gl.arange(4.0)
    assert gl.as_strided_(x, (2,), (2,)) is x and x.tolist() == [0.0, 2.0]
    y = gl.ones(2, 3)
    assert gl.resize_as_(y, the_template=gl.ones(3, 2)) is y and y.shape == (3, 2)


def test_views_share_memory_and_copies_do_not():
    x = gl.arange(12.0).reshape(3, 4).clone()
    assert x.unfold(1, 2, 2)._base is x
    assert all(piece._base is x for piece in x.tensor_split(3, dim=1))
    assert x.ravel()._base is x and x.t().ravel()._base is None
    copy = gl.view_copy(x, (4, 3))
    copy[0, 0] = 100.0
    assert x[0, 0].item() == 0.0 and copy._base is None
    assert all(piece._base is None for piece in gl.split_copy(x, 1))


def test_broadcast_shapes_takes_shapes_and_ints():
    assert gl.broadcast_shapes((2, 1), 3) == (2, 3)
    assert gl.broadcast_shapes(2) == (2,)
    assert gl.broadcast_shapes((5, 1, 4), (3, 1), ()) == (5, 3, 4)
    with pytest.raises(RuntimeError, match=r"broadcast_shapes: shapes \(2, 3\) and \(4\) cannot be broadcast"):
        gl.broadcast_shapes((2, 3), (4,))


def test_atleast_nd_gives_one_tensor_for_one_and_a_tuple_for_a_list():
    x = gl.tensor(1.0)
    assert gl.atleast_2d(x).shape == (1, 1)
    assert isinstance(gl.atleast_1d([x]), tuple)
    assert [t.shape for t in gl.atleast_3d(x, gl.ones(2))] == [(1, 1, 1), (1, 2, 1)]


def test_vander_of_integers_is_int64_and_zero_columns_allowed():
    v = gl.vander(gl.tensor([1, 2, 3], dtype=gl.int32))
    assert v.dtype is gl.int64
    assert v.tolist() == [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    assert gl.vander(gl.tensor([1.0, 2.0]), N=0).shape == (2, 0)


def test_combinations_edge_sizes():
    x = gl.arange(3.0)
    assert gl.combinations(x, 0).shape == (0,)
    assert gl.combinations(x, 4).shape == (0, 4)
    assert gl.combinations(x, 1).shape == (3, 1)


def test_block_diag_promotes_dtypes():
    out = gl.block_diag(gl.ones(1, 1, dtype=gl.int64), gl.tensor([[2.5]]))
    assert out.dtype is gl.float32
    assert out.tolist() == [[1.0, 0.0], [0.0, 2.5]]


def test_tensor_split_takes_a_tensor_of_sections_or_indices():
    x = gl.arange(7.0)
    assert [p.shape for p in gl.tensor_split(x, gl.tensor(3))] == [(3,), (2,), (2,)]
    assert [p.shape for p in gl.tensor_split(x, gl.tensor([1, 2]))] == [(1,), (1,), (5,)]


def test_unravel_index_matches_numpy_and_torch():
    flat = gl.tensor([0, 5, 11, -1])
    rows, cols = gl.unravel_index(flat, (3, 4))
    assert rows.tolist() == [0, 1, 2, 2] and cols.tolist() == [0, 1, 3, 3]
    expected = np.unravel_index([1, 17, 23], (2, 3, 4))
    assert [c.tolist() for c in gl.unravel_index(gl.tensor([1, 17, 23]), (2, 3, 4))] == [list(e) for e in expected]
    if torch is not None:
        theirs = torch.unravel_index(torch.tensor([0, 5, 11, -1]), (3, 4))
        assert [t.tolist() for t in theirs] == [rows.tolist(), cols.tolist()]


def test_ndimension_is_dim():
    assert gl.ones(2, 3, 4).ndimension() == 3


def test_is_same_size():
    assert gl.is_same_size(gl.ones(2, 3), gl.zeros(2, 3, dtype=gl.int64))
    assert not gl.ones(2, 3).is_same_size(gl.ones(3, 2))


def test_keyword_forms_of_the_size_methods():
    x = gl.arange(6.0).reshape(2, 3)
    assert x.view(size=(3, 2)).shape == (3, 2)
    assert x.reshape(shape=(6,)).shape == (6,)
    assert x.permute(dims=(1, 0)).shape == (3, 2)
    assert x.expand(size=(2, 2, 3)).shape == (2, 2, 3)
    assert x.flip(dims=(0,)).tolist() == [[3.0, 4.0, 5.0], [0.0, 1.0, 2.0]]
    assert x.repeat(repeats=(1, 2)).shape == (2, 6)
    assert x.tile(dims=(2,)).shape == (2, 6)
    assert gl.expand_copy(x, size=(2, 2, 3), implicit=True).shape == (2, 2, 3)
    with pytest.raises(TypeError, match=r"view\(\): got sizes both as arguments"):
        x.view(3, size=(3, 2))


# --- in-place shape changes ------------------------------------------------------------------------

@pytest.mark.parametrize("name, call, shape", [
    ("t_", lambda x: x.t_(), (3, 2)),
    ("transpose_", lambda x: x.transpose_(0, 1), (3, 2)),
    ("swapaxes_", lambda x: x.swapaxes_(0, 1), (3, 2)),
    ("swapdims_", lambda x: x.swapdims_(1, 0), (3, 2)),
    ("unsqueeze_", lambda x: x.unsqueeze_(1), (2, 1, 3)),
    ("squeeze_", lambda x: x.unsqueeze_(0).squeeze_(), (2, 3)),
    ("as_strided_", lambda x: x.as_strided_((3,), (2,)), (3,)),
])
def test_in_place_shape_change_keeps_the_tensor_and_its_gradient(name, call, shape):
    a = randn(2, 3)
    w = leaf(a)
    y = w * 2  # a non-leaf, whose history the change extends
    z = call(y)
    assert z is y and y.shape == shape
    y.sum().backward()
    if torch is not None:
        tw = to_torch(a, requires_grad=True)
        ty = call(tw * 2)
        assert_close(y, ty)
        ty.sum().backward()
        assert_close(w.grad, tw.grad)
    else:
        assert w.grad is not None


def test_in_place_shape_change_bumps_the_version_so_saved_values_are_checked():
    w = leaf(randn(2, 3))
    y = w.exp()  # exp saves its output
    y.unsqueeze_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_in_place_shape_change_on_a_leaf_that_requires_grad_is_refused():
    w = leaf(randn(2, 3))
    with pytest.raises(RuntimeError, match=r"t_: a leaf Variable that requires grad .* out-of-place form \(t\)"):
        w.t_()
    assert w.shape == (2, 3)
    with gl.no_grad():
        w.t_()
    assert w.shape == (3, 2)


def test_retain_grad_follows_an_in_place_shape_change():
    # as for gradlab's other in-place ops, the retained gradient is that of the tensor as it is now
    # (PyTorch 2.13 keeps the one of its old shape here)
    w = leaf(randn(2, 3))
    y = w * 2
    y.retain_grad()
    y.t_()
    (y * gl.arange(6.0, dtype=gl.float64).reshape(3, 2)).sum().backward()
    assert_close(y.grad, np.arange(6.0).reshape(3, 2))
    assert_close(w.grad, 2 * np.arange(6.0).reshape(3, 2).T)


def test_resize_keeps_the_first_elements_and_grows_with_zeros():
    x = gl.arange(6.0)
    assert x.resize_(2, 2) is x and x.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    x.resize_((3, 2))
    assert x.shape == (3, 2) and x.tolist()[:2] == [[0.0, 1.0], [2.0, 3.0]]
    y = gl.arange(6.0).reshape(2, 3).clone()
    version = y._version[0]
    assert y.resize_as_(gl.ones(3, 2)).tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert y._version[0] == version + 1
    if torch is not None:
        t = torch.arange(6.0).reshape(2, 3)
        assert t.resize_as_(torch.ones(3, 2)).tolist() == y.tolist()


@pytest.mark.parametrize("call, message", [
    (lambda: gl.ones(2, requires_grad=True).resize_(3), r"resize_: cannot resize variables that require grad"),
    (lambda: gl.ones(2, 3).t().resize_(2, 3), r"resize_: gradlab resizes only a contiguous tensor .* but got a view"),
    (lambda: gl.ones(2).resize_(-1), r"resize_: Trying to create tensor with negative dimension: \[-1\]"),
])
def test_resize_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


def test_in_place_shape_change_of_a_view_stays_usable():
    base = gl.arange(6.0)
    v = base[1:]
    v.unsqueeze_(0)
    assert v.shape == (1, 5) and v._base is base
    base[1] = 10.0
    assert v[0, 0].item() == 10.0


# --- errors name the op, the values and the fix -----------------------------------------------------

@pytest.mark.parametrize("call, error, message", [
    (lambda: gl.hsplit(gl.ones(2, 3), 2), RuntimeError,
     r"hsplit attempted to split along dimension 1, but the size of the dimension 3 is not divisible by the split_size 2"),
    (lambda: gl.vsplit(gl.ones(3), 1), RuntimeError, r"vsplit requires a tensor with at least 2 dimension.*got a tensor "
                                                      r"with 1 dimensions"),
    (lambda: gl.dsplit(gl.ones(2, 2), [1]), RuntimeError, r"dsplit requires a tensor with at least 3 dimension"),
    (lambda: gl.tensor_split(gl.ones(3), 0), RuntimeError, r"tensor_split: number of sections must be larger than 0, got 0"),
    (lambda: gl.tensor_split(gl.ones(3), gl.ones(2)), RuntimeError,
     r"tensor_split expected tensor_indices_or_sections to be .* integers, but got float32 tensor of shape \(2\)"),
    (lambda: gl.split_with_sizes(gl.ones(4), [1, 2]), RuntimeError,
     r"split_with_sizes expects split_sizes to sum exactly to 4 .* got split_sizes=\[1, 2\]"),
    (lambda: gl.rot90(gl.ones(3)), RuntimeError, r"rot90: expected total dims >= 2, but got total dims = 1"),
    (lambda: gl.rot90(gl.ones(2, 2), 1, (0, 0)), RuntimeError, r"rot90: expected rotation dims to be different"),
    (lambda: gl.rot90(gl.ones(2, 2), 1, (0,)), RuntimeError, r"rot90: expected total rotation dims == 2"),
    (lambda: gl.fliplr(gl.ones(3)), RuntimeError, r"fliplr: Input must be >= 2-d, .* use flip\(x, \(0,\)\) for a vector"),
    (lambda: gl.flipud(gl.tensor(1.0)), RuntimeError, r"flipud: Input must be >= 1-d"),
    (lambda: gl.block_diag(gl.ones(2, 2, 2)), RuntimeError,
     r"block_diag: Input tensors must have 2 or fewer dimensions. Input 0 has 3 dimensions"),
    (lambda: gl.cartesian_prod(gl.ones(2), gl.ones(2, dtype=gl.int64)), RuntimeError,
     r"cartesian_prod: expects all tensors to have the same dtype.*convert them with .to\(dtype\)"),
    (lambda: gl.combinations(gl.ones(2, 2)), RuntimeError, r"combinations: Expect a 1D vector, but got shape \[2, 2\]"),
    (lambda: gl.combinations(gl.ones(2), -1), RuntimeError, r"combinations: Expect a non-negative number, but got -1"),
    (lambda: gl.vander(gl.ones(2, 2)), RuntimeError, r"vander: x must be a one-dimensional tensor"),
    (lambda: gl.vander(gl.ones(2), -1), RuntimeError, r"vander: N must be non-negative, got -1"),
    (lambda: gl.ones(2, 3).unfold(1, 4, 1), RuntimeError,
     r"unfold: maximum size for tensor at dimension 1 is 3 but size is 4 .*choose 0 <= size <= 3"),
    (lambda: gl.ones(2, 3).unfold(1, 2, 0), RuntimeError, r"unfold: step is 0 but must be > 0"),
    (lambda: gl.ones(9).as_strided((2, 2), (-3, 1)), RuntimeError, r"as_strided: Negative strides.*\[-3, 1\]"),
    (lambda: gl.ones(9).as_strided((2, 2), (3,)), RuntimeError, r"as_strided: mismatch in length of strides and shape"),
    (lambda: gl.ones(9).as_strided((2, 2), (3, 1), 6), RuntimeError,
     r"as_strided: sizes \[2, 2\], strides \[3, 1\] and storage offset 6 reach element 10, out of bounds for a "
     r"tensor of 9 elements"),
    (lambda: gl.ones(9)[1:].as_strided((2,), (1,)), RuntimeError, r"as_strided: .* but got a view .*call .clone\(\) first"),
    (lambda: gl.from_numpy(np.ones((3, 2), order="F")).as_strided((2,), (1,)), RuntimeError,
     r"as_strided: .* but got a non-contiguous tensor"),
    (lambda: gl.unravel_index(gl.tensor([1.0]), (2,)), TypeError, r"unravel_index: expected 'indices' to be an integer"),
    (lambda: gl.unravel_index(gl.tensor([4]), (2, 2)), RuntimeError,
     r"unravel_index: 'indices' must be in range \[-4, 3\] for shape \[2, 2\], but got \[4\]"),
    (lambda: gl.unravel_index(gl.tensor([0]), (2, -1)), ValueError, r"unravel_index: 'shape' cannot have negative"),
    (lambda: gl.broadcast_tensors(gl.ones(2), gl.ones(3)), RuntimeError,
     r"broadcast_tensors: shapes \(2\) and \(3\) cannot be broadcast together: at dimension -1 the sizes are 2 and 3"),
])
def test_errors_name_the_op_and_the_values(call, error, message):
    with pytest.raises(error, match=message):
        call()

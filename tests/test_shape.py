"""Shape ops: reshape/view, permute, expand, repeat, flip, roll, narrow, pad, cat/stack, split/chunk/unbind.

Each case in CASES is checked against numpy (forward), finite differences on non-contiguous float64
inputs (gradcheck) and PyTorch (values and gradients) when it is installed. Views must share memory
and the version counter with their input; copies must not.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers import assert_close, leaf, noncontiguous_leaf, randn, requires_torch, to_torch, torch

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck


class _TorchLib:
    """torch, with F.pad as `pad`, so one case function runs on both libraries."""

    def __getattr__(self, name):
        return torch.nn.functional.pad if name == "pad" else getattr(torch, name)


def _np_split(a, sizes, axis):
    return np.split(a, np.cumsum(sizes)[:-1], axis=axis)


# (id, fn(lib, *tensors), input shapes, numpy reference)
CASES = [
    ("reshape", lambda L, x: x.reshape(3, -1), [(2, 3, 2)], lambda a: a.reshape(3, -1)),
    ("reshape_functional", lambda L, x: L.reshape(x, (4, 3)), [(2, 6)], lambda a: a.reshape(4, 3)),
    ("reshape_to_0d", lambda L, x: x.reshape(()), [(1,)], lambda a: a.reshape(())),
    ("view_split_last_dim", lambda L, x: x.view(2, 3, 2, 2), [(2, 3, 4)], lambda a: a.reshape(2, 3, 2, 2)),
    ("view_as", lambda L, x, y: x.view_as(y), [(2, 3), (2, 3, 1)], lambda a, b: a.reshape(2, 3, 1)),
    ("reshape_as", lambda L, x, y: x.reshape_as(y), [(2, 3), (6,)], lambda a, b: a.reshape(6)),
    ("flatten", lambda L, x: x.flatten(), [(2, 3, 2)], lambda a: a.reshape(-1)),
    ("flatten_middle", lambda L, x: L.flatten(x, 1, 2), [(2, 3, 2, 2)], lambda a: a.reshape(2, 6, 2)),
    ("unflatten", lambda L, x: x.unflatten(-1, (2, -1)), [(3, 6)], lambda a: a.reshape(3, 2, 3)),
    ("squeeze_all", lambda L, x: x.squeeze(), [(2, 1, 3, 1)], lambda a: a.squeeze()),
    ("squeeze_dim", lambda L, x: L.squeeze(x, 1), [(2, 1, 3, 1)], lambda a: a.squeeze(1)),
    ("squeeze_tuple", lambda L, x: x.squeeze((1, -1)), [(2, 1, 3, 1)], lambda a: a.squeeze((1, 3))),
    ("squeeze_keeps_non_1", lambda L, x: x.squeeze(0), [(2, 1, 3)], lambda a: a),
    ("unsqueeze", lambda L, x: x.unsqueeze(-1), [(2, 3)], lambda a: a[..., None]),
    ("unsqueeze_middle", lambda L, x: L.unsqueeze(x, 1), [(2, 3)], lambda a: a[:, None]),
    ("permute", lambda L, x: x.permute(2, 0, 1), [(2, 3, 4)], lambda a: a.transpose(2, 0, 1)),
    ("permute_functional", lambda L, x: L.permute(x, (-1, 0, 1)), [(2, 3, 4)], lambda a: a.transpose(2, 0, 1)),
    ("transpose", lambda L, x: x.transpose(0, 2), [(2, 3, 4)], lambda a: a.swapaxes(0, 2)),
    ("swapaxes", lambda L, x: L.swapaxes(x, -1, 0), [(2, 3, 4)], lambda a: a.swapaxes(0, 2)),
    ("swapdims", lambda L, x: x.swapdims(1, 0), [(2, 3)], lambda a: a.T),
    ("T", lambda L, x: x.T, [(2, 3)], lambda a: a.T),
    ("t", lambda L, x: L.t(x), [(2, 3)], lambda a: a.T),
    ("mT", lambda L, x: x.mT, [(2, 3, 4)], lambda a: a.swapaxes(-1, -2)),
    ("movedim", lambda L, x: x.movedim(0, -1), [(2, 3, 4)], lambda a: np.moveaxis(a, 0, -1)),
    ("movedim_tuple", lambda L, x: L.movedim(x, (0, 1), (2, 0)), [(2, 3, 4)], lambda a: np.moveaxis(a, (0, 1), (2, 0))),
    ("expand", lambda L, x: x.expand(2, 3, 4, 2), [(3, 1, 2)], lambda a: np.broadcast_to(a, (2, 3, 4, 2))),
    ("expand_keep", lambda L, x: x.expand(-1, 4, -1), [(2, 1, 3)], lambda a: np.broadcast_to(a, (2, 4, 3))),
    ("expand_as", lambda L, x, y: x.expand_as(y), [(3, 1, 2), (2, 3, 4, 2)],
     lambda a, b: np.broadcast_to(a, (2, 3, 4, 2))),
    ("broadcast_to", lambda L, x: L.broadcast_to(x, (2, 3, 4, 2)), [(3, 1, 2)],
     lambda a: np.broadcast_to(a, (2, 3, 4, 2))),
    ("repeat", lambda L, x: x.repeat(2, 1, 3), [(2, 3)], lambda a: np.tile(a, (2, 1, 3))),
    ("repeat_same_rank", lambda L, x: x.repeat(3, 2), [(2, 3)], lambda a: np.tile(a, (3, 2))),
    ("tile", lambda L, x: L.tile(x, (2,)), [(2, 3)], lambda a: np.tile(a, (1, 2))),
    ("flip", lambda L, x: x.flip(0, 2), [(2, 3, 4)], lambda a: np.flip(a, (0, 2))),
    ("flip_functional", lambda L, x: L.flip(x, (-1,)), [(2, 3)], lambda a: a[:, ::-1]),
    ("roll", lambda L, x: x.roll(1, 0), [(3, 4)], lambda a: np.roll(a, 1, 0)),
    ("roll_several", lambda L, x: L.roll(x, (1, -2), (0, 1)), [(3, 4)], lambda a: np.roll(a, (1, -2), (0, 1))),
    ("roll_flattened", lambda L, x: x.roll(5), [(3, 4)], lambda a: np.roll(a, 5)),
    ("narrow", lambda L, x: x.narrow(1, 1, 2), [(2, 4)], lambda a: a[:, 1:3]),
    ("narrow_negative_start", lambda L, x: L.narrow(x, -1, -2, 2), [(2, 4)], lambda a: a[:, 2:]),
    ("pad_constant", lambda L, x: L.pad(x, (1, 2, 0, 1)), [(2, 3)], lambda a: np.pad(a, ((0, 1), (1, 2)))),
    ("pad_value", lambda L, x: L.pad(x, (1, 1), value=2.5), [(2, 3)],
     lambda a: np.pad(a, ((0, 0), (1, 1)), constant_values=2.5)),
    ("pad_negative_crops", lambda L, x: L.pad(x, (-1, 1, 1, -1)), [(3, 4)], lambda a: np.pad(a[:-1, 1:], ((1, 0), (0, 1)))),
    ("pad_reflect", lambda L, x: L.pad(x, (2, 1), mode="reflect"), [(2, 4)], lambda a: np.pad(a, ((0, 0), (2, 1)), "reflect")),
    ("pad_reflect_2d", lambda L, x: L.pad(x, (1, 1, 2, 1), mode="reflect"), [(2, 3, 4)],
     lambda a: np.pad(a, ((0, 0), (2, 1), (1, 1)), "reflect")),
    ("pad_replicate", lambda L, x: L.pad(x, (1, 2, 2, 0), mode="replicate"), [(1, 2, 3)],
     lambda a: np.pad(a, ((0, 0), (2, 0), (1, 2)), "edge")),
    ("pad_circular", lambda L, x: L.pad(x, (1, 2), mode="circular"), [(2, 3)], lambda a: np.pad(a, ((0, 0), (1, 2)), "wrap")),
    ("pad_reflect_crop", lambda L, x: L.pad(x, (2, -2), mode="reflect"), [(2, 4)],
     lambda a: np.pad(a, ((0, 0), (2, 0)), "reflect")[:, :4]),
    ("pad_replicate_crop", lambda L, x: L.pad(x, (-3, 1), mode="replicate"), [(2, 4)],
     lambda a: np.pad(a, ((0, 0), (0, 1)), "edge")[:, 3:]),
    ("pad_circular_crop", lambda L, x: L.pad(x, (2, -2), mode="circular"), [(2, 4)],
     lambda a: np.pad(a[:, :2], ((0, 0), (2, 0)), "wrap")),
    ("cat", lambda L, x, y: L.cat([x, y], 1), [(2, 3), (2, 2)], lambda a, b: np.concatenate([a, b], 1)),
    ("cat_three_negative_dim", lambda L, x, y: L.cat((x, y, x), -1), [(2, 2), (2, 3)],
     lambda a, b: np.concatenate([a, b, a], -1)),
    ("concat", lambda L, x, y: L.concat([x, y]), [(3, 3), (2, 3)], lambda a, b: np.concatenate([a, b])),
    ("concatenate", lambda L, x, y: L.concatenate([x, y], dim=0), [(3, 3), (2, 3)], lambda a, b: np.concatenate([a, b])),
    ("stack", lambda L, x, y: L.stack([x, y], 1), [(2, 3), (2, 3)], lambda a, b: np.stack([a, b], 1)),
    ("stack_last", lambda L, x, y: L.stack((x, y, x), -1), [(2, 3), (2, 3)], lambda a, b: np.stack([a, b, a], -1)),
    ("split", lambda L, x: x.split(2, 1), [(2, 5)], lambda a: _np_split(a, [2, 2, 1], 1)),
    ("split_sizes", lambda L, x: L.split(x, [1, 3], 1), [(2, 4)], lambda a: _np_split(a, [1, 3], 1)),
    ("chunk", lambda L, x: x.chunk(3, -1), [(2, 5)], lambda a: _np_split(a, [2, 2, 1], 1)),
    ("chunk_functional", lambda L, x: L.chunk(x, 2), [(4, 2)], lambda a: _np_split(a, [2, 2], 0)),
    ("unbind", lambda L, x: x.unbind(1), [(2, 3)], lambda a: [a[:, i] for i in range(3)]),
    ("unbind_functional", lambda L, x: L.unbind(x), [(2, 3)], lambda a: [a[0], a[1]]),
]
IDS = [c[0] for c in CASES]


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _arrays(shapes):
    return [randn(*shape, seed=i) for i, shape in enumerate(shapes)]


# --- every op: numpy, finite differences, PyTorch ---------------------------------------------------

@pytest.mark.parametrize("name, fn, shapes, reference", CASES, ids=IDS)
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


@pytest.mark.parametrize("name, fn, shapes, reference", CASES, ids=IDS)
def test_gradcheck_contiguous(name, fn, shapes, reference):
    inputs = [leaf(a) for a in _arrays(shapes)]
    assert gradcheck(lambda *xs: fn(gl, *xs), inputs)


@requires_torch
@pytest.mark.parametrize("name, fn, shapes, reference", CASES, ids=IDS)
def test_matches_torch(name, fn, shapes, reference):
    arrays = _arrays(shapes)
    ours = [leaf(a) for a in arrays]
    theirs = [to_torch(a, requires_grad=True) for a in arrays]
    outs, touts = _outputs(fn(gl, *ours)), _outputs(fn(_TorchLib(), *theirs))
    assert len(outs) == len(touts)
    loss, tloss = 0, 0
    for k, (out, tout) in enumerate(zip(outs, touts)):
        assert_close(out, tout)
        weight = randn(*tout.shape, seed=100 + k)
        loss = loss + (out * gl.tensor(weight)).sum()
        tloss = tloss + (tout * to_torch(weight)).sum()
    loss.backward()
    tloss.backward()
    for x, tx in zip(ours, theirs):
        if tx.grad is None:  # an input that only lends its shape (view_as, expand_as)
            assert x.grad is None
        else:
            assert_close(x.grad, tx.grad)


@pytest.mark.parametrize("name", ["reshape", "permute", "expand", "repeat", "roll_several", "pad_reflect_2d",
                                  "cat", "stack", "split", "unbind", "narrow", "flip"])
def test_gradgradcheck(name):
    _, fn, shapes, _ = CASES[IDS.index(name)]
    inputs = [noncontiguous_leaf(a) for a in _arrays(shapes)]
    assert gradgradcheck(lambda *xs: fn(gl, *xs), inputs)


def test_T_reverses_all_dims():
    a = randn(2, 3, 4)
    assert_close(leaf(a, requires_grad=False).T, a.T)
    assert leaf(randn(3), requires_grad=False).T.shape == (3,)


def test_gradient_through_one_piece_only_gives_zeros_elsewhere():
    x = leaf(np.arange(6.0).reshape(2, 3))
    first, rest = x.split([1, 2], dim=1)
    (first * 3).sum().backward()
    assert_close(x.grad, [[3, 0, 0], [3, 0, 0]])


def test_iterating_unbinds_dim_0_with_gradients():
    x = leaf(randn(3, 2))
    rows = list(x)
    assert [r.shape for r in rows] == [(2,)] * 3
    (rows[1] * 2).sum().backward()
    assert_close(x.grad, [[0, 0], [2, 2], [0, 0]])


def test_grad_fn_names():
    x = leaf(randn(2, 3))
    assert type(x.reshape(3, 2).grad_fn).__name__ == "ViewBackward0"
    assert type(x.view(6).grad_fn).__name__ == "ViewBackward0"
    assert type(x.unsqueeze(0).grad_fn).__name__ == "UnsqueezeBackward0"
    assert type(x.permute(1, 0).grad_fn).__name__ == "PermuteBackward0"
    assert type(x.t().grad_fn).__name__ == "TBackward0"
    assert type(x.expand(2, 2, 3).grad_fn).__name__ == "ExpandBackward0"
    assert type(gl.cat([x, x]).grad_fn).__name__ == "CatBackward0"
    assert type(x.split(1)[0].grad_fn).__name__ == "SplitBackward0"


# --- views and copies -------------------------------------------------------------------------------

VIEWS = {
    "reshape": lambda x: x.reshape(3, 4),
    "reshape_transposed_viewable": lambda x: x.t().reshape(4, 3, 1),
    "view": lambda x: x.view(2, 2, 3),
    "view_as": lambda x: x.view_as(gl.zeros(12)),
    "flatten": lambda x: x.flatten(),
    "unflatten": lambda x: x.unflatten(1, (2, 2)),
    "squeeze": lambda x: x.unsqueeze(0).squeeze(0),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "permute": lambda x: x.permute(1, 0),
    "transpose": lambda x: x.transpose(0, 1),
    "T": lambda x: x.T,
    "mT": lambda x: x.mT,
    "movedim": lambda x: x.movedim(0, 1),
    "expand": lambda x: x.unsqueeze(0).expand(5, 3, 4),
    "broadcast_to": lambda x: gl.broadcast_to(x, (2, 3, 4)),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "split": lambda x: x.split(2, 1)[1],
    "chunk": lambda x: x.chunk(3, 0)[2],
    "unbind": lambda x: x.unbind(1)[3],
}


@pytest.mark.parametrize("name", list(VIEWS))
def test_views_share_memory_and_version(name):
    x = gl.tensor(randn(3, 4))
    out = VIEWS[name](x)
    assert np.shares_memory(out.numpy(), x.numpy())
    assert out._version is x._version


COPIES = {
    "reshape_transposed": lambda x: x.t().reshape(12),
    "repeat_all_ones": lambda x: x.repeat(1, 1),
    "repeat": lambda x: x.repeat(1, 2, 1),
    "tile": lambda x: x.tile((1, 1)),
    "flip": lambda x: x.flip(0),
    "roll": lambda x: x.roll(1, 1),
    "cat_one": lambda x: gl.cat([x]),
    "stack": lambda x: gl.stack([x, x]),
    "pad_zero": lambda x: gl.pad(x, (0, 0)),
    "pad_crop": lambda x: gl.pad(x, (-1, 0)),
}


@pytest.mark.parametrize("name", list(COPIES))
def test_copies_do_not_share_memory(name):
    x = gl.tensor(randn(3, 4))
    out = COPIES[name](x)
    assert not np.shares_memory(out.numpy(), x.numpy())
    assert out._version is not x._version


def test_writes_through_a_view_show_in_the_base():
    x = gl.zeros(2, 3)
    column = x.narrow(1, 1, 1)
    column.add_(5)
    assert_close(x, [[0, 5, 0], [0, 5, 0]])
    assert x._version_count == 1


def test_view_of_a_view_shares_memory_with_the_first_tensor():
    x = gl.tensor(randn(2, 3, 4))
    out = x.permute(2, 0, 1).narrow(0, 1, 2).unsqueeze(0)
    assert np.shares_memory(out.numpy(), x.numpy())
    assert out._version is x._version


def test_writing_into_an_expanded_view_is_refused():
    y = gl.zeros(3, 1).expand(3, 4)
    with pytest.raises(RuntimeError, match="expanded"):
        y.add_(1)


def test_view_refuses_a_layout_that_needs_a_copy():
    x = gl.tensor(randn(2, 3)).t()
    with pytest.raises(RuntimeError, match=r"view size is not compatible with input tensor's size and stride.*"
                                           r"Use \.reshape\(\.\.\.\) instead"):
        x.view(6)
    assert x.reshape(6).shape == (6,)


# --- result shapes and dtypes -----------------------------------------------------------------------

def test_chunk_and_split_piece_sizes():
    x = gl.zeros(5, 6)
    assert [c.shape[0] for c in x.chunk(3)] == [2, 2, 1]
    assert [c.shape[1] for c in x.chunk(4, 1)] == [2, 2, 2]  # fewer chunks than asked, as in PyTorch
    assert [c.shape[1] for c in x.split(4, 1)] == [4, 2]
    assert [c.shape for c in gl.zeros(0).chunk(3)] == [(0,)] * 3
    assert [c.shape for c in gl.zeros(0).split(2)] == [(0,)]


def test_shape_ops_keep_the_dtype():
    for dtype in (gl.int64, gl.bool, gl.float32):
        x = gl.zeros(2, 3, dtype=dtype)
        for out in (x.reshape(3, 2), x.t(), x.expand(2, 2, 3), x.repeat(2, 1), x.flip(0), x.roll(1, 0),
                    gl.pad(x, (1, 1)), gl.cat([x, x]), gl.stack([x, x]), x.split(1)[0], x.unbind()[0]):
            assert out.dtype is dtype


def test_cat_promotes_dtypes_and_casts_gradients_back():
    x = gl.ones(2, dtype=gl.float32, requires_grad=True)
    y = gl.ones(3, dtype=gl.float64, requires_grad=True)
    out = gl.cat([x, y, gl.arange(2)])
    assert out.dtype is gl.float64
    assert gl.cat([gl.arange(2), gl.ones(1)]).dtype is gl.float32
    assert gl.cat([gl.ones(1, dtype=gl.bool), gl.arange(2)]).dtype is gl.int64
    out.sum().backward()
    assert x.grad.dtype is gl.float32 and y.grad.dtype is gl.float64
    assert_close(x.grad, [1, 1])


def test_stack_promotes_dtypes_and_casts_gradients_back():
    x = gl.ones(2, dtype=gl.float32, requires_grad=True)
    out = gl.stack([x, gl.ones(2, dtype=gl.float64)])
    assert out.dtype is gl.float64
    (out * 2).sum().backward()
    assert x.grad.dtype is gl.float32
    assert_close(x.grad, [2, 2])


def test_cat_skips_legacy_empty_1d_tensors():
    x = leaf(randn(2, 3))
    empty = gl.zeros(0, dtype=gl.float64, requires_grad=True)
    out = gl.cat([empty, x, empty], 1)
    assert_close(out, x.detach().numpy())
    out.sum().backward()
    assert empty.grad.shape == (0,)
    assert_close(x.grad, np.ones((2, 3)))


def test_pad_functional_order_is_last_dim_first():
    x = gl.ones(1, 2)
    assert gl.pad(x, (1, 2)).shape == (1, 5)
    assert gl.pad(x, (1, 2, 3, 4)).shape == (8, 5)


def test_flatten_edge_cases():
    x = gl.tensor(2.0)
    assert x.flatten().shape == (1,)
    y = gl.zeros(2, 3)
    assert y.flatten(1, 1) is y


# --- errors --------------------------------------------------------------------------------------

def test_reshape_errors():
    x = gl.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"reshape: shape '\[2, 5\]' is invalid for input of size 6.*\(2, 3\).*10"):
        x.reshape(2, 5)
    with pytest.raises(RuntimeError, match=r"view: shape '\[4, -1\]' is invalid for input of size 6"):
        x.view(4, -1)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        x.reshape(-1, -1)
    with pytest.raises(RuntimeError, match="invalid shape dimension -2"):
        x.reshape(-2, 3)
    with pytest.raises(RuntimeError, match="0 elements.*ambiguous"):
        gl.zeros(0, 3).reshape(0, -1)
    with pytest.raises(TypeError, match="reshape.*integers"):
        x.reshape(2.0, 3)


def test_expand_errors():
    x = gl.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"expanded size of the tensor \(4\) must match the existing size \(3\) at "
                                           r"non-singleton dimension 1.*\[2, 4\].*\[2, 3\]"):
        x.expand(2, 4)
    with pytest.raises(RuntimeError, match=r"number of sizes provided \(1\) must be greater or equal.*\(2\)"):
        x.expand(3)
    with pytest.raises(RuntimeError, match="leading, non-existing dimension 0"):
        x.expand(-1, 2, 3)


def test_cat_errors():
    x = gl.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"Sizes of tensors must match except in dimension 1\. Expected size 2 "
                                           r"but got size 3 for tensor number 1.*\(2, 3\) and \(3, 2\)"):
        gl.cat([x, gl.zeros(3, 2)], 1)
    with pytest.raises(RuntimeError, match=r"Tensors must have same number of dimensions: got 2 and 3"):
        gl.cat([x, gl.zeros(2, 3, 1)])
    with pytest.raises(ValueError, match="expected a non-empty list of Tensors"):
        gl.cat([])
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 0\) cannot be concatenated"):
        gl.cat([gl.tensor(1.0), gl.tensor(2.0)])
    with pytest.raises(TypeError, match="expected Tensor as element 1.*int"):
        gl.cat([x, 3])
    with pytest.raises(TypeError, match="tuple or list of Tensors"):
        gl.cat(x)
    with pytest.raises(IndexError, match="Dimension out of range"):
        gl.cat([x, x], 2)


def test_stack_errors():
    with pytest.raises(RuntimeError, match=r"stack expects each tensor to be equal size, but got \[2, 3\] at entry 0 "
                                           r"and \[3, 2\] at entry 1"):
        gl.stack([gl.zeros(2, 3), gl.zeros(3, 2)])
    with pytest.raises(ValueError, match="non-empty"):
        gl.stack([])


def test_permute_errors():
    x = gl.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"input.dim\(\) = 2 is not equal to len\(dims\) = 3"):
        x.permute(0, 1, 2)
    with pytest.raises(RuntimeError, match="duplicate dims are not allowed"):
        x.permute(0, 0)
    with pytest.raises(RuntimeError, match="duplicate dims"):
        x.permute(1, -1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.permute(0, 2)


def test_squeeze_unsqueeze_out_of_range():
    x = gl.zeros(2, 1)
    with pytest.raises(IndexError, match=r"squeeze: Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.squeeze(2)
    with pytest.raises(IndexError, match=r"unsqueeze: Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        x.unsqueeze(3)
    with pytest.raises(RuntimeError, match="appears multiple times"):
        x.squeeze((1, -1))


def test_split_chunk_unbind_narrow_errors():
    x = gl.zeros(2, 3)
    with pytest.raises(RuntimeError, match=r"split_with_sizes expects split_sizes to sum exactly to 3 \(input tensor's "
                                           r"size at dimension 1\), but got split_sizes=\[1, 1\]"):
        x.split([1, 1], 1)
    with pytest.raises(RuntimeError, match="split_size.*0"):
        x.split(0, 1)
    with pytest.raises(RuntimeError, match="chunk expects `chunks` to be greater than 0, got: 0"):
        x.chunk(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.unbind(2)
    with pytest.raises(RuntimeError, match=r"start \(2\) \+ length \(2\) exceeds dimension size \(3\)"):
        x.narrow(1, 2, 2)
    with pytest.raises(IndexError, match=r"start out of range \(expected to be in range of \[-3, 3\], but got 4\)"):
        x.narrow(1, 4, 0)
    with pytest.raises(RuntimeError, match="length must be non-negative"):
        x.narrow(1, 0, -1)


def test_pad_errors():
    x = gl.zeros(1, 3)
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        gl.pad(x, (1, 1, 1))
    with pytest.raises(RuntimeError, match="Padding length should be less than or equal to two times the input dimension"):
        gl.pad(gl.zeros(3), (1, 1, 1, 1))
    with pytest.raises(NotImplementedError, match="unrecognised padding mode 'foo'.*'constant', 'reflect', 'replicate'"):
        gl.pad(x, (1, 1), mode="foo")
    with pytest.raises(RuntimeError, match=r"Padding size should be less than the corresponding input dimension.*\(3, 1\)"):
        gl.pad(x, (3, 1), mode="reflect")
    with pytest.raises(RuntimeError, match="Padding value causes wrapping around more than once"):
        gl.pad(x, (4, 0), mode="circular")
    with pytest.raises(RuntimeError, match="doesn't take in value argument"):
        gl.pad(x, (1, 1), mode="reflect", value=2)
    with pytest.raises(NotImplementedError, match="Padding size 2 is not supported for 1D input"):
        gl.pad(gl.zeros(3), (1, 1), mode="replicate")
    with pytest.raises(RuntimeError, match="negative output size"):
        gl.pad(x, (-2, -2))


def test_other_argument_errors():
    x = gl.zeros(2, 3)
    with pytest.raises(RuntimeError, match="movedim: Invalid source or destination dims"):
        x.movedim((0, 1), 0)
    with pytest.raises(RuntimeError, match=r"movedim: repeated dim in `source` \(\[0, 0\]\)"):
        x.movedim((0, 0), (0, 1))
    with pytest.raises(RuntimeError, match="start_dim cannot come after end_dim"):
        x.flatten(1, 0)
    with pytest.raises(RuntimeError, match=r"unflatten: Provided sizes \[2, 2\] don't multiply up to the size of dim 1 \(3\)"):
        x.unflatten(1, (2, 2))
    with pytest.raises(RuntimeError, match="mT is only supported on matrices or batches of matrices. Got 1-D"):
        gl.zeros(3).mT
    with pytest.raises(RuntimeError, match=r"t\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        gl.zeros(1, 2, 3).t()
    with pytest.raises(RuntimeError, match="shifts and dimensions must align. shifts: 2, dims:1"):
        x.roll((1, 2), 0)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        x.repeat(2)


# --- property tests on random shapes ----------------------------------------------------------------

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=4).map(tuple)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, data=st.data())
def test_reshape_random_shapes(shape, data):
    a = randn(*shape) if shape else np.array(1.5)
    new = list(data.draw(st.permutations(shape))) + [1] * data.draw(st.integers(0, 1))
    if new and data.draw(st.booleans()):
        new[data.draw(st.integers(0, len(new) - 1))] = -1
    transposed = data.draw(st.booleans())
    reverse = tuple(range(len(shape)))[::-1]
    x = gl.tensor(a.T.copy()).permute(reverse) if transposed else gl.tensor(a)  # same values, maybe other strides
    out = x.reshape(new)
    assert_close(out, a.reshape(new))
    try:  # numpy decides independently whether this reshape can be done without a copy
        np.reshape(x.numpy(), new, copy=False)
        viewable = True
    except ValueError:
        viewable = False
    assert np.shares_memory(out.numpy(), x.numpy()) == (viewable and a.size > 0)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, data=st.data())
def test_permute_random_shapes(shape, data):
    a = randn(*shape)
    dims = data.draw(st.permutations(range(len(shape))))
    x = leaf(a)
    out = x.permute(*dims)
    assert_close(out, np.transpose(a, dims))
    g = randn(*out.shape, seed=1)
    out.backward(gl.tensor(g))
    assert_close(x.grad, np.transpose(g, np.argsort(dims)))


@settings(max_examples=25, deadline=None)
@given(target=shapes, data=st.data())
def test_expand_random_shapes(target, data):
    lead = data.draw(st.integers(0, len(target)))
    ones = [data.draw(st.booleans()) for _ in target[lead:]]
    shape = tuple(1 if one else n for one, n in zip(ones, target[lead:]))
    a = randn(*shape)
    x = leaf(a)
    sizes = [-1 if i >= lead and not ones[i - lead] and data.draw(st.booleans()) else n for i, n in enumerate(target)]
    out = x.expand(*sizes)
    assert_close(out, np.broadcast_to(a, target))
    g = randn(*target, seed=2)
    out.backward(gl.tensor(g))
    expected = g.sum(axis=tuple(range(lead))) if lead else g
    axes = tuple(i for i, (n, m) in enumerate(zip(shape, target[lead:])) if n == 1 and m != 1)
    assert_close(x.grad, expected.sum(axis=axes, keepdims=True).reshape(shape))


@requires_torch
@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 3), min_size=1, max_size=4).map(tuple), data=st.data())
def test_view_possible_agrees_with_torch(shape, data):
    dims = data.draw(st.permutations(range(len(shape))))
    new = data.draw(st.permutations([n for n in shape] + [1]))
    x = gl.tensor(randn(*shape)).permute(*dims)
    tx = torch.tensor(randn(*shape)).permute(*dims)
    try:
        tx.view(new)
        torch_ok = True
    except RuntimeError:
        torch_ok = False
    try:
        x.view(new)
        ours_ok = True
    except RuntimeError:
        ours_ok = False
    assert ours_ok == torch_ok, (shape, dims, new)
    assert math.prod(new) == math.prod(shape)


@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid_matches_numpy_and_is_a_view(indexing):
    a, b = gl.arange(3.0), gl.arange(4.0)
    grids = gl.meshgrid(a, b, indexing=indexing)
    expected = np.meshgrid(np.arange(3.0), np.arange(4.0), indexing=indexing)
    for grid, want in zip(grids, expected):
        assert_close(grid, want)
    assert np.shares_memory(grids[0].numpy(), a.numpy())


def test_meshgrid_gradient_sums_over_the_grid():
    a = leaf(np.arange(3.0))
    b = leaf(np.arange(2.0))
    assert gl.autograd.gradcheck(lambda x, y: [g * g for g in gl.meshgrid(x, y)], (a, b))


def test_meshgrid_rejects_bad_indexing():
    with pytest.raises(ValueError, match="meshgrid: indexing must be 'ij' or 'xy'"):
        gl.meshgrid(gl.arange(2), indexing="yx")

"""nn.Embedding and F.embedding / F.one_hot: lookups, index-add gradients, padding_idx, max_norm, errors."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck

INDICES = np.array([[1, 3, 3, 0], [9, 3, 0, 2]])  # repeats, and the padding row 0 twice


def pair(num=10, dim=3, **kwargs):
    """A torch Embedding and a gradlab one with the same float64 weight."""
    tm = torch.nn.Embedding(num, dim, **kwargs).double()
    gm = nn.Embedding(num, dim, **kwargs).double()
    gm.weight.data = gl.tensor(tm.weight.detach().numpy().copy()).data
    return gm, tm


@requires_torch
@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 0}, {"padding_idx": -1}, {"scale_grad_by_freq": True},
                                    {"padding_idx": 3, "scale_grad_by_freq": True}])
def test_embedding_forward_and_weight_gradient_match_torch(kwargs):
    gm, tm = pair(**kwargs)
    go, to = gm(gl.tensor(INDICES)), tm(torch.tensor(INDICES))
    assert go.shape == (2, 4, 3)
    assert_close(go, to, rtol=1e-12)
    up = randn(2, 4, 3, seed=1)
    (go * gl.tensor(up)).sum().backward()
    (to * torch.tensor(up)).sum().backward()
    assert_close(gm.weight.grad, tm.weight.grad, rtol=1e-12, atol=1e-14)


def test_embedding_padding_row_gets_no_gradient_and_starts_at_zero():
    gl.manual_seed(0)
    gm = nn.Embedding(10, 3, padding_idx=0)
    assert_close(gm.weight.detach()[0], np.zeros(3))
    assert np.abs(gm.weight.detach().numpy()[1:]).sum() > 0
    gm(gl.tensor(INDICES)).sum().backward()
    grad = gm.weight.grad.numpy()
    assert_close(grad[0], np.zeros(3))
    assert_close(grad[3], np.full(3, 3.0))  # index 3 appears three times: the gradients add up
    assert_close(grad[1], np.ones(3))
    assert_close(grad[5], np.zeros(3))
    assert gm.padding_idx == 0
    assert nn.Embedding(10, 3, padding_idx=-2).padding_idx == 8


def test_embedding_default_initialisation_is_standard_normal():
    gl.manual_seed(1)
    w = nn.Embedding(1000, 64).weight.detach().numpy()
    assert abs(w.mean()) < 0.01
    assert abs(w.std() - 1.0) < 0.01
    assert w.dtype == np.float32


def test_embedding_gradcheck_and_gradgradcheck():
    w = gl.tensor(randn(5, 2, seed=2), requires_grad=True)
    idx = gl.tensor([[0, 4, 4], [2, 1, 0]])
    assert gradcheck(lambda w: F.embedding(idx, w), (w,))
    assert gradgradcheck(lambda w: F.embedding(idx, w, padding_idx=4) ** 2, (w,))
    # (scale_grad_by_freq is left out: its gradient is deliberately not the derivative of the forward)


def test_embedding_double_backward_through_the_gradient():
    """The gradient of the weight's gradient: index-add's own backward is a lookup (padding rows zero)."""
    w = gl.tensor(randn(4, 2, seed=3), requires_grad=True)
    g = gl.tensor(randn(3, 2, seed=4), requires_grad=True)
    out = F.embedding(gl.tensor([1, 1, 2]), w, padding_idx=2)
    (gw,) = gl.autograd.grad(out, w, g, create_graph=True)
    assert_close(gw.detach()[1], g.detach().numpy()[:2].sum(0))
    (gw * gl.tensor(np.arange(8.0).reshape(4, 2))).sum().backward()
    assert_close(g.grad, np.array([[2.0, 3.0], [2.0, 3.0], [0.0, 0.0]]))


@requires_torch
def test_embedding_from_pretrained_matches_torch_and_freezes():
    weights = randn(4, 3, seed=5)
    gm = nn.Embedding.from_pretrained(gl.tensor(weights))
    tm = torch.nn.Embedding.from_pretrained(torch.tensor(weights))
    assert not gm.weight.requires_grad
    assert repr(gm) == repr(tm)
    idx = np.array([3, 0, 3])
    assert_close(gm(gl.tensor(idx)), tm(torch.tensor(idx)))
    trainable = nn.Embedding.from_pretrained(gl.tensor(weights), freeze=False, padding_idx=1)
    assert trainable.weight.requires_grad
    assert_close(trainable.weight.detach()[1], weights[1])  # a given weight keeps its padding row
    with pytest.raises(AssertionError, match="Embeddings parameter is expected to be 2-dimensional"):
        nn.Embedding.from_pretrained(gl.ones(3))


@requires_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_used_rows_like_torch(norm_type):
    gm, tm = pair(6, 4, max_norm=1.0, norm_type=norm_type)
    with torch.no_grad():
        tm.weight.mul_(3)
    gm.weight.data = gl.tensor(tm.weight.detach().numpy().copy()).data
    idx = np.array([[0, 2, 2], [5, 0, 1]])
    go, to = gm(gl.tensor(idx)), tm(torch.tensor(idx))
    assert_close(go, to, rtol=1e-10)
    assert_close(gm.weight.detach(), tm.weight.detach(), rtol=1e-10)  # rows 3 and 4 untouched
    up = randn(2, 3, 4, seed=6)
    (go * gl.tensor(up)).sum().backward()
    (to * torch.tensor(up)).sum().backward()
    assert_close(gm.weight.grad, tm.weight.grad, rtol=1e-10)


def test_embedding_index_out_of_range_is_a_clear_index_error():
    gm = nn.Embedding(10, 3)
    with pytest.raises(IndexError, match=r"Embedding\(10, 3\): index out of range in self: index 12 for a table of "
                                         r"10 embeddings \(valid indices are 0 to 9\)"):
        gm(gl.tensor([1, 12]))
    with pytest.raises(IndexError, match=r"index -1 for a table of 10 embeddings"):
        gm(gl.tensor([1, -1]))
    with pytest.raises(IndexError, match=r"embedding: index out of range"):
        F.embedding(gl.tensor([5]), gl.randn(5, 2))


def test_embedding_needs_integer_indices_and_a_2d_weight():
    with pytest.raises(RuntimeError, match=r"Embedding\(10, 3\): Expected tensor for argument #1 'indices' to have "
                                           r"one of the following scalar types: Long, Int; but got float32"):
        nn.Embedding(10, 3)(gl.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(gl.tensor([0]), gl.randn(3))
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        nn.Embedding(10, 3, padding_idx=10)
    assert nn.Embedding(5, 2)(gl.tensor([1, 4], dtype=gl.int32)).shape == (2, 2)


@requires_torch
@pytest.mark.parametrize("kwargs", [{}, {"padding_idx": 0}, {"max_norm": 1.0}, {"norm_type": 1.0},
                                    {"scale_grad_by_freq": True}, {"sparse": True}, {"padding_idx": -1}])
def test_embedding_repr_matches_torch(kwargs):
    assert repr(nn.Embedding(10, 3, **kwargs)) == repr(torch.nn.Embedding(10, 3, **kwargs))
    assert repr(nn.Embedding(10, 3, padding_idx=0)) == "Embedding(10, 3, padding_idx=0)"


def test_embedding_sparse_flag_still_gives_the_dense_gradient():
    gm = nn.Embedding(4, 2, sparse=True)
    gm(gl.tensor([1, 1])).sum().backward()
    assert_close(gm.weight.grad, np.array([[0, 0], [2, 2], [0, 0], [0, 0]], dtype=np.float32))


@requires_torch
def test_one_hot_is_reexported_and_matches_torch():
    idx = np.array([[0, 3], [2, 1]])
    assert_close(F.one_hot(gl.tensor(idx), 5), torch.nn.functional.one_hot(torch.tensor(idx), 5))
    assert F.one_hot(gl.tensor(idx)).dtype == gl.int64

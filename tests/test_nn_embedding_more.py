"""EmbeddingBag and F.embedding_bag: sum/mean/max bags, offsets, include_last_offset, padding_idx, weights."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck

INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
OFFSETS = np.array([0, 4, 4, 7])  # the second bag is empty


@requires_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 4, 0])
def test_embedding_bag_matches_torch(mode, padding_idx):
    for include_last_offset in (False, True):
        layer = nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx, include_last_offset=include_last_offset)
        t_layer = torch.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx,
                                        include_last_offset=include_last_offset)
        compare_modules(layer, t_layer, INDICES, OFFSETS)
    compare_modules(nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx),
                    torch.nn.EmbeddingBag(10, 3, mode=mode, padding_idx=padding_idx), INDICES.reshape(2, 5))


@requires_torch
def test_embedding_bag_per_sample_weights_match_torch():
    weights = randn(10, seed=4)
    compare_modules(nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2),
                    torch.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=2), INDICES, OFFSETS,
                    per_sample_weights=None)
    g_w, t_w = gl.tensor(weights, requires_grad=True), torch.tensor(weights, requires_grad=True)
    table = randn(10, 3, seed=5)
    out = F.embedding_bag(gl.tensor(INDICES), gl.tensor(table), gl.tensor(OFFSETS), mode="sum",
                          per_sample_weights=g_w)
    t_out = torch.nn.functional.embedding_bag(torch.tensor(INDICES), torch.tensor(table), torch.tensor(OFFSETS),
                                              mode="sum", per_sample_weights=t_w)
    assert_close(out, t_out)
    out.sum().backward()
    t_out.sum().backward()
    assert_close(g_w.grad, t_w.grad)


def test_embedding_bag_is_a_mean_of_embedding_rows():
    table = gl.tensor(randn(6, 2))
    out = F.embedding_bag(gl.tensor([[0, 5, 1]]), table)
    assert_close(out, table.numpy()[[0, 5, 1]].mean(0, keepdims=True))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_gradcheck(mode):
    table = gl.tensor(randn(6, 2), requires_grad=True)
    fn = lambda w: F.embedding_bag(gl.tensor([1, 3, 3, 0, 5]), w, gl.tensor([0, 2]), mode=mode)  # noqa: E731
    assert gradcheck(fn, (table,))


@requires_torch
def test_embedding_bag_from_pretrained_and_state_dict():
    table = gl.tensor(randn(4, 2))
    bag = nn.EmbeddingBag.from_pretrained(table, mode="sum")
    assert not bag.weight.requires_grad and list(bag.state_dict()) == ["weight"]
    assert repr(bag) == repr(torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table.numpy()), mode="sum"))


def test_embedding_bag_errors_as_pytorch():
    w = gl.ones(10, 3)
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        F.embedding_bag(gl.tensor(INDICES), w)
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(gl.tensor(INDICES.reshape(2, 5)), w, gl.tensor([0, 1]))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        F.embedding_bag(gl.tensor(INDICES), w, gl.tensor(OFFSETS), mode="min")
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for mode='sum'"):
        F.embedding_bag(gl.tensor(INDICES), w, gl.tensor(OFFSETS), per_sample_weights=gl.ones(10))
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(gl.tensor(INDICES), w, gl.tensor([1, 4]))
    with pytest.raises(RuntimeError, match="offsets\\[-1\\] can not be greater than input's length 10"):
        F.embedding_bag(gl.tensor(INDICES), w, gl.tensor([0, 11]))
    with pytest.raises(IndexError, match=r"EmbeddingBag\(10, 3\): index out of range in self: index 12"):
        nn.EmbeddingBag(10, 3)(gl.tensor([[1, 12]]))

"""cosine_similarity, pairwise_distance, pdist and the CosineSimilarity / PairwiseDistance layers."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def leaf(*shape, seed=0):
    return gl.tensor(randn(*shape, seed=seed), requires_grad=True)


@requires_torch
def test_distance_layers_match_torch():
    a, b = randn(4, 5), randn(4, 5, seed=1)
    compare_modules(nn.CosineSimilarity(), torch.nn.CosineSimilarity(), a, b)
    compare_modules(nn.CosineSimilarity(dim=0, eps=1e-3), torch.nn.CosineSimilarity(dim=0, eps=1e-3), a, b)
    compare_modules(nn.CosineSimilarity(dim=-1), torch.nn.CosineSimilarity(dim=-1), a, b[:1])  # broadcasting
    compare_modules(nn.PairwiseDistance(), torch.nn.PairwiseDistance(), a, b)
    compare_modules(nn.PairwiseDistance(p=1.5, keepdim=True), torch.nn.PairwiseDistance(p=1.5, keepdim=True), a, b)
    compare_modules(nn.PairwiseDistance(), torch.nn.PairwiseDistance(), a[0], b[0])  # two vectors


@requires_torch
@pytest.mark.parametrize("p", [0.5, 1, 2, 3, float("inf")])
def test_pdist_matches_torch(p):
    x = randn(5, 3)
    g, t = gl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    out, t_out = F.pdist(g, p), torch.nn.functional.pdist(t, p)
    assert_close(out, t_out)
    out.sum().backward()
    t_out.sum().backward()
    assert_close(g.grad, t.grad)


def test_distance_gradcheck():
    assert gradcheck(F.cosine_similarity, (leaf(3, 4), leaf(3, 4, seed=1)))
    assert gradgradcheck(F.cosine_similarity, (leaf(2, 3), leaf(2, 3, seed=1)))
    assert gradcheck(lambda a, b: F.pairwise_distance(a, b, p=3), (leaf(3, 4), leaf(3, 4, seed=1)))
    assert gradcheck(F.pdist, (leaf(4, 3),))


def test_cosine_similarity_of_parallel_and_orthogonal_vectors():
    out = F.cosine_similarity(gl.tensor([[1.0, 0.0], [2.0, 2.0]]), gl.tensor([[0.0, 3.0], [1.0, 1.0]]))
    np.testing.assert_allclose(out.numpy(), [0.0, 1.0], atol=1e-7)


def test_distance_errors():
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        F.pdist(gl.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match="cosine_similarity"):
        F.cosine_similarity(gl.ones(2, 3), gl.ones(2, 4))
    with pytest.raises(RuntimeError, match="pairwise_distance"):
        F.pairwise_distance(gl.ones(2, 3), gl.ones(3, 4))

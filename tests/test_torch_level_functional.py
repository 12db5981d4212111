"""The nn.functional ops PyTorch also has at its top level (torch.conv2d, torch.dropout), with ATen's signatures."""

import numpy as np
import pytest

import gradlab as gl
from helpers import assert_close, randn, requires_torch, torch


def both(*arrays):
    """The same float64 arrays as gradlab and torch tensors."""
    return [gl.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]


X4, W4 = randn(2, 3, 6, 6, seed=1), randn(4, 3, 3, 3, seed=2)
X3, W3 = randn(2, 3, 8, seed=3), randn(4, 3, 3, seed=4)
V, U, T = randn(4, 5, seed=5), randn(4, 5, seed=6), np.sign(randn(4, seed=7))
P = np.abs(randn(4, 5, seed=8)) + 0.1

CASES = {  # name -> (arrays, extra positional arguments in ATen's order)
    "conv1d": ((X3, W3), ()), "conv2d": ((X4, W4), ()), "conv_transpose2d": ((X4, W4.transpose(1, 0, 2, 3)), ()),
    "dropout": ((V,), (0.5, False)), "alpha_dropout": ((V,), (0.5, False)),
    "feature_alpha_dropout": ((X4,), (0.5, False)),
    "layer_norm": ((V,), ((5,),)), "group_norm": ((X4,), (3,)),
    "batch_norm": ((X4, np.ones(3), np.zeros(3), np.zeros(3), np.ones(3)), (False, 0.1, 1e-5, False)),
    "instance_norm": ((X4, np.ones(3), np.zeros(3), None, None), (True, 0.1, 1e-5, False)),
    "kl_div": ((np.log(P / P.sum(1, keepdims=True)), P / P.sum(1, keepdims=True)), (2,)),
    "binary_cross_entropy_with_logits": ((V, (U > 0).astype(float)), (None, None, 1)),
    "cosine_embedding_loss": ((V, U, T), (0.1, 1)), "hinge_embedding_loss": ((V, np.sign(U)), (1.0, 2)),
    "margin_ranking_loss": ((V[:, 0], U[:, 0], T), (0.2, 1)),
    "poisson_nll_loss": ((V, P), (True, False, 1e-8, 1)),
    "triplet_margin_loss": ((V, U, P), (1.0, 2.0, 1e-6, False, 1)),
    "max_pool1d": ((X3,), (2,)), "max_pool2d": ((X4,), (2,)), "avg_pool1d": ((X3,), (2,)),
    "adaptive_avg_pool1d": ((X3,), (3,)), "adaptive_max_pool1d": ((X3,), (3,)),
    "pixel_shuffle": ((randn(1, 8, 2, 2),), (2,)), "pixel_unshuffle": ((randn(1, 2, 4, 4),), (2,)),
    "channel_shuffle": ((randn(1, 6, 2, 2),), (3,)), "cosine_similarity": ((V, U), (1,)),
    "pairwise_distance": ((V, U), ()), "pdist": ((V,), ()), "prelu": ((V, np.array([0.25])), ()),
    "celu": ((V,), ()), "selu": ((V,), ()), "threshold": ((V,), (0.1, 20.0)), "hardshrink": ((V,), (0.5,)),
    "rms_norm": ((V,), ((5,),)), "bilinear": ((V, U, randn(3, 5, 5, seed=9)), ()),
}


@requires_torch
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_torch_level_form_gives_torchs_numbers(name):
    arrays, extra = CASES[name]
    ours = getattr(gl, name)(*[None if a is None else gl.tensor(a) for a in arrays], *extra)
    theirs = getattr(torch, name)(*[None if a is None else torch.tensor(a) for a in arrays], *extra)
    assert_close(ours if not isinstance(ours, tuple) else ours[0], theirs if not isinstance(theirs, tuple) else
                 theirs[0], rtol=1e-10, atol=1e-12)


@requires_torch
def test_embedding_takes_the_table_first_and_minus_one_for_no_padding():
    table, ids = randn(5, 3), np.array([[0, 4], [2, 2]])
    assert_close(gl.embedding(gl.tensor(table), gl.tensor(ids)), torch.embedding(torch.tensor(table),
                                                                                 torch.tensor(ids)))
    assert_close(gl.embedding(gl.tensor(table), gl.tensor(ids), 2), torch.embedding(torch.tensor(table),
                                                                                    torch.tensor(ids), 2))


@requires_torch
def test_max_pool1d_with_indices_and_the_in_place_forms():
    (x,), (tx,) = both(X3)
    values, indices = gl.max_pool1d_with_indices(x, 2)
    tvalues, tindices = torch.max_pool1d_with_indices(tx, 2)
    assert_close(values, tvalues) and assert_close(indices, tindices)
    for name in ("relu_", "selu_", "celu_", "threshold_", "rrelu_"):
        (a,), (ta,) = both(V.copy())
        args = (0.1, 20.0) if name == "threshold_" else ()
        getattr(gl, name)(a, *args)
        if name != "rrelu_":  # random in training mode; eval mode (the default) is deterministic
            getattr(torch, name)(ta, *args)
            assert_close(a, ta)


def test_a_reduction_number_outside_0_1_2_is_named():
    with pytest.raises(ValueError, match=r"kl_div: reduction must be 0 \(none\), 1 \(mean\) or 2 \(sum\).*got 3"):
        gl.kl_div(gl.zeros(2), gl.zeros(2), 3)

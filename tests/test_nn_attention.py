"""Attention: F.scaled_dot_product_attention and nn.MultiheadAttention against PyTorch, gradcheck, init, errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def both(*arrays, requires_grad=True):
    """The same float64 arrays as gradlab and torch leaves."""
    g = [None if a is None else gl.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f") for a in arrays]
    t = [None if a is None else torch.tensor(a, requires_grad=requires_grad and a.dtype.kind == "f") for a in arrays]
    return g, t


def bool_mask(shape, seed, p=0.3):
    """A random bool mask with its first column False (so no row is entirely True)."""
    m = np.random.default_rng(seed).random(shape) < p
    m[..., 0] = False
    return m


# --- scaled_dot_product_attention ------------------------------------------------------------------------------

SDPA_CASES = {
    "plain": dict(),
    "bool-mask": dict(mask=lambda: ~bool_mask((4, 6), 1, 0.6)),
    "float-mask": dict(mask=lambda: randn(4, 6, seed=2)),
    "batched-mask": dict(mask=lambda: ~bool_mask((2, 1, 4, 6), 3, 0.6)),
    "causal": dict(is_causal=True),
    "scale": dict(scale=0.3),
}


@requires_torch
@pytest.mark.parametrize("case", SDPA_CASES)
@pytest.mark.parametrize("lead", [(2, 3), (5,)])
def test_sdpa_matches_torch(case, lead):
    spec = SDPA_CASES[case]
    mask = spec["mask"]() if "mask" in spec else None
    if mask is not None and mask.ndim > len(lead) + 2:
        mask = mask[0]
    q, k, v = randn(*lead, 4, 3, seed=4), randn(*lead, 6, 3, seed=5), randn(*lead, 6, 5, seed=6)
    (gq, gk, gv, gm), (tq, tk, tv, tm) = both(q, k, v, mask)
    kwargs = {key: spec[key] for key in ("is_causal", "scale") if key in spec}
    g_out = F.scaled_dot_product_attention(gq, gk, gv, attn_mask=gm, **kwargs)
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm, **kwargs)
    assert g_out.shape == (*lead, 4, 5)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    w = randn(*t_out.shape, seed=7)
    (g_out * gl.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    for g, t in ((gq, tq), (gk, tk), (gv, tv)) + (((gm, tm),) if mask is not None and mask.dtype.kind == "f" else ()):
        assert_close(g.grad, t.grad, rtol=1e-7, atol=1e-10)


@requires_torch
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_sdpa_fully_masked_rows_give_zeros_like_torch(kind):
    keep = np.ones((3, 5), dtype=bool)
    keep[1] = False
    mask = keep if kind == "bool" else np.where(keep, 0.0, -np.inf)
    (gq, gk, gv, gm), (tq, tk, tv, tm) = both(randn(2, 3, 4, seed=8), randn(2, 5, 4, seed=9), randn(2, 5, 6, seed=10), mask)
    g_out = F.scaled_dot_product_attention(gq, gk, gv, attn_mask=gm)
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=tm)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    assert np.all(g_out.detach().numpy()[:, 1] == 0)
    (g_out ** 2).sum().backward()
    (t_out ** 2).sum().backward()
    for g, t in ((gq, tq), (gk, tk), (gv, tv)):
        assert_close(g.grad, t.grad, rtol=1e-7, atol=1e-10)


@requires_torch
def test_sdpa_grouped_query_attention_matches_torch():
    (gq, gk, gv), (tq, tk, tv) = both(randn(2, 6, 4, 3, seed=11), randn(2, 2, 5, 3, seed=12), randn(2, 2, 5, 3, seed=13))
    g_out = F.scaled_dot_product_attention(gq, gk, gv, enable_gqa=True)
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, enable_gqa=True)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    g_out.sum().backward()
    t_out.sum().backward()
    assert_close(gk.grad, tk.grad, rtol=1e-7, atol=1e-10)


def test_sdpa_against_numpy_formula():
    q, k, v = randn(3, 4, 2, seed=14), randn(3, 5, 2, seed=15), randn(3, 5, 6, seed=16)
    keep = ~bool_mask((4, 5), 17, 0.5)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(2)
    scores = np.where(keep, scores, -np.inf)
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    out = F.scaled_dot_product_attention(gl.tensor(q), gl.tensor(k), gl.tensor(v), attn_mask=gl.tensor(keep))
    assert_close(out, weights @ v, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("case", ["none", "bool", "float", "causal"])
def test_sdpa_gradcheck_float64(case):
    q, k, v = (gl.tensor(randn(2, 3, 2, seed=s), requires_grad=True) for s in (18, 19, 20))
    mask = None
    if case == "bool":
        mask = gl.tensor(~bool_mask((3, 3), 21, 0.5))
    elif case == "float":
        mask = gl.tensor(randn(3, 3, seed=22), requires_grad=True)
    inputs = (q, k, v) + ((mask,) if case == "float" else ())

    def fn(q, k, v, *_):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=case == "causal")

    assert gradcheck(fn, inputs)


def test_sdpa_second_derivatives_float64():
    q, k, v = (gl.tensor(randn(2, 3, 2, seed=s), requires_grad=True) for s in (23, 24, 25))
    mask = gl.tensor(randn(3, 3, seed=26), requires_grad=True)
    assert gradgradcheck(lambda q, k, v, m: F.scaled_dot_product_attention(q, k, v, attn_mask=m), (q, k, v, mask))


def test_sdpa_dropout_keeps_expectation_and_follows_the_seed():
    q, k = gl.zeros(1, 400, 8), gl.zeros(1, 50, 8)
    v = gl.ones(1, 50, 3)
    gl.manual_seed(3)
    first = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    gl.manual_seed(3)
    again = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5).numpy()
    np.testing.assert_array_equal(first, again)
    assert abs(first.mean() - 1.0) < 0.05 and first.std() > 0.05  # uniform weights 1/50, kept ones scaled by 2


def test_sdpa_errors():
    q, k, v = gl.randn(2, 4, 3), gl.randn(2, 6, 3), gl.randn(2, 6, 5)
    with pytest.raises(RuntimeError, match=r"attn_mask of shape \(4, 5\) does not broadcast to .* \(2, 4, 6\)"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=gl.ones(4, 5, dtype=gl.bool))
    with pytest.raises(RuntimeError, match=r"query \(2, 4, 3\), key \(2, 6, 2\) .* must share the feature size"):
        F.scaled_dot_product_attention(q, gl.randn(2, 6, 2), v)
    with pytest.raises(RuntimeError, match="should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=gl.ones(4, 6, dtype=gl.bool), is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, k.double(), v)
    with pytest.raises(RuntimeError, match="attn_mask dtype to be bool or float, but got int64"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=gl.ones(4, 6, dtype=gl.int64))


# --- MultiheadAttention --------------------------------------------------------------------------------------

E, HEADS, L, S, N = 8, 2, 3, 5, 4


def mha_pair(**kwargs):
    t = torch.nn.MultiheadAttention(E, HEADS, **kwargs).double()
    g = nn.MultiheadAttention(E, HEADS, **kwargs).double()
    g.load_state_dict({k: gl.tensor(v.detach().numpy()) for k, v in t.state_dict().items()})
    return t, g


def run_mha(kwargs, batch_first=False, self_attention=False, padding=None, attn=None, need_weights=True,
            average=True, unbatched=False, is_causal=False, seed=0):
    """Run both modules on the same data and compare outputs, weights and every gradient."""
    t, g = mha_pair(batch_first=batch_first, **kwargs)
    rng = np.random.default_rng(seed)
    kdim, vdim = kwargs.get("kdim", E), kwargs.get("vdim", E)
    src = L if self_attention else S

    def shape(length, features):
        return (length, features) if unbatched else ((N, length, features) if batch_first else (length, N, features))

    q = rng.standard_normal(shape(L, E))
    k, v = (q, q) if self_attention else (rng.standard_normal(shape(src, kdim)), rng.standard_normal(shape(src, vdim)))
    masks = {}
    if padding:
        kpm = bool_mask((src,) if unbatched else (N, src), seed + 1)
        masks["key_padding_mask"] = kpm if padding == "bool" else np.where(kpm, -np.inf, 0.0)
    if attn:
        am = bool_mask(((1 if unbatched else N) * HEADS, L, src) if attn == "3d" else (L, src), seed + 2)
        if is_causal:
            am = np.triu(np.ones((L, src), dtype=bool), 1)
        masks["attn_mask"] = am if attn != "float" else np.where(am, -np.inf, 0.0) + 0.1 * rng.standard_normal(am.shape)
    (gq, gk, gv), (tq, tk, tv) = both(q, k, v)
    if self_attention:
        gk = gv = gq
        tk = tv = tq
    g_masks = {name: gl.tensor(m) for name, m in masks.items()}
    t_masks = {name: torch.tensor(m) for name, m in masks.items()}
    options = dict(need_weights=need_weights, average_attn_weights=average, is_causal=is_causal)
    g_out, g_w = g(gq, gk, gv, **g_masks, **options)
    t_out, t_w = t(tq, tk, tv, **t_masks, **options)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    w = rng.standard_normal(tuple(t_out.shape))
    g_loss, t_loss = (g_out * gl.tensor(w)).sum(), (t_out * torch.tensor(w)).sum()
    if need_weights:
        assert_close(g_w, t_w, rtol=1e-7, atol=1e-10)
        ww = rng.standard_normal(tuple(t_w.shape))
        g_loss, t_loss = g_loss + (g_w * gl.tensor(ww)).sum(), t_loss + (t_w * torch.tensor(ww)).sum()
    else:
        assert g_w is None and t_w is None
    g_loss.backward()
    t_loss.backward()
    for ga, ta in ((gq, tq),) + (() if self_attention else ((gk, tk), (gv, tv))):
        assert_close(ga.grad, ta.grad, rtol=1e-7, atol=1e-10)
    for name, p in t.named_parameters():
        assert_close(g.get_parameter(name).grad, p.grad, rtol=1e-7, atol=1e-10)


MASK_CASES = [(None, None), ("bool", None), (None, "bool"), ("bool", "bool"), ("float", "float"), ("bool", "3d"),
              (None, "float")]


@requires_torch
@pytest.mark.parametrize("padding, attn", MASK_CASES)
@pytest.mark.parametrize("need_weights, average", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("batch_first", [False, True])
def test_mha_masks_and_weights_match_torch(padding, attn, need_weights, average, batch_first):
    run_mha({}, batch_first=batch_first, padding=padding, attn=attn, need_weights=need_weights, average=average)


@requires_torch
@pytest.mark.parametrize("kwargs", [{"bias": False}, {"add_bias_kv": True}, {"add_zero_attn": True},
                                    {"kdim": 6, "vdim": 7}, {"add_bias_kv": True, "add_zero_attn": True}],
                         ids=["no-bias", "bias-kv", "zero-attn", "kdim-vdim", "bias-kv-zero-attn"])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_options_match_torch(kwargs, need_weights):
    run_mha(kwargs, padding="bool", attn="bool", need_weights=need_weights, seed=3)


@requires_torch
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("self_attention, padding, attn", [(True, "bool", "bool"), (True, None, "3d"),
                                                           (False, "float", "float")])
def test_mha_unbatched_matches_torch(batch_first, self_attention, padding, attn):
    run_mha({}, batch_first=batch_first, self_attention=self_attention, padding=padding, attn=attn, unbatched=True,
            need_weights=attn != "3d", seed=4)


@requires_torch
@pytest.mark.parametrize("padding, need_weights", [(None, False), ("bool", False), (None, True)])
def test_mha_self_attention_and_causal_hint_match_torch(padding, need_weights):
    run_mha({}, batch_first=True, self_attention=True, padding=padding, attn="bool", need_weights=need_weights,
            is_causal=True, seed=5)
    run_mha({}, self_attention=True, padding=padding, need_weights=need_weights, seed=6)


@requires_torch
def test_mha_fully_masked_query_gives_nan_weights_like_torch():
    attn = np.zeros((L, S), dtype=bool)
    attn[1] = True
    t, g = mha_pair()
    (gx, gy), (tx, ty) = both(randn(L, N, E, seed=23), randn(S, N, E, seed=24))
    for need_weights in (True, False):
        g_out, g_w = g(gx, gy, gy, attn_mask=gl.tensor(attn), need_weights=need_weights)
        t_out, t_w = t(tx, ty, ty, attn_mask=torch.tensor(attn), need_weights=need_weights)
        assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)  # NaN where torch has NaN (need_weights), else 0 there
        if need_weights:
            assert_close(g_w, t_w, rtol=1e-7, atol=1e-10)


@requires_torch
def test_functional_multi_head_attention_forward_matches_torch():
    t, _ = mha_pair()
    (gx, gy), (tx, ty) = both(randn(L, N, E, seed=25), randn(S, N, E, seed=26))
    p = {k: v.detach() for k, v in t.named_parameters()}
    g_p = {k: gl.tensor(v.numpy()) for k, v in p.items()}

    def call(fn, lib_p, x, y):
        return fn(x, y, y, E, HEADS, lib_p["in_proj_weight"], lib_p["in_proj_bias"], None, None, False, 0.0,
                  lib_p["out_proj.weight"], lib_p["out_proj.bias"], training=False)

    g_out, g_w = call(F.multi_head_attention_forward, g_p, gx, gy)
    t_out, t_w = call(torch.nn.functional.multi_head_attention_forward, p, tx, ty)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    assert_close(g_w, t_w, rtol=1e-7, atol=1e-10)


def test_mha_gradcheck_float64():
    gl.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, batch_first=True).double()
    x = gl.tensor(randn(2, 3, 4, seed=27), requires_grad=True)
    pad = gl.tensor(np.array([[False, False, True], [False, False, False]]))

    def fn(x, *_):
        return mha(x, x, x, key_padding_mask=pad)

    assert gradcheck(fn, (x, mha.in_proj_weight, mha.out_proj.bias))


@requires_torch
def test_mha_parameters_init_and_repr_match_torch():
    gl.manual_seed(0)
    g, t = nn.MultiheadAttention(64, 4), torch.nn.MultiheadAttention(64, 4)
    assert [(k, tuple(v.shape)) for k, v in g.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    assert repr(g) == repr(t)
    w = g.in_proj_weight.detach().numpy()
    bound = math.sqrt(6 / (64 + 3 * 64))  # xavier_uniform_ on (3E, E)
    assert w.min() >= -bound and w.max() <= bound and abs(w.std() - bound / math.sqrt(3)) < 0.03 * bound
    assert not g.in_proj_bias.detach().numpy().any() and not g.out_proj.bias.detach().numpy().any()
    separate = nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True)
    reference = torch.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True)
    assert [(k, tuple(v.shape)) for k, v in separate.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in reference.state_dict().items()]
    assert separate.in_proj_weight is None


def test_mha_dropout_only_in_training():
    gl.manual_seed(1)
    mha = nn.MultiheadAttention(8, 2, dropout=0.5).double()
    x = gl.tensor(randn(4, 2, 8, seed=28))
    plain = nn.MultiheadAttention(8, 2).double()
    plain.load_state_dict(mha.state_dict())
    mha.eval()
    assert_close(mha(x, x, x)[0], plain(x, x, x)[0].detach().numpy(), rtol=0, atol=0)
    mha.train()
    out, weights = mha(x, x, x, average_attn_weights=False)
    assert not np.allclose(out.detach().numpy(), plain(x, x, x)[0].detach().numpy())
    assert set(np.unique(weights.detach().numpy() == 0)) == {True, False}  # dropped weights are returned


def test_mha_weights_are_probabilities():
    mha = nn.MultiheadAttention(8, 4, batch_first=True)
    x = gl.randn(2, 5, 8)
    _, weights = mha(x, x, x, average_attn_weights=False)
    assert weights.shape == (2, 4, 5, 5)
    np.testing.assert_allclose(weights.detach().numpy().sum(-1), 1.0, rtol=1e-5)


# --- errors -------------------------------------------------------------------------------------------------

def test_mha_construction_errors():
    with pytest.raises(AssertionError, match=r"embed_dim must be divisible by num_heads, got embed_dim=10 and "
                                             r"num_heads=3"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0"):
        nn.MultiheadAttention(0, 1)


def test_mha_mask_shape_errors():
    mha = nn.MultiheadAttention(E, HEADS)
    q, kv = gl.randn(L, N, E), gl.randn(S, N, E)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(3, 4\), but should be \(3, 5\)"):
        mha(q, kv, kv, attn_mask=gl.zeros(3, 4, dtype=gl.bool))
    with pytest.raises(RuntimeError, match=r"The shape of the 3D attn_mask is \(2, 3, 5\), but should be \(8, 3, 5\)"):
        mha(q, kv, kv, attn_mask=gl.zeros(2, 3, 5, dtype=gl.bool))
    with pytest.raises(AssertionError, match=r"expected key_padding_mask of shape \(4, 5\) .* got \(4, 6\)"):
        mha(q, kv, kv, key_padding_mask=gl.zeros(4, 6, dtype=gl.bool))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        mha(q, kv, kv, attn_mask=gl.zeros(3, 5, dtype=gl.int64))


def test_mha_input_errors():
    mha = nn.MultiheadAttention(E, HEADS)
    with pytest.raises(AssertionError, match=r"query should be unbatched 2D or batched 3D tensor but received 4-D"):
        mha(gl.randn(1, L, N, E), gl.randn(S, N, E), gl.randn(S, N, E))
    with pytest.raises(AssertionError, match=r"was expecting embedding dimension of 8, but got query of shape "
                                             r"\(3, 4, 6\)"):
        mha(gl.randn(L, N, 6), gl.randn(S, N, 6), gl.randn(S, N, 6))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        mha(gl.randn(L, N, E), gl.randn(L, N, E), gl.randn(L, N, E), is_causal=True)


@pytest.mark.parametrize("batch_first, need_weights", list(itertools.product([False, True], [False, True])))
def test_mha_output_shapes(batch_first, need_weights):
    mha = nn.MultiheadAttention(E, HEADS, batch_first=batch_first, kdim=3, vdim=5)
    q = gl.randn(N, L, E) if batch_first else gl.randn(L, N, E)
    k = gl.randn(N, S, 3) if batch_first else gl.randn(S, N, 3)
    v = gl.randn(N, S, 5) if batch_first else gl.randn(S, N, 5)
    out, weights = mha(q, k, v, need_weights=need_weights)
    assert out.shape == ((N, L, E) if batch_first else (L, N, E))
    assert (weights is None) if not need_weights else weights.shape == (N, L, S)


# --- the fused self-attention node (self-attention, need_weights=False, no dropout) ------------------------------

def fused_inputs(batch_first, seed):
    gl.manual_seed(seed)
    mha = nn.MultiheadAttention(E, HEADS, batch_first=batch_first).double()
    x = gl.tensor(randn(*((N, L, E) if batch_first else (L, N, E)), seed=seed), requires_grad=True)
    pad = gl.tensor(bool_mask((N, L), seed + 1))
    attn = gl.tensor(randn(L, L, seed=seed + 2), requires_grad=True)
    return mha, x, pad, attn


@pytest.mark.parametrize("batch_first", [False, True])
def test_fused_self_attention_matches_the_general_path(batch_first):
    mha, x, pad, attn = fused_inputs(batch_first, 30)
    w = gl.tensor(randn(*x.shape, seed=33))
    results = []
    for need_weights in (False, True):  # False takes the fused node; True the general path
        for t in (x, attn, mha.in_proj_weight, mha.in_proj_bias):
            t.grad = None
        out, _ = mha(x, x, x, key_padding_mask=pad, attn_mask=attn, need_weights=need_weights)
        (out * w).sum().backward()
        results.append([out.detach().numpy(), x.grad.numpy(), attn.grad.numpy(), mha.in_proj_weight.grad.numpy(),
                        mha.in_proj_bias.grad.numpy()])
    assert mha(x, x, x, need_weights=False)[0].grad_fn.next_functions[0][0].name() == "SelfAttentionBackward0"
    for fused, general in zip(*results):
        np.testing.assert_allclose(fused, general, rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("batch_first", [False, True])
def test_fused_self_attention_gradcheck_and_second_derivatives(batch_first):
    mha, x, pad, attn = fused_inputs(batch_first, 40)

    def fn(x, attn, *_):
        return mha(x, x, x, key_padding_mask=pad, attn_mask=attn, need_weights=False)[0]

    assert gradcheck(fn, (x, attn, mha.in_proj_weight))
    assert gradgradcheck(fn, (x, attn, mha.in_proj_bias))


def test_fused_self_attention_unbatched_causal_and_fully_masked_rows():
    mha, _, _, _ = fused_inputs(False, 50)
    x = gl.tensor(randn(L, E, seed=51), requires_grad=True)
    out, weights = mha(x, x, x, attn_mask=gl.tensor(np.triu(np.ones((L, L), bool), 1)), need_weights=False,
                       is_causal=True)
    assert weights is None and out.shape == (L, E)
    masked = np.zeros((L, L), bool)
    masked[1] = True  # query 1 may look at no key: its attention output is 0 (only the out_proj bias is left)
    out = mha(x, x, x, attn_mask=gl.tensor(masked), need_weights=False)[0]
    np.testing.assert_allclose(out.detach().numpy()[1], mha.out_proj.bias.detach().numpy(), rtol=1e-14)
    out.sum().backward()
    assert np.isfinite(x.grad.numpy()).all()

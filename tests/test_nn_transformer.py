"""TransformerEncoderLayer and TransformerEncoder against PyTorch (same weights), gradcheck, copies, errors."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck

D, HEADS, FF, S, N = 8, 2, 16, 5, 3


def load_from_torch(module, torch_module):
    module.load_state_dict({k: gl.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()})


def layer_pair(g_activation="relu", t_activation=None, **kwargs):
    kwargs.setdefault("dropout", 0.0)
    t = torch.nn.TransformerEncoderLayer(D, HEADS, FF, activation=t_activation or g_activation, **kwargs).double()
    g = nn.TransformerEncoderLayer(D, HEADS, FF, activation=g_activation, **kwargs).double()
    load_from_torch(g, t)
    return t, g


def compare(t_module, g_module, x, masks=None, train=False, **call):
    """Forward both modules on x (with masks given as numpy), then backward; compare output and all gradients.

    The input requires grad, which also keeps PyTorch off its inference fast path.
    """
    masks = masks or {}
    t_module.train(train)
    g_module.train(train)
    gx, tx = gl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    g_out = g_module(gx, **{k: gl.tensor(m) for k, m in masks.items()}, **call)
    t_out = t_module(tx, **{k: torch.tensor(m) for k, m in masks.items()}, **call)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    w = randn(*t_out.shape, seed=99)
    (g_out * gl.tensor(w)).sum().backward()
    (t_out * torch.tensor(w)).sum().backward()
    assert_close(gx.grad, tx.grad, rtol=1e-7, atol=1e-10)
    for name, p in t_module.named_parameters():
        assert_close(g_module.get_parameter(name).grad, p.grad, rtol=1e-7, atol=1e-10)


def masks_for(batch_first, unbatched=False, kind="bool"):
    causal = np.triu(np.ones((S, S), dtype=bool), 1)
    padding = np.zeros((S,) if unbatched else (N, S), dtype=bool)
    padding[..., 3:] = True
    padding[..., 0] = False
    if kind == "float":
        causal, padding = np.where(causal, -np.inf, 0.0), np.where(padding, -np.inf, 0.0)
    return {"src_mask": causal, "src_key_padding_mask": padding}


# --- TransformerEncoderLayer ----------------------------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_masks", [False, True])
def test_encoder_layer_matches_torch(norm_first, activation, batch_first, with_masks):
    t, g = layer_pair(activation, norm_first=norm_first, batch_first=batch_first)
    x = randn(N, S, D, seed=1) if batch_first else randn(S, N, D, seed=1)
    compare(t, g, x, masks_for(batch_first) if with_masks else None)


@requires_torch
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_in_training_mode_without_dropout_matches_torch(norm_first):
    t, g = layer_pair("gelu", norm_first=norm_first, batch_first=True)
    compare(t, g, randn(N, S, D, seed=2), masks_for(True, kind="float"), train=True)


@requires_torch
def test_encoder_layer_callable_activations_match_torch():
    t, g = layer_pair(nn.GELU(approximate="tanh"), torch.nn.GELU(approximate="tanh"))
    assert repr(g) == repr(t)  # a module activation is a registered child, as in PyTorch
    compare(t, g, randn(S, N, D, seed=3))
    t, g = layer_pair(lambda x: x.tanh(), lambda x: x.tanh())
    compare(t, g, randn(S, N, D, seed=4))
    assert g.activation_relu_or_gelu == 0 and layer_pair("gelu")[1].activation_relu_or_gelu == 2


@requires_torch
def test_encoder_layer_without_bias_matches_torch():
    t, g = layer_pair("relu", bias=False, norm_first=True)
    assert [k for k in g.state_dict()] == [k for k in t.state_dict()]
    compare(t, g, randn(S, N, D, seed=5), masks_for(False))


@requires_torch
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_unbatched_matches_torch(batch_first):
    t, g = layer_pair("gelu", batch_first=batch_first)
    compare(t, g, randn(S, D, seed=6), masks_for(batch_first, unbatched=True))


@requires_torch
def test_encoder_layer_is_causal_hint_matches_torch():
    t, g = layer_pair("relu", batch_first=True, norm_first=True)
    causal = np.triu(np.ones((S, S), dtype=bool), 1)
    compare(t, g, randn(N, S, D, seed=7), {"src_mask": causal}, is_causal=True)


def test_encoder_layer_gradcheck_float64():
    gl.manual_seed(0)
    layer = nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, activation="gelu", norm_first=True).double()
    x = gl.tensor(randn(3, 2, 4, seed=8), requires_grad=True)
    mask = gl.tensor(np.triu(np.ones((3, 3), dtype=bool), 1))
    assert gradcheck(lambda x, *_: layer(x, src_mask=mask), (x, layer.linear1.weight, layer.self_attn.in_proj_bias))


def test_encoder_layer_dropout_only_in_training():
    gl.manual_seed(2)
    layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.3).double()
    x = gl.tensor(randn(S, N, D, seed=9))
    layer.eval()
    np.testing.assert_array_equal(layer(x).detach().numpy(), layer(x).detach().numpy())
    layer.train()
    assert not np.allclose(layer(x).detach().numpy(), layer(x).detach().numpy())


# --- TransformerEncoder ---------------------------------------------------------------------------------------

def encoder_pair(norm_first=True, num_layers=2, final_norm=True):
    t_layer = torch.nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    t = torch.nn.TransformerEncoder(t_layer, num_layers, norm=torch.nn.LayerNorm(D) if final_norm else None,
                                    enable_nested_tensor=False).double()
    g_layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    g = nn.TransformerEncoder(g_layer, num_layers, norm=nn.LayerNorm(D) if final_norm else None).double()
    load_from_torch(g, t)
    return t, g


@requires_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("mask_kind", [None, "bool", "float"])
def test_two_layer_encoder_matches_torch(norm_first, mask_kind):
    t, g = encoder_pair(norm_first)
    masks = None
    if mask_kind:
        masks = masks_for(True, kind=mask_kind)
        masks = {"mask": masks["src_mask"], "src_key_padding_mask": masks["src_key_padding_mask"]}
    compare(t, g, randn(N, S, D, seed=10), masks)


@requires_torch
def test_encoder_detects_a_causal_float_mask():
    t, g = encoder_pair(final_norm=False)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(S, dtype=torch.float64).numpy()
    compare(t, g, randn(N, S, D, seed=11), {"mask": causal})
    from gradlab.nn.modules.transformer import _detect_is_causal_mask
    assert _detect_is_causal_mask(gl.tensor(causal), None, S)
    assert not _detect_is_causal_mask(gl.tensor(causal.T.copy()), None, S)
    assert not _detect_is_causal_mask(None, None, S)


@requires_torch
def test_encoder_layers_are_independent_deep_copies():
    _, g = encoder_pair()
    first, second = g.layers[0], g.layers[1]
    assert first is not second and first.linear1.weight is not second.linear1.weight
    with gl.no_grad():
        first.linear1.weight.fill_(0.0)
    assert second.linear1.weight.detach().numpy().any()
    t_layer = torch.nn.TransformerEncoderLayer(D, HEADS, FF)
    t = torch.nn.TransformerEncoder(t_layer, 2, norm=torch.nn.LayerNorm(D), enable_nested_tensor=False)
    g = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, HEADS, FF), 2, norm=nn.LayerNorm(D))
    assert repr(g) == repr(t)
    assert [(k, tuple(v.shape)) for k, v in g.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in t.state_dict().items()]


def test_encoder_output_shapes():
    encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, HEADS, FF), 3)
    assert encoder(gl.randn(S, N, D)).shape == (S, N, D)
    assert encoder(gl.randn(S, D)).shape == (S, D)
    assert len(encoder.layers) == 3 and encoder.norm is None


# --- errors ---------------------------------------------------------------------------------------------------

def test_encoder_layer_errors():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(D, HEADS, activation="tanh")
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerEncoderLayer(10, 3)
    layer = nn.TransformerEncoderLayer(D, HEADS, FF)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is \(4, 4\), but should be \(5, 5\)"):
        layer(gl.randn(S, N, D), src_mask=gl.zeros(4, 4, dtype=gl.bool))
    with pytest.raises(AssertionError, match=r"expected key_padding_mask of shape \(3, 5\) .* got \(5, 3\)"):
        layer(gl.randn(S, N, D), src_key_padding_mask=gl.zeros(5, 3, dtype=gl.bool))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8"):
        layer(gl.randn(S, N, 6))


def test_activation_strings_map_to_functions():
    assert nn.TransformerEncoderLayer(D, HEADS, activation="gelu").activation is F.gelu
    assert nn.TransformerEncoderLayer(D, HEADS).activation is F.relu

"""TransformerDecoderLayer, TransformerDecoder and Transformer against PyTorch (state_dicts loaded across)."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import load_torch_state

import gradlab as gl
import gradlab.nn as nn
from gradlab.autograd import gradcheck

pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")

SMALL = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0)


def run_both(module, t_module, *arrays, **masks):
    """Forward and input gradients agree; masks are given as numpy arrays (or the causal flag)."""
    pairs = [(gl.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)) for a in arrays]
    g_masks = {k: gl.tensor(v) if isinstance(v, np.ndarray) else v for k, v in masks.items()}
    t_masks = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in masks.items()}
    out, t_out = module(*[p[0] for p in pairs], **g_masks), t_module(*[p[1] for p in pairs], **t_masks)
    assert_close(out, t_out, rtol=1e-9, atol=1e-10)
    seed = randn(*out.shape, seed=9)
    out.backward(gl.tensor(seed))
    t_out.backward(torch.tensor(seed))
    for g, t in pairs:
        assert_close(g.grad, t.grad, rtol=1e-8, atol=1e-10)
    for (name, p), (_, t_p) in zip(module.named_parameters(), t_module.named_parameters()):
        assert_close(p.grad, t_p.grad, rtol=1e-8, atol=1e-10)


def causal(n):
    return np.triu(np.full((n, n), -np.inf), 1)


@requires_torch
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_transformer_matches_torch(norm_first, batch_first, activation):
    kwargs = dict(SMALL, num_encoder_layers=2, num_decoder_layers=2, norm_first=norm_first, batch_first=batch_first,
                  activation=activation)
    model, t_model = nn.Transformer(**kwargs), torch.nn.Transformer(**kwargs)
    load_torch_state(model, t_model)
    src, tgt = randn(5, 3, 8), randn(4, 3, 8, seed=1)
    if batch_first:
        src, tgt = src.transpose(1, 0, 2).copy(), tgt.transpose(1, 0, 2).copy()
    padding = np.zeros((3, 5), bool)
    padding[1, 3:] = True
    run_both(model, t_model, src, tgt, tgt_mask=causal(4), src_key_padding_mask=padding,
             memory_key_padding_mask=padding)
    assert repr(model) == repr(t_model)


@requires_torch
def test_decoder_layer_and_stack_match_torch_with_a_callable_activation():
    layer = nn.TransformerDecoderLayer(**SMALL, activation=nn.functional.silu)
    t_layer = torch.nn.TransformerDecoderLayer(**SMALL, activation=torch.nn.functional.silu)
    load_torch_state(layer, t_layer)
    stack = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(8))  # deep copies, made before any gradient exists
    t_stack = torch.nn.TransformerDecoder(t_layer, 2, norm=torch.nn.LayerNorm(8))
    load_torch_state(stack, t_stack)
    tgt, memory = randn(4, 2, 8), randn(6, 2, 8, seed=1)
    run_both(layer, t_layer, tgt, memory, tgt_mask=causal(4), tgt_is_causal=True)
    run_both(stack, t_stack, tgt, memory, tgt_mask=causal(4), memory_mask=np.zeros((4, 6)))
    run_both(stack, t_stack, tgt[:, 0], memory[:, 0])  # unbatched
    assert list(stack.state_dict()) == list(t_stack.state_dict())


@requires_torch
def test_generate_square_subsequent_mask_matches_torch():
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    assert mask.dtype == gl.float32
    np.testing.assert_array_equal(mask.numpy(), torch.nn.Transformer.generate_square_subsequent_mask(4).numpy())
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=gl.float64).dtype == gl.float64


def test_transformer_weights_start_xavier_uniform_and_biases_zero():
    gl.manual_seed(0)
    model = nn.Transformer(**SMALL, num_encoder_layers=1, num_decoder_layers=1)
    w = model.decoder.layers[0].linear1.weight.detach().numpy()
    bound = np.sqrt(6 / (8 + 16))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound


def test_decoder_layer_gradcheck():
    gl.manual_seed(0)
    layer = nn.TransformerDecoderLayer(4, 2, dim_feedforward=6, dropout=0.0).double()
    tgt, memory = gl.tensor(randn(3, 1, 4), requires_grad=True), gl.tensor(randn(2, 1, 4, seed=1), requires_grad=True)
    assert gradcheck(lambda t, m: layer(t, m), (tgt, memory))


def test_transformer_errors():
    model = nn.Transformer(**SMALL, num_encoder_layers=1, num_decoder_layers=1)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(gl.ones(5, 3, 8), gl.ones(4, 2, 8))
    with pytest.raises(RuntimeError, match="the feature number of src and tgt must be equal to d_model"):
        model(gl.ones(5, 3, 8), gl.ones(4, 3, 6))
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerDecoderLayer(8, 2, activation="tanh")

"""Recurrent layers: RNN, LSTM, GRU and their cells against PyTorch (same weights), gradcheck, init, errors."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
from gradlab.autograd import gradcheck

KINDS = ("RNN", "LSTM", "GRU")


def load_from_torch(module, torch_module):
    """Copy a PyTorch module's weights in through its state_dict, converted with numpy."""
    module.load_state_dict({k: gl.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()})


def pair(kind, *args, **kwargs):
    """The same layer in PyTorch and gradlab, in float64, with PyTorch's weights loaded into gradlab's."""
    t = getattr(torch.nn, kind)(*args, **kwargs).double()
    g = getattr(nn, kind)(*args, **kwargs).double()
    load_from_torch(g, t)
    return t, g


def leaves(*arrays):
    return [gl.tensor(a, requires_grad=True) for a in arrays], [torch.tensor(a, requires_grad=True) for a in arrays]


def compare_grads(t_module, g_module, t_leaves, g_leaves):
    for t, g in zip(t_leaves, g_leaves):
        assert_close(g.grad, t.grad, rtol=1e-7, atol=1e-10)
    for name, p in t_module.named_parameters():
        assert_close(g_module.get_parameter(name).grad, p.grad, rtol=1e-7, atol=1e-10)


def run_layer(module, kind, x, h0, c0):
    """Forward, then a loss that weighs output and final states differently, then backward."""
    if kind == "LSTM":
        out, (h_n, c_n) = module(x, None if h0 is None else (h0, c0))
        loss = (out * out).sum() + (h_n ** 3).sum() + (c_n * 0.5).sum()
        finals = (h_n, c_n)
    else:
        out, h_n = module(x, h0)
        loss = (out * out).sum() + (h_n ** 3).sum()
        finals = (h_n,)
    loss.backward()
    return out, finals


# --- against PyTorch -----------------------------------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("with_h0", [False, True])
def test_layer_matches_torch(kind, num_layers, batch_first, with_h0):
    t, g = pair(kind, 4, 5, num_layers=num_layers, batch_first=batch_first)
    x = randn(3, 6, 4, seed=1) if batch_first else randn(6, 3, 4, seed=1)
    h0, c0 = randn(num_layers, 3, 5, seed=2), randn(num_layers, 3, 5, seed=3)
    (gx, gh, gc), (tx, th, tc) = leaves(x, h0, c0)
    g_out, g_finals = run_layer(g, kind, gx, gh if with_h0 else None, gc if with_h0 else None)
    t_out, t_finals = run_layer(t, kind, tx, th if with_h0 else None, tc if with_h0 else None)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    for gf, tf in zip(g_finals, t_finals):
        assert_close(gf, tf, rtol=1e-7, atol=1e-10)
    used = [(tx, gx)] + ([(th, gh)] + ([(tc, gc)] if kind == "LSTM" else []) if with_h0 else [])
    compare_grads(t, g, [a for a, _ in used], [b for _, b in used])


@requires_torch
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_first", [False, True])
def test_bidirectional_matches_torch(kind, batch_first):
    t, g = pair(kind, 3, 4, num_layers=2, batch_first=batch_first, bidirectional=True)
    x = randn(2, 5, 3, seed=4) if batch_first else randn(5, 2, 3, seed=4)
    h0, c0 = randn(4, 2, 4, seed=5), randn(4, 2, 4, seed=6)
    (gx, gh, gc), (tx, th, tc) = leaves(x, h0, c0)
    g_out, g_finals = run_layer(g, kind, gx, gh, gc)
    t_out, t_finals = run_layer(t, kind, tx, th, tc)
    assert g_out.shape == ((2, 5, 8) if batch_first else (5, 2, 8))
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    for gf, tf in zip(g_finals, t_finals):
        assert_close(gf, tf, rtol=1e-7, atol=1e-10)
    compare_grads(t, g, [tx, th], [gx, gh])


@requires_torch
def test_lstm_projection_matches_torch():
    t, g = pair("LSTM", 4, 6, num_layers=2, bidirectional=True, proj_size=3)
    x, h0, c0 = randn(5, 2, 4, seed=7), randn(4, 2, 3, seed=8), randn(4, 2, 6, seed=9)
    (gx, gh, gc), (tx, th, tc) = leaves(x, h0, c0)
    g_out, (g_h, g_c) = run_layer(g, "LSTM", gx, gh, gc)
    t_out, (t_h, t_c) = run_layer(t, "LSTM", tx, th, tc)
    assert g_out.shape == (5, 2, 6) and g_h.shape == (4, 2, 3) and g_c.shape == (4, 2, 6)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    assert_close(g_h, t_h, rtol=1e-7, atol=1e-10)
    assert_close(g_c, t_c, rtol=1e-7, atol=1e-10)
    compare_grads(t, g, [tx, th, tc], [gx, gh, gc])


@requires_torch
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input_matches_torch(kind, batch_first):
    t, g = pair(kind, 3, 4, num_layers=2, batch_first=batch_first)
    x, h0, c0 = randn(5, 3, seed=10), randn(2, 4, seed=11), randn(2, 4, seed=12)
    (gx, gh, gc), (tx, th, tc) = leaves(x, h0, c0)
    g_out, g_finals = run_layer(g, kind, gx, gh, gc)
    t_out, t_finals = run_layer(t, kind, tx, th, tc)
    assert g_out.shape == (5, 4) and g_finals[0].shape == (2, 4)
    assert_close(g_out, t_out, rtol=1e-7, atol=1e-10)
    for gf, tf in zip(g_finals, t_finals):
        assert_close(gf, tf, rtol=1e-7, atol=1e-10)
    compare_grads(t, g, [tx, th], [gx, gh])


@requires_torch
@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [False, True])
def test_cells_match_torch(kind, batched, with_hx):
    kwargs = {"nonlinearity": "relu"} if kind == "RNNCell" else {}
    t, g = pair(kind, 3, 4, **kwargs)
    lead = (2,) if batched else ()
    x, h, c = randn(*lead, 3, seed=13), randn(*lead, 4, seed=14), randn(*lead, 4, seed=15)
    (gx, gh, gc), (tx, th, tc) = leaves(x, h, c)
    if kind == "LSTMCell":
        g_h, g_c = g(gx, (gh, gc) if with_hx else None)
        t_h, t_c = t(tx, (th, tc) if with_hx else None)
        ((g_h ** 2).sum() + g_c.sum()).backward()
        ((t_h ** 2).sum() + t_c.sum()).backward()
        assert_close(g_c, t_c, rtol=1e-7, atol=1e-10)
    else:
        g_h, t_h = g(gx, gh if with_hx else None), t(tx, th if with_hx else None)
        (g_h ** 2).sum().backward()
        (t_h ** 2).sum().backward()
    assert_close(g_h, t_h, rtol=1e-7, atol=1e-10)
    compare_grads(t, g, [tx] + ([th] if with_hx else []), [gx] + ([gh] if with_hx else []))


@requires_torch
@pytest.mark.parametrize("kind", KINDS)
def test_state_dict_names_and_shapes_match_torch(kind):
    kwargs = {"proj_size": 2} if kind == "LSTM" else {}
    t = getattr(torch.nn, kind)(3, 5, num_layers=2, bidirectional=True, **kwargs)
    g = getattr(nn, kind)(3, 5, num_layers=2, bidirectional=True, **kwargs)
    assert [(k, tuple(v.shape)) for k, v in g.state_dict().items()] == \
           [(k, tuple(v.shape)) for k, v in t.state_dict().items()]
    assert [p.shape for group in g.all_weights for p in group] == [tuple(p.shape) for group in t.all_weights for p in group]


@requires_torch
@pytest.mark.parametrize("args, kwargs", [
    (("RNN", 3, 4), {}),
    (("RNN", 3, 4, 2, "relu"), {"bias": False, "batch_first": True}),
    (("LSTM", 10, 20), {"num_layers": 2, "dropout": 0.5, "bidirectional": True, "proj_size": 5}),
    (("GRU", 3, 4), {"num_layers": 3, "batch_first": True}),
    (("RNNCell", 3, 4), {"nonlinearity": "relu", "bias": False}),
    (("LSTMCell", 3, 4), {}),
    (("GRUCell", 3, 4), {"bias": False}),
])
def test_repr_matches_torch(args, kwargs):
    kind, *rest = args
    assert repr(getattr(nn, kind)(*rest, **kwargs)) == repr(getattr(torch.nn, kind)(*rest, **kwargs))


# --- gradcheck, initialisation, modes ---------------------------------------------------------------------------

def test_lstm_gradcheck_float64():
    lstm = nn.LSTM(2, 2, num_layers=2, bidirectional=True).double()
    x = gl.tensor(randn(3, 1, 2, seed=16), requires_grad=True)
    h0 = gl.tensor(randn(4, 1, 2, seed=17), requires_grad=True)
    c0 = gl.tensor(randn(4, 1, 2, seed=18), requires_grad=True)
    params = [lstm.weight_ih_l0, lstm.weight_hh_l1_reverse, lstm.bias_hh_l0, lstm.bias_ih_l1]

    def fn(x, h0, c0, *_):
        out, (h_n, c_n) = lstm(x, (h0, c0))
        return out, h_n, c_n

    assert gradcheck(fn, (x, h0, c0, *params))


def test_gru_cell_gradcheck_float64():
    cell = nn.GRUCell(3, 2).double()
    x, h = gl.tensor(randn(2, 3, seed=19), requires_grad=True), gl.tensor(randn(2, 2, seed=20), requires_grad=True)
    assert gradcheck(lambda x, h, *_: cell(x, h), (x, h, cell.weight_hh, cell.bias_hh))


@pytest.mark.parametrize("kind", KINDS)
def test_default_init_is_uniform_within_one_over_sqrt_hidden(kind):
    gl.manual_seed(0)
    module = getattr(nn, kind)(64, 100, num_layers=2)
    bound = 1 / math.sqrt(100)
    values = np.concatenate([p.detach().numpy().ravel() for p in module.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert abs(values.std() - bound / math.sqrt(3)) < 0.02 * bound
    assert abs(values.mean()) < 0.02 * bound


def test_outputs_shapes_and_float32_default():
    lstm = nn.LSTM(4, 6, num_layers=3, batch_first=True)
    out, (h, c) = lstm(gl.randn(2, 7, 4))
    assert out.shape == (2, 7, 6) and h.shape == (3, 2, 6) and c.shape == (3, 2, 6)
    assert out.dtype == gl.float32
    gru = nn.GRU(4, 6, bidirectional=True)
    out, h = gru(gl.randn(7, 2, 4))
    assert out.shape == (7, 2, 12) and h.shape == (2, 2, 6)


def test_last_output_equals_final_hidden_state():
    gru = nn.GRU(3, 4, num_layers=2, batch_first=True).double()
    out, h = gru(gl.tensor(randn(2, 5, 3, seed=21)))
    assert_close(out[:, -1], h[-1].detach().numpy(), rtol=0, atol=0)


def test_dropout_between_layers_only_in_training():
    gl.manual_seed(1)
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5).double()
    x = gl.tensor(randn(5, 2, 3, seed=22))
    reference = nn.LSTM(3, 4, num_layers=2).double()
    reference.load_state_dict(lstm.state_dict())
    lstm.eval()
    assert_close(lstm(x)[0], reference(x)[0].detach().numpy(), rtol=0, atol=0)
    lstm.train()
    assert not np.allclose(lstm(x)[0].detach().numpy(), reference(x)[0].detach().numpy())


def test_dropout_with_one_layer_warns():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        nn.GRU(3, 4, dropout=0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.GRU(3, 4, num_layers=2, dropout=0.2)


# --- errors ---------------------------------------------------------------------------------------------------

def test_wrong_feature_size_names_layer_and_both_shapes():
    lstm = nn.LSTM(10, 20, num_layers=2)
    with pytest.raises(RuntimeError, match=r"LSTM\(10, 20, num_layers=2\): expected input with 10 features .* "
                                           r"got input of shape \(5, 3, 11\)"):
        lstm(gl.randn(5, 3, 11))
    with pytest.raises(RuntimeError, match=r"LSTMCell\(10, 20\): expected input with 10 features .* shape \(3, 7\)"):
        nn.LSTMCell(10, 20)(gl.randn(3, 7))


def test_wrong_rank_input():
    with pytest.raises(ValueError, match=r"GRU: Expected input to be 2D or 3D, got 4D tensor instead"):
        nn.GRU(3, 4)(gl.randn(1, 2, 3, 3))
    with pytest.raises(ValueError, match=r"RNNCell: Expected input to be 1D or 2D, got 3D instead"):
        nn.RNNCell(3, 4)(gl.randn(1, 2, 3))


def test_wrong_initial_state_shape():
    rnn = nn.RNN(3, 4, num_layers=2)
    with pytest.raises(RuntimeError, match=r"Expected hx size \(2, 5, 4\) .* got \(1, 5, 4\)"):
        rnn(gl.randn(7, 5, 3), gl.zeros(1, 5, 4))
    with pytest.raises(RuntimeError, match=r"For batched 3-D input, hx should also be 3-D but got 2-D"):
        rnn(gl.randn(7, 5, 3), gl.zeros(5, 4))
    with pytest.raises(RuntimeError, match=r"Expected cx size \(1, 2, 4\)"):
        nn.LSTM(3, 4)(gl.randn(6, 2, 3), (gl.zeros(1, 2, 4), gl.zeros(1, 2, 5)))
    with pytest.raises(RuntimeError, match=r"GRUCell\(3, 4\): expected hidden of shape \(2, 4\)"):
        nn.GRUCell(3, 4)(gl.randn(2, 3), gl.zeros(2, 5))


def test_bad_constructor_arguments():
    with pytest.raises(ValueError, match="Unknown nonlinearity 'sigmoid'"):
        nn.RNN(3, 4, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.LSTM(3, 0)


def test_dtype_mismatch_says_how_to_convert():
    with pytest.raises(ValueError, match=r"input dtype \(float64\) does not match weight dtype \(float32\)"):
        nn.LSTM(3, 4)(gl.tensor(randn(2, 1, 3)))

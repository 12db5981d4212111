"""GradScaler: the same scale history and parameter trajectory as torch.amp.GradScaler, and its errors."""

import pickle
import warnings

import numpy as np
import pytest

import gradlab as gl
from helpers import randn, requires_torch, torch

INF_STEPS = {1, 2, 6}  # steps whose gradients get an inf (1 and 2 back off twice in a row)
NAN_STEPS = {9}


def _train(lib, scaler, steps=12):
    """Linear regression with SGD+momentum; an inf or NaN is written into one gradient on some steps."""
    lin = lib.nn.Linear(4, 2)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(randn(2, 4, seed=1).astype(np.float32)))
        lin.bias.copy_(lib.tensor(randn(2, seed=2).astype(np.float32)))
    opt = lib.optim.SGD(lin.parameters(), lr=0.05, momentum=0.9)
    x, y = lib.tensor(randn(8, 4, seed=3).astype(np.float32)), lib.tensor(randn(8, 2, seed=4).astype(np.float32))
    history = []
    for step in range(steps):
        opt.zero_grad()
        loss = ((lin(x) - y) ** 2).mean()
        scaler.scale(loss).backward()
        if step in INF_STEPS or step in NAN_STEPS:
            with lib.no_grad():
                lin.weight.grad[0, 1] = float("inf") if step in INF_STEPS else float("nan")
        returned = scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), returned, lin.weight.detach().numpy().copy(),
                        lin.bias.detach().numpy().copy()))
    return history, scaler


@requires_torch
def test_scale_history_and_parameters_match_torch_with_infs_and_nans():
    settings = dict(init_scale=2.0**10, growth_factor=2.0, backoff_factor=0.5, growth_interval=3)
    ours, our_scaler = _train(gl, gl.amp.GradScaler("cpu", **settings))
    theirs, their_scaler = _train(torch, torch.amp.GradScaler("cpu", **settings))
    assert [h[0] for h in ours] == [h[0] for h in theirs]
    # by hand: halve on steps 1, 2, 6, 9 (inf/NaN); double after the 3 clean steps 3, 4, 5
    assert [h[0] for h in ours] == [1024.0, 512.0, 256.0, 256.0, 256.0, 512.0, 256.0, 256.0, 256.0, 128.0, 128.0,
                                    128.0]
    for step, (mine, other) in enumerate(zip(ours, theirs)):
        np.testing.assert_allclose(mine[2], other[2], rtol=1e-6, atol=1e-7, err_msg=f"weight after step {step}")
        np.testing.assert_allclose(mine[3], other[3], rtol=1e-6, atol=1e-7, err_msg=f"bias after step {step}")
    assert our_scaler.state_dict() == their_scaler.state_dict()


@requires_torch
def test_odd_factors_round_the_scale_as_torch_does():
    settings = dict(init_scale=1000.0, growth_factor=1.37, backoff_factor=0.3, growth_interval=1)
    ours, _ = _train(gl, gl.amp.GradScaler("cpu", **settings))
    theirs, _ = _train(torch, torch.amp.GradScaler("cpu", **settings))
    assert [h[0] for h in ours] == [h[0] for h in theirs]


def test_a_skipped_step_leaves_the_parameters_and_returns_none():
    history, _ = _train(gl, gl.amp.GradScaler("cpu", init_scale=4.0, growth_interval=100), steps=3)
    assert history[0][1] is None  # SGD.step returns None
    np.testing.assert_array_equal(history[1][2], history[0][2])  # step 1 had an inf: nothing moved
    np.testing.assert_array_equal(history[2][2], history[1][2])


class _CountingOptimizer:
    """Enough of an optimizer for GradScaler: param_groups and a step that says it ran."""

    def __init__(self, params):
        self.param_groups = [{"params": list(params)}]
        self.calls = []

    def step(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return "stepped"


def _scaled_backward(scaler, w):
    scaler.scale((w * 3.0).sum()).backward()


def test_step_returns_what_optimizer_step_returned_and_forwards_arguments():
    w = gl.ones(2, requires_grad=True)
    scaler, opt = gl.amp.GradScaler("cpu", init_scale=8.0), _CountingOptimizer([w])
    _scaled_backward(scaler, w)
    assert w.grad.tolist() == [24.0, 24.0]
    assert scaler.step(opt, 1, extra=2) == "stepped" and opt.calls == [((1,), {"extra": 2})]
    assert w.grad.tolist() == [3.0, 3.0]  # unscaled in place


def test_unscale_then_step_unscales_once_and_the_order_is_checked():
    w = gl.ones(2, requires_grad=True)
    scaler, opt = gl.amp.GradScaler("cpu", init_scale=8.0), _CountingOptimizer([w])
    with pytest.raises(AssertionError, match="Attempted step but _scale is None.  This may indicate your script did "
                                             r"not use scaler.scale\(loss or outputs\)"):
        scaler.step(opt)
    _scaled_backward(scaler, w)
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last "
                                           r"update\(\)."):
        scaler.unscale_(opt)
    scaler.step(opt)
    assert w.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)."):
        scaler.step(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: 0)
    scaler.update()
    with pytest.raises(AssertionError, match=r"No inf checks were recorded prior to update."):
        scaler.update()


def test_float16_gradients_are_refused_as_torch_refuses_them():
    w = gl.ones(2, dtype=gl.float16, requires_grad=True)
    scaler = gl.amp.GradScaler("cpu")
    _scaled_backward(scaler, w)
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.unscale_(_CountingOptimizer([w]))


def test_disabled_scaler_is_a_pass_through():
    w = gl.ones(2, requires_grad=True)
    scaler, opt = gl.amp.GradScaler("cpu", enabled=False), _CountingOptimizer([w])
    loss = (w * 3.0).sum()
    assert scaler.scale(loss) is loss and not scaler.is_enabled()
    loss.backward()
    scaler.unscale_(opt)
    assert scaler.step(opt, closure=None) == "stepped" and w.grad.tolist() == [3.0, 3.0]
    scaler.update()
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}


def test_cuda_scaler_without_a_gpu_warns_and_disables(monkeypatch):
    monkeypatch.setattr(gl.cuda, "is_available", lambda: False)  # (the simulator, or a GPU, would say True)
    with pytest.warns(UserWarning, match="GradScaler is enabled, but CUDA is not available.  Disabling."):
        scaler = gl.amp.GradScaler()
    assert not scaler.is_enabled()
    with pytest.warns(FutureWarning, match=r"gradlab.cuda.amp.GradScaler\(args...\)` is deprecated"):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            assert not gl.cuda.amp.GradScaler().is_enabled()
    assert gl.GradScaler is gl.amp.GradScaler


def test_list_outputs_are_scaled_each():
    scaler = gl.amp.GradScaler("cpu", init_scale=4.0)
    a, b = scaler.scale([gl.tensor(1.0), (gl.tensor(2.0),)])
    assert a.item() == 4.0 and b[0].item() == 8.0
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3.0)


def test_bad_factors_are_refused():
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        gl.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        gl.amp.GradScaler("cpu", backoff_factor=1.5)


def test_new_scale_getters_setters_state_dict_and_pickle():
    scaler = gl.amp.GradScaler("cpu", init_scale=16.0, growth_interval=5)
    w = gl.ones(1, requires_grad=True)
    opt = _CountingOptimizer([w])
    _scaled_backward(scaler, w)
    scaler.step(opt)
    scaler.update(new_scale=gl.tensor(5.0))
    assert scaler.get_scale() == 5.0
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(new_scale=gl.tensor([5.0, 6.0]))
    scaler.update(new_scale=3.0)
    assert scaler.get_scale() == 3.0
    scaler.set_growth_factor(3.0), scaler.set_backoff_factor(0.25), scaler.set_growth_interval(7)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (3.0, 0.25, 7)
    state = scaler.state_dict()
    assert state == {"scale": 3.0, "growth_factor": 3.0, "backoff_factor": 0.25, "growth_interval": 7,
                     "_growth_tracker": 0}
    fresh = gl.amp.GradScaler("cpu")
    fresh.load_state_dict(state)
    assert fresh.state_dict() == state
    assert pickle.loads(pickle.dumps(scaler)).state_dict() == state
    with pytest.raises(RuntimeError, match="The source state dict is empty, possibly because it was saved from a "
                                           "disabled instance of GradScaler."):
        fresh.load_state_dict({})
    with pytest.raises(KeyError, match="the state dict lacks growth_interval, _growth_tracker"):
        fresh.load_state_dict({"scale": 1.0, "growth_factor": 2.0, "backoff_factor": 0.5})
    assert fresh.state_dict() == state  # a refused load changed nothing

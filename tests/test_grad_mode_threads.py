"""Grad mode belongs to a thread, as in PyTorch: one thread's no_grad never switches recording off in another."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd import grad_mode
from helpers import watch_trusted_forwards


def run_in_thread(fn, *args):
    """Run fn in a new thread and return its result (re-raising what it raised)."""
    result = {}

    def body():
        try:
            result["value"] = fn(*args)
        except BaseException as error:  # handed to the caller's thread
            result["error"] = error

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "the thread did not finish"
    if "error" in result:
        raise result["error"]
    return result["value"]


def in_thread(fn):
    """Start fn in a thread; returns a join() that gives its result (or re-raises its error)."""
    result = {}

    def body():
        try:
            result["value"] = fn()
        except BaseException as error:
            result["error"] = error

    thread = threading.Thread(target=body)
    thread.start()

    def join():
        thread.join(timeout=60)
        assert not thread.is_alive(), "the thread did not finish"
        if "error" in result:
            raise result["error"]
        return result.get("value")

    return join


def mode():
    return gl.is_grad_enabled(), gl.autograd.is_inference_mode_enabled()


def test_a_new_thread_starts_with_grad_enabled_and_inference_off():
    with gl.inference_mode():
        assert mode() == (False, True)
        assert run_in_thread(mode) == (True, False)
    assert mode() == (True, False)


def test_set_grad_enabled_false_in_main_does_not_leak_into_a_new_thread():
    x = gl.ones(3, requires_grad=True)
    gl.set_grad_enabled(False)
    try:
        assert run_in_thread(lambda: ((x * 2).requires_grad, gl.is_grad_enabled())) == (True, True)
        assert not (x * 2).requires_grad
    finally:
        gl.set_grad_enabled(True)
    assert (x * 2).requires_grad


def test_no_grad_in_one_thread_leaves_recording_on_in_another():
    x = gl.ones(3, requires_grad=True)
    a_inside, b_recorded, a_leaves = threading.Event(), threading.Event(), threading.Event()

    def thread_a():
        with gl.no_grad():
            a_inside.set()
            assert b_recorded.wait(30)
            out = x * 2  # B is recording at this moment; A still is not
        a_leaves.set()
        return out.requires_grad

    def thread_b():
        assert a_inside.wait(30)
        out = (x * 3).sum()  # A is inside no_grad right now
        b_recorded.set()
        assert a_leaves.wait(30)
        out.backward()
        return out.requires_grad, x.grad.tolist()

    join_a, join_b = in_thread(thread_a), in_thread(thread_b)
    assert join_a() is False
    assert join_b() == (True, [3.0, 3.0, 3.0])


def test_grad_mode_switches_in_one_thread_are_invisible_to_another_at_every_step():
    barrier = threading.Barrier(2, timeout=30)
    seen = []

    def switcher():
        for enabled in (False, True, False, True):
            gl.set_grad_enabled(enabled)
            barrier.wait()  # the observer looks now
            barrier.wait()
        return gl.is_grad_enabled()

    def observer():
        x = gl.ones(2, requires_grad=True)
        for _ in range(4):
            barrier.wait()
            seen.append((gl.is_grad_enabled(), (x + 1).requires_grad))
            barrier.wait()

    join_s, join_o = in_thread(switcher), in_thread(observer)
    assert join_s() is True
    join_o()
    assert seen == [(True, True)] * 4


def test_backward_in_one_thread_while_another_records():
    """The engine turns recording off for its own thread only while it runs backward formulas."""
    w = gl.ones(4, requires_grad=True)
    v = gl.ones(4, requires_grad=True)
    in_backward, recorded = threading.Event(), threading.Event()

    class Wait(gl.autograd.Function):
        """Identity whose backward waits until the other thread has recorded an op."""

        derivative = "∂L/∂x = g"

        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            in_backward.set()
            assert recorded.wait(30)
            return grad * 2  # recording is off here: this product gets no grad_fn

    def backward_thread():
        loss = Wait.apply(w * 1.0).sum()
        loss.backward()
        return w.grad.tolist(), gl.is_grad_enabled()

    def recording_thread():
        assert in_backward.wait(30)
        out = v * 5
        recorded.set()
        return out.requires_grad, out.grad_fn is not None

    join_backward, join_record = in_thread(backward_thread), in_thread(recording_thread)
    assert join_record() == (True, True)
    assert join_backward() == ([2.0] * 4, True)


def test_no_grad_generator_holds_per_thread():
    @gl.no_grad()
    def modes():
        yield gl.is_grad_enabled()
        yield run_in_thread(gl.is_grad_enabled)  # a thread started inside the generator records

    assert list(modes()) == [False, True]
    assert gl.is_grad_enabled()


def test_a_thread_that_ends_inside_no_grad_does_not_turn_recording_off_elsewhere():
    run_in_thread(lambda: gl.set_grad_enabled(False))  # ends without switching back
    x = gl.ones(2, requires_grad=True)
    assert gl.is_grad_enabled() and (x * 2).requires_grad
    assert not grad_mode.threads_off  # its mode went with it


def initial_state(seed):
    gl.manual_seed(seed)
    return mlp().state_dict()


def mlp():
    nn = gl.nn
    return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 3))


def train(state, seed, barrier=None):
    """Eight SGD steps (with an evaluation under no_grad after each) from a given state; the final weights."""
    model = mlp()
    model.load_state_dict(state)
    rng = np.random.default_rng(seed)
    x = gl.tensor(rng.standard_normal((20, 6)), dtype=gl.float32)
    y = gl.tensor(rng.integers(0, 3, 20))
    optimizer = gl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for _ in range(8):
        if barrier is not None:
            barrier.wait()  # both threads are mid-training at the same moment
        optimizer.zero_grad()
        gl.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        with gl.no_grad():
            model(x).argmax(1)
    return [p.detach().numpy().copy() for p in model.parameters()]


def test_two_models_trained_in_two_threads_match_training_them_one_after_the_other():
    states = {seed: initial_state(seed) for seed in (1, 2)}
    one_after_the_other = [train(states[seed], seed) for seed in (1, 2)]
    barrier = threading.Barrier(2, timeout=60)
    joins = [in_thread(lambda seed=seed: train(states[seed], seed, barrier)) for seed in (1, 2)]
    at_once = [join() for join in joins]
    for want, have in zip(one_after_the_other, at_once):
        assert len(want) == len(have) == 4
        for a, b in zip(want, have):
            np.testing.assert_array_equal(a, b)  # bitwise


@pytest.mark.parametrize("switch", [gl.no_grad, gl.inference_mode, lambda: gl.set_grad_enabled(False)])
def test_every_switch_is_per_thread(switch):
    with switch():
        assert run_in_thread(gl.is_grad_enabled) is True
        assert not gl.is_grad_enabled()
    assert gl.is_grad_enabled()


def test_builtin_forwards_record_nothing_inside(monkeypatch):
    """apply skips switching recording off around gradlab's own forwards (they use backend primitives only).

    Checked here on a broad workload: no forward of a built-in op runs an operation that would be recorded.
    """
    Function = gl.autograd.Function
    nested = watch_trusted_forwards(monkeypatch)
    nn, F = gl.nn, gl.nn.functional
    gl.manual_seed(0)
    images = gl.randn(2, 1, 8, 8, requires_grad=True)
    cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.AvgPool2d(2),
                        nn.Flatten(), nn.Linear(16, 3))
    F.cross_entropy(cnn(images), gl.tensor([0, 2])).backward()
    block = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, activation="gelu", batch_first=True)
    tokens = nn.Embedding(10, 8)(gl.tensor([[1, 2, 3], [4, 5, 6]]))
    (nn.LayerNorm(8)(block(tokens)).sum() + F.mse_loss(tokens, tokens.detach() * 2)).backward()
    x = gl.randn(3, 4, requires_grad=True)
    y = gl.arange(12).reshape(3, 4)
    outs = [x / y.clamp(min=1), x // 2, x % 2, x ** 2, 2 ** x, x.sum(0), x.mean(1), x.var(1), x.std(), x.prod(),
            x.max(1).values, x.amax(0), x.logsumexp(1), x.norm(), x.cumsum(1), x.cumprod(0), x.softmax(1),
            x.log_softmax(0), x.sigmoid(), x.tanh(), x.exp(), x.abs(), x.clamp(-1, 1), gl.where(x > 0, x, y),
            x[0], x[:, 1:3], x[y > 4], x.masked_fill(y > 4, 0), x.tril(), x.triu(), x.t() @ x, x.reshape(4, 3),
            x.permute(1, 0), x.expand(2, 3, 4), x.repeat(2, 1), x.flip(0), x.roll(1, 0), gl.cat([x, x]),
            gl.stack([x, x]), x.split(2, 1)[0], x.unbind(0)[1], x.to(gl.float64), x.double().float(), x.clone(),
            gl.einsum("ij,ij->i", x, x), F.gelu(x), F.binary_cross_entropy(x.sigmoid(), y.float() / 12)]
    sum(o.sum() for o in outs).backward()
    assert not nested, nested

    class Breaks(Function):  # the watcher does see a forward that records inside
        """A forward built from a Tensor operation."""
        derivative = "∂L/∂x = 2g"
        _forward_is_primitive = True

        @staticmethod
        def forward(ctx, x):
            return x * 2

    Breaks.apply(x)
    assert nested == ["Mul inside Breaks.forward"]

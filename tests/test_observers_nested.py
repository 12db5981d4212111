"""Observers are told whether an op ran inside another op's forward (OpRecord.nested), per thread.

The expected records come from how each example is built (which ops its forward runs, and where),
never from a recording of it.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd import observers


def _double_then_exp(x):
    return (x * 2).exp()


def _one_layer_deeper(x):
    return _double_then_exp(x) + 1  # two helper frames between forward and its ops


class Built(gl.autograd.Function):
    """exp(2x) + 1 made of tensor ops, reached through helper functions: Mul, Exp, Add inside."""

    @staticmethod
    def forward(ctx, x):
        return _one_layer_deeper(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class BuiltWithGrad(Built):
    """The same, with recording turned back on inside forward (as checkpointing does): its ops get nodes."""

    @staticmethod
    def forward(ctx, x):
        with gl.enable_grad():
            return _one_layer_deeper(x)


def observed(fn):
    """(op name, nested) of every op ``fn()`` runs, as a subscribed observer sees them."""
    seen = []
    with gl.autograd.subscribe(lambda record: seen.append((record.function.__name__, record.nested))):
        fn()
    return seen


@pytest.mark.parametrize("function", [Built, BuiltWithGrad])
def test_the_ops_inside_a_custom_forward_are_nested_however_deep_the_helpers(function):
    x = gl.randn(3, requires_grad=True)
    seen = observed(lambda: function.apply(x) * 3)
    assert seen == [("Mul", True), ("Exp", True), ("Add", True), (function.__name__, False), ("Mul", False)]


@pytest.mark.parametrize("function", [Built, BuiltWithGrad])
def test_the_tracer_writes_down_a_custom_function_as_one_op(function):
    x = gl.randn(3, requires_grad=True, dtype=gl.float64)
    tape = gl.jit.trace(lambda t: function.apply(t) * 3, x)
    assert [op.function for op in tape.ops] == [function, gl.ops.arithmetic.Mul]
    np.testing.assert_allclose(tape.replay(x).numpy(), ((x * 2).exp() + 1).detach().numpy() * 3)


@pytest.mark.parametrize("function", [Built, BuiltWithGrad])
def test_the_recording_keeps_a_custom_function_as_one_op(function):
    x = gl.randn(3, requires_grad=True)
    with gl.lab.record() as rec:
        function.apply(x).sum()
    assert [op.record.function for op in rec.ops] == [function, gl.ops.reductions.Sum]


def test_an_op_in_another_thread_is_not_nested_in_this_thread_s_forward():
    inside, done, seen = threading.Event(), threading.Event(), []

    class Waits(gl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            inside.set()
            assert done.wait(10)  # the other thread runs its op while this forward is running
            return y

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    def other_thread():
        assert inside.wait(10)
        gl.ones(2) + 1
        done.set()

    worker = threading.Thread(target=other_thread)
    # all_threads: an observer sees its own thread only unless it asks for every thread (as anomaly mode does)
    with gl.autograd.subscribe(lambda record: seen.append((record.function.__name__, record.nested)),
                               all_threads=True):
        worker.start()
        Waits.apply(gl.ones(2, requires_grad=True))
        worker.join()
    assert sorted(seen) == [("Add", False), ("Mul", True), ("Waits", False)]


def test_an_op_in_a_backward_hook_is_not_nested_and_one_an_observer_runs_is():
    x = gl.randn(3, requires_grad=True)
    y = x * 2
    y.register_hook(lambda grad: grad + 1)  # runs during backward, inside no op's forward
    seen = []

    def observer(record):
        seen.append((record.function.__name__, record.nested))
        if record.function.__name__ == "Sum":
            record.outputs[0].detach() * 10  # the observer's own op: nested in the op it is told about

    with gl.autograd.subscribe(observer):
        y.sum().backward()
    assert seen[:2] == [("Sum", False), ("Mul", True)]
    assert ("Add", False) in seen[2:]  # the hook's op, run by backward


def test_a_forward_that_raises_leaves_the_next_op_at_the_top_level():
    class Fails(gl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x * 2
            raise ValueError("forward failed on purpose")

    x = gl.randn(3, requires_grad=True)
    seen = []
    with gl.autograd.subscribe(lambda record: seen.append((record.function.__name__, record.nested))):
        with pytest.raises(ValueError, match="on purpose"):
            Fails.apply(x)
        x + 1
    assert seen == [("Mul", True), ("Add", False)]


def test_an_escape_inside_a_custom_forward_is_the_op_s_own_but_one_outside_is_the_user_s():
    class ReadsItsInput(gl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * _one_layer_deeper(x).sum().item()  # .item() inside an op: replayed with it

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = gl.randn(3, requires_grad=True, dtype=gl.float64)
    assert gl.jit.trace(lambda t: ReadsItsInput.apply(t), x).escapes == ()
    with pytest.warns(gl.jit.TracerWarning, match="item"):
        tape = gl.jit.trace(lambda t: t * t.sum().item(), x)
    assert [what for what, _ in tape.escapes] == ["item()"]


def test_nesting_is_counted_only_while_an_observer_is_subscribed():
    inside = []

    class Asks(gl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            inside.append(observers.inside_op())
            return x * 1

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = gl.randn(2, requires_grad=True)
    Asks.apply(x)
    with gl.autograd.subscribe(lambda record: None):
        Asks.apply(x)
    assert inside == [False, True]
    assert not observers.inside_op()


class NoisyPrimitive(gl.autograd.Function):
    """A primitive forward (arrays only) that draws random numbers inside it, as a sampling op would."""

    _forward_is_primitive = True

    @staticmethod
    def forward(ctx, x):
        noise = gl.generator.generator_rng(None).standard_normal(x.shape)
        return x._wrap(x.array + noise.astype(x.array.dtype))

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_a_random_draw_inside_a_primitive_forward_is_the_ops_own_for_escape_watchers():
    # apply counts a primitive forward one level deeper only while escape watchers listen: they must hear
    # this draw as inside the op (a tracer would otherwise call it an escape of the user's code).
    heard = []
    x = gl.randn(3, requires_grad=True)
    with observers.subscribe(lambda record: None), \
            observers.watch_escapes(lambda what: heard.append((what, observers.inside_op()))):
        NoisyPrimitive.apply(x)
        gl.rand(2)  # a draw of the user's code, outside any op
    assert heard == [("random", True), ("random", False)]

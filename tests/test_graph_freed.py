"""An unused graph is freed by reference counting the moment its output goes, not later by the garbage collector."""

from __future__ import annotations

import gc
import weakref

import pytest

import gradlab as gl


@pytest.fixture
def no_gc():
    """Turn the cycle collector off: whatever is freed now is freed by reference counting alone."""
    was_enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def test_an_unused_exp_frees_its_node_and_its_saved_output_at_once(no_gc):
    w = gl.randn(1000, 1000, requires_grad=True)
    y = w.exp()  # Exp saves its own output for backward
    node, output = weakref.ref(y.grad_fn), weakref.ref(y)
    (saved_output,) = [s.tensor for s in y.grad_fn.inspect_saved() if s.output is not None]
    saved = weakref.ref(saved_output)
    del saved_output
    del y
    assert node() is None and output() is None and saved() is None


OPS = {
    "exp": lambda w: w.exp(),
    "tanh": lambda w: w.tanh(),
    "sigmoid": lambda w: w.sigmoid(),
    "sqrt": lambda w: w.abs().sqrt(),
    "relu": lambda w: w.relu(),
    "softmax": lambda w: w.softmax(1),
    "log_softmax": lambda w: w.log_softmax(1),
    "max along a dim": lambda w: w.max(1).values,
    "split": lambda w: w.split(2, 1)[0] * 3,
    "layer_norm": lambda w: gl.nn.functional.layer_norm(w, (6,)),
    "a small model": lambda w: gl.nn.functional.cross_entropy(
        gl.nn.Sequential(gl.nn.Linear(6, 5), gl.nn.GELU(), gl.nn.Linear(5, 3))(w), gl.tensor([0, 1, 2, 0])),
}


@pytest.mark.parametrize("op", OPS.values(), ids=OPS.keys())
def test_unused_graphs_are_freed_by_reference_counting(op, no_gc):
    w = gl.randn(4, 6, requires_grad=True)
    y = op(w)
    node, output = weakref.ref(y.grad_fn), weakref.ref(y)
    del y
    assert node() is None and output() is None


def test_hooks_and_retain_grad_do_not_keep_an_unused_graph_alive(no_gc):
    w = gl.randn(3, requires_grad=True)
    y = w.exp()
    y.retain_grad()
    y.register_hook(lambda g: g * 2)
    y.grad_fn.register_hook(lambda grads_in, grads_out: None)
    node = weakref.ref(y.grad_fn)
    del y
    assert node() is None


def test_a_saved_output_still_differentiates_twice():
    x = gl.tensor([0.3, -1.2], dtype=gl.float64, requires_grad=True)
    y = x.exp()
    (g,) = gl.autograd.grad(y.sum(), x, create_graph=True)  # g = exp(x), through the saved output
    (gg,) = gl.autograd.grad(g.sum(), x)
    assert gg.tolist() == pytest.approx(x.detach().exp().tolist())


def test_a_saved_output_changed_in_place_is_still_reported():
    x = gl.tensor([0.5, 1.0], requires_grad=True)
    y = x.exp()
    with gl.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


class TwoOutputs(gl.autograd.Function):
    """(exp(x), 2x), saving the first output for backward."""

    derivative = "∂L/∂x = g₀ · exp(x) + 2 g₁"

    @staticmethod
    def forward(ctx, x):
        e = x._wrap(x.device.backend.exp(x.array))
        ctx.save_for_backward(e)
        return e, x._wrap(x.device.backend.mul(x.array, 2.0))

    @staticmethod
    def backward(ctx, g_exp, g_double):
        (e,) = ctx.saved_tensors
        return g_exp * e + g_double * 2


def test_a_function_with_several_outputs_that_saves_one_is_freed_too(no_gc):
    x = gl.tensor([0.1, 0.2], dtype=gl.float64, requires_grad=True)
    e, d = TwoOutputs.apply(x)
    node = weakref.ref(e.grad_fn)
    del e, d
    assert node() is None
    assert gl.autograd.gradcheck(TwoOutputs.apply, (x,))
    assert gl.autograd.gradgradcheck(TwoOutputs.apply, (x,))

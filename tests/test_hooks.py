"""Hooks: Tensor.register_hook (leaf and non-leaf), retain_grad, Node.register_hook/register_prehook."""

from __future__ import annotations

import pytest

import gradlab as gl
from helpers import assert_close, leaf, randn, requires_torch, torch


def test_leaf_hook_modifies_grad_and_can_be_removed():
    x = leaf([1.0, 2.0])
    seen = []

    def double(g):
        seen.append(g.numpy().copy())
        return g * 2

    handle = x.register_hook(double)
    (x * 3).sum().backward()
    assert_close(seen[0], [3.0, 3.0])
    assert_close(x.grad, [6.0, 6.0])
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    assert_close(x.grad, [3.0, 3.0])
    assert len(seen) == 1


def test_non_leaf_hook_changes_what_flows_on():
    x = leaf([1.0, 2.0])
    y = x * 2
    handle = y.register_hook(lambda g: g * 10)
    (y * y).sum().backward()
    assert_close(x.grad, [80.0, 160.0])  # d/dy = 2y = 4x, times 10 by the hook, times 2 on the way to x
    assert y.grad is None  # non-leaf grads are not kept unless retain_grad()
    handle.remove()
    x.grad = None
    y = x * 2
    (y * y).sum().backward()
    assert_close(x.grad, [8.0, 16.0])


def test_hook_returning_none_observes_only():
    x = leaf([1.0])
    calls = []
    x.register_hook(lambda g: calls.append(g.item()))
    (x * 5).sum().backward()
    assert calls == [5.0]
    assert_close(x.grad, [5.0])


def test_leaf_used_twice_hook_called_once_with_summed_grad():
    x = leaf([1.0, 3.0])
    calls = []
    x.register_hook(lambda g: calls.append(g.numpy().copy()))
    (x * x + x * 4).sum().backward()
    assert len(calls) == 1
    assert_close(calls[0], [2.0 + 4.0, 6.0 + 4.0])


def test_non_leaf_used_twice_hook_called_once_with_summed_grad():
    x = leaf([1.0, 3.0])
    y = x * 2
    calls = []
    y.register_hook(lambda g: calls.append(g.numpy().copy()))
    (y * 3 + y * y).sum().backward()
    assert len(calls) == 1
    assert_close(calls[0], [3.0 + 4.0, 3.0 + 12.0])


def test_several_hooks_run_in_registration_order():
    x = leaf([1.0])
    x.register_hook(lambda g: g + 1)
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    assert_close(x.grad, [30.0])


def test_hook_on_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        gl.tensor([1.0]).register_hook(lambda g: g)


def test_hooks_apply_in_autograd_grad():
    x = leaf([1.0, 1.0])
    x.register_hook(lambda g: g * 2)
    (g,) = gl.autograd.grad((x * 3).sum(), x)
    assert_close(g, [6.0, 6.0])
    assert x.grad is None
    h = x * 3
    h.register_hook(lambda g: g + 1)
    (gh,) = gl.autograd.grad((h * 2).sum(), h)
    assert_close(gh, [3.0, 3.0])


# --- retain_grad -----------------------------------------------------------------------------------


def test_retain_grad_keeps_non_leaf_grad():
    x = leaf([1.0, 2.0])
    y = x * 3
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    (y * y).sum().backward()
    assert_close(y.grad, [6.0, 12.0])
    assert_close(x.grad, [18.0, 36.0])


def test_retain_grad_accumulates_and_sees_hooked_value():
    x = leaf([1.0])
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g * 10)  # registered after retain_grad, still runs before it
    out = (y * 2).sum()
    out.backward(retain_graph=True)
    assert_close(y.grad, [20.0])
    out.backward()
    assert_close(y.grad, [40.0])


def test_retain_grad_on_leaf_is_a_no_op_and_needs_requires_grad():
    x = leaf([1.0])
    x.retain_grad()
    (x * 2).sum().backward()
    assert_close(x.grad, [2.0])
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        gl.tensor([1.0]).retain_grad()


def test_retain_grad_also_filled_by_autograd_grad():
    x = leaf([1.0])
    y = x * 3
    y.retain_grad()
    gl.autograd.grad((y * 2).sum(), x)
    assert_close(y.grad, [2.0])


def test_retain_grad_does_not_keep_tensor_alive():
    import gc
    import weakref

    x = leaf([1.0])
    y = x * 3
    y.retain_grad()
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None


@requires_torch
def test_hooks_and_retain_grad_match_torch():
    x_np = randn(3, seed=1)
    results = []
    for lib, make in ((gl, lambda a: leaf(a)), (torch, lambda a: torch.tensor(a, requires_grad=True))):
        x = make(x_np)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: g * 3)
        x.register_hook(lambda g: g + 1)
        z = (y * y + y).sum()
        z.backward()
        results.append((x.grad.detach().numpy().copy(), y.grad.detach().numpy().copy()))
    assert_close(results[0][0], results[1][0])
    assert_close(results[0][1], results[1][1])


# --- Node hooks ------------------------------------------------------------------------------------


def test_node_post_hook_sees_and_replaces_gradients():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    y = x * w
    seen = []

    def post(grad_inputs, grad_outputs):
        seen.append((len(grad_inputs), len(grad_outputs)))
        assert_close(grad_outputs[0], [1.0, 1.0])
        assert_close(grad_inputs[0], [3.0, 4.0])
        return (grad_inputs[0] * 0, grad_inputs[1])

    handle = y.grad_fn.register_hook(post)
    y.sum().backward(retain_graph=True)
    assert seen == [(2, 1)]
    assert_close(x.grad, [0.0, 0.0])
    assert_close(w.grad, [1.0, 2.0])
    handle.remove()
    y.sum().backward()
    assert_close(x.grad, [3.0, 4.0])
    assert len(seen) == 1


def test_node_prehook_replaces_incoming_gradients():
    x = leaf([1.0, 2.0])
    y = x * 5
    seen = []

    def pre(grad_outputs):
        seen.append(grad_outputs[0].numpy().copy())
        return (grad_outputs[0] * 2,)

    handle = y.grad_fn.register_prehook(pre)
    y.sum().backward(retain_graph=True)
    assert_close(seen[0], [1.0, 1.0])
    assert_close(x.grad, [10.0, 10.0])
    handle.remove()
    x.grad = None
    y.sum().backward()
    assert_close(x.grad, [5.0, 5.0])


def test_hooks_on_accumulate_grad_node():
    x = leaf([1.0])
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    assert acc.name() == "AccumulateGrad" and acc.variable is x
    seen = []
    acc.register_prehook(lambda go: (go[0] * 3,))
    acc.register_hook(lambda gi, go: seen.append(go[0].item()))
    y.sum().backward()
    assert_close(x.grad, [6.0])
    assert seen == [6.0]


def test_hook_on_non_leaf_output_of_multi_output_node_only_sees_its_output():
    x = leaf([1.0, 2.0, 3.0, 4.0])
    a, b = x.split(2)
    calls = []
    b.register_hook(lambda g: calls.append(g.numpy().copy()))
    (a * 2 + b * 3).sum().backward()
    assert len(calls) == 1
    assert_close(calls[0], [3.0, 3.0])

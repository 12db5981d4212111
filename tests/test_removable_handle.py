"""One handle type for every registration: tensors, graph nodes, modules and observers all return RemovableHandle."""

from __future__ import annotations

import gradlab as gl
from gradlab.autograd import RemovableHandle
from gradlab.utils.hooks import RemovableHandle as UtilsRemovableHandle


def test_removable_handle_is_reachable_under_pytorchs_names():
    assert UtilsRemovableHandle is RemovableHandle is gl.nn.modules.RemovableHandle


def test_every_register_call_returns_a_removable_handle_that_removes_its_hook():
    x = gl.ones(3, requires_grad=True)
    seen = []
    y = x * 2
    handles = [
        x.register_hook(lambda g: seen.append("leaf")),
        y.register_hook(lambda g: seen.append("tensor")),
        y.grad_fn.register_hook(lambda grads_in, grads_out: seen.append("node")),
        y.grad_fn.register_prehook(lambda grads_out: seen.append("prehook")),
    ]
    model = gl.nn.Linear(3, 1)
    handles.append(model.register_forward_hook(lambda m, args, out: seen.append("module")))
    handles.append(gl.autograd.subscribe(lambda record: seen.append("observer")))
    assert all(type(h) is RemovableHandle for h in handles)
    assert len({h.id for h in handles}) == len(handles)
    for h in handles:
        h.remove()
    h.remove()  # removing twice is harmless, as in PyTorch
    model(x)
    y.sum().backward()
    assert seen == []


def test_a_handle_as_a_context_manager_removes_its_hook_at_the_end_of_the_block():
    x = gl.ones(2, requires_grad=True)
    seen = []
    with x.register_hook(lambda g: seen.append(g.tolist())):
        (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]


def test_removing_one_of_two_registrations_of_the_same_function_keeps_the_other():
    x = gl.ones(2, requires_grad=True)
    calls = []

    def hook(g):
        calls.append(1)

    first = x.register_hook(hook)
    x.register_hook(hook)
    first.remove()
    (x * 1).sum().backward()
    assert calls == [1]

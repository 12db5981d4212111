"""Checkpoints of a backward run: resuming one gives the run's own steps and gradients, bit for bit,
and lets a stepper step back without replaying the whole backward."""

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd import backward_steps
from gradlab.lab.capture import reachable

pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")


def shared_graph():
    """h is used four times: its gradients add up in a buffer while other nodes run between them."""
    gl.manual_seed(0)
    x = gl.randn(3, requires_grad=True)
    w = gl.randn(3, requires_grad=True)
    h = x * w
    return (x, w), (h.exp() + h * h + (h * x).sin() + h.tanh()).sum()


def grads(leaves):
    return [None if t.grad is None else t.grad.numpy().copy() for t in leaves]


def same(a, b):
    return all((p is None and q is None) or (p is not None and q is not None and p.tobytes() == q.tobytes())
               for p, q in zip(a, b))


def test_a_resumed_checkpoint_gives_the_runs_own_steps_and_gradients_at_every_depth():
    leaves, loss = shared_graph()
    run = backward_steps(loss, retain_graph=True)
    checkpoints, steps = [run.checkpoint()], []
    for step in run:
        steps.append([None if g is None else g.numpy().copy() for g in step.grads_out])
        checkpoints.append(run.checkpoint() if len(steps) < 20 and run.steps_taken < len(reachable(loss.grad_fn))
                           else None)
    final = grads(leaves)
    for checkpoint in filter(None, checkpoints):
        for t in leaves:
            t.grad = None
        fresh = backward_steps(loss, retain_graph=True)  # the .grads as they were at the checkpoint
        for _ in range(checkpoint.index):
            next(fresh)
        fresh.close()
        resumed = checkpoint.resume()
        for index, step in enumerate(resumed, start=checkpoint.index):
            assert step.index == index
            assert same([None if g is None else g.numpy() for g in step.grads_out], steps[index]), index
        assert same(grads(leaves), final), checkpoint.index


def test_a_checkpoint_can_be_resumed_again_and_again():
    leaves, loss = shared_graph()
    run = backward_steps(loss, retain_graph=True)
    for _ in range(3):
        next(run)
    checkpoint = run.checkpoint()
    for _ in run:
        pass
    results = []
    for _ in range(3):
        for t in leaves:
            t.grad = None
        for _ in checkpoint.resume():
            pass
        results.append(grads(leaves))
    assert same(results[0], results[1]) and same(results[1], results[2])


def test_a_finished_run_has_no_checkpoint():
    _, loss = shared_graph()
    run = backward_steps(loss, retain_graph=True)
    for _ in run:
        pass
    with pytest.raises(RuntimeError, match="the run has finished"):
        run.checkpoint()


def chain_stepper(ops=40, spacing=4):
    gl.manual_seed(0)
    x = gl.randn(4, requires_grad=True)
    w = gl.randn(4, requires_grad=True)
    with gl.lab.record() as rec:
        y = x
        for i in range(ops // 2):
            y = y * w + 0.5 if i % 3 else (y * y).tanh()
        loss = y.sum()
    stepper = gl.lab.BackpropStepper(rec)
    stepper.stepping.spacing = spacing
    return stepper, (x, w), loss


def test_step_back_restores_every_gradient_bit_for_bit_at_every_depth():
    stepper, leaves, _ = chain_stepper()
    at_depth, panels = [grads(leaves)], [stepper.panel]
    while stepper.stepping.step() is not None:
        at_depth.append(grads(leaves))
        panels.append(stepper._panel(stepper.stepping.steps[-1]))
    assert stepper.stepping._checkpoints  # the walk kept checkpoints to come back to
    for depth in range(len(at_depth) - 1, -1, -1):
        stepper.stepping.go_to(depth)
        assert same(grads(leaves), at_depth[depth]), depth
        if depth:
            assert stepper._panel(stepper.stepping.steps[-1]) == panels[depth], depth
    for depth in (17, 3, 29, 29, 0, 12):  # in any order
        stepper.stepping.go_to(depth)
        assert same(grads(leaves), at_depth[depth]), depth
    stepper.run_to_end()
    assert same(grads(leaves), at_depth[-1])


def test_a_step_back_runs_at_most_spacing_nodes_of_the_engine():
    stepper, _, loss = chain_stepper(spacing=4)
    runs = []
    for node in reachable(loss.grad_fn):
        node.register_prehook(lambda grads, node=node: runs.append(node))
    for _ in range(30):
        stepper.step()
    del runs[:]
    stepper.step_back()
    assert 1 <= len(runs) <= 4  # from the checkpoint after step 28 (or 24): not all 29 again
    assert stepper.step_index == 29

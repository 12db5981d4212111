"""The stepper tells the truth when others touch its gradients, when a step fails, and when views share a model.

Issue 17: a backward of your own run while a stepper is part-way, a failed step, two steppers on one
loss, and a stepper's or a profile's replays counted by GradientFlow all showed something false with
no word. Each test here failed before the stepper kept a ledger of whose gradients are in .grad.
"""

import copy
import gc

import numpy as np
import pytest
from lab_models import batch, mlp

import gradlab as gl
import gradlab.nn.functional as F
from gradlab import Scalar
from gradlab.lab.flow import Flow
from gradlab.lab.stepping import Stepping


def loss_of(model):
    x, y = batch()
    return F.cross_entropy(model(x), y)


def model_and_twin():
    """An mlp, and a deep copy of it whose .grad holds one loss.backward()."""
    model = mlp()
    twin = copy.deepcopy(model)
    loss_of(twin).backward()
    return model, twin


def grads(model):
    return [None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()]


def assert_grads_equal(model, expected):
    for got, want in zip(grads(model), expected):
        assert (got is None) == (want is None)
        if want is not None:
            assert np.array_equal(got, want)  # bit for bit


def run_to_end(stepping):
    while stepping.step() is not None:
        pass


def stepper_widget(loss):
    pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")
    return gl.lab.BackpropStepper(loss)


# --- your own loss.backward() while a stepper is part-way -------------------------------------------

def test_reset_after_your_own_backward_gives_back_exactly_your_backwards_gradients():
    model, twin = model_and_twin()
    loss = loss_of(model)
    stepping = Stepping(loss)
    for _ in range(5):  # part-way: some leaves already hold the stepper's gradients
        stepping.step()
    loss.backward(retain_graph=True)
    stepping.reset()  # takes the stepper's steps out, keeps yours
    assert_grads_equal(model, grads(twin))


def test_reset_after_your_own_backward_freed_the_graph_keeps_your_gradients():
    model, twin = model_and_twin()
    loss = loss_of(model)
    stepping = Stepping(loss)
    for _ in range(3):
        stepping.step()
    loss.backward()
    stepping.reset()
    assert_grads_equal(model, grads(twin))


def test_your_own_backward_while_stepping_is_named_in_the_warnings():
    model, _ = model_and_twin()
    loss = loss_of(model)
    stepping = Stepping(loss)
    assert stepping.warnings() == []
    stepping.step()
    loss.backward(retain_graph=True)
    (warning,) = stepping.warnings()
    assert "a backward of your own" in warning and "leaf of shape" in warning


def test_the_panel_stops_claiming_loss_backward_after_your_own_backward():
    model, twin = model_and_twin()
    loss = loss_of(model)
    stepper = stepper_widget(loss)
    for _ in range(4):
        stepper.step()
    loss.backward(retain_graph=True)
    stepper.run_to_end()
    for got, once in zip(grads(model), grads(twin)):
        assert np.allclose(got, 2 * once)  # your backward and the stepper's: twice what one backward gives
    panel = stepper.panel
    assert "holds what loss.backward() gives" not in panel["text"]
    assert "a backward of your own" in panel["warning"] and "not what one loss.backward() gives" in panel["warning"]
    assert "a backward of your own" in stepper.notice and "a backward of your own" in stepper.status
    stepper.reset()
    assert_grads_equal(model, grads(twin))
    assert "the rest stays" in stepper.notice and stepper.panel["warning"] == ""


def test_after_a_reset_the_stepper_measures_from_your_gradients():
    model, twin = model_and_twin()
    loss = loss_of(model)
    stepper = stepper_widget(loss)
    stepper.step()
    loss.backward(retain_graph=True)
    stepper.reset()
    stepper.run_to_end()  # one more backward on top of yours, and nobody else touched .grad since the reset
    assert stepper.panel["text"] == "every leaf's .grad now holds what loss.backward() gives"


def test_a_grad_zeroed_while_stepping_is_reported_and_left_as_you_left_it():
    model, _ = model_and_twin()
    stepping = Stepping(loss_of(model))
    run_to_end(stepping)
    model.zero_grad()  # .grad = None on every parameter: a change outside backward
    stepping.step_back()
    assert any("changed outside backward" in w for w in stepping.warnings())
    stepping.reset()
    assert all(p.grad is None for p in model.parameters())  # what you did stays; the stepper's steps leave


def test_a_grad_edited_in_place_while_stepping_is_reported():
    model, _ = model_and_twin()
    stepping = Stepping(loss_of(model))
    run_to_end(stepping)
    next(iter(model.parameters())).grad.mul_(0.5)  # as clip_grad_norm_ does
    stepping.step_back()
    assert any("changed outside backward" in w for w in stepping.warnings())


def test_your_own_scalar_backward_while_stepping_is_reported():
    a, b = Scalar(2.0, "a"), Scalar(-1.0, "b")
    out = a * b + a
    stepping = Stepping(out)
    stepping.step()
    out.backward()
    stepping.step()
    assert any("changed outside backward" in w for w in stepping.warnings())


def test_the_widget_says_so_when_the_cell_that_ran_your_backward_ends(notebook_shell):
    Shell = notebook_shell
    model, _ = model_and_twin()
    loss = loss_of(model)
    stepper = stepper_widget(loss)
    stepper.step()
    [cell_ended] = Shell.events.callbacks["post_execute"]
    loss.backward(retain_graph=True)  # in a later cell: the stepper is not asked anything
    assert stepper.notice == ""
    cell_ended()  # what IPython does after each cell
    assert "a backward of your own" in stepper.notice and "a backward of your own" in stepper.panel["warning"]
    stepper.close()
    cell_ended()
    assert Shell.events.callbacks["post_execute"] == []  # a closed stepper stops listening


def test_a_stepper_left_open_keeps_nothing_of_your_training_loop():
    model = mlp()
    stepping = Stepping(loss_of(model))
    stepping.step()
    optimizer = gl.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        optimizer.zero_grad()
        loss_of(model).backward()
        optimizer.step()
    ledgers = stepping.source.ledgers
    assert all(not ledger.awake and ledger.entries == [] and ledger.start is None for ledger in ledgers)
    assert any("changed outside backward" in w for w in stepping.warnings())


# --- a step that fails ---------------------------------------------------------------------------------

class Fails(gl.autograd.Function):
    """2x, whose backward raises."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("this backward is broken")


class InterruptedOnce(gl.autograd.Function):
    """2x, whose backward is interrupted (Ctrl-C) the first time it runs."""

    interrupted = False

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        if not InterruptedOnce.interrupted:
            InterruptedOnce.interrupted = True
            raise KeyboardInterrupt
        return grad * 2


def chain(function):
    """w -> tanh -> function -> sum: the function's step is the 2nd, after the Sum."""
    gl.manual_seed(0)
    w = gl.randn(3, requires_grad=True)
    with gl.lab.record() as rec:
        function.apply(w.tanh()).sum()
    return w, rec


def test_a_backward_that_raises_is_reported_with_its_step_and_node():
    w, rec = chain(Fails)
    stepping = Stepping(rec)
    stepping.step()
    with pytest.raises(RuntimeError, match=r"step 2 of 4 failed, in the backward of Fails: ValueError: this backward "
                                           r"is broken\. loss\.backward\(\) would raise it too") as caught:
        stepping.step()
    assert isinstance(caught.value.__cause__, ValueError)
    failure = stepping.failure
    assert failure["index"] == 1 and failure["kind"] == "raised"
    assert stepping.graph.nodes[failure["node"]].op == "FailsBackward"
    assert len(stepping.steps) == 1 and not stepping.finished and w.grad is None


def test_the_step_after_a_failure_does_not_say_backward_has_finished():
    _, rec = chain(Fails)
    stepping = Stepping(rec)
    stepping.step()
    with pytest.raises(RuntimeError, match="step 2 of 4 failed"):
        stepping.step()
    with pytest.raises(RuntimeError, match="step 2 of 4 failed"):  # tried again: it fails again, and says so
        stepping.step()
    assert not stepping.finished and len(stepping.steps) == 1


def test_after_a_failure_step_back_and_reset_still_work():
    w, rec = chain(Fails)
    stepping = Stepping(rec)
    stepping.step()
    with pytest.raises(RuntimeError):
        stepping.step()
    assert stepping.step_back() and stepping.steps == [] and stepping.failure is None
    stepping.step()
    stepping.reset()
    assert stepping.steps == [] and w.grad is None


def test_an_interrupted_step_keeps_nothing_and_runs_again_on_the_next_step():
    InterruptedOnce.interrupted = False
    w, rec = chain(InterruptedOnce)
    twin = w.detach().clone().requires_grad_(True)
    (twin.tanh() * 2).sum().backward()
    stepping = Stepping(rec)
    stepping.step()
    with pytest.raises(KeyboardInterrupt):  # raised as it is, never wrapped
        stepping.step()
    assert stepping.failure["kind"] == "interrupted" and "step() runs it again" in stepping.failure["advice"]
    assert len(stepping.steps) == 1 and w.grad is None
    run_to_end(stepping)  # the interrupted step runs again, and backward completes
    assert stepping.finished and np.array_equal(w.grad.numpy(), twin.grad.numpy())


def test_an_interrupt_after_a_leaf_accumulated_takes_that_gradient_out_again():
    gl.manual_seed(0)
    w = gl.randn(3, requires_grad=True)
    loss = (w * w).sum()
    stepping = Stepping(loss)
    accumulator = loss.grad_fn.next_functions[0][0].next_functions[0][0]
    assert accumulator.name() == "AccumulateGrad"
    fired = []

    def interrupt(grads_in, grads_out):  # runs after w.grad was written
        if not fired:
            fired.append(True)
            raise KeyboardInterrupt
    handle = accumulator.register_hook(interrupt)
    stepping.step()
    stepping.step()
    with pytest.raises(KeyboardInterrupt):
        stepping.step()
    assert w.grad is None and len(stepping.steps) == 2  # the step's gradient left w.grad again
    handle.remove()
    run_to_end(stepping)
    assert np.array_equal(w.grad.numpy(), (2 * w).detach().numpy())


def test_a_graph_freed_by_your_backward_while_stepping_says_so_and_what_to_do():
    model, twin = model_and_twin()
    loss = loss_of(model)
    stepping = Stepping(loss)
    stepping.step()
    stepping.step()
    loss.backward()  # without retain_graph: what forward saved is gone
    with pytest.raises(RuntimeError, match=r"Your own loss.backward\(\), run while stepping, freed what forward saved "
                                           r"for this node\. Run the forward again and make a new stepper"):
        run_to_end(stepping)
    assert stepping.failure["kind"] == "freed" and not stepping.finished
    stepping.reset()
    assert_grads_equal(model, grads(twin))


def test_a_saved_tensor_changed_in_place_is_a_version_error_at_its_node():
    x = gl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1.0
    loss = (a * a).sum()
    a.add_(1.0)  # what the second Mul saved has changed since the forward
    stepping = Stepping(loss)
    stepping.step()  # the Sum saved nothing
    with pytest.raises(RuntimeError, match="step 2 of 4 failed, in the backward of Mul.*changed in place after the "
                                           "forward") as caught:
        stepping.step()
    assert "modified by an inplace operation" in str(caught.value)
    assert stepping.failure["kind"] == "version" and x.grad is None


def test_the_panel_shows_a_failed_step():
    _, rec = chain(Fails)
    stepper = stepper_widget(rec)
    stepper.step()
    with pytest.raises(RuntimeError):
        stepper.step()
    assert stepper.panel["title"] == "step 2 of 4 failed: Fails"
    assert stepper.panel["warning"].startswith("ValueError: this backward is broken. loss.backward() would raise it")
    assert "step 2 of 4 failed" in stepper.notice and stepper.status.startswith("step 2 of 4 failed")


# --- two steppers on one loss ----------------------------------------------------------------------------

def test_one_steppers_reset_takes_out_only_its_own_steps():
    model, twin = model_and_twin()
    loss = loss_of(model)
    first, second = Stepping(loss), Stepping(loss)
    run_to_end(first)
    run_to_end(second)
    first.reset()
    assert_grads_equal(model, grads(twin))  # the second stepper's backward stays, bit for bit
    second.reset()
    assert all(p.grad is None for p in model.parameters())


def test_two_steppers_reset_in_either_order():
    model = mlp()
    loss = loss_of(model)
    first, second = Stepping(loss), Stepping(loss)
    for _ in range(4):
        first.step()
    run_to_end(second)
    second.reset()  # the second one's steps go; the first one's four stay, bit for bit
    alone = mlp()
    solo = Stepping(loss_of(alone))
    for _ in range(4):
        solo.step()
    assert_grads_equal(model, grads(alone))
    first.reset()
    assert all(p.grad is None for p in model.parameters())


def test_each_stepper_says_what_the_other_did():
    model, _ = model_and_twin()
    loss = loss_of(model)
    first, second = Stepping(loss), Stepping(loss)
    run_to_end(first)
    run_to_end(second)
    for stepping in (first, second):  # each one's gradients are twice what one backward gives
        assert any("another stepper on this graph added its steps" in w for w in stepping.warnings())
    first.reset()
    assert any("another stepper's reset took its steps out" in w for w in second.warnings())
    assert Stepping(loss).warnings() == []  # one made now starts from .grad as it is


def test_step_back_after_the_other_steppers_reset_restores_its_own_steps_exactly():
    model, _ = model_and_twin()
    loss = loss_of(model)
    first, second = Stepping(loss), Stepping(loss)
    run_to_end(first)
    for _ in range(6):
        second.step()
    first.reset()
    second.step_back()
    alone = mlp()
    solo = Stepping(loss_of(alone))
    for _ in range(5):
        solo.step()
    assert_grads_equal(model, grads(alone))


# --- replays are not training steps for the views that watch ------------------------------------------

def flows_out_grad_norm(drive):
    """‖∂L/∂output‖ per layer after one training step driven by ``drive(model, loss)``, and a twin's after
    a plain loss.backward()."""
    model = mlp()
    twin = copy.deepcopy(model)  # copied before any flow hooks the model
    flow, twin_flow = Flow(model), Flow(twin)
    loss_of(twin).backward()
    twin_flow.update()
    drive(model, loss_of(model))
    flow.update()
    return flow.latest("out_grad_norm"), twin_flow.latest("out_grad_norm"), flow.latest(), twin_flow.latest()


def test_a_profile_of_the_same_model_does_not_count_for_gradient_flow():
    def drive(model, loss):
        gl.lab.profile(lambda: loss_of(model))
        loss.backward()
    out, twin_out, grad_norms, twin_grad_norms = flows_out_grad_norm(drive)
    assert out == pytest.approx(twin_out, rel=1e-12) and grad_norms == pytest.approx(twin_grad_norms, rel=1e-12)


def test_a_profile_that_keeps_its_gradients_is_the_training_step():
    out, twin_out, _, _ = flows_out_grad_norm(lambda model, loss: gl.lab.profile(lambda: loss_of(model),
                                                                                 keep_grads=True))
    assert out == pytest.approx(twin_out, rel=1e-12)


def test_a_steppers_replays_do_not_count_for_gradient_flow():
    def drive(model, loss):
        stepping = Stepping(loss)
        for _ in range(6):
            stepping.step()
        stepping.step_back()
        stepping.step_back()  # each step back replays the steps before it
        run_to_end(stepping)
        stepping.go_to(3)
        run_to_end(stepping)
    out, twin_out, grad_norms, twin_grad_norms = flows_out_grad_norm(drive)
    assert out == pytest.approx(twin_out, rel=1e-12) and grad_norms == pytest.approx(twin_grad_norms, rel=1e-12)


# --- a stepper owns what it installs --------------------------------------------------------------------

def accumulator_hooks(loss):
    """How many node hooks the graph of ``loss`` holds (the ledgers' are on the leaves' accumulators)."""
    found, stack, seen = 0, [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        found += len(node._pre_hooks or ()) + len(node._post_hooks or ())
        stack.extend(child for child, _ in node.next_functions)
    return found


def test_a_closed_stepper_leaves_no_hook_on_the_graph():
    loss = loss_of(mlp())
    stepping = Stepping(loss)
    assert accumulator_hooks(loss) > 0  # the ledgers' hooks, while it steps
    run_to_end(stepping)
    stepping.close()
    assert accumulator_hooks(loss) == 0
    with pytest.raises(Exception, match="this stepper was closed"):
        stepping.step()


def test_a_collected_stepper_leaves_no_hook_on_the_graph():
    loss = loss_of(mlp())
    stepping = Stepping(loss)
    stepping.step()
    del stepping
    gc.collect()
    assert accumulator_hooks(loss) == 0


def test_the_hooks_stay_while_another_stepper_still_uses_them():
    model = mlp()
    loss = loss_of(model)
    first, second = Stepping(loss), Stepping(loss)
    hooks = accumulator_hooks(loss)
    first.close()
    assert accumulator_hooks(loss) == hooks  # one ledger per leaf, shared
    run_to_end(second)
    second.reset()
    assert all(p.grad is None for p in model.parameters())
    second.close()
    assert accumulator_hooks(loss) == 0


def test_a_closed_stepper_widget_leaves_no_hook_on_the_graph():
    loss = loss_of(mlp())
    stepper = stepper_widget(loss)
    stepper.run_to_end()
    stepper.close()
    assert accumulator_hooks(loss) == 0


def test_the_panel_says_where_a_broadcast_inputs_gradient_was_summed():
    # b (2,) is added to a (4, 2) batch: Add passes back the (4, 2) gradient to the matmul and its
    # column sums to b; the panel says so, and says nothing for the input of the same shape
    x = gl.randn(4, 3)
    W = gl.randn(3, 2, requires_grad=True)
    b = gl.randn(2, requires_grad=True)
    with gl.lab.record() as rec:
        loss = ((x @ W + b) ** 2).mean()
    stepper = stepper_widget(rec)
    while not stepper.panel.get("title", "").endswith(": Add"):
        assert stepper.step() is not None, "backward ended before Add ran"
    rows = {tuple(row["grad"]["shape"]): row for row in stepper.panel["sent"]}
    assert rows[(2,)]["summed"] == ("summed over dim 0: leaf was broadcast from (2,) to (4, 2) in the forward, so "
                                    "each of its elements receives the sum of the gradients it fed")
    assert rows[(4, 2)]["summed"] == ""

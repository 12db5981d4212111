"""gradlab.lab.stepping: backward one node at a time is the engine's backward, and steps back exactly."""

import copy

import numpy as np
import pytest
from lab_models import batch, mlp, recorded_mlp_and_twin

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab import Scalar
from gradlab.lab import CaptureError
from gradlab.lab.stepping import Stepping


class FanOut(nn.Module):
    """h feeds two consumers (h + sin h), and one weight is shared by two layers."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 3)
        self.b = nn.Linear(3, 3)
        self.b.weight = self.a.weight

    def forward(self, x):
        h = self.a(x)
        return self.b(h + h.sin())


def run_to_end(stepping):
    while stepping.step() is not None:
        pass


def grads_of(model):
    return {name: None if p.grad is None else p.grad.numpy().copy() for name, p in model.named_parameters()}


def assert_same_grads(model, expected):
    for name, p in model.named_parameters():
        if expected[name] is None:
            assert p.grad is None, name
        else:
            assert np.array_equal(p.grad.numpy(), expected[name]), name  # bit for bit


# --- stepping to the end is backward() ------------------------------------------------------------

def mlp_loss(model, x, y):
    return F.cross_entropy(model(x), y)


def fan_out_loss(model, x, y):
    return model(x).pow(2).sum()


@pytest.mark.parametrize("make, loss_of", [(mlp, mlp_loss), (FanOut, fan_out_loss)], ids=["mlp", "fan-out"])
def test_stepping_to_the_end_gives_backwards_gradients_bit_for_bit(make, loss_of):
    model = make()
    x, y = batch()
    twin = copy.deepcopy(model)
    loss_of(twin, x, y).backward()
    run_to_end(Stepping(loss_of(model, x, y)))
    assert_same_grads(model, grads_of(twin))


def test_a_shared_weight_gets_both_layers_gradients():
    model = FanOut()
    assert model.a.weight is model.b.weight and len(list(model.parameters())) == 3
    x, y = batch()
    twin = copy.deepcopy(model)
    assert twin.a.weight is twin.b.weight  # the copy shares it too
    fan_out_loss(twin, x, y).backward()
    run_to_end(Stepping(fan_out_loss(model, x, y)))
    assert np.array_equal(model.a.weight.grad.numpy(), twin.a.weight.grad.numpy())


def test_stepping_a_scalar_that_uses_a_variable_twice_gives_its_derivative():
    a, b = Scalar(3.0, "a"), Scalar(-2.0, "b")
    out = a * a + a * b  # d/da = 2a + b = 4, d/db = a = 3
    run_to_end(Stepping(out))
    assert (a.grad, b.grad) == (4.0, 3.0)


def test_stepping_a_scalar_matches_its_backward():
    def expression():
        x, w = Scalar(0.7, "x"), Scalar(-1.3, "w")
        return (x * w + x).tanh() * x, (x, w)

    out, (x, w) = expression()
    out.backward()
    out2, (x2, w2) = expression()
    run_to_end(Stepping(out2))
    assert (x2.grad, w2.grad) == (x.grad, w.grad)


def test_stepping_takes_one_step_per_engine_node():
    model = mlp()
    x, y = batch()
    stepping = Stepping(F.cross_entropy(model(x), y))
    # cross entropy (nll_loss, log_softmax), Linear, Tanh, Linear, and one AccumulateGrad per parameter
    assert stepping.total == 9
    for _ in range(9):
        assert stepping.step() is not None
    assert stepping.step() is None and stepping.finished


def test_a_recording_steps_from_its_output():
    rec, model, twin = recorded_mlp_and_twin()
    run_to_end(Stepping(rec))
    assert_same_grads(model, grads_of(twin))


def test_a_recording_steps_from_the_loss_even_when_an_accuracy_follows_it():
    model = mlp()
    x, y = batch()
    with gl.lab.record() as rec:
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        accuracy = (logits.argmax(1) == y).float().mean()  # noqa: F841
    assert Stepping(rec).target is loss


# --- going back ------------------------------------------------------------------------------------

def test_step_back_restores_every_grad_exactly():
    model = FanOut()
    x, _ = batch()
    stepping = Stepping(model(x).pow(2).sum())
    before = []  # the grads before step k
    for _ in range(stepping.total):
        before.append(grads_of(model))
        stepping.step()
    for k in (stepping.total - 1, 5, 3, 1, 0):  # undo down to position k
        while len(stepping.steps) > k:
            assert stepping.step_back()
        assert_same_grads(model, before[k])


def test_step_back_then_forward_again_lands_on_the_same_grads():
    model = mlp()
    x, y = batch()
    twin = copy.deepcopy(model)
    F.cross_entropy(twin(x), y).backward()
    stepping = Stepping(F.cross_entropy(model(x), y))
    for _ in range(6):
        stepping.step()
    stepping.step_back()
    stepping.step_back()
    run_to_end(stepping)
    assert_same_grads(model, grads_of(twin))


def test_step_back_before_the_first_step_does_nothing():
    model = mlp()
    x, y = batch()
    stepping = Stepping(F.cross_entropy(model(x), y))
    assert stepping.step_back() is False
    assert stepping.steps == [] and all(p.grad is None for p in model.parameters())


def test_reset_restores_the_grads_accumulated_before_stepping():
    model = mlp()
    x, y = batch()
    F.cross_entropy(model(x), y).backward()  # .grad already holds one backward's worth
    accumulated = grads_of(model)
    stepping = Stepping(F.cross_entropy(model(x), y))
    for _ in range(5):
        stepping.step()
    assert any(not np.array_equal(g, accumulated[name]) for name, g in grads_of(model).items())
    stepping.reset()
    assert_same_grads(model, accumulated)
    assert stepping.steps == [] and stepping.current is None


def test_stepping_adds_to_grads_accumulated_before_it():
    model = mlp()
    x, y = batch()
    twin = copy.deepcopy(model)
    for m in (model, twin):
        F.cross_entropy(m(x), y).backward()
    F.cross_entropy(twin(x), y).backward()
    run_to_end(Stepping(F.cross_entropy(model(x), y)))
    assert_same_grads(model, grads_of(twin))


def test_reset_restores_scalar_grads():
    a = Scalar(3.0, "a")
    out = a * a
    stepping = Stepping(out)
    run_to_end(stepping)
    assert a.grad == 6.0
    stepping.reset()
    assert (a.grad, out.grad) == (0.0, 0.0)


# --- where stepping is --------------------------------------------------------------------------------

def test_current_is_none_before_the_first_step():
    model = mlp()
    x, y = batch()
    assert Stepping(F.cross_entropy(model(x), y)).current is None


def test_current_is_the_node_just_run():
    model = mlp()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    stepping = Stepping(loss)
    stepping.step()
    assert stepping.current == stepping.graph.node_for(loss.grad_fn).id


def test_current_is_none_after_the_end_and_stepping_on_does_nothing():
    model = mlp()
    x, y = batch()
    stepping = Stepping(F.cross_entropy(model(x), y))
    run_to_end(stepping)
    grads = grads_of(model)
    assert stepping.current is None
    assert stepping.step() is None
    assert stepping.current is None and len(stepping.steps) == stepping.total
    assert_same_grads(model, grads)


def test_a_leaf_step_reports_the_grad_it_accumulated():
    model = mlp()
    x, y = batch()
    stepping = Stepping(F.cross_entropy(model(x), y))
    run_to_end(stepping)
    leaf_steps = [s for s in stepping.steps if s["leaf"] is not None]
    assert len(leaf_steps) == 4
    norms = sorted(s["leaf"]["grad"]["norm"] for s in leaf_steps)
    assert norms == pytest.approx(sorted(float(np.linalg.norm(p.grad.numpy())) for p in model.parameters()))


# --- fan-out: where gradients add up -----------------------------------------------------------------

def contributions_to(stepping, node_id):
    return [(row["contribution"], row["of"]) for step in stepping.steps for row in step["sent"] if row["to"] == node_id]


def test_a_tensor_used_twice_receives_contribution_1_of_2_then_2_of_2():
    a = gl.randn(4, requires_grad=True)
    h = a * 2
    stepping = Stepping((h + h.sin()).sum())
    run_to_end(stepping)
    assert contributions_to(stepping, stepping.graph.node_for(h.grad_fn).id) == [(1, 2), (2, 2)]


def test_a_tensor_used_once_receives_contribution_1_of_1():
    model = mlp()
    x, y = batch()
    logits = model(x)
    stepping = Stepping(F.cross_entropy(logits, y))
    run_to_end(stepping)
    assert contributions_to(stepping, stepping.graph.node_for(logits.grad_fn).id) == [(1, 1)]


def test_contributions_to_a_tensor_used_twice_are_numbered_in_order():
    a = gl.randn(4, requires_grad=True)
    h = a * 2
    stepping = Stepping((h + h.sin()).sum())
    run_to_end(stepping)
    assert [c for c, _ in contributions_to(stepping, stepping.graph.node_for(h.grad_fn).id)] == [1, 2]


def test_a_consumer_that_needs_no_gradient_is_not_counted_as_a_contribution():
    model = nn.Linear(3, 2)
    x, y = batch()
    with gl.lab.record() as rec:
        logits = model(x)
        prediction = logits.argmax(1)  # noqa: F841  (uses logits, sends no gradient back)
        F.cross_entropy(logits, y)
    stepping = Stepping(rec)
    run_to_end(stepping)
    assert contributions_to(stepping, stepping.graph.node_for(logits.grad_fn).id) == [(1, 1)]


def test_a_scalar_used_three_times_receives_three_contributions():
    a = Scalar(3.0, "a")
    out = a * a + a
    stepping = Stepping(out)
    run_to_end(stepping)
    assert contributions_to(stepping, stepping.graph.node_for(a).id) == [(1, 3), (2, 3), (3, 3)]


# --- what cannot be stepped ----------------------------------------------------------------------------

def test_a_graph_freed_by_backward_says_to_retain_it():
    model = mlp()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    with pytest.raises(CaptureError, match="retain_graph=True"):
        Stepping(loss)


def test_a_graph_kept_by_retain_graph_can_be_stepped():
    model = mlp()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    loss.backward(retain_graph=True)
    assert Stepping(loss).step() is not None


def test_a_tensor_of_many_numbers_says_to_sum_it():
    model = mlp()
    x, _ = batch()
    with pytest.raises(CaptureError, match="shape \\[5, 2\\]") as info:
        Stepping(model(x))
    assert ".sum()" in str(info.value)


def test_a_leaf_tensor_has_nothing_to_step():
    with pytest.raises(CaptureError, match="leaf"):
        Stepping(gl.randn(1, requires_grad=True))


def test_a_non_tensor_says_what_can_be_stepped():
    with pytest.raises(CaptureError) as info:
        Stepping([1.0, 2.0])
    message = str(info.value)
    assert "list" in message and "loss tensor" in message and "gl.lab.record()" in message and "Scalar" in message

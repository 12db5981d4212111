"""Lab 8's exercises (labs/08-regularisation.ipynb): the right answer passes its check, and each plausible wrong
answer fails with the hint that points at its mistake; then lab 8's picture, gl.lab.loss_curves."""

import re

import pytest

import gradlab as gl
from gradlab import lab
from gradlab.lab.regularisation_exercises import CURVES, early_stopping


# --- exercise 1: inverted dropout -------------------------------------------------------------------------------

def inverted(x, p, training):
    if not training:
        return x
    return x * ((gl.rand_like(x) >= p).float() / (1 - p))


def unscaled(x, p, training):
    return x * (gl.rand_like(x) >= p).float() if training else x


def scaled_by_p(x, p, training):
    return x * (gl.rand_like(x) >= p).float() * p if training else x


def divided_by_p(x, p, training):
    return x * (gl.rand_like(x) >= p).float() / p if training else x


def always_on(x, p, training):
    return x * ((gl.rand_like(x) >= p).float() / (1 - p))


def keeps_with_p(x, p, training):
    return x * ((gl.rand_like(x) < p).float() / (1 - p)) if training else x


def eval_rescaled(x, p, training):
    return inverted(x, p, True) if training else x * (1 - p)


def one_mask(x, p, training):
    gl.manual_seed(0)
    return inverted(x, p, training)


def test_exercise_1_inverted_dropout_passes_at_several_p():
    for p in (0.25, 0.5, 0.8):
        verdict = lab.check_dropout("dropout", inverted, p=p)
        assert verdict.passed, verdict.message
        assert f"(p = {p:g})" in verdict.message and "identity in evaluation" in verdict.message


def test_exercise_1_the_usual_slips_are_named_without_the_answer():
    no_scale = lab.check_dropout("dropout", unscaled, p=0.25)
    assert not no_scale and "multiplied by 1, so the output's mean is 0.75" in no_scale.message
    assert "without a scale the expectation shrinks" in no_scale.message
    for slip in (scaled_by_p, divided_by_p):
        wrong = lab.check_dropout("dropout", slip, p=0.25)
        assert not wrong and "the scale comes from p, the probability of dropping" in wrong.message
    still_on = lab.check_dropout("dropout", always_on, p=0.25)
    assert not still_on and re.search(r"in evaluation 2\d\.\d% of the elements are zeroed", still_on.message)
    assert "only on in training" in still_on.message
    rescaled = lab.check_dropout("dropout", eval_rescaled, p=0.25)
    assert not rescaled and "evaluation needs no correction" in rescaled.message
    flipped = lab.check_dropout("dropout", keeps_with_p, p=0.25)
    assert not flipped and "you keep each element with probability p" in flipped.message
    same = lab.check_dropout("dropout", one_mask, p=0.25)
    assert not same and "every call zeroes the same elements" in same.message
    nothing = lab.check_dropout("dropout", lambda x, p, training: x, p=0.25)
    assert not nothing and "nothing is dropped" in nothing.message
    for verdict in (no_scale, still_on, rescaled):  # the hints never print the factor 1/(1 − p)
        assert "1.33" not in verdict.message and "1/(1" not in verdict.message


def test_exercise_1_unsolved_and_bad_answers():
    assert lab.check_dropout("dropout", ...).status == "not done"
    body_unwritten = lab.check_dropout("dropout", lambda x, p, training: ...)  # the lab's `...  # your code`
    assert body_unwritten.status == "not done"
    assert "expected a function dropout(x, p, training)" in lab.check_dropout("dropout", 0.5).message
    assert "dropout keeps the shape" in lab.check_dropout("dropout", lambda x, p, t: x[:10], p=0.25).message
    assert "returned a ndarray" in lab.check_dropout("dropout", lambda x, p, t: x.numpy(), p=0.25).message
    raised = lab.check_dropout("dropout", lambda x, p, t: x @ x, p=0.25)
    assert not raised and "your function raised" in raised.message
    with pytest.raises(ValueError, match=r"check_dropout\('dropout', p=...\): .* strictly between 0 and 1, got 1"):
        lab.check_dropout("dropout", inverted, p=1)


# --- exercise 2: the gradient of an L2 term ---------------------------------------------------------------------

@pytest.fixture
def penalised():
    gl.manual_seed(2)
    W = gl.randn(3, 4, requires_grad=True)
    (0.01 * (W ** 2).sum()).backward()
    return W


def test_exercise_2_the_l2_gradient_and_its_missing_factor(penalised):
    W, lam = penalised, 0.01
    assert lab.check_gradient("l2_grad", 2 * lam * W.detach(), W).passed
    for wrong in (lam * W.detach(), lam / 2 * W.detach()):  # the 2 forgotten; the λ/2 convention's gradient halved
        verdict = lab.check_gradient("l2_grad", wrong, W)
        assert not verdict and "off by the same factor" in verdict.message and "the 2 of a square?" in verdict.message
    sign = lab.check_gradient("l2_grad", -2 * lam * W.detach(), W)
    assert not sign and "the wrong sign" in sign.message
    assert lab.check_gradient("l2_grad", ..., W).status == "not done"


# --- exercise 3: one SGD step with weight decay -----------------------------------------------------------------

def sgd_with_decay():
    return lambda params: gl.optim.SGD(params, lr=0.1, weight_decay=0.05)


def test_exercise_3_the_decayed_sgd_step_passes_and_slips_fail_at_the_first_step():
    right = lab.check_optimizer_step("step", lambda p, g, s, group: p - group["lr"] * (g + group["weight_decay"] * p),
                                     sgd_with_decay())
    assert right.passed and "the same 5 steps as SGD" in right.message
    also = lab.check_optimizer_step("step", lambda p, g, s, group: (1 - group["lr"] * group["weight_decay"]) * p
                                    - group["lr"] * g, sgd_with_decay())
    assert also.passed  # the decay-first form is the same step
    for wrong in (lambda p, g, s, group: p - group["lr"] * g,                                   # no decay
                  lambda p, g, s, group: p - group["lr"] * g - group["weight_decay"] * p,       # decay without lr
                  lambda p, g, s, group: p - group["lr"] * (g + 2 * group["weight_decay"] * p)):  # λ‖θ‖²'s 2λ
        verdict = lab.check_optimizer_step("step", wrong, sgd_with_decay())
        assert not verdict and "your first step is already off" in verdict.message
    assert lab.check_optimizer_step("step", lambda p, g, s, group: ..., sgd_with_decay()).status == "not done"


def test_exercise_3_sgd_weight_decay_is_l2_in_the_loss():
    """What section 3 shows on the learner's model, here on one parameter: the two runs agree."""
    runs = []
    for in_loss in (False, True):
        gl.manual_seed(0)
        w = gl.nn.Parameter(gl.randn(5))
        opt = gl.optim.SGD([w], lr=0.1, weight_decay=0 if in_loss else 0.01)
        for _ in range(20):
            opt.zero_grad()
            loss = ((w - 1) ** 4).sum() + (0.01 / 2 * (w ** 2).sum() if in_loss else 0)
            loss.backward()
            opt.step()
        runs.append(w.detach().numpy())
    assert abs(runs[0] - runs[1]).max() < 1e-6


# --- exercise 4: early stopping with patience -------------------------------------------------------------------

def right_rule(val_losses, patience):
    best, best_epoch, waited = float("inf"), 0, 0
    for epoch, loss in enumerate(val_losses):
        if loss < best:
            best, best_epoch, waited = loss, epoch, 0
        else:
            waited += 1
            if waited == patience:
                return best_epoch, epoch
    return best_epoch, len(val_losses) - 1


def late_rule(val_losses, patience):
    best, best_epoch, waited = float("inf"), 0, 0
    for epoch, loss in enumerate(val_losses):
        if loss < best:
            best, best_epoch, waited = loss, epoch, 0
        else:
            waited += 1
            if waited > patience:  # one epoch too many
                return best_epoch, epoch
    return best_epoch, len(val_losses) - 1


def early_rule(val_losses, patience):
    best, best_epoch, waited = float("inf"), 0, 0
    for epoch, loss in enumerate(val_losses):
        if loss < best:
            best, best_epoch, waited = loss, epoch, 1  # the best epoch counted as one of the waited
        else:
            waited += 1
            if waited >= patience:
                return best_epoch, epoch
    return best_epoch, len(val_losses) - 1


def ties_rule(val_losses, patience):
    best, best_epoch, waited = float("inf"), 0, 0
    for epoch, loss in enumerate(val_losses):
        if loss <= best:  # an equal loss counted as progress
            best, best_epoch, waited = loss, epoch, 0
        else:
            waited += 1
            if waited == patience:
                return best_epoch, epoch
    return best_epoch, len(val_losses) - 1


def whole_curve_rule(val_losses, patience):
    return min(range(len(val_losses)), key=val_losses.__getitem__), right_rule(val_losses, patience)[1]


def test_exercise_4_the_reference_matches_the_labs_worked_example():
    assert early_stopping([1.0, 0.8, 0.9, 0.95, 0.7], 2) == (1, 3)  # the lab's example, worked by hand
    assert early_stopping([3.0, 2.0, 1.0], 1) == (2, 2)             # never stops: runs to the end
    assert early_stopping([1.0, 1.0, 1.0], 2) == (0, 2)             # equal is not better
    # every slip changes the answer on at least one of the check's curves
    for slip in (late_rule, early_rule, ties_rule, whole_curve_rule):
        assert any(slip(list(c), p) != early_stopping(c, p) for c, p in CURVES), slip.__name__


def test_exercise_4_the_rule_passes_and_each_slip_is_named():
    assert lab.check_early_stopping("early_stop", right_rule).passed
    late = lab.check_early_stopping("early_stop", late_rule)
    assert not late and "you stop one epoch late" in late.message
    early = lab.check_early_stopping("early_stop", early_rule)
    assert not early and "you stop one epoch early" in early.message
    ties = lab.check_early_stopping("early_stop", ties_rule)
    assert not ties and "equals the best is not an improvement" in ties.message
    whole = lab.check_early_stopping("early_stop", whole_curve_rule)
    assert not whole and "the best of the epochs you ran, before you stopped" in whole.message
    never = lab.check_early_stopping("early_stop", lambda losses, patience: (0, len(losses) - 1))
    assert not never and "you returned (0, 9)" in never.message and "walk through it epoch by epoch" in never.message


def test_exercise_4_unsolved_and_bad_answers():
    assert lab.check_early_stopping("early_stop", ...).status == "not done"
    assert lab.check_early_stopping("early_stop", lambda losses, patience: ...).status == "not done"
    assert "return a pair of whole numbers" in lab.check_early_stopping("early_stop", lambda l, p: 3).message
    assert "return a pair of whole numbers" in lab.check_early_stopping("early_stop", lambda l, p: (1.0, 2)).message
    raised = lab.check_early_stopping("early_stop", lambda l, p: l[100])
    assert not raised and "your function raised IndexError" in raised.message
    assert "expected a function" in lab.check_early_stopping("early_stop", [1, 2]).message


# --- the picture: loss curves ------------------------------------------------------------------------------------

def test_loss_curves_draws_one_classed_line_per_curve_and_the_mark():
    picture = lab.loss_curves({"train": [1.0, 0.5, 0.2], "validation": [1.1, 0.9, 1.3]}, "curves", mark=1)
    svg = str(picture)
    assert svg.count('<g class="gl-act-line"') == 2 and 'data-layer="validation"' in svg
    assert 'class="gl-bg"' in svg and "gl-series-0" in svg and "gl-series-1" in svg
    assert "epoch 0" in svg and "epoch 2" in svg and "step " not in svg
    assert "validation: 1.3 at the last epoch" in svg
    assert svg.count('class="gl-act-mark gl-ink-axis"') == 1
    assert "image/svg+xml" in picture._repr_mimebundle_()[0]


def test_loss_curves_bad_input():
    with pytest.raises(TypeError, match=r"loss_curves\(curves\): give a dict of name -> list"):
        lab.loss_curves([1.0, 2.0])
    with pytest.raises(ValueError, match="the curve 'train' is empty"):
        lab.loss_curves({"train": []})
    with pytest.raises(ValueError, match=r"mark is an epoch between 0 and 2, got 5"):
        lab.loss_curves({"train": [1.0, 0.5, 0.2]}, mark=5)


# --- the graph of dropout: its mask, in train() and gone in eval() -----------------------------------------------

def test_a_recorded_dropout_is_a_mul_by_its_mask_a_constant_of_the_module_and_nothing_in_eval():
    gl.manual_seed(1)
    model = gl.nn.Sequential(gl.nn.Linear(2, 8), gl.nn.ReLU(), gl.nn.Dropout(0.5), gl.nn.Linear(8, 2))
    x = gl.randn(4, 2)
    model.train()
    with lab.record() as rec:
        model(x).sum()
    nodes = lab.capture(rec).nodes.values()
    mul = next(n for n in nodes if n.group == "2" and n.kind == "op")
    assert mul.label == "Mul" and [s["name"] for s in mul.saved] == ["a", "b"]
    mask = mul.ref.saved_tensors[1].numpy()
    assert set(mask.ravel().tolist()) == {0.0, 2.0}  # each unit dropped (0) or kept and scaled by 1/(1 − p)
    assert mul.saved[1]["min"] == 0.0 and mul.saved[1]["max"] == 2.0  # what the inspector shows of it
    constant = [n for n in nodes if n.label == "constant"]
    assert len(constant) == 1 and constant[0].group == "2" and "dropout mask" in constant[0].words
    data = [n for n in nodes if n.label == "input"]
    assert len(data) == 1 and data[0].group is None  # x was given to the model: data, not a constant
    model.eval()
    with lab.record() as rec:
        model(x).sum()
    nodes = lab.capture(rec).nodes.values()
    assert not any(n.group == "2" for n in nodes) and not any(n.label == "constant" for n in nodes)


def test_a_modules_buffers_are_named_in_its_group_not_taken_for_data_or_constants():
    """BatchNorm in eval() reads its running statistics: data its module keeps, drawn with their names."""
    model = gl.nn.Sequential(gl.nn.Linear(3, 4), gl.nn.BatchNorm1d(4))
    model.eval()
    with lab.record() as rec:
        model(gl.randn(5, 3)).sum()
    leaves = {n.label: n for n in lab.capture(rec).nodes.values() if n.kind != "op"}
    assert {"1.running_mean", "1.running_var"} <= set(leaves) and "constant" not in leaves
    assert leaves["1.running_mean"].group == "1" and leaves["1.running_mean"].kind == "input"
    assert leaves["input"].group is None

"""Lab 5's exercises (labs/05-modules-losses-and-optimizers.ipynb): each one's setup rebuilt as the lab builds it;
the right answer passes its check, and each plausible wrong answer fails with the hint that points at its
mistake (and an unwritten one is "not done yet", never a failure)."""

import pytest

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab import lab
from gradlab.data import DataLoader, TensorDataset, make_synthetic

BIG = gl.tensor([[1000.0, 1001.0, 1002.0], [-1000.0, -1001.0, -1002.0]], dtype=gl.float64)


def cases():
    gl.manual_seed(1)
    return [(gl.randn(4, 5, dtype=gl.float64),), (BIG,), (50 * gl.randn(3, 10, dtype=gl.float64),)]


def check_logsumexp(mine):
    return lab.check_function_cases("logsumexp", mine, lambda x: gl.logsumexp(x, dim=1), cases())


# --- exercise 1: a stable logsumexp -------------------------------------------------------------------

def stable(x):
    m = x.amax(dim=1, keepdim=True)
    return (m + (x - m).exp().sum(1, keepdim=True).log()).squeeze(1)


def test_exercise_1_a_stable_logsumexp_passes_on_huge_logits_too():
    verdict = check_logsumexp(stable)
    assert verdict.passed and "on all 3 cases" in verdict.message


def test_exercise_1_without_the_max_subtraction_overflows():
    verdict = check_logsumexp(lambda x: x.exp().sum(1).log())
    assert not verdict and "case 2 of 3" in verdict.message and "nan or inf where the answer is finite" in \
        verdict.message


def test_exercise_1_a_max_taken_out_and_never_put_back_is_off_everywhere():
    verdict = check_logsumexp(lambda x: (x - x.amax(dim=1, keepdim=True)).exp().sum(1).log())
    assert not verdict and "case 1 of 3" in verdict.message and "elements are off" in verdict.message


def test_exercise_1_the_max_of_the_whole_batch_instead_of_each_row_underflows_another_row():
    verdict = check_logsumexp(lambda x: x.max() + (x - x.max()).exp().sum(1).log())
    assert not verdict and "case 2 of 3" in verdict.message and "nan or inf" in verdict.message


def test_exercise_1_unsolved_is_not_done_yet():
    def logsumexp(x):
        ...  # the lab's cell as shipped

    assert check_logsumexp(logsumexp).status == "not done"


# --- exercise 2: the cross-entropy's gradient ----------------------------------------------------------

@pytest.fixture(scope="module")
def batch():
    """The lab's model and first batch (sections 1–3), backward run with the logits' gradient kept."""
    gl.manual_seed(0)
    X, y = make_synthetic("spiral", n=600, seed=0)
    model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    inputs, targets = next(iter(DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)))
    logits = model(inputs)
    loss = nn.CrossEntropyLoss()(logits, targets)
    logits.retain_grad()
    loss.backward()
    return logits, targets, loss


def test_the_loss_before_training_is_near_ln_2_as_the_lab_says(batch):
    assert abs(batch[2].item() - 0.693) < 0.05


def test_exercise_2_dlogits(batch):
    logits, targets, _ = batch
    P, Y = F.softmax(logits, dim=1), F.one_hot(targets, 2)
    assert lab.check_gradient("dlogits", (P - Y) / len(targets), logits)
    assert "off by the same factor" in lab.check_gradient("dlogits", P - Y, logits).message  # the mean's 1/N
    assert "wrong sign" in lab.check_gradient("dlogits", (Y - P) / len(targets), logits).message
    no_softmax = lab.check_gradient("dlogits", (logits - Y) / len(targets), logits)
    assert not no_softmax and "elements are off" in no_softmax.message


# --- exercises 3 and 4: one optimizer step by hand -----------------------------------------------------

MOMENTUM = lambda params: gl.optim.SGD(params, lr=0.05, momentum=0.9)  # noqa: E731 - the lab's check
ADAM = lambda params: gl.optim.Adam(params, lr=0.1)  # noqa: E731


def momentum_step(p, grad, state, group):
    buf = state.get("momentum_buffer")
    buf = grad.clone() if buf is None else group["momentum"] * buf + grad
    state["momentum_buffer"] = buf
    return p - group["lr"] * buf


def test_exercise_3_momentum_step():
    verdict = lab.check_optimizer_step("momentum_step", momentum_step, MOMENTUM)
    assert verdict.passed and verdict.message == "the same 5 steps as SGD, and the same momentum_buffer"


def test_exercise_3_momentum_applied_to_the_wrong_term_fails_at_step_2():
    def wrong(p, grad, state, group):  # the momentum multiplies the new gradient, not the old buffer
        buf = state.get("momentum_buffer")
        buf = grad.clone() if buf is None else buf + group["momentum"] * grad
        state["momentum_buffer"] = buf
        return p - group["lr"] * buf

    verdict = lab.check_optimizer_step("momentum_step", wrong, MOMENTUM)
    assert not verdict and "your first step is right, step 2 is not" in verdict.message
    assert "what your state carries from step to step" in verdict.message


def test_exercise_3_a_buffer_of_steps_instead_of_gradients_is_named():
    def steps_in_buffer(p, grad, state, group):  # the same path at a fixed lr, not PyTorch's buffer
        buf = state.get("momentum_buffer")
        buf = group["lr"] * grad if buf is None else group["momentum"] * buf + group["lr"] * grad
        state["momentum_buffer"] = buf
        return p - buf

    verdict = lab.check_optimizer_step("momentum_step", steps_in_buffer, MOMENTUM)
    assert not verdict and "at step 1 the position is right, but your state['momentum_buffer']" in verdict.message
    assert "off by the same factor" in verdict.message and "the gradient, or the step" in verdict.message


def test_exercise_3_a_buffer_kept_under_another_name_is_asked_for():
    def elsewhere(p, grad, state, group):
        buf = state.get("velocity")
        buf = grad.clone() if buf is None else group["momentum"] * buf + grad
        state["velocity"] = buf
        return p - group["lr"] * buf

    verdict = lab.check_optimizer_step("momentum_step", elsewhere, MOMENTUM)
    assert not verdict and "your state has no 'momentum_buffer'" in verdict.message


def adam_step(p, grad, state, group, correct=True):
    beta1, beta2 = group["betas"]
    t = state["step"] = state.get("step", 0) + 1
    m = state["exp_avg"] = beta1 * state.get("exp_avg", 0) + (1 - beta1) * grad
    v = state["exp_avg_sq"] = beta2 * state.get("exp_avg_sq", 0) + (1 - beta2) * grad ** 2
    if correct:
        m, v = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    return p - group["lr"] * m / (v.sqrt() + group["eps"])


def test_exercise_4_adam_step():
    verdict = lab.check_optimizer_step("adam_step", adam_step, ADAM)
    assert verdict.passed and "the same 5 steps as Adam, and the same exp_avg, exp_avg_sq, step" in verdict.message


def test_exercise_4_forgetting_the_bias_correction_is_off_from_the_first_step():
    verdict = lab.check_optimizer_step("adam_step", lambda *a: adam_step(*a, correct=False), ADAM)
    assert not verdict and "your first step is already off" in verdict.message
    assert "close to their zero start: does your step correct for that?" in verdict.message


def test_exercise_4_the_square_of_the_average_instead_of_the_average_of_the_square():
    def wrong(p, grad, state, group):
        beta1, beta2 = group["betas"]
        t = state["step"] = state.get("step", 0) + 1
        m = state["exp_avg"] = beta1 * state.get("exp_avg", 0) + (1 - beta1) * grad
        v = state["exp_avg_sq"] = m ** 2
        return p - group["lr"] * (m / (1 - beta1 ** t)) / ((v / (1 - beta2 ** t)).sqrt() + group["eps"])

    assert not lab.check_optimizer_step("adam_step", wrong, ADAM)


def test_exercises_3_and_4_unsolved_are_not_done_yet_and_a_crash_is_a_verdict():
    def momentum_step(p, grad, state, group):
        lr, momentum = group["lr"], group["momentum"]
        ...  # the lab's cell as shipped

    assert lab.check_optimizer_step("momentum_step", momentum_step, MOMENTUM).status == "not done"
    assert lab.check_optimizer_step("adam_step", ..., ADAM).status == "not done"
    crash = lab.check_optimizer_step("adam_step", lambda p, g, s, group: p - group["learning_rate"] * g, ADAM)
    assert not crash and "at step 1 your function raised KeyError: 'learning_rate'" in crash.message
    returned = lab.check_optimizer_step("adam_step", lambda p, g, s, group: 3.0, ADAM)
    assert "should return the new p, a tensor like p; it returned a float" in returned.message


def test_check_optimizer_step_refuses_an_optimizer_that_is_not_one():
    with pytest.raises(TypeError, match=r"optimizer builds the true optimizer from the parameters"):
        lab.check_optimizer_step("adam_step", adam_step, lambda params: params)

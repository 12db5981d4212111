"""Lab 11's exercises (labs/11-sequences-and-attention.ipynb): the right answer passes each check, and each plausible
wrong answer fails with the hint that points at its mistake; the lab's pictures take bad input with a clear error."""


import numpy as np
import pytest

import gradlab as gl
from gradlab import lab

# --- exercise 1: one RNN step -----------------------------------------------------------------------------------


def test_exercise_1_the_rnn_step_passes_and_the_usual_slips_are_named():
    right = lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: gl.tanh(h @ W.T + x @ U.T + b))
    assert right.passed and "backward reaches every input" in right.message
    no_tanh = lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: h @ W.T + x @ U.T + b)
    assert not no_tanh and "pre-activations" in no_tanh.message and "squashed" in no_tanh.message
    untransposed = lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: gl.tanh(h @ W + x @ U.T + b))
    assert not untransposed and "h @ W.T" in untransposed.message
    no_bias = lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: gl.tanh(h @ W.T + x @ U.T))
    assert not no_bias and "bias is missing" in no_bias.message
    no_state = lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: gl.tanh(x @ U.T + b))
    assert not no_state and "old state is missing" in no_state.message
    # the hints never show the answer
    assert all("tanh(h @ W.T + x @ U.T + b)" not in v.message for v in (no_tanh, untransposed, no_bias, no_state))


def test_exercise_1_numpy_answers_and_unfinished_cells():
    detached = lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: gl.tanh(h @ W.T + x @ U.T + b).detach())
    assert not detached and "no graph" in detached.message
    assert lab.check_rnn_step("rnn_step", ...).status == "not done"
    assert lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: ...).status == "not done"
    raised = lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: gl.tanh(h @ W + x @ U + b))  # (4, 3) @ (5, 3)
    assert not raised and "your function raised" in raised.message and "matmul" in raised.message


def test_exercise_1_compares_with_the_engines_rnn_cell():
    """The check's truth is nn.RNNCell: a step with the biases of a different cell must fail."""
    gl.manual_seed(5)
    other = gl.nn.RNNCell(3, 5)
    wrong_bias = lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: gl.tanh(h @ W.T + x @ U.T + other.bias_ih))
    assert not wrong_bias


# --- exercise 2: the BPTT ratio -----------------------------------------------------------------------------------

def quiet_ratio(scale=0.8, steps=10, T=30, H=16):
    """The lab's quiet RNN, measured: ‖∂L/∂h_(T−steps)‖ / ‖∂L/∂h_T‖ with W = scale · Q, no input, h_0 = 0."""
    gl.manual_seed(2)
    Q, _ = gl.linalg.qr(gl.randn(H, H, dtype=gl.float64))
    W = scale * Q
    h = gl.zeros(1, H, dtype=gl.float64, requires_grad=True)
    states = []
    for _ in range(T):
        h = gl.tanh(h @ W.T)
        h.retain_grad()
        states.append(h)
    states[-1].sum().backward()
    return states[T - steps - 1].grad.norm().item() / states[-1].grad.norm().item()


def test_exercise_2_the_quiet_rnn_shrinks_by_exactly_the_power():
    assert quiet_ratio() == pytest.approx(0.8 ** 10, rel=1e-12)  # an orthogonal Q and tanh's slope of 1 at 0


def test_exercise_2_the_prediction_passes_and_the_usual_slips_are_named():
    measured = quiet_ratio()
    check = lambda answer: lab.check_bptt_ratio("ratio", answer, measured=measured, scale=0.8, steps=10)  # noqa: E731
    assert check(0.8 ** 10).passed and check(0.107).passed  # a rounded prediction is a prediction
    added = check(0.8 * 10)
    assert not added and "multiply, they do not add up" in added.message
    one_step = check(0.8)
    assert not one_step and "one step's factor" in one_step.message
    off_by_one = check(0.8 ** 9)
    assert not off_by_one and "one step too few or too many" in off_by_one.message
    assert "one step too few or too many" in check(0.8 ** 11).message
    upside_down = check(1 / 0.8 ** 10)
    assert not upside_down and "the other way round" in upside_down.message
    other = check(0.5)
    assert not other and "too large by a factor of 4.7" in other.message  # 0.5 / 0.107
    assert all(f"{0.8 ** 10:.3g}" not in v.message for v in (added, one_step, off_by_one, upside_down, other))


def test_exercise_2_not_a_number():
    assert lab.check_bptt_ratio("ratio", ..., measured=0.1, scale=0.8, steps=10).status == "not done"
    assert "one number" in lab.check_bptt_ratio("ratio", "0.1", measured=0.1, scale=0.8, steps=10).message
    assert "positive" in lab.check_bptt_ratio("ratio", -0.1, measured=0.1, scale=0.8, steps=10).message


# --- exercise 3: causal attention ---------------------------------------------------------------------------------

def attention(q, k, v, *, scale=None, mask=True, softmax_dim=-1, mask_after=False):
    T, d = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) * (1 / d ** 0.5 if scale is None else scale)
    future = gl.ones(T, T).tril() == 0
    if mask and not mask_after:
        scores = scores.masked_fill(future, float("-inf"))
    weights = scores.softmax(softmax_dim)
    if mask_after:
        weights = weights.masked_fill(future, 0.0)
    return weights @ v


def test_exercise_3_causal_attention_passes_with_its_gradients():
    right = lab.check_causal_attention("causal_attention", attention)
    assert right.passed and "gradients of q, k and v" in right.message


def test_exercise_3_the_usual_slips_are_named():
    no_mask = lab.check_causal_attention("causal_attention", lambda q, k, v: attention(q, k, v, mask=False))
    assert not no_mask and "the future leaks" in no_mask.message and "mask" in no_mask.message
    no_scale = lab.check_causal_attention("causal_attention", lambda q, k, v: attention(q, k, v, scale=1.0))
    assert not no_scale and "not divided by √d" in no_scale.message
    by_d = lab.check_causal_attention("causal_attention", lambda q, k, v: attention(q, k, v, scale=1 / 8))
    assert not by_d and "divided by d" in by_d.message
    after = lab.check_causal_attention("causal_attention", lambda q, k, v: attention(q, k, v, mask_after=True))
    assert not after and "before the softmax" in after.message
    wrong_axis = lab.check_causal_attention("causal_attention", lambda q, k, v: attention(q, k, v, softmax_dim=-2))
    assert not wrong_axis and "wrong axis" in wrong_axis.message


def test_exercise_3_numpy_and_unfinished():
    as_numpy = lab.check_causal_attention(
        "causal_attention", lambda q, k, v: gl.tensor(attention(q, k, v).detach().numpy()))
    assert not as_numpy and "no graph" in as_numpy.message
    assert lab.check_causal_attention("causal_attention", lambda q, k, v: ...).status == "not done"
    shape = lab.check_causal_attention("causal_attention", lambda q, k, v: attention(q, k, v)[:, -1])
    assert not shape and "shape" in shape.message


# --- exercise 4: softmax backward ---------------------------------------------------------------------------------

@pytest.fixture()
def softmax_case():
    gl.manual_seed(3)
    s, g = gl.randn(4, 6), gl.randn(4, 6)
    return s, s.softmax(-1), g


def test_exercise_4_the_vjp_passes_and_equals_the_jacobian_product(softmax_case):
    s, p, g = softmax_case
    right = p * (g - (g * p).sum(-1, keepdim=True))
    assert lab.check_softmax_backward("ds", right, s, g).passed
    # the same numbers from the Jacobian diag(p) - p pᵀ of each row, built in numpy
    P, G = p.numpy().astype(np.float64), g.numpy().astype(np.float64)
    by_jacobian = np.stack([(np.diag(row) - np.outer(row, row)).T @ grad for row, grad in zip(P, G)])
    assert np.allclose(right.numpy(), by_jacobian, atol=1e-6)


def test_exercise_4_the_usual_slips_are_named(softmax_case):
    s, p, g = softmax_case
    dot = (g * p).sum(-1, keepdim=True)
    diagonal = lab.check_softmax_backward("ds", p * g, s, g)
    assert not diagonal and "diagonal alone" in diagonal.message
    whole_batch = lab.check_softmax_backward("ds", p * (g - (g * p).sum()), s, g)
    assert not whole_batch and "per row" in whole_batch.message
    no_p = lab.check_softmax_backward("ds", g - dot, s, g)
    assert not no_p and "not multiplied by p" in no_p.message
    sum_g = lab.check_softmax_backward("ds", p * (g - g.sum(-1, keepdim=True)), s, g)
    assert not sum_g and "you summed g alone" in sum_g.message
    sign = lab.check_softmax_backward("ds", -(p * (g - dot)), s, g)
    assert not sign and "sign is flipped" in sign.message
    assert lab.check_softmax_backward("ds", ..., s, g).status == "not done"
    transposed = lab.check_softmax_backward("ds", (p * (g - dot)).T, s, g)
    assert not transposed and "shape" in transposed.message


# --- the pictures -------------------------------------------------------------------------------------------------

def test_gradient_norms_over_time_draws_a_line_per_run_with_the_first_value_in_the_key():
    svg = lab.gradient_norms_over_time({"small": [1e-6, 1e-3, 1.0], "large": [1e3, 10.0, 1.0]})
    assert 'class="gl-act gl-act-bptt"' in svg and svg.count('class="gl-act-line"') == 2
    assert "small: 1e-06 at t = 1" in svg and "large: 1e+03 at t = 1" in svg
    assert '<rect class="gl-bg"' in svg and "t 3" in svg
    with pytest.raises(ValueError, match="same number of time steps"):
        lab.gradient_norms_over_time({"a": [1.0, 2.0], "b": [1.0]})
    with pytest.raises(TypeError, match="maps a name"):
        lab.gradient_norms_over_time([1.0, 2.0])


def test_attention_maps_draw_the_lower_triangle_of_each_head():
    T = 5
    weights = gl.ones(2, 3, T, T).tril()
    weights = weights / weights.sum(-1, keepdim=True)
    svg = lab.attention_maps(weights, "ab c\n")
    assert svg.count('class="gl-attn-map"') == 6  # 2 layers × 3 heads
    assert svg.count('class="gl-attn-cell"') == 6 * T * (T + 1) // 2  # the future is left blank
    assert "␣" in svg and "⏎" in svg and "layer 1, head 2" in svg
    assert '<rect class="gl-bg"' in svg and "gl-ink-axis" in svg
    with pytest.raises(ValueError, match="one character each"):
        lab.attention_maps(weights, "abc")
    with pytest.raises(ValueError, match=r"\(heads, T, T\)"):
        lab.attention_maps(gl.ones(T, T), "abcde")


def test_the_checks_leave_the_learners_random_stream_as_it_was():
    gl.manual_seed(123)
    expected = gl.randn(3)
    gl.manual_seed(123)
    lab.check_rnn_step("rnn_step", lambda h, x, W, U, b: gl.tanh(h @ W.T + x @ U.T + b))
    lab.check_causal_attention("causal_attention", attention)
    assert np.array_equal(gl.randn(3).numpy(), expected.numpy())

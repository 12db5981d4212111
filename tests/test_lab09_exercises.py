"""Lab 9's exercises (labs/09-convolutions.ipynb): each one's setup rebuilt as the lab builds it; the right answer
passes its check, and each plausible wrong answer fails with the hint that points at its mistake."""

import pytest

import gradlab as gl
import gradlab.nn.functional as F
from gradlab import lab

EDGE = [[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]


@pytest.fixture(scope="module")
def digit():
    pytest.importorskip("sklearn")
    images, _ = gl.data.load_digits()
    return images[0, 0].to(gl.float64)


# --- exercise 1: the output size ---------------------------------------------------------------------------

def test_exercise_1_the_formula_passes_and_each_slip_is_named():
    assert lab.check_output_size("out_size", lambda H, k, p, s: (H + 2 * p - k) // s + 1).passed
    cases = {
        "the padding is missing": lambda H, k, p, s: (H - k) // s + 1,
        "the padding counts once": lambda H, k, p, s: (H + p - k) // s + 1,
        "one window short: count the first window too": lambda H, k, p, s: (H + 2 * p - k) // s,
        "the stride is off by one window": lambda H, k, p, s: (H + 2 * p - k + 1) // s,
        "the stride is missing": lambda H, k, p, s: H + 2 * p - k + 1,
        "the stride is off by one: the window starts every s pixels": lambda H, k, p, s: (H + 2 * p - k) // (s + 1) + 1,
        "round the division down": lambda H, k, p, s: (H + 2 * p - k) / s + 1,
    }
    for hint, wrong in cases.items():
        verdict = lab.check_output_size("out_size", wrong)
        assert not verdict.passed and hint in verdict.message, (hint, verdict.message)
        assert "(H + 2" not in verdict.message  # the hint never writes the formula


def test_exercise_1_unsolved_and_broken_answers():
    def unsolved(H, k, p, s):
        return ...
    assert lab.check_output_size("out_size", unsolved).status == "not done"
    assert lab.check_output_size("out_size", ...).status == "not done"
    broken = lab.check_output_size("out_size", lambda H, k: H - k + 1)
    assert not broken and "your function raised TypeError" in broken.message


# --- exercise 2: conv2d by loops ---------------------------------------------------------------------------

def loops(flip=False, pad=True, stride_used=True):
    def conv(x, w, stride=1, padding=0):
        if flip:
            w = w.flip(0).flip(1)
        if pad:
            x = F.pad(x, (padding,) * 4)
        s = stride if stride_used else 1
        k = w.shape[0]
        rows, cols = (x.shape[0] - k) // s + 1, (x.shape[1] - k) // s + 1
        out = gl.zeros(rows, cols, dtype=x.dtype)
        for i in range(rows):
            for j in range(cols):
                out[i, j] = (x[i * s:i * s + k, j * s:j * s + k] * w).sum()
        return out
    return conv


def test_exercise_2_loops_pass_and_flipped_unpadded_or_unstrided_ones_are_named(digit):
    edge = gl.tensor(EDGE, dtype=gl.float64)
    assert lab.check_conv2d("conv2d_loops", loops(), digit, edge, stride=2, padding=1).passed
    flipped = lab.check_conv2d("conv2d_loops", loops(flip=True), digit, edge, stride=2, padding=1)
    assert not flipped and "the kernel flipped" in flipped.message and "unflipped" in flipped.message
    unpadded = lab.check_conv2d("conv2d_loops", loops(pad=False), digit, edge, stride=2, padding=1)
    assert not unpadded and "the padding is missing" in unpadded.message and "the answer has shape (4, 4), yours has (3, 3)" in unpadded.message
    unstrided = lab.check_conv2d("conv2d_loops", loops(stride_used=False), digit, edge, stride=2, padding=1)
    assert not unstrided and "the stride is not" in unstrided.message


def test_exercise_2_unsolved(digit):
    def unsolved(x, w, stride=1, padding=0):
        return ...
    edge = gl.tensor(EDGE, dtype=gl.float64)
    assert lab.check_conv2d("conv2d_loops", unsolved, digit, edge, stride=2, padding=1).status == "not done"


# --- exercise 3: dW by hand ---------------------------------------------------------------------------------

@pytest.fixture()
def conv_backward(digit):
    x = digit[1:7, 1:7].clone().requires_grad_()
    W = gl.tensor(EDGE, dtype=gl.float64, requires_grad=True)
    Y = F.conv2d(x[None, None], W[None, None])[0, 0]
    Y.retain_grad()
    ((Y ** 2).sum() / 2).backward()
    return x.detach(), W, Y.grad.detach()


def correlate(x, G):
    dW = gl.zeros(3, 3, dtype=gl.float64)
    for a in range(3):
        for b in range(3):
            dW[a, b] = (x[a:a + 4, b:b + 4] * G).sum()
    return dW


def test_exercise_3_the_correlation_passes_and_a_flip_is_named(conv_backward):
    x, W, G = conv_backward
    assert lab.check_conv_weight_grad("dW", correlate(x, G), W, x, G).passed
    flipped = lab.check_conv_weight_grad("dW", correlate(x, G).flip(0).flip(1), W, x, G)
    assert not flipped and "flipped (turned by 180°)" in flipped.message and "nothing flipped" in flipped.message
    # correlating x with the kernel instead of with G: the shape expected is named
    wrong_shape = lab.check_conv_weight_grad("dW", G, W, x, G)
    assert not wrong_shape and "the answer has shape (3, 3), yours has (4, 4)" in wrong_shape.message
    assert lab.check_conv_weight_grad("dW", ..., W, x, G).status == "not done"


def test_exercise_3_with_padding_a_dw_of_the_unpadded_input_is_named(digit):
    x = digit[1:7, 1:7].clone()
    W = gl.tensor(EDGE, dtype=gl.float64, requires_grad=True)
    Y = F.conv2d(x[None, None], W[None, None], padding=1)[0, 0]
    G = gl.randn(6, 6, dtype=gl.float64, generator=gl.Generator().manual_seed(0))
    Y.backward(G)
    unpadded = gl.zeros(3, 3, dtype=gl.float64)
    for a in range(3):  # the windows over the unpadded x: only 4×4 of the 6×6 positions fit
        for b in range(3):
            unpadded[a, b] = (x[a:a + 4, b:b + 4] * G[:4, :4]).sum()
    padded = F.pad(x, (1, 1, 1, 1))
    right = gl.zeros(3, 3, dtype=gl.float64)
    for a in range(3):
        for b in range(3):
            right[a, b] = (padded[a:a + 6, b:b + 6] * G).sum()
    assert lab.check_conv_weight_grad("dW", right, W, x, G, padding=1).passed
    verdict = lab.check_conv_weight_grad("dW", unpadded, W, x, G[:4, :4], padding=1)
    assert not verdict and "the padding is missing" in verdict.message


# --- exercise 4: max-pool backward --------------------------------------------------------------------------

@pytest.fixture()
def pool():
    xp = gl.tensor([[[[1.0, 3.0, 0.5, 0.2], [2.0, 0.0, 0.1, 0.9], [0.3, 0.4, 4.0, 1.0], [5.0, 0.6, 2.0, 3.0]]]],
                   dtype=gl.float64, requires_grad=True)
    dpool = gl.tensor([[[[0.1, -0.2], [0.3, 0.4]]]], dtype=gl.float64)
    F.max_pool2d(xp, 2).backward(dpool)
    return xp, dpool


def test_exercise_4_routing_to_the_argmax_passes_spreading_or_averaging_is_named(pool):
    xp, dpool = pool
    right = gl.zeros_like(xp)
    for (r, c), (i, j) in {(0, 1): (0, 0), (1, 3): (0, 1), (3, 0): (1, 0), (2, 2): (1, 1)}.items():  # by hand
        right[0, 0, r, c] = dpool[0, 0, i, j]
    assert lab.check_max_pool_grad("dxp", right, xp, dpool, kernel_size=2).passed
    spread = dpool.repeat_interleave(2, dim=2).repeat_interleave(2, dim=3)
    everywhere = lab.check_max_pool_grad("dxp", spread, xp, dpool, kernel_size=2)
    assert not everywhere and "every element of each window got the window's whole gradient" in everywhere.message
    averaged = lab.check_max_pool_grad("dxp", spread / 4, xp, dpool, kernel_size=2)
    assert not averaged and "average pooling's backward" in averaged.message
    assert lab.check_max_pool_grad("dxp", ..., xp, dpool, kernel_size=2).status == "not done"

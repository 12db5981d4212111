"""Checks for lab 9's exercises on convolutions: the generic checks, plus the convolution's own slips named.

Each check first asks the generic one (``check_function_cases``, ``check_function``, ``check_gradient``).
When that fails, it tries the answers the usual mistakes give (the kernel flipped, the padding forgotten, the
``+ 1`` dropped, a pooling gradient spread over its window) and, if the learner's answer is one of them,
says which idea to look at again, never the answer.
"""

from __future__ import annotations

import numpy as np

from .exercises import Verdict, _as_array, check_function, check_gradient, not_done, not_done_yet
from .tensor_exercises import check_function_cases

# (H, k, p, s): the sizes the output-size formula is tried on (the last ones catch a slip that small ones hide)
SIZE_CASES = [(6, 3, 0, 1), (8, 3, 1, 1), (7, 3, 1, 2), (28, 5, 2, 2), (8, 2, 0, 2), (10, 4, 1, 3), (32, 3, 1, 2)]

SIZE_MISTAKES = [
    (lambda n, k, p, s: (n - k) // s + 1,
     "the padding is missing: the kernel slides over the input with p zeros added on every side"),
    (lambda n, k, p, s: (n + p - k) // s + 1,
     "the padding counts once: p zeros are added on both sides, top and bottom (left and right)"),
    (lambda n, k, p, s: (n + 2 * p - k) // s,
     "one window short: count the first window too, the one at position 0"),
    (lambda n, k, p, s: (n + 2 * p - k + 1) // s,
     "the stride is off by one window: the + 1 counts the first window, after the division by the stride"),
    (lambda n, k, p, s: n + 2 * p - k + 1,
     "the stride is missing: the window moves s pixels at a time, so there are about s times fewer positions"),
    (lambda n, k, p, s: (n + 2 * p - k) // (s + 1) + 1,
     "the stride is off by one: the window starts every s pixels, not every s + 1"),
]


def check_output_size(name: str, mine) -> Verdict:
    """``mine(H, k, p, s)`` is the size of a convolution's output along one side: an input of ``H`` pixels, a
    ``k``-wide kernel, ``p`` zeros of padding on each side, stride ``s``. Tried on several sizes."""
    if not_done(mine):
        return not_done_yet(name)
    verdict = check_function_cases(name, mine, _output_size, SIZE_CASES)
    if verdict.passed or verdict.status == "not done" or not callable(mine):
        return verdict
    try:
        got = [mine(*case) for case in SIZE_CASES]
    except Exception:  # the generic verdict already says how the learner's function failed
        return verdict
    if any(isinstance(v, float) and not float(v).is_integer() for v in got):
        return Verdict(name, "fail", f"{verdict.message}; a size is a whole number of windows: round the division "
                                     "down (// in Python)", verdict.error)
    for wrong, hint in SIZE_MISTAKES:
        if all(g == wrong(*case) for g, case in zip(got, SIZE_CASES)):
            return Verdict(name, "fail", f"{verdict.message}; {hint}", verdict.error)
    return verdict


def check_conv2d(name: str, mine, x, weight, stride: int = 1, padding: int = 0) -> Verdict:
    """``mine(x, weight, stride, padding)`` is a one-channel conv2d: ``x`` of shape (H, W), ``weight`` (k, k), out
    (H_out, W_out). Compared with ``gl.nn.functional.conv2d`` on the same numbers."""
    from ..nn.functional import conv2d

    def reference(x, weight, stride, padding):
        return conv2d(x[None, None], weight[None, None], stride=stride, padding=padding)[0, 0]

    verdict = check_function(name, mine, reference, x, weight, stride, padding)
    if verdict.passed or verdict.status == "not done":
        return verdict
    try:
        got = _as_array(mine(x, weight, stride, padding), "check_conv2d", "your output", name)
    except Exception:
        return verdict
    flipped = reference(x, weight.flip(0).flip(1), stride, padding)
    hints = [(flipped, "yours is the convolution with the kernel flipped (turned by 180°), the mathematician's "
                       "convolution; a network's conv2d is a cross-correlation: it slides W as it is, unflipped")]
    if padding:
        hints += [(reference(x, weight, stride, 0), "the padding is missing: add p zeros on every side of x first"),
                  (reference(x, weight.flip(0).flip(1), stride, 0), "the padding is missing, and the kernel is "
                                                                      "flipped: a network's conv2d slides W unflipped")]
    if stride > 1:
        hints += [(reference(x, weight, 1, padding), "every position is there, the stride is not: the window moves "
                                                     "s pixels at a time (row i of the output starts at row i·s)")]
    return _named(name, verdict, got, hints)


def check_conv_weight_grad(name: str, mine, of, x, grad_output, stride: int = 1, padding: int = 0) -> Verdict:
    """``check_gradient`` of ∂L/∂W for ``Y = conv2d(x, W)`` (``of`` is W, after backward), one channel: ``x`` is
    (H, W) and ``grad_output`` ∂L/∂Y; a flipped or unpadded answer is named."""
    verdict = check_gradient(name, mine, of)
    if verdict.passed or verdict.status == "not done":
        return verdict
    got = _as_array(mine, "check_conv_weight_grad", "your answer", name)
    truth = _as_array(of.grad, "check_conv_weight_grad", "the truth", name)
    x_np, dy = (_as_array(v, "check_conv_weight_grad", "an input", name).astype(np.float64) for v in (x, grad_output))
    x_np = x_np.reshape(x_np.shape[-2:])
    hints = [(truth[..., ::-1, ::-1], "yours is the answer flipped (turned by 180°): dW[a, b] sums dY[i, j] · "
                                      "x[i + a, j + b], the input correlated with dY, with nothing flipped")]
    if padding:
        k = truth.shape[-1]
        unpadded = _correlate(x_np, dy.reshape(dy.shape[-2:]), k, stride)
        if unpadded is not None:
            hints.append((unpadded.reshape(truth.shape), "the padding is missing: the windows slid over x with p "
                                                         "zeros on every side, so dW reads the padded x"))
    return _named(name, verdict, got, hints)


def check_max_pool_grad(name: str, mine, of, grad_output, kernel_size: int) -> Verdict:
    """``check_gradient`` of ∂L/∂x for ``max_pool2d(x, kernel_size)`` (stride = kernel size, ``of`` is x after
    backward): a gradient spread over every element of its window, or averaged over it, is named."""
    verdict = check_gradient(name, mine, of)
    if verdict.passed or verdict.status == "not done":
        return verdict
    got = _as_array(mine, "check_max_pool_grad", "your answer", name)
    truth = _as_array(of.grad, "check_max_pool_grad", "the truth", name)
    dy = _as_array(grad_output, "check_max_pool_grad", "grad_output", name).astype(np.float64)
    k = kernel_size
    spread = np.zeros(truth.shape)
    up = dy.repeat(k, axis=-2).repeat(k, axis=-1)
    h, w = min(up.shape[-2], truth.shape[-2]), min(up.shape[-1], truth.shape[-1])
    spread[..., :h, :w] = up[..., :h, :w]
    hints = [(spread, "every element of each window got the window's whole gradient: only the largest one was "
                      "used in the forward, so only it gets the gradient; the others get 0"),
             (spread / (k * k), "each window's gradient is shared evenly among its elements: that is average "
                                "pooling's backward; max pooling routes it all to the element that won the max")]
    return _named(name, verdict, got, hints)


def _named(name: str, verdict: Verdict, got: np.ndarray, hints) -> Verdict:
    """The generic verdict, with the first mistake whose answer ``got`` matches named in its hint."""
    for wrong, hint in hints:
        wrong = _as_array(wrong, "check", "a mistake", name)
        if wrong.shape == got.shape and np.allclose(got, wrong, rtol=1e-6, atol=1e-9):
            return Verdict(name, "fail", f"{verdict.message}; {hint}", verdict.error)
    return verdict


def _output_size(n, k, p, s):
    return (n + 2 * p - k) // s + 1


def _correlate(x: np.ndarray, dy: np.ndarray, k: int, stride: int):
    """Σ_ij dy[i, j] · x[i·s + a, j·s + b] for every (a, b) of a k×k kernel; None where the windows do not fit."""
    rows, cols = dy.shape
    if (rows - 1) * stride + k > x.shape[0] or (cols - 1) * stride + k > x.shape[1]:
        return None
    out = np.zeros((k, k))
    for i in range(rows):
        for j in range(cols):
            out += dy[i, j] * x[i * stride:i * stride + k, j * stride:j * stride + k]
    return out

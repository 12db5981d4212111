"""Checked exercises about performance (lab 12): the FLOPs of a training step, the bytes a Linear saves for
backward, the peak memory of a chain cut into checkpointed segments, and the segment count that makes it least.

The FLOPs and the peak are models whose definitions the lab states (a matmul of m×k by k×n is 2·m·n·k FLOPs;
a segment keeps its input and recomputes its outputs); the saved bytes are measured, not modelled: a real
``nn.Linear`` is profiled and its node's saved bytes read, so that check is the engine's word.
"""

from __future__ import annotations

import math

from .exercises import Verdict, answer_number, call_learner, check_name, not_done, not_done_yet

FLOAT32_BYTES = 4
SAVED_BYTES_CASES = ((32, 20, 64), (8, 64, 10), (256, 64, 256))  # (batch, n_in, n_out)
PEAK_CASES = ((16, 1), (16, 4), (16, 16), (10, 3), (33, 6), (7, 2), (1, 1))  # (n layers, k segments)
SEGMENT_CASES = (1, 9, 16, 4, 12, 33, 50, 100, 2)  # n layers (where only one count is least first)


def matmul_flops(sizes, batch: int) -> int:
    """FLOPs of a forward's matmuls through Linears of widths ``sizes`` (in, hidden..., out) on ``batch`` rows."""
    return sum(2 * batch * a * b for a, b in zip(sizes[:-1], sizes[1:]))


def check_step_flops(name: str, mine, *, sizes, batch: int) -> Verdict:
    """Is ``mine`` the matmul FLOPs of one training step (forward and backward) of an MLP with Linear widths
    ``sizes`` on ``batch`` rows? Every Linear counts three matmuls: the forward's, and backward's two."""
    check_name("check_step_flops", name)
    sizes = [int(s) for s in sizes]
    if len(sizes) < 2 or min(sizes) < 1 or batch < 1:
        raise ValueError(f"check_step_flops({name!r}, sizes=..., batch=...): at least two positive widths and a "
                         f"positive batch, got sizes={sizes}, batch={batch}")
    value = answer_number(mine, name)
    if isinstance(value, Verdict):
        return value
    forward = matmul_flops(sizes, batch)
    truth = 3 * forward
    first_input_grad = 2 * batch * sizes[0] * sizes[1]
    if value == truth:
        return Verdict(name, "pass", f"exact: {value / forward:g}× the forward's matmuls", 0.0)
    if value == truth - first_input_grad:
        return Verdict(name, "pass", "exact, without the first layer's input gradient (an engine skips it when the "
                                     "input needs no gradient; the usual count, 3× forward, includes it)", 0.0)
    ratio = value / truth
    error = abs(ratio - 1)
    slips = ((1 / 3, "that is the forward alone: backward does two matmuls per Linear (one for the gradient of its "
                     "input, one for its weight's), each as large as the forward's"),
             (2 / 3, "backward has two matmuls per Linear, not one: the gradient of the input and of the weight"),
             (1 / 2, "a multiply-add is two FLOPs (a multiply and an add): count both"),
             (1 / 6, "those are the forward's multiply-adds: a multiply-add is two FLOPs, and backward adds two "
                     "matmuls per Linear"))
    for factor, hint in slips:
        if math.isclose(ratio, factor, rel_tol=0.02):
            return Verdict(name, "fail", hint, error)
    if 1 < ratio < 1.05:
        return Verdict(name, "fail", "a little too many: count the matmuls only (the bias adds and the activations "
                                     "are a few per cent)", error)
    way = "too many" if ratio > 1 else "too few"
    return Verdict(name, "fail", f"{way} by a factor of about {max(ratio, 1 / ratio):.2g}: a matmul of m×k by k×n "
                                 "is 2·m·n·k FLOPs, and each Linear does three of them in a step", error)


def measured_linear_saved_bytes(batch: int, n_in: int, n_out: int) -> int:
    """The bytes a float32 ``nn.Linear(n_in, n_out)``'s node saved for backward on a batch, read from a profile."""
    from ..nn import Linear
    from ..random import randn
    from .profiling import profile

    layer, x = Linear(n_in, n_out), randn(batch, n_in)
    rows = [row for row in profile(lambda: layer(x).sum()).rows() if row["label"] == "Linear"]
    return int(rows[0]["saved_bytes"])


def check_saved_bytes(name: str, mine) -> Verdict:
    """Does ``mine(batch, n_in, n_out)`` give the bytes a float32 Linear's node saves for backward? Each case is
    measured by profiling a real ``nn.Linear``; a hint names the tensor counted or forgotten."""
    check_name("check_saved_bytes", name)
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function of (batch, n_in, n_out), got a {type(mine).__name__}")
    for number, (batch, n_in, n_out) in enumerate(SAVED_BYTES_CASES, 1):
        try:
            got = mine(batch, n_in, n_out)
        except Exception as error:  # the learner's code: its failure is the verdict
            return Verdict(name, "fail", f"your function raised {type(error).__name__}: {error}")
        value = answer_number(got, name)
        if isinstance(value, Verdict):
            return value
        truth = measured_linear_saved_bytes(batch, n_in, n_out)
        if value == truth:
            continue
        where = f"case {number} of {len(SAVED_BYTES_CASES)}, Linear({n_in}, {n_out}) on a batch of {batch}"
        x_bytes, w_bytes = FLOAT32_BYTES * batch * n_in, FLOAT32_BYTES * n_in * n_out
        slips = ((truth / FLOAT32_BYTES, "that counts numbers, not bytes: a float32 is 4 bytes"),
                 (truth + FLOAT32_BYTES * batch * n_out, "Linear does not save its output: the gradients of "
                                                         "x @ Wᵀ + b need x and W, not the result"),
                 (x_bytes, "the input alone: the gradient of the input, g @ W, needs the weight too"),
                 (w_bytes, "the weight alone: the weight's gradient, gᵀ @ x, needs the input"),
                 (truth + FLOAT32_BYTES * n_out, "the bias's gradient is g summed over the batch: it needs nothing "
                                                 "saved"))
        for wrong, hint in slips:
            if value == wrong:
                return Verdict(name, "fail", f"{where}: {hint}", abs(value / truth - 1))
        way = "more" if value > truth else "fewer"
        return Verdict(name, "fail", f"{where}: {way} bytes than the node saved; which tensors do the two gradients "
                                     "of backward read, and how big is each?", abs(value / truth - 1))
    return Verdict(name, "pass", f"exact on all {len(SAVED_BYTES_CASES)} Linears, as profiled", 0.0)


def peak_with_segments(n: int, k: int) -> int:
    """The lab's model: k segments of an n-layer chain keep k segment inputs, and backward of a segment
    recomputes and holds its ⌈n/k⌉ outputs; in units of one layer's output."""
    return k + math.ceil(n / k)


def best_segment_count(n: int) -> int:
    """The fewest segments with the least ``peak_with_segments(n, k)`` (fewer segments recompute less)."""
    return min(range(1, n + 1), key=lambda k: (peak_with_segments(n, k), k))


def _call(mine, name, *args):
    """The learner's ``mine(*args)`` as a number, or a Verdict saying why not (not done, raised, not a number)."""
    got = call_learner(mine, args, name)
    return got if isinstance(got, Verdict) else answer_number(got, name)


def check_peak_memory(name: str, mine) -> Verdict:
    """Does ``mine(n, k)`` give the peak activations (in layer outputs) of an n-layer chain in k checkpointed
    segments, as the lab models it? Hints name the part of the peak left out."""
    check_name("check_peak_memory", name)
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function of (n, k), got a {type(mine).__name__}")
    for number, (n, k) in enumerate(PEAK_CASES, 1):
        value = _call(mine, name, n, k)
        if isinstance(value, Verdict):
            return value
        truth = peak_with_segments(n, k)
        if value == truth:
            continue
        where = f"case {number} of {len(PEAK_CASES)}, n = {n} layers in k = {k} segments"
        if value in (math.ceil(n / k), n / k):
            hint = "that is one segment's recompute: the forward also keeps every segment's input until backward " \
                   "reaches it"
        elif value == k:
            hint = "those are the segments' inputs only: backward of a segment runs its forward again and holds " \
                   "its outputs"
        elif value == k + n / k:
            hint = "a segment holds whole layers: when k does not divide n, the longest segment has more than n/k"
        elif value in (n + 1, n):
            hint = "that is no checkpointing: with k segments, the forward keeps only each segment's input"
        else:
            hint = f"{'too many' if value > truth else 'too few'}: what is alive while backward works on the " \
                   "longest segment?"
        return Verdict(name, "fail", f"{where}: {hint}", abs(value / truth - 1))
    return Verdict(name, "pass", f"exact on all {len(PEAK_CASES)} cases", 0.0)


def check_segment_count(name: str, mine) -> Verdict:
    """Does ``mine(n)`` give the segment count with the least peak for an n-layer chain (the fewest among
    equal peaks)? Each answer is judged by ``peak_with_segments``; hints say how far its peak is from the least."""
    check_name("check_segment_count", name)
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function of n, got a {type(mine).__name__}")
    for number, n in enumerate(SEGMENT_CASES, 1):
        value = _call(mine, name, n)
        if isinstance(value, Verdict):
            return value
        truth = best_segment_count(n)
        if value == truth:
            continue
        where = f"case {number} of {len(SEGMENT_CASES)}, n = {n} layers"
        if value != int(value) or not 1 <= value <= n:
            return Verdict(name, "fail", f"{where}: a segment count is a whole number from 1 to n, got {value:g}")
        k, least = int(value), peak_with_segments(n, truth)
        peak = peak_with_segments(n, k)
        if peak == least:
            hint = "the least peak, but a smaller k gives the same peak and recomputes less (every segment but the " \
                   "last runs its forward twice)"
        elif k == 1:
            hint = f"one segment is no checkpointing: a peak of {peak}"
        else:
            hint = f"a peak of {peak} layer outputs; another count does better"
        return Verdict(name, "fail", f"{where}: {hint}", abs(peak / least - 1))
    return Verdict(name, "pass", f"the least peak, with the fewest segments, on all {len(SEGMENT_CASES)} cases", 0.0)

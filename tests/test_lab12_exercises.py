"""Lab 12's exercises (labs/12-performance.ipynb): the right answer passes its check, and each plausible wrong
answer fails with the hint that points at its mistake; an unsolved cell is "not done yet"."""

import math

import pytest

from gradlab import lab
from gradlab.lab.performance_exercises import measured_linear_saved_bytes

SIZES, BATCH = [64, 256, 256, 10], 256  # the lab's MLP and batch


def forward_flops(sizes, batch):
    return sum(2 * batch * a * b for a, b in zip(sizes[:-1], sizes[1:]))


# --- exercise 1: the FLOPs of a training step ---------------------------------------------------------------------

def test_step_flops_right_answer_passes_and_so_does_skipping_the_first_input_gradient():
    total = 3 * forward_flops(SIZES, BATCH)
    assert total == 3 * 2 * 256 * (64 * 256 + 256 * 256 + 256 * 10)  # written out: 3 matmuls of 2·m·n·k per Linear
    assert lab.check_step_flops("flops", total, sizes=SIZES, batch=BATCH).passed
    skipped = lab.check_step_flops("flops", total - 2 * 256 * 64 * 256, sizes=SIZES, batch=BATCH)
    assert skipped.passed and "first layer's input gradient" in skipped.message


@pytest.mark.parametrize("factor, words", [(1 / 3, "two matmuls per Linear"),
                                           (2 / 3, "two matmuls per Linear, not one"),
                                           (1 / 2, "a multiply-add is two FLOPs"), (1 / 6, "multiply-adds")])
def test_step_flops_plausible_slips_get_their_hint(factor, words):
    wrong = round(3 * forward_flops(SIZES, BATCH) * factor)
    verdict = lab.check_step_flops("flops", wrong, sizes=SIZES, batch=BATCH)
    assert verdict.status == "fail" and words in verdict.message, verdict


def test_step_flops_with_the_bias_adds_is_a_little_too_many_and_unsolved_is_not_done():
    with_bias = 3 * forward_flops(SIZES, BATCH) + BATCH * sum(SIZES[1:])
    verdict = lab.check_step_flops("flops", with_bias, sizes=SIZES, batch=BATCH)
    assert not verdict and "count the matmuls only" in verdict.message
    assert lab.check_step_flops("flops", ..., sizes=SIZES, batch=BATCH).status == "not done"
    assert "expected one number" in lab.check_step_flops("flops", "a lot", sizes=SIZES, batch=BATCH).message


# --- exercise 2: the bytes a Linear saves for backward ------------------------------------------------------------

def test_saved_bytes_is_measured_from_a_profile_of_a_real_linear():
    assert measured_linear_saved_bytes(32, 20, 64) == 4 * (32 * 20 + 20 * 64)  # the input and the weight, float32


def test_saved_bytes_right_answer_passes():
    verdict = lab.check_saved_bytes("linear bytes", lambda b, i, o: 4 * (b * i + i * o))
    assert verdict.passed, verdict


@pytest.mark.parametrize("wrong, words", [
    (lambda b, i, o: b * i + i * o, "a float32 is 4 bytes"),
    (lambda b, i, o: 4 * (b * i + i * o + b * o), "does not save its output"),
    (lambda b, i, o: 4 * b * i, "needs the weight too"),
    (lambda b, i, o: 4 * i * o, "needs the input"),
    (lambda b, i, o: 4 * (b * i + i * o + o), "needs nothing saved"),
    (lambda b, i, o: 4 * (b * i + i * o) * 2, "which tensors do the two gradients"),
])
def test_saved_bytes_plausible_slips_get_their_hint(wrong, words):
    verdict = lab.check_saved_bytes("linear bytes", wrong)
    assert verdict.status == "fail" and words in verdict.message, verdict


def test_saved_bytes_unsolved_and_broken_answers():
    assert lab.check_saved_bytes("linear bytes", ...).status == "not done"
    assert lab.check_saved_bytes("linear bytes", lambda b, i, o: ...).status == "not done"
    assert "raised ZeroDivisionError" in lab.check_saved_bytes("linear bytes", lambda b, i, o: 1 / 0).message
    assert "expected a function" in lab.check_saved_bytes("linear bytes", 1234).message


# --- exercise 3: the peak with k segments -------------------------------------------------------------------------

def test_peak_memory_right_answer_passes():
    assert lab.check_peak_memory("peak", lambda n, k: k + math.ceil(n / k)).passed
    assert lab.check_peak_memory("peak", lambda n, k: k + -(-n // k)).passed


@pytest.mark.parametrize("wrong, words", [
    (lambda n, k: math.ceil(n / k), "keeps every segment's input"),
    (lambda n, k: k, "runs its forward again"),
    (lambda n, k: k + n / k, "whole layers"),
    (lambda n, k: k + n // k, "too few"),
    (lambda n, k: n + 1, "no checkpointing"),
])
def test_peak_memory_plausible_slips_get_their_hint(wrong, words):
    verdict = lab.check_peak_memory("peak", wrong)
    assert verdict.status == "fail" and words in verdict.message, verdict


# --- exercise 4: the segment count with the least peak ------------------------------------------------------------

def test_segment_count_right_answers_pass():
    def by_search(n):
        return min(range(1, n + 1), key=lambda k: (k + math.ceil(n / k), k))
    assert lab.check_segment_count("k", by_search).passed
    assert [by_search(n) for n in (9, 16, 33, 50)] == [3, 4, 5, 5]  # √n on squares; the fewest of equal peaks


@pytest.mark.parametrize("wrong, words", [
    (lambda n: round(math.sqrt(n)), "a smaller k gives the same peak"),
    (lambda n: math.floor(math.sqrt(n)), "a smaller k gives the same peak"),
    (lambda n: 1, "no checkpointing"),
    (lambda n: n, "another count does better"),
    (lambda n: math.sqrt(n), "whole number"),
    (lambda n: min(range(n, 0, -1), key=lambda k: k + math.ceil(n / k)), "a smaller k gives the same peak"),
])
def test_segment_count_plausible_slips_get_their_hint(wrong, words):
    verdict = lab.check_segment_count("k", wrong)
    assert verdict.status == "fail" and words in verdict.message, verdict
    assert lab.check_segment_count("k", ...).status == "not done"

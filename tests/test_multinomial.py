"""multinomial: shapes and dtype, frequencies over many draws, no repeats without replacement, seeds, errors."""

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl

P = [1.0, 2.0, 3.0, 4.0, 0.0]  # unnormalised; the last category can never be drawn


def chi_square(counts, probs):
    """Pearson's statistic of observed counts against probabilities (categories with p > 0)."""
    counts, probs = np.asarray(counts, dtype=np.float64), np.asarray(probs, dtype=np.float64)
    expected = counts.sum() * probs / probs.sum()
    keep = expected > 0
    return float((((counts - expected) ** 2)[keep] / expected[keep]).sum())


# chi-square with 3 degrees of freedom exceeds 25 with probability 1.6e-5 (the seeds make it deterministic anyway)
CHI2_LIMIT = 25.0


# --- shapes, dtype, range ---------------------------------------------------------------------------


@pytest.mark.parametrize("replacement", [True, False])
@pytest.mark.parametrize("dtype", [gl.float16, gl.float32, gl.float64])
def test_shape_dtype_and_range(replacement, dtype):
    probs = gl.tensor([[0.2, 0.3, 0.5, 0.1], [1.0, 1.0, 1.0, 1.0]], dtype=dtype)
    out = probs.multinomial(3, replacement)
    assert out.shape == (2, 3) and out.dtype is gl.int64 and out.device == probs.device
    assert ((out >= 0) & (out < 4)).all()
    vector = gl.multinomial(probs[0], 4, replacement)
    assert vector.shape == (4,) and vector.dtype is gl.int64


def test_an_input_that_requires_grad_gives_samples_without_a_graph():
    probs = gl.tensor([0.5, 0.5], dtype=gl.float64, requires_grad=True)
    out = probs.softmax(0).multinomial(2)
    assert not out.requires_grad and out.grad_fn is None


def test_no_rows_give_no_samples():
    assert gl.multinomial(gl.ones(0, 3), 2).shape == (0, 2)


# --- statistics over many draws ---------------------------------------------------------------------


def test_frequencies_with_replacement_follow_the_probabilities():
    gl.manual_seed(0)
    draws = gl.multinomial(gl.tensor(P), 40000, replacement=True).numpy()
    counts = np.bincount(draws, minlength=len(P))
    assert counts[-1] == 0
    assert chi_square(counts, P) < CHI2_LIMIT


def test_each_row_draws_from_its_own_distribution():
    gl.manual_seed(1)
    draws = gl.tensor([[1.0, 0.0, 0.0, 3.0], [0.0, 5.0, 5.0, 0.0]]).multinomial(4000, True).numpy()
    assert set(draws[0]) == {0, 3} and set(draws[1]) == {1, 2}
    assert chi_square(np.bincount(draws[0], minlength=4), [1, 0, 0, 3]) < CHI2_LIMIT
    assert chi_square(np.bincount(draws[1], minlength=4), [0, 5, 5, 0]) < CHI2_LIMIT


def test_without_replacement_the_first_and_second_draws_follow_sequential_sampling():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    gl.manual_seed(2)
    draws = gl.tensor(np.tile(p * 7, (20000, 1))).multinomial(2).numpy()  # scale: unnormalised is fine
    assert (draws[:, 0] != draws[:, 1]).all()
    # P(second = j) = sum over i != j of p_i * p_j / (1 - p_i): j drawn from what is left after i
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(4) if i != j) for j in range(4)])
    assert chi_square(np.bincount(draws[:, 0], minlength=4), p) < CHI2_LIMIT
    assert chi_square(np.bincount(draws[:, 1], minlength=4), second) < CHI2_LIMIT


def test_without_replacement_every_category_once_when_all_are_drawn():
    gl.manual_seed(3)
    draws = gl.rand(50, 6).multinomial(6).numpy()
    assert (np.sort(draws, axis=1) == np.arange(6)).all()


def test_without_replacement_zero_probabilities_come_only_after_the_others():
    gl.manual_seed(4)
    draws = gl.tensor([0.0, 1.0, 0.0, 2.0]).expand(200, 4).multinomial(2).numpy()
    assert (np.sort(draws, axis=1) == [1, 3]).all()


def test_with_replacement_zero_probabilities_are_never_drawn():
    gl.manual_seed(5)
    draws = gl.tensor([0.0, 1e-3, 0.0, 0.0, 1.0, 0.0]).multinomial(5000, True).numpy()
    assert set(np.unique(draws)) <= {1, 4}


# --- seeds ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("replacement", [True, False])
def test_manual_seed_reproduces_the_draws(replacement):
    probs = gl.tensor([[0.1, 0.2, 0.3, 0.4, 0.5, 0.6]] * 3)
    gl.manual_seed(42)
    first = gl.multinomial(probs, 5, replacement).tolist()
    gl.manual_seed(42)
    assert probs.multinomial(5, replacement).tolist() == first
    gl.manual_seed(43)
    assert probs.multinomial(5, replacement).tolist() != first


@pytest.mark.parametrize("replacement", [True, False])
def test_a_generator_reproduces_the_draws_and_leaves_the_default_one_alone(replacement):
    probs = gl.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8])
    gl.manual_seed(0)
    expected_next = gl.rand(3).tolist()
    gl.manual_seed(0)
    first = probs.multinomial(6, replacement, generator=gl.Generator().manual_seed(9)).tolist()
    again = gl.multinomial(probs, 6, replacement, generator=gl.Generator().manual_seed(9)).tolist()
    assert first == again
    assert gl.rand(3).tolist() == expected_next


# --- errors -----------------------------------------------------------------------------------------


ERRORS = [
    ("negative probability", [1.0, -1.0, 2.0], 2, True, RuntimeError, "probability entry < 0"),
    ("negative, without replacement", [1.0, -1.0, 2.0], 1, False, RuntimeError, "probability entry < 0"),
    ("infinity", [1.0, float("inf")], 2, True, RuntimeError, "infinity or NaN"),
    ("nan", [1.0, float("nan")], 1, False, RuntimeError, "infinity or NaN"),
    ("all-zero vector", [0.0, 0.0], 1, False, RuntimeError, r"sum of probabilities <= 0"),
    ("an all-zero row", [[0.0, 0.0], [1.0, 1.0]], 2, True, RuntimeError, r"sum of probabilities <= 0"),
    ("too many without replacement", [0.2, 0.3, 0.5], 4, False, RuntimeError,
     r"cannot sample n_sample > prob_dist.size\(-1\) samples without replacement"),
    ("zero samples", [0.2, 0.8], 0, True, RuntimeError, "cannot sample n_sample <= 0 samples"),
    ("negative samples", [0.2, 0.8], -1, False, RuntimeError, "cannot sample n_sample <= 0 samples"),
    ("0-d input", 1.0, 1, True, RuntimeError, "prob_dist must be 1 or 2 dim"),
    ("3-d input", [[[1.0, 1.0]]], 1, True, RuntimeError, "prob_dist must be 1 or 2 dim"),
    ("integer input", [1, 2], 1, True, RuntimeError, "only supports floating-point dtypes for input, got: int64"),
    ("float num_samples", [0.2, 0.8], 2.0, True, TypeError, "'num_samples' must be int, not float"),
]


@pytest.mark.parametrize("name, probs, n, replacement, kind, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_input_is_explained(name, probs, n, replacement, kind, message):
    with pytest.raises(kind, match=message):
        gl.tensor(probs).multinomial(n, replacement)


@requires_torch
@pytest.mark.parametrize("name, probs, n, replacement, kind, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_torch_rejects_the_same_inputs_with_the_same_exception_type(name, probs, n, replacement, kind, message):
    with pytest.raises(kind):
        torch.tensor(probs).multinomial(n, replacement)


@requires_torch
def test_torch_and_gradlab_agree_on_shapes_and_dtype():
    probs = [[0.2, 0.3, 0.5], [1.0, 0.0, 1.0]]
    for n, replacement in [(1, False), (2, False), (3, False), (7, True)]:
        ours = gl.tensor(probs).multinomial(n, replacement)
        theirs = torch.tensor(probs).multinomial(n, replacement)
        assert ours.shape == tuple(theirs.shape) and str(theirs.dtype) == "torch.int64" and ours.dtype is gl.int64

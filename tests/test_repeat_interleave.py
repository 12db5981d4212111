"""repeat_interleave: int and tensor repeats, dim=None, output_size, the repeats-only form, gradients, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers import assert_close, leaf, noncontiguous_leaf, randn, requires_torch, to_torch, torch

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck

A = randn(3, 4, 2)


def long(values):
    return gl.tensor(values, dtype=gl.int64)


# --- forward against numpy's repeat ---------------------------------------------------------------

# (name, repeats for gradlab, repeats for numpy, dim)
CASES = [
    ("int, flattened", 2, 2, None),
    ("int along dim 0", 3, 3, 0),
    ("int along dim 1", 2, 2, 1),
    ("int along the last dim, negative", 2, 2, -1),
    ("int 1", 1, 1, 1),
    ("int 0", 0, 0, 1),
    ("numpy int", np.int64(2), 2, 0),
    ("tensor along dim 0", long([1, 0, 2]), [1, 0, 2], 0),
    ("tensor along dim 1", long([2, 1, 0, 3]), [2, 1, 0, 3], 1),
    ("tensor along dim -1", long([0, 2]), [0, 2], -1),
    ("int32 tensor", gl.tensor([3, 1, 1], dtype=gl.int32), [3, 1, 1], 0),
    ("one-element tensor, broadcast", long([2]), 2, 1),
    ("0-d tensor, broadcast", long(3), 3, 2),
    ("all-zero tensor", long([0, 0, 0]), [0, 0, 0], 0),
    ("tensor, flattened", long(np.arange(24) % 3), np.arange(24) % 3, None),
]


@pytest.mark.parametrize("name, repeats, np_repeats, dim", CASES, ids=[c[0] for c in CASES])
def test_forward_matches_numpy_repeat(name, repeats, np_repeats, dim):
    out = gl.tensor(A).repeat_interleave(repeats, dim)
    assert out.dtype is gl.float64
    assert_close(out, np.repeat(A, np_repeats, axis=dim))


def test_functional_and_method_agree_and_keep_integer_and_bool_dtypes():
    ints = gl.tensor([[1, 2], [3, 4]])
    out = gl.repeat_interleave(ints, long([1, 2]), dim=0)
    assert out.dtype is gl.int64 and out.tolist() == [[1, 2], [3, 4], [3, 4]]
    flags = gl.tensor([True, False])
    assert flags.repeat_interleave(2).tolist() == [True, True, False, False]
    assert flags.repeat_interleave(2).dtype is gl.bool


def test_a_0d_tensor_repeats_into_a_vector():
    out = gl.tensor(3.0).repeat_interleave(2)
    assert out.shape == (2,) and out.tolist() == [3.0, 3.0]


def test_output_size_that_matches_is_accepted():
    x = gl.tensor(A)
    assert_close(x.repeat_interleave(long([1, 0, 2]), 0, output_size=3), np.repeat(A, [1, 0, 2], axis=0))
    assert_close(x.repeat_interleave(2, 1, output_size=8), np.repeat(A, 2, axis=1))


def test_int_repeats_on_a_noncontiguous_input():
    x = noncontiguous_leaf(A[:, :, 0], requires_grad=False)
    assert_close(x.repeat_interleave(2, 0), np.repeat(A[:, :, 0], 2, axis=0))
    assert_close(x.t().repeat_interleave(long([1, 2, 0]), 1), np.repeat(A[:, :, 0].T, [1, 2, 0], axis=1))


# --- the repeats-only form: the index that does the repeating -------------------------------------


@pytest.mark.parametrize("counts", [[2, 0, 1], [1, 1, 1], [0, 0, 4], [0, 0], [5], []])
def test_repeats_alone_give_the_repeated_positions(counts):
    out = gl.repeat_interleave(long(counts))
    expected = np.repeat(np.arange(len(counts)), counts)
    assert out.dtype is gl.int64 and out.shape == expected.shape
    assert out.tolist() == expected.tolist()


def test_repeats_alone_keep_int32():
    out = gl.repeat_interleave(gl.tensor([2, 0, 1], dtype=gl.int32), output_size=3)
    assert out.dtype is gl.int32 and out.tolist() == [0, 0, 2]


@settings(max_examples=25, deadline=None)
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
def test_random_shapes_and_repeats_match_numpy(shape, data):
    x = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    dim = data.draw(st.integers(-len(shape), len(shape) - 1))
    counts = data.draw(st.lists(st.integers(0, 3), min_size=shape[dim], max_size=shape[dim]))
    assert_close(gl.tensor(x).repeat_interleave(long(counts), dim), np.repeat(x, counts, axis=dim))
    times = data.draw(st.integers(0, 3))
    assert_close(gl.tensor(x).repeat_interleave(times, dim), np.repeat(x, times, axis=dim))
    assert_close(gl.tensor(x).repeat_interleave(times), np.repeat(x, times))


# --- gradients: each copy's gradient adds back to the element it copied ---------------------------


def test_gradient_sums_the_copies():
    x = leaf(A[:, :, 0])
    g = randn(3, 7, seed=1)
    x.repeat_interleave(long([3, 0, 1, 3]), 1).backward(gl.tensor(g))
    expected = np.stack([g[:, 0:3].sum(1), np.zeros(3), g[:, 3], g[:, 4:7].sum(1)], axis=1)
    assert_close(x.grad, expected)

    x = leaf(A[:, :, 0])
    g = randn(3, 8, seed=2)
    x.repeat_interleave(2, 1).backward(gl.tensor(g))
    assert_close(x.grad, g[:, 0::2] + g[:, 1::2])


@pytest.mark.parametrize("repeats, dim", [(2, None), (3, 0), (2, -1), (long([2, 0, 1, 3]), 1),
                                          (long([1, 3, 2]), 0), (long(2), 2)])
def test_gradcheck_and_gradgradcheck(repeats, dim):
    x = leaf(A)
    fn = lambda t: t.repeat_interleave(repeats, dim)
    assert gradcheck(fn, (x,))
    assert gradgradcheck(fn, (x,))


def test_zero_repeats_give_an_empty_output_and_a_zero_gradient():
    x = leaf(A)
    assert gradcheck(lambda t: t.repeat_interleave(0, 1), (x,))
    x.repeat_interleave(long([0, 0, 0]), 0).sum().backward()
    assert_close(x.grad, np.zeros_like(A))


def test_gradcheck_on_noncontiguous_inputs():
    x = noncontiguous_leaf(A[:, :, 1])
    assert gradcheck(lambda t: t.repeat_interleave(2, 0), (x,))
    assert gradcheck(lambda t: gl.repeat_interleave(t, long([0, 1, 2, 1]), dim=1), (x,))
    assert gradgradcheck(lambda t: gl.repeat_interleave(t, long([0, 1, 2, 1]), dim=1) ** 2, (x,))


# --- against PyTorch --------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("repeats, dim", [(2, None), (3, 1), (0, 0), ([1, 0, 2], 0), ([2, 1, 0, 1], -2), ([2], 2)])
def test_forward_and_gradient_match_torch(repeats, dim):
    g = randn(*np.repeat(A, repeats if isinstance(repeats, int) else repeats, axis=dim).shape, seed=3)
    ours = leaf(A)
    mine = gl.tensor(repeats) if isinstance(repeats, list) else repeats
    out = ours.repeat_interleave(mine, dim)
    out.backward(gl.tensor(g))
    theirs = to_torch(A, requires_grad=True)
    expected = theirs.repeat_interleave(torch.tensor(repeats) if isinstance(repeats, list) else repeats, dim)
    expected.backward(to_torch(g))
    assert_close(out, expected)
    assert_close(ours.grad, theirs.grad)


@requires_torch
def test_repeats_alone_match_torch():
    counts = [3, 0, 2, 1]
    assert gl.repeat_interleave(long(counts)).tolist() == torch.repeat_interleave(torch.tensor(counts)).tolist()


# --- errors -------------------------------------------------------------------------------------------


ERRORS = [
    ("negative int", lambda x: x.repeat_interleave(-1), RuntimeError, "Repeats must be non-negative"),
    ("negative count", lambda x: x.repeat_interleave(long([1, -1, 2]), 0), RuntimeError,
     "repeats can not be negative"),
    ("wrong count", lambda x: x.repeat_interleave(long([1, 2]), 0), RuntimeError,
     r"repeats must have the same size as input along dim, but got repeats.size\(0\) = 2 and input.size\(0\) = 3"),
    ("2-d repeats", lambda x: x.repeat_interleave(long([[1, 2, 3]]), 0), RuntimeError,
     "repeats must be 0-dim or 1-dim tensor"),
    ("float repeats tensor", lambda x: x.repeat_interleave(gl.tensor([1.0, 2.0, 1.0]), 0), RuntimeError,
     "repeats has to be Long or Int tensor"),
    ("float repeats", lambda x: x.repeat_interleave(2.5), TypeError, "must be an int or an int tensor, not float"),
    ("list repeats", lambda x: x.repeat_interleave([1, 2, 3], 0), TypeError, "not list"),
    ("dim out of range", lambda x: x.repeat_interleave(2, 3), IndexError, "Dimension out of range"),
    ("0-d with a dim", lambda x: x[0, 0, 0].repeat_interleave(2, 0), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    ("output_size for int repeats", lambda x: x.repeat_interleave(2, 0, output_size=5), RuntimeError,
     "Invalid output_size, expected 6 but got 5"),
    ("output_size for tensor repeats", lambda x: x.repeat_interleave(long([1, 1, 1]), 0, output_size=4),
     RuntimeError, "allocated size does not match required size"),
    ("repeats alone, 0-d", lambda x: gl.repeat_interleave(long(3)), RuntimeError,
     "only accept 1D vector as repeat"),
    ("repeats alone, not a tensor", lambda x: gl.repeat_interleave([1, 2]), TypeError, "must be a Tensor"),
]


@pytest.mark.parametrize("name, call, kind, message", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_input_is_explained(name, call, kind, message):
    with pytest.raises(kind, match=message):
        call(gl.tensor(A))

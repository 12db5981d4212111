"""Bitwise and logical ops with their operators, comparisons as functions, isclose/allclose/equal/isin."""

import operator

import numpy as np
import pytest

import gradlab as gl
from helpers import leaf, requires_torch, torch

INTS = ([12, -7, 5, 0], [10, 3, -2, 7])
SHIFTS = ([12, -7, 5, 1], [1, 2, 0, 63])

# name: (function, operator or None, NumPy reference)
BITWISE = {
    "bitwise_and": (gl.bitwise_and, operator.and_, np.bitwise_and),
    "bitwise_or": (gl.bitwise_or, operator.or_, np.bitwise_or),
    "bitwise_xor": (gl.bitwise_xor, operator.xor, np.bitwise_xor),
    "bitwise_left_shift": (gl.bitwise_left_shift, operator.lshift, np.left_shift),
    "bitwise_right_shift": (gl.bitwise_right_shift, operator.rshift, np.right_shift),
}


@pytest.mark.parametrize("name", BITWISE)
@pytest.mark.parametrize("dtype", [gl.int32, gl.int64])
def test_bitwise_ops_on_integers_match_numpy_in_every_form(name, dtype):
    fn, op, reference = BITWISE[name]
    a, b = SHIFTS if "shift" in name else INTS
    x, y = gl.tensor(a, dtype=dtype), gl.tensor(b, dtype=dtype)
    expected = reference(np.array(a, dtype=dtype.name), np.array(b, dtype=dtype.name))
    for out in (fn(x, y), getattr(x, name)(y), op(x, y)):
        assert out.dtype is dtype
        np.testing.assert_array_equal(out.numpy(), expected)
    # a number on the right, and on the left
    np.testing.assert_array_equal(op(x, 3).numpy(), reference(np.array(a, dtype=dtype.name), 3))
    np.testing.assert_array_equal(op(3, y).numpy(), reference(3, np.array(b, dtype=dtype.name)))
    np.testing.assert_array_equal(fn(3, y).numpy(), reference(3, np.array(b, dtype=dtype.name)))
    z = x.clone()
    assert getattr(z, name + "_")(y) is z
    np.testing.assert_array_equal(z.numpy(), expected)


@pytest.mark.parametrize("op, name", [(operator.iand, "bitwise_and"), (operator.ior, "bitwise_or"),
                                      (operator.ixor, "bitwise_xor"), (operator.ilshift, "bitwise_left_shift"),
                                      (operator.irshift, "bitwise_right_shift")])
def test_in_place_operators_write_into_the_tensor(op, name):
    x = gl.tensor([12, 5, 7])
    same, version = x, x._version[0]
    x = op(x, 1)
    assert x is same and x._version[0] == version + 1
    assert x.tolist() == BITWISE[name][2](np.array([12, 5, 7]), 1).tolist()


@requires_torch
def test_bitwise_matches_torch_including_bools_and_wide_shifts():
    a, b = torch.tensor([True, False, True]), torch.tensor([True, True, False])
    ga, gb = gl.tensor([True, False, True]), gl.tensor([True, True, False])
    for op in (operator.and_, operator.or_, operator.xor):
        assert op(ga, gb).tolist() == op(a, b).tolist() and op(ga, gb).dtype is gl.bool
        assert op(ga, True).tolist() == op(a, True).tolist()
    assert (~ga).tolist() == (~a).tolist()
    i = [12, -7, 5]
    assert (~gl.tensor(i)).tolist() == (~torch.tensor(i)).tolist()
    assert (gl.tensor(i) << 70).tolist() == (torch.tensor(i) << 70).tolist()  # shifted past the width: 0
    assert (gl.tensor(i) >> 70).tolist() == (torch.tensor(i) >> 70).tolist()  # or the sign
    assert (gl.tensor(i) >> -1).tolist() == (torch.tensor(i) >> -1).tolist()
    assert gl.bitwise_not(gl.tensor(i, dtype=gl.int32)).dtype is gl.int32


@pytest.mark.parametrize("call, error, message", [
    (lambda: gl.ones(2) & gl.ones(2), NotImplementedError, r"bitwise_and: \"bitwise_and\" not implemented for 'Float'"),
    (lambda: gl.bitwise_or(gl.ones(2, dtype=gl.float64), 1), NotImplementedError, "not implemented for 'Double'"),
    (lambda: gl.tensor([1, 2]) << 1.5, NotImplementedError, r"bitwise_left_shift: .* not implemented for 'Float'"),
    (lambda: gl.tensor([True]) >> gl.tensor([True]), NotImplementedError, "not implemented for 'Bool'"),
    (lambda: ~gl.ones(2), TypeError, r"~: ~ \(operator.invert\) is only implemented on integer and Boolean-type"),
    (lambda: gl.bitwise_not(gl.ones(2)), TypeError, r"bitwise_not: ~ \(operator.invert\)"),
    (lambda: gl.logical_and(gl.ones(2), 1), TypeError, r"logical_and\(\): argument 'other' .* must be Tensor"),
])
def test_bitwise_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_logical_ops_read_any_dtype_as_truth_values():
    a, b = gl.tensor([0.0, 2.5, -1.0]), gl.tensor([3, 0, 1])
    assert gl.logical_and(a, b).tolist() == [False, False, True]
    assert gl.logical_or(a, b).tolist() == [True, True, True]
    assert gl.logical_xor(a, b).tolist() == [True, True, False]
    x = a.clone()
    assert x.logical_or_(b) is x and x.dtype is gl.float32 and x.tolist() == [1.0, 1.0, 1.0]  # written back as 1 and 0


COMPARISONS = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
               "ge": np.greater_equal, "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less,
               "less_equal": np.less_equal, "not_equal": np.not_equal}


@pytest.mark.parametrize("name", COMPARISONS)
def test_comparisons_as_functions_methods_and_in_place(name):
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    x, y = leaf(a), gl.tensor(b, dtype=gl.float64)
    out = getattr(gl, name)(x, y)
    assert out.dtype is gl.bool and out.grad_fn is None
    np.testing.assert_array_equal(out.numpy(), COMPARISONS[name](a, b))
    np.testing.assert_array_equal(getattr(gl, name)(x, 2.0).numpy(), COMPARISONS[name](a, 2.0))
    with pytest.raises(TypeError, match=rf"{name}\(\): argument 'input' \(position 1\) must be Tensor, not float"):
        getattr(gl, name)(2.0, x)
    z = gl.tensor(a.tolist())
    assert getattr(z, name + "_")(y) is z and z.dtype is gl.float32
    np.testing.assert_array_equal(z.numpy(), COMPARISONS[name](a, b).astype(np.float32))


@requires_torch
def test_isclose_allclose_equal_match_torch():
    a = [1.0, float("nan"), float("inf"), 1e-9, 100.0]
    b = [1.0 + 1e-6, float("nan"), float("inf"), 0.0, 100.001]
    ga, gb, ta, tb = gl.tensor(a), gl.tensor(b), torch.tensor(a), torch.tensor(b)
    for kwargs in ({}, {"equal_nan": True}, {"rtol": 0, "atol": 1e-3}, {"rtol": 1e-4}):
        assert gl.isclose(ga, gb, **kwargs).tolist() == torch.isclose(ta, tb, **kwargs).tolist()
        assert ga.isclose(gb, **kwargs).tolist() == torch.isclose(ta, tb, **kwargs).tolist()
        assert gl.allclose(ga, gb, **kwargs) == torch.allclose(ta, tb, **kwargs)
    i, j = gl.tensor([3, 4]), gl.tensor([2, 4])
    expected = torch.isclose(torch.tensor([3, 4]), torch.tensor([2, 4]), atol=1)
    assert gl.isclose(i, j, atol=1).tolist() == expected.tolist()
    assert gl.equal(i, i.clone()) is True and gl.equal(i, j) is False
    assert gl.equal(i, gl.tensor([3, 4, 5])) is False  # different shapes
    assert i.equal(i) and not gl.equal(ga, ga)  # NaN equals nothing
    with pytest.raises(RuntimeError, match="isclose: int64 did not match float32"):
        gl.isclose(i, j.float())
    with pytest.raises(RuntimeError, match="isclose: rtol must be greater than or equal to zero, but got -1"):
        gl.isclose(ga, gb, rtol=-1)


@requires_torch
def test_isin_and_the_infinity_tests_match_torch():
    x = [1, 5, 3, 2, 5]
    for test in ([5, 2], [7], 5, []):
        theirs = torch.isin(torch.tensor(x), torch.tensor(test) if isinstance(test, list) else test)
        assert gl.isin(gl.tensor(x), gl.tensor(test) if isinstance(test, list) else test).tolist() == theirs.tolist()
    assert gl.isin(gl.tensor(x), gl.tensor([5]), invert=True).tolist() == [True, False, True, True, False]
    assert gl.isin(3, gl.tensor(x)).tolist() is True and gl.isin(3, gl.tensor(x)).shape == ()
    assert gl.isin(gl.tensor([[1, 2], [3, 4]]), gl.tensor([4, 1])).tolist() == [[True, False], [False, True]]
    v = [float("inf"), float("-inf"), 0.0, float("nan")]
    for name in ("isposinf", "isneginf", "isreal"):
        assert getattr(gl, name)(gl.tensor(v)).tolist() == getattr(torch, name)(torch.tensor(v)).tolist()
        assert getattr(gl.tensor(v), name)().tolist() == getattr(torch.tensor(v), name)().tolist()
    assert gl.isposinf(gl.tensor([1, 2])).tolist() == [False, False]


def test_tensor_questions():
    assert gl.is_nonzero(gl.tensor([0.5])) is True and gl.tensor(0).is_nonzero() is False
    with pytest.raises(RuntimeError, match=r"is_nonzero: Boolean value of Tensor with more than one value is ambig"):
        gl.is_nonzero(gl.ones(2))
    with pytest.raises(RuntimeError, match=r"is_nonzero: Boolean value of Tensor with no values is ambiguous"):
        gl.is_nonzero(gl.ones(0))
    assert gl.is_same_size(gl.ones(2, 3), gl.zeros(2, 3)) and not gl.ones(2).is_same_size(gl.ones(3))
    assert gl.is_signed(gl.ones(2)) and gl.tensor([1]).is_signed() and not gl.tensor([True]).is_signed()

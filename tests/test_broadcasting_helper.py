"""The one rule that undoes broadcasting in backward (gradlab/autograd/broadcasting.py).

The engine, the ops that reshape before a sum (matmul, einsum, index_put), normalization's
parameters, ``Tensor.sum_to_size`` and the compiler all call these helpers, so they are checked
here on their own, against numpy summing the same gradients in a different way.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd.broadcasting import fit_to_input, sum_array_to_shape, sum_to_shape, summed_dims
from helpers import requires_torch, torch

# (gradient's shape, input's shape, the dims to sum)
CASES = [
    ((2, 3), (2, 3), ()),
    ((2, 3, 4), (3, 1), (0, 2)),  # a leading dim added, a size-1 dim stretched
    ((2, 3, 4), (4,), (0, 1)),
    ((2, 3, 4), (1, 3, 1), (0, 2)),
    ((4, 1), (1, 1), (0,)),  # a size-1 dim that stayed size 1 is not summed
    ((5,), (), (0,)),  # a scalar broadcast to a vector
    ((2, 3), (), (0, 1)),
    ((), (), ()),  # 0-d to 0-d
    ((2, 0), (2, 1), (1,)),  # a size-1 dim stretched to zero size: its gradient is 0
    ((0, 3), (3,), (0,)),
    ((0, 3), (0, 3), ()),
]


def _numpy_sum_to(g: np.ndarray, shape: tuple) -> np.ndarray:
    """The expected gradient: sum away the extra leading dims one by one, then each stretched dim."""
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for axis, n in enumerate(shape):
        if n == 1 and g.shape[axis] != 1:
            g = g.sum(axis=axis, keepdims=True)
    return g


def _grad(shape, dtype=np.float64):
    rng = np.random.default_rng(sum(shape) + len(shape))
    return rng.integers(-4, 5, shape).astype(dtype)  # small integers: every sum is exact in every dtype


@pytest.mark.parametrize("got, shape, dims", CASES)
def test_summed_dims_are_the_added_and_the_stretched_dims(got, shape, dims):
    assert summed_dims(got, shape) == dims


@pytest.mark.parametrize("got, shape", [((2, 3), (3, 2)), ((3,), (2, 3)), ((2, 1), (2, 0)), ((4,), (2,))])
def test_summed_dims_is_none_where_the_shape_does_not_broadcast(got, shape):
    assert summed_dims(got, shape) is None


@pytest.mark.parametrize("got, shape, dims", CASES)
def test_sum_to_shape_matches_numpy(got, shape, dims):
    g = _grad(got)
    out = sum_to_shape(gl.tensor(g), shape)
    assert out.shape == shape
    np.testing.assert_array_equal(out.numpy(), _numpy_sum_to(g, shape))


@pytest.mark.parametrize("got, shape, dims", CASES)
def test_sum_array_to_shape_matches_numpy(got, shape, dims):
    g = _grad(got)
    backend = gl.tensor(0.0).device.backend
    out = sum_array_to_shape(backend, g, shape)
    assert out.shape == shape
    np.testing.assert_array_equal(out, _numpy_sum_to(g, shape))


def test_a_gradient_already_in_shape_is_passed_through_as_it_is():
    g = gl.ones(2, 3)
    assert sum_to_shape(g, (2, 3)) is g
    array = np.ones((2, 3))
    assert sum_array_to_shape(g.device.backend, array, (2, 3)) is array


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_the_sum_keeps_the_gradients_dtype(dtype):
    g = gl.tensor(_grad((2, 3, 4))).to(getattr(gl, dtype))
    out = sum_to_shape(g, (3, 1))
    assert out.dtype is getattr(gl, dtype)
    np.testing.assert_array_equal(out.float().numpy(), _numpy_sum_to(_grad((2, 3, 4)), (3, 1)))
    array = sum_array_to_shape(g.device.backend, g.array, (3, 1))
    assert array.dtype == g.array.dtype


def test_a_shape_that_does_not_broadcast_is_refused_with_both_shapes():
    with pytest.raises(ValueError, match=r"gradient of shape \[2, 3\] back to shape \[3, 2\]"):
        sum_to_shape(gl.ones(2, 3), (3, 2))
    with pytest.raises(ValueError, match=r"gradient of shape \[3\] back to shape \[2, 3\]"):
        sum_array_to_shape(gl.ones(1).device.backend, np.ones(3), (2, 3))


def test_fit_to_input_sums_and_casts_to_the_inputs_dtype():
    g = gl.ones(4, 3, dtype=gl.float64)
    out = fit_to_input(g, (1, 3), np.dtype(np.float32))
    assert out.shape == (1, 3) and out.dtype is gl.float32
    np.testing.assert_array_equal(out.numpy(), np.full((1, 3), 4.0, np.float32))
    assert fit_to_input(g, (4, 3), None) is g


def test_the_sum_is_recorded_under_create_graph():
    """The engine sums a broadcast input's gradient with Tensor ops, so a second derivative sees it."""
    x = gl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = gl.tensor([[2.0]], requires_grad=True)
    y = (x * x * w).sum()  # x: (3,), broadcast against w: (1, 1) -> (1, 3)
    (gx,) = gl.autograd.grad(y, (x,), create_graph=True)
    assert gx.shape == (3,) and gx.grad_fn is not None
    (gw,) = gl.autograd.grad(gx.sum(), (w,))
    np.testing.assert_array_equal(gw.numpy(), [[12.0]])  # d/dw Σ 2·x·w = 2·Σx


@requires_torch
@pytest.mark.parametrize("got, shape, dims", [c for c in CASES if c[1]])
def test_sum_to_size_agrees_with_pytorch(got, shape, dims):
    g = _grad(got, np.float32)
    ours = gl.tensor(g).sum_to_size(shape)
    theirs = torch.from_numpy(g).sum_to_size(shape)
    assert ours.shape == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())

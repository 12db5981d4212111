"""DLPack: gradlab tensors and other libraries' arrays share memory both ways, without a copy."""

import numpy as np
import pytest

import gradlab as gl
from helpers import requires_torch, torch


@requires_torch
def test_a_torch_tensor_becomes_a_gradlab_tensor_over_the_same_memory():
    t = torch.arange(6.0).reshape(2, 3)
    x = gl.from_dlpack(t)
    assert x.shape == (2, 3) and x.dtype is gl.float32
    t[0, 0] = 42.0
    assert x[0, 0].item() == 42.0
    x.add_(1.0)
    assert t[1, 2].item() == 6.0


@requires_torch
def test_a_gradlab_tensor_becomes_a_torch_tensor_and_a_numpy_array_over_the_same_memory():
    x = gl.arange(4, dtype=gl.int64)
    t = torch.from_dlpack(x)
    a = np.from_dlpack(x)
    t[0] = 7
    assert x[0].item() == 7 and a[0] == 7 and x.__dlpack_device__() == (1, 0)
    assert torch.utils.dlpack.from_dlpack(gl.utils.dlpack.to_dlpack(x))[0].item() == 7


def test_numpy_arrays_and_views_round_trip():
    a = np.arange(12.0).reshape(3, 4)[:, 1:3]  # a strided view
    x = gl.from_dlpack(a)
    np.testing.assert_array_equal(x.numpy(), a)
    assert np.shares_memory(x.numpy(), a)


def test_a_tensor_that_requires_grad_is_not_exported_and_a_capsule_is_named():
    w = gl.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't export tensors that require gradient, use tensor.detach"):
        w.__dlpack__()
    with pytest.raises(TypeError, match="got a raw DLPack capsule; pass the tensor itself"):
        gl.from_dlpack(gl.to_dlpack(gl.ones(2)))
    with pytest.raises(TypeError, match="expected an object with __dlpack__ .* got list"):
        gl.from_dlpack([1.0])

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


# --- writes seen through both sides ---------------------------------------------------------------


def test_numpy_and_gradlab_see_each_others_writes_both_ways():
    a = np.zeros(3, dtype=np.float32)
    x = gl.from_dlpack(a)
    a[0] = 1.0
    x[1] = 2.0  # through gradlab's own indexing
    assert x.tolist() == [1.0, 2.0, 0.0] and a.tolist() == [1.0, 2.0, 0.0]
    y = gl.zeros(3)
    b = np.from_dlpack(y)
    b[2] = 5.0
    y.add_(1.0)
    assert y.tolist() == [1.0, 1.0, 6.0] and b.tolist() == [1.0, 1.0, 6.0]


@requires_torch
def test_torch_and_gradlab_see_each_others_writes_both_ways():
    x = gl.zeros(2, 2)
    t = torch.from_dlpack(x)
    t.add_(1.0)
    x[0, 1] = 9.0
    assert t.tolist() == [[1.0, 9.0], [1.0, 1.0]] and x.tolist() == [[1.0, 9.0], [1.0, 1.0]]
    t2 = torch.zeros(3, dtype=torch.float64)
    y = gl.from_dlpack(t2)
    y.mul_(0.0).add_(2.0)
    t2[0] = -1.0
    assert y.dtype is gl.float64 and y.tolist() == [-1.0, 2.0, 2.0] and t2.tolist() == [-1.0, 2.0, 2.0]


@requires_torch
def test_a_strided_view_travels_with_its_strides():
    x = gl.arange(12.0).reshape(3, 4).t()
    t = torch.from_dlpack(x)
    assert t.shape == (4, 3) and t.stride() == x.stride()
    t[0, 0] = 100.0
    assert x[0, 0].item() == 100.0


def test_export_keywords_pass_through_to_numpy():
    x = gl.arange(3.0)
    assert np.from_dlpack(x).tolist() == [0.0, 1.0, 2.0]
    capsule = x.__dlpack__(max_version=(1, 0), dl_device=(1, 0), copy=False)
    assert type(capsule).__name__ == "PyCapsule"


def test_only_cuda_tensors_have_a_cuda_array_interface():
    assert not hasattr(gl.ones(2), "__cuda_array_interface__")


# --- MLX: what shares memory and what copies (mlx 0.32) ---------------------------------------------


def _mlx():
    return pytest.importorskip("mlx.core")


def _mlx_device_loads():
    try:
        gl.device("mlx").backend
    except RuntimeError:
        return False
    return True


def test_an_mlx_array_comes_in_without_a_copy():
    mx = _mlx()
    arr = mx.arange(4, dtype=mx.float32)
    x = gl.from_dlpack(arr)
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0] and x.dtype is gl.float32
    if _mlx_device_loads():  # on gradlab's 'mlx' device: the very same array
        assert x.device == "mlx" and x.array is arr
    else:  # a numpy view of MLX's memory, which MLX exports read-only
        assert x.device == "cpu" and not x.numpy().flags.writeable
        with pytest.raises(RuntimeError, match="read-only"):
            x.add_(1.0)


def test_mlx_copies_what_it_imports():
    mx = _mlx()
    x = gl.arange(3.0)
    arr = mx.from_dlpack(x)  # MLX 0.32 cannot import host memory without a copy
    mx.eval(arr)
    x.add_(10.0)
    assert arr.tolist() == [0.0, 1.0, 2.0] and x.tolist() == [10.0, 11.0, 12.0]
    with pytest.raises(Exception, match="without a copy"):
        mx.from_dlpack(x, copy=False)


@requires_torch
def test_torch_shares_an_mlx_arrays_memory_which_gradlab_hands_on():
    mx = _mlx()
    arr = mx.zeros(3, dtype=mx.float32)
    if not _mlx_device_loads():
        pytest.skip("gradlab's 'mlx' device does not load here")
    x = gl.from_dlpack(arr)
    t = torch.from_dlpack(x)  # through the mlx array's own __dlpack__: no copy
    t[0] = 4.0
    assert arr.tolist()[0] == 4.0


# --- GPU memory ---------------------------------------------------------------------------------------


class _OnDevice:
    """Something that says it lives on a DLPack device (for the routing, not the memory)."""

    def __init__(self, kind):
        self.kind = kind

    def __dlpack__(self, **kwargs):
        raise AssertionError("the routing must fail before the memory is read")

    def __dlpack_device__(self):
        return (self.kind, 0)


def test_memory_on_a_device_gradlab_has_no_backend_for_is_named():
    with pytest.raises(RuntimeError, match=r"from_dlpack: a _OnDevice on DLPack device type 4 \(index 0\) has no "
                                           r"gradlab device; move it to the CPU first"):
        gl.from_dlpack(_OnDevice(4))


def test_gpu_memory_needs_the_cuda_device_and_says_why_it_cannot_have_it(monkeypatch, tmp_path):
    from gradlab.backends import device as device_module

    (tmp_path / "gradlab_test_no_gpu_here.py").write_text("raise RuntimeError('cuda: no CUDA GPU is visible')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(device_module._BACKENDS, "cuda", ("gradlab_test_no_gpu_here", "Backend", "cuda"))
    monkeypatch.setattr(device_module, "_instances", {})
    monkeypatch.setattr(device_module, "_named", {})
    monkeypatch.setattr(device_module, "_backend_objects", {})
    with pytest.raises(RuntimeError, match="^cuda: no CUDA GPU is visible$"):
        gl.from_dlpack(_OnDevice(2))


def test_cupy_arrays_share_memory_with_cuda_tensors():
    cupy = pytest.importorskip("cupy")
    try:
        gl.device("cuda").backend
    except RuntimeError as error:
        pytest.skip(f"no cuda device here: {error}")
    a = cupy.arange(4, dtype=cupy.float32)
    x = gl.from_dlpack(a)
    assert x.device.type == "cuda"
    a[0] = 7.0
    assert x[0].item() == 7.0
    b = cupy.from_dlpack(x)
    b[1] = 8.0
    assert x.tolist()[1] == 8.0

"""PyTorch's keyword names work where gradlab once took others: numpy(force=), uniform_ from/to, save/load options."""

import io
import pickle

import pytest

import gradlab as gl
from helpers import requires_torch, torch


def test_numpy_force_serves_a_tensor_that_requires_grad():
    w = gl.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        w.numpy()
    assert w.numpy(force=True).tolist() == [1.0, 1.0]


def test_uniform_takes_pytorchs_from_and_to():
    gl.manual_seed(0)
    x = gl.empty(1000).uniform_(**{"from": 2.0, "to": 3.0})
    assert 2.0 <= x.min().item() and x.max().item() < 3.0
    with pytest.raises(TypeError, match="uniform_\\(\\) got an unexpected keyword argument 'upper'"):
        gl.empty(2).uniform_(upper=1.0)


def test_set_default_dtype_takes_d():
    try:
        gl.set_default_dtype(d=gl.float64)
        assert gl.tensor([1.0]).dtype is gl.float64
    finally:
        gl.set_default_dtype(gl.float32)


def test_save_and_load_take_pytorchs_pickle_options():
    buffer = io.BytesIO()
    gl.save({"n": 3}, buffer, pickle, 2, pickle=True)
    assert buffer.getvalue()[:2] == b"\x80\x02"  # protocol 2, as asked
    buffer.seek(0)
    assert gl.load(buffer, None, pickle, pickle=True, encoding="latin1") == {"n": 3}
    buffer = io.BytesIO()
    gl.save({"w": gl.ones(2)}, buffer, format="npz")
    buffer.seek(0)
    assert gl.load(buffer, mmap=True)["w"].tolist() == [1.0, 1.0]


def test_casts_and_new_tensors_take_pytorchs_layout_keywords():
    x = gl.randn(2, 3, 4, 5)
    assert x.half(memory_format=gl.preserve_format).dtype is gl.float16 and x.long().dtype is gl.int64
    assert x.to(gl.float64, memory_format=gl.contiguous_format).dtype is gl.float64
    assert x.is_contiguous() and not x.is_contiguous(memory_format=gl.channels_last)
    assert x.movedim(1, -1).contiguous().movedim(-1, 1).is_contiguous(memory_format=gl.channels_last)
    assert x.new_zeros(2, layout=gl.strided).tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="new_ones: pin_memory=True requires a CUDA or other accelerator backend"):
        x.new_ones(2, pin_memory=True)
    with pytest.raises(RuntimeError, match="to: required rank 4 tensor to use channels_last format, got a 2-D tensor"):
        gl.zeros(2, 2).to(memory_format=gl.channels_last)


@requires_torch
def test_torch_level_clone_detach_fill_and_device_queries():
    x = gl.ones(2, requires_grad=True)
    y = gl.fill(x, 3.0)
    (y * gl.clone(x)).sum().backward()
    t = torch.ones(2, requires_grad=True)
    (torch.fill(t, 3.0) * torch.clone(t)).sum().backward()
    assert y.tolist() == [3.0, 3.0] and x.grad.tolist() == t.grad.tolist()
    assert not gl.detach(x).requires_grad and gl.get_device(x) == -1 == torch.get_device(t) and x.is_cpu
    z = x * 2
    assert gl.detach_(z) is z and z.grad_fn is None
    with gl.inference_mode():
        assert gl.is_inference_mode_enabled()
    assert not gl.is_inference_mode_enabled()

"""The Lazy layers (UninitializedParameter / UninitializedBuffer materialized on the first call) and nn.Buffer."""

import copy

import numpy as np
import pytest
from helpers import randn, requires_torch, torch
from nn_parity import compare_modules

import gradlab as gl
import gradlab.nn as nn

LAZY = [("LazyLinear", (3,), (2, 5)), ("LazyConv1d", (4, 3), (2, 3, 6)), ("LazyConv2d", (4, 3), (2, 3, 5, 5)),
        ("LazyConv3d", (2, 2), (1, 4, 3, 3, 3)), ("LazyConvTranspose1d", (4, 3), (2, 3, 5)),
        ("LazyConvTranspose2d", (2, 3), (2, 3, 3, 4)), ("LazyConvTranspose3d", (2, 2), (1, 2, 2, 3, 2)),
        ("LazyBatchNorm1d", (), (4, 3)), ("LazyBatchNorm2d", (), (2, 3, 2, 2)),
        ("LazyBatchNorm3d", (), (2, 2, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), (2, 3, 4)), ("LazyInstanceNorm2d", (), (2, 3, 4, 4)),
        ("LazyInstanceNorm3d", (), (1, 2, 3, 2, 2))]


@requires_torch
@pytest.mark.parametrize("name, args, shape", LAZY, ids=[n for n, _, _ in LAZY])
def test_lazy_layers_become_their_ordinary_layer_as_in_torch(name, args, shape):
    layer, t_layer = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(layer) == repr(t_layer)
    assert list(layer.state_dict()) == list(t_layer.state_dict())
    assert [type(v).__name__ for v in layer.state_dict().values()] == [type(v).__name__ for v in
                                                                       t_layer.state_dict().values()]
    x = randn(*shape)
    layer.double(), t_layer.double()
    layer(gl.tensor(x)), t_layer(torch.tensor(x))
    assert type(layer).__name__ == type(t_layer).__name__ == name[4:]
    assert [tuple(p.shape) for p in layer.parameters()] == [tuple(p.shape) for p in t_layer.parameters()]
    assert all(p.dtype == gl.float64 for p in layer.parameters())
    compare_modules(layer, t_layer, x)  # and now it computes as the ordinary layer, with torch's weights


def test_lazy_linear_initialises_like_linear():
    gl.manual_seed(0)
    layer = nn.LazyLinear(200)
    layer(gl.ones(2, 50))
    bound = 1 / np.sqrt(50)
    w = layer.weight.detach().numpy()
    assert w.shape == (200, 50) and np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert layer.weight.requires_grad and isinstance(layer.weight, nn.Parameter)
    assert not isinstance(layer.weight, nn.UninitializedParameter)


def test_loading_a_state_dict_materializes_a_lazy_layer():
    source = nn.Linear(5, 3)
    layer = nn.LazyLinear(3)
    layer.load_state_dict(source.state_dict())
    np.testing.assert_array_equal(layer.weight.detach().numpy(), source.weight.detach().numpy())
    out = layer(gl.ones(1, 5))
    assert type(layer) is nn.Linear and out.shape == (1, 3)


def test_uninitialized_parameters_refuse_to_be_used():
    layer = nn.LazyConv2d(4, 3)
    assert repr(layer.weight) == "<UninitializedParameter>"
    with pytest.raises(RuntimeError, match="Can't access the shape of an uninitialized parameter"):
        layer.weight.shape
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter"):
        layer.weight + 1
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to LazyConv2d, but "
                                           r"got input of size: \(2, 5\)"):
        layer(gl.ones(2, 5))
    assert type(layer) is nn.LazyConv2d  # a failed first call leaves it lazy
    layer(gl.ones(3, 5, 5))  # unbatched: in_channels from dim 0
    assert layer.weight.shape == (4, 3, 3, 3)


def test_uninitialized_tensors_materialize_by_hand_and_deepcopy():
    p = nn.UninitializedParameter(dtype=gl.float64)
    assert p.dtype == gl.float64 and p.requires_grad
    p.materialize((2, 3))
    assert type(p) is nn.Parameter and p.shape == (2, 3) and p.dtype == gl.float64
    b = nn.UninitializedBuffer()
    b.materialize((4,))
    assert type(b) is gl.Tensor and b.shape == (4,)
    twin = copy.deepcopy(nn.LazyLinear(2))
    twin(gl.ones(1, 3))
    assert twin.weight.shape == (2, 3)


def test_buffer_registers_itself_on_assignment():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.kept = nn.Buffer(gl.ones(2))
            self.scratch = nn.Buffer(gl.zeros(3), persistent=False)

    model = Model()
    assert [name for name, _ in model.named_buffers()] == ["kept", "scratch"]
    assert list(model.state_dict()) == ["kept"]
    assert not model.kept.requires_grad and isinstance(model.kept, gl.Tensor)
    model.double()
    assert model.kept.dtype == gl.float64

"""Instance normalisation (F.instance_norm, InstanceNorm1d/2d/3d) and local response normalisation (LocalResponseNorm,
CrossMapLRN2d)."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules, load_torch_state

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def leaf(*shape, seed=0):
    return gl.tensor(randn(*shape, seed=seed), requires_grad=True)


@requires_torch
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("affine, track", [(False, False), (True, False), (True, True), (False, True)])
def test_instance_norm_layers_match_torch_in_training_and_evaluation(nd, affine, track):
    shape = (2, 3) + (4, 3, 2)[:nd]
    layer = getattr(nn, f"InstanceNorm{nd}d")(3, affine=affine, track_running_stats=track, momentum=0.3)
    t_layer = getattr(torch.nn, f"InstanceNorm{nd}d")(3, affine=affine, track_running_stats=track, momentum=0.3)
    if affine:
        with torch.no_grad():
            t_layer.weight.uniform_(0.5, 1.5)
            t_layer.bias.uniform_(-1, 1)
    compare_modules(layer, t_layer, randn(*shape))
    compare_modules(layer, t_layer, randn(*shape[1:], seed=1), load=False)  # unbatched
    if track:
        assert_close(layer.running_mean, t_layer.running_mean)
        assert_close(layer.running_var, t_layer.running_var)
        assert int(layer.num_batches_tracked) == int(t_layer.num_batches_tracked) == 0  # as in PyTorch
    layer.eval(), t_layer.eval()
    compare_modules(layer, t_layer, randn(*shape, seed=2), load=False)


def test_instance_norm_normalises_each_channel_of_each_sample():
    out = F.instance_norm(gl.tensor(randn(2, 3, 5, 4) * 3 + 1)).numpy()
    np.testing.assert_allclose(out.mean((2, 3)), 0, atol=1e-12)
    np.testing.assert_allclose(out.var((2, 3)), 1, rtol=1e-4)


def test_instance_norm_gradcheck():
    w, b = leaf(3, seed=1), leaf(3, seed=2)
    assert gradcheck(lambda x, w, b: F.instance_norm(x, weight=w, bias=b), (leaf(2, 3, 4), w, b))
    assert gradgradcheck(lambda x: F.instance_norm(x), (leaf(1, 2, 3, 2),))


@requires_torch
def test_instance_norm_state_dict_keys_match_torch():
    for kwargs in ({}, {"affine": True}, {"track_running_stats": True}):
        assert list(nn.InstanceNorm2d(4, **kwargs).state_dict()) == list(torch.nn.InstanceNorm2d(4, **kwargs)
                                                                          .state_dict())
    layer = nn.InstanceNorm1d(2, affine=True)
    load_torch_state(layer, torch.nn.InstanceNorm1d(2, affine=True))


def test_instance_norm_errors():
    with pytest.raises(ValueError, match=r"InstanceNorm2d\(3\): expected 3D or 4D input \(C, H, W\) or \(N, C, H, W\), "
                                         r"got 2D input of shape \(3, 4\)"):
        nn.InstanceNorm2d(3)(gl.ones(3, 4))
    with pytest.raises(ValueError, match="InstanceNorm1d: expected input's size at dim=1 to match num_features"):
        nn.InstanceNorm1d(3, affine=True)(gl.ones(2, 4, 5))
    with pytest.warns(UserWarning, match="input's size at dim=1 does not match num_features"):
        nn.InstanceNorm1d(3)(gl.ones(2, 4, 5))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training, got input size"):
        F.instance_norm(gl.ones(2, 3, 1))
    layer = nn.InstanceNorm1d(3, track_running_stats=True)
    with pytest.raises(ValueError, match="Expected more than 1 spatial element"):
        layer(gl.ones(2, 3, 1) * 5)
    assert layer.running_mean.numpy().tolist() == [0, 0, 0]  # raised before any buffer changed


@requires_torch
@pytest.mark.parametrize("shape", [(2, 5, 4), (2, 5, 3, 4), (1, 6, 2, 3, 2)], ids=["3d", "4d", "5d"])
def test_local_response_norm_matches_torch(shape):
    for args in [(3,), (2,), (4, 0.3, 0.5, 1.5)]:
        compare_modules(nn.LocalResponseNorm(*args), torch.nn.LocalResponseNorm(*args), randn(*shape))
    assert gradcheck(lambda x: F.local_response_norm(x, 3, alpha=0.5), (leaf(*shape),))


@requires_torch
@pytest.mark.parametrize("channels", [2, 3, 5, 7])
@pytest.mark.parametrize("size", [2, 3, 5])
def test_cross_map_lrn2d_forward_matches_torch(channels, size):
    x = randn(2, channels, 3, 4)
    layer, t_layer = nn.CrossMapLRN2d(size, alpha=0.5, k=2), torch.nn.CrossMapLRN2d(size, alpha=0.5, k=2)
    assert_close(layer(gl.tensor(x)), t_layer(torch.tensor(x)))
    assert repr(layer) == repr(t_layer)
    # PyTorch's hand-written backward is not the derivative of its forward (its own gradcheck fails for most
    # channel counts); gradlab's gradient is the true one
    assert gradcheck(lambda t: layer(t), (leaf(1, channels, 2, 2),))


def test_local_response_norm_errors():
    with pytest.raises(ValueError, match=r"Expected 3D or higher dimensionality input \(got 2 dimensions\)"):
        F.local_response_norm(gl.ones(2, 3), 2)
    with pytest.raises(ValueError, match="CrossMapLRN2d: Expected input to be 4D, got 3D instead"):
        nn.CrossMapLRN2d(3)(gl.ones(2, 3, 4))

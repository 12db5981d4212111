"""SyncBatchNorm (one process: the batch's own statistics, as PyTorch without a process group) and
convert_sync_batchnorm."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules, load_torch_state

import gradlab as gl
import gradlab.nn as nn


@requires_torch
@pytest.mark.parametrize("shape", [(4, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 2, 3)], ids=["2d", "3d", "4d", "5d"])
def test_sync_batch_norm_matches_torch_in_training_and_evaluation(shape):
    layer, t_layer = nn.SyncBatchNorm(3, momentum=None), torch.nn.SyncBatchNorm(3, momentum=None)
    compare_modules(layer, t_layer, randn(*shape))
    compare_modules(layer, t_layer, randn(*shape, seed=1), load=False)
    assert_close(layer.running_mean, t_layer.running_mean)
    assert_close(layer.running_var, t_layer.running_var)
    assert int(layer.num_batches_tracked) == 2
    layer.eval(), t_layer.eval()
    compare_modules(layer, t_layer, randn(*shape, seed=2), load=False)


@requires_torch
def test_convert_sync_batchnorm_keeps_the_parameters_and_buffers():
    gl.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.Sequential(nn.ReLU(), nn.BatchNorm2d(3)))
    model(gl.tensor(randn(2, 2, 5, 5), dtype=gl.float32))  # running statistics that must carry over
    weight, running = model[1].weight, model[1].running_mean.numpy().copy()
    converted = nn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert converted is model and type(model[1]) is nn.SyncBatchNorm and type(model[2][1]) is nn.SyncBatchNorm
    assert model[1].weight is weight
    np.testing.assert_array_equal(model[1].running_mean.numpy(), running)
    t_model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(
        torch.nn.Sequential(torch.nn.Conv2d(2, 3, 3), torch.nn.BatchNorm2d(3),
                            torch.nn.Sequential(torch.nn.ReLU(), torch.nn.BatchNorm2d(3))))
    assert repr(model) == repr(t_model)
    assert list(model.state_dict()) == list(t_model.state_dict())
    load_torch_state(model, t_model)
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(4, affine=False))
    assert type(single) is nn.SyncBatchNorm and single.weight is None


def test_sync_batch_norm_errors():
    with pytest.raises(ValueError, match="expected at least 2D input \\(got 1D input"):
        nn.SyncBatchNorm(3)(gl.ones(3))
    with pytest.raises(RuntimeError, match=r"SyncBatchNorm\(3\): expected input with 3 channels in dimension 1"):
        nn.SyncBatchNorm(3)(gl.ones(2, 4))

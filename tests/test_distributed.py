"""gradlab.distributed and nn.parallel: importable, honest (one process), clear errors where torch would act."""

import pytest

import gradlab as gl
import gradlab.distributed as dist
from helpers import requires_torch, torch


def test_guards_report_no_process_group():
    assert dist.is_available() is False and dist.is_initialized() is False
    assert not dist.is_nccl_available() and not dist.is_gloo_available() and not dist.is_mpi_available()
    assert not dist.is_torchelastic_launched()
    assert dist.ReduceOp.SUM.name == "SUM"


@pytest.mark.parametrize("call, args", [
    ("init_process_group", ("gloo",)), ("get_rank", ()), ("get_world_size", ()), ("barrier", ()),
    ("all_reduce", (gl.ones(2),)), ("broadcast", (gl.ones(2), 0)), ("all_gather", ([], gl.ones(2))),
    ("destroy_process_group", ()),
])
def test_every_process_group_call_names_itself_and_says_why(call, args):
    with pytest.raises(RuntimeError, match=rf"gradlab.distributed.{call}: gradlab trains in one process"):
        getattr(dist, call)(*args)


def test_data_parallel_runs_the_module_and_keeps_torchs_checkpoint_keys():
    gl.manual_seed(0)
    inner = gl.nn.Linear(3, 2)
    model = gl.nn.DataParallel(inner, device_ids=[0, 1])
    x = gl.randn(4, 3)
    assert model.module is inner and model.device_ids == []
    assert model(x).tolist() == inner(x).tolist()
    assert list(model.state_dict()) == ["module.weight", "module.bias"]
    assert gl.nn.parallel.DataParallel is gl.nn.DataParallel
    assert gl.nn.parallel.data_parallel(inner, x).tolist() == inner(x).tolist()
    with pytest.raises(TypeError, match="DataParallel: expected an nn.Module to wrap, got function"):
        gl.nn.DataParallel(lambda x: x)


@requires_torch
def test_data_parallel_checkpoint_keys_match_torch():
    theirs = torch.nn.DataParallel(torch.nn.Linear(3, 2))
    ours = gl.nn.DataParallel(gl.nn.Linear(3, 2))
    assert list(ours.state_dict()) == list(theirs.state_dict())


def test_distributed_data_parallel_refuses_on_construction():
    with pytest.raises(RuntimeError, match="DistributedDataParallel: gradlab trains in one process"):
        gl.nn.parallel.DistributedDataParallel(gl.nn.Linear(2, 2), device_ids=[0])

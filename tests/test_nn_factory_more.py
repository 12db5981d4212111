"""nn.factory_kwargs and nn.common_types: the small helpers PyTorch layers are written with."""

import pytest
from helpers import requires_torch, torch

import gradlab as gl
import gradlab.nn as nn


def test_factory_kwargs_flattens_and_checks():
    assert nn.factory_kwargs(None) == {}
    assert nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": gl.float64}}) == {"device": "cpu",
                                                                                            "dtype": gl.float64}
    layer = nn.Linear(2, 3, **nn.factory_kwargs({"dtype": gl.float64}))
    assert layer.weight.dtype == gl.float64
    with pytest.raises(TypeError, match="unexpected kwargs {'bias'}"):
        nn.factory_kwargs({"bias": True})
    with pytest.raises(TypeError, match="dtype specified twice, in \\*\\*kwargs and in factory_kwargs"):
        nn.factory_kwargs({"dtype": gl.float32, "factory_kwargs": {"dtype": gl.float64}})


@requires_torch
def test_factory_kwargs_and_common_types_match_torch():
    kwargs = {"device": "cpu", "memory_format": None, "factory_kwargs": {"dtype": "x"}}
    assert nn.factory_kwargs(kwargs) == torch.nn.factory_kwargs(kwargs)
    public = {n for n in dir(torch.nn.common_types) if n.startswith("_s") or n.startswith("_r") or n.startswith("_m")
              or n.startswith("_t")}
    assert public <= set(dir(nn.common_types))

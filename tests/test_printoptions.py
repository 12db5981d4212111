"""set_printoptions changes how tensors print exactly as torch.set_printoptions does."""

import numpy as np
import pytest

import gradlab as gl
from helpers import requires_torch, torch

VALUES = [[0.123456, 2.5, -3.0], [1e-5, 12345.678, 7.0], list(range(2000)), np.linspace(-1, 1, 30).tolist(),
          [[1.5, 2.0], [3.25, 4.0]]]
OPTIONS = [dict(precision=2), dict(sci_mode=True), dict(sci_mode=False), dict(threshold=5, edgeitems=2),
           dict(linewidth=30), dict(profile="short"), dict(profile="full", linewidth=200), dict(precision=6, sci_mode=True)]


@pytest.fixture
def restore():
    yield
    gl.set_printoptions(profile="default")
    if torch is not None:
        torch.set_printoptions(profile="default")


@requires_torch
@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_prints_as_torch_does_with_the_same_options(restore, options):
    gl.set_printoptions(**options)
    torch.set_printoptions(**options)
    for values in VALUES:
        ours = repr(gl.tensor(values, dtype=gl.float32))
        theirs = repr(torch.tensor(values, dtype=torch.float32))
        assert ours == theirs, f"\n{ours}\n{theirs}"


def test_default_profile_restores_and_bad_options_are_named(restore):
    gl.set_printoptions(precision=1)
    assert repr(gl.tensor([0.25])) == "tensor([0.2])"
    gl.set_printoptions(profile="default")
    assert repr(gl.tensor([0.25])) == "tensor([0.2500])"
    with pytest.raises(ValueError, match="profile must be one of \\['default', 'full', 'short'\\], got 'long'"):
        gl.set_printoptions(profile="long")
    with pytest.raises(ValueError, match="precision must be a non-negative number, got -1"):
        gl.set_printoptions(precision=-1)

"""Random numbers on each backend: the same numbers as numpy's where the backend draws them on the host,
the right distribution where it draws them on the device, and the same numbers again from the same seed.

The contract draws every random array with numpy's PCG64 on the host and moves it (contract.py), so one
seed gives the same numbers on every device; a backend may override that to draw on the device itself
(faster, but its own sequence), and is then held to the distribution instead of to numpy's values.
"""

from __future__ import annotations

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn.functional as F
from gradlab.backends.contract import Backend

N = 2000
RANDOM_KERNELS = ("random_uniform", "random_normal", "random_integers", "random_permutation")


def draws(device):
    """Every kind of random tensor, from seed 123, as host arrays."""
    gl.manual_seed(123)
    made = {"rand": gl.rand(N, device=device), "randn": gl.randn(N, device=device),
            "randint": gl.randint(0, 10, (N,), device=device), "randperm": gl.randperm(N, device=device),
            "normal_": gl.empty(N, device=device).normal_(1.0, 2.0),
            "uniform_": gl.empty(N, device=device).uniform_(-3.0, -1.0),
            "dropout": F.dropout(gl.ones(N, device=device), 0.25, training=True),
            "bernoulli": gl.bernoulli(gl.full((N,), 0.3, device=device))}
    for name, t in made.items():
        assert t.device == device, f"{name} was made on {t.device}, not {device}"
    return {name: t.cpu().numpy() for name, t in made.items()}


def draws_on_the_host(backend) -> bool:
    return all(getattr(type(backend), name) is getattr(Backend, name) for name in RANDOM_KERNELS)


def test_the_same_seed_gives_the_same_numbers_again(backend_device):
    first, second = draws(backend_device), draws(backend_device)
    for name in first:
        np.testing.assert_array_equal(first[name], second[name], err_msg=name)


def test_random_numbers_match_numpy_or_their_distribution(backend_device):
    got = draws(backend_device)
    if draws_on_the_host(backend_device.backend):
        want = draws(gl.device("cpu"))
        for name in want:
            np.testing.assert_array_equal(got[name], want[name], err_msg=f"{name}: not numpy's numbers from the seed")
        return
    # Drawn on the device: the moments of 2000 draws, within ~7 standard errors of the mean.
    assert got["rand"].min() >= 0 and got["rand"].max() < 1 and abs(got["rand"].mean() - 0.5) < 0.05
    assert abs(got["randn"].mean()) < 0.15 and abs(got["randn"].std() - 1) < 0.1
    assert abs(got["normal_"].mean() - 1) < 0.3 and abs(got["normal_"].std() - 2) < 0.2
    assert got["uniform_"].min() >= -3 and got["uniform_"].max() < -1
    assert set(np.unique(got["randint"])) == set(range(10))
    np.testing.assert_array_equal(np.sort(got["randperm"]), np.arange(N))
    kept = got["dropout"] != 0
    assert abs(kept.mean() - 0.75) < 0.07 and np.allclose(got["dropout"][kept], 1 / 0.75)
    assert set(np.unique(got["bernoulli"])) <= {0.0, 1.0} and abs(got["bernoulli"].mean() - 0.3) < 0.07


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_dropout_edges(backend_device, p):
    x = gl.ones(50, device=backend_device, requires_grad=True)
    out = F.dropout(x, p, training=True)
    out.sum().backward()
    expected = np.zeros(50) if p == 1.0 else np.ones(50)
    np.testing.assert_array_equal(out.detach().cpu().numpy(), expected)
    np.testing.assert_array_equal(x.grad.cpu().numpy(), expected)

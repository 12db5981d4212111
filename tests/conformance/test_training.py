"""The examples' spiral MLP and digits CNN, trained on each backend, learn what they learn on numpy.

Each run starts from the same weights (built on the host from one seed, then moved) and sees the same
batches in the same order (the shuffling is drawn on the host), so a backend that computes correctly
follows numpy's run closely: its final accuracy must be within two points of numpy's. (Not equal:
float32 differences of a few ulps, summed in another order, grow over hundreds of steps, and one
image more or less right is 0.3 points of the digits' 359 held-out images.)

The CUDA simulator runs a Python thread per GPU thread, and these models are too wide for it: three Adam
steps of the spiral MLP on 16 points took 565 s there (its 4,400 parameters are thousands of simulated
threads per kernel, dozens of kernels per step). So on the simulator these runs are skipped (conftest.py);
their layers, loss and optimizer are each checked there case by case, and on a GPU the runs go as here.
"""

from __future__ import annotations

import functools
import importlib.util
import pathlib
from dataclasses import dataclass

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn.functional as F
from gradlab.data import make_synthetic


EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def example(name: str):
    """examples/<name>.py as a module (examples/ is not a package): its build_model is the model trained here."""
    spec = importlib.util.spec_from_file_location(f"gradlab_conformance_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Run:
    model: str  # which example's build_model
    train: int  # how many training rows
    epochs: int
    batch: int
    lr: float


# Each reaches the accuracy below on numpy in a few seconds.
SPIRAL = Run("spiral_mlp", train=1000, epochs=20, batch=100, lr=0.01)  # 200 steps: ~97 % on numpy
DIGITS = Run("digits_cnn", train=800, epochs=5, batch=64, lr=0.003)  # 65 steps: ~93 % of held-out digits
REFERENCE_ACCURACY = {SPIRAL: 0.93, DIGITS: 0.88}  # what numpy's own run must reach, so the comparison means something


@functools.lru_cache(maxsize=None)
def data(model: str):
    """(train X, train y, held-out X, held-out y) on the host."""
    if model == "spiral_mlp":  # the spiral example measures accuracy on its training points
        X, y = make_synthetic("spiral", n=1000, seed=0)
        return X, y, X, y
    pytest.importorskip("sklearn", reason="the digits ship with scikit-learn (pip install scikit-learn)")
    from gradlab.data import load_digits, train_test_split

    images, labels = load_digits()
    train_x, test_x, train_y, test_y = train_test_split(images, labels, test_size=0.2,
                                                        generator=gl.Generator().manual_seed(0))
    return train_x, train_y, test_x, test_y


def train(run: Run, device) -> tuple[float, list]:
    """(held-out accuracy, the loss of every step) after training run's model on device with Adam."""
    X, y, test_x, test_y = data(run.model)
    X, y = X[:run.train].to(device), y[:run.train].to(device)
    gl.manual_seed(0)
    model = example(run.model).build_model().to(device)
    optimizer = gl.optim.Adam(model.parameters(), lr=run.lr)
    losses = []
    for _ in range(run.epochs):
        order = gl.randperm(run.train)  # drawn on the host: every device sees the same batches
        for start in range(0, run.train, run.batch):
            rows = order[start:start + run.batch].to(device)
            loss = F.cross_entropy(model(X[rows]), y[rows])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    with gl.no_grad():
        predicted = model(test_x.to(device)).argmax(1)
    return (predicted == test_y.to(device)).float().mean().item(), losses


@functools.lru_cache(maxsize=None)
def reference(run: Run):
    return train(run, gl.device("cpu"))


def _check(run: Run, device):
    accuracy, losses = train(run, device)
    want_accuracy, want_losses = reference(run)
    assert len(losses) == len(want_losses)
    assert want_accuracy >= REFERENCE_ACCURACY[run], f"numpy's own {run.model} run reached only {want_accuracy:.1%}"
    # the first steps follow numpy's closely: float32 differences of a few ulps per op have not grown yet
    np.testing.assert_allclose(losses[:5], want_losses[:5], rtol=1e-4, err_msg=f"{run.model}'s first steps on {device}")
    assert abs(accuracy - want_accuracy) <= 0.02, (
        f"{run.model} on {device}: {accuracy:.1%} accuracy, numpy's run {want_accuracy:.1%}")


def test_spiral_mlp_learns_as_on_numpy(backend_device):
    _check(SPIRAL, backend_device)


@pytest.mark.slow
def test_digits_cnn_learns_as_on_numpy(backend_device):
    _check(DIGITS, backend_device)

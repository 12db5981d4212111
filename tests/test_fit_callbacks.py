"""fit(..., callbacks=[...]): something to run after every optimizer step and at the end of each epoch."""

from __future__ import annotations

import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.data import DataLoader, TensorDataset
from gradlab.training import fit


def small_problem(n=12, batch_size=4):
    gl.manual_seed(0)
    X = gl.randn(n, 3)
    y = (X.sum(1) > 0).long()
    model = nn.Linear(3, 2)
    optimizer = gl.optim.SGD(model.parameters(), lr=0.1)
    return model, DataLoader(TensorDataset(X, y), batch_size=batch_size), nn.CrossEntropyLoss(), optimizer


class Recorder:
    def __init__(self, optimizer):
        self.losses, self.epochs = [], []

    def on_step(self, loss):
        self.losses.append(loss)

    def on_epoch_end(self, epoch, history):
        self.epochs.append((epoch, len(history["train_loss"])))


def test_on_step_runs_after_every_step_with_the_batch_loss():
    model, loader, loss_fn, optimizer = small_problem()
    seen = []
    batches = list(loader)

    def on_step(loss):  # a plain function is an on_step
        seen.append((loss, model.weight.detach().numpy().copy()))

    before = model.weight.detach().numpy().copy()
    first_loss = loss_fn(model(batches[0][0]), batches[0][1]).item()  # under the starting weights
    fit(model, loader, loss_fn, optimizer, epochs=2, progress=False, metrics=None, callbacks=[on_step])
    assert len(seen) == 2 * len(batches)
    assert all(isinstance(loss, float) for loss, _ in seen)
    assert not (seen[0][1] == before).all()  # called after optimizer.step() moved the weights
    assert seen[0][0] == pytest.approx(first_loss, rel=1e-6)


def test_on_epoch_end_gets_the_epoch_and_the_history_so_far():
    model, loader, loss_fn, optimizer = small_problem()
    recorder = Recorder(optimizer)
    history = fit(model, loader, loss_fn, optimizer, epochs=3, progress=False, callbacks=[recorder])
    assert recorder.epochs == [(1, 1), (2, 2), (3, 3)]
    assert len(recorder.losses) == 9
    assert len(history["train_loss"]) == 3


def test_one_callback_needs_no_list():
    model, loader, loss_fn, optimizer = small_problem()
    recorder = Recorder(optimizer)
    fit(model, loader, loss_fn, optimizer, epochs=1, progress=False, callbacks=recorder)
    assert len(recorder.losses) == 3


def test_a_callback_with_neither_method_is_a_clear_error_before_training():
    model, loader, loss_fn, optimizer = small_problem()
    before = model.weight.detach().numpy().copy()
    with pytest.raises(TypeError, match=r"fit\(callbacks=...\): a callback is an object with on_step\(loss\)"):
        fit(model, loader, loss_fn, optimizer, epochs=1, progress=False, callbacks=[42])
    assert (model.weight.detach().numpy() == before).all()  # nothing trained


def test_a_callback_whose_on_step_is_not_a_method_is_a_clear_error():
    class Broken:
        on_step = 3

    model, loader, loss_fn, optimizer = small_problem()
    with pytest.raises(TypeError, match=r"Broken.on_step must be a method, got int"):
        fit(model, loader, loss_fn, optimizer, epochs=1, progress=False, callbacks=[Broken()])

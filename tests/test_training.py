"""gradlab.training: fit's history and loop, evaluate's modes and averages, accuracy, the progress display."""

from __future__ import annotations

import itertools
import sys

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.data import DataLoader, TensorDataset
from gradlab.training import accuracy, evaluate, fit


def blobs(n=64, seed=0):
    """Two well-separated Gaussian blobs in 2-D: a linear model learns them in a few steps."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % 2
    X = rng.standard_normal((n, 2)) * 0.3 + np.where(y[:, None] == 1, 1.0, -1.0)
    return gl.tensor(X, dtype=gl.float32), gl.tensor(y)


def loader(X, y, batch_size=16, shuffle=False):
    return DataLoader(TensorDataset(X, y), batch_size=batch_size, shuffle=shuffle)


def setup(lr=0.1, seed=0):
    gl.manual_seed(seed)
    model = nn.Linear(2, 2)
    return model, gl.optim.SGD(model.parameters(), lr=lr), nn.CrossEntropyLoss()


# --- accuracy ---------------------------------------------------------------------------------------

def test_accuracy_of_class_scores():
    logits = gl.tensor([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [0.0, 0.0, 5.0], [4.0, 0.0, 0.0]])
    assert accuracy(logits, gl.tensor([0, 1, 1, 0])) == pytest.approx(0.75)


def test_accuracy_of_sequences_compares_every_position():
    logits = gl.tensor(np.eye(3, dtype=np.float32)[[[0, 1], [2, 2]]])  # (2, 2, 3): predictions [[0, 1], [2, 2]]
    assert accuracy(logits, gl.tensor([[0, 1], [2, 0]])) == pytest.approx(0.75)


def test_accuracy_of_one_score_per_sample_thresholds_at_zero():
    logits = gl.tensor([[2.0], [-1.0], [0.5], [-3.0]])
    assert accuracy(logits, gl.tensor([[1.0], [0.0], [0.0], [0.0]])) == pytest.approx(0.75)


def test_accuracy_shape_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"predictions of shape \(4,\).*targets of shape \(3,\)"):
        accuracy(gl.zeros(4, 3), gl.tensor([0, 1, 2]))


# --- fit -------------------------------------------------------------------------------------------

def test_history_has_one_entry_per_epoch_for_every_series():
    X, y = blobs()
    model, optimizer, loss_fn = setup()
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=3, val_loader=loader(X[:20], y[:20]),
                  progress=False)
    assert set(history) == {"train_loss", "train_accuracy", "val_loss", "val_accuracy", "lr"}
    assert all(len(values) == 3 for values in history.values())
    assert all(isinstance(v, float) for values in history.values() for v in values)
    assert all(0.0 <= v <= 1.0 for v in history["train_accuracy"] + history["val_accuracy"])


def test_without_validation_there_are_no_val_series():
    X, y = blobs()
    model, optimizer, loss_fn = setup()
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=2, progress=False)
    assert set(history) == {"train_loss", "train_accuracy", "lr"}


def test_loss_decreases_and_the_blobs_are_learned():
    X, y = blobs()
    model, optimizer, loss_fn = setup()
    history = fit(model, loader(X, y, shuffle=True), loss_fn, optimizer, epochs=8, progress=False)
    losses = history["train_loss"]
    assert losses[-1] < 0.5 * losses[0]
    assert all(later <= earlier + 1e-6 for earlier, later in itertools.pairwise(losses))
    assert history["train_accuracy"][-1] == 1.0


def test_epoch_loss_is_the_size_weighted_mean_of_the_batch_losses():
    X, y = blobs(n=10)
    model, _, loss_fn = setup()
    seen = []

    def recording_loss(outputs, targets):
        loss = loss_fn(outputs, targets)
        seen.append((loss.item(), len(targets)))
        return loss

    fit(model, loader(X, y, batch_size=4), recording_loss, gl.optim.SGD(model.parameters(), lr=0.0), epochs=1,
        progress=False, metrics=None)
    assert [size for _, size in seen] == [4, 4, 2]
    with gl.no_grad():  # lr=0: the weights never moved, so one pass over all rows gives the same mean
        logits = model(X).numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    expected = -log_probs[np.arange(10), y.numpy()].mean()
    assert sum(v * s for v, s in seen) / 10 == pytest.approx(expected, rel=1e-5)


def test_metrics_by_name_function_and_dict():
    X, y = blobs(n=32)

    def error_rate(outputs, targets):
        return 1.0 - accuracy(outputs, targets)

    model, optimizer, loss_fn = setup()
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=2, metrics=["accuracy", error_rate],
                  val_loader=loader(X, y), progress=False)
    for split in ("train", "val"):
        assert history[f"{split}_error_rate"] == pytest.approx([1 - a for a in history[f"{split}_accuracy"]])
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=1, metrics={"acc": "accuracy"}, progress=False)
    assert set(history) == {"train_loss", "train_acc", "lr"}
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=1, metrics=None, progress=False)
    assert set(history) == {"train_loss", "lr"}


def test_metrics_see_outputs_without_a_graph():
    X, y = blobs(n=16)
    model, optimizer, loss_fn = setup()
    flags = []

    def probe(outputs, targets):
        flags.append(gl.is_grad_enabled())
        return 0.0

    fit(model, loader(X, y), loss_fn, optimizer, epochs=1, metrics=[probe], val_loader=loader(X, y), progress=False)
    assert flags and not any(flags)


def test_unknown_metric_and_bad_metric_type():
    X, y = blobs(n=16)
    model, optimizer, loss_fn = setup()
    with pytest.raises(ValueError, match=r"unknown metric 'f1'.*'accuracy'"):
        fit(model, loader(X, y), loss_fn, optimizer, metrics=["f1"], progress=False)
    with pytest.raises(TypeError, match=r"a metric is a name .* got int"):
        fit(model, loader(X, y), loss_fn, optimizer, metrics=[3], progress=False)


def test_scheduler_steps_once_per_epoch():
    X, y = blobs(n=32)
    model, optimizer, loss_fn = setup(lr=0.1)
    scheduler = gl.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=3, scheduler=scheduler, progress=False)
    assert history["lr"] == pytest.approx([0.1, 0.05, 0.025])
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.0125)


@pytest.mark.parametrize("with_validation", [True, False])
def test_reduce_on_plateau_is_given_the_validation_loss_or_else_the_training_loss(with_validation):
    X, y = blobs(n=32)
    model, optimizer, loss_fn = setup()
    given = []

    class Recording(gl.optim.lr_scheduler.ReduceLROnPlateau):
        def step(self, metrics, epoch=None):
            given.append(metrics)
            super().step(metrics, epoch)

    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=2, scheduler=Recording(optimizer),
                  val_loader=loader(X[:8], y[:8]) if with_validation else None, progress=False)
    assert given == pytest.approx(history["val_loss" if with_validation else "train_loss"])


def test_model_trains_in_train_mode_and_stays_there_after_validation():
    X, y = blobs(n=16)
    model, optimizer, loss_fn = setup()
    modes = []
    model.register_forward_hook(lambda module, inputs, output: modes.append(module.training))
    model.eval()  # fit switches it on itself
    fit(model, loader(X, y, batch_size=8), loss_fn, optimizer, epochs=1, val_loader=loader(X, y, batch_size=8),
        progress=False)
    assert modes == [True, True, False, False]
    assert model.training


def test_device_argument_moves_model_and_batches():
    X, y = blobs(n=16)
    model, optimizer, loss_fn = setup()
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=1, device="cpu", progress=False)
    assert len(history["train_loss"]) == 1


def test_zero_epochs_changes_nothing():
    X, y = blobs(n=16)
    model, optimizer, loss_fn = setup()
    before = model.weight.detach().numpy().copy()
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=0, progress=False)
    assert history == {"train_loss": [], "train_accuracy": [], "lr": []}
    np.testing.assert_array_equal(model.weight.detach().numpy(), before)


def test_bad_epochs_and_bad_batches_are_explained():
    X, y = blobs(n=16)
    model, optimizer, loss_fn = setup()
    with pytest.raises(ValueError, match="epochs must be a non-negative integer, got -1"):
        fit(model, loader(X, y), loss_fn, optimizer, epochs=-1)
    with pytest.raises(TypeError, match=r"each batch must be a pair \(inputs, targets\).*got a list of 3"):
        fit(model, DataLoader(TensorDataset(X, y, y), batch_size=8), loss_fn, optimizer, progress=False)
    with pytest.raises(TypeError, match=r"each batch must be a pair \(inputs, targets\).*got a Tensor of 16"):
        fit(model, [X], loss_fn, optimizer, progress=False)  # a loader of bare inputs, no targets
    with pytest.raises(TypeError, match=r"each batch must be a pair \(inputs, targets\).*got int"):
        fit(model, [5], loss_fn, optimizer, progress=False)


def test_a_diverging_loss_stops_with_advice():
    X, y = blobs(n=16)
    model, optimizer, _ = setup()

    def exploding(outputs, targets):
        return outputs.sum() * float("inf")

    before = model.weight.detach().numpy().copy()
    with pytest.raises(FloatingPointError, match=r"loss became inf at epoch 1, batch 1.*smaller learning rate"):
        fit(model, loader(X, y), exploding, optimizer, progress=False)
    np.testing.assert_array_equal(model.weight.detach().numpy(), before)  # the bad step was never taken


# --- evaluate --------------------------------------------------------------------------------------

def test_evaluate_averages_over_uneven_batches_and_restores_the_mode():
    X, y = blobs(n=10)
    model, _, loss_fn = setup()
    model.train()
    result = evaluate(model, loader(X, y, batch_size=4), loss_fn)
    assert model.training
    with gl.no_grad():
        logits = model(X).numpy().astype(np.float64)
    log_probs = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    assert result["loss"] == pytest.approx(-log_probs[np.arange(10), y.numpy()].mean(), rel=1e-5)
    assert result["accuracy"] == pytest.approx(np.mean(logits.argmax(1) == y.numpy()))
    model.eval()
    evaluate(model, loader(X, y), loss_fn)
    assert not model.training  # it goes back to the mode it was in, whichever


def test_evaluate_runs_in_eval_mode_without_recording_a_graph():
    X, y = blobs(n=8)
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(2, 16), nn.Dropout(0.5), nn.Linear(16, 2))
    seen = []
    model.register_forward_hook(lambda module, inputs, output: seen.append((module.training, output.requires_grad)))
    model.train()
    first = evaluate(model, loader(X, y), nn.CrossEntropyLoss())
    second = evaluate(model, loader(X, y), nn.CrossEntropyLoss())
    assert seen == [(False, False), (False, False)]
    assert first == second  # dropout is off: the same numbers every time
    assert model.training


def test_evaluate_without_a_loss_reports_only_metrics():
    X, y = blobs(n=8)
    model, _, _ = setup()
    assert set(evaluate(model, loader(X, y))) == {"accuracy"}


def test_evaluate_restores_the_mode_even_when_the_model_fails():
    model = nn.Linear(3, 2)  # blobs have 2 features: the forward pass raises
    X, y = blobs(n=8)
    model.train()
    with pytest.raises(RuntimeError, match="expected input with 3 features"):
        evaluate(model, loader(X, y), nn.CrossEntropyLoss())
    assert model.training


# --- progress display ------------------------------------------------------------------------------

def hide_tqdm(monkeypatch):
    """Make ``import tqdm`` / ``from tqdm.auto import tqdm`` fail, as on a machine without it."""
    for name in [m for m in sys.modules if m == "tqdm" or m.startswith("tqdm.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)


def test_without_tqdm_one_line_per_epoch_is_printed(monkeypatch, capsys):
    hide_tqdm(monkeypatch)
    X, y = blobs(n=32)
    model, optimizer, loss_fn = setup()
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=2, val_loader=loader(X, y))
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2
    for epoch, line in enumerate(lines, 1):
        assert line.startswith(f"epoch {epoch}/2: train_loss {history['train_loss'][epoch - 1]:.4f}, train_accuracy ")
        assert f"val_loss {history['val_loss'][epoch - 1]:.4f}, val_accuracy " in line
        assert line.endswith(" s)")


def test_progress_false_prints_nothing(monkeypatch, capsys):
    X, y = blobs(n=16)
    model, optimizer, loss_fn = setup()
    fit(model, loader(X, y), loss_fn, optimizer, epochs=2, progress=False)
    hide_tqdm(monkeypatch)
    fit(model, loader(X, y), loss_fn, optimizer, epochs=2, progress=False)
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_with_tqdm_a_bar_per_epoch_shows_running_loss_and_accuracy(capsys):
    pytest.importorskip("tqdm", reason="tqdm is not installed (it comes with the dev and lab extras)")
    X, y = blobs(n=32)
    model, optimizer, loss_fn = setup()
    history = fit(model, loader(X, y), loss_fn, optimizer, epochs=2, val_loader=loader(X, y))
    captured = capsys.readouterr()
    assert captured.out == ""  # tqdm draws on stderr
    for epoch in (1, 2):
        assert f"epoch {epoch}/2" in captured.err
    assert "2/2 [" in captured.err  # two batches per epoch, all done
    final = history["val_accuracy"][-1]
    assert f"loss={history['train_loss'][-1]:.4f}" in captured.err
    assert f"val_acc={final:.4f}" in captured.err
    assert "acc=" in captured.err

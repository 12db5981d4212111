"""A small training loop: ``fit`` a model, ``evaluate`` it, measure its ``accuracy``.

Every PyTorch training script repeats the same loop, epoch after epoch::

    for inputs, targets in train_loader:
        optimizer.zero_grad()                     # forget last step's gradients
        loss = loss_fn(model(inputs), targets)    # forward: how wrong are we?
        loss.backward()                           # backward: which way is downhill for each weight?
        optimizer.step()                          # move every weight a little that way

``fit`` is that loop and nothing more, plus the bookkeeping around it: average loss and metrics per
epoch, an optional validation pass, a learning-rate schedule and a progress bar (``tqdm`` when it is
installed, in a notebook too; one printed line per epoch when it is not). Read it, then write your own.
"""

from __future__ import annotations

import math
import time

from .autograd import no_grad
from .optim.lr_scheduler import ReduceLROnPlateau
from .tensor import Tensor

__all__ = ["fit", "evaluate", "accuracy"]


def accuracy(logits, targets) -> float:
    """The fraction of predictions that match ``targets``, as a float in [0, 1].

    With one score per class (``logits`` of shape (N, C), or (N, T, C) for sequences) the prediction is
    the highest-scoring class; with one score per sample (the shape of ``targets``, as ``BCEWithLogitsLoss``
    takes) it is "positive where the score is above 0".
    """
    with no_grad():
        if logits.dim() == targets.dim():
            predictions = (logits > 0).to(targets.dtype)
        else:
            predictions = logits.argmax(-1)
        if predictions.shape != targets.shape:
            raise ValueError(f"accuracy: predictions of shape {tuple(predictions.shape)} (from logits of shape "
                             f"{tuple(logits.shape)}) don't match targets of shape {tuple(targets.shape)}")
        return (predictions == targets).float().mean().item()


_METRICS = {"accuracy": accuracy}
_SHORT_NAMES = {"accuracy": "acc"}  # what the progress bar calls them, to keep it on one line


def _resolve_metrics(metrics) -> dict:
    """``{name: function(outputs, targets) -> float}`` from names, functions, or a dict of both."""
    if metrics is None:
        return {}
    if isinstance(metrics, dict):
        return {name: _METRICS[fn] if isinstance(fn, str) else fn for name, fn in metrics.items()}
    if isinstance(metrics, str) or callable(metrics):
        metrics = (metrics,)
    resolved = {}
    for metric in metrics:
        if isinstance(metric, str):
            if metric not in _METRICS:
                raise ValueError(f"unknown metric {metric!r}: name one of {', '.join(map(repr, _METRICS))}, or pass "
                                 "a function metric(outputs, targets) -> float")
            resolved[metric] = _METRICS[metric]
        elif callable(metric):
            resolved[getattr(metric, "__name__", type(metric).__name__)] = metric
        else:
            raise TypeError(f"a metric is a name such as 'accuracy' or a function (outputs, targets) -> float, "
                            f"got {type(metric).__name__}")
    return resolved


def _to_device(value, device):
    if device is None:
        return value
    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value


def _unpack(batch, device):
    """A batch is ``(inputs, targets)``, as a DataLoader over ``TensorDataset(X, y)`` yields it."""
    try:
        inputs, targets = batch
    except (TypeError, ValueError):
        got = f"a {type(batch).__name__} of {len(batch)}" if hasattr(batch, "__len__") else type(batch).__name__
        raise TypeError(f"fit/evaluate: each batch must be a pair (inputs, targets), as a DataLoader over "
                        f"TensorDataset(X, y) gives; got {got}") from None
    return _to_device(inputs, device), _to_device(targets, device)


class _Averages:
    """Running means of the loss and the metrics over an epoch, each batch weighted by its size."""

    def __init__(self, names):
        self.totals = dict.fromkeys(names, 0.0)
        self.count = 0

    def add(self, size: int, values: dict) -> None:
        self.count += size
        for name, value in values.items():
            self.totals[name] += size * float(value)

    def means(self) -> dict:
        return {name: total / max(self.count, 1) for name, total in self.totals.items()}


def _measure(metrics: dict, outputs, targets) -> dict:
    with no_grad():  # measuring is not part of the model: nothing to record
        return {name: metric(outputs, targets) for name, metric in metrics.items()}


def _progress_bar(loader, description: str):
    """A ``tqdm.auto`` bar counting the batches of ``loader`` (a widget in Jupyter, text in a terminal),
    or None when tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    total = len(loader) if hasattr(loader, "__len__") else None
    return tqdm(total=total, desc=description, unit="batch", leave=True, dynamic_ncols=True)


def _postfix(means: dict, prefix: str = "") -> dict:
    return {prefix + _SHORT_NAMES.get(name, name): f"{value:.4f}" for name, value in means.items()}


def _describe(means: dict, prefix: str) -> str:
    return ", ".join(f"{prefix}{name} {value:.4f}" for name, value in means.items())


def _resolve_callbacks(callbacks) -> list:
    """``[(on_step or None, on_epoch_end or None)]``: objects with either method, or plain functions (on_step)."""
    if callbacks is None:
        return []
    if callable(callbacks) or not isinstance(callbacks, (list, tuple)):
        callbacks = [callbacks]
    resolved = []
    for callback in callbacks:
        on_step, on_epoch_end = getattr(callback, "on_step", None), getattr(callback, "on_epoch_end", None)
        if on_step is None and on_epoch_end is None:
            if not callable(callback):
                raise TypeError(f"fit(callbacks=...): a callback is an object with on_step(loss) and/or "
                                f"on_epoch_end(epoch, history), or a function called as on_step(loss); got "
                                f"{type(callback).__name__}")
            on_step = callback
        for name, method in (("on_step", on_step), ("on_epoch_end", on_epoch_end)):
            if method is not None and not callable(method):
                raise TypeError(f"fit(callbacks=...): {type(callback).__name__}.{name} must be a method, got "
                                f"{type(method).__name__}")
        resolved.append((on_step, on_epoch_end))
    return resolved


def _train_epoch(model, loader, loss_fn, optimizer, metrics, device, bar, epoch, on_steps=()) -> dict:
    """One pass over ``loader``, a step per batch; the epoch's mean loss and metrics."""
    averages = _Averages(["loss", *metrics])
    for step, batch in enumerate(loader, 1):
        inputs, targets = _unpack(batch, device)
        optimizer.zero_grad()                # forget last step's gradients
        outputs = model(inputs)
        loss = loss_fn(outputs, targets)
        loss_value = loss.item()
        if not math.isfinite(loss_value):    # stop before a step that would fill the weights with nan
            raise FloatingPointError(f"fit: the loss became {loss_value} at epoch {epoch}, batch {step}; the "
                                     "training diverged: try a smaller learning rate or clip the gradients")
        loss.backward()                      # d(loss)/d(weight) into every parameter's .grad
        optimizer.step()                     # move the weights against their gradients
        for on_step in on_steps:             # e.g. a GradientFlow reading this step's gradients
            on_step(loss_value)
        averages.add(len(targets), {"loss": loss_value, **_measure(metrics, outputs, targets)})
        if bar is not None:
            bar.set_postfix(_postfix(averages.means()), refresh=False)
            bar.update()
    return averages.means()


def evaluate(model, loader, loss_fn=None, metrics=("accuracy",), device=None) -> dict:
    """Average loss and metrics of ``model`` over ``loader``, e.g. ``{"loss": 0.12, "accuracy": 0.97}``.

    It runs in eval mode (dropout off, batch-norm uses its running statistics) and under ``no_grad``
    (no graph is recorded, so it is faster and lighter); the model goes back to the mode it was in.
    """
    metrics = _resolve_metrics(metrics)
    names = (["loss"] if loss_fn is not None else []) + list(metrics)
    averages = _Averages(names)
    was_training = model.training
    model.eval()
    try:
        with no_grad():
            for batch in loader:
                inputs, targets = _unpack(batch, device)
                outputs = model(inputs)
                values = _measure(metrics, outputs, targets)
                if loss_fn is not None:
                    values["loss"] = loss_fn(outputs, targets).item()
                averages.add(len(targets), values)
    finally:
        model.train(was_training)
    return averages.means()


def fit(model, train_loader, loss_fn, optimizer, epochs: int = 1, val_loader=None, metrics=("accuracy",),
        scheduler=None, progress: bool = True, device=None, callbacks=None) -> dict:
    """Train ``model`` for ``epochs`` passes over ``train_loader``; return the history of every epoch.

    Each batch is ``(inputs, targets)``: the loop calls ``loss_fn(model(inputs), targets)``, backpropagates
    and steps ``optimizer``. ``metrics`` are names (``"accuracy"``) or functions ``(outputs, targets) ->
    float``, measured on the training batches as they go and on ``val_loader`` after each epoch (see
    ``evaluate``). ``scheduler`` steps once per epoch (``ReduceLROnPlateau`` is given the validation loss,
    or the training loss without validation). ``device`` moves the model and each batch there first.

    The history is a dict of lists, one entry per epoch, ready to plot::

        {"train_loss": [...], "train_accuracy": [...], "val_loss": [...], "val_accuracy": [...], "lr": [...]}

    (the ``val_`` lists only with a ``val_loader``; ``lr`` is the first parameter group's learning rate
    during the epoch).

    ``callbacks`` are objects with ``on_step(loss)`` (called after every ``optimizer.step()`` with the batch
    loss) and/or ``on_epoch_end(epoch, history)``; a plain function is called as ``on_step``. A
    ``gl.lab.GradientFlow`` is one: ``fit(..., callbacks=[flow])``.
    """
    if not isinstance(epochs, int) or isinstance(epochs, bool) or epochs < 0:
        raise ValueError(f"fit: epochs must be a non-negative integer, got {epochs!r}")
    metrics = _resolve_metrics(metrics)
    callbacks = _resolve_callbacks(callbacks)
    on_steps = [on_step for on_step, _ in callbacks if on_step is not None]
    if device is not None:
        model.to(device)
    names = ["loss", *metrics]
    history = {f"train_{name}": [] for name in names}
    if val_loader is not None:
        history.update({f"val_{name}": [] for name in names})
    history["lr"] = []

    model.train()
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        history["lr"].append(optimizer.param_groups[0]["lr"])
        bar = _progress_bar(train_loader, f"epoch {epoch}/{epochs}") if progress else None
        try:
            train_means = _train_epoch(model, train_loader, loss_fn, optimizer, metrics, device, bar, epoch,
                                       on_steps)
            val_means = evaluate(model, val_loader, loss_fn, metrics, device) if val_loader is not None else {}
            if bar is not None:
                bar.set_postfix({**_postfix(train_means), **_postfix(val_means, "val_")})
        finally:
            if bar is not None:
                bar.close()
        for prefix, means in (("train_", train_means), ("val_", val_means)):
            for name, value in means.items():
                history[prefix + name].append(value)

        if scheduler is not None:
            if isinstance(scheduler, ReduceLROnPlateau):  # it watches a value rather than counting epochs
                scheduler.step(val_means.get("loss", train_means["loss"]))
            else:
                scheduler.step()

        if progress and bar is None:
            line = _describe(train_means, "train_") + (", " + _describe(val_means, "val_") if val_means else "")
            print(f"epoch {epoch}/{epochs}: {line} ({time.perf_counter() - start:.1f} s)", flush=True)
        for _, on_epoch_end in callbacks:
            if on_epoch_end is not None:
                on_epoch_end(epoch, history)
    return history

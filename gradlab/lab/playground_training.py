"""The playground's model and its training steps, on the real engine, with no widget and no thread.

``Training`` holds the dataset, an MLP built from the controls (seeded, so a reset gives the same
weights back), its optimizer, and the history of every step: the batch's loss and each layer's
‖∂L/∂W‖, read from the layers' ``.grad`` between ``backward()`` and ``optimizer.step()``.
``playground.py`` runs these steps in a background thread and draws them.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from .. import nn, optim
from ..autograd import no_grad
from ..creation import from_numpy
from ..random import manual_seed
from .playground_data import DATASETS, make_dataset

ACTIVATIONS = {"tanh": nn.Tanh, "relu": nn.ReLU, "sigmoid": nn.Sigmoid, "linear": nn.Identity}
OPTIMIZERS = {  # name -> how it is made from the parameters and the learning rate
    "sgd": lambda params, lr: optim.SGD(params, lr=lr),
    "momentum": lambda params, lr: optim.SGD(params, lr=lr, momentum=0.9),
    "rmsprop": lambda params, lr: optim.RMSprop(params, lr=lr),
    "adam": lambda params, lr: optim.Adam(params, lr=lr),
}
REGULARIZATIONS = ("none", "L1", "L2")
LEARNING_RATES = (0.0001, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)  # the menu's; any rate > 0 is accepted
REG_RATES = (0.0, 0.0001, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)

DEFAULTS = dict(dataset="spirals", noise=0.1, depth=2, width=8, activation="tanh", learning_rate=0.03,
                optimizer="adam", regularization="none", reg_rate=0.001, batch_size=32)
REBUILDS = ("dataset", "noise", "depth", "width", "activation")  # a change starts training again from the seed
LIMITS = dict(depth=(0, 6), width=(1, 16), batch_size=(1, 400))
MAX_NOISE = 0.5
POINTS = 400


class PlaygroundError(ValueError):
    """A control was given a value the playground cannot use."""


def check_control(name: str, value):
    """``value`` as the control ``name`` keeps it, or a PlaygroundError that says what is allowed."""
    where = f"Playground({name}=...)"
    if name in ("dataset", "activation", "optimizer", "regularization"):
        choices = {"dataset": DATASETS, "activation": ACTIVATIONS, "optimizer": OPTIMIZERS,
                   "regularization": REGULARIZATIONS}[name]
        if value not in choices:
            raise PlaygroundError(f"{where}: no {name} {value!r}; choose one of {', '.join(map(repr, choices))}")
        return value
    if name in LIMITS:
        low, high = LIMITS[name]
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or not low <= value <= high:
            meaning = {"depth": "the number of hidden layers", "width": "the neurons in each hidden layer",
                       "batch_size": "the points in each step's batch"}[name]
            raise PlaygroundError(f"{where}: {name} is {meaning}, an integer from {low} to {high}; got {value!r}")
        return int(value)
    if name in ("learning_rate", "reg_rate", "noise"):
        ok = isinstance(value, (int, float, np.floating)) and not isinstance(value, bool) and math.isfinite(value)
        low_ok = value > 0 if name == "learning_rate" else value >= 0
        if not (ok and low_ok and (name != "noise" or value <= MAX_NOISE)):
            rule = {"learning_rate": "a number > 0 (the menu offers 0.0001 to 3)",
                    "reg_rate": "a number ≥ 0: how strongly the penalty pulls the weights to 0",
                    "noise": f"the standard deviation of the points' jitter, from 0 to {MAX_NOISE}"}[name]
            raise PlaygroundError(f"{where}: {name} is {rule}; got {value!r}")
        return float(value)
    raise PlaygroundError(f"Playground: no control {name!r}; the controls are {', '.join(DEFAULTS)}")


def build_mlp(depth: int, width: int, activation: str, seed: int):
    """2 inputs → ``depth`` hidden layers of ``width`` → 1 logit, named ``hidden1``, ``act1``, ..., ``output``."""
    manual_seed(seed)
    layers, inputs = OrderedDict(), 2
    for index in range(1, depth + 1):
        layers[f"hidden{index}"] = nn.Linear(inputs, width)
        layers[f"act{index}"] = ACTIVATIONS[activation]()
        inputs = width
    layers["output"] = nn.Linear(inputs, 1)
    return nn.Sequential(layers)


class History:
    """Every step's number, batch loss and per-layer ‖∂L/∂W‖, in numpy arrays that grow by doubling."""

    def __init__(self, layers: list):
        self.layers = list(layers)
        self.count = 0
        self._steps = np.zeros(256, np.int64)
        self._losses = np.zeros(256)
        self._norms = np.zeros((256, len(self.layers)))

    def add(self, step: int, loss: float, norms: list) -> None:
        if self.count == len(self._steps):
            self._steps, self._losses, self._norms = (np.concatenate([a, np.zeros_like(a)])
                                                      for a in (self._steps, self._losses, self._norms))
        self._steps[self.count], self._losses[self.count] = step, loss
        self._norms[self.count] = norms
        self.count += 1

    @property
    def steps(self) -> np.ndarray:
        return self._steps[:self.count]

    @property
    def losses(self) -> np.ndarray:
        return self._losses[:self.count]

    @property
    def grad_norms(self) -> dict:
        """{layer: its ‖∂L/∂W‖ at every step}."""
        return {name: self._norms[:self.count, i] for i, name in enumerate(self.layers)}


class Training:
    """The model, its optimizer and data, and ``step()``: one real training step on one batch.

    Controls that change the model or the data (``REBUILDS``) rebuild it from ``seed``; the others
    (learning rate, optimizer, regularisation, batch size) are taken at the start of the next step."""

    def __init__(self, seed: int = 0, **controls):
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise PlaygroundError(f"Playground(seed=...): seed is an integer, got {seed!r}")
        self.seed = seed
        self.controls = {name: check_control(name, value) for name, value in {**DEFAULTS, **controls}.items()}
        self._pending = {}  # controls set while a step may be running: taken at the start of the next step
        self.rebuild()

    # --- building ----------------------------------------------------------------------------------

    def rebuild(self) -> None:
        """The data, and the model at its seed's initial weights; step 0, an empty history."""
        self.controls.update(self._pending)
        self._pending = {}
        c = self.controls
        self.X, self.y = make_dataset(c["dataset"], POINTS, c["noise"], self.seed)
        self.model = build_mlp(c["depth"], c["width"], c["activation"], self.seed)
        self.optimizer = OPTIMIZERS[c["optimizer"]](self.model.parameters(), c["learning_rate"])
        self.layers = [name for name, module in self.model.named_children() if isinstance(module, nn.Linear)]
        self.history = History(self.layers)
        self.step_count = 0
        self.last_batch = None
        self._order = np.random.default_rng(self.seed).permutation(POINTS)  # the batches' order, seeded too
        self._cursor = 0

    def set(self, **controls) -> None:
        """Check and keep new controls for the next step; one in ``REBUILDS`` waits for ``rebuild()``."""
        checked = {name: check_control(name, value) for name, value in controls.items()}
        self._pending = {**self._pending, **checked}  # replaced whole: a running step reads it once

    @property
    def settings(self) -> dict:
        """The controls as they will be at the next step (those set since the last one included)."""
        return {**self.controls, **self._pending}

    def _take_pending(self) -> None:
        """The controls set since the last step, but those that wait for ``rebuild()``."""
        pending = self._pending
        self._pending = {name: value for name, value in pending.items() if name in REBUILDS}
        pending = {name: value for name, value in pending.items() if name not in REBUILDS}
        old = dict(self.controls)
        self.controls.update(pending)
        if self.controls["optimizer"] != old["optimizer"]:  # a new optimizer starts with no state
            self.optimizer = OPTIMIZERS[self.controls["optimizer"]](self.model.parameters(),
                                                                    self.controls["learning_rate"])
        for group in self.optimizer.param_groups:
            group["lr"] = self.controls["learning_rate"]

    # --- one step ----------------------------------------------------------------------------------

    def next_batch(self):
        """The next ``batch_size`` points of a seeded shuffle, reshuffled after each pass over the data."""
        size, picked = self.controls["batch_size"], []
        while len(picked) < size:
            if self._cursor == POINTS:
                self._order, self._cursor = np.random.default_rng([self.seed, self.step_count]).permutation(POINTS), 0
            take = min(size - len(picked), POINTS - self._cursor)
            picked.extend(self._order[self._cursor:self._cursor + take])
            self._cursor += take
        index = from_numpy(np.asarray(picked, np.int64))
        return self.X[index], self.y[index]

    def objective(self, x, y):
        """The loss a step minimises: binary cross-entropy of the logits, plus the weights' penalty."""
        loss = nn.functional.binary_cross_entropy_with_logits(self.model(x), y)
        kind, rate = self.controls["regularization"], self.controls["reg_rate"]
        if kind == "none" or rate == 0:
            return loss
        weights = [module.weight for name, module in self.model.named_children() if name in self.layers]
        penalty = sum(w.abs().sum() for w in weights) if kind == "L1" else sum((w * w).sum() for w in weights) / 2
        return loss + rate * penalty

    def step(self) -> float:
        """One step: a batch, the loss, backward, each layer's ‖∂L/∂W‖ from ``.grad``, the optimizer's update."""
        if self._pending:
            self._take_pending()
        x, y = self.last_batch = self.next_batch()
        self.optimizer.zero_grad()
        loss = self.objective(x, y)
        loss.backward()
        self.step_count += 1
        value = float(loss.item())
        self.history.add(self.step_count, value, self.grad_norms())
        self.optimizer.step()
        return value

    def grad_norms(self) -> list:
        """‖∂L/∂W‖ of each layer: its weight's and bias's gradients together (nan before any backward)."""
        norms = []
        for name in self.layers:
            grads = [p.grad for p in getattr(self.model, name).parameters()]
            squares = [float(np.vdot(g.numpy(), g.numpy())) for g in grads if g is not None]
            norms.append(math.sqrt(sum(squares)) if squares else math.nan)
        return norms

    # --- reading the model -------------------------------------------------------------------------

    def predict(self, points) -> np.ndarray:
        """P(label 1) at each point, the model's sigmoid of its logit, as a float64 array (no graph kept)."""
        with no_grad():
            return 1 / (1 + np.exp(-self.model(points).numpy().astype(np.float64).ravel()))

    def accuracy(self) -> float:
        return float(((self.predict(self.X) > 0.5) == (self.y.numpy().ravel() > 0.5)).mean())

    def weights(self) -> list:
        """Each layer's weight matrix as numpy (out × in), input side first: the network diagram's edges."""
        return [getattr(self.model, name).weight.detach().numpy().copy() for name in self.layers]

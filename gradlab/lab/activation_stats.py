"""What each layer's activations look like over training: mean, std, saturated and dead units, histograms.

``stats = gl.lab.ActivationStats(model)`` puts one forward hook on every activation module (``nn.Tanh``,
``nn.ReLU``, ...), or on the modules you name, and on every training forward (grad enabled) keeps a few
numbers and a fixed-range histogram of each one's output: Karpathy's per-layer histograms and fast.ai's
"colourful dimension" are drawn from them (``activation_picture.py``). ``stats.remove()`` lets go.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd import is_grad_enabled
from ..tensor import Tensor
from .arguments import described
from .ownership import counts_as_training
from .binning import histogram_counts
from .summary import as_numpy

SATURATED = 0.97  # |tanh| above it (sigmoid: |2σ − 1| above it): the slope is below 6 % of its largest (Karpathy)
STATS = {
    "mean": "mean of the outputs",
    "std": "standard deviation of the outputs",
    "saturated": "fraction of outputs where the activation's slope is (almost) 0: |tanh| > 0.97, "
                 "sigmoid within 0.015 of 0 or 1, ReLU = 0",
    "dead": "fraction of units whose slope is (almost) 0 for every example of the batch: no gradient passes them",
    "grad_std": "standard deviation of the gradient that reached the outputs in backward (None before one)",
}


class ActivationStatsError(ValueError):
    """ActivationStats was asked for something it cannot give (no such layer, nothing recorded yet, bad argument)."""


def kind_of(module) -> str:
    """'tanh', 'sigmoid', 'relu' (an output of exactly 0 passes no gradient) or 'other', from the module's class."""
    name = type(module).__name__
    return {"Tanh": "tanh", "Sigmoid": "sigmoid", "ReLU": "relu"}.get(name, "other")


ACTIVATIONS = ("Tanh", "Sigmoid", "ReLU", "LeakyReLU", "GELU", "SiLU", "ELU", "Softplus", "Mish", "ReLU6",
               "Hardtanh", "SELU", "CELU", "Softsign")  # the modules watched when no layers are named


def flat_mask(values: np.ndarray, kind: str) -> np.ndarray | None:
    """True where the activation's slope is (almost) zero: saturated tanh or sigmoid, a ReLU at 0 (None: 'other')."""
    if kind == "tanh":
        return np.abs(values) > SATURATED
    if kind == "sigmoid":
        return np.abs(2 * values - 1) > SATURATED
    if kind == "relu":
        return values <= 0
    return None


def dead_fraction(flat: np.ndarray) -> float:
    """The fraction of units (dimension 1: features or channels) flat for every example and position."""
    if flat.ndim < 2:
        return float(flat.mean()) if flat.size else math.nan
    per_unit = np.moveaxis(flat, 1, 0).reshape(flat.shape[1], -1)
    return float(per_unit.all(axis=1).mean()) if per_unit.size else math.nan


def figures_of(values: np.ndarray, kind: str) -> dict:
    """mean, std, saturated, dead of one recorded output (saturated and dead are None for an 'other' layer)."""
    values = values.astype(np.float64, copy=False)
    flat = flat_mask(values, kind)
    return {"mean": float(values.mean()), "std": float(values.std()),
            "saturated": None if flat is None else float(flat.mean()),
            "dead": None if flat is None else dead_fraction(flat), "grad_std": None}


class _Watched:
    """One watched module: its name, kind, histogram range, hook handle and what it recorded."""

    __slots__ = ("name", "module", "kind", "low", "high", "handle", "records", "hists", "last", "last_grad")

    def __init__(self, name, module, limit):
        self.name, self.module, self.kind = name, module, kind_of(module)
        self.low, self.high = {"tanh": (-1.0, 1.0), "sigmoid": (0.0, 1.0), "relu": (0.0, limit)}.get(
            self.kind, (-limit, limit))
        self.handle, self.records, self.hists, self.last, self.last_grad = None, [], [], None, None


class ActivationStats:
    """Per-layer activation statistics over training, from forward hooks: ``stats = ActivationStats(model)``.

    ``layers`` names the modules to watch (``["0", "blocks.2"]``); by default every activation module.
    Each training forward of the model (grad enabled) is a step; it adds one record per layer: ``mean``,
    ``std``, ``saturated``, ``dead``, ``grad_std`` (when backward comes) and a histogram of ``bins`` bins over
    a fixed range (tanh [-1, 1], sigmoid [0, 1], ReLU [0, limit], any other [-limit, limit]; values beyond it
    count in the end bins; a ReLU's zeros are counted in ``saturated``, not in its histogram, whose spike at
    0 would hide the rest). Past ``max_steps`` records every other one is dropped, so memory stays bounded.
    """

    def __init__(self, model, layers=None, *, bins: int = 40, limit: float = 4.0, max_steps: int = 1000):
        if isinstance(model, type):
            raise ActivationStatsError(f"ActivationStats(model): got the class {model.__name__}, not a model; "
                                       f"make one first, e.g. ActivationStats(nn.Sequential(nn.Linear(2, 8), nn.Tanh()))")
        if not hasattr(model, "named_modules") or not hasattr(model, "register_forward_hook"):
            raise ActivationStatsError(f"ActivationStats(model): model must be a gradlab.nn.Module, got {described(model)}")
        for name, value, low in (("bins", bins, 2), ("max_steps", max_steps, 8)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise ActivationStatsError(f"ActivationStats(model, {name}=...): {name} is an integer ≥ {low}, "
                                           f"got {value!r}")
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit < math.inf:
            raise ActivationStatsError(f"ActivationStats(model, limit=...): limit is the histograms' largest value, "
                                       f"a positive number; got {limit!r}")
        self.model, self.bins, self.limit, self.max_steps = model, bins, float(limit), max_steps
        self.watched = [_Watched(name, module, self.limit) for name, module in _chosen(model, layers)]
        for layer in self.watched:
            layer.handle = layer.module.register_forward_hook(self._hook(layer))
        self.steps: list = []  # the forward count of each kept record
        self.count = 0  # training forwards seen so far
        self._recording = False  # inside a training forward of the model
        self._model_hooks = [model.register_forward_pre_hook(self._start), model.register_forward_hook(self._end)]

    # --- recording ----------------------------------------------------------------------------------------

    def _start(self, module, args) -> None:
        """The model's forward pre-hook: a training forward (in training mode, grad enabled, not a lab replay,
        such as GradientFlow.open's recording in eval mode) is a new step."""
        self._recording = module.training and is_grad_enabled() and counts_as_training()
        if self._recording:
            self._new_step()

    def _end(self, module, args, output) -> None:
        self._recording = False

    def _hook(self, layer: _Watched):
        def hook(module, args, output):
            if not self._recording:  # not inside a training forward of the model
                return
            out = next((o for o in (output if isinstance(output, tuple) else (output,)) if isinstance(o, Tensor)), None)
            if out is None:
                return
            values = as_numpy(out.detach()).astype(np.float64)
            layer.last = values
            shown = values[values > 0] if layer.kind == "relu" else values  # a ReLU's zeros are its 'saturated'
            counts = histogram_counts(shown, layer.low, layer.high, self.bins)
            self._fill(layer)
            if len(layer.records) == len(self.steps):  # called twice in one forward: the last call is kept
                layer.records.pop(), layer.hists.pop()
            record = figures_of(values, layer.kind)
            layer.records.append(record)
            layer.hists.append(counts)
            if out.requires_grad:  # backward's side: the gradient that reaches this output, when it comes
                out.register_hook(self._grad_hook(layer, record))
        return hook

    @staticmethod
    def _grad_hook(layer: _Watched, record: dict):
        def on_grad(grad):
            if counts_as_training():  # not a stepper's replay
                g = as_numpy(grad)
                record["grad_std"] = float(g.std(dtype=np.float64))
                layer.last_grad = g.copy()  # the engine may reuse its array; the picture needs this step's
        return on_grad

    def _new_step(self) -> None:
        self.count += 1
        self.steps.append(self.count)
        if len(self.steps) > self.max_steps:  # keep the newest and every other one before it
            keep = list(range(len(self.steps) - 1, -1, -2))[::-1]
            self.steps = [self.steps[i] for i in keep]
            for layer in self.watched:
                layer.records = [layer.records[i] for i in keep if i < len(layer.records)]
                layer.hists = [layer.hists[i] for i in keep if i < len(layer.hists)]

    def _fill(self, layer: _Watched) -> None:
        """A layer the forward skipped at a step gets an empty record there, so each list lines up with steps."""
        while len(layer.records) < len(self.steps) - 1:
            layer.records.append({stat: None for stat in STATS})
            layer.hists.append(np.zeros(self.bins, dtype=np.int64))

    def remove(self) -> None:
        """Detach every hook: the model runs as if the stats had never been there (what was kept stays)."""
        for layer in self.watched:
            if layer.handle is not None:
                layer.handle.remove()
                layer.handle = None
        for handle in self._model_hooks:
            handle.remove()
        self._model_hooks = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()

    # --- reading ------------------------------------------------------------------------------------------

    @property
    def layers(self) -> list:
        return [layer.name for layer in self.watched]

    def kind(self, layer: str) -> str:
        return self._layer(layer).kind

    def latest(self, stat: str | None = None) -> dict:
        """{layer: value of ``stat``} at the newest record, or {layer: {stat: value}} when ``stat`` is None."""
        if stat is not None:
            _check_stat(stat, "latest")
        self._recorded("latest")
        return {layer.name: (_at(layer, -1) if stat is None else _at(layer, -1)[stat]) for layer in self.watched}

    def history(self, stat: str) -> dict:
        """{layer: [value of ``stat`` at each kept step]} (None where the forward did not reach the layer)."""
        _check_stat(stat, "history")
        return {layer.name: [_at(layer, i)[stat] for i in range(len(self.steps))] for layer in self.watched}

    def histogram(self, layer: str, step: int | None = None) -> dict:
        """{"low", "high", "counts"} of ``layer``'s outputs at the kept step nearest ``step`` (the newest: None)."""
        watched = self._layer(layer)
        self._recorded("histogram")
        index = self._index(step)
        counts = watched.hists[index] if index < len(watched.hists) else np.zeros(self.bins, dtype=np.int64)
        return {"low": watched.low, "high": watched.high, "counts": [int(c) for c in counts],
                "step": self.steps[index]}

    def output(self, layer: str) -> Tensor:
        """The output ``layer`` gave at the last training forward (a copy, float64, detached)."""
        from ..creation import tensor
        watched = self._layer(layer)
        if watched.last is None:
            raise ActivationStatsError(f"ActivationStats.output({layer!r}): no training forward has reached that "
                                       "layer yet; run the model on a batch (with gradients on) first")
        return tensor(watched.last.copy())

    def table(self) -> str:
        """One line per layer at the newest record: mean, std, saturated and dead (Karpathy's printout)."""
        if not self.steps:
            return f"ActivationStats: {len(self.watched)} layers watched, no training forward yet"
        lines = []
        for layer in self.watched:
            r = _at(layer, -1)
            line = f"layer {layer.name} ({type(layer.module).__name__}): "
            if r["mean"] is None:
                lines.append(line + "not reached at the last step")
                continue
            line += f"mean {r['mean']:+.2f}, std {r['std']:.2f}"
            if r["saturated"] is not None:
                word = "zero" if layer.kind == "relu" else "saturated"
                line += f", {word} {r['saturated']:.1%}, dead units {r['dead']:.1%}"
            if r.get("grad_std") is not None:
                line += f"; gradient std {r['grad_std']:.1e}"
            lines.append(line)
        return "\n".join(lines)

    def _layer(self, name) -> _Watched:
        for layer in self.watched:
            if layer.name == name:
                return layer
        raise ActivationStatsError(f"ActivationStats: no layer {name!r} is watched; the layers are "
                                   f"{', '.join(map(repr, self.layers))}")

    def _recorded(self, where: str) -> None:
        if not self.steps:
            raise ActivationStatsError(f"ActivationStats.{where}(): nothing recorded yet; run the model on a batch "
                                       "with gradients on (a training forward) first")

    def _index(self, step) -> int:
        if step is None:
            return len(self.steps) - 1
        if isinstance(step, bool) or not isinstance(step, int):
            raise TypeError(f"ActivationStats: step is a forward count (an int), or None for the newest; "
                            f"got {described(step)}")
        return int(np.argmin([abs(s - step) for s in self.steps]))

    # --- pictures -------------------------------------------------------------------------------------------

    def histograms(self, step: int | None = None):
        """Karpathy's picture: each layer's histogram of outputs at one step, overlaid, with its figures."""
        from .activation_picture import histograms_svg
        self._recorded("histograms")
        return histograms_svg(self, self._index(step))

    def gradient_histograms(self):
        """Karpathy's second picture: each layer's histogram of the gradient that reached its outputs, at the
        last backward, overlaid on one symmetric range."""
        from .activation_picture import gradient_histograms_svg
        if all(layer.last_grad is None for layer in self.watched):
            raise ActivationStatsError("ActivationStats.gradient_histograms(): no backward has reached the watched "
                                       "layers yet; run loss.backward() after a training forward first")
        return gradient_histograms_svg(self)

    def color_dim(self):
        """fast.ai's "colourful dimension": per layer, its histogram at every step as one column of colour."""
        from .activation_picture import color_dim_svg
        self._recorded("color_dim")
        return color_dim_svg(self)

    def over_steps(self, stat: str):
        """One line per layer: ``stat`` (mean, std, saturated, dead) over the kept steps."""
        from .activation_picture import over_steps_svg
        _check_stat(stat, "over_steps")
        self._recorded("over_steps")
        return over_steps_svg(self, stat)

    def to_svg(self) -> str:
        """The histograms at the newest step above the colour-dimension strips: the saved notebook's picture."""
        from .activation_picture import summary_svg
        return summary_svg(self)

    def _repr_mimebundle_(self, **kwargs):
        svg = self.to_svg()
        return {"text/plain": repr(self), "image/svg+xml": svg,
                "text/html": f'<div class="gl-activation-stats">{svg}</div>'}, {}

    def __repr__(self) -> str:
        return f"<gradlab.lab.ActivationStats: {len(self.watched)} layers, {self.count} forwards>\n{self.table()}"


def _at(layer: _Watched, index: int) -> dict:
    try:
        return layer.records[index]
    except IndexError:
        return {stat: None for stat in STATS}


def _check_stat(stat, where: str) -> None:
    if stat not in STATS:
        raise ActivationStatsError(f"ActivationStats.{where}(): no statistic {stat!r}; they are {', '.join(STATS)}")


def _chosen(model, layers) -> list:
    """(name, module) to watch: the named ones, in the model's order, or every activation module."""
    modules = dict(model.named_modules())
    if layers is None:
        found = [(name, m) for name, m in modules.items() if type(m).__name__ in ACTIVATIONS]
        if not found:
            raise ActivationStatsError(
                f"ActivationStats(model): {type(model).__name__} has no activation modules ({', '.join(ACTIVATIONS[:4])}, "
                f"...) to watch (a functional gl.relu has no module to hook); name the modules to watch: "
                f"ActivationStats(model, layers=[...]) with names from {_names(modules)}")
        return found
    if isinstance(layers, str) or not all(isinstance(name, str) for name in layers):
        raise ActivationStatsError(f"ActivationStats(model, layers=...): layers is a list of module names, e.g. "
                                   f"['0', 'blocks.1']; got {described(layers)}")
    missing = [name for name in layers if name not in modules or name == ""]
    if missing:
        raise ActivationStatsError(f"ActivationStats(model, layers=...): {type(model).__name__} has no module "
                                   f"{missing[0]!r}; its modules are {_names(modules)}")
    if not layers:
        raise ActivationStatsError("ActivationStats(model, layers=[]): name at least one module to watch")
    return [(name, modules[name]) for name in modules if name in layers]


def _names(modules: dict) -> str:
    names = [repr(name) for name in modules if name]
    return ", ".join(names[:12]) + (", ..." if len(names) > 12 else "")

"""Gradient flow over training: per layer, how big the gradients are, and how much each step moves the weights.

A layer is a module that owns parameters itself (``0``, ``layers.2.fc``). One forward hook per layer
puts a hook on its output, so that when backward reaches the layer we learn ‖∂L/∂output‖ (the gradient
flowing out of it, towards the input) and keep a copy of its weights before the optimizer moves them.
``update()`` after ``optimizer.step()`` then reads ‖∂L/∂W‖, ‖W‖ and ‖W_after − W_before‖ / ‖W_before‖.
The model may be gradlab's or PyTorch's: the few tensor operations that differ go through the engine's
reader (``flow_reader.py``). No anywidget here: scripts use ``Flow`` directly; ``flow_picture.py`` draws it,
``gradient_flow.py`` shows it live.
"""

from __future__ import annotations

import math
import warnings
from collections import deque

import numpy as np

from .arguments import described
from .flow_errors import FlowError, FlowWarning
from .flow_reader import reader_for
from .ownership import counts_as_training
from .summary import summarize

# figure -> (what it is called on a chart, what it measures)
FIGURES = {
    "grad_norm": ("‖∂L/∂W‖", "gradient norm of the layer's parameters"),
    "update_ratio": ("‖ΔW‖ / ‖W‖", "how far one step moved the weights, relative to their size"),
    "weight_norm": ("‖W‖", "weight norm"),
    "out_grad_norm": ("‖∂L/∂output‖", "gradient flowing out of the layer, back towards the input"),
}


NO_FIGURES = (None, None, None, None)  # a layer at an update it was not part of the model


class _Layer:
    """One module that owns parameters: its hooks' findings for the step under way.

    ``since`` is the first update this module is reported at (0: from the start; a layer replaced during
    training gets a new _Layer in the same place); ``gone`` marks a layer the model lost."""

    __slots__ = ("name", "module", "params", "before", "out_sq", "handle", "since", "gone")

    def __init__(self, name, module, params, since=0):
        self.name, self.module, self.params = name, module, params
        self.before = None  # host copies of the parameters, taken when backward reached the layer
        self.out_sq = 0.0  # Σ ‖∂L/∂output‖² over this step's calls of the layer
        self.handle = None
        self.since, self.gone = since, False


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


class Flow:
    """Per-layer gradient figures over training: ``flow = Flow(model)``, then ``flow.update()`` after each step.

    ``vanishing`` and ``exploding`` are the thresholds of ``flags()``, judged over the last ``window``
    updates. The history keeps at most about ``max_points`` steps (older ones are thinned, every other one
    dropped), and a gradient histogram every ``histogram_every`` steps, at most ``max_histograms`` of them.
    """

    def __init__(self, model, *, vanishing: float = 1e-3, exploding: float = 1e2, window: int = 10,
                 max_points: int = 400, histogram_every: int = 20, max_histograms: int = 100):
        if isinstance(model, type):
            made = (f"nn.{model.__name__}" if model.__module__.startswith(("gradlab.nn", "torch.nn"))
                    else model.__name__)
            raise FlowError(f"GradientFlow(model): got the class {model.__name__}, not a model; make one first: "
                            f"GradientFlow({made}(...)), e.g. GradientFlow(nn.Linear(3, 1))")
        if not hasattr(model, "named_modules") or not hasattr(model, "register_forward_hook"):
            raise FlowError(f"GradientFlow(model): model must be a gradlab.nn.Module or a torch.nn.Module, got "
                            f"{type(model).__name__}")
        for name, value, rule in (("vanishing", vanishing, "a number in (0, 1)"),
                                  ("exploding", exploding, "a positive number")):
            if (isinstance(value, bool) or not isinstance(value, (int, float))
                    or not (0 < value and (name != "vanishing" or value < 1))):
                raise FlowError(f"GradientFlow(model, {name}=...): {name} is {rule}, got {value!r}")
        for name, value, low in (("window", window, 1), ("max_points", max_points, 8),
                                 ("histogram_every", histogram_every, 1), ("max_histograms", max_histograms, 2)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise FlowError(f"GradientFlow(model, {name}=...): {name} is an integer ≥ {low}, got {value!r}")
        self.model = model
        self.reader = reader_for(model)  # what differs between engines: tensors, hooks, copies (flow_reader.py)
        self.vanishing, self.exploding, self.window = float(vanishing), float(exploding), window
        self.max_points, self.histogram_every, self.max_histograms = max_points, histogram_every, max_histograms
        found = _owners(model)
        if not found:
            raise FlowError(f"GradientFlow(model): {type(model).__name__} has no trainable parameters, so no "
                            "gradient flows into it; pass the model you train (with Linear, Conv2d, ... layers)")
        # a layer replaced keeps its place (and its line); one added goes last; one removed stays, marked gone
        self.layers = [self._hooked(_Layer(name, module, params)) for name, (module, params) in found.items()]
        self.points: list = []  # one per kept update: (update count, loss, per layer (‖∇W‖, ratio, ‖W‖, ‖∇out‖))
        self.histogram_steps: list = []
        self.histograms = {layer.name: [] for layer in self.layers}  # [{"low", "high", "counts"}] per kept step
        self._recent = deque(maxlen=window)  # the last updates: (update count, every layer's figures)
        self.changes: list = []  # the layers replaced, added or removed during training: {step, layer, change, text}
        self.count = 0  # updates so far
        self._looked_at = 0  # the update at which the model's layers were last compared with the hooked ones
        self._reached = False  # has a backward reached the model since the last update?
        self._ever_reached = False
        self.last_input = None  # the args of the model's last training forward, for open()
        self._model_hook = model.register_forward_pre_hook(self._keep_input)

    def _hooked(self, layer: _Layer) -> _Layer:
        layer.handle = layer.module.register_forward_hook(self._forward_hook(layer))
        return layer

    # --- the hooks: note, copy, no more ---------------------------------------------------------------

    def _keep_input(self, module, args) -> None:
        if self.reader.training_forward():  # a training forward, not an evaluation under no_grad
            self.last_input = args

    def _forward_hook(self, layer: _Layer):
        reader = self.reader

        def on_output_grad(grad):
            if not counts_as_training():  # a stepper's replay or a profile's backward: not a training step
                return
            if layer.before is None:  # the weights as the optimizer will find them
                layer.before = [reader.snapshot(p) for p in layer.params]
            layer.out_sq += reader.squared(grad)
            self._reached = True

        def hook(module, args, output):
            reader.watch(output, on_output_grad)
        return hook

    def remove(self) -> None:
        """Detach every hook: the model trains as if the flow had never been there."""
        for layer in self.layers:
            if layer.handle is not None:
                layer.handle.remove()
                layer.handle = None
        if self._model_hook is not None:
            self._model_hook.remove()
            self._model_hook = None

    # --- after each optimizer.step() -------------------------------------------------------------------

    def update(self, loss=None) -> None:
        """Read this step's figures (call it after ``optimizer.step()``); ``loss`` is kept beside them."""
        if loss is not None:
            loss = self.reader.loss_number(loss)
        if not self._reached and not self._missed_by_hooks():
            if not self._ever_reached:
                raise FlowError("GradientFlow.update(): no backward has reached the model yet; call it after "
                                "loss.backward() and optimizer.step(), once per training step")
            raise FlowError("GradientFlow.update(): no backward reached the model since the last update(); call "
                            "it once per training step, after loss.backward() and optimizer.step()")
        if self.count + 1 - self._looked_at >= self.histogram_every or any(
                layer.before is None for layer in self.layers if not layer.gone):
            # a layer backward missed may have been replaced or removed: compare the model's layers with the
            # hooked ones. It walks the model, so not at every update: a layer added shows within histogram_every
            self._follow_model()
        self.count += 1
        figures = tuple(NO_FIGURES if layer.gone else self._figures(layer) for layer in self.layers)
        self._recent.append((self.count, figures))
        self.points.append((self.count, loss, figures))
        if self.count % self.histogram_every == 0 or self.count == 1:
            self.histogram_steps.append(self.count)
            for layer in self.layers:
                self.histograms[layer.name].append(None if layer.gone else self._histogram(layer))
        self._thin()
        for layer in self.layers:
            layer.before, layer.out_sq = None, 0.0
        self._reached, self._ever_reached = False, True

    def on_step(self, loss) -> None:
        """``fit(..., callbacks=[flow])`` calls this after every ``optimizer.step()``."""
        self.update(loss=loss)

    def _figures(self, layer: _Layer) -> tuple:
        """‖∂L/∂W‖, ‖W‖ and ‖W − W_before‖ / ‖W_before‖ over all of the layer's parameters together.

        ‖W‖ is taken of W_before, the weights that computed this step's gradient (the copy exists
        anyway, and the step moved them by ‖ΔW‖ only); the current weights when backward missed the layer.
        """
        grad_sq = weight_sq = moved_sq = 0.0
        has_grad = False
        before, reader = layer.before, self.reader
        for i, p in enumerate(layer.params):
            if p.grad is not None:
                has_grad = True
                grad_sq += reader.squared(p.grad)
            if before is None:
                weight_sq += reader.squared(p)
            else:
                weight_sq += reader.squared(before[i])
                moved_sq += reader.squared_moved(p, before[i])
        reached = before is not None
        return (_sqrt(grad_sq) if has_grad else None,                                        # grad_norm
                _sqrt(moved_sq) / _sqrt(weight_sq) if reached and weight_sq > 0 else None,  # update_ratio
                _sqrt(weight_sq),                                                           # weight_norm
                _sqrt(layer.out_sq) if reached else None)                                   # out_grad_norm

    def _histogram(self, layer: _Layer) -> dict | None:
        """The counts of the layer's gradient values; nan and inf are not counted, but a note says how many."""
        grads = [self.reader.flat_values(p.grad) for p in layer.params if p.grad is not None]
        if not grads:
            return None
        summary = summarize(np.concatenate(grads))
        if not (summary["nan"] or summary["inf"]):
            return summary["hist"]
        hist = summary["hist"] or {"low": None, "high": None, "counts": []}
        broken = f"{summary['nan']} nan and {summary['inf']} inf" if summary["nan"] and summary["inf"] else \
            f"{summary['nan']} nan" if summary["nan"] else f"{summary['inf']} inf"
        note = (f"all {summary['numel']} gradient values are not finite ({broken}): nothing to count"
                if not hist["counts"] else f"{broken} of {summary['numel']} gradient values, not counted")
        return {**hist, "nan": summary["nan"], "inf": summary["inf"], "note": note}

    # --- the model changing under the flow --------------------------------------------------------------

    def _missed_by_hooks(self) -> bool:
        """No hook heard a backward: were the hooked layers all replaced, and did their new modules get gradients?"""
        return any(p.grad is not None for layer in self._follow_model() for p in layer.params)

    def _follow_model(self) -> list:
        """Hook a layer the model gained, a module that replaced a layer's (or its new parameters), and let
        go of a layer it lost: each change is noted at the step it first shows in, and warned about. Returns
        the layers newly hooked."""
        step, looked_at = self.count + 1, self._looked_at
        self._looked_at = step
        found = _owners(self.model)
        since_looked = f"at step {step}" if looked_at >= step - 1 else f"between steps {looked_at + 1} and {step}"
        for index, layer in enumerate(self.layers):
            # a module taken out of the forward misses the first backward after: that update is the step it went
            when = f"at step {step}" if layer.before is None and not layer.gone else since_looked
            now = found.pop(layer.name, None)
            if now is None:
                if not layer.gone:
                    self._let_go(layer)
                    layer.gone = True
                    self._note(step, layer.name, "removed",
                               f"layer {layer.name} was removed from the model {when}: its line ends there")
                continue
            module, params = now
            if not layer.gone and module is layer.module and _same(params, layer.params):
                continue
            before = f"; its line before step {step} is the old one's" if step > 1 else ""
            if layer.gone:
                what = f"is back {when}, a {type(module).__name__}; the gap in its line is the steps it was gone"
            elif module is layer.module:
                what = f"has new parameters {when} (a parameter replaced, frozen or unfrozen){before}"
            else:
                what = (f"was replaced {when}: a new {type(module).__name__} (was a {type(layer.module).__name__})"
                        f"{before}")
            self._let_go(layer)
            self.layers[index] = self._hooked(_Layer(layer.name, module, params, since=step))
            self._note(step, layer.name, "replaced", f"layer {layer.name} {what}")
        for name, (module, params) in found.items():
            self.layers.append(self._hooked(_Layer(name, module, params, since=step)))
            self.histograms[name] = [None] * len(self.histogram_steps)
            self._note(step, name, "added", f"layer {name} ({type(module).__name__}) was added to the model "
                                             f"{since_looked}: it has no figures before step {step}")
        return [layer for layer in self.layers if layer.since == step and not layer.gone]

    @staticmethod
    def _let_go(layer: _Layer) -> None:
        if layer.handle is not None:
            layer.handle.remove()
            layer.handle = None

    def _note(self, step: int, layer: str, change: str, text: str) -> None:
        self.changes.append({"step": step, "layer": layer, "change": change, "text": text})
        warnings.warn(f"GradientFlow: {text}", FlowWarning, stacklevel=4)

    def _thin(self) -> None:
        """Past the limit, drop every other point of the older half: recent steps stay dense."""
        if len(self.points) > self.max_points:
            self.points = [self.points[i] for i in _thinned(len(self.points))]
        if len(self.histogram_steps) > self.max_histograms:
            keep = _thinned(len(self.histogram_steps))
            self.histogram_steps = [self.histogram_steps[i] for i in keep]
            for name, values in self.histograms.items():
                self.histograms[name] = [values[i] for i in keep]

    # --- reading ------------------------------------------------------------------------------------

    @property
    def steps(self) -> list:
        """The update count (1-based) of each kept point."""
        return [point[0] for point in self.points]

    @property
    def loss(self) -> list:
        return [point[1] for point in self.points]

    @property
    def series(self) -> dict:
        """{figure: {layer: [value per kept point]}}."""
        return {figure: {layer.name: [_of(point[2], li)[fi] for point in self.points]
                         for li, layer in enumerate(self.layers)}
                for fi, figure in enumerate(FIGURES)}

    @property
    def layer_names(self) -> list:
        return [layer.name for layer in self.layers]

    def layer(self, name: str) -> _Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        if not isinstance(name, str) and str(name) in self.layer_names:
            raise FlowError(f"GradientFlow: a layer is named by its path in the model, a string: write "
                            f"{str(name)!r}, not {name!r}; the layers are {', '.join(self.layer_names)}")
        raise FlowError(f"GradientFlow: no layer {name!r}; the layers are {', '.join(self.layer_names)}")

    def flags(self) -> list:
        """The layers whose gradients go wrong, each with its kind, figure, threshold and the rule, judged over
        the last ``window`` updates (those since the layer's module was hooked, if it was replaced):

        not_finite: a figure is nan or inf. exploding: ‖∂L/∂W‖ above ``exploding`` in one update.
        no_gradient: backward reached the layer in none of them. vanishing: the layer's ‖∂L/∂W‖ over the
        largest layer's, averaged, below ``vanishing``. One flag per layer, the first of these that holds.
        """
        if not self.count:
            return []
        found = []
        largest = {}  # update -> the largest finite ‖∇W‖ of any layer at that update
        for count, figures in self._recent:
            largest[count] = max((f[0] for f in figures if _finite(f[0])), default=0.0)
        for li, layer in enumerate(self.layers):
            if layer.gone:
                continue
            recent = [(count, _of(figures, li)) for count, figures in self._recent if count >= layer.since]
            flag = self._flag(layer.name, recent, largest)
            if flag is not None:
                found.append(flag)
        return found

    def _flag(self, name: str, recent: list, largest: dict) -> dict | None:
        """The first thing wrong with one layer over its recent updates [(update, figures)], or None."""
        n = len(recent)
        broken = [(count, fi, v) for count, figures in recent for fi, v in enumerate(figures)
                  if v is not None and not math.isfinite(v)]
        if broken:
            count, fi, value = broken[0]
            which = ", ".join(FIGURES[figure][0] for i, figure in enumerate(FIGURES) if i in {b[1] for b in broken})
            return {"layer": name, "kind": "not_finite", "figure": value, "threshold": None,
                    "rule": f"{which} not finite (nan or inf) in {len({c for c, _, _ in broken})} of the last {n} "
                            f"updates, first at step {count}"}
        norms = [figures[0] for _, figures in recent if figures[0] is not None]
        if norms and max(norms) > self.exploding:
            return {"layer": name, "kind": "exploding", "figure": max(norms), "threshold": self.exploding,
                    "rule": f"‖∂L/∂W‖ above {self.exploding:g} in one of the last {n} updates"}
        if not any(_got_gradient(figures) for _, figures in recent):
            return {"layer": name, "kind": "no_gradient", "figure": None, "threshold": None,
                    "rule": f"backward did not reach this layer in the last {n} update{'' if n == 1 else 's'}, so "
                            "its parameters got no gradient and do not learn: a .detach() or a no_grad() block "
                            "between it and the loss, a layer the forward does not use, or an output the loss "
                            "does not depend on"}
        relatives = [figures[0] / largest[count] for count, figures in recent
                     if _finite(figures[0]) and largest[count] > 0]
        if relatives:
            mean = sum(relatives) / len(relatives)
            if mean < self.vanishing:
                return {"layer": name, "kind": "vanishing", "figure": mean, "threshold": self.vanishing,
                        "rule": f"‖∂L/∂W‖ over the largest layer's, mean of the last {len(relatives)} "
                                f"updates, below {self.vanishing:g}"}
        return None

    def latest(self, figure: str = "grad_norm", step: int | None = None) -> dict:
        """{layer: figure} at the kept point nearest ``step`` (the last one when None)."""
        if figure not in FIGURES:
            raise FlowError(f"GradientFlow: no figure {figure!r}; the figures are {', '.join(FIGURES)}")
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
            raise TypeError(f"GradientFlow.latest(figure, step=...): step is an update count (an int), or None "
                            f"for the latest; got {described(step)}")
        if not self.points:
            return {name: None for name in self.layer_names}
        index = len(self.points) - 1 if step is None else nearest(self.steps, step)
        fi = list(FIGURES).index(figure)
        return {name: _of(self.points[index][2], li)[fi] for li, name in enumerate(self.layer_names)}

    def history(self) -> dict:
        """Everything kept, as plain JSON-ready data (the pictures are drawn from exactly this)."""
        return {
            "layers": self.layer_names,
            "steps": self.steps,
            "loss": [_json(v) for v in self.loss],
            "series": {figure: {name: [_json(v) for v in values] for name, values in per_layer.items()}
                       for figure, per_layer in self.series.items()},  # one list per line of the chart
            "figures": {figure: list(text) for figure, text in FIGURES.items()},
            "histogram_steps": self.histogram_steps,
            "histograms": self.histograms,
            "flags": [{**flag, "figure": _json(flag["figure"])} for flag in self.flags()],
            "changes": [dict(change) for change in self.changes],
            "count": self.count,
            "thresholds": {"vanishing": self.vanishing, "exploding": self.exploding, "window": self.window},
        }

    def to_svg(self, figure: str = "grad_norm") -> str:
        """The chart the widget shows, as SVG text: ``figure`` per layer over the steps (log scale), the flags."""
        from .flow_picture import flow_svg
        if figure not in FIGURES:
            raise FlowError(f"GradientFlow.to_svg(): no figure {figure!r}; the figures are {', '.join(FIGURES)}")
        return flow_svg(self.history(), figure)

    def plot(self, figure: str = "grad_norm"):
        """A matplotlib Figure of one figure per layer over the steps (needs matplotlib)."""
        from .flow_picture import flow_figure
        if figure not in FIGURES:
            raise FlowError(f"GradientFlow.plot(): no figure {figure!r}; the figures are {', '.join(FIGURES)}")
        return flow_figure(self.history(), figure)

    def __repr__(self):
        return (f"<gradlab.lab.Flow: {len(self.layers)} layers, {self.count} updates, "
                f"{len(self.flags())} flagged>")


def nearest(steps: list, step: int) -> int:
    """The index of the kept step closest to ``step``."""
    return min(range(len(steps)), key=lambda i: abs(steps[i] - step))


def _thinned(n: int) -> list:
    half = n // 2
    return list(range(0, half, 2)) + list(range(half, n))


def _finite(v) -> bool:
    return v is not None and math.isfinite(v)


def _of(figures: tuple, index: int) -> tuple:
    """One layer's figures at one update; a layer added later has none at the updates before it."""
    return figures[index] if index < len(figures) else NO_FIGURES


def _got_gradient(figures: tuple) -> bool:
    """Did the layer get a gradient at this update: backward reached it, or some gradient is not zero?"""
    return figures[3] is not None or (figures[0] is not None and figures[0] != 0)


def _owners(model) -> dict:
    """{path: (module, its trainable parameters)} of every module that owns trainable parameters itself."""
    found = {}
    for name, module in model.named_modules():
        params = [p for p in module.parameters(recurse=False) if p.requires_grad]
        if params:
            found[name or type(module).__name__] = (module, params)
    return found


def _same(params: list, others: list) -> bool:
    return len(params) == len(others) and all(p is q for p, q in zip(params, others))


def _json(v):
    """JSON has no nan or inf: they travel as strings the front end draws as broken."""
    if v is None or math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")

"""Gradient flow over training: per layer, how big the gradients are, and how much each step moves the weights.

A layer is a module that owns parameters itself (``0``, ``layers.2.fc``). One forward hook per layer
puts a hook on its output, so that when backward reaches the layer we learn ‖∂L/∂output‖ (the gradient
flowing out of it, towards the input) and keep a copy of its weights before the optimizer moves them.
``update()`` after ``optimizer.step()`` then reads ‖∂L/∂W‖, ‖W‖ and ‖W_after − W_before‖ / ‖W_before‖.
No anywidget here: scripts use ``Flow`` directly; ``flow_picture.py`` draws it, ``gradient_flow.py`` shows it live.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from ..autograd import is_grad_enabled
from ..tensor import Tensor
from .ownership import counts_as_training
from .summary import as_numpy, summarize

# figure -> (what it is called on a chart, what it measures)
FIGURES = {
    "grad_norm": ("‖∂L/∂W‖", "gradient norm of the layer's parameters"),
    "update_ratio": ("‖ΔW‖ / ‖W‖", "how far one step moved the weights, relative to their size"),
    "weight_norm": ("‖W‖", "weight norm"),
    "out_grad_norm": ("‖∂L/∂output‖", "gradient flowing out of the layer, back towards the input"),
}


class FlowError(ValueError):
    """A GradientFlow asked for something it cannot give (no parameters, no backward yet, no such layer)."""


class _Layer:
    """One module that owns parameters: its hooks' findings for the step under way."""

    __slots__ = ("name", "module", "params", "before", "out_sq", "handle")

    def __init__(self, name, module, params):
        self.name, self.module, self.params = name, module, params
        self.before = None  # host copies of the parameters, taken when backward reached the layer
        self.out_sq = 0.0  # Σ ‖∂L/∂output‖² over this step's calls of the layer
        self.handle = None


def _host(value) -> np.ndarray:
    """The values of a tensor as a host array (the array itself on the numpy backend: no copy)."""
    array = getattr(value, "array", None)
    return array if type(array) is np.ndarray else as_numpy(value)


def _sq(array: np.ndarray) -> float:
    """‖array‖² in one BLAS call over all its elements (nan and inf carry through, as they should)."""
    return float(np.vdot(array, array))


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
        if not hasattr(model, "named_modules") or not hasattr(model, "register_forward_hook"):
            raise FlowError(f"GradientFlow(model): model must be a gradlab.nn.Module, got {type(model).__name__}")
        for name, value, rule in (("vanishing", vanishing, "a number in (0, 1)"),
                                  ("exploding", exploding, "a positive number")):
            if not isinstance(value, (int, float)) or not (0 < value and (name != "vanishing" or value < 1)):
                raise FlowError(f"GradientFlow(model, {name}=...): {name} is {rule}, got {value!r}")
        for name, value, low in (("window", window, 1), ("max_points", max_points, 8),
                                 ("histogram_every", histogram_every, 1), ("max_histograms", max_histograms, 2)):
            if not isinstance(value, int) or isinstance(value, bool) or value < low:
                raise FlowError(f"GradientFlow(model, {name}=...): {name} is an integer ≥ {low}, got {value!r}")
        self.model = model
        self.vanishing, self.exploding, self.window = float(vanishing), float(exploding), window
        self.max_points, self.histogram_every, self.max_histograms = max_points, histogram_every, max_histograms
        self.layers = self._find_layers(model)
        self.points: list = []  # one per kept update: (update count, loss, per layer (‖∇W‖, ratio, ‖W‖, ‖∇out‖))
        self.histogram_steps: list = []
        self.histograms = {layer.name: [] for layer in self.layers}  # [{"low", "high", "counts"}] per kept step
        self._recent = deque(maxlen=window)  # the last updates' ‖∇W‖, one per layer
        self.count = 0  # updates so far
        self._reached = False  # has a backward reached the model since the last update?
        self._ever_reached = False
        self.last_input = None  # the args of the model's last training forward, for open()
        self._handles = [layer.module.register_forward_hook(self._forward_hook(layer)) for layer in self.layers]
        self._handles.append(model.register_forward_pre_hook(self._keep_input))

    @staticmethod
    def _find_layers(model) -> list:
        """Every module that owns trainable parameters itself, named by its path in the model."""
        layers = []
        for name, module in model.named_modules():
            params = [p for p in module.parameters(recurse=False) if p.requires_grad]
            if params:
                layers.append(_Layer(name or type(module).__name__, module, params))
        if not layers:
            raise FlowError(f"GradientFlow(model): {type(model).__name__} has no trainable parameters, so no "
                            "gradient flows into it; pass the model you train (with Linear, Conv2d, ... layers)")
        return layers

    # --- the hooks: note, copy, no more ---------------------------------------------------------------

    def _keep_input(self, module, args) -> None:
        if is_grad_enabled():  # a training forward, not an evaluation under no_grad
            self.last_input = args

    def _forward_hook(self, layer: _Layer):
        def on_output_grad(grad):
            if not counts_as_training():  # a stepper's replay or a profile's backward: not a training step
                return
            if layer.before is None:  # the weights as the optimizer will find them
                layer.before = [_host(p).copy() for p in layer.params]
            layer.out_sq += _sq(_host(grad))
            self._reached = True

        def hook(module, args, output):
            outputs = output if isinstance(output, tuple) else (output,)
            for out in outputs:
                if isinstance(out, Tensor) and out.requires_grad:
                    out.register_hook(on_output_grad)
        return hook

    def remove(self) -> None:
        """Detach every hook: the model trains as if the flow had never been there."""
        for handle in self._handles:
            handle.remove()
        self._handles = []

    # --- after each optimizer.step() -------------------------------------------------------------------

    def update(self, loss=None) -> None:
        """Read this step's figures (call it after ``optimizer.step()``); ``loss`` is kept beside them."""
        if not self._reached:
            if not self._ever_reached:
                raise FlowError("GradientFlow.update(): no backward has reached the model yet; call it after "
                                "loss.backward() and optimizer.step(), once per training step")
            raise FlowError("GradientFlow.update(): no backward reached the model since the last update(); call "
                            "it once per training step, after loss.backward() and optimizer.step()")
        if loss is not None:
            loss = float(loss.item() if hasattr(loss, "item") else loss)
        self.count += 1
        figures = tuple(self._figures(layer) for layer in self.layers)
        self._recent.append([f[0] for f in figures])
        self.points.append((self.count, loss, figures))
        if self.count % self.histogram_every == 0 or self.count == 1:
            self.histogram_steps.append(self.count)
            for layer in self.layers:
                self.histograms[layer.name].append(self._histogram(layer))
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
        before = layer.before
        for i, p in enumerate(layer.params):
            w = _host(p)
            if p.grad is not None:
                has_grad = True
                grad_sq += _sq(_host(p.grad))
            if before is None:
                weight_sq += _sq(w)
            else:
                weight_sq += _sq(before[i])
                moved_sq += _sq(w - before[i])
        reached = before is not None
        return (_sqrt(grad_sq) if has_grad else None,                                        # grad_norm
                _sqrt(moved_sq) / _sqrt(weight_sq) if reached and weight_sq > 0 else None,  # update_ratio
                _sqrt(weight_sq),                                                           # weight_norm
                _sqrt(layer.out_sq) if reached else None)                                   # out_grad_norm

    def _histogram(self, layer: _Layer) -> dict | None:
        grads = [_host(p.grad).ravel() for p in layer.params if p.grad is not None]
        if not grads:
            return None
        summary = summarize(np.concatenate(grads))
        return summary["hist"]

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
        return {figure: {layer.name: [point[2][li][fi] for point in self.points] for li, layer in enumerate(self.layers)}
                for fi, figure in enumerate(FIGURES)}

    @property
    def layer_names(self) -> list:
        return [layer.name for layer in self.layers]

    def layer(self, name: str) -> _Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise FlowError(f"GradientFlow: no layer {name!r}; the layers are {', '.join(self.layer_names)}")

    def flags(self) -> list:
        """The layers whose gradients vanish or explode, each with its figure, the threshold and the rule.

        Vanishing: the layer's ‖∂L/∂W‖ over the largest layer's, averaged over the last ``window`` updates,
        below ``vanishing``. Exploding: ‖∂L/∂W‖ above ``exploding`` in one of the last ``window`` updates,
        or not finite (nan or inf).
        """
        if not self.count:
            return []
        found = []
        relative = []  # per update, per layer: (‖∇W‖ / the largest layer's ‖∇W‖ at that update, ‖∇W‖)
        for norms in self._recent:
            largest = max((g for g in norms if _finite(g)), default=0.0)
            relative.append([(g / largest if largest > 0 and _finite(g) else None, g) for g in norms])
        for li, name in enumerate(self.layer_names):
            recent = [update[li] for update in relative]
            norms = [g for _, g in recent if g is not None]
            broken = [g for g in norms if not _finite(g)]
            if broken or (norms and max(norms) > self.exploding):
                figure = broken[0] if broken else max(norms)
                found.append({"layer": name, "kind": "exploding", "figure": figure, "threshold": self.exploding,
                              "rule": f"‖∂L/∂W‖ above {self.exploding:g} (or not finite) in one of the last "
                                      f"{len(recent)} updates"})
                continue
            relatives = [r for r, _ in recent if r is not None]
            if relatives:
                mean = sum(relatives) / len(relatives)
                if mean < self.vanishing:
                    found.append({"layer": name, "kind": "vanishing", "figure": mean, "threshold": self.vanishing,
                                  "rule": f"‖∂L/∂W‖ over the largest layer's, mean of the last {len(relatives)} "
                                          f"updates, below {self.vanishing:g}"})
        return found

    def latest(self, figure: str = "grad_norm", step: int | None = None) -> dict:
        """{layer: figure} at the kept point nearest ``step`` (the last one when None)."""
        if figure not in FIGURES:
            raise FlowError(f"GradientFlow: no figure {figure!r}; the figures are {', '.join(FIGURES)}")
        if not self.points:
            return {name: None for name in self.layer_names}
        index = len(self.points) - 1 if step is None else nearest(self.steps, step)
        fi = list(FIGURES).index(figure)
        return {name: self.points[index][2][li][fi] for li, name in enumerate(self.layer_names)}

    def history(self) -> dict:
        """Everything kept, as plain JSON-ready data (the pictures are drawn from exactly this)."""
        return {
            "layers": self.layer_names,
            "steps": self.steps,
            "loss": self.loss,
            "series": {figure: {name: [_json(v) for v in values] for name, values in per_layer.items()}
                       for figure, per_layer in self.series.items()},  # one list per line of the chart
            "figures": {figure: list(text) for figure, text in FIGURES.items()},
            "histogram_steps": self.histogram_steps,
            "histograms": self.histograms,
            "flags": [{**flag, "figure": _json(flag["figure"])} for flag in self.flags()],
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


def _json(v):
    """JSON has no nan or inf: they travel as strings the front end draws as broken."""
    if v is None or math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")

"""``gl.lab.Playground()``: TensorFlow Playground on the real engine — knobs, a net, and watching it learn.

The steps (``playground_training.Training``) run in a background thread, so the kernel's main
thread stays free to answer the widget: a click on pause, or a changed control, arrives while the
net trains. Only that thread touches the model while it runs; everything else first stops it
(``pause()`` waits for the step under way to finish). The thread sends a new picture
(``playground_picture.playground_svg``) at most every ``interval`` seconds, all its traitlets in
one message (``hold_sync``); an exception in it stops training and shows in the widget's notice.
"""

from __future__ import annotations

import threading
import time

from .frontend import bundle, stylesheet
from .graph_view import GraphView
from .playground_picture import playground_svg
from .playground_training import (ACTIVATIONS, DEFAULTS, LEARNING_RATES, LIMITS, MAX_NOISE, OPTIMIZERS, REBUILDS,
                                  REG_RATES, REGULARIZATIONS, PlaygroundError, Training, check_control)
from .playground_data import DATASETS
from .record import record

try:
    import anywidget
    import ipywidgets
    import traitlets
except ImportError as error:  # pragma: no cover - depends on the extra
    raise ImportError("gradlab's lab widgets need anywidget and ipywidgets: pip install 'gradlab[lab]'") from error

OPTIONS = {"dataset": list(DATASETS), "activation": list(ACTIVATIONS), "optimizer": list(OPTIMIZERS),
           "regularization": list(REGULARIZATIONS), "learning_rate": list(LEARNING_RATES),
           "reg_rate": list(REG_RATES), "limits": {name: list(span) for name, span in LIMITS.items()},
           "max_noise": MAX_NOISE}


class PlaygroundPanel(anywidget.AnyWidget):
    """The controls (⇄: the front end sets them), the picture Python drew, and what the training is doing."""

    dataset = traitlets.Unicode(DEFAULTS["dataset"]).tag(sync=True)
    noise = traitlets.Float(DEFAULTS["noise"]).tag(sync=True)
    depth = traitlets.Int(DEFAULTS["depth"]).tag(sync=True)
    width = traitlets.Int(DEFAULTS["width"]).tag(sync=True)
    activation = traitlets.Unicode(DEFAULTS["activation"]).tag(sync=True)
    learning_rate = traitlets.Float(DEFAULTS["learning_rate"]).tag(sync=True)
    optimizer = traitlets.Unicode(DEFAULTS["optimizer"]).tag(sync=True)
    regularization = traitlets.Unicode(DEFAULTS["regularization"]).tag(sync=True)
    reg_rate = traitlets.Float(DEFAULTS["reg_rate"]).tag(sync=True)
    batch_size = traitlets.Int(DEFAULTS["batch_size"]).tag(sync=True)

    options = traitlets.Dict({}).tag(sync=True)  # each control's choices (menus) or limits (number boxes)
    svg = traitlets.Unicode("").tag(sync=True)  # the picture: network, boundary and points, loss, ‖∂L/∂W‖
    running = traitlets.Bool(False).tag(sync=True)  # the training thread is stepping
    step = traitlets.Int(0).tag(sync=True)  # the steps taken since the last rebuild
    status = traitlets.Unicode("").tag(sync=True)  # "step 1200 · loss 0.406 · accuracy 80%"
    opened = traitlets.Unicode("").tag(sync=True)  # the layer whose graph is shown below, if any
    notice = traitlets.Unicode("").tag(sync=True)  # an error: a bad click, the training thread's exception

    _esm = bundle("playground.js")
    _css = stylesheet()

    @traitlets.validate(*DEFAULTS)
    def _check(self, proposal):
        return check_control(proposal["trait"].name, proposal["value"])


class Playground:
    """A 2-D dataset, an MLP whose shape and training are controls, and train / pause / step / reset.

    ``pg = gl.lab.Playground(dataset="xor", depth=3)`` then ``pg.train()`` (in the background),
    ``pg.pause()``, ``pg.step(100)`` (here, now), ``pg.reset()``, ``pg.set(learning_rate=0.1)``,
    ``pg.open("hidden1")`` (that layer's graph at the current step, below). The controls are those of
    ``playground_training.DEFAULTS``; ``seed`` fixes the points, the initial weights and the batches.
    """

    def __init__(self, *, seed: int = 0, interval: float = 0.1, **controls):
        if not isinstance(interval, (int, float)) or isinstance(interval, bool) or not interval >= 0:
            raise PlaygroundError(f"Playground(interval=...): interval is the least seconds between two redraws "
                                  f"while training, a number ≥ 0; got {interval!r}")
        unknown = sorted(set(controls) - set(DEFAULTS))
        if unknown:
            raise PlaygroundError(f"Playground: no control {unknown[0]!r}; the controls are {', '.join(DEFAULTS)} "
                                  f"(and seed, interval)")
        self.training = Training(seed, **controls)
        self.interval = float(interval)
        self.error = None  # the training thread's exception, if it stopped on one
        self.view = None  # the GraphView a click opened
        self.draw_seconds = 0.0  # what the last picture cost to draw
        self._thread = None
        self._stop = threading.Event()
        self._lock = threading.RLock()  # the thread's redraws and the main thread's writes, one at a time
        self._drawn_at = -float("inf")
        self.panel = PlaygroundPanel(options=OPTIONS, **self.training.controls)
        self.panel.observe(self._on_control, names=list(DEFAULTS))
        self.panel.on_msg(self._on_front_end_message)
        self.widget = ipywidgets.VBox([self.panel])
        self.widget.add_class("gradlab-playground-box")
        self._draw()

    # --- train, pause, step, reset ----------------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def train(self, steps: int | None = None) -> None:
        """Train in a background thread until ``pause()`` (or for ``steps`` steps); returns at once."""
        if steps is not None and (not isinstance(steps, int) or isinstance(steps, bool) or steps < 1):
            raise PlaygroundError(f"Playground.train(steps=...): steps is a positive integer or None, got {steps!r}")
        if self.running:
            return
        self.error = None
        self._stop.clear()
        with self._lock:
            self.panel.running, self.panel.notice = True, ""
        self._thread = threading.Thread(target=self._train, args=(steps,), name="gradlab-playground", daemon=True)
        self._thread.start()

    def pause(self) -> None:
        """Stop the training thread after the step under way, and wait for it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._thread = None

    def wait(self, timeout: float | None = None) -> None:
        """Wait until ``train(steps)`` has taken its steps (or stopped on an error)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def step(self, steps: int = 1) -> float:
        """Pause, then take ``steps`` steps here and now; returns the last step's loss."""
        if not isinstance(steps, int) or isinstance(steps, bool) or steps < 1:
            raise PlaygroundError(f"Playground.step(steps): steps is a positive integer, got {steps!r}")
        self.pause()
        try:
            for _ in range(steps):
                loss = self.training.step()
        finally:
            self._draw()
        return loss

    def reset(self) -> None:
        """Pause, and start again: the same points, the seed's initial weights, step 0."""
        self.pause()
        self.training.rebuild()
        self._close_view()
        self._draw()

    def set(self, **controls) -> None:
        """Change controls as the widget does: ``pg.set(depth=3, learning_rate=0.1)``."""
        for name in controls:
            if name not in DEFAULTS:
                raise PlaygroundError(f"Playground.set: no control {name!r}; the controls are {', '.join(DEFAULTS)}")
        for name, value in controls.items():
            setattr(self.panel, name, value)

    def _on_control(self, change) -> None:
        """A control changed (in the widget or by ``set``): the model's shape or the data rebuild, stopped;
        the learning rate, optimizer, regularisation and batch size are taken at the next step."""
        name, value = change["name"], change["new"]
        self.training.set(**{name: value})
        if name in REBUILDS:
            self.pause()
            self.training.rebuild()
            self._close_view()
        if not self.running:
            self._draw()

    # --- the thread --------------------------------------------------------------------------------

    def _train(self, steps: int | None) -> None:
        done = 0
        try:
            while not self._stop.is_set() and (steps is None or done < steps):
                self.training.step()
                done += 1
                if time.monotonic() - self._drawn_at >= self.interval:
                    self._draw()
        except Exception as error:  # shown in the widget, never lost in a thread
            self.error = error
            with self._lock:
                self.panel.notice = (f"training stopped at step {self.training.step_count + 1}: "
                                     f"{type(error).__name__}: {error}")
        finally:
            try:
                self._draw(running=False)
            except Exception as error:  # the picture itself failed: say so, still stop
                self.error = self.error or error
                with self._lock:
                    self.panel.running = False
                    self.panel.notice = self.panel.notice or f"drawing failed: {type(error).__name__}: {error}"

    # --- drawing -------------------------------------------------------------------------------------

    def _draw(self, running: bool | None = None) -> None:
        """Draw the picture and send it with the status, in one message."""
        started = time.perf_counter()
        training = self.training
        svg = playground_svg(training, caption=self.caption())
        losses = training.history.losses
        status = (f"step {training.step_count} · loss {losses[-1]:.3f} · accuracy {training.accuracy():.0%}"
                  if len(losses) else "step 0 · press train or step")
        with self._lock, self.panel.hold_sync():
            self.panel.svg, self.panel.status, self.panel.step = svg, status, training.step_count
            if running is not None:
                self.panel.running = running
        self.draw_seconds = time.perf_counter() - started
        self._drawn_at = time.monotonic()

    def caption(self) -> str:
        """The settings in one line: 'spirals (noise 0.1) · 2-8-8-1 tanh · adam, learning rate 0.03, batch 32'."""
        c = self.training.settings
        shape = "-".join(["2"] + [str(c["width"])] * c["depth"] + ["1"])
        reg = "" if c["regularization"] == "none" else f", {c['regularization']} {c['reg_rate']:g}"
        return (f"{c['dataset']} (noise {c['noise']:g}) · {shape} {c['activation']} · {c['optimizer']}, "
                f"learning rate {c['learning_rate']:g}, batch {c['batch_size']}{reg}")

    def to_svg(self) -> str:
        """The picture the widget shows, as SVG text (the same function draws both)."""
        return self.panel.svg

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus its picture as static SVG for GitHub, nbviewer and nbconvert."""
        bundle_ = self.widget._repr_mimebundle_(**kwargs)
        data, metadata = bundle_ if isinstance(bundle_, tuple) else (bundle_, {})
        return {**data, "image/svg+xml": self.to_svg()}, metadata

    def __repr__(self):
        return f"<gradlab.lab.Playground: {self.caption()}, step {self.training.step_count}>"

    # --- the front end's requests --------------------------------------------------------------------

    def _on_front_end_message(self, _, content, buffers=None) -> None:
        try:
            kind = content.get("type")
            if kind == "train":
                self.train()
            elif kind == "pause":
                self.pause()
            elif kind == "step":
                self.step()
            elif kind == "reset":
                self.reset()
            elif kind == "open":
                self.open(content.get("layer"), neuron=content.get("neuron"))
            else:
                raise ValueError(f"unknown request from the front end: {kind!r}")
        except Exception as error:  # shown in the widget, never a silent failure in the comm thread
            with self._lock:
                self.panel.notice = f"{type(error).__name__}: {error}"

    def open(self, layer: str, neuron: int | None = None) -> GraphView:
        """Pause, and show below the graph of the loss on the last batch at the current weights, with its
        gradients (a backward of that loss), ``layer`` opened and its Linear selected."""
        layers = self.training.layers
        if layer not in layers:
            raise PlaygroundError(f"Playground.open({layer!r}): no such layer; the layers are {', '.join(layers)}")
        self.pause()
        if self.training.last_batch is None:
            raise PlaygroundError(f"Playground.open({layer!r}): no step taken yet, so no batch to draw; press "
                                  "step (or train) first")
        model, (x, y) = self.training.model, self.training.last_batch
        model.eval()  # as GradientFlow.open: no training-mode behaviour while recording
        try:
            with record() as rec:
                loss = self.training.objective(x, y)
        finally:
            model.train()
        self._close_view()
        view = GraphView(rec)
        loss.backward()  # the view's hooks see the gradients: it colours by them
        view.refresh()
        members = [n for n in view.graph.nodes.values() if n.group == layer and n.kind == "op"]
        if members:
            view.selected = members[0].id
        view.add_class("gradlab-playground-graph")
        self.view = view
        with self._lock, self.panel.hold_sync():
            self.panel.opened = layer
            self.panel.notice = ("" if neuron is None else f"neuron {neuron} of {layer} is row {neuron} of "
                                 f"{layer}.weight and {layer}.bias[{neuron}]: its layer's graph is below")
        self.widget.children = [self.panel, view]
        return view

    def _close_view(self) -> None:
        if self.view is not None:
            self.view.close()
            self.view = None
            self.widget.children = [self.panel]
            self.panel.opened = ""

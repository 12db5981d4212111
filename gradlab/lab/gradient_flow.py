"""``GradientFlow(model)``: per-layer gradient figures over training, drawn live while the training cell runs.

The figures come from ``flow.py`` (hooks, history, flags) and the charts are drawn in Python by
``flow_picture.flow_svg``, the same function that makes the saved notebook's picture. This widget sends
them to the front end (``widgets/gradient_flow.js``, which only shows them and reports clicks) at most
every ``interval`` seconds and once more when the cell ends, so drawing never slows the training loop
much. Clicking a layer opens the model's graph below the charts, coloured by the same figure, with that
layer opened and selected.
"""

from __future__ import annotations

import time
import weakref

from .cells import after_each_cell
from .flow import FIGURES, Flow, FlowError, nearest
from .flow_picture import flow_svg
from .frontend import bundle, stylesheet
from .graph_view import AS_JSON_TEXT, GraphView
from .record import record

try:
    import anywidget
    import ipywidgets
    import traitlets
except ImportError as error:  # pragma: no cover - depends on the extra
    raise ImportError(
        "gradlab's lab widgets need anywidget and ipywidgets: pip install 'gradlab[lab]'") from error


class FlowChart(anywidget.AnyWidget):
    """The charts as Python drew them (one per figure), each kept step's histogram counts, what the controls chose."""

    charts = traitlets.Dict({}).tag(sync=True, **AS_JSON_TEXT)  # figure -> its line chart's SVG (flow_svg)
    figures = traitlets.Dict({}).tag(sync=True)  # figure -> [symbol, meaning]: the menu's entries
    figure = traitlets.Enum(tuple(FIGURES), "grad_norm").tag(sync=True)  # the menu's choice: the chart shown, saved
    histograms = traitlets.Dict({}).tag(sync=True, **AS_JSON_TEXT)  # {"steps": [...], "layers": {layer: [hist]}}
    suggested_layer = traitlets.Unicode("").tag(sync=True)  # the histogram's layer until one is chosen
    histogram_layer = traitlets.Unicode("").tag(sync=True)  # the layer menu's choice ("" until one is made)
    scrub_step = traitlets.Int(0).tag(sync=True)  # the histogram slider's step; 0 = the latest
    opened = traitlets.Unicode("").tag(sync=True)  # the layer shown in the graph below, if any
    status = traitlets.Unicode("").tag(sync=True)  # "144 updates · 144 kept"
    notice = traitlets.Unicode("").tag(sync=True)

    _esm = bundle("gradient_flow.js")
    _css = stylesheet()


class GradientFlow:
    """Watch gradients flow through ``model`` as it trains: ``flow = gl.lab.GradientFlow(model)``.

    Call ``flow.update()`` after each ``optimizer.step()`` (or ``fit(..., callbacks=[flow])``). Shows per
    layer ‖∂L/∂W‖, the update/weight ratio, ‖W‖ and ‖∂L/∂output‖ over the steps (log scale), a
    histogram of each layer's gradients scrubbed through time, and ``flags()``: layers whose gradients
    vanish or explode, with the threshold used. Options (``vanishing``, ``exploding``, ``window``, ...) are
    those of ``gradlab.lab.flow.Flow``; ``interval`` is the least time between two live redraws.

    It displays as ``flow.widget``, a VBox of the charts and, once a layer is opened, its graph (a plain
    object rather than a VBox itself, because a widget's ``open()`` is taken: it opens the comm).
    """

    def __init__(self, model, *, interval: float = 0.2, **options):
        if isinstance(interval, bool) or not isinstance(interval, (int, float)) or not interval >= 0:
            raise FlowError(f"GradientFlow(model, interval=...): interval is seconds ≥ 0, got {interval!r}")
        self.figures = Flow(model, **options)
        self.interval = float(interval)
        self.chart = FlowChart(figures={figure: list(text) for figure, text in FIGURES.items()})
        self.view = None  # the GraphView a click opened
        self._pushed_at = -float("inf")
        self._push_cost = 0.0
        self._pending = False
        self._pushes = 0
        self._changes_shown = 0
        self.widget = ipywidgets.VBox([self.chart])
        self.widget.add_class("gradlab-gradient-flow")
        self.chart.on_msg(self._on_front_end_message)
        self._push()
        self._push_cost = 0.0  # drawing the empty charts says nothing about what a real update costs to send
        self._flush_after_each_cell()

    # --- the figures (flow.py does the work) ----------------------------------------------------------

    def update(self, loss=None) -> None:
        """Read this step's figures (after ``optimizer.step()``); the charts redraw at most every ``interval`` s."""
        self.figures.update(loss)
        self._pending = True
        # a push costs time in the training loop: never spend more than ~3 % of it pushing (the CNN target is 5 % in all)
        if time.monotonic() - self._pushed_at >= max(self.interval, 30 * self._push_cost):
            self._push(every_figure=False)

    def on_step(self, loss) -> None:
        """``fit(..., callbacks=[flow])`` calls this after every ``optimizer.step()``."""
        self.update(loss=loss)

    def flush(self) -> None:
        """Send the latest figures now (also done when each notebook cell finishes)."""
        self._push()

    def flags(self) -> list:
        """The layers flagged not_finite, exploding, no_gradient or vanishing: layer, kind, figure, threshold, rule."""
        return self.figures.flags()

    def history(self) -> dict:
        return self.figures.history()

    def remove(self) -> None:
        """Detach the hooks from the model (the charts keep what they have)."""
        self.figures.remove()

    @property
    def layers(self) -> list:
        return self.figures.layer_names

    def latest(self, figure: str = "grad_norm", step: int | None = None) -> dict:
        return self.figures.latest(figure, step)

    def plot(self, figure: str = "grad_norm"):
        """A matplotlib Figure of ``figure`` per layer over the steps."""
        return self.figures.plot(figure)

    def to_svg(self, figure: str | None = None) -> str:
        """The chart the widget shows (``figure``, else the menu's), as SVG text: the same drawing, by one function."""
        return self.figures.to_svg(figure or self.chart.figure)

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus a static SVG for GitHub, nbviewer and nbconvert."""
        bundle_ = self.widget._repr_mimebundle_(**kwargs)
        data, metadata = bundle_ if isinstance(bundle_, tuple) else (bundle_, {})
        data = dict(data)
        data["image/svg+xml"] = self.to_svg()
        return data, metadata

    def __repr__(self):
        return (f"<gradlab.lab.GradientFlow: {len(self.layers)} layers, {self.figures.count} updates, "
                f"{len(self.flags())} flagged>")

    # --- sending to the front end ---------------------------------------------------------------------

    def _push(self, every_figure: bool = True) -> None:
        """Draw the charts and send them, with the histograms' counts when a histogram was taken, in one message.

        Every figure has its chart in the front end, so the menu switches at once even while a training cell
        holds the kernel. A live push in the loop redraws the menu's figure and one other in turn (the
        drawing is most of a push's cost); a flush, and the end of every cell, redraws all four."""
        started = time.monotonic()
        history = self.figures.history()
        flags = history["flags"]
        if every_figure or not self.chart.charts:
            figures = list(FIGURES)
        else:
            others = [figure for figure in FIGURES if figure != self.chart.figure]
            figures = [self.chart.figure, others[self._pushes % len(others)]]
        self._pushes += 1
        with self.chart.hold_sync():
            self.chart.charts = {**self.chart.charts, **{figure: flow_svg(history, figure) for figure in figures}}
            if history["histogram_steps"] != self.chart.histograms.get("steps"):  # copies: Flow appends to its own
                self.chart.histograms = {"steps": list(history["histogram_steps"]),
                                         "layers": {name: list(kept) for name, kept in history["histograms"].items()}}
            self.chart.suggested_layer = flags[0]["layer"] if flags else history["layers"][0]
            count = history["count"]
            self.chart.status = f"{count} update{'' if count == 1 else 's'} · {len(history['steps'])} kept"
            if len(history["changes"]) > self._changes_shown:  # the model changed under the flow: say so at the top
                self._changes_shown = len(history["changes"])
                self.chart.notice = history["changes"][-1]["text"]
        self._pushed_at = time.monotonic()
        self._push_cost = self._pushed_at - started
        self._pending = not every_figure  # the end of the cell draws the figures this push left

    def _flush_after_each_cell(self) -> None:
        """Redraw at the end of every notebook cell that updated the figures (as GraphView does for backward)."""
        me = weakref.ref(self)

        def flush(*_):
            live = me()
            if live is None:  # the widget is gone: stop listening
                listener.remove()
            elif live._pending:
                live._push()
        listener = after_each_cell(flush)

    # --- a click on a layer: its graph, coloured by the flow ------------------------------------------

    def _on_front_end_message(self, _, content, buffers=None) -> None:
        try:
            if content.get("type") == "open":
                self.open(content.get("layer"), step=content.get("step") or None, figure=content.get("figure"))
            else:
                raise ValueError(f"unknown request from the front end: {content.get('type')!r}")
        except Exception as error:  # shown in the widget, never a silent failure in the comm thread
            self.chart.notice = f"{type(error).__name__}: {error}"

    def open(self, layer: str, step: int | None = None, figure: str | None = None) -> GraphView:
        """The model's graph on its last training batch, each node coloured by its layer's ``figure`` at
        ``step`` (the slider's step, else the latest), with ``layer`` opened and selected; shown below."""
        figure = figure or self.chart.figure
        self.figures.layer(layer)  # a clear error for a name that is not a layer
        if step is not None and (isinstance(step, bool) or not isinstance(step, int)):
            raise TypeError(f"GradientFlow.open(layer, step=...): step is an update count (an int), or None for "
                            f"the slider's step; got {step!r}")
        if figure not in FIGURES:
            raise FlowError(f"GradientFlow.open(): no figure {figure!r}; the figures are {', '.join(FIGURES)}")
        if self.figures.last_input is None or not self.figures.steps:
            raise FlowError("GradientFlow.open(): the model has not trained yet; run a training step and "
                            "flow.update() first, then open a layer")
        step = step if step is not None else (self.chart.scrub_step or None)
        index = len(self.figures.steps) - 1 if step is None else nearest(self.figures.steps, step)
        shown_step = self.figures.steps[index]
        view = self._record_view()
        values = self.figures.latest(figure, shown_step)
        layer_of = {node.id: _layer_of(node.group, self.layers) or _layer_of_parameter(node, self.layers)
                    for node in view.graph.nodes.values()}
        sizes = {node_id: _positive(values.get(found)) for node_id, found in layer_of.items()}
        symbol, meaning = FIGURES[figure]
        view.add_color_mode("flow", sizes, f"{symbol} of its layer at step {shown_step}, log scale",
                            label=f"gradient flow ({symbol})", missing="in no layer")
        view.color_mode = "flow"
        group = self._group_of(view, layer)
        if group is not None:
            view.expand(*[g for g in _ancestors(group) if "g:" + g in view.scene.members])
            members = [n for n in view.graph.nodes.values() if n.group == group]
            ops = [n for n in members if n.kind == "op"] or members
            if ops:
                view.selected = ops[0].id
        else:  # a graph without module boxes (PyTorch's, drawn from the output): the layer's first parameter
            own = [node_id for node_id, found in layer_of.items() if found == layer]
            if own:
                view.selected = own[0]
        view.add_class("gradlab-flow-graph")
        self.view = view
        self.chart.opened = layer
        self.chart.notice = ""
        self.widget.children = [self.chart, view]
        return view

    def _record_view(self) -> GraphView:
        """Record the model's forward on its last training batch, in eval mode (no running-stat updates).

        A model whose engine record() does not watch is drawn from its output's backward graph instead, its
        parameters named by the model: no module boxes, but every parameter."""
        model = self.figures.model
        was_training = model.training
        model.eval()
        try:
            if not self.figures.reader.recorded:
                return GraphView(_first_output(model(*self.figures.last_input)), names=model)
            with record() as rec:
                model(*self.figures.last_input)
        finally:
            model.train(was_training)
        return GraphView(rec)

    def _group_of(self, view, layer: str) -> str | None:
        """The layer's module group in the recorded graph (its first call)."""
        if layer in view.graph.groups:
            return layer
        root = [g for g in view.graph.groups.values() if g.parent is None]
        if root and layer == type(self.figures.model).__name__:
            return root[0].id
        return None


def _layer_of(group: str | None, layers: list) -> str | None:
    """The innermost layer a module group belongs to ("blocks.0.fc#2" -> "blocks.0.fc")."""
    if group is None:
        return None
    path = group.split("#")[0]
    best = None
    for name in layers:
        if (path == name or path.startswith(name + ".")) and (best is None or len(name) > len(best)):
            best = name
    return best


def _layer_of_parameter(node, layers: list) -> str | None:
    """A parameter's layer from its name ("blocks.0.fc.weight" -> "blocks.0.fc"), in a graph without module boxes."""
    if node.kind != "param" or node.group is not None:
        return None
    owner = node.label.rpartition(".")[0]
    return owner if owner in layers else (layers[0] if not owner and len(layers) == 1 else None)


def _first_output(output):
    """The tensor to draw the graph of: the output, or the first of several that has a graph."""
    if isinstance(output, (tuple, list)):
        return next((out for out in output if getattr(out, "grad_fn", None) is not None), output[0])
    return output


def _ancestors(group: str) -> list:
    """'blocks.0.fc' -> ['blocks', 'blocks.0', 'blocks.0.fc']: the paths that may need opening to see it."""
    parts = group.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def _positive(value):
    return value if isinstance(value, (int, float)) and value > 0 and value == value and value != float("inf") else None

"""``GraphView``: the live graph of a tensor, a recorded forward pass, or a Scalar expression.

Python holds the state as traitlets (the drawn SVG, every node's details, colours per mode);
the front end (``widgets/graph_view.js``) shows it, pans and zooms, and reports clicks. Opening
a module re-lays out only that module and its ancestors; colouring and selecting only restyle.
Gradients that a later ``backward()`` computes appear when the cell that ran it finishes.
A view owns the hooks it puts on the graph: they come off when it is closed or collected.
"""

from __future__ import annotations

import json
import weakref
from time import perf_counter

from .arguments import check_color_mode, check_drawable, check_text, check_view_options, checked_names, node_id_in
from .capture import CaptureError, capture
from .cells import after_each_cell
from .collector import collector_paused
from .node_check import check_node
from .colors import MODE_LABELS, size_colors
from .frontend import bundle, standalone_html, stylesheet
from .leaf_grads import LeafGrads
from .ownership import counts_as_training
from .profiling import Profile, figure_modes, figure_tables, node_figures
from .record import Recording
from .scene import Scene, sub_text
from .summary import summarize
from .svg import key_svg, render

try:
    import anywidget
    import traitlets
except ImportError as error:  # pragma: no cover - depends on the extra
    raise ImportError(
        "gradlab's lab widgets need anywidget and ipywidgets: pip install 'gradlab[lab]'") from error


# The big traitlets travel as one JSON string: ipywidgets would otherwise walk every nested value
# looking for binary buffers, which costs more than the encoding itself on a 2,000-node graph.
AS_JSON_TEXT = {"to_json": lambda value, widget: json.dumps(value, separators=(",", ":"))}


class GraphWidget(anywidget.AnyWidget):
    """What GraphView and BackpropStepper share: the drawing, the inspector, colours and checks."""

    svg = traitlets.Unicode("").tag(sync=True)
    nodes = traitlets.Dict({}).tag(sync=True, **AS_JSON_TEXT)
    node_updates = traitlets.Dict({}).tag(sync=True, **AS_JSON_TEXT)  # {id: node} changed since `nodes` was sent
    groups = traitlets.Dict({}).tag(sync=True)
    colors = traitlets.Dict({}).tag(sync=True, **AS_JSON_TEXT)
    legends = traitlets.Dict({})  # mode -> its colour key as data (title, stops or items); drawn into `color_keys`
    color_keys = traitlets.Dict({}).tag(sync=True)  # mode -> its colour key as SVG (svg.key_svg): what the widget shows
    color_mode = traitlets.Unicode("kind").tag(sync=True)
    color_labels = traitlets.Dict({}).tag(sync=True)  # mode -> its name in the colour menu
    selected = traitlets.Unicode("").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    check_result = traitlets.Dict({}).tag(sync=True)
    texts = traitlets.Dict({}).tag(sync=True)
    tables = traitlets.Dict({}).tag(sync=True)  # mode -> the table the side panel shows in it (top 10 by time, ...)
    height = traitlets.Int(460).tag(sync=True)

    _entry = "graph_view.js"
    _esm = bundle(_entry)
    _css = stylesheet()
    _watches_backward = True  # a later backward() recolours the view (the stepper tracks its own steps)
    _installed = ()  # (until __init__ gives the view a list of its own)

    def __init__(self, obj, *, names=None, color=None, height=460, graph=None, modes=(), color_hint=""):
        graph = graph if graph is not None else capture(obj, names)
        self._installed = []  # what this view hooked into the graph (and IPython): taken off when it goes
        weakref.finalize(self, take_off, self._installed)
        self.graph = graph
        self.scene = Scene(graph)
        self._added_modes = {}  # mode -> (sizes, title, missing text, text of a figure, limits): a lab's colour modes
        labels = {mode: text for mode, text in MODE_LABELS.items() if mode in graph.modes}
        for mode, sizes, title, label, missing, text in modes:  # as add_color_mode's arguments: drawn from the start
            self._added_modes[mode] = (self._all_sizes(mode, sizes), title, missing, text, None)
            labels[mode] = label
        if color is not None and color not in labels:
            raise ValueError(f"{type(self).__name__}: color={color!r} is not a colour mode of this graph; it has "
                             f"{', '.join(map(repr, labels))}{color_hint}")
        super().__init__(height=height, color_labels=labels)
        notices = []
        if self.scene.opened_collapsed:
            notices.append(f"{len(graph.nodes)} nodes: some modules open collapsed so that the picture stays "
                           "readable — click a module to open it")
        if graph.freed:
            notices.append("backward() already freed what forward saved: the graph is drawn, but saved tensors "
                           "are gone (use loss.backward(retain_graph=True), or draw before backward)")
        if graph.note:
            notices.append(graph.note)
        self.notice = " · ".join(notices)
        self.groups = {gid: {"label": self.scene.group_label(gid), "members": len(members),
                             "sub": self.scene.group_sub(gid)} for gid, members in self.scene.members.items()}
        self.color_mode = color or ("grad" if any(n.grad for n in graph.nodes.values()) else "kind")
        self._refresh_values()
        self._redraw()
        self.on_msg(self._on_front_end_message)
        if self._watches_backward:
            self._watch_backward()

    def own(self, handle):
        """Keep a hook's handle (anything with ``remove()``): the hook comes off when the view is closed or
        collected, so views made and dropped leave nothing on the graph. Returns the handle."""
        self._installed.append(handle)
        return handle

    def close(self) -> None:
        """Take this view's hooks off the graph, then close the widget and the layout widget ipywidgets gave it
        (closing a widget leaves that one open, and held, otherwise)."""
        take_off(self._installed)
        if self.comm is None:  # never opened (its __init__ failed), or closed already
            return super().close()
        layout = self.layout  # (read first: a closed widget forgets it)
        super().close()
        layout.close()

    # --- drawing ----------------------------------------------------------------------------------

    @traitlets.observe("legends")
    def _draw_keys(self, change) -> None:
        self.color_keys = {mode: key_svg(legend) for mode, legend in change["new"].items()}

    def _redraw(self) -> None:
        """Lay out (cached per set of open modules) and draw; the front end swaps the SVG in. Boxes drawn
        for the first time get their details and colours sent with it."""
        drawn = self.scene.drawn()
        if drawn != self._drawn:
            self._drawn, self._drawn_set = drawn, set(drawn)
            self._send_details(drawn)
            self._send_colors()
        self.svg = render(self.scene, colors=self._colors_now())

    def _colors_now(self) -> dict:
        colors = self.colors.get(self.color_mode) if self.colors else None
        return colors or {}

    def _refresh_values(self, only_gradients: bool = False, changed=None) -> None:
        """Send the details and colours of the boxes drawn; after a backward step, only what it changed
        (``changed``: the node ids it may have changed, when the caller knows; else every box drawn)."""
        if not only_gradients:
            self._drawn = self.scene.drawn()
            self._drawn_set = set(self._drawn)
            drawn = [self.graph.nodes[i] for i in self._drawn if i in self.graph.nodes]
            self.nodes = {node.id: node.to_json() for node in drawn}
            self._sent = {node.id: node.grad for node in drawn}
            self._send_colors()
            return
        ids = self._drawn if changed is None else [i for i in changed if i in self._drawn_set]
        if self._send_details(ids):
            colors, legends = self.scene.colors(("grad",), only=self._drawn)
            self.colors, self.legends = {**self.colors, **colors}, {**self.legends, **legends}

    def _send_details(self, ids) -> bool:
        """Send the details of these boxes where the front end lacks them or their gradient changed."""
        nodes, sent = self.graph.nodes, self._sent
        changed = [nodes[i] for i in ids if i in nodes and (i not in sent or nodes[i].grad != sent[i])]
        if not changed:
            return False
        sent.update((n.id, n.grad) for n in changed)
        updates = {n.id: n.to_json() for n in changed}
        self.nodes.update(updates)  # in place, unsent: a view opened later starts from the current nodes
        self.node_updates = updates
        return True

    def _send_colors(self) -> None:
        """Every mode's colours of the boxes drawn, on the scale of the whole graph, and the keys."""
        colors, legends = self.scene.colors(only=self._drawn)
        for mode, (sizes, title, missing, text, limits) in self._added_modes.items():
            colors[mode], legends[mode] = size_colors(sizes, self.scene.members, title, missing, text, self._drawn,
                                                      limits)
        self.colors, self.legends = colors, legends  # assigned whole: a traitlet changed in place is not sent

    def add_color_mode(self, mode: str, sizes: dict, title: str, label: str | None = None,
                       missing: str = "not known yet", text=None, limits=None) -> None:
        """A colour mode of your own, in the menu as ``label``: ``sizes`` maps node ids to a positive
        figure (None where unknown), coloured on the gradient mode's log scale; a closed module takes
        its largest member's. Nodes not in ``sizes`` are drawn as unknown. ``text(figure)`` writes the
        key's figures ("29 µs"; 2.9e-05 when not given); ``limits=(low, high)`` fixes the scale's ends."""
        check_color_mode(mode, sizes, title, label, missing, text)
        sizes = self._all_sizes(mode, sizes)
        self._added_modes[mode] = (sizes, title, missing, text, limits)
        colors, legend = size_colors(sizes, self.scene.members, title, missing, text, self._drawn, limits)
        with self.hold_sync():
            self.colors = {**self.colors, mode: colors}
            self.legends = {**self.legends, mode: legend}
            self.color_labels = {**self.color_labels, mode: label or mode}
            if self.color_mode == mode:
                self._redraw()

    def _all_sizes(self, mode: str, sizes: dict) -> dict:
        """A figure (or None) for every node, after checking that each id given is a node."""
        unknown = sorted(set(sizes) - set(self.graph.nodes))
        if unknown:
            raise KeyError(f"add_color_mode({mode!r}): no node {unknown[0]!r} in this graph; the ids are "
                           f"n0 ... n{len(self.graph.nodes) - 1}")
        return {**dict.fromkeys(self.graph.nodes), **sizes}

    # --- what the front end asks for ----------------------------------------------------------------

    def _on_front_end_message(self, _, content, buffers=None) -> None:
        kind, target = content.get("type"), content.get("id")
        try:
            with self.hold_sync():  # every change this request makes travels in one message
                self._answer(kind, target)
        except Exception as error:  # shown in the widget, never a silent failure in the comm thread
            self.notice = f"{type(error).__name__}: {error}"

    def _answer(self, kind, target) -> None:
        if kind == "toggle":
            self.toggle(target)
        elif kind == "check":
            self.check(target)
        elif kind == "reveal":
            self.reveal(target)
        else:
            self._on_other_message(kind, target)

    def _on_other_message(self, kind, target) -> None:
        raise ValueError(f"unknown request from the front end: {kind!r}")

    def toggle(self, group_id: str) -> bool:
        """Open or close a module (by its id, with or without the "g:" prefix); returns True if open."""
        check_text(f"{type(self).__name__}.toggle", "the module's id", group_id, "'layers.0'")
        if not group_id.startswith("g:"):
            group_id = "g:" + group_id
        opened = self.scene.toggle(group_id)
        self._redraw()
        return opened

    def expand(self, *modules) -> None:
        """Open these modules (by path, e.g. "encoder.layers.0"), or every module when none is named."""
        for module in modules:
            check_text(f"{type(self).__name__}.expand", "each module's path", module,
                       "'encoder.layers.0' (one per argument)")
        wanted = {m if m.startswith("g:") else "g:" + m for m in modules} or set(self.scene.members)
        unknown = wanted - set(self.scene.members)
        if unknown:
            raise KeyError(f"no module group {sorted(unknown)[0][2:]!r} in this graph; its modules are "
                           f"{', '.join(sorted(g[2:] for g in self.scene.members)[:8])}...")
        self.scene.expanded = self.scene.expanded | wanted
        self._redraw()

    def reveal(self, node) -> None:
        """Select a node and open the modules around it, so that it is drawn (a click in a table)."""
        node_id = self._node_id(node, "reveal")
        wanted = set(self.scene.ancestors(node_id)) & set(self.scene.members)
        if not wanted <= self.scene.expanded:
            self.scene.expanded = self.scene.expanded | wanted
            self._redraw()
        self.selected = node_id

    def check(self, node) -> dict:
        """"Check this node": its backward against finite differences on the inputs it got."""
        node_id = self._node_id(node, "check")
        try:
            result = check_node(self.graph, node_id)
        except CaptureError as error:
            result = {"ok": None, "inputs": [], "message": str(error)}
        result = {"id": node_id, **result}
        self.check_result = result
        return result

    def _node_id(self, node, method: str) -> str:
        """A node given as an id, a GraphNode, or the engine object it stands for."""
        return node_id_in(f"{type(self).__name__}.{method}", self.graph, node, f"view.{method}('n3')")

    def find(self, text: str) -> list:
        """Ids of the nodes whose label, op or module contains ``text``."""
        check_text(f"{type(self).__name__}.find", "what to find", text, "'Relu'")
        return self.graph.find(text)

    # --- gradients computed later by backward() ----------------------------------------------------

    def _watch_backward(self) -> None:
        """Hook every node so a later backward() reports the gradient that reached it."""
        view = weakref.ref(self)
        for node in self.graph.nodes.values():
            engine_node = node.ref if node.kind == "op" and node.ref is not None else None
            if engine_node is None or not hasattr(engine_node, "register_prehook"):
                continue

            def seen(grads, node=node):
                live = view()
                if live is not None and grads and grads[0] is not None and counts_as_training():
                    node.grad = summarize(grads[0])
                    live._pending = True

            self.own(engine_node.register_prehook(seen))
        self._pending = False
        self._leaf_grads = LeafGrads(self.graph)  # a backward through another graph, zero_grad(), ... change them too

        def flush(*_, view=view):
            live = view()
            if live is not None and (live._pending or live.graph.source == "scalar"  # a Scalar calls no hook
                                     or live._leaf_grads.update()):
                live.refresh()
        listener = after_each_cell(flush)
        if listener is not None:
            self.own(listener)

    def refresh(self) -> None:
        """Re-read leaves' .grad and redraw the colours (after each cell that ran backward or changed a .grad)."""
        if self.graph.source == "scalar":
            for node in self.graph.nodes.values():
                node.grad = summarize(node.ref.grad)
        else:
            self._leaf_grads.update()
        self._pending = False
        self._show_scalar_values()
        if self.color_mode == "kind" and self._gradient_arrived():
            self.color_mode = "grad"
        self._refresh_values(only_gradients=True)

    def _gradient_arrived(self) -> bool:
        """Whether a backward has reached an operation: a Scalar always has a .grad (0.0 until one does)."""
        ops = [n for n in self.graph.nodes.values() if n.kind == "op"]
        if self.graph.source == "scalar":
            return any(n.ref.grad != 0 for n in ops)
        return any(n.grad for n in ops)

    def _show_scalar_values(self) -> None:
        """A Scalar's box shows its value and gradient: send the second lines again."""
        if self.graph.source == "scalar":
            self.texts = {n.id: sub_text(n) for n in self.graph.nodes.values()}

    # --- pictures ---------------------------------------------------------------------------------

    def to_svg(self) -> str:
        """The graph as it is drawn now, with its colour key, as standalone SVG text."""
        return render(self.scene, colors=self._colors_now(), texts=self.texts,
                      legend=self.legends.get(self.color_mode), states=self._states_drawn())

    def to_dot(self):
        """The graph as it is drawn now as a ``graphviz.Digraph``: a closed module is one box, an open one a
        cluster, the boxes filled as the colour mode fills them (``gl.lab.make_dot`` draws torchviz's picture)."""
        from .dot import view_to_dot
        return view_to_dot(self)

    def _states_drawn(self) -> dict:
        """The stepper's node states for the static picture (a plain view has none)."""
        return {}

    def save_svg(self, path) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.to_svg())

    def save_html(self, path) -> None:
        """A standalone page with the same front end: pan, zoom, hover and inspect without a kernel."""
        names = [name for cls in type(self).__mro__ if issubclass(cls, GraphWidget)
                 for name in cls.class_own_traits(sync=True)]
        state = {name: getattr(self, name) for name in names}
        with open(path, "w", encoding="utf-8") as f:
            f.write(standalone_html(self._entry, state, f"gradlab — {type(self).__name__}"))

    def _repr_mimebundle_(self, **kwargs):
        """The widget view, plus a static SVG for GitHub, nbviewer and nbconvert."""
        bundle_ = super()._repr_mimebundle_(**kwargs)
        data, metadata = bundle_ if isinstance(bundle_, tuple) else (bundle_, {})
        data = dict(data)
        data["image/svg+xml"] = self.to_svg()
        return data, metadata


def take_off(handles: list) -> None:
    """Remove every hook in ``handles`` (once: the list is emptied)."""
    while handles:
        handles.pop().remove()


class GraphView(GraphWidget):
    """Draw a graph you can explore: ``gl.lab.GraphView(loss)``, ``GraphView(rec)``, ``GraphView(scalar)``.

    Pan by dragging, zoom with the wheel, double-click to fit; click a node for the inspector
    (values, gradient, saved tensors, its derivative rule, and "check this node"), click a module
    to open or close it. ``GraphView(tape)`` draws a ``gl.jit.trace`` tape, the chains the compiler
    fuses (or ``fused=[[3, 4, 5], ...]``, op indices) as super-nodes that open like modules; a tape has
    no values or gradients, so it is coloured by kind only.
    ``color`` is "grad", "value" or "kind"; ``names`` labels leaf tensors
    (``dict(model.named_parameters())``) when drawing from a tensor. Where times are known (a
    ``gl.lab.profile`` result, a recording) ``color="time"`` colours by them, and ``"memory"`` by
    what each node saved for backward; the side panel then lists the top 10 nodes.
    """

    def __init__(self, obj, *, names=None, color=None, height=460, fused=None):
        check_drawable("GraphView", obj)  # what was given, checked before anything is drawn
        check_view_options("GraphView", color=color, height=height)
        names = checked_names("GraphView", obj, names)
        with collector_paused():  # (collector.py: a big graph is many objects, all kept)
            self._draw(obj, names, color, height, fused)

    def _draw(self, obj, names, color, height, fused) -> None:
        graph = obj.graph if isinstance(obj, Profile) else capture(obj, names, fused)
        figures = node_figures(obj, graph)
        for node_id, node_figures_ in figures.items():
            graph.nodes[node_id].profile = node_figures_
        hint = ("; times are known for a profile (prof = gl.lab.profile(lambda: loss_fn(model(x), y)), then "
                "gl.lab.GraphView(prof, color='time')) or a recording" if color in ("time", "forward", "backward") else "")
        super().__init__(obj, names=names, color=color, height=height, graph=graph, modes=figure_modes(figures),
                         color_hint=hint)
        self.tables = figure_tables(figures, graph)
        self._figures, self._backward_seen = figures, {}
        self._own_modes = {mode: self._added_modes[mode] for mode in self._added_modes}  # a lab may replace one
        if isinstance(obj, Recording):
            self._time_later_backward()

    def _time_later_backward(self) -> None:
        """Time each node of a recording in the backward you run later, from hooks around it (after
        the hook that notes its gradient). Shown when the cell ends, as the gradients are; the device
        is not synchronised here (gl.lab.profile does that)."""
        started, seen = {}, self._backward_seen  # (no reference to the view: the graph must not keep it alive)
        for node in self.graph.nodes.values():
            if node.id not in self._figures or not hasattr(node.ref, "register_prehook"):
                continue

            def start(grads, key=node.id):
                if counts_as_training():  # a stepper's replay or a profile is not the backward you ran
                    started[key] = perf_counter()

            def stop(grads_in, grads_out, key=node.id):
                if key in started:
                    seen[key] = perf_counter() - started.pop(key)

            self.own(node.ref.register_prehook(start))
            self.own(node.ref.register_hook(stop))

    def refresh(self) -> None:
        if self._backward_seen:  # a backward ran through the recorded graph: its times join the forward's
            with self.hold_sync():
                for node_id, seconds in self._backward_seen.items():
                    self._figures[node_id]["backward_s"] = seconds  # (the node's own dict: its JSON has it too)
                self._backward_seen.clear()
                for mode, sizes, title, label, missing, text in figure_modes(self._figures):
                    if self._added_modes.get(mode, self._own_modes.get(mode)) is self._own_modes.get(mode):
                        self.add_color_mode(mode, sizes, title, label, missing, text)
                        self._own_modes[mode] = self._added_modes[mode]
                self.tables = figure_tables(self._figures, self.graph)
        super().refresh()

"""``make_dot``: a backward graph as Graphviz's DOT, drawn box for box as torchviz draws PyTorch's.

torchviz's picture: a grey box per backward node (``AddmmBackward0``, ``AccumulateGrad``), a light blue
one per leaf that backward gives a ``.grad`` (named by ``params=``, with its shape), a green one for the
output, and with ``show_saved=True`` an orange one per tensor a node saved for backward. It is read from
the lab's ``Graph`` (``capture``), so a gradlab tensor, a recording and a PyTorch tensor take one path;
``GraphView.to_dot()`` writes what a view draws now. The ``graphviz`` package (loaded on the first call)
holds the DOT text; only rendering it needs Graphviz's ``dot`` program.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping

from ..autograd.function import Node, TrackedTensor
from ..nn.modules.module import Module
from .arguments import check_drawable, described
from .capture import capture
from .colors import CLOSED_MODULE_BORDER, DOT_FILLS, KIND_COLORS, MISSING, MODULE_FRAME, TITLE_INK
from .graph import Graph, GraphNode
from .pytorch import is_torch_module, is_torch_tensor

MISSING_PACKAGE = ("gl.lab.{call} needs the Python package graphviz, which is not installed: "
                   "pip install 'gradlab[lab]' (or pip install graphviz)")
TAKES = ("a loss tensor (gradlab's or PyTorch's, the result of operations on tensors with requires_grad=True), "
         "a recording (with gl.lab.record() as rec: loss = ...) or a gradlab.Scalar")
PARAMS = "{name: tensor}, such as dict(model.named_parameters()), or the model itself"

# torchviz's look: small filled boxes, text in a monospace font
NODE_ATTR = dict(style="filled", shape="box", align="left", fontsize="10", ranksep="0.1", height="0.2",
                 fontname="monospace")


def make_dot(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50):
    """The backward graph of ``var`` as a ``graphviz.Digraph``, as torchviz's ``make_dot`` draws it.

    ``var`` is a gradlab tensor, a recording, a PyTorch tensor or a tuple of tensors (the nodes they
    share drawn once); ``params`` names the leaves (``dict(model.named_parameters())``).
    ``show_attrs`` lists under each node what it keeps for backward (a tensor as "[saved tensor]",
    any other value as it is, cut to ``max_attr_chars``);
    ``show_saved`` draws each saved tensor as an orange box beside its node. Show it in a notebook, or
    ``.render("graph", format="png")``: both need Graphviz's dot program; without it a notebook shows
    gradlab's own drawing of the same boxes and ``render`` says what to install.
    """
    for flag, value in (("show_attrs", show_attrs), ("show_saved", show_saved)):
        if not isinstance(value, bool):
            raise TypeError(f"make_dot: {flag}= is True or False; got {described(value)}")
    if isinstance(max_attr_chars, bool) or not isinstance(max_attr_chars, int):
        raise TypeError(f"make_dot: max_attr_chars= is a whole number of characters, such as 50; got "
                        f"{described(max_attr_chars)}")
    digraph_class = picture_class("make_dot")
    graph = _backward_graph(var, params)
    drawing = torchviz_drawing(graph, show_attrs, show_saved, max(max_attr_chars, 3))
    dot = drawing.digraph(digraph_class, node_attr=NODE_ATTR)
    # torchviz's size: 12 inches, more for a big graph (0.15 per line of DOT)
    size = max(12, len(dot.body) * 0.15)
    dot.graph_attr["size"] = f"{size},{size}"
    dot.fallback = drawing.gradlab_svg
    return dot


def picture_class(call: str):
    """``DotPicture`` (dot_picture.py), importing the graphviz package now; its absence says what to install."""
    try:
        importlib.import_module("graphviz")
    except ImportError:
        raise ImportError(MISSING_PACKAGE.format(call=call)) from None
    from .dot_picture import DotPicture
    return DotPicture


def _backward_graph(var, params) -> Graph:
    names = _checked_params(params)
    if not isinstance(var, (tuple, list)):
        check_drawable("make_dot", var, TAKES)
        return capture(var, names)
    if not var or not all(_is_tensor(v) for v in var):
        raise TypeError(f"make_dot: a {type(var).__name__} of outputs holds tensors only (as in torchviz's "
                        f"make_dot((a, b))); got {described(var)}")
    return _one_graph([capture(v, names) for v in var])


def _one_graph(graphs) -> Graph:
    """The graphs of several outputs as one (torchviz draws a tuple so): a node they share is drawn once."""
    merged = Graph(source=graphs[0].source)
    for graph in graphs:
        refs = {}  # node id -> the engine objects it stands for
        for ref, node_id in graph.by_ref.items():
            refs.setdefault(node_id, []).append(ref)
        now, added = {}, set()  # this graph's ids -> the merged graph's; those new in it
        for node in graph.nodes.values():
            known = next((merged.by_ref[r] for r in refs.get(node.id, ()) if r in merged.by_ref), None)
            if known is None:
                known = merged.new_id()
                merged.add(dataclasses.replace(node, id=known))
                merged.by_ref.update(dict.fromkeys(refs.get(node.id, ()), known))
                added.add(known)
            now[node.id] = known
        # a node met before came with the edges from its inputs: only the edges into new nodes are new
        merged.edges += [(now[a], now[b]) for a, b in graph.edges if now[b] in added]
        merged.outputs += [now[o] for o in graph.outputs if now[o] not in merged.outputs]
    return merged


def _checked_params(params):
    """``params`` as {name: tensor} (torchviz's), from a dict, (name, tensor) pairs or a model."""
    if params is None:
        return None
    if isinstance(params, Module) or is_torch_module(params):
        params = dict(params.named_parameters())
    if isinstance(params, (str, bytes)) or not (isinstance(params, Mapping) or hasattr(params, "__iter__")):
        raise TypeError(f"make_dot: params= takes {PARAMS}; got {described(params)}")
    named = {}
    for i, item in enumerate(params.items() if isinstance(params, Mapping) else params):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and _is_tensor(item[1])):
            raise TypeError(f"make_dot: params= takes {PARAMS}; its entry {i} is {described(item)}, not a "
                            "(name, tensor) pair")
        named[item[0]] = item[1]
    return named


def _is_tensor(value) -> bool:
    return isinstance(value, TrackedTensor) or is_torch_tensor(value)


# --- the picture, as boxes and edges ---------------------------------------------------------------------

class Drawing:
    """Boxes and edges in the order drawn: written as DOT, or laid out by gradlab where dot is missing."""

    def __init__(self):
        self.boxes = {}  # id -> (DOT label, role in DOT_FILLS, name and shape for gradlab's drawing)
        self.edges = []  # (tail, head, DOT attributes)

    def box(self, box_id: str, label: str, role: str, name: str, shape=None) -> None:
        self.boxes[box_id] = (label, role, name, shape)

    def edge(self, tail: str, head: str, **attrs) -> None:
        self.edges.append((tail, head, attrs))

    def digraph(self, digraph_class, **kwargs):
        from graphviz import nohtml  # (a label such as "<lambda>" is text, not an HTML label)
        dot = digraph_class(**kwargs)
        for box_id, (label, role, _, _) in self.boxes.items():
            dot.node(box_id, nohtml(label), fillcolor=DOT_FILLS[role][0])
        for tail, head, attrs in self.edges:
            dot.edge(tail, head, **attrs)
        return dot

    def gradlab_svg(self) -> str:
        """The same boxes and edges laid out and drawn by gradlab (scene.py, svg.py), in the same fills."""
        from .scene import Scene
        from .svg import render
        graph = Graph(source="dot")
        kinds = {"op": "op", "leaf": "param", "saved": "input", "output": "op"}
        for box_id, (_, role, name, shape) in self.boxes.items():
            graph.add(GraphNode(box_id, kinds[role], name, name, output_shape=shape))
        graph.edges = [(tail, head) for tail, head, _ in self.edges]
        colors = {box_id: (DOT_FILLS[role][1], TITLE_INK) for box_id, (_, role, _, _) in self.boxes.items()}
        return render(Scene(graph), colors=colors)


def torchviz_drawing(graph: Graph, show_attrs: bool, show_saved: bool, max_attr_chars: int) -> Drawing:
    """torchviz's boxes for a lab Graph: what backward visits (data that needs no gradient is left out)."""
    drawing = Drawing()
    drawn = set()
    for node in graph.nodes.values():
        if node.kind == "input" or not node.requires_grad:
            continue
        drawn.add(node.id)
        if node.kind in ("param", "leaf"):
            name = node.label if node.kind == "param" or node.op != "AccumulateGrad" else ""
            if node.op == "AccumulateGrad":  # torchviz: the tensor's box, then its AccumulateGrad node
                drawing.box(f"{node.id}_leaf", _tensor_label(name, node.output_shape), "leaf", name or "leaf",
                            node.output_shape)
                drawing.box(node.id, "AccumulateGrad", "op", "AccumulateGrad")
                drawing.edge(f"{node.id}_leaf", node.id)
            else:  # a Scalar's leaf is the value itself
                drawing.box(node.id, _tensor_label(name, node.output_shape), "leaf", name, node.output_shape)
            continue
        attrs, tensors = saved_of(node)
        label = node.op if not show_attrs else _with_attributes(node.op, attrs, max_attr_chars)
        drawing.box(node.id, label, "op", node.op)
        if show_saved:
            for i, (name, shape) in enumerate(tensors):
                drawing.box(f"{node.id}_saved{i}", _tensor_label(name, shape), "saved", name, shape)
                drawing.edge(node.id, f"{node.id}_saved{i}", dir="none")
    for tail, head in graph.edges:
        if tail in drawn and head in drawn:
            drawing.edge(tail, head)
    for output in graph.outputs:
        shape = _output_shape(graph.nodes[output])
        drawing.box(f"{output}_out", _tensor_label("", shape), "output", "output", shape)
        drawing.edge(output, f"{output}_out")
    return drawing


def _tensor_label(name: str, shape) -> str:
    """torchviz's label of a tensor: its name (or nothing), then its size as PyTorch prints it."""
    size = "" if shape is None else "(" + ", ".join(str(n) for n in shape) + ")"
    return f"{name}\n {size}"


def _output_shape(node: GraphNode):
    shape = node.output_shape
    if shape and isinstance(shape[0], list):  # a node of several outputs: the one the user holds
        shape = (node.value or {}).get("shape")
    return shape


def _with_attributes(name: str, attrs: dict, max_chars: int) -> str:
    """torchviz's table under a node's name: one "attribute: value" line each, values cut to ``max_chars``."""
    if not attrs:
        return name
    key_width = max(len(k) for k in attrs)
    value_width = min(max(len(v) for v in attrs.values()), max_chars)
    cut = [v if len(v) <= value_width else v[:value_width - 3] + "..." for v in attrs.values()]
    rows = [f"{k:<{key_width}}: {v:>{value_width}}" for k, v in zip(attrs, cut)]
    return "\n".join([name, "-" * max(key_width + value_width + 2, len(name)), *rows])


def saved_of(node: GraphNode) -> tuple[dict, list]:
    """What a node keeps for backward, from the graph (any engine's): ({attribute: text}, as torchviz lists
    them under the node, sorted) and [(name, shape)] of its saved tensors (the orange boxes)."""
    saved = [item for item in node.saved if not item.get("freed")]
    tensors = [(item["name"], item["shape"]) for item in saved if "shape" in item]
    attrs = {item["name"]: item["text"] if "text" in item else "[saved tensor]" for item in saved}
    if len(saved) < len(node.saved):
        attrs["saved"] = "[freed by backward]"
    if isinstance(node.ref, Node):  # what a gradlab forward kept on ctx besides tensors (ctx.dim = ...)
        attrs.update((k, str(v)) for k, v in vars(node.ref).items() if not k.startswith("_"))
    return {k: " ".join(v.split()) for k, v in sorted(attrs.items())}, tensors


# --- what a view draws now -------------------------------------------------------------------------------

def view_to_dot(view):
    """A GraphView's drawing now as a Digraph: each box drawn (a closed module as one box), open modules as
    clusters, the fills of the colour mode shown, edges merged as drawn ("×3")."""
    from .scene import GROUP_PREFIX, clip, sub_text
    digraph_class = picture_class("GraphView.to_dot")  # (imports graphviz, or says how to install it)
    from graphviz import nohtml
    scene, placement, colors = view.scene, view.scene.placement(), view._colors_now()
    dot = digraph_class(graph_attr=dict(rankdir="LR"), node_attr=dict(style="filled", shape="box",
                                                                      fontname="Helvetica", fontsize="11"))
    inside: dict = {}  # open group (None: the top) -> the items drawn directly in it
    for item in placement.boxes:
        inside.setdefault(scene.parent.get(item), []).append(item)

    def dot_id(item: str) -> str:  # (":" in a DOT edge would name a port)
        return item.replace(":", "_")

    def fill(item, default):
        return colors.get(item, (default, TITLE_INK))

    def draw(level, into) -> None:
        for item in inside.get(level, ()):
            if item in placement.expanded:
                with into.subgraph(name="cluster_" + dot_id(item)[len("g_"):]) as cluster:
                    cluster.attr(label="▾ " + scene.group_label(item), style="dashed", color=MODULE_FRAME,
                                 fontname="Helvetica", fontsize="11")
                    draw(item, cluster)
            elif item.startswith(GROUP_PREFIX) and item not in scene.graph.nodes:
                color, ink = fill(item, KIND_COLORS["group"])
                into.node(dot_id(item), nohtml(f"▸ {clip(scene.group_label(item))}\n{scene.group_sub(item)}"),
                          fillcolor=color, fontcolor=ink, color=CLOSED_MODULE_BORDER, penwidth="1.4")
            else:
                node = scene.graph.nodes[item]
                color, ink = fill(item, MISSING)
                style = "filled" if node.kind == "op" else "filled,rounded" if node.requires_grad else "filled,dashed"
                into.node(item, nohtml(f"{clip(node.label)}\n{view.texts.get(item, sub_text(node))}"), fillcolor=color,
                          fontcolor=ink, style=style, tooltip=f"{node.label} — {node.op}")

    draw(None, dot)
    for route in placement.edges:
        dot.edge(dot_id(route.source), dot_id(route.target),
                 **({"label": f"×{route.count}"} if route.count > 1 else {}))
    dot.fallback = view.to_svg
    return dot

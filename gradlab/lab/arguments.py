"""Checks on what a learner hands the lab, made before anything runs: a mistake is named where it is made.

Passing a class for one of its objects, the recorder for what it recorded, or a view where a graph
is wanted fails deep inside otherwise, with an error about something else. Each check here raises
an error that names the call, the argument, what it got, what it takes and the call that works.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Number

from ..autograd.function import TrackedTensor
from ..nn.modules.module import Module
from .graph import Graph, GraphNode
from .pytorch import is_torch_module, is_torch_tensor
from .record import Recording, record

DRAWABLE = ("a loss tensor, gradlab's or PyTorch's (the result of operations on tensors with requires_grad=True), a recording "
            "(with gl.lab.record() as rec: loss = ...), a tape (gl.jit.trace(model, x)), a compiled step "
            "(gl.compile.make_step, once called) or a gradlab.Scalar")
STEPPABLE = ("a loss tensor, gradlab's or PyTorch's (the result of operations on tensors with requires_grad=True), a recording "
             "(with gl.lab.record() as rec: loss = ...) or a gradlab.Scalar")
SMALLEST_HEIGHT, LARGEST_HEIGHT = 100, 10_000  # pixels: a view shorter than this shows nothing usable


def described(value) -> str:
    """What was passed, in words: "None", "the class Recording itself", "int 42"."""
    if value is None:
        return "None"
    if isinstance(value, type):
        return f"the class {value.__name__} itself"
    shown = repr(value)
    return f"{type(value).__name__} {shown}" if len(shown) <= 40 else f"a {type(value).__name__}"


def check_drawable(call: str, obj, takes: str = DRAWABLE) -> None:
    """Name the usual mistakes in what a view or a stepper was given; anything else is left to capture()."""
    if obj is None:
        raise TypeError(f"{call}: got None, so there is nothing to work on; give it {takes}")
    if isinstance(obj, type):
        raise TypeError(f"{call}: got {described(obj)}, not one of its objects; give it {takes}")
    if isinstance(obj, record):
        raise TypeError(f"{call}: got the recorder gl.lab.record(), not what it recorded: write "
                        f"`with gl.lab.record() as rec: loss = ...`, then {call}(rec)")
    if isinstance(obj, Module) or is_torch_module(obj):
        raise TypeError(f"{call}: got a model ({type(obj).__name__}), not what it computed: record its forward, "
                        f"`with gl.lab.record() as rec: loss = loss_fn(model(x), y)`, then {call}(rec)")
    if hasattr(obj, "to_svg") and isinstance(getattr(obj, "graph", None), Graph):  # a GraphView or a stepper
        raise TypeError(f"{call}: got a {type(obj).__name__}, which is drawn already; give {call} what that one was "
                        f"made from: {takes}")


def checked_names(call: str, obj, names):
    """``names`` as (tensor, name) pairs, from {name: tensor}, {tensor: name} or their items (as
    ``model.named_parameters()`` gives): a tensor's graph, or a recording's leaves that no module owns
    (a recording names a module's parameters itself)."""
    if names is None:
        return None
    if not (isinstance(obj, (TrackedTensor, Recording)) or is_torch_tensor(obj)):
        raise ValueError(f"{call}: names= labels the leaves of a tensor's graph or a recording; a "
                         f"{type(obj).__name__}'s graph takes no names, so drop names=")
    takes = "{name: tensor}, such as dict(model.named_parameters()), or the model itself"
    if isinstance(names, Module) or is_torch_module(names):  # the model: its parameters by their names
        names = dict(names.named_parameters())
    if isinstance(names, (str, bytes)) or not (isinstance(names, Mapping) or hasattr(names, "__iter__")):
        raise TypeError(f"{call}: names= takes {takes}; got {described(names)}")
    pairs = []
    for i, item in enumerate(names.items() if isinstance(names, Mapping) else names):
        if not (isinstance(item, tuple) and len(item) == 2):
            raise TypeError(f"{call}: names= takes {takes}; its entry {i} is {described(item)}, not a (name, tensor) "
                            "pair")
        a, b = item
        name, tensor = (a, b) if isinstance(a, str) else (b, a)
        if not isinstance(name, str) or not (isinstance(tensor, TrackedTensor) or is_torch_tensor(tensor)):
            raise TypeError(f"{call}: names= takes {takes}; its entry {i} pairs {described(a)} with {described(b)}, "
                            "not a name with a tensor")
        pairs.append((tensor, name))
    return pairs


def check_view_options(call: str, *, color=None, height=460) -> None:
    """A colour mode's name (which names the graph has is checked once it is captured) and a height in pixels."""
    if color is not None and not isinstance(color, str):
        raise TypeError(f"{call}: color= takes the name of a colour mode, such as 'grad', 'value' or 'kind'; "
                        f"got {described(color)}")
    if isinstance(height, bool) or not isinstance(height, int):
        raise TypeError(f"{call}: height= takes a whole number of pixels, such as 460; got {described(height)}")
    if not SMALLEST_HEIGHT <= height <= LARGEST_HEIGHT:
        raise ValueError(f"{call}: height= is the view's height in pixels, from {SMALLEST_HEIGHT} to "
                         f"{LARGEST_HEIGHT}; got {height}")


def check_text(call: str, what: str, value, example: str, optional: bool = False) -> None:
    """An argument that is text (None allowed when ``optional``)."""
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"{call} takes {what} as text, such as {example}; got {described(value)}")


def check_color_mode(mode, sizes, title, label, missing, text) -> None:
    """add_color_mode's arguments: names as text, a figure per node id (positive, or None where unknown)
    and a function that writes a figure as text."""
    call = "add_color_mode"
    check_text(call, "the mode's name", mode, "'time'")
    if not isinstance(sizes, Mapping):
        raise TypeError(f"{call}({mode!r}): sizes takes {{node id: figure}}, such as {{'n3': 2.5e-05}}; "
                        f"got {described(sizes)}")
    for node_id, size in sizes.items():
        if size is not None and (isinstance(size, bool) or not isinstance(size, (int, float, Number))):
            raise TypeError(f"{call}({mode!r}): sizes[{node_id!r}] is {described(size)}; each figure is a number "
                            "(or None where it is not known)")
        if size is not None and not size >= 0:  # (NaN is not either)
            raise ValueError(f"{call}({mode!r}): sizes[{node_id!r}] is {size}; figures are coloured on a log scale, "
                             "so each is a size: 0 or more (None where it is not known)")
    check_text(call, "title=", title, "'forward time'")
    check_text(call, "label=", label, "'time'", optional=True)
    check_text(call, "missing=", missing, "'not known yet'")
    if text is not None and not callable(text):
        raise TypeError(f"{call}({mode!r}): text takes a function that writes a figure as text, such as "
                        f"lambda s: f'{{s * 1e6:.0f}} µs'; got {described(text)}")


def graph_of(call: str, graph) -> Graph:
    """The lab Graph of a Graph, a GraphView, a BackpropStepper or a profile."""
    if isinstance(graph, Graph):
        return graph
    inner = getattr(graph, "graph", None)
    if isinstance(inner, Graph) and not isinstance(graph, type):
        return inner
    if isinstance(graph, (Recording, TrackedTensor)):
        raise TypeError(f"{call}: got a {type(graph).__name__}; it takes a drawn graph: view = gl.lab.GraphView(...) "
                        f"then view.check('n3'), or {call}(gl.lab.capture(...), 'n3')")
    raise TypeError(f"{call}: takes a graph (a GraphView, or gl.lab.capture(...)) and a node id, as "
                    f"{call}(view, 'n3') or view.check('n3'); got {described(graph)}")


def node_id_in(call: str, graph: Graph, node, how: str) -> str:
    """The id of a node given as an id ("n3"), a GraphNode, or the engine object it stands for (a tensor an
    op made stands for that op's node); ``how`` shows the call that works (for the message when it is missing)."""
    if node is None:
        raise TypeError(f"{call}: got no node to work on (None); give its id, as {how}; {_some_ids(graph)} "
                        "(view.find('Relu') finds ids by name)")
    if isinstance(node, str):
        if node not in graph.nodes:
            raise KeyError(f"{call}: no node {node!r} in this graph; {_some_ids(graph)}")
        return node
    found = graph.nodes.get(node.id) if isinstance(node, GraphNode) else graph.node_for(node)
    if found is None and getattr(node, "grad_fn", None) is not None:  # a tensor an op made: that op's node
        found = graph.node_for(node.grad_fn)
    if found is None:
        raise KeyError(f"{call}: {described(node)} is not a node of this graph; give a node id, as {how}; "
                       f"{_some_ids(graph)}")
    return found.id


def _some_ids(graph: Graph, shown: int = 6) -> str:
    """"its nodes are n0 ... n9; operations: n2 (Mm), n3 (Relu), ...": a few ids to choose from."""
    ops = [n for n in graph.nodes.values() if n.kind == "op"]
    listed = ", ".join(f"{n.id} ({n.label})" for n in ops[:shown]) + (", ..." if len(ops) > shown else "")
    return f"its nodes are n0 ... n{len(graph.nodes) - 1}" + (f"; operations: {listed}" if ops else "")

"""A ``gl.jit.Tape`` as the lab's ``Graph``: one box per op, one per value it reads from outside, and
the chains the compiler fuses drawn as super-nodes that open like a module.

* Each tape op is an op node: its Function's name, its output's shape and dtype, its module path,
  its rule (docstring and ``derivative``, as for recorded graphs) and its index in the tape.
* Inputs, parameters, buffers and constants are leaf nodes named by their ``Value.name``
  ("input 0", "0.weight", "1.running_mean"); a parameter or buffer sits in the module that owns it.
* Edges come from the ``Ref`` arguments; modules become the same collapsible groups a recording
  has (a module run twice is two groups, ``block`` and ``block#2``).
* A fused group (``gl.compile.fusion_groups(tape)``, or ``fused=[[3, 4, 5], ...]``) becomes one more
  group, drawn closed as "fused: Mul · Add · Relu", inside the module that holds all its ops.

A tape keeps no tensor values and no gradients, so the graph offers only the "kind" colouring.
``capture.from_tape(tape, fused)`` is the entry point (it hands this module the rule reader).
"""

from __future__ import annotations

from ..jit.entries import refs_in
from .colors import category
from .graph import Graph, GraphNode, Group

LEAF_KINDS = {"input": "input", "parameter": "param", "buffer": "input", "constant": "input"}
LEAF_TEXT = {
    "input": ("an input of the traced function: replay(...) gives a new one of the same shape", "no gradient"),
    "parameter": ("a parameter: read as it is when the tape replays (a training step changes it)", "x.grad += g"),
    "buffer": ("a buffer of a module (running statistics, a counter): state the ops read and update",
               "no gradient"),
    "constant": ("a tensor the function used that is not an input or a module's parameter: kept in the tape",
                 "no gradient"),
}


def is_tape(obj) -> bool:
    """True for a ``gl.jit.Tape`` (checked by type name and fields, so capture need not import the jit)."""
    return type(obj).__name__ == "Tape" and hasattr(obj, "ops") and hasattr(obj, "values")


def tape_to_graph(tape, fused, rule_of) -> Graph:
    """The tape drawn as a graph; ``fused`` lists groups of op indices (None: what the compiler fuses);
    ``rule_of(function)`` gives an op's (words, math), as capture.py reads them for every graph."""
    graph = Graph(source="tape", modes=("kind",))
    groups_of_ops = _fused_groups(tape, fused, graph)
    call_of = _module_calls(tape, graph)  # op index -> group id of the module call it ran in (or None)
    fused_of = _add_fused_groups(tape, graph, groups_of_ops, call_of)
    producer: dict = {}  # value id -> node id
    for op in tape.ops:
        for vid in op.refs():
            if vid not in producer:
                producer[vid] = _leaf(graph, tape.values[vid], call_of.get(op.index), op.module).id
        words, math = rule_of(op.function)
        shapes = [list(s) if s is not None else None for s in op.out_shapes]
        nid = graph.new_id()
        graph.add(GraphNode(
            nid, "op", op.name, op.name, group=fused_of.get(op.index, call_of.get(op.index)),
            input_shapes=[list(s) for s in op.in_shapes],
            output_shape=shapes[0] if len(shapes) == 1 else shapes,
            dtype=", ".join(dict.fromkeys(op.dtypes)), device=op.device,
            source=f"tape op {op.index}" + (f" · module {op.module}" if op.module else " · top level"),
            code=tape.line(op), words=words, math=math, requires_grad=True, category=category(op.function),
        ), op)
        for vid in dict.fromkeys(op.refs()):
            graph.edges.append((producer[vid], nid))
        for vid in op.outputs:
            if vid is not None:
                producer[vid] = nid
    graph.outputs.extend(dict.fromkeys(producer[v] for v in refs_in(tape.output) if v in producer))
    graph.freed = False
    return graph


# --- module calls, as a recording has them --------------------------------------------------------------

def _module_calls(tape, graph) -> dict:
    """A group per module call, from the ops' module paths: ``a.b`` sits in ``a``; a path that comes back
    after its module was left is a new call (``a#2``). Returns op index -> its call's group id."""
    open_calls: dict = {}  # path -> group id of its open call
    calls_seen: dict = {}  # path -> how many calls so far
    call_of = {}
    types = getattr(tape, "modules", None) or {}
    for op in tape.ops:
        paths = _prefixes(op.module)
        for path in list(open_calls):  # leaving a module closes its call
            if path not in paths:
                del open_calls[path]
        parent = None
        for path in paths:
            if path not in open_calls:
                calls_seen[path] = calls_seen.get(path, 0) + 1
                n = calls_seen[path]
                gid = path if n == 1 else f"{path}#{n}"
                name = path[len(parent_path(path)) + 1:] if parent_path(path) else path
                kind = types.get(path)  # tape.modules: path -> class name
                label = f"{name} ({kind})" if kind and kind != name else name
                graph.groups[gid] = Group(gid, label + (f" · call {n}" if n > 1 else ""), parent)
                open_calls[path] = gid
            parent = open_calls[path]
        call_of[op.index] = parent
    return call_of


def _prefixes(module: str) -> list:
    """"a.b.c" -> ["a", "a.b", "a.b.c"]; "" -> []."""
    if not module:
        return []
    parts = module.split(".")
    return [".".join(parts[:i + 1]) for i in range(len(parts))]


def parent_path(path: str) -> str:
    return path.rsplit(".", 1)[0] if "." in path else ""


# --- fused groups ---------------------------------------------------------------------------------------

def _fused_groups(tape, fused, graph) -> list:
    """The groups to draw: checked when given, else the compiler's (none, said in ``graph.note``, when it
    cannot compile this tape)."""
    if fused is None:
        try:
            from ..compile import fusion_groups
        except ImportError:  # pragma: no cover - an engine without the compiler
            return []
        try:
            return [list(g) for g in fusion_groups(tape)]
        except Exception as error:  # (an op computing with numpy on its arrays): drawn without super-nodes
            graph.note = (f"no fused groups drawn: gl.compile.fusion_groups could not compile this tape "
                          f"({type(error).__name__}: {error})")
            return []
    if isinstance(fused, (str, bytes)) or not hasattr(fused, "__iter__"):
        raise TypeError(f"GraphView(tape, fused=...): fused is a list of lists of op indices, such as "
                        f"[[3, 4, 5]], got {type(fused).__name__}")
    groups, seen = [], {}
    for g, group in enumerate(fused):
        if isinstance(group, (str, bytes)) or not hasattr(group, "__iter__"):
            raise TypeError(f"GraphView(tape, fused=...): group {g} must be a list of op indices, got {group!r}")
        group = list(group)
        for i in group:
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(tape.ops):
                raise ValueError(f"GraphView(tape, fused=...): group {g} names op {i!r}, but the tape's ops are "
                                 f"0 ... {len(tape.ops) - 1}")
            if i in seen:
                raise ValueError(f"GraphView(tape, fused=...): op {i} is in group {seen[i]} and in group {g}; "
                                 "an op belongs to one fused group at most")
            seen[i] = g
        if len(group) < 2:
            raise ValueError(f"GraphView(tape, fused=...): group {g} has {len(group)} op; a fused group has 2 or more")
        groups.append(sorted(group))
    return groups


def _add_fused_groups(tape, graph, groups, call_of) -> dict:
    """A group per fused chain, inside the deepest module call that holds all its ops; op index -> its id."""
    fused_of = {}
    for k, ops in enumerate(groups):
        chains = [_ancestry(graph, call_of.get(i)) for i in ops]
        common = chains[0]
        for chain in chains[1:]:
            common = [a for a, b in zip(common, chain) if a == b]
        parent = common[-1] if common else None
        gid = f"{parent}.fused{k}" if parent else f"fused{k}"
        names = " · ".join(tape.ops[i].name for i in ops)
        graph.groups[gid] = Group(gid, f"fused: {names}", parent, closed=True)
        for i in ops:
            fused_of[i] = gid
    return fused_of


def _ancestry(graph, gid) -> list:
    """The group ids from the outermost module down to ``gid``."""
    chain = []
    while gid is not None:
        chain.append(gid)
        gid = graph.groups[gid].parent
    return chain[::-1]


# --- leaves and text ------------------------------------------------------------------------------------

def _leaf(graph, value, consumer_call, consumer_module) -> GraphNode:
    """An input, parameter, buffer or constant: named by the tape; a module's own sits in that module."""
    group = None
    if value.kind in ("parameter", "buffer") and consumer_call is not None \
            and parent_path(value.name) == consumer_module:
        group = consumer_call
    words, math = LEAF_TEXT.get(value.kind, ("a value the ops read", "no gradient"))
    kind = LEAF_KINDS.get(value.kind, "input")
    return graph.add(GraphNode(
        graph.new_id(), kind, value.kind, value.name, group=group, output_shape=list(value.shape),
        dtype=value.dtype, words=words, math=math, requires_grad=value.kind == "parameter",
        source=f"tape value %{value.id} ({value.kind})",
    ), value)

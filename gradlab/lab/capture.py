"""Turn what the engine holds into the lab's ``Graph``: from a tensor, a recording, or a Scalar.

* ``from_tensor(loss)`` walks ``loss.grad_fn`` and its ``next_functions``: the backward graph the
  engine will run, with one node per operation and one per leaf.
* ``from_recording(rec)`` builds the graph of a forward pass watched by ``gl.lab.record()``:
  the same operations, plus their values, module groups and source lines.
* ``from_scalar(out)`` walks a ``Scalar`` expression, for the first lab.
* ``from_tape(tape, fused)`` (``tape_graph.py``) draws a ``gl.jit.Tape``, fused chains as super-nodes.
"""

from __future__ import annotations

import functools
import inspect
import sys

from ..autograd.function import AccumulateGrad, Function, Node, TrackedTensor
from ..scalar import Scalar, ScalarFunction
from .as_used import ValuesAsUsed, leaf_now, now_marked
from .capture_basics import LEAF_MATH, LEAF_WORDS, CaptureError, name_pairs, reachable, short_name
from .colors import category
from .graph import Graph, GraphNode, Group
from .local_derivative import local_derivatives
from .pytorch import is_torch_tensor
from .record import PACKAGE_DIR, Recording, short_filename
from .summary import Later, resolved, summarize
from .program_graph import is_compiled_step, is_program, program_of, program_to_graph
from .tape_graph import is_tape, tape_to_graph


WHAT_WORKS = ("a tensor with a grad_fn, gradlab's or PyTorch's (the result of operations on tensors with requires_grad=True), "
              "a recording (with gl.lab.record() as rec: ...), a tape (gl.jit.trace(model, x)), a compiled step "
              "(gl.compile.make_step, once called), or a gradlab.Scalar")


def capture(obj, names: dict | None = None, fused=None) -> Graph:
    """The graph of a tensor, a ``Recording``, a ``gl.jit.Tape``, a compiled step or a ``Scalar``; ``names`` maps tensors to
    labels; ``fused`` (a tape only) lists groups of op indices drawn as super-nodes (see tape_graph.py)."""
    if is_tape(obj):
        return from_tape(obj, fused)
    if fused is not None:
        raise CaptureError(f"gl.lab: fused= is for a tape (gl.jit.trace(model, x)), not a {type(obj).__name__}")
    if is_compiled_step(obj) or is_program(obj):
        return from_program(obj)
    if isinstance(obj, Recording):
        return from_recording(obj, names)
    if isinstance(obj, Scalar):
        return from_scalar(obj)
    if isinstance(obj, TrackedTensor):
        return from_tensor(obj, names)
    if is_torch_tensor(obj):
        from .pytorch.graph import from_torch_tensor  # (torch is loaded already: the user's code made obj)
        return from_torch_tensor(obj, names)
    if isinstance(obj, Graph):
        return obj
    raise CaptureError(f"gl.lab: cannot draw an object of type {type(obj).__name__}; give it {WHAT_WORKS}")


def from_program(obj) -> Graph:
    """A compiled step's program (``gl.compile.make_step``, after its first call) as a graph (program_graph.py)."""
    if is_program(obj):
        return program_to_graph(obj, {}, {})
    found = program_of(obj)
    if isinstance(found, str):
        raise CaptureError(f"gl.lab: {found}")
    program, modules = found
    model = obj.model
    names = {}
    if hasattr(model, "named_parameters"):
        names.update({id(t): name for name, t in model.named_parameters()})
        names.update({id(t): name for name, t in model.named_buffers()})
    return program_to_graph(program, names, modules)


def from_tape(tape, fused=None) -> Graph:
    """A ``gl.jit.Tape`` as a graph (tape_graph.py): ``fused`` lists groups of op indices drawn as
    super-nodes; None draws the chains ``gl.compile.fusion_groups(tape)`` says the compiler fuses."""
    return tape_to_graph(tape, fused, rule_of)


# --- the rule of an operation, from its Function ---------------------------------------------------

def rule_of(function) -> tuple[str, str]:
    """(words, math) of a Function's local derivative: its docstring's first line and ``derivative``."""
    doc = _own_doc(function)
    words = doc.split("\n\n")[0].replace("\n", " ") if doc else ""
    math = getattr(function, "derivative", "") or ""
    if not words:
        words = f"{function.__name__}: no rule written (give the Function a docstring)"
    if not math:
        math = "(no derivative given: set derivative = \"∂L/∂x = ...\" on the Function)"
    return words, math


def _own_doc(function) -> str:
    """The docstring of the op itself or of the op it specialises, never of the Function base class."""
    for cls in function.__mro__:
        if cls in (Function, ScalarFunction, object):
            break
        doc = cls.__dict__.get("__doc__")
        if doc:
            return inspect.cleandoc(doc)
    return ""


@functools.lru_cache(maxsize=None)
def _forward_arg_names(function) -> list:
    try:
        params = list(inspect.signature(function.forward).parameters)
    except (TypeError, ValueError):
        return []
    return params[1:]  # drop ctx


def _saved(node: Node, inputs: tuple = (), outputs: tuple = (), versions=((), ()), values=None):
    """What forward saved for backward, each named by the forward argument or output it is; from a
    recording (``versions`` of the inputs and outputs as the op ran), as saved; from a tensor, as they are now,
    marked where changed since saved. Either way marked if changed since. From a recording, a ``Later``: the
    values are copied now and summarised when the node's details are first read."""
    saved = node.inspect_saved()
    if saved is None:
        return [{"name": "freed", "freed": True}]
    names = _forward_arg_names(node.function) if node.function is not None else []
    n_outputs = len(node.output_shapes) or 1
    result = []
    for i, item in enumerate(saved):
        t, output = item.tensor, item.output
        if t is None:
            continue
        name = None
        shown, version = t, None  # the tensor to look at, and its version when forward saved it
        if output is not None:  # one of the node's own outputs (kept without its history: see SavedValue)
            name = "out" if n_outputs == 1 else f"out[{output}]"
            if output < len(versions[1]):
                shown, version = outputs[output], versions[1][output]
        elif values is not None:
            version = next((v for x, v in zip(inputs, versions[0]) if x is t), None)
        name = name or next((names[j] if j < len(names) else f"input {j}" for j, x in enumerate(inputs) if x is t), None)
        if name is None:
            name = next((("out" if len(outputs) == 1 else f"out[{j}]") for j, x in enumerate(outputs) if x is t), None)
        if name is None:
            leaf = next((child.variable for child, _ in node.next_functions
                         if child.__class__ is AccumulateGrad and child.variable is t), None)
            name = "input" if leaf is not None else f"saved[{i}]"
        if values is None:
            result.append({"name": name, **now_marked(summarize(t, histogram=False), t, item.version, "saved")})
        else:
            result.append((name, values.summary(shown, version, "saved", histogram=False)))
    return result if values is None else Later(lambda: [{"name": name, **resolved(summary)} for name, summary in result])


def _op_label(node: Node) -> str:
    """The short label of a box: the engine's name without PyTorch's "Backward0" ("AddBackward0" -> "Add")."""
    return short_name(node.name())


def _shape(shape) -> list | None:
    return list(shape) if shape is not None else None


def _tensor_facts(t) -> dict:
    return {"output_shape": list(t.shape), "dtype": str(t.dtype).replace("gradlab.", ""), "device": str(t.device)}


# --- (a) a tensor's autograd graph -------------------------------------------------------------------

def from_tensor(root, names: dict | None = None) -> Graph:
    """The backward graph reachable from ``root.grad_fn``: operations and the leaves they lead to."""
    if root.grad_fn is None:
        why = ("it does not require grad" if not root.requires_grad else "it is a leaf (made by you, not by an operation)")
        raise CaptureError(
            f"gl.lab: this tensor (shape {list(root.shape)}) has no graph to draw: {why}. Draw the result of "
            "operations on tensors with requires_grad=True, or record a forward pass: "
            "with gl.lab.record() as rec: loss = loss_fn(model(x), y); then gl.lab.GraphView(rec)")
    names = {id(t): name for t, name in name_pairs(names)}
    nodes = reachable(root.grad_fn)
    first_use = {}
    for node in nodes:
        for child, _ in node.next_functions:
            if child is not None and child.__class__ is AccumulateGrad:
                first_use[child] = min(first_use.get(child, node.sequence_nr), node.sequence_nr)
    order = sorted(nodes, key=lambda n: first_use.get(n, n.sequence_nr) - (0.5 if n in first_use else 0))
    graph = Graph(source="tensor")
    used, freed = _versions_used(nodes)
    for node in order:
        nid = graph.new_id()
        if node.__class__ is AccumulateGrad:
            leaf = node.variable
            name = names.get(id(leaf))
            graph.add(GraphNode(
                nid, "param" if name else "leaf", "AccumulateGrad", name or "leaf", **_tensor_facts(leaf),
                value=leaf_now(summarize(leaf), leaf, used.get(id(leaf), []), freed), grad=summarize(leaf.grad),
                words=LEAF_WORDS, math=LEAF_MATH, ref=leaf,
            ), node, leaf)
            continue
        words, math = rule_of(node.function)
        source, code = _anomaly_source(node)
        graph.add(GraphNode(
            nid, "op", node.name(), _op_label(node),
            input_shapes=[_shape(child.output_shapes[nr]) if child is not None else None
                          for child, nr in node.next_functions],
            output_shape=_shape(node.output_shapes[0]) if len(node.output_shapes) == 1 else
            [_shape(s) for s in node.output_shapes],
            saved=_saved(node), words=words, math=math, source=source, code=code, category=category(node.function),
            ref=node,
        ), node)
    for node in order:
        for child, _ in node.next_functions:
            if child is not None:
                graph.edges.append((graph.by_ref[id(child)], graph.by_ref[id(node)]))
    out = graph.nodes[graph.by_ref[id(root.grad_fn)]]
    out.value = summarize(root)
    out.dtype, out.device = _tensor_facts(root)["dtype"], str(root.device)
    graph.outputs.append(out.id)
    graph.freed = any(node.freed for node in order)
    return graph


def _versions_used(nodes) -> tuple[dict, bool]:
    """id(tensor) -> the versions it had when each operation saved it; and whether backward freed some of
    what was saved (and so the versions too)."""
    used, freed = {}, False
    for node in nodes:
        saved = node.inspect_saved()
        freed = freed or saved is None
        for item in saved or ():
            if item.tensor is not None:
                used.setdefault(id(item.tensor), []).append(item.version)
    return used, freed


def _anomaly_source(node) -> tuple[str, str]:
    """Where the user's code made this node, if detect_anomaly() kept the stack of its forward."""
    for frame in reversed(node.forward_trace or ()):
        if not frame.filename.startswith(PACKAGE_DIR):
            return f"{short_filename(frame.filename)}, line {frame.lineno}", (frame.line or "").strip()
    return "", ""


# --- (b) a recorded forward pass -----------------------------------------------------------------------

def from_recording(rec, names: dict | None = None) -> Graph:
    """Every operation ``record()`` saw, in order, grouped by the module call it ran in; ``names`` labels
    leaf tensors that no module owns (``{"W1": W1}``), as for a tensor's graph.

    An in-place write makes the tensor it wrote stand for the op that computed the new values (its
    old values stand for what made them), and each value is shown as the forward computed or used it.
    """
    if rec.active:
        raise CaptureError("gl.lab: the recording is still running; draw it after the `with gl.lab.record()` block ends")
    if rec.torch is not None and rec.torch.events:  # it watched PyTorch (torch is loaded: the user's code used it)
        from .pytorch.recorded import check_not_mixed, from_torch_recording
        check_not_mixed(rec)
        return from_torch_recording(rec, names)
    if not rec.ops:
        late = " (PyTorch is watched only if imported before the block starts)" if rec.torch is None and \
            "torch" in sys.modules else ""
        raise CaptureError("gl.lab: the recording is empty: no operation ran inside `with gl.lab.record() as rec:`. "
                           f"Run the forward pass (loss = loss_fn(model(x), y)) inside the block{late}")
    graph = Graph(source="recording")
    labels = {id(t): name for t, name in name_pairs(names)}
    for call in rec.calls.values():
        graph.groups[call.id] = Group(call.id, call.label, call.parent)
    producer: dict = {}  # id(tensor) -> id of the node that made the values it holds now
    values = ValuesAsUsed()
    for write in rec.writes:  # (all known first: a later write may have kept a copy of an earlier value)
        values.wrote(write)
    writes = iter(rec.writes)
    write = next(writes, None)

    def made(x, version, group=None) -> str:
        if id(x) not in producer:
            then = values.holder(x, version)  # (a copy an in-place write kept has x's grad_fn of then)
            then = then if then is not None else x
            producer[id(x)] = _leaf_node(graph, rec, x, then, values.summary(x, version, "used"), labels, group).id
        return producer[id(x)]

    for position, op in enumerate(rec.ops + [None]):
        while write is not None and write.position == position:  # target holds source's values from now on
            if isinstance(write.source, TrackedTensor):
                producer[id(write.target)] = made(write.source, write.source_version)
            write = next(writes, None)
        if op is None:
            break
        record, (in_versions, out_versions) = op.record, op.versions
        tensor_inputs = [(x, v) for x, v in zip(record.inputs, in_versions or (None,) * len(record.inputs))
                         if isinstance(x, TrackedTensor)]
        sources = [made(x, v, op.group) for x, v in tensor_inputs]
        nid = graph.new_id()
        node = record.node
        outputs = [(o, v) for o, v in zip(record.outputs, out_versions or (None,) * len(record.outputs))
                   if isinstance(o, TrackedTensor)]
        words, math = rule_of(record.function)
        saved = _saved(node, record.inputs, record.outputs, op.versions, values) if node is not None else []
        first, first_version = outputs[0] if outputs else (None, None)
        graph.add(GraphNode(
            nid, "op", node.name() if node is not None else record.function.node_names[0],
            record.function.__name__, group=op.group,
            input_shapes=[list(x.shape) for x, _ in tensor_inputs],
            **(_tensor_facts(first) if first is not None else {}),
            value=values.summary(first, first_version, "output") if first is not None else None, saved=saved,
            words=words, math=math, source=op.source, code=op.code, requires_grad=node is not None,
            category=category(record.function), ref=node,
        ), *((node,) if node is not None else ()))
        graph.calls[nid] = (record.function, record.inputs)
        graph.edges.extend((source, nid) for source in sources)
        for out, _ in outputs:
            producer[id(out)] = nid
    output = rec.output
    if output is not None and id(output) in producer:
        graph.outputs.append(producer[id(output)])
    graph.freed = any(op.record.node is not None and op.record.node.freed for op in rec.ops)
    return graph


CONSTANT_WORDS = ("data made inside this module's forward (a dropout mask, a constant): it needs no gradient, "
                  "so backward stops here")


def _leaf_node(graph: Graph, rec, x, then, value: dict, labels: dict, used_in=None) -> GraphNode:
    """A tensor the recorded forward used but did not make: a parameter, a leaf, or input data. ``then``
    is x as the forward used it (x, or the copy of it an in-place write kept: x's history has moved on).
    Data first used inside module ``used_in`` that no module call was given was made there (a dropout mask):
    a constant of that module."""
    named = rec.param_names.get(id(x))
    if named is None and id(x) in labels:  # a tensor you named: a parameter, or data when it needs no gradient
        kind, label, group = ("param" if then.requires_grad else "input"), labels[id(x)], None
    elif named is not None:
        kind, label, group = "param", named[0], named[1]
    elif then.requires_grad and then.grad_fn is None:
        kind, label, group = "leaf", "leaf", None
    elif then.requires_grad:
        kind, label, group = "leaf", "computed before recording", None
    elif not then.requires_grad and id(x) in rec.buffer_names:
        kind, (label, group) = "input", rec.buffer_names[id(x)]
    elif used_in is not None and not rec.passed_to_a_module(x):
        kind, label, group = "input", "constant", used_in
    else:
        kind, label, group = "input", "input", None
    refs = (x,) + ((then.grad_fn,) if then.grad_fn is not None else ())
    data_words = (CONSTANT_WORDS if label == "constant" and group is not None
                  else "data: it needs no gradient, so backward stops here")
    return graph.add(GraphNode(
        graph.new_id(), kind, "AccumulateGrad" if kind in ("param", "leaf") else "input", label, group=group,
        **_tensor_facts(x), value=value, grad=summarize(x.grad),
        words=LEAF_WORDS if then.requires_grad else data_words,
        math=LEAF_MATH if then.requires_grad else "no gradient", requires_grad=then.requires_grad, ref=x,
    ), *refs)


# --- (c) a Scalar expression ----------------------------------------------------------------------------

def from_scalar(out: Scalar) -> Graph:
    """One node per Scalar (micrograd's picture): leaves by label, operations by symbol."""
    graph = Graph(source="scalar")
    for s in out.topological_order():
        ctx = s.grad_fn
        if ctx is None:
            graph.add(GraphNode(graph.new_id(), "leaf", "leaf", s.label or f"{s.data:.4g}",
                                output_shape=[], dtype="float", value=summarize(s.data), grad=summarize(s.grad),
                                words=LEAF_WORDS, math="x.grad += g", ref=s), s)
            continue
        words, math = rule_of(ctx.function)
        names = _forward_arg_names(ctx.function)
        inputs = [x.data if isinstance(x, Scalar) else x for x in ctx.inputs]
        saved = [{"name": _scalar_saved_name(v, i, inputs, names, s.data), **summarize(v)}
                 for i, v in enumerate(ctx.saved_values)]
        graph.add(GraphNode(graph.new_id(), "op", ctx.function.__name__, s.op, output_shape=[], dtype="float",
                            input_shapes=[[] for _ in ctx.parents], value=summarize(s.data), grad=summarize(s.grad),
                            saved=saved, words=words, math=math, ref=s, local=_local(ctx.function, ctx.inputs, names),
                            category="arithmetic" if s.op in ("+", "-", "*", "/", "**", "neg") else "elementwise"), s)
        nid = graph.by_ref[id(s)]
        graph.calls[nid] = (ctx.function, ctx.inputs)
        if s.label:
            graph.nodes[nid].label = f"{s.op} {s.label}"
        for parent in ctx.parents:
            graph.edges.append((graph.by_ref[id(parent)], graph.by_ref[id(s)]))
    graph.outputs.append(graph.by_ref[id(out)])
    graph.freed = False
    return graph


def _local(function, inputs, names) -> list:
    """The op's local derivatives beside their probes; none when its backward cannot run yet (a learner's
    Function still returning ..., say): "check this node" then says what is wrong."""
    try:
        return local_derivatives(function, inputs, names)
    except (TypeError, ValueError, ArithmeticError):
        return []


def _scalar_saved_name(value, i, inputs, names, out) -> str:
    """A saved float is named by the input in its position when equal, else by another equal input,
    else 'out' when it is the output."""
    if i < len(inputs) and i < len(names) and inputs[i] == value:
        return names[i]
    for j, x in enumerate(inputs):
        if x == value and j < len(names):
            return names[j]
    return "out" if value == out else f"saved[{i}]"

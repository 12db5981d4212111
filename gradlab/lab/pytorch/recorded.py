"""A recorded PyTorch forward as the lab's ``Graph``: PyTorch's backward nodes, in modules, with lines.

Each recorded call made one or more backward nodes: the ``grad_fn`` of what it returned, and the
nodes a library function made inside itself (``F.cross_entropy`` is a log-softmax and an NLL loss).
Walking back from the returned ``grad_fn`` until the nodes its inputs already had finds them all,
so the graph holds every node ``loss.backward()`` will run, each in the module call that made it.
Edges are PyTorch's own (``next_functions``), plus the data each call was given.
"""

from __future__ import annotations

import linecache

from ..capture_basics import CaptureError, LEAF_MATH, LEAF_WORDS, name_pairs
from ..graph import Graph, GraphNode, Group
from ..record import short_filename
from ..summary import summarize, summarize_later
from .graph import _saved_attributes, is_accumulator, is_freed, leaf_names, op_node, tensor_facts

CONSTANT_WORDS = ("data made inside this module's forward (a mask, a constant): it needs no gradient, "
                  "so backward stops here")
DATA_WORDS = "data: it needs no gradient, so backward stops here"
BEFORE_WORDS = ("computed before the recording started: its history is drawn no further (record the code that "
                "made it too, to see it)")
UNSEEN_WORDS = ("made by a call the recording does not see, such as a custom autograd.Function's apply: "
                "its line of code is not known")
CHANGED = ("changed in place after the forward {what} it (version {then} → {now}), and no copy was kept: these "
           "are its values now")


def from_torch_recording(rec, names=None) -> Graph:
    """Every backward node the recorded torch calls made, in order, grouped by module call."""
    calls = rec.torch
    graph = Graph(source="torch")
    labels = {id(t): name for t, name in name_pairs(leaf_names(names))}
    for call in rec.calls.values():
        graph.groups[call.id] = Group(call.id, call.label, call.parent)
    group_ids = list(rec.calls)
    made_by = []  # per call: (the graph ids of the nodes it made, the id of its first output's node, or None)
    for event in calls.events:
        group = group_ids[event.call] if event.call >= 0 else None
        new, unseen = _nodes_made(graph, event, calls.first)
        source = _source(event.where)
        ids = []
        for node in unseen + new:
            _add_inputs_of(graph, rec, node, event, group, labels)
            box = op_node(graph.new_id(), node, group)
            if node in new:
                box.source, box.code = source
                if len(new) == 1 and len(node.next_functions) == len(event.inputs):  # inputs needing no gradient
                    box.input_shapes = [list(t.shape) for t in event.inputs]  # have no next_function to say theirs
            else:
                box.words = f"{box.words} ({UNSEEN_WORDS})"
            graph.add(box, node)
            if node in new:
                ids.append(box.id)
            for child, _ in node.next_functions:
                if child is not None:
                    graph.edges.append((graph.by_ref[id(child)], box.id))
        for out, (fn, version) in [*zip(event.outputs, event.made), *zip(event.inputs, event.before)]:
            box = graph.node_for(fn) if fn is not None else None
            if box is not None and box.value is None:  # (an input: what an unseen call made, as this call used it)
                box.value = _value(calls, out, version, "computed")
        if ids:
            _add_data(graph, rec, event, new, group, labels)
        call = (event.function, event.args, event.kwargs)  # run again by "check this node" (one object per call:
        for box_id in ids:                                  # the nodes it made together are checked together)
            graph.calls[box_id] = call
        returned = next((graph.by_ref[id(fn)] for fn, _ in event.made if fn is not None and id(fn) in graph.by_ref
                         and graph.by_ref[id(fn)] in ids), None)
        made_by.append((ids, returned))
    output = calls.output
    if output is not None and graph.node_for(output.grad_fn) is not None:
        graph.outputs.append(graph.by_ref[id(output.grad_fn)])
    graph.freed = any(is_freed(n.ref) for n in graph.nodes.values() if n.kind == "op")
    graph.made_by = made_by  # (read by the profile: which boxes each call made)
    return graph


def _nodes_made(graph, event, first: int) -> tuple[list, list]:
    """The backward nodes this call made, oldest first, and those the recording made without seeing the call
    that made them (a custom Function's ``apply`` is no torch function): walking back from each output's
    grad_fn through the nodes not drawn yet that were made since the recording began (``first``)."""
    found, stack = {}, [fn for fn, _ in event.made if fn is not None]
    while stack:
        node = stack.pop()
        if id(node) in found or is_accumulator(node) or graph.node_for(node) is not None or node._sequence_nr() < first:
            continue
        found[id(node)] = node
        stack.extend(child for child, _ in node.next_functions if child is not None)
    nodes = sorted(found.values(), key=lambda n: n._sequence_nr())
    return [n for n in nodes if n._sequence_nr() >= event.first], [n for n in nodes if n._sequence_nr() < event.first]


def _add_inputs_of(graph, rec, node, event, group, labels) -> None:
    """The boxes ``node``'s inputs come from that are not drawn yet: a leaf (its AccumulateGrad), or a
    node made before the recording started."""
    for child, _ in node.next_functions:
        if child is None or graph.node_for(child) is not None:
            continue
        if is_accumulator(child):
            leaf = child.variable
            version = next((v for t, (_, v) in zip(event.inputs, event.before) if t is leaf), None)
            _leaf(graph, rec, leaf, version, labels, child)
            continue
        tensor = next((t for t, (fn, _) in zip(event.inputs, event.before) if fn is child), None)
        graph.add(GraphNode(
            graph.new_id(), "leaf", child.name(), "computed before recording",
            **(tensor_facts(tensor) if tensor is not None else {}),
            value=summarize(tensor) if tensor is not None else None, words=BEFORE_WORDS, math="", ref=child,
        ), child, *((tensor,) if tensor is not None else ()))


def _leaf(graph, rec, leaf, version, labels, accumulator) -> GraphNode:
    named = rec.param_names.get(id(leaf))
    if named is not None:
        kind, label, group = "param", named[0], named[1]
    elif id(leaf) in labels:
        kind, label, group = "param", labels[id(leaf)], None
    else:
        kind, label, group = "leaf", "leaf", None
    return graph.add(GraphNode(
        graph.new_id(), kind, "AccumulateGrad", label, group=group, **tensor_facts(leaf),
        value=_value(rec.torch, leaf, version, "used"), grad=summarize(leaf.grad), words=LEAF_WORDS, math=LEAF_MATH,
        ref=leaf,
    ), accumulator, leaf)


def _add_data(graph, rec, event, new, group, labels) -> None:
    """The tensors without gradient this call was given (data, targets, buffers, masks), each a box drawn
    once, with an edge into the node that took it: the only node the call made; of several, the one that
    saved it for backward (NllLoss keeps cross-entropy's targets), else the call's last."""
    for t, (fn, version) in zip(event.inputs, event.before):
        if fn is not None or t.requires_grad:
            continue
        box = graph.node_for(t)
        if box is None:
            box = _data(graph, rec, t, version, group, labels)
        taker = graph.by_ref[id(_taker(new, t))]
        if (box.id, taker) not in graph.edges:
            graph.edges.append((box.id, taker))


def _taker(new, t):
    if len(new) > 1:
        for node in new:
            try:
                if any(value is t for _, value in _saved_attributes(node)):
                    return node
            except RuntimeError:  # backward freed what it saved: the call's last node, then
                break
    return new[-1]


def _data(graph, rec, t, version, used_in, labels) -> GraphNode:
    buffer = rec.buffer_names.get(id(t))
    if id(t) in labels:
        label, group, words = labels[id(t)], None, DATA_WORDS
    elif buffer is not None:
        (label, group), words = buffer, DATA_WORDS
    elif used_in is not None and not rec.torch.passed_to_a_module(t):
        label, group, words = "constant", used_in, CONSTANT_WORDS
    else:
        label, group, words = "input", None, DATA_WORDS
    return graph.add(GraphNode(
        graph.new_id(), "input", "input", label, group=group, **tensor_facts(t),
        value=_value(rec.torch, t, version, "used"), words=words, math="no gradient", requires_grad=False, ref=t,
    ), t)


def _value(calls, t, version, what: str):
    """The summary of what ``t`` held at ``version`` (a copy of it kept by the recording, where an in-place
    write has changed it since), said so where neither holds it any more."""
    held = calls.holder(t, version)
    if held is None:
        return {**summarize(t), "changed": CHANGED.format(what=what, then=version, now=t._version)}
    return summarize_later(held.detach(), changed=lambda then, now: CHANGED.format(what=what, then=then, now=now))


def _source(where) -> tuple:
    filename, line = where
    if not filename:
        return "", ""
    return f"{short_filename(filename)}, line {line}", linecache.getline(filename, line).strip()


def check_not_mixed(rec) -> None:
    """A recording that saw both engines: the two graphs never connect (a gradlab tensor is not a torch
    one), and drawing one as if it were the whole forward would hide the other, so say so."""
    if rec.torch is not None and rec.torch.events and rec._ops:
        raise CaptureError(
            f"gl.lab: this recording saw {len(rec._ops)} gradlab operations and {len(rec.torch.events)} PyTorch "
            "calls; the two engines' graphs do not connect, so no one graph of them is true. Record each engine's "
            "forward in its own `with gl.lab.record() as rec:` block and draw each recording")

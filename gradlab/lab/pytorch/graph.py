"""PyTorch's backward graph as the lab's ``Graph``: the nodes ``loss.backward()`` will run.

PyTorch keeps the graph on the tensors: ``t.grad_fn`` is a node (``AddmmBackward0``), its
``next_functions`` lead to the nodes of its inputs, and each leaf that requires grad ends in an
``AccumulateGrad`` node that adds into its ``.grad``. What a node saved for backward sits on it as
``_saved_<name>`` attributes. This walks all of that into the same model gradlab's graphs use.
"""

from __future__ import annotations

import torch

from ..capture_basics import CaptureError, name_pairs, reachable, short_name
from ..graph import Graph, GraphNode
from ..summary import Later, summarize, summarize_later
from .rules import rule_of_node

FREED = "Trying to backward through the graph a second time"  # PyTorch's words when saved values are gone
IN_PLACE = "modified by an inplace operation"  # ... and when one changed in place since it was saved
CHANGED = object()  # what _saved_attributes gives for a saved tensor PyTorch refuses to unpack: it changed since
CHANGED_WORDS = ("changed in place since forward saved it: PyTorch will not give it back, and backward will raise "
                 "an error (a variable needed for gradient computation has been modified by an inplace operation)")


def from_torch_tensor(root, names=None) -> Graph:
    """The backward graph reachable from ``root.grad_fn``; ``names`` (a module, ``{name: tensor}`` or
    ``{tensor: name}``) labels the leaves, which are otherwise "leaf"."""
    if root.grad_fn is None:
        why = ("it does not require grad" if not root.requires_grad else "it is a leaf (made by you, not by an operation)")
        raise CaptureError(
            f"gl.lab: this torch tensor (shape {list(root.shape)}) has no graph to draw: {why}. Draw the result of "
            "operations on tensors with requires_grad=True (usually the loss), or record the forward pass: "
            "with gl.lab.record() as rec: loss = loss_fn(model(x), y); then gl.lab.GraphView(rec)")
    labels = {id(t): name for t, name in name_pairs(leaf_names(names))}
    nodes = reachable(root.grad_fn)
    graph = Graph(source="torch")
    for node in _forward_order(nodes):
        if is_accumulator(node):
            leaf = node.variable
            name = labels.get(id(leaf))
            _, words, math = rule_of_node(node)
            graph.add(GraphNode(
                graph.new_id(), "param" if name else "leaf", "AccumulateGrad", name or "leaf", **tensor_facts(leaf),
                value=value_now(leaf), grad=summarize(leaf.grad), words=words, math=math, ref=leaf,
            ), node, leaf)
            continue
        graph.add(op_node(graph.new_id(), node), node)
    for node in nodes:
        for child, _ in node.next_functions:
            if child is not None:
                graph.edges.append((graph.by_ref[id(child)], graph.by_ref[id(node)]))
    out = graph.nodes[graph.by_ref[id(root.grad_fn)]]
    out.value = summarize(root)
    graph.outputs.append(out.id)
    graph.freed = any(is_freed(node) for node in nodes if not is_accumulator(node))
    return graph


def value_now(t):
    """A leaf's value as it is when drawn; a big one is summarised when first looked at (a GPT-2 holds 124
    million parameter values), and says so if it changed in place by then."""
    return summarize_later(t.detach(), changed=lambda then, now: f"changed in place since drawn (version {then} → "
                           f"{now}): these are its values now")


def op_node(node_id: str, node, group=None) -> GraphNode:
    """The box of one PyTorch backward node: its name, shapes, what it saved and its rule."""
    family, words, math = rule_of_node(node)
    metadata = node._input_metadata  # one entry per output of the forward op: the gradients it will receive
    outputs = [list(m.shape) for m in metadata]
    return GraphNode(
        node_id, "op", node.name(), short_name(node.name()), group=group,
        input_shapes=[_output_shape(child, nr) for child, nr in node.next_functions],
        output_shape=outputs[0] if len(outputs) == 1 else outputs,
        dtype=dtype_name(metadata[0].dtype) if metadata else "", device=str(metadata[0].device) if metadata else "",
        saved=Later(lambda: saved_of(node)), words=words, math=math, category=family, ref=node,
    )


def _output_shape(child, nr) -> list | None:
    if child is None:
        return None
    if is_accumulator(child):
        return list(child.variable.shape)
    return list(child._input_metadata[nr].shape)


def saved_of(node) -> list:
    """What the node saved for backward: tensors summarised, other attributes (sizes, alpha, dims) as text;
    [{"name": "freed", "freed": True}] once backward released them."""
    result = []
    try:
        for name, value in _saved_attributes(node):
            if value is CHANGED:
                result.append({"name": name, "text": "(changed)", "changed": CHANGED_WORDS})
            elif isinstance(value, torch.Tensor):
                result.append({"name": name, **summarize(value, histogram=False)})
            elif isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
                result.extend({"name": f"{name}[{i}]", **summarize(v, histogram=False)} for i, v in enumerate(value))
            else:
                result.append({"name": name, "text": _text(value)})
    except RuntimeError as error:
        if FREED not in str(error):
            raise
        return [{"name": "freed", "freed": True}]
    return result


def is_freed(node) -> bool:
    """Whether backward released what ``node`` saved (reading its saved attributes tells, without summarising
    them; a freed tensor raises, a saved number such as alpha stays readable)."""
    try:
        for _ in _saved_attributes(node):
            pass
    except RuntimeError as error:
        if FREED not in str(error):
            raise
        return True
    return False


def _saved_attributes(node):
    """(name, value) of each ``_saved_*`` attribute; a custom Function's are its ``saved_tensors``. A saved
    tensor changed in place since is ``CHANGED`` (PyTorch raises rather than give it back)."""
    if getattr(node, "_forward_cls", None) is not None:
        names = {"saved_tensors": "saved_tensors"}
    else:
        names = {attribute: attribute[len("_saved_"):] for attribute in dir(node) if attribute.startswith("_saved_")}
    for attribute, name in names.items():
        try:
            value = getattr(node, attribute)
        except RuntimeError as error:
            if IN_PLACE not in str(error):
                raise
            value = CHANGED
        yield name, value


def _text(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def is_accumulator(node) -> bool:
    return type(node).__name__ == "AccumulateGrad"


def _forward_order(nodes) -> list:
    """The nodes in the order forward made them (PyTorch's sequence numbers), each leaf just before its
    first use: the picture reads as the code ran."""
    first_use = {}
    for node in nodes:
        if not is_accumulator(node):
            for child, _ in node.next_functions:
                if child is not None and is_accumulator(child):
                    first_use[child] = min(first_use.get(child, node._sequence_nr()), node._sequence_nr())
    return sorted(nodes, key=lambda n: first_use[n] - 0.5 if n in first_use else n._sequence_nr())


def leaf_names(names):
    """A module stands for its parameters' names; anything else is passed on as given."""
    if isinstance(names, torch.nn.Module):
        return dict(names.named_parameters())
    return names


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def tensor_facts(t) -> dict:
    return {"output_shape": list(t.shape), "dtype": dtype_name(t.dtype), "device": str(t.device)}

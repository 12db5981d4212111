"""The lab's graph model: plain nodes, edges and module groups, ready to turn into JSON.

Capture (``capture.py``) builds a ``Graph`` from a tensor's autograd graph, a recorded forward
pass or a ``Scalar`` expression; layout, pictures and widgets read only this model. Each node
also keeps a reference to the engine object it stands for (``ref``), so the stepper can find it
again; that reference is never serialised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .summary import Later, LaterSummary, LaterTensorSummary

# What a node is, for drawing and colouring:
#   "op"     an operation (a Function's node, or a Scalar made by an operation)
#   "param"  a leaf that requires grad, named by its module path ("fc1.weight")
#   "leaf"   a leaf that requires grad with no module to name it
#   "input"  a tensor given to the computation that needs no gradient (data, targets)
#   (the graph's outputs are not a kind of their own: Graph.outputs lists them)


@dataclass
class GraphNode:
    """One box of the picture, with everything the inspector shows about it."""

    id: str
    kind: str
    op: str  # the engine's name: "MulBackward0", "AccumulateGrad", or the Scalar op ("*", "tanh")
    label: str  # the short text drawn in the box
    group: str | None = None  # the module group it ran in ("encoder.layers.0.attn"), None at top level
    input_shapes: list = field(default_factory=list)
    output_shape: list | None = None
    dtype: str = ""
    device: str = ""
    source: str = ""  # "file.py:12" where the user's code created it, when known
    code: str = ""  # the text of that line
    value: dict | None = None  # summary of the output value (summary.summarize), when known
    grad: dict | None = None  # summary of the gradient w.r.t. the output, once backward reached it
    saved: list = field(default_factory=list)  # [{"name": ..., **summary}] of what forward saved
    words: str = ""  # the local derivative rule in words
    math: str = ""  # ... and in plain math
    local: list = field(default_factory=list)  # a Scalar op's ∂out/∂input beside a finite difference (local_derivative.py)
    requires_grad: bool = True
    category: str = ""  # the family of an op (arithmetic, matmul, reduction, ...), for colouring by kind
    profile: dict | None = None  # forward/backward seconds and saved bytes, when profiled (lab/profiling.py)
    ref: Any = None  # the engine object (Node, leaf tensor or Scalar); not serialised

    def norm(self, what: str):
        """The norm of the node's "value" or "grad" (what colours read), without summarising the rest of a
        value that is still to be worked out."""
        held = self.__dict__.get("_value") if what == "value" else getattr(self, what)
        return held.norm if isinstance(held, (LaterSummary, LaterTensorSummary)) else (held or {}).get("norm")

    def to_json(self) -> dict:
        return {
            "id": self.id, "kind": self.kind, "op": self.op, "label": self.label, "group": self.group,
            "input_shapes": self.input_shapes, "output_shape": self.output_shape, "dtype": self.dtype,
            "device": self.device, "source": self.source, "code": self.code, "value": self.value, "grad": self.grad,
            "saved": self.saved, "words": self.words, "math": self.math, "requires_grad": self.requires_grad, "category": self.category,
            "profile": self.profile, "local": self.local,
        }


def _worked_out_when_read(name: str) -> property:
    """A field that may hold a ``Later`` (summary.py): reading it makes what the Later stands for, once."""
    slot = "_" + name

    def read(node):
        held = node.__dict__[slot]
        if isinstance(held, Later):
            held = node.__dict__[slot] = held.make()
        return held

    def write(node, value):
        node.__dict__[slot] = value

    return property(read, write)


GraphNode.value = _worked_out_when_read("value")  # (after @dataclass: its __init__ sets them through these)
GraphNode.saved = _worked_out_when_read("saved")


@dataclass
class Group:
    """A module the forward ran through: a box that opens to show the operations inside it."""

    id: str  # the module path, with "#2" for a module's second call
    label: str  # "layers.0 (Linear)"
    parent: str | None
    closed: bool = False  # drawn closed at first whatever its size (a tape's fused chain: a super-node)

    def to_json(self) -> dict:
        return {"id": self.id, "label": self.label, "parent": self.parent}


@dataclass
class Graph:
    """Nodes in forward order, data-flow edges (input → consumer), groups, and the outputs."""

    nodes: dict = field(default_factory=dict)  # id -> GraphNode, in the order forward created them
    edges: list = field(default_factory=list)  # [(source id, target id)]
    groups: dict = field(default_factory=dict)  # id -> Group
    outputs: list = field(default_factory=list)  # ids of the nodes whose values the user holds
    source: str = "tensor"  # "tensor", "recording", "scalar" or "tape": where the graph came from
    freed: bool = False  # backward already released what forward saved (retain_graph was not set)
    by_ref: dict = field(default_factory=dict)  # id(engine object) -> node id
    calls: dict = field(default_factory=dict)  # node id -> (Function, inputs) as forward ran, for "check this node"
    modes: tuple = ("grad", "value", "kind")  # the colour modes it can offer (a tape has no values: only "kind")
    note: str = ""  # something the picture cannot show, in words (shown under it)

    def add(self, node: GraphNode, *refs) -> GraphNode:
        self.nodes[node.id] = node
        for ref in refs:
            self.by_ref[id(ref)] = node.id
        return node

    def node_for(self, ref) -> GraphNode | None:
        """The graph node of an engine object (a Node, a leaf tensor or a Scalar), if it is drawn."""
        node_id = self.by_ref.get(id(ref))
        return self.nodes.get(node_id) if node_id is not None else None

    def new_id(self) -> str:
        return f"n{len(self.nodes)}"

    def to_json(self) -> dict:
        return {
            "source": self.source,
            "freed": self.freed,
            "nodes": [node.to_json() for node in self.nodes.values()],
            "edges": [list(edge) for edge in self.edges],
            "groups": [group.to_json() for group in self.groups.values()],
            "outputs": list(self.outputs),
        }

    def find(self, text: str) -> list:
        """Ids of the nodes whose label, op or module path contains ``text`` (case-insensitive)."""
        text = text.lower()
        return [n.id for n in self.nodes.values()
                if text in n.label.lower() or text in n.op.lower() or text in (n.group or "").lower()]

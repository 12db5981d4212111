""""Check this node": does an operation's backward agree with finite differences?

For one recorded operation we rerun its Function on float64 copies of the inputs it really got,
pick a random output direction ``v`` and a random input direction ``u``, and compare the
backward's answer ``⟨vᵀJ, u⟩`` with the slope ``⟨v, f(x + h·u) − f(x − h·u)⟩ / 2h``. A wrong
backward fails this for almost every choice of ``v`` and ``u``.

Two things make a right backward look wrong, and the check says which it met. At a *kink* (ReLU
at 0, abs at 0, a max with ties) the function has no derivative: the slopes from the left and from
the right differ, the central difference averages them, and any value between them is a fair
choice for the engine (CS231n's warning about kinks). A forward that draws random numbers
(dropout) computes a different function on every run: the check replays each run from the random
state saved before the first one, so every run draws the same numbers.
"""

from __future__ import annotations

import numpy as np

from .arguments import described, graph_of, node_id_in
from .capture import CaptureError
from .finite_differences import TOLERANCE, RandomStates, ScalarProbe, TensorProbe, result, verdict
from .pytorch import is_torch


def check_node(graph, node_id: str | None = None, seed: int = 0) -> dict:
    """Compare one node's vector-Jacobian product with central finite differences: ``check_node(view, "n3")``
    (``graph``: a GraphView, a stepper or a captured Graph; the node: its id or its GraphNode).

    Returns {"ok", "inputs": [{"name", "analytic", "numeric", "error"}], "tolerance", "message"},
    and "kinks" (the elements found on a kink: input, index, value, left, right, engine) when
    there are any, "random": True when the forward draws random numbers.
    """
    graph = graph_of("check_node", graph)
    node = graph.nodes[node_id_in("check_node", graph, node_id, "check_node(view, 'n3') or view.check('n3')")]
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"check_node: seed= takes a whole number (the random directions' seed); got {described(seed)}")
    if node.kind != "op":
        what = {"param": "a parameter", "leaf": "a leaf tensor", "input": "data (an input)"}.get(node.kind, node.kind)
        return result(True, [], f"{node.label} is {what}: it has no backward of its own to check")
    call = graph.calls.get(node.id)
    if is_torch(node.ref) or graph.source == "torch":
        from .pytorch.node_check import check_torch_node  # (torch is loaded: the graph holds its nodes)
        together = tuple(graph.nodes[i].label for i, c in graph.calls.items() if c is call and i != node.id) \
            if call is not None else ()
        return check_torch_node(node, call, seed, recorded=bool(graph.calls), together=together)
    if call is None and graph.source == "program":
        raise CaptureError("check_node: a compiled program keeps no tensor values, so there are no inputs to check "
                           "this call on. Record the forward to check its nodes: with gl.lab.record() as rec: "
                           "loss = loss_fn(model(x), y); gl.lab.GraphView(rec)")
    if call is None and graph.source == "tape":
        raise CaptureError("check_node: a tape keeps no tensor values, so there are no inputs to check this op on. "
                           "Record the forward to check its nodes: with gl.lab.record() as rec: out = model(x); "
                           "gl.lab.GraphView(rec)")
    if call is None:
        raise CaptureError(
            "check_node: this graph was drawn from a tensor, which does not keep the inputs each operation got. "
            "Record the forward to check its nodes: with gl.lab.record() as rec: loss = ...; gl.lab.GraphView(rec)")
    function, inputs = call
    rng = np.random.default_rng(seed)
    states = RandomStates()
    try:
        probe = ScalarProbe(function, inputs) if graph.source == "scalar" else TensorProbe(function, inputs, states)
        if probe.unrepeatable:
            return {"ok": None, "inputs": [], "tolerance": TOLERANCE, "random": True,
                    "message": f"{node.label}: its forward gives different outputs on the same inputs, even with "
                               "gradlab's, numpy's and Python's random state replayed (it draws from a generator of "
                               "its own, or reads something that changes), so finite differences cannot check it. "
                               "Pass it a seeded generator, or check it with the randomness off"}
        return verdict(node.label, probe, probe.rows(rng))
    finally:
        states.restore()  # a check draws nothing from your random stream

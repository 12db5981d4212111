"""Backward, one node at a time, with a way back: the logic behind ``BackpropStepper``.

``Stepping`` drives the engine's own generator (``gl.autograd.backward_steps``, or
``Scalar.backward_steps``) and turns each step into what the lab shows: which node ran, the
gradient that reached it, what it passed to each input and where that adds up. Going back
restores every gradient as it was before the run and drives a fresh generator forward again:
the engine is deterministic, so the gradients are restored exactly.
"""

from __future__ import annotations

from ..autograd import backward_steps
from ..autograd.function import AccumulateGrad, TrackedTensor
from ..scalar import Scalar
from .capture import CaptureError, capture, reachable
from .graph import Graph
from .record import Recording
from .summary import summarize


class Stepping:
    """The state of one backward pass being walked: steps taken so far, and the graph they walk."""

    def __init__(self, target, graph: Graph | None = None):
        if isinstance(target, Recording):
            graph = graph or capture(target)
            target = target.output
            if target is None:
                raise CaptureError("BackpropStepper: the recording produced no tensor to start backward from")
        if isinstance(target, TrackedTensor):
            if target.grad_fn is None:
                raise CaptureError(
                    "BackpropStepper: this tensor has no graph: it is a leaf or does not require grad. Give it the "
                    "output of a computation on tensors with requires_grad=True (usually the loss)")
            if target.numel() != 1:
                raise CaptureError(
                    f"BackpropStepper: backward starts from one number, but this tensor has shape {list(target.shape)}; "
                    "step from a scalar such as the loss, or from out.sum()")
        elif not isinstance(target, Scalar):
            raise CaptureError(f"BackpropStepper: cannot step a {type(target).__name__}; give it a loss tensor, a "
                               "recording (with gl.lab.record() as rec: ...) or a gradlab.Scalar")
        self.target = target
        self.graph = graph or capture(target)
        self.is_scalar = isinstance(target, Scalar)
        if not self.is_scalar:
            freed = self.graph.freed or any(n.freed for n in reachable(target.grad_fn))
            if freed:
                raise CaptureError(
                    "BackpropStepper: backward already ran through this graph and freed what forward saved. Run the "
                    "forward again, or call loss.backward(retain_graph=True) if you want to step after a backward")
        self.leaves = self._leaves()
        self._initial = [(leaf, _copy_grad(leaf.grad)) for leaf in self.leaves]
        self._initial_summaries = {n.id: n.grad for n in self.graph.nodes.values()}
        self.total = len(reachable(target.grad_fn)) if not self.is_scalar else len(target.topological_order())
        self.steps: list[dict] = []
        self.finished = False
        self._generator = None
        self._arrived: dict = {}
        self._consumers = self._count_consumers()

    # --- what the stepper does --------------------------------------------------------------------

    def step(self) -> dict | None:
        """Run the next node; returns its step, or None when backward has finished."""
        if self.finished:
            return None
        if self._generator is None:
            self._generator = self._start()
        raw = next(self._generator, None)
        if raw is None:
            self.finished = True
            self._generator = None
            return None
        step = self._describe(raw, len(self.steps))
        self.steps.append(step)
        return step

    def reset(self) -> None:
        """Back to before the first step: every gradient as it was when the stepper was made."""
        if self._generator is not None:
            self._generator.close()
        self._generator = None
        for leaf, grad in self._initial:
            leaf.grad = _copy_grad(grad)
        for node_id, summary in self._initial_summaries.items():
            self.graph.nodes[node_id].grad = summary
        self.steps = []
        self._arrived = {}
        self.finished = False

    def step_back(self) -> bool:
        """Undo the last step (gradients restored exactly); False if there is nothing to undo."""
        if not self.steps and not self.finished:
            return False
        self.go_to(len(self.steps) - (0 if self.finished else 1))
        return True

    def go_to(self, count: int) -> None:
        """Be just after step ``count``: reset, then drive a fresh generator that many steps."""
        self.reset()
        for _ in range(count):
            if self.step() is None:
                break

    @property
    def current(self) -> str | None:
        """The graph node id of the step just taken (None before the first and after the end)."""
        return self.steps[-1]["node"] if self.steps and not self.finished else None

    # --- plumbing -------------------------------------------------------------------------------

    def _start(self):
        if self.is_scalar:
            return self.target.backward_steps()
        return backward_steps(self.target, retain_graph=True)

    def _leaves(self) -> list:
        if self.is_scalar:
            return self.target.topological_order()  # a Scalar keeps a gradient on every node
        return [n.variable for n in reachable(self.target.grad_fn) if n.__class__ is AccumulateGrad]

    def _count_consumers(self) -> dict:
        """How many uses each node's output has: that many gradients arrive at it and are summed."""
        reached = self.reached_ids()
        counts: dict = {}
        for source, target in self.graph.edges:
            if target in reached:  # a consumer that backward never runs (argmax, no_grad) sends nothing back
                counts[source] = counts.get(source, 0) + 1
        return counts

    def reached_ids(self) -> set:
        """The drawn nodes backward will visit; the rest (data, no-grad operations) are never reached."""
        if self.is_scalar:
            return set(self.graph.nodes)
        return {self.node_id(n) for n in reachable(self.target.grad_fn)} - {None}

    def node_id(self, ref) -> str | None:
        node = self.graph.node_for(ref)
        if node is None and ref.__class__ is AccumulateGrad:
            node = self.graph.node_for(ref.variable)
        return node.id if node is not None else None

    def _describe(self, raw, index: int) -> dict:
        """A step as the panel shows it: the gradient in, and what went to each input."""
        if self.is_scalar:
            node_id = self.node_id(raw.node)
            grads_in = [summarize(raw.grads_in[0])]
            sent = [(self.node_id(parent), g) for parent, g in zip(raw.node.parents, raw.grads_out)]
            leaf = raw.leaf
        else:
            node_id = self.node_id(raw.node)
            grads_in = [summarize(g) for g in raw.grads_in]
            sent = [(self.node_id(child) if child is not None else None, g)
                    for (child, _), g in zip(raw.node.next_functions, raw.grads_out)]
            leaf = raw.leaf
        arrived = self._arrived  # node id -> gradients it has received so far in this run
        sent_rows = []
        for to, g in sent:
            if to is None and g is None:
                continue
            n = arrived.get(to, 0) + 1
            arrived[to] = n
            sent_rows.append({"to": to, "grad": summarize(g), "contribution": n, "of": self._consumers.get(to, 1)})
        node = self.graph.nodes.get(node_id)
        accumulated = None
        if leaf is not None:
            accumulated = {"name": node.label if node is not None else "leaf", "grad": summarize(leaf.grad)}
        if node is not None:  # what the picture shows from now on: the gradient w.r.t. this node's output
            node.grad = summarize(raw.node.grad) if self.is_scalar else (
                accumulated["grad"] if accumulated else grads_in[0])
        return {"index": index, "node": node_id, "grads_in": grads_in, "sent": sent_rows, "leaf": accumulated}


def _copy_grad(grad):
    if grad is None or isinstance(grad, float):
        return grad
    return grad.detach().clone()

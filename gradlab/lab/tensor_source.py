"""Steps of gradlab's own engine: ``gl.autograd.backward_steps`` on a loss tensor.

The run is the engine's generator itself (with its checkpoints), so a step is what
``loss.backward()`` does at that node. The engine runs, among the ready nodes, the newest one.
"""

from __future__ import annotations

from ..autograd import backward_steps
from ..autograd.function import AccumulateGrad
from .capture import CaptureError, reachable
from .step_source import BackwardSource, check_loss


class TensorSource(BackwardSource):
    """A gradlab loss tensor's backward: the engine's own generator, its checkpoints, its ledgers."""

    def __init__(self, loss, graph=None):
        check_loss(loss, loss.grad_fn, loss.numel())
        super().__init__(loss, graph)
        self._nodes = reachable(loss.grad_fn)
        if self.graph.freed or any(n.freed for n in self._nodes):
            raise CaptureError(
                "BackpropStepper: backward already ran through this graph and freed what forward saved. Run the "
                "forward again, or call loss.backward(retain_graph=True) if you want to step after a backward")

    def start(self):
        return backward_steps(self.target, retain_graph=True)

    def reachable(self) -> list:
        return self._nodes

    def accumulators(self) -> list:
        return [n for n in self._nodes if n.__class__ is AccumulateGrad]

    def node_id(self, ref) -> str | None:
        node = self.graph.node_for(ref)
        if node is None and ref.__class__ is AccumulateGrad:
            node = self.graph.node_for(ref.variable)
        return node.id if node is not None else None

    def in_turn(self, ran: list):
        """The engine runs the newest node whose consumers have all run."""
        return newest_ready(self._nodes, ran, lambda n: n.sequence_nr)


def newest_ready(nodes: list, ran: list, sequence_nr):
    """Among the nodes not in ``ran`` whose consumers have all run, the one with the highest sequence number."""
    done = set(ran)
    left = [n for n in nodes if n not in done]
    waiting: dict = {}
    for node in left:
        for child, _ in node.next_functions:
            if child is not None:
                waiting[child] = waiting.get(child, 0) + 1
    ready = [n for n in left if not waiting.get(n)]
    return max(ready, key=sequence_nr, default=None)

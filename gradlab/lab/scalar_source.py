"""Steps of the Scalar twin: ``Scalar.backward_steps``, one node per step in reverse topological order.

Every Scalar keeps a gradient (not only the inputs), and a float cannot be taken apart into who
added what, so instead of ledgers this source remembers every node's ``.grad`` before the first
step and after the last one, and puts them back from there.
"""

from __future__ import annotations

from .step_source import BackwardSource


class ScalarSource(BackwardSource):
    """A Scalar's backward: ``backward_steps()``, with every node's .grad kept before and after."""

    checkpoints = False  # a Scalar run is a plain generator: a step back replays from the start (they are cheap)

    def __init__(self, loss, graph=None):
        super().__init__(loss, graph)
        self._order = loss.topological_order()
        self._watcher = None
        self._initial: dict = {}
        self._left: dict = {}  # what the stepper last left in each .grad

    def start(self):
        return self.target.backward_steps()

    def reachable(self) -> list:
        return self._order

    def reached_ids(self) -> set:
        return set(self.graph.nodes)

    def in_turn(self, ran: list):
        order = self._order[::-1]
        return order[len(ran)] if len(ran) < len(order) else None

    def grad_holder(self, step):
        return step.node  # every Scalar keeps its gradient

    def leaf_name(self, leaf) -> str:
        node = self.graph.node_for(leaf)
        return node.label if node is not None else "a leaf"

    def watch(self, stepper_ref) -> None:
        self._watcher = stepper_ref
        self.leaves = self._order
        self.restart()

    def sync(self) -> None:
        for node in self.leaves:
            if not _same_float(node.grad, self._left[node]):
                stepper = self._watcher()
                if stepper is not None:
                    stepper.changed_outside(node, None, "changed")
                self._initial[node] = self._left[node] = node.grad  # it cannot be taken apart: it is the start

    def after_step(self) -> None:
        self._left = {node: node.grad for node in self.leaves}

    def take_out(self, owner, from_step: int = 0) -> None:
        """All the steps (``from_step`` 0), or the one that just failed: back to the .grads before it."""
        kept = self._initial if from_step == 0 else self._left
        for node in self.leaves:
            node.grad = kept[node]
        self._left = dict(kept)

    def restart(self) -> None:
        self._initial = {node: node.grad for node in self.leaves}
        self._left = dict(self._initial)

    def show_leaf_grads(self) -> bool:
        return False  # the stepper's own redraw shows every node's gradient

    def forget(self, stepper_ref) -> None:
        self._watcher = None


def _same_float(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)  # NaN is the same NaN

"""Where a stepper's steps come from: one small interface, one implementation per engine.

``Stepping`` walks backward the same way whichever engine ran the forward. It asks its *source*
to start a run (an iterator of ``BackwardStep``, the one record every engine yields), which nodes
backward reaches, whose turn it is, and how to put the leaves' ``.grad`` back as it was. gradlab's
tensors (``tensor_source.py``), the Scalar twin (``scalar_source.py``) and PyTorch
(``pytorch/step_source.py``) each answer in their own way (``step_sources.source_for`` picks one);
the stepper never asks which it has.
"""

from __future__ import annotations

from .capture import CaptureError, capture
from .grad_ledger import forget, ledger_for
from .leaf_grads import LeafGrads


class BackwardSource:
    """What a stepper needs from an engine. This base keeps each leaf's ``.grad`` in a ledger
    (``grad_ledger``), so a stepper can take its own steps out again and leave everyone else's."""

    checkpoints = True  # a run can checkpoint(): stepping back resumes from the last one, not from the start

    def __init__(self, target, graph=None):
        self.target, self.graph = target, graph or capture(target)
        self.leaves: list = []  # the tensors (or Scalars) whose .grad this backward adds into
        self.ledgers: list = []
        self._leaf_grads = LeafGrads(self.graph)

    # --- the run --------------------------------------------------------------------------------

    @property
    def total(self) -> int:
        """How many steps a whole backward takes."""
        return len(self.reachable())

    def start(self):
        """A new run from the loss: an iterator of BackwardStep with ``close()`` (and ``checkpoint()``)."""
        raise NotImplementedError

    def reachable(self) -> list:
        """The engine nodes backward runs, each once."""
        raise NotImplementedError

    def in_turn(self, ran: list):
        """The engine node whose turn it is after the nodes in ``ran`` have run (None at the end)."""
        raise NotImplementedError

    def node_id(self, ref) -> str | None:
        """The drawn node of an engine node (or of its leaf), if it is drawn."""
        node = self.graph.node_for(ref)
        return node.id if node is not None else None

    def reached_ids(self) -> set:
        """The drawn nodes backward visits; the rest (data, no-grad operations) are never reached."""
        return {self.node_id(n) for n in self.reachable()} - {None}

    def grad_holder(self, step):
        """Whose ``.grad`` the node of ``step`` shows once it has run (None: the gradient that reached it)."""
        return step.leaf

    def leaf_name(self, leaf) -> str:
        """A leaf in words, for the sentences about who changed its .grad."""
        node = self.graph.node_for(leaf)
        if node is None:
            return "a leaf"
        return f"the leaf of shape {list(leaf.shape)}" if node.label == "leaf" else node.label

    def failed_freed(self, node) -> bool:
        """Whether a failed step failed because a backward without retain_graph freed this node's saved values."""
        return bool(getattr(node, "freed", False))

    # --- the leaves' .grad --------------------------------------------------------------------------

    def accumulators(self) -> list:
        """The reached nodes that add into a leaf's .grad (their ``variable``)."""
        raise NotImplementedError

    def watch(self, stepper_ref) -> None:
        """Keep a ledger of each leaf this backward adds into, watched by the stepper."""
        accumulators = self.accumulators()
        self.leaves = [n.variable for n in accumulators]
        self.ledgers = [ledger_for(n.variable, n) for n in accumulators]
        for ledger in self.ledgers:
            ledger.sync()
            ledger.watch(stepper_ref)

    def sync(self) -> None:
        """Notice changes to the .grads made outside any backward (the ledgers tell the stepper)."""
        for ledger in self.ledgers:
            ledger.sync()

    def after_step(self) -> None:
        """A step has run (its additions are in the ledgers already)."""

    def take_out(self, owner, from_step: int = 0) -> None:
        """Take ``owner``'s additions of step ``from_step`` on out of every .grad; everyone else's stay."""
        for ledger in self.ledgers:
            if from_step == 0 or any(e.owner is owner and e.step is not None and e.step >= from_step
                                     for e in ledger.entries):
                ledger.take_out(owner, from_step=from_step)

    def restart(self) -> None:
        """From here on, measure from the .grads as they are now (a reset)."""
        for ledger in self.ledgers:
            if not ledger.awake:  # from here on, any change to .grad counts against the stepper's claim again
                ledger.wake()

    def show_leaf_grads(self) -> bool:
        """Each leaf's box shows its .grad as it is now; True if one had changed."""
        return self._leaf_grads.update()

    def forget(self, stepper_ref) -> None:
        """The stepper is closed or collected: it stops watching, and unused ledgers take their hooks off."""
        forget(stepper_ref, self.ledgers)


def check_loss(target, grad_fn, numel: int) -> None:
    """A loss to step from: a tensor with a graph, holding one number."""
    if grad_fn is None:
        raise CaptureError(
            "BackpropStepper: this tensor has no graph: it is a leaf or does not require grad. Give it the "
            "output of a computation on tensors with requires_grad=True (usually the loss)")
    if numel != 1:
        raise CaptureError(
            f"BackpropStepper: backward starts from one number, but this tensor has shape {list(target.shape)}; "
            "step from a scalar such as the loss, or from out.sum()")

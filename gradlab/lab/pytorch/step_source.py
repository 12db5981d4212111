"""Steps of PyTorch's own backward: ``gl.lab.BackpropStepper(torch_loss)``.

Each step calls one of PyTorch's ``grad_fn`` nodes on the gradients that reached it, in the order
its engine runs them (``backward_steps.py``), so after the last step every leaf's ``.grad`` is bit
for bit what ``loss.backward()`` leaves. Each leaf's ``.grad`` is kept in a ledger, as for gradlab,
so stepping back and reset take out only the stepper's own additions.

Hooks: a leaf's ``register_hook`` hooks and ``register_post_accumulate_grad_hook`` hooks run as
PyTorch runs them. Hooks on a node (``grad_fn.register_hook``/``register_prehook``) or on a
non-leaf tensor live in C++, out of Python's reach: the stepper cannot run them, and where it can
tell one is there (a module's full backward hook) it refuses, saying why.
"""

from __future__ import annotations

from ..capture import CaptureError
from ..step_source import BackwardSource, check_loss
from .backward_steps import TorchRun, accumulate, schedule
from .graph import FREED, is_accumulator

HOOKED = ("BackwardHookFunctionBackward",)  # the nodes of a module's full backward hook (register_full_backward_hook)


class TorchSource(BackwardSource):
    """A PyTorch loss's backward: its grad_fn nodes called in its engine's order, each leaf's .grad in a ledger."""

    def __init__(self, loss, graph=None):
        check_loss(loss, loss.grad_fn, loss.numel())
        super().__init__(loss, graph)
        self._ledger_of: dict = {}  # id(leaf) -> its ledger
        self._order = schedule(loss.grad_fn)
        hooked = next((n for n in self._order if n.name() in HOOKED), None)
        if hooked is not None:
            raise CaptureError(
                f"BackpropStepper: this graph holds {hooked.name()}, the node of a module's full backward hook "
                "(module.register_full_backward_hook). PyTorch keeps a node's hooks in C++, where Python cannot "
                "call them, so stepping would skip that hook and claim a backward it is not. Remove the hook "
                "(handle.remove()) and run the forward again to step it")
        if (graph is not None and graph.freed) or any(is_freed(n) for n in self._order):
            raise CaptureError(
                "BackpropStepper: backward already ran through this graph and freed what forward saved. Run the "
                "forward again, or call loss.backward(retain_graph=True) if you want to step after a backward")

    def start(self):
        return TorchRun.start(self.target, self._order, self._accumulate)

    def reachable(self) -> list:
        return self._order

    def accumulators(self) -> list:
        return [n for n in self._order if is_accumulator(n)]

    def watch(self, stepper_ref) -> None:
        super().watch(stepper_ref)
        self._ledger_of = {id(ledger.leaf): ledger for ledger in self.ledgers}

    def in_turn(self, ran: list):
        return self._order[len(ran)] if len(ran) < len(self._order) else None

    def failed_freed(self, node) -> bool:
        return is_freed(node)

    def _accumulate(self, node, grads_in):
        """A leaf's step: its ledger's hooks run around the node, as PyTorch's engine would run them."""
        return accumulate(node, grads_in, self._ledger_of.get(id(node.variable)))


def is_freed(node) -> bool:
    """Whether backward without retain_graph released what this node saved (reading one saved tensor says)."""
    try:
        if getattr(node, "_forward_cls", None) is not None:
            node.saved_tensors
            return False
        for attribute in dir(node):
            if attribute.startswith("_saved_"):
                getattr(node, attribute)
    except RuntimeError as error:
        return FREED in str(error)
    return False

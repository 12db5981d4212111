"""Which leaves' ``.grad`` changed since a view last showed it, looked at cheaply.

A leaf's box shows its ``.grad`` as it is now, whoever changed it: your backward through this graph or
another one, a stepper, a profile that keeps its gradients, ``zero_grad()``. Summarising every leaf
after every cell would cost a pass over every parameter; instead each leaf's ``.grad`` tensor and its
version (bumped by each in-place change, such as backward adding into it) are remembered when shown.
"""

from __future__ import annotations

from ..autograd.function import TrackedTensor
from .pytorch import is_torch_tensor, version_of
from .summary import summarize


class LeafGrads:
    """The ``.grad`` each leaf node of a graph showed last: ``update()`` re-reads the ones that changed."""

    def __init__(self, graph):
        self.leaves = [n for n in graph.nodes.values()
                       if n.kind in ("param", "leaf") and (isinstance(n.ref, TrackedTensor) or is_torch_tensor(n.ref))]
        self._shown: dict = {}  # node id -> (its .grad tensor, that tensor's version, the summary shown)

    def update(self) -> bool:
        """Give each leaf node whose .grad changed since it was last shown (or whose summary someone else
        replaced) its summary now; True if one changed."""
        changed = False
        for node in self.leaves:
            grad = node.ref.grad
            version = None if grad is None else grad.version if isinstance(grad, TrackedTensor) else version_of(grad)
            shown = self._shown.get(node.id)
            if shown is None or shown[0] is not grad or shown[1] != version or shown[2] is not node.grad:
                summary = summarize(grad)
                changed = changed or summary != node.grad
                node.grad = summary
                self._shown[node.id] = (grad, version, summary)
        return changed

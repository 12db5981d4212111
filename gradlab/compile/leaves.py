"""Where each gradient goes: into its leaf's ``.grad`` right after the last call that writes it, and (with
an optimizer) the parameter's update right after the last call that reads the parameter.

The engine's backward accumulates a leaf's gradient once its node has run; a program knows in
advance which instruction that is, so ``.grad`` is filled — and the weight moved — as early as
it can be, while later instructions still compute other gradients.
"""

from __future__ import annotations

from .program import Instr
from .trace import ArrayRef, written


class Update:
    """One parameter's optimizer step (``Optimizer._update``), run as soon as its gradient is final."""

    def __init__(self, optimizer, param, group):
        self.optimizer, self.param, self.group = optimizer, param, group

    def __call__(self):
        self.optimizer._update(self.param, self.group)


class Accumulate:
    """Add a gradient into ``leaf.grad`` as backward does: the first is kept (copied unless the program
    made it for this alone: ``own``, set once buffers are assigned), later ones are added in place."""

    def __init__(self, leaf):
        self.leaf, self.own = leaf, False

    def __call__(self, g):
        leaf = self.leaf
        if leaf.grad is None:
            leaf.grad = leaf._wrap(g if self.own else leaf.device.backend.copy(g))
        else:
            leaf.grad.add_(leaf._wrap(g))


def before_copy(rec, n) -> int:
    """The gradient the engine copied into a fresh ``.grad`` (its first): the program hands over that
    value itself, and copies it only when it must (``Accumulate``)."""
    for call in reversed(rec.calls):
        if call.name == "copy" and isinstance(call.results, ArrayRef) and call.results.index == n:
            (source,) = call.args
            if call.phase == "backward" and call.op is None and isinstance(source, ArrayRef):
                return source.index
            break
    return n


def hand_to_leaves(b, grads, optimizer, externals_of) -> None:
    """``leaf.grad += g`` right after the last instruction that writes g (as the engine's AccumulateGrad runs
    once a leaf's gradient is complete); then the parameter's update, once nothing later reads the parameter."""
    groups = {id(p): group for group in optimizer.param_groups for p in group["params"]} if optimizer else {}
    placed = []  # (after instruction n, order, instruction)
    for order, (leaf, g) in enumerate(grads.items()):
        done = _last_write(b.instrs, g)
        placed.append((done, order, 0, Instr(Accumulate(leaf), (g,), (), "accumulate into .grad", pure=False,
                                             phase="backward")))
        if id(leaf) in groups:
            param = externals_of.get(id(leaf))
            read = _last_read(b.instrs, param) if param is not None else -1
            placed.append((max(done, read), order, 1, Instr(Update(optimizer, leaf, groups[id(leaf)]), (), (),
                                                           f"{type(optimizer).__name__} update", pure=False,
                                                           phase="update")))
    placed.sort(key=lambda p: p[:3])
    out, k = [], 0
    for n, ins in enumerate(b.instrs):
        out.append(ins)
        while k < len(placed) and placed[k][0] <= n:
            out.append(placed[k][3])
            k += 1
    out.extend(p[3] for p in placed[k:])
    b.instrs[:] = out


def _last_write(instrs, slot) -> int:
    """The last instruction that makes ``slot`` or writes into it (or into a view of it)."""
    last, roots = -1, {slot}
    for n, ins in enumerate(instrs):
        if slot in ins.outs or (not ins.pure and ins.ins and written(ins.name, ins.ins) in roots):
            last = n
        if not ins.fresh and any(i in roots for i in ins.ins):
            roots.update(ins.outs)
    return last


def _last_read(instrs, slot) -> int:
    """The last instruction that reads ``slot``'s memory: itself, or a view of it, or an object holding it."""
    last, roots = -1, {slot}
    for n, ins in enumerate(instrs):
        if any(i in roots for i in ins.ins):
            last = n
            if not ins.fresh:
                roots.update(ins.outs)
    return last

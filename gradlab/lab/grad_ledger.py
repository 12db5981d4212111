"""Whose gradients are in a leaf's ``.grad``: a ledger of every backward that added to it.

A stepper adds its steps into the same ``.grad`` as your own ``loss.backward()``, and as a second
stepper on the same loss. To take out only its own steps (reset, step back) it asks the leaf's
ledger to add the rest up again, in the order they came: bit for bit the ``.grad`` those backwards
alone would have left. The ledger learns each addition from hooks on the leaf's accumulator node;
a change made outside backward (``p.grad = None``, ``zero_grad()``, an in-place edit) cannot be
taken apart, so it becomes the ledger's new start, and the steppers watching are told. From then
on, until a stepper adds to the leaf again, the ledger sleeps: nothing in it needs taking out, so
your training loop (``zero_grad()``, then ``backward()``) pays nothing for a stepper left open.
"""

from __future__ import annotations

import numpy as np

from .ownership import current_pass
from .summary import as_numpy

_ledgers: dict = {}  # id(leaf) -> its Ledger, while a stepper watches it


class Entry:
    """One gradient a backward added: whose backward (a weak reference to a stepper, or None for
    yours), at which of its steps, and the gradient itself (a private copy)."""

    __slots__ = ("owner", "step", "grad")

    def __init__(self, owner, step, grad):
        self.owner, self.step, self.grad = owner, step, grad


class Ledger:
    """One leaf: ``.grad`` as it was at the ``start``, then the ``entries`` added since, in order."""

    def __init__(self, leaf, accumulator):
        self.leaf = leaf
        self.entries: list = []
        self.watchers: list = []  # weak references to the steppers that use this ledger
        self.wake()
        self._handles = (accumulator.register_prehook(self.before_accumulate),
                         accumulator.register_hook(self.after_accumulate))

    # --- what the hooks see -------------------------------------------------------------------------

    def before_accumulate(self, grads) -> None:
        if _off_the_books():
            return
        if not self.awake:
            lab_pass = current_pass()
            if lab_pass is None or all(ref is not lab_pass.owner for ref in self.watchers):
                return
            self.wake()  # a stepper adds to this leaf again: from here on its steps can be taken out
        self.sync()

    def after_accumulate(self, grads_out, grads) -> None:
        if not self.awake or _off_the_books() or grads[0] is None or self._unchanged():
            return  # (unchanged: autograd.grad, or backward(inputs=...) without this leaf, added nothing)
        lab_pass = current_pass()
        owner, step = (lab_pass.owner, lab_pass.step) if lab_pass is not None else (None, None)
        grad = grads[0] if grads[0].dtype is self.leaf.dtype else grads[0].to(self.leaf.dtype)
        last = self.entries[-1] if self.entries else None
        if owner is None and last is not None and last.owner is None:
            last.grad.add_(grad)  # yours again, after a stepper's: one entry, so the list stays short
        else:
            self.entries.append(Entry(owner, step, _copy(grad)))
        self._fold()
        self._look()
        self._tell(owner, "added")

    # --- what a stepper asks --------------------------------------------------------------------------

    def wake(self) -> None:
        """Start from .grad as it is now, with nothing added since."""
        self.awake = True
        self.start, self.entries = _copy(self.leaf.grad), []
        self._look()

    def sync(self) -> bool:
        """Notice a change made outside backward since the last look: the watchers are told, and the ledger
        sleeps until a stepper adds here again (nothing is left to take out). True if there was one."""
        if not self.awake or self._unchanged():
            return False
        self.awake, self.start, self.entries, self._seen_values = False, None, [], None
        self._tell(None, "changed")
        return True

    def take_out(self, owner, from_step: int = 0) -> bool:
        """Remove ``owner``'s additions (those of step ``from_step`` on) and add up the rest again."""
        self.sync()
        if not self.awake:
            return False
        kept = [e for e in self.entries if not (e.owner is owner and e.step is not None and e.step >= from_step)]
        if len(kept) == len(self.entries):
            return False
        self.entries = kept
        grad = _copy(self.start)
        for entry in kept:  # as the engine accumulates: the first is copied, the next ones added in place
            grad = _copy(entry.grad) if grad is None else grad.add_(entry.grad)
        self.leaf.grad = grad
        self._look()
        self._tell(owner, "removed")
        return True

    def watch(self, stepper_ref) -> None:
        if not self.awake:
            self.wake()
        self.watchers.append(stepper_ref)

    def unwatch(self, stepper_ref) -> None:
        """A stepper is done with this ledger: its additions become yours; the last one out takes the hooks off."""
        self.watchers = [w for w in self.watchers if w is not stepper_ref]
        for entry in self.entries:
            if entry.owner is stepper_ref:
                entry.owner = None
        self._fold()
        if not self.watchers:
            for handle in self._handles:
                handle.remove()
            _ledgers.pop(id(self.leaf), None)

    # --- plumbing -------------------------------------------------------------------------------------

    def _look(self) -> None:
        """Remember what .grad is now, to notice a change that no backward made."""
        grad = self.leaf.grad
        self._seen = grad
        self._seen_values = None if grad is None else as_numpy(grad).copy()

    def _unchanged(self) -> bool:
        grad = self.leaf.grad
        if grad is not self._seen:
            return False
        return grad is None or np.array_equal(as_numpy(grad), self._seen_values, equal_nan=_floating(grad))

    def _fold(self) -> None:
        """Additions nobody can take out any more (yours, at the front) join the start."""
        while self.entries and self.entries[0].owner is None:
            grad = self.entries.pop(0).grad
            self.start = grad if self.start is None else self.start.add_(grad)

    def _tell(self, actor, what: str) -> None:
        for ref in list(self.watchers):
            stepper = ref()
            if stepper is not None and ref is not actor:
                stepper.changed_outside(self.leaf, actor, what)


def ledger_for(leaf, accumulator) -> Ledger:
    """The leaf's ledger, made (with its two hooks) for the first stepper that asks."""
    ledger = _ledgers.get(id(leaf))
    if ledger is None:
        ledger = _ledgers[id(leaf)] = Ledger(leaf, accumulator)
    return ledger


def _off_the_books() -> bool:
    """A profile's backward: what it adds into .grad is put back afterwards, so the ledger ignores it."""
    lab_pass = current_pass()
    return lab_pass is not None and not lab_pass.keeps_grads


def _floating(grad) -> bool:
    return grad.dtype.is_floating_point or grad.dtype.is_complex


def _copy(grad):
    return None if grad is None else grad.detach().clone()


def forget(stepper_ref, ledgers) -> None:
    """Run when a stepper is closed or collected: it stops watching, and unused ledgers take their hooks off."""
    for ledger in ledgers:
        ledger.unwatch(stepper_ref)


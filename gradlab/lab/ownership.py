"""Whose backward is running on this thread: yours, or one a lab tool drives?

A stepper and a profile drive the engine's real backward, so every hook on the graph runs, as in
``loss.backward()`` (a hook that changes a gradient must change it for them too). A lab view that
only *watches* (GradientFlow's ‖∂L/∂output‖, a leaf's ledger) asks here whose pass it is seeing:
a stepper's replay of steps it already showed, or a profile whose gradients are put back, is not
a backward your training did. Per thread, as the engine's grad mode is.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

_here = threading.local()


class LabPass:
    """What a lab tool says about the backward it is driving on this thread.

    ``owner`` is who drives it (a weak reference to a stepper, or None); ``step`` the step it is
    taking; ``counts`` whether it is a backward that happened (False for a replay, which re-runs
    steps already taken); ``keeps_grads`` whether what it adds into ``.grad`` stays there.
    """

    __slots__ = ("owner", "step", "counts", "keeps_grads")

    def __init__(self, owner, step, counts, keeps_grads):
        self.owner, self.step, self.counts, self.keeps_grads = owner, step, counts, keeps_grads


def current_pass() -> LabPass | None:
    """The lab pass this thread's backward belongs to; None for a backward of your own."""
    return getattr(_here, "current", None)


def counts_as_training() -> bool:
    """Should a watching hook count the backward now running? Yes for yours, no for a replay or a profile."""
    lab_pass = current_pass()
    return lab_pass is None or lab_pass.counts


@contextmanager
def lab_pass(owner=None, *, step=None, counts: bool, keeps_grads: bool = True):
    """``with lab_pass(me, counts=False): next(steps)``: the backward run inside belongs to ``owner``."""
    previous = current_pass()
    _here.current = LabPass(owner, step, counts, keeps_grads)
    try:
        yield
    finally:
        _here.current = previous

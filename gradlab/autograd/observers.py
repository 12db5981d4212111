"""Observers: functions told about every operation that ``Function.apply`` runs.

This is the lab's window into the engine: graph capture, the tracer and the profiler subscribe
here. With none attached, ``apply`` pays for one falsy check of ``active``.

An operation may run others inside its forward (a custom Function built from tensor operations).
While an observer is attached, ``apply`` counts, per thread, how many forwards are running, so
each record says whether it is ``nested`` in another operation: the graph shows only the outer
one, as PyTorch does, and a tracer writes only the outer one down.

Two rarer channels tell of *writes* (an in-place op copies its result into a tensor's memory)
and of *escapes*: a value leaving the world of operations (``.item()``,
``bool(t)``, ``.numpy()``, a random draw outside an op). A tracer needs them, since what Python
does with such a value (an ``if``, a fresh random mask) is invisible to a recording of operations.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, NamedTuple

from .hooks import RemovableHandle


class OpRecord(NamedTuple):
    """One operation as it ran: the Function class, its inputs, its outputs, and its graph node.

    ``node`` is None when nothing was recorded for backward (no input required grad, or no_grad).
    ``nested`` is True when the operation ran inside another one's forward (or inside an observer
    told about another one). A named tuple, so that telling an observer costs little more than the call.
    """

    function: type
    inputs: tuple
    outputs: tuple
    node: Any
    nested: bool = False


active: list = []


class _Depth(threading.local):
    """How many operations' forwards (and observers' calls) this thread is inside; counted while ``active``."""

    value = 0


_depth = _Depth()


def inside_op() -> bool:
    """Whether this thread runs inside an operation's forward (or an observer's call) just now.

    Counted only while an observer is subscribed: the escape and write watchers of a tracer, which
    subscribes one too, ask it to tell a value leaving the user's code from one leaving an op's own.
    """
    return _depth.value > 0


def run_forward(forward, ctx, inputs):
    """Run an operation's forward one level deeper, so that the operations inside it are told ``nested``."""
    depth = _depth.value
    _depth.value = depth + 1
    try:
        return forward(ctx, *inputs)
    finally:
        _depth.value = depth


ObserverHandle = RemovableHandle  # what subscribe returns: remove() detaches the observer


def subscribe(fn: Callable[[OpRecord], None]) -> RemovableHandle:
    """Call ``fn(record)`` after every operation from now on, until the handle is removed."""
    if not callable(fn):
        raise TypeError(f"autograd.subscribe expects a callable taking an OpRecord, got {type(fn).__name__}")
    active.append(fn)
    return RemovableHandle(active, hook=fn)


def notify(function, inputs, outputs, node) -> None:
    """Tell every observer about one operation (``apply`` calls it after the operation's forward)."""
    depth = _depth.value
    record = OpRecord(function, inputs, outputs if isinstance(outputs, tuple) else (outputs,), node, depth > 0)
    _depth.value = depth + 1  # an operation an observer runs itself is nested in this one
    try:
        for fn in tuple(active):
            fn(record)
    finally:
        _depth.value = depth


escape_watchers: list = []
write_watchers: list = []


def watch_writes(fn: Callable) -> RemovableHandle:
    """Call ``fn(target, source)`` whenever a tensor's memory is overwritten with another tensor's values
    outside any op (an in-place operation's last step: ``x.mul_(2)`` computes ``x * 2``, then writes it in)."""
    write_watchers.append(fn)
    return RemovableHandle(write_watchers, hook=fn)


def wrote(target, source) -> None:
    for fn in tuple(write_watchers):
        fn(target, source)


def watch_escapes(fn: Callable[[str], None]) -> RemovableHandle:
    """Call ``fn(what)`` whenever a value escapes the operations (``"item()"``, ``"bool()"``, ``"random"``, ...)."""
    escape_watchers.append(fn)
    return RemovableHandle(escape_watchers, hook=fn)


def escaped(what: str) -> None:
    for fn in tuple(escape_watchers):
        fn(what)

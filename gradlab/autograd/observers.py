"""Observers: functions told about every operation that ``Function.apply`` runs.

This is the lab's window into the engine: graph capture, the tracer and the profiler subscribe
here. With none attached, ``apply`` pays for one falsy check of ``active``.

Two rarer channels tell of *writes* (an in-place op copies its result into a tensor's memory)
and of *escapes*: a value leaving the world of operations (``.item()``,
``bool(t)``, ``.numpy()``, a random draw outside an op). A tracer needs them, since what Python
does with such a value (an ``if``, a fresh random mask) is invisible to a recording of operations.
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

from .hooks import RemovableHandle


class OpRecord(NamedTuple):
    """One operation as it ran: the Function class, its inputs, its outputs, and its graph node.

    ``node`` is None when nothing was recorded for backward (no input required grad, or no_grad).
    A named tuple, so that telling an observer costs little more than the call.
    """

    function: type
    inputs: tuple
    outputs: tuple
    node: Any


active: list = []


ObserverHandle = RemovableHandle  # what subscribe returns: remove() detaches the observer


def subscribe(fn: Callable[[OpRecord], None]) -> RemovableHandle:
    """Call ``fn(record)`` after every operation from now on, until the handle is removed."""
    if not callable(fn):
        raise TypeError(f"autograd.subscribe expects a callable taking an OpRecord, got {type(fn).__name__}")
    active.append(fn)
    return RemovableHandle(active, hook=fn)


def notify(function, inputs, outputs, node) -> None:
    record = OpRecord(function, inputs, outputs if isinstance(outputs, tuple) else (outputs,), node)
    for fn in tuple(active):
        fn(record)


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

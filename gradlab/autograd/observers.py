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

An observer sees the thread that subscribed it, as PyTorch's modes do: a recording, a trace or a
profile holds its own thread's operations, never another thread's (``all_threads=True`` sees all).
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


active: list = []  # (observer, the thread it watches or None for every thread)


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


def subscribe(fn: Callable[[OpRecord], None], *, all_threads: bool = False) -> RemovableHandle:
    """Call ``fn(record)`` after every operation this thread runs from now on (every thread's with
    ``all_threads=True``), until the handle is removed."""
    if not callable(fn):
        raise TypeError(f"autograd.subscribe expects a callable taking an OpRecord, got {type(fn).__name__}")
    return _watch(active, fn, all_threads)


_new_record = tuple.__new__  # OpRecord's own __new__ is a Python function: this skips it, as NamedTuple's _make does
_get_ident = threading.get_ident


def notify(function, inputs, outputs, node) -> None:
    """Tell this thread's observers about one operation (``apply`` calls it after the operation's forward)."""
    depth = _depth.value
    record = _new_record(OpRecord, (function, inputs, outputs if isinstance(outputs, tuple) else (outputs,), node,
                                    depth > 0))
    thread = _get_ident()
    _depth.value = depth + 1  # an operation an observer runs itself is nested in this one
    try:
        for fn, watched in tuple(active):
            if watched is None or watched == thread:
                fn(record)
    finally:
        _depth.value = depth


def _watch(watchers: list, fn: Callable, all_threads: bool) -> RemovableHandle:
    entry = (fn, None if all_threads else threading.get_ident())
    watchers.append(entry)
    return RemovableHandle(watchers, hook=entry)


escape_watchers: list = []
write_watchers: list = []


def watch_writes(fn: Callable, *, all_threads: bool = False) -> RemovableHandle:
    """Call ``fn(target, source)`` whenever this thread overwrites a tensor's memory with another tensor's values
    outside any op (an in-place operation's last step: ``x.mul_(2)`` computes ``x * 2``, then writes it in)."""
    return _watch(write_watchers, fn, all_threads)


def wrote(target, source) -> None:
    thread = threading.get_ident()
    for fn, watched in tuple(write_watchers):
        if watched is None or watched == thread:
            fn(target, source)


def watch_escapes(fn: Callable[[str], None], *, all_threads: bool = False) -> RemovableHandle:
    """Call ``fn(what)`` whenever a value of this thread escapes the operations (``"item()"``, ``"random"``, ...)."""
    return _watch(escape_watchers, fn, all_threads)


def escaped(what: str) -> None:
    thread = threading.get_ident()
    for fn, watched in tuple(escape_watchers):
        if watched is None or watched == thread:
            fn(what)

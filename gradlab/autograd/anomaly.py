"""``detect_anomaly``: find the operation whose backward first produced NaN.

While it is on, an observer keeps the stack of every forward call on its node, and the engine
checks each gradient it computes; the error names the backward function and shows the line of
the forward call that created it (errors raised inside a backward get the same note).
"""

from __future__ import annotations

import functools
import os
import traceback

from . import observers

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class _AnomalyState:
    enabled = False
    recorder = None  # the observer that keeps forward stacks, subscribed while detection is on


anomaly_state = _AnomalyState()


def _switch(enabled: bool) -> None:
    """Turn detection on or off: the flag the engine reads, and the one observer that records stacks."""
    anomaly_state.enabled = enabled
    if enabled and anomaly_state.recorder is None:
        anomaly_state.recorder = observers.subscribe(_remember_forward, all_threads=True)  # the mode is global
    elif not enabled and anomaly_state.recorder is not None:
        anomaly_state.recorder.remove()
        anomaly_state.recorder = None


def _remember_forward(record) -> None:
    if record.node is not None:
        record.node._forward_trace = traceback.extract_stack()[:-1]


class detect_anomaly:
    """Context manager and decorator: check every gradient for NaN and name the op that made it."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = bool(check_nan)

    def __enter__(self):
        self._previous = anomaly_state.enabled
        _switch(self.check_nan)
        return self

    def __exit__(self, *exc):
        _switch(self._previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class set_detect_anomaly(detect_anomaly):
    """``torch.autograd.set_detect_anomaly(mode)``: switch anomaly detection on or off, for good or in a with block.

    Like PyTorch's, the switch happens when it is called, and a with block puts the old mode back.
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        self.check_nan = bool(mode) and bool(check_nan)
        self.__enter__()

    def __enter__(self):
        if not hasattr(self, "_previous"):
            super().__enter__()
        return self


def is_anomaly_enabled() -> bool:
    return anomaly_state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return anomaly_state.enabled


def forward_call(node) -> str:
    """Where the node's forward was called from: the innermost frames of code outside gradlab."""
    stack = node._forward_trace
    if not stack:
        return ""
    end = len(stack)
    while end > 0 and stack[end - 1].filename.startswith(_PACKAGE_DIR):
        end -= 1  # drop gradlab's own frames (Function.apply, op wrappers, the observer)
    frames = stack[max(0, end - 3):end] if end else stack[-3:]
    return "The forward call that created this node was (most recent call last):\n" + "".join(traceback.format_list(frames))


def checked_backward(node, grads_in):
    """Run the node's backward under anomaly mode: annotate its errors, and reject NaN gradients."""
    try:
        grads_out = node.function.backward(node, *grads_in)
    except Exception as error:
        where = forward_call(node)
        if where:
            error.add_note(f"Error in the backward of {node.name()}. {where}")
        raise
    for i, g in enumerate(grads_out if isinstance(grads_out, (tuple, list)) else (grads_out,)):
        if g is not None and hasattr(g, "device") and g.dtype.is_floating_point and _has_nan(g):
            where = forward_call(node)
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output." + (f"\n{where}" if where else ""))
    return grads_out


def _has_nan(g) -> bool:
    backend = g.device.backend
    return bool(backend.to_numpy(backend.any(backend.isnan(g.array), None, False)))

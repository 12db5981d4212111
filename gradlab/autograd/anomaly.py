"""``detect_anomaly``: find the operation whose backward first produced NaN or Inf.

While it is on, an observer keeps the stack of every forward call on its node, and the engine
checks each gradient it computes; the error names the backward function and shows the line of
the forward call that created it.
"""

from __future__ import annotations

import functools
import traceback

from . import observers


class _AnomalyState:
    enabled = False


anomaly_state = _AnomalyState()


def _remember_forward(record) -> None:
    if record.node is not None:
        record.node._forward_trace = traceback.format_stack()[:-3]


class detect_anomaly:
    """Context manager and decorator: check every gradient for NaN/Inf and name the op that made it."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        self._previous = anomaly_state.enabled
        anomaly_state.enabled = self.check_nan
        self._handle = observers.subscribe(_remember_forward) if self.check_nan else None
        return self

    def __exit__(self, *exc):
        anomaly_state.enabled = self._previous
        if self._handle is not None:
            self._handle.remove()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


def is_anomaly_enabled() -> bool:
    return anomaly_state.enabled


def check_gradients(node, grads) -> None:
    """Raise if a gradient that node produced holds NaN or Inf, naming the node and its forward call."""
    for i, g in enumerate(grads):
        if g is None:
            continue
        bad = g._nonfinite_kind()
        if bad:
            where = ""
            if node._forward_trace:
                where = "\nThe forward call that created this node was:\n" + "".join(node._forward_trace[-2:])
            raise RuntimeError(f"Function '{node.name()}' returned {bad} values in its {i}th output.{where}")

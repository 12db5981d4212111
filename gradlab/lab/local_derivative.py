"""The local derivative of one Scalar operation, beside a finite-difference probe of it.

An operation knows only its own rule: ``out = tanh(x)`` knows ∂out/∂x = 1 − out². Its backward, given
the gradient g = 1, returns exactly that number; nudging the input by ±h and measuring the slope of
the output, (f(x + h) − f(x − h)) / 2h, estimates it without the rule. The inspector shows both.
"""

from __future__ import annotations

import math

from ..scalar import Scalar, ScalarContext

PROBE_STEP = 1e-6  # the centred difference's h: near float64's best for it (ε^(1/3) ≈ 6e-6)


def local_derivatives(function, inputs, names) -> list:
    """One row per Scalar input of ``function`` applied to ``inputs``: {"name", "of", "at", "derivative",
    "probe", "step"} — the input's name in the rule, the label of the node it came from, its value, the
    backward's ∂out/∂input (for g = 1), and the centred difference of the forward in that input."""
    values = [x.data if isinstance(x, Scalar) else x for x in inputs]
    ctx = ScalarContext(function, inputs)
    function.forward(ctx, *values)
    grads = function.backward(ctx, 1.0)
    grads = grads if isinstance(grads, tuple) else (grads,)
    rows = []
    for i, x in enumerate(inputs):
        if not isinstance(x, Scalar):
            continue
        derivative = grads[i] if i < len(grads) and grads[i] is not None else 0.0
        rows.append({"name": names[i] if i < len(names) else f"input {i}", "of": _box(x),
                     "at": values[i], "derivative": _finite(derivative),
                     "probe": _finite(_centred(function, inputs, values, i)), "step": PROBE_STEP})
    return rows


def _box(x: Scalar) -> str:
    """The label of the box that stands for x in the graph: a leaf's label, an op's symbol and label."""
    return f"{x.op} {x.label}".strip() if x.op else x.label


def _centred(function, inputs, values, i) -> float:
    """(f(.., x_i + h, ..) − f(.., x_i − h, ..)) / 2h, from the forward alone."""
    ends = []
    for shift in (PROBE_STEP, -PROBE_STEP):
        moved = list(values)
        moved[i] = values[i] + shift
        ends.append(function.forward(ScalarContext(function, inputs), *moved))
    return (ends[0] - ends[1]) / (2 * PROBE_STEP)


def _finite(value):
    """A float for JSON; None where it is nan or inf (JSON has neither)."""
    value = float(value)
    return value if math.isfinite(value) else None

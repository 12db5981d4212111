""""Check this node": does an operation's backward agree with finite differences?

For one recorded operation we rerun its Function on float64 copies of the inputs it really got,
pick a random output direction ``v`` and a random input direction ``u``, and compare the
backward's answer ``⟨vᵀJ, u⟩`` with the slope ``⟨v, f(x + h·u) − f(x − h·u)⟩ / 2h``. A wrong
backward fails this for almost every choice of ``v`` and ``u``.
"""

from __future__ import annotations

import math

import numpy as np

from ..autograd.engine import grad
from ..autograd.function import TrackedTensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..dtypes import float64
from ..scalar import Scalar, ScalarContext
from .capture import CaptureError, _forward_arg_names

STEP = 1e-6
TOLERANCE = 1e-5


def check_node(graph, node_id: str, seed: int = 0) -> dict:
    """Compare one node's vector-Jacobian product with central finite differences.

    Returns {"ok", "inputs": [{"name", "analytic", "numeric", "error"}], "tolerance", "message"}.
    """
    node = graph.nodes.get(node_id)
    if node is None:
        raise KeyError(f"check_node: no node {node_id!r} in this graph")
    if node.kind != "op":
        what = {"param": "a parameter", "leaf": "a leaf tensor", "input": "data (an input)"}.get(node.kind, node.kind)
        return _result(True, [], f"{node.label} is {what}: it has no backward of its own to check")
    call = graph.calls.get(node_id)
    if call is None and graph.source == "tape":
        raise CaptureError("check_node: a tape keeps no tensor values, so there are no inputs to check this op on. "
                           "Record the forward to check its nodes: with gl.lab.record() as rec: out = model(x); "
                           "gl.lab.GraphView(rec)")
    if call is None:
        raise CaptureError(
            "check_node: this graph was drawn from a tensor, which does not keep the inputs each operation got. "
            "Record the forward to check its nodes: with gl.lab.record() as rec: loss = ...; gl.lab.GraphView(rec)")
    function, inputs = call
    rng = np.random.default_rng(seed)
    if graph.source == "scalar":
        rows = _check_scalar(function, inputs, rng)
    else:
        rows = _check_tensor(function, inputs, rng)
    if not rows:
        return _result(True, [], f"{node.label}: none of its inputs is differentiable, so there is nothing to check")
    if not all(math.isfinite(v) for row in rows for v in (row["analytic"], row["numeric"], row["error"])):
        for row in rows:
            row.update({k: (v if math.isfinite(v) else None) for k, v in row.items() if isinstance(v, float)})
        return {"ok": None, "inputs": rows, "tolerance": TOLERANCE,
                "message": f"{node.label}: its inputs or outputs hold NaN or inf here, so finite differences "
                           "cannot check it; check it on finite inputs"}
    ok = all(row["error"] <= TOLERANCE for row in rows)
    worst = max(rows, key=lambda row: row["error"])
    if ok:
        message = f"{node.label}: backward agrees with finite differences (worst relative error {worst['error']:.1e})"
    else:
        message = (f"{node.label}: backward DISAGREES with finite differences for input '{worst['name']}': "
                   f"backward says {worst['analytic']:.6g}, the slope is {worst['numeric']:.6g}")
    return _result(ok, rows, message)


def _result(ok, rows, message) -> dict:
    return {"ok": bool(ok), "inputs": rows, "tolerance": TOLERANCE, "message": message}


def _relative(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(a), abs(b))


def _names(function, count) -> list:
    names = _forward_arg_names(function)
    return [names[i] if i < len(names) else f"input {i}" for i in range(count)]


def _check_tensor(function, inputs, rng) -> list:
    originals = list(inputs)
    wants = [isinstance(x, TrackedTensor) and x.dtype.is_floating_point for x in originals]
    base = [x.detach().to(dtype=float64) if want else x for x, want in zip(originals, wants)]
    with enable_grad():
        leaves = [x.clone().requires_grad_(True) if want else x for x, want in zip(base, wants)]
        outputs = _float_outputs(function.apply(*leaves))
        if not outputs or not any(o.requires_grad for o in outputs):
            return []
        directions_out = [o.new_tensor(rng.standard_normal(tuple(o.shape))) for o in outputs]
        pairs = [(o, v) for o, v in zip(outputs, directions_out) if o.requires_grad]
        wanted = [leaf for leaf, want in zip(leaves, wants) if want]
        grads = grad([o for o, _ in pairs], wanted, [v for _, v in pairs], allow_unused=True)
    names = _names(function, len(originals))
    rows, k = [], 0
    for i, want in enumerate(wants):
        if not want:
            continue
        g = grads[k]
        k += 1
        u = base[i].new_tensor(rng.standard_normal(tuple(base[i].shape)))
        analytic = float((g * u).sum().item()) if g is not None else 0.0
        numeric = _slope(function, base, i, u, directions_out, [o.requires_grad for o in outputs])
        rows.append({"name": names[i], "analytic": analytic, "numeric": numeric, "error": _relative(analytic, numeric)})
    return rows


def _float_outputs(out) -> list:
    outs = out if isinstance(out, tuple) else (out,)
    return [o for o in outs if isinstance(o, TrackedTensor) and o.dtype.is_floating_point]


def _slope(function, base, i, u, directions_out, differentiable) -> float:
    """⟨v, f(x + h·u) − f(x − h·u)⟩ / 2h, moving input i alone."""
    def projected(sign):
        moved = list(base)
        moved[i] = base[i] + sign * STEP * u
        with no_grad():
            outs = _float_outputs(function.apply(*moved))
        return sum(float((o * v).sum().item()) for o, v, d in zip(outs, directions_out, differentiable) if d)
    return (projected(1.0) - projected(-1.0)) / (2 * STEP)


def _check_scalar(function, inputs, rng) -> list:
    values = [x.data if isinstance(x, Scalar) else x for x in inputs]
    ctx = ScalarContext(function, inputs)
    function.forward(ctx, *values)
    grads = function.backward(ctx, 1.0)
    grads = grads if isinstance(grads, tuple) else (grads,)
    names = _names(function, len(values))
    rows = []
    for i, x in enumerate(inputs):
        if not isinstance(x, Scalar):
            continue
        def at(shift):
            moved = list(values)
            moved[i] = values[i] + shift
            return function.forward(ScalarContext(function, inputs), *moved)
        numeric = (at(STEP) - at(-STEP)) / (2 * STEP)
        analytic = grads[i] if i < len(grads) and grads[i] is not None else 0.0
        if math.isfinite(analytic) and math.isfinite(numeric):
            rows.append({"name": names[i], "analytic": float(analytic), "numeric": float(numeric),
                         "error": _relative(analytic, numeric)})
    return rows

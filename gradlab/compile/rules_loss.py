"""The cross-entropy rules. Eager records cross-entropy as PyTorch does, NllLoss after LogSoftmax;
here log_softmax is one instruction and the pick of the targets' log-probabilities (nll_loss, for
logits (N, C), class indices, no class weights, reduction 'mean') one more. Backward, where the
only gradient of the log-probabilities is nll_loss's own, the two backwards are one instruction,
the backend's fused (softmax − onehot) · g / N: nll_loss's one-hot gradient is then read by
nobody, and the pass that drops dead instructions removes it. Other cases run as they are.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import NATIVE_TO_DTYPE, int64
from ..jit.tape import Ref
from ..nn.functional.loss import NllLoss, _check_class_range
from ..ops.activations import LogSoftmax
from .rules_elementwise import is_float, registrar

RULES: dict = {}
rule = registrar(RULES)


@rule(LogSoftmax)
def log_softmax(op, b, args, needs, wrap):
    x, dim = args
    if x.__class__ is not Ref or type(dim) is not int:
        return None
    xs = b.slots[x.value]
    if not is_float(xs.dtype) or not xs.shape or 0 in xs.shape or not -len(xs.shape) <= dim < len(xs.shape):
        return None
    be, axis = b.backend, dim % len(xs.shape)
    out = b.emit1(lambda a: be.log_softmax(a, axis), (x.value,), xs.shape, xs.dtype, "LogSoftmax")

    def emit_backward(grads):
        (g,) = grads
        picked = b.notes.get(("nll_loss gradient", g))
        if picked is not None and picked[0] == out and axis == 1:  # nll_loss's gradient alone: fuse the two
            index, scale = picked[1:]
            return [b.emit1(lambda y, i, s: be.cross_entropy_backward(y, i, s, 1), (out, index, scale), xs.shape,
                            xs.dtype, "LogSoftmax.backward of NllLoss.backward (softmax − onehot) · g / N"), None]
        return [b.emit1(lambda y, g: be.log_softmax_backward(y, g, axis), (out, g), xs.shape, xs.dtype,
                        "LogSoftmax.backward"), None]
    return (out,), emit_backward


@rule(NllLoss)
def nll_loss(op, b, args, needs, wrap):
    logp, target, weight, ignore_index, reduction, name = args
    if logp.__class__ is not Ref or target.__class__ is not Ref or weight is not None or reduction != "mean":
        return None
    xs, ts = b.slots[logp.value], b.slots[target.value]
    if (not is_float(xs.dtype) or len(xs.shape) != 2 or ts.shape != xs.shape[:1]
            or not isinstance(ts.dtype, np.dtype) or ts.dtype.kind not in "iu"):
        return None
    be = b.backend
    n_classes = xs.shape[1]
    native = NATIVE_TO_DTYPE[xs.dtype]

    def forward(lp, t):
        """The same primitives as NllLoss.forward, in the same order (so the same numbers)."""
        valid = be.ne(t, ignore_index)
        index = be.where(valid, t, 0)
        if index.size:
            _check_class_range(name, be, index, n_classes, ignore_index)
        index = be.reshape(index, (t.shape[0], 1))
        picked = be.astype(be.reshape(valid, (t.shape[0], 1)), native)
        loss = be.neg(be.mul(be.take_along_axis(lp, index, 1), picked))
        denominator = be.sum(picked)
        out = be.div(be.sum(loss), denominator)
        denominator = be.where(be.eq(denominator, 0), 1.0, denominator)
        return out, index, picked, denominator

    out = b.slot((), xs.dtype, "nll_loss")
    saved = [b.slot(None, None, f"saved by nll_loss: {what}") for what in ("index", "weight", "count")]
    b.emit(forward, (logp.value, target.value), [out] + saved, "NllLoss", many=True)

    def emit_backward(grads):
        (g,) = grads
        if not needs[0]:
            return [None] * 6
        index, picked, denominator = saved
        scale = b.emit1(lambda g, p, d: be.mul(be.div(g, d), p), (g, picked, denominator), (xs.shape[0], 1),
                        xs.dtype, "NllLoss.backward (g / N per row)")

        def backward(i, s):
            classes = be.reshape(be.arange(0, n_classes, 1, int64), (n_classes,))
            return be.neg(be.mul(be.astype(be.eq(i, classes), native), s))
        grad = b.emit1(backward, (index, scale), xs.shape, xs.dtype, "NllLoss.backward (−onehot · g / N)")
        b.notes[("nll_loss gradient", grad)] = (logp.value, index, scale)
        return [grad] + [None] * 5
    return (out,), emit_backward

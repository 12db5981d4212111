"""The cross-entropy rule: log-softmax and the picked log-probabilities in one instruction, and its
backward (softmax − onehot) · g / N in one more, for the common case (logits (N, C), class
indices, no class weights, no label smoothing, reduction 'mean'). Other cases run as they are.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import NATIVE_TO_DTYPE
from ..jit.tape import Ref
from ..nn.functional.loss import ClassIndexLoss, _check_class_range
from .rules_elementwise import is_float, registrar

RULES: dict = {}
rule = registrar(RULES)


@rule(ClassIndexLoss)
def cross_entropy(op, b, args, needs, wrap):
    x, target, weight, ignore_index, smoothing, reduction, from_logits, name = args
    if (x.__class__ is not Ref or target.__class__ is not Ref or weight is not None or smoothing
            or reduction != "mean" or from_logits is not True):
        return None
    xs, ts = b.slots[x.value], b.slots[target.value]
    if (not is_float(xs.dtype) or len(xs.shape) != 2 or ts.shape != xs.shape[:1]
            or not isinstance(ts.dtype, np.dtype) or ts.dtype.kind not in "iu"):
        return None
    be = b.backend
    n_classes = xs.shape[1]
    native = NATIVE_TO_DTYPE[xs.dtype]

    def forward(a, t):
        """The same primitives as ClassIndexLoss.forward, in the same order (so the same numbers)."""
        logp = be.log_softmax(a, 1)
        valid = be.ne(t, ignore_index)
        index = be.where(valid, t, 0)
        if index.size:
            _check_class_range(name, be, index, n_classes, ignore_index)
        index = be.reshape(index, (t.shape[0], 1))
        picked = be.astype(be.reshape(valid, (t.shape[0], 1)), native)
        loss = be.neg(be.mul(be.take_along_axis(logp, index, 1), picked))
        denominator = be.sum(picked)
        out = be.div(be.sum(loss), denominator)
        denominator = be.where(be.eq(denominator, 0), 1.0, denominator)
        return out, logp, index, picked, denominator

    out = b.slot((), xs.dtype, "cross_entropy")
    saved = [b.slot(None, None, f"saved by cross_entropy: {what}") for what in ("logp", "index", "weight", "count")]
    b.emit(forward, (x.value, target.value), [out] + saved, "ClassIndexLoss", many=True)

    def emit_backward(grads):
        (g,) = grads
        if not needs[0]:
            return [None] * 8

        def backward(g, logp, index, picked, denominator):
            return be.cross_entropy_backward(logp, index, be.mul(be.div(g, denominator), picked), 1)
        grad = b.emit1(backward, [g] + saved[:2] + saved[2:], xs.shape, xs.dtype, "ClassIndexLoss.backward")
        return [grad] + [None] * 7
    return (out,), emit_backward


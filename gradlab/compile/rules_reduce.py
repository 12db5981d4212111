"""Sum and mean rules: one backend reduction forward; backward the gradient broadcast back as a view
(no copy), times 1/count for the mean, as eager's Sum and Mean backward compute it.
"""

from __future__ import annotations

import math

from ..jit.tape import Ref
from ..ops.reductions import Mean, Sum
from .rules_elementwise import is_float, registrar

RULES: dict = {}
rule = registrar(RULES)


def _axes(dim, ndim):
    """The sorted axes to reduce (None and () mean all), or None when dim is not a plain int or tuple of ints."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim) if isinstance(dim, (tuple, list)) else None
    if dims is None or not ndim or not all(isinstance(d, int) and -ndim <= d < ndim for d in dims):
        return None
    axes = tuple(sorted({d % ndim for d in dims}))
    return axes if len(axes) == len(dims) else None


def _reduction(mean):
    def lower(op, b, args, needs, wrap):
        x, dim, keepdim, dtype = args
        if x.__class__ is not Ref or dtype is not None:
            return None
        xs = b.slots[x.value]
        axes = _axes(dim, len(xs.shape))
        if not is_float(xs.dtype) or axes is None or op.dtypes[0] != xs.dtype.name:
            return None
        be, shape = b.backend, xs.shape
        count = math.prod(shape[a] for a in axes)
        kept = tuple(1 if i in axes else n for i, n in enumerate(shape))

        def forward(a):
            total = be.sum(a, axes, keepdim)
            return be.div(total, count) if mean else total
        out = b.emit1(forward, (x.value,), op.out_shapes[0], xs.dtype, op.name)

        def emit_backward(grads):
            (g,) = grads

            def spread(g):
                full = be.broadcast_to(g if keepdim or not axes else be.reshape(g, kept), shape)
                return be.mul(full, 1.0 / count) if mean else full
            return [b.emit1(spread, (g,), shape, xs.dtype, f"{op.name}.backward", fresh=mean), None, None, None]
        return (out,), emit_backward
    return lower


rule(Sum)(_reduction(mean=False))
rule(Mean)(_reduction(mean=True))

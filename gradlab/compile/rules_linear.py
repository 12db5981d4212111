"""The Linear rule: y = x Wᵀ + b as one matrix product with the bias added into its own result.

Leading dims are folded into rows (one large BLAS call). Backward is three instructions, each
dropped when its gradient is not needed: g · W, gᵀ · x, and the bias's column sums written as
a ones-vector product, exactly as eager's Linear.backward computes them.
"""

from __future__ import annotations

from ..dtypes import NATIVE_TO_DTYPE
from ..jit.tape import Ref
from ..nn.functional.linear import Linear
from .rules_elementwise import is_float, registrar

RULES: dict = {}
rule = registrar(RULES)


@rule(Linear)
def linear(op, b, args, needs, wrap):
    x, w, bias = args
    if x.__class__ is not Ref or w.__class__ is not Ref or not (bias is None or bias.__class__ is Ref):
        return None
    be = b.backend
    xs, ws = b.slots[x.value], b.slots[w.value]
    dtype = xs.dtype
    if not is_float(dtype) or not is_float(ws.dtype) or ws.dtype != dtype or len(ws.shape) != 2 or not xs.shape:
        return None
    if bias is not None and (not is_float(b.slots[bias.value].dtype) or b.slots[bias.value].dtype != dtype or b.slots[bias.value].shape != (ws.shape[0],)):
        return None
    x_shape, out_shape = xs.shape, op.out_shapes[0]
    rows_x = (-1, x_shape[-1])
    flat = len(x_shape) == 2

    def forward(a, weight, *b_):
        y = be.matmul(a if flat else be.reshape(a, rows_x), be.permute(weight, (1, 0)))
        if b_:
            be.iadd(y, b_[0])
        return y if flat else be.reshape(y, out_shape)
    ins = (x.value, w.value) + ((bias.value,) if bias is not None else ())
    out = b.emit1(forward, ins, out_shape, dtype, "Linear")

    def emit_backward(grads):
        (g,) = grads
        n_out = out_shape[-1] if out_shape else ws.shape[0]
        rows_g = (-1, n_out)
        grad_x = grad_w = grad_b = None
        if needs[0]:
            def backward_x(g, weight):
                r = be.matmul(g if len(out_shape) == 2 else be.reshape(g, rows_g), weight)
                return r if flat else be.reshape(r, x_shape)
            grad_x = b.emit1(backward_x, (g, w.value), x_shape, dtype, "Linear.backward (∂x = g·W)")
        if needs[1]:
            def backward_w(g, a):
                r = g if len(out_shape) == 2 else be.reshape(g, rows_g)
                return be.matmul(be.permute(r, (1, 0)), a if flat else be.reshape(a, rows_x))
            grad_w = b.emit1(backward_w, (g, x.value), ws.shape, dtype, "Linear.backward (∂W = gᵀ·x)")
        if bias is not None and needs[2]:
            native = NATIVE_TO_DTYPE[dtype]

            def backward_b(g):
                r = g if len(out_shape) == 2 else be.reshape(g, rows_g)
                return be.matmul(be.ones((r.shape[0],), native), r)
            grad_b = b.emit1(backward_b, (g,), (ws.shape[0],), dtype, "Linear.backward (∂b = Σ g)")
        return [grad_x, grad_w, grad_b]
    return (out,), emit_backward

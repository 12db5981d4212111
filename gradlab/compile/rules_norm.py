"""The layer-norm rule: Normalize over the trailing axes as the backend's fused kernel pair, no Tensors between.

Forward keeps what the kernel saves (x̂ and 1/σ on numpy, each row's mean and 1/σ on numba);
backward gives the three gradients in one call. Batch norm (running statistics, a param_shape)
runs as it is.
"""

from __future__ import annotations

from ..jit.tape import Ref
from ..nn.functional.normalization import Normalize
from .rules_elementwise import is_float, registrar

RULES: dict = {}
rule = registrar(RULES)


@rule(Normalize)
def layer_norm(op, b, args, needs, wrap):
    x, weight, bias, axes, eps, param_shape, running = args
    if x.__class__ is not Ref or param_shape is not None or running is not None:
        return None
    xs = b.slots[x.value]
    n = len(axes)
    if not is_float(xs.dtype) or tuple(axes) != tuple(range(len(xs.shape) - n, len(xs.shape))) or n == 0:
        return None
    params = [a for a in (weight, bias) if a is not None]
    if any(a.__class__ is not Ref or not is_float(b.slots[a.value].dtype) or b.slots[a.value].dtype != xs.dtype
           for a in params):
        return None
    kernels = b.backend
    has_w, has_b = weight is not None, bias is not None

    def forward(a, *wb):
        w = wb[0] if has_w else None
        bb = wb[-1] if has_b else None
        return kernels.layer_norm(a, w, bb, n, eps)

    out = b.slot(xs.shape, xs.dtype, "Normalize")
    saved = b.slot(None, None, "saved by layer norm")
    ins = (x.value,) + tuple(a.value for a in params)
    b.emit(lambda *arrays: forward(*arrays), ins, (out, saved), "Normalize (layer norm kernel)", many=True)

    def emit_backward(grads):
        (g,) = grads
        wanted = (bool(needs[0]), bool(has_w and needs[1]), bool(has_b and needs[2]))
        slots = [b.slot(b.slots[a.value].shape, xs.dtype, f"∂L/∂{what}") if want else b.slot(None, None, "")
                 for a, want, what in ((x, wanted[0], "x"), (weight, wanted[1], "weight"), (bias, wanted[2], "bias"))]
        w_in = (weight.value,) if has_w else ()

        def backward(g, a, s, *w):
            return kernels.layer_norm_backward(g, a, w[0] if w else None, s, n, wanted)
        b.emit(backward, (g, x.value, saved) + w_in, slots, "Normalize.backward (layer norm kernel)", many=True)
        return [s if want else None for s, want in zip(slots, wanted)] + [None] * 4
    return (out,), emit_backward

"""The max-pooling rule for windows that tile a 2-D input (stride = kernel, sizes divisible): tap views.

x viewed as (..., H/kh, kh, W/kw, kw) gives each tap of every window as one strided view; forward is
the elementwise maximum of the kh·kw views. Backward finds the winners again from x and the output:
the first tap (row-major) equal to the maximum, as eager's scan picks, and puts the gradient there
(g times a 0/1 mask, as eager's scatter computes it). A window holding NaN takes eager's own scan.
"""

from __future__ import annotations

import numpy as np

from ..jit.tape import Ref
from ..nn.functional.pooling import MaxPoolNd, Tiles
from .passes import OUT_BACKENDS
from .rules_elementwise import is_float, registrar

RULES: dict = {}
rule = registrar(RULES)


@rule(MaxPoolNd)
def max_pool(op, b, args, needs, wrap):
    x, kernel, geo, pads, indices = args
    if (b.backend.name not in OUT_BACKENDS or x.__class__ is not Ref or indices or len(kernel) != 2
            or not Tiles.fit(kernel, geo)):
        return None
    xs = b.slots[x.value]
    if not is_float(xs.dtype) or len(xs.shape) not in (3, 4):
        return None
    kh, kw = (int(k) for k in kernel)
    lead, (h, w) = tuple(xs.shape[:-2]), tuple(xs.shape[-2:])
    if h % kh or w % kw or not h or not w:
        return None
    tiled = lead + (h // kh, kh, w // kw, kw)
    out_shape = lead + (h // kh, w // kw)
    if tuple(op.out_shapes[0]) != out_shape:
        return None
    taps = [(i, j) for i in range(kh) for j in range(kw)]  # row-major: the order ties are broken in
    backend = b.backend

    def tap(a, i, j):
        return a[..., :, i, :, j]

    def forward(a):
        t = a.reshape(tiled)
        best = np.maximum(tap(t, *taps[0]), tap(t, *taps[1])) if len(taps) > 1 else tap(t, 0, 0).copy()
        for i, j in taps[2:]:
            np.maximum(best, tap(t, i, j), out=best)
        return best

    y = b.emit1(forward, (x.value,), out_shape, xs.dtype, "MaxPoolNd (tap views)")

    def emit_backward(grads):
        (g,) = grads
        kept = {}

        def backward(g, a, best):
            if np.isnan(best).any():  # NaN wins (the last one): eager's scan decides
                _, winners = Tiles.find(backend, a, (kh, kw))
                return winners.scatter(backend, g)
            t = a.reshape(tiled)
            out = kept.get("out")
            if out is None:
                out = kept["out"] = np.empty(tiled, a.dtype)
            taken = None
            for n, (i, j) in enumerate(taps):
                if n == len(taps) - 1:
                    won = ~taken if taken is not None else np.ones(best.shape, bool)
                else:
                    won = np.equal(tap(t, i, j), best)
                    if taken is not None:
                        won &= ~taken
                    taken = won.copy() if taken is None else np.logical_or(taken, won, out=taken)
                np.multiply(g, won, out=tap(out, i, j))
            return out.reshape(a.shape)
        # fresh=False: the result is a buffer kept from run to run (a fresh 3 MB array costs page faults)
        return [b.emit1(backward, (g, x.value, y), xs.shape, xs.dtype, "MaxPoolNd.backward (tap views)",
                        fresh=False), None, None, None, None]
    return (y,), emit_backward


"""The max-pooling rule for windows that tile the input (2-D, stride = kernel): one compiled loop each way.

Forward scans every window in row-major order, ties going to the first and NaN winning (the last
NaN, as eager and PyTorch pick), and keeps the winning tap as one small integer per window;
backward puts each gradient at its window's winner. Needs numba; without it the op runs as it is.
"""

from __future__ import annotations

import functools
import types

import numpy as np

from ..jit.tape import Ref
from ..nn.functional.pooling import MaxPoolNd, Tiles
from .passes import OUT_BACKENDS
from .rules import rule
from .rules_elementwise import FLOATS

PARALLEL_MIN_SIZE = 1 << 62  # parallel loops fight BLAS threads for the 2 cores: serial always (see report)


prange = range  # numba's prange once kernels() has imported numba (a parallel loop; a plain one in the twins)


def _forward(x, kh, kw, out, win):
    for p in prange(x.shape[0]):
        for i in range(out.shape[1]):
            for j in range(out.shape[2]):
                best, tap = x[p, i * kh, j * kw], 0
                for a in range(kh):
                    for c in range(kw):
                        v = x[p, i * kh + a, j * kw + c]
                        if v > best or v != v:  # ties to the first; a NaN wins (the last one)
                            best, tap = v, a * kw + c
                out[p, i, j] = best
                win[p, i, j] = tap


def _backward(g, win, kh, kw, out):
    for p in prange(g.shape[0]):
        for i in range(g.shape[1]):
            for j in range(g.shape[2]):
                t = win[p, i, j]
                out[p, i * kh + t // kw, j * kw + t % kw] = g[p, i, j]


@functools.cache
def kernels():
    """(forward, backward, forward_serial, backward_serial) compiled by numba (cached on disk), or None without it."""
    try:
        import numba
    except ImportError:
        return None
    globals()["prange"] = numba.prange
    made = []
    for parallel in (True, False):
        for fn in (_forward, _backward):
            twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + ("" if parallel else "_serial"))
            twin.__qualname__ = twin.__name__
            made.append(numba.njit(parallel=parallel, cache=True)(twin))
    return tuple(made)


@rule(MaxPoolNd)
def max_pool(op, b, args, needs, wrap):
    x, kernel, geo, pads, indices = args
    if (b.backend.name not in OUT_BACKENDS or x.__class__ is not Ref or indices or len(kernel) != 2
            or not Tiles.fit(kernel, geo)):
        return None
    xs = b.slots[x.value]
    if xs.dtype not in FLOATS or len(xs.shape) not in (3, 4) or kernels() is None:
        return None
    kh, kw = (int(k) for k in kernel)
    lead, (h, w) = xs.shape[:-2], xs.shape[-2:]
    ho, wo = h // kh, w // kw
    planes = int(np.prod(lead))
    out_shape = tuple(lead) + (ho, wo)
    if tuple(op.out_shapes[0]) != out_shape or ho == 0 or wo == 0:
        return None
    big = planes * h * w >= PARALLEL_MIN_SIZE
    dtype = xs.dtype

    def forward(a):
        fwd = kernels()[0 if big else 2]
        out = np.empty((planes, ho, wo), dtype)
        win = np.empty((planes, ho, wo), np.int32)
        fwd(np.ascontiguousarray(a).reshape(planes, h, w), kh, kw, out, win)
        return out.reshape(out_shape), win

    y = b.slot(out_shape, dtype, "MaxPoolNd")
    win = b.slot(None, None, "winning tap of each window")
    b.emit(forward, (x.value,), (y, win), "MaxPoolNd (compiled loop)", many=True)

    def emit_backward(grads):
        (g,) = grads

        def backward(g, win):
            bwd = kernels()[1 if big else 3]
            out = np.zeros((planes, h, w), dtype)
            bwd(np.ascontiguousarray(g).reshape(planes, ho, wo), win, kh, kw, out)
            return out.reshape(xs.shape)
        return [b.emit1(backward, (g, win), xs.shape, dtype, "MaxPoolNd.backward (compiled loop)"), None, None, None,
                None]
    return (y,), emit_backward

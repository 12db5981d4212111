"""The convolution rule: im2col into a buffer kept from run to run, then ONE large matrix product.

The columns are laid out (C·K, N·L), so the weight (O, C·K) meets the whole batch in one GEMM
(eager runs one per sample). The padded input, the columns and the transposed gradient live in
buffers allocated once (a large fresh array costs page faults every step); what leaves the rule
is new memory. Backward: ∂W = g·colsᵀ, ∂x = col2im(Wᵀ·g) tap by tap, ∂b = Σ g.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..jit.tape import Ref
from ..nn.functional.conv import ConvNd
from .passes import OUT_BACKENDS
from .rules_elementwise import is_float, registrar

RULES: dict = {}
rule = registrar(RULES)


WEIGHT_GRAD_PIECE = 8192  # columns per product in ∂W (see Geometry.weight_grad)


@rule(ConvNd)
def conv(op, b, args, needs, wrap):
    x, w, bias, geo = args
    if b.backend.name not in OUT_BACKENDS or x.__class__ is not Ref or w.__class__ is not Ref:
        return None
    xs, ws = b.slots[x.value], b.slots[w.value]
    if not is_float(xs.dtype) or not is_float(ws.dtype) or ws.dtype != xs.dtype or geo.groups != 1 or len(xs.shape) != len(ws.shape):
        return None
    if any(lo < 0 or hi < 0 for lo, hi in geo.padding) or (bias is not None and bias.__class__ is not Ref):
        return None
    g = Geometry(xs.shape, ws.shape, geo, xs.dtype)
    out_shape = op.out_shapes[0]
    if tuple(out_shape) != (g.n, g.o) + g.out:
        return None
    ins = (x.value, w.value) + ((bias.value,) if bias is not None else ())
    y = b.slot(out_shape, xs.dtype, "ConvNd")
    cols = b.slot(None, None, "columns (im2col) kept for ∂W") if needs[1] else None
    b.emit(Forward(g, keep=needs[1]), ins, (y, cols) if cols is not None else (y,), "ConvNd (im2col + one GEMM)",
           fresh=False, many=cols is not None)

    def emit_backward(grads):
        (gy,) = grads
        gt = b.slot(None, None, "∂y as (O, N·L)")
        b.emit(g.transposed_grad, (gy,), (gt,), "ConvNd.backward (∂y to (O, N·L))", fresh=False)
        gx = b.emit1(g.input_grad, (gy, w.value), xs.shape, xs.dtype, "ConvNd.backward (∂x = col2im(Wᵀ·g))",
                     fresh=False) if needs[0] else None  # (∂x is a kept buffer: a .grad made of it is copied)
        gw = b.emit1(g.weight_grad, (gt, cols), ws.shape, xs.dtype, "ConvNd.backward (∂W = g·colsᵀ)") \
            if needs[1] else None
        gb = b.emit1(g.bias_grad, (gt,), (g.o,), xs.dtype, "ConvNd.backward (∂b = Σ g)") \
            if bias is not None and needs[2] else None
        return [gx, gw, gb, None]
    return (y,), emit_backward


class Geometry:
    """One convolution's shapes, and its buffers (made on first use, then reused every run).

    The forward's columns are (C, *k, N, *out), so the product lands in (O, N, *out) order, one cheap
    copy from y's own; col2im puts the batch last instead (see ``input_grad``).
    """

    def __init__(self, x_shape, w_shape, geo, dtype):
        self.n, self.c, self.size = x_shape[0], x_shape[1], tuple(x_shape[2:])
        self.o, self.kernel = w_shape[0], tuple(w_shape[2:])
        self.nd = len(self.kernel)
        self.stride, self.dilation, self.pads = tuple(geo.stride), tuple(geo.dilation), tuple(geo.padding)
        self.padded = tuple(s + lo + hi for s, (lo, hi) in zip(self.size, self.pads))
        self.out = tuple((p - d * (k - 1) - 1) // s + 1
                         for p, k, s, d in zip(self.padded, self.kernel, self.stride, self.dilation))
        self.L, self.K = math.prod(self.out), math.prod(self.kernel)
        self.dtype = dtype
        self.inner = tuple(slice(lo, lo + s) for (lo, _), s in zip(self.pads, self.size))
        self.spatial = tuple(range(1, 1 + self.nd))
        self.taps = [(tap, tuple(slice(t * d, t * d + s * (o - 1) + 1, s)
                                 for t, d, s, o in zip(tap, self.dilation, self.stride, self.out)))
                     for tap in itertools.product(*(range(k) for k in self.kernel))]
        self._buffers = {}

    def buffer(self, name, shape, zero=False):
        a = self._buffers.get(name)
        if a is None:
            a = self._buffers[name] = np.zeros(shape, self.dtype) if zero else np.empty(shape, self.dtype)
        return a

    def columns(self, x):
        """x (N, C, *size) → columns (C·K, N·L): [(c, taps), (n, positions)], one copy of a strided view."""
        xp = self.buffer("padded", (self.n, self.c) + self.padded, zero=True)  # the border stays 0
        np.copyto(xp[(slice(None), slice(None)) + self.inner], x)
        shape, strides = [self.n, self.c], [xp.strides[0], xp.strides[1]]
        shape += self.out
        strides += [xp.strides[2 + a] * s for a, s in enumerate(self.stride)]
        shape += self.kernel
        strides += [xp.strides[2 + a] * d for a, d in enumerate(self.dilation)]
        windows = np.lib.stride_tricks.as_strided(xp, tuple(shape), tuple(strides), writeable=False)
        nd = self.nd
        order = (1,) + tuple(range(2 + nd, 2 + 2 * nd)) + (0,) + tuple(range(2, 2 + nd))  # (C, *k, N, *out)
        cols = self.buffer("cols", (self.c,) + self.kernel + (self.n,) + self.out)
        np.copyto(cols, windows.transpose(order))
        return cols.reshape(self.c * self.K, self.n * self.L)

    def product_as_output(self, yo):
        """The product (O, N·L) as y's (N, O, *out) (a view: the caller copies it out)."""
        return yo.reshape((self.o, self.n) + self.out).transpose((1, 0) + tuple(range(2, 2 + self.nd)))

    def transposed_grad(self, gy):
        """∂y (N, O, *out) as (O, N·L), in a kept buffer (for ∂W and ∂b)."""
        gt = self.buffer("grad_t", (self.o, self.n, self.L))
        np.copyto(gt, gy.reshape(self.n, self.o, self.L).transpose(1, 0, 2))
        return gt.reshape(self.o, self.n * self.L)

    def weight_grad(self, gt, cols):
        """g·colsᵀ, its long inner dimension (N·L) cut into pieces whose products are added: one product
        with a tiny result and a huge inner size stalls BLAS's threads when another process holds a core."""
        total = None
        for start in range(0, gt.shape[1], WEIGHT_GRAD_PIECE):
            piece = np.matmul(gt[:, start:start + WEIGHT_GRAD_PIECE], cols[:, start:start + WEIGHT_GRAD_PIECE].T)
            total = piece if total is None else np.add(total, piece, out=total)
        return total.reshape((self.o, self.c) + self.kernel)

    def bias_grad(self, gt):
        return np.add.reduce(gt, axis=1)

    def input_grad(self, gy, w):
        """col2im of Wᵀ·g, with the batch LAST, (C, *k, *out, N): each tap's slab is then added onto the
        padded (C, *padded, N) gradient in long contiguous runs (out[-1] · N numbers), in eager's tap order."""
        gt = self.buffer("grad_t_last", (self.o, self.L, self.n))
        np.copyto(gt, gy.reshape(self.n, self.o, self.L).transpose(1, 2, 0))
        gc = self.buffer("grad_cols", (self.c * self.K, self.L * self.n))
        np.matmul(w.reshape(self.o, -1).T, gt.reshape(self.o, -1), out=gc)
        gc = gc.reshape((self.c, self.K) + self.out + (self.n,))
        acc = self.buffer("grad_padded", (self.c,) + self.padded + (self.n,))
        acc.fill(0)
        for k, (tap, index) in enumerate(self.taps):
            acc[(slice(None),) + index] += gc[:, k]
        out = self.buffer("grad_x", (self.n, self.c) + self.size)  # kept: the instruction is not fresh
        np.copyto(out, acc[(slice(None),) + self.inner].transpose((self.nd + 1, 0) + self.spatial))
        return out


class Forward:
    """(y, cols) = conv(x, w) + b: the columns, one GEMM (O, C·K)·(C·K, N·L), the bias added as y is laid out."""

    def __init__(self, geometry, keep):
        self.g, self.keep = geometry, keep

    def __call__(self, x, w, bias=None):
        g = self.g
        cols = g.columns(x)
        yo = g.buffer("y_t", (g.o, cols.shape[1]))
        np.matmul(w.reshape(g.o, -1), cols, out=yo)
        y = np.empty((g.n, g.o) + g.out, g.dtype)
        source = g.product_as_output(yo)
        if bias is None:
            np.copyto(y, source)
        else:
            np.add(source, bias.reshape((g.o,) + (1,) * g.nd), out=y)
        return (y, cols) if self.keep else y


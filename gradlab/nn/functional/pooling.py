"""Pooling: the max or the mean of every window, on the same strided window view as convolution.

Max-pooling remembers which tap of each window won (the first largest; NaN wins, as in PyTorch) and
sends the gradient back there alone. Average pooling sums each window and divides by its size. Two
pairs of adjoint Functions do all the work, so gradients of any order follow: picking a tap of each
window (``WindowGather``) ↔ putting a value at that tap (``WindowScatter``), and summing each window
(``WindowSum``) ↔ spreading a value over its window (``WindowSpread``).
"""

from __future__ import annotations

import itertools
import math

from ...autograd.function import Function
from ...dtypes import bool_, int64
from .conv import Geometry, _pad_or_crop, batched_input, ntuple

__all__ = ["max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool2d"]


def _windows(backend, x, kernel, geo, fill=0):
    """The (N, C, *out, *kernel) window view of x padded with ``fill``."""
    widths = geo.padding
    if any(lo or hi for lo, hi in widths):
        x = backend.pad(x, ((0, 0),) * (x.ndim - len(widths)) + widths, fill)
    return backend.sliding_windows(x, kernel, tuple(range(x.ndim - len(kernel), x.ndim)), geo.stride, geo.dilation)


def _unwindow(backend, windows, shape, geo):
    """Sum a (N, C, *out, *kernel) array of window values back onto an input of ``shape`` (the adjoint of _windows)."""
    nd = len(geo.stride)
    padded = shape[:-nd] + tuple(n + lo + hi for n, (lo, hi) in zip(shape[-nd:], geo.padding))
    x = backend.fold_windows(windows, padded, tuple(range(len(shape) - nd, len(shape))), geo.stride, geo.dilation)
    return _pad_or_crop(backend, x, tuple((-lo, -hi) for lo, hi in geo.padding))


def _slabs(backend, windows, nd):
    """The window view copied taps-first, (K, N, C, *out): each tap's values one contiguous slab."""
    out = windows.shape[:-nd]
    slabs = backend.copy(backend.permute(windows, tuple(range(len(out), windows.ndim)) + tuple(range(len(out)))))
    return backend.reshape(slabs, (-1,) + out)


class MaxPoolNd(Function):
    """The largest value of each window, and which tap won: a one-hot (K, N, C, *out) bool tensor.

    Taps are scanned in order and a later one wins only when strictly larger than all before it (so
    ties go to the first) or NaN (so a NaN spreads, and the last NaN wins, as in PyTorch).
    """

    @staticmethod
    def forward(ctx, x, kernel, geo):
        backend = x.device.backend
        low = -math.inf if x.dtype.is_floating_point else -(1 << (8 * x.dtype.itemsize - 1))
        slabs = _slabs(backend, _windows(backend, x.array, kernel, geo, low), len(kernel))
        best, beats = backend.getitem(slabs, 0), []  # beats[j - 1]: tap j beats every tap before it
        for j in range(1, slabs.shape[0]):
            beats.append(backend.gt(backend.getitem(slabs, j), best))
            best = backend.maximum(best, backend.getitem(slabs, j))  # NaN propagates
        if beats and backend.any(backend.isnan(best)):
            beats = [backend.logical_or(b, backend.isnan(backend.getitem(slabs, j))) for j, b in enumerate(beats, 1)]
        ctx.winners, ctx.shape, ctx.kernel, ctx.geo = _last_true(backend, beats, best.shape), x.shape, kernel, geo
        winners = x._wrap(ctx.winners)
        ctx.mark_non_differentiable(winners)
        ctx.set_materialize_grads(False)
        return x._wrap(best if beats else backend.copy(best)), winners

    @staticmethod
    def backward(ctx, grad, _):
        if grad is None:
            return None, None, None
        return WindowScatter.apply(grad, ctx.winners, ctx.shape, ctx.kernel, ctx.geo), None, None


def _last_true(backend, beats, shape):
    """One-hot (K, *shape): tap j wins where it beat all before it and no later tap beat it."""
    winners = backend.zeros((len(beats) + 1,) + shape, bool_)
    later = backend.zeros(shape, bool_)
    for j in range(len(beats), 0, -1):
        backend.setitem(winners, j, backend.logical_and(beats[j - 1], backend.logical_not(later)))
        later = backend.logical_or(later, beats[j - 1])
    backend.setitem(winners, 0, backend.logical_not(later))
    return winners


class WindowScatter(Function):
    """An input-shaped tensor holding each value at its window's winning tap (``winners``, one-hot (K, ...)),
    summed where windows overlap."""

    @staticmethod
    def forward(ctx, y, winners, shape, kernel, geo):
        backend = y.device.backend
        nd = len(kernel)
        # one slab per tap: a product with the one-hot mask, which (unlike a where on a random mask) vectorises;
        # the one difference, an infinite value times 0 making NaN at the losing taps, is left as is
        values = backend.reshape(backend.mul(winners, backend.reshape(y.array, (1,) + y.shape)), tuple(kernel) + y.shape)
        windows = backend.permute(values, tuple(range(nd, nd + y.ndim)) + tuple(range(nd)))
        ctx.winners, ctx.kernel, ctx.geo = winners, kernel, geo
        return y._wrap(_unwindow(backend, windows, shape, geo))

    @staticmethod
    def backward(ctx, grad):
        return WindowGather.apply(grad, ctx.winners, ctx.kernel, ctx.geo), None, None, None, None


class WindowGather(Function):
    """The value at the winning tap of every window (max-pooling with the winners already known)."""

    @staticmethod
    def forward(ctx, x, winners, kernel, geo):
        backend = x.device.backend
        slabs = _slabs(backend, _windows(backend, x.array, kernel, geo), len(kernel))
        ctx.winners, ctx.shape, ctx.kernel, ctx.geo = winners, x.shape, kernel, geo
        return x._wrap(backend.sum(backend.mul(slabs, winners), (0,), False))

    @staticmethod
    def backward(ctx, grad):
        return WindowScatter.apply(grad, ctx.winners, ctx.shape, ctx.kernel, ctx.geo), None, None, None


class WindowSum(Function):
    """The sum of every window (zero padding adds nothing)."""

    @staticmethod
    def forward(ctx, x, kernel, geo):
        backend = x.device.backend
        windows = _windows(backend, x.array, kernel, geo)
        ctx.shape, ctx.kernel, ctx.geo = x.shape, kernel, geo
        return x._wrap(backend.sum(windows, tuple(range(x.ndim, windows.ndim)), False))

    @staticmethod
    def backward(ctx, grad):
        return WindowSpread.apply(grad, ctx.shape, ctx.kernel, ctx.geo), None, None


class WindowSpread(Function):
    """Each value copied onto every position of its window, summed where windows overlap."""

    @staticmethod
    def forward(ctx, y, shape, kernel, geo):
        backend = y.device.backend
        windows = backend.broadcast_to(backend.reshape(y.array, y.shape + (1,) * len(kernel)), y.shape + tuple(kernel))
        ctx.kernel, ctx.geo = kernel, geo
        return y._wrap(_unwindow(backend, windows, shape, geo))

    @staticmethod
    def backward(ctx, grad):
        return WindowSum.apply(grad, ctx.kernel, ctx.geo), None, None, None


# --- arguments: kernel, stride, padding, output size ------------------------------------------------

def _pool_geometry(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode):
    """The kernel and the window geometry; ceil_mode adds padding after, so a last partial window fits."""
    kernel = ntuple(op, "kernel_size", kernel_size, nd, minimum=1)
    no_stride = stride is None or (hasattr(stride, "__len__") and len(stride) == 0)
    stride = kernel if no_stride else ntuple(op, "stride", stride, nd, minimum=1)
    pads = ntuple(op, "padding", padding, nd, minimum=0)
    dilation = ntuple(op, "dilation", dilation, nd, minimum=1)
    if any(p > k // 2 for p, k in zip(pads, kernel)):
        raise RuntimeError(f"{op}: pad should be smaller than or equal to half of kernel size, but got "
                           f"padding={pads} and kernel_size={kernel}")
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    counts, widths = [], []
    for n, r, s, p in zip(x.shape[2:], reach, stride, pads):
        count = (n + 2 * p - r + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (count - 1) * s >= n + p:  # the last window must start inside the input or its left padding
            count -= 1
        counts.append(count)
        widths.append((p, p + max(0, (count - 1) * s + r - n - 2 * p)))
    if any(c < 1 for c in counts):
        raise RuntimeError(f"{op}: Given input size: ({'x'.join(map(str, x.shape[1:]))}). Calculated output size: "
                           f"({'x'.join(map(str, [x.shape[1]] + counts))}). Output size is too small")
    return kernel, Geometry(stride, tuple(widths), dilation), pads


def _max_pool(op, nd, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    x, unbatched = batched_input(op, input, nd)
    kernel, geo, pads = _pool_geometry(op, x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    out, winners = MaxPoolNd.apply(x, kernel, geo)
    if return_indices:
        indices = _flat_indices(x, winners.array, kernel, geo, pads, out.shape)
        return (out.squeeze(0), indices.squeeze(0)) if unbatched else (out, indices)
    return out.squeeze(0) if unbatched else out


def _flat_indices(x, winners, kernel, geo, pads, out_shape):
    """PyTorch's indices: the flat position of each winner within its (unpadded) input plane."""
    backend = x.device.backend
    nd, k_total = len(kernel), math.prod(kernel)
    taps = backend.reshape(backend.arange(0, k_total, 1, int64), (k_total,) + (1,) * len(out_shape))
    pick = backend.sum(backend.mul(winners, taps), (0,), False)
    flat, inner = None, k_total
    for i, (k, s, d, p, n, count) in enumerate(zip(kernel, geo.stride, geo.dilation, pads, x.shape[2:], out_shape[2:])):
        inner //= k
        tap = backend.remainder(backend.floor_divide(pick, inner), k)
        start = backend.reshape(backend.arange(-p, count * s - p, s, int64), (count,) + (1,) * (nd - 1 - i))
        position = backend.add(backend.mul(tap, d), start)
        flat = position if flat is None else backend.add(backend.mul(flat, n), position)
    return x._wrap(flat)


def _avg_pool(op, nd, input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override):
    x, unbatched = batched_input(op, input, nd)
    kernel, geo, pads = _pool_geometry(op, x, nd, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError(f"{op}: divisor must be not zero")
        divisor = divisor_override
    else:
        divisor = _divisor(x, kernel, geo, pads, count_include_pad)
    out = WindowSum.apply(x, kernel, geo) / divisor
    return out.squeeze(0) if unbatched else out


def _divisor(x, kernel, geo, pads, count_include_pad):
    """How many positions each window averages: a number when all windows agree, else a tensor of the output shape."""
    per_dim = []
    for n, k, s, p, (_, hi) in zip(x.shape[2:], kernel, geo.stride, pads, geo.padding):
        count = (n + p + hi - k) // s + 1
        sizes = []
        for o in range(count):
            start, end = o * s - p, min(o * s - p + k, n + p)
            sizes.append(end - start if count_include_pad else min(end, n) - max(start, 0))
        per_dim.append(sizes)
    divisors = [math.prod(c) for c in itertools.product(*per_dim)]
    if all(d == divisors[0] for d in divisors):
        return divisors[0]
    return x.new_tensor(divisors).reshape(tuple(len(c) for c in per_dim))


# --- the functional forms --------------------------------------------------------------------------

def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of every window of (N, C, L); with return_indices, also where each maximum was."""
    return _max_pool("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of every window of (N, C, H, W); stride defaults to the kernel size (windows that tile)."""
    return _max_pool("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """The mean of every window of (N, C, L); count_include_pad counts the zero padding in the mean."""
    return _avg_pool("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad, None)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of every window of (N, C, H, W); divisor_override divides every sum by one fixed number."""
    return _avg_pool("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


def adaptive_avg_pool2d(input, output_size):
    """Means over a grid of output_size windows covering the input (None keeps that size), as PyTorch places them.

    Window i of n inputs into o outputs spans [floor(i·n/o), ceil((i+1)·n/o)). When o divides n this is
    avg_pool2d with kernel n/o; otherwise the windows differ in size, and averaging each axis is a
    product with a (o, n) matrix of 1/size entries.
    """
    x, unbatched = batched_input("adaptive_avg_pool2d", input, 2)
    if not hasattr(output_size, "__len__"):
        output_size = (output_size, output_size)
    if len(output_size) != 2:
        raise RuntimeError(f"adaptive_avg_pool2d: output_size must be 2, got {len(output_size)} sizes ({output_size})")
    size = tuple(n if o is None else int(o) for n, o in zip(x.shape[2:], output_size))
    if any(o < 0 for o in size):
        raise RuntimeError(f"adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
                           f"received {size}")
    if all(o > 0 and n % o == 0 for n, o in zip(x.shape[2:], size)):
        kernel = tuple(n // o for n, o in zip(x.shape[2:], size))
        out = WindowSum.apply(x, kernel, Geometry(kernel, ((0, 0), (0, 0)), (1, 1))) / math.prod(kernel)
    else:
        rows, cols = (_averaging_matrix(x, n, o) for n, o in zip(x.shape[2:], size))
        out = rows.matmul(x).matmul(cols.transpose(0, 1))
    return out.squeeze(0) if unbatched else out


def _averaging_matrix(x, n, o):
    """(o, n): row i averages the inputs of adaptive window i."""
    rows = []
    for i in range(o):
        start, end = (i * n) // o, -(-(i + 1) * n // o)
        rows.append([1.0 / (end - start) if start <= j < end else 0.0 for j in range(n)])
    return x.new_tensor(rows).reshape(o, n)


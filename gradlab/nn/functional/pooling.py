"""Pooling: the max or the mean of every window, on the same strided window view as convolution.

Max-pooling remembers which tap of each window won (the first largest; NaN wins, as in PyTorch) and
sends the gradient back there alone. Average pooling sums each window and divides by its size. Two
pairs of adjoint Functions do all the work, so gradients of any order follow: picking the winning
tap of each window (``WindowGather``) ↔ putting a value at that tap (``WindowScatter``), and summing
each window (``WindowSum``) ↔ spreading a value over its window (``WindowSpread``).

Windows that tile the input (stride = kernel, no padding or dilation: MaxPool2d(2) and the like) take
a faster road, ``Tiles``: the maximum is taken one axis at a time over interleaved taps, x[..., 0::2]
against x[..., 1::2], so every step is one pass over long strided runs and no window is ever copied.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ...autograd.function import Function
from ...ops.autocast import autocast_op
from ...dtypes import bool_, int64
from ...ops._common import TrackedTensor, describe, shape_str
from ...random import _rng
from .conv import Geometry, _pad_or_crop, batched_input, ntuple

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d", "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
           "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]


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


def _running_max(backend, taps, nan):
    """The maximum over a list of same-shaped arrays, and which one won: one bool array per tap, exactly one True.

    A later tap wins only when strictly larger than all before it (so ties go to the first), or, with
    ``nan``, when it is NaN (so the last NaN wins, as in PyTorch; the maximum itself propagates NaN).
    """
    best, beats = taps[0], []  # beats[j - 1]: tap j beats every tap before it
    for tap in taps[1:]:
        beat = backend.gt(tap, best)
        beats.append(backend.logical_or(beat, backend.isnan(tap)) if nan else beat)
        best = backend.maximum(best, tap)
    if not beats:
        return best, [backend.full(tuple(best.shape), True, bool_)]
    winners, later = [beats[-1]], beats[-1]  # later: where some later tap won
    for beat in reversed(beats[:-1]):  # tap j wins where it beat all before it and no later tap beat it
        winners.append(backend.logical_and(beat, backend.logical_not(later)))
        later = backend.logical_or(later, beat)
    winners.append(backend.logical_not(later))
    return best, winners[::-1]


def _found_nan(backend, best):
    return backend.dtype_of(best).is_floating_point and backend.any_true(backend.isnan(best))


class Windows:
    """Any windows (overlapping, padded, dilated): the winners as one one-hot (K, N, C, *out) bool array.

    The K taps of every window are copied out as K contiguous slabs; gradients go back through col2im.
    """

    def __init__(self, winners, shape, kernel, geo):
        self.winners, self.shape, self.kernel, self.geo = winners, shape, kernel, geo

    @staticmethod
    def find(backend, x, kernel, geo):
        """The maximum of every window of x (padding never wins) and where it was."""
        dtype = backend.dtype_of(x)
        low = -math.inf if dtype.is_floating_point else -(1 << (8 * dtype.itemsize - 1))
        slabs = _slabs(backend, _windows(backend, x, kernel, geo, low), len(kernel))
        taps = [backend.getitem(slabs, j) for j in range(slabs.shape[0])]
        best, winners = _running_max(backend, taps, nan=False)
        if len(taps) > 1 and _found_nan(backend, best):
            best, winners = _running_max(backend, taps, nan=True)
        winners = backend.stack(winners, 0)
        return (best if len(taps) > 1 else backend.copy(best)), Windows(winners, x.shape, kernel, geo)

    def scatter(self, backend, y):
        """An input-shaped array holding each value of y at its window's winning tap, summed where windows overlap."""
        nd = len(self.kernel)
        # one slab per tap: a product with the one-hot mask, which (unlike a where on a random mask) vectorises;
        # the one difference, an infinite value times 0 making NaN at the losing taps, is left as is
        values = backend.reshape(backend.mul(self.winners, backend.reshape(y, (1,) + y.shape)),
                                 tuple(self.kernel) + y.shape)
        windows = backend.permute(values, tuple(range(nd, nd + y.ndim)) + tuple(range(nd)))
        return _unwindow(backend, windows, self.shape, self.geo)

    def gather(self, backend, x):
        """The value of x at the winning tap of every window."""
        slabs = _slabs(backend, _windows(backend, x, self.kernel, self.geo), len(self.kernel))
        return backend.sum(backend.mul(slabs, self.winners), (0,), False)

    def taps(self, backend):
        """Per spatial dim, the winning tap's position along that dim in every window (int64, output-shaped)."""
        k_total = math.prod(self.kernel)
        numbers = backend.reshape(backend.arange(0, k_total, 1, int64), (k_total,) + (1,) * (self.winners.ndim - 1))
        pick = backend.sum(backend.mul(self.winners, numbers), (0,), False)  # row-major over the kernel
        inner = [math.prod(self.kernel[i + 1:]) for i in range(len(self.kernel))]
        return [backend.remainder(backend.floor_divide(pick, n), k) for n, k in zip(inner, self.kernel)]


class Tiles:
    """Windows that tile the input (stride = kernel, no padding, no dilation): one axis at a time.

    The window maximum is separable: the largest of each k-run along W, then the largest of those
    along H. Each axis's taps are interleaved views, x[..., j::k], and its winners a list of k bool
    arrays (exactly one True at each position). Scanning W and then H, ties going to the first, picks
    the same winner as scanning the whole window in row-major order; so does letting NaN win (the
    last NaN of the window, as in PyTorch). A remainder that no window covers (floor mode) is cropped
    off, and gets zero gradient.
    """

    def __init__(self, winners, shape, kernel):
        self.winners, self.shape, self.kernel = winners, shape, kernel  # winners[i][j]: tap j won along axis i

    @staticmethod
    def fit(kernel, geo):
        """Whether the windows of this geometry tile the input."""
        return (tuple(geo.stride) == tuple(kernel) and all(d == 1 for d in geo.dilation)
                and all(lo == hi == 0 for lo, hi in geo.padding))

    @staticmethod
    def find(backend, x, kernel):
        """The maximum of every tile of x and where it was."""
        tiled = _crop_to_tiles(backend, x, kernel)

        def reduce(nan):
            best, winners = tiled, [None] * len(kernel)
            for i in reversed(range(len(kernel))):  # W first: its taps are the most closely interleaved
                best, winners[i] = _running_max(backend, _interleaved(backend, best, i - len(kernel), kernel[i]), nan)
            return best, winners

        best, winners = reduce(nan=False)
        if _found_nan(backend, best):
            best, winners = reduce(nan=True)
        return (backend.copy(best) if math.prod(kernel) == 1 else best), Tiles(winners, x.shape, kernel)

    def scatter(self, backend, y):
        """An input-shaped array holding each value of y at its tile's winning position (zero elsewhere).

        One axis at a time (H first: the reverse of find), each tap's share, y times its one-hot, is
        written into that tap's interleaved view of the next, larger array.
        """
        nd = len(self.kernel)
        for i, winners in enumerate(self.winners):
            axis, k = y.ndim - nd + i, len(winners)
            spread = backend.empty(y.shape[:axis] + (y.shape[axis] * k,) + y.shape[axis + 1:], backend.dtype_of(y))
            rest = (slice(None),) * (nd - 1 - i)
            for j in range(k):
                share = backend.mul(winners[j], y)
                backend.setitem(spread, (Ellipsis, slice(j, None, k)) + rest, share)
            y = spread
        return _pad_or_crop(backend, y, tuple((0, n - m) for n, m in zip(self.shape[-nd:], y.shape[-nd:])))

    def gather(self, backend, x):
        """The value of x at the winning position of every tile."""
        a = _crop_to_tiles(backend, x, self.kernel)
        for i in reversed(range(len(self.kernel))):
            a = self._pick(backend, a, i, self.winners[i])
        return backend.copy(a) if math.prod(self.kernel) == 1 else a

    def taps(self, backend):
        """Per spatial dim, the winning position along that dim in every tile (int64, output-shaped)."""
        taps = []
        for i, winners in enumerate(self.winners):
            tap = backend.zeros(tuple(winners[0].shape), int64)  # along axis i, at every position of
            for j in range(1, len(winners)):
                tap = backend.where(winners[j], j, tap)
            for j in reversed(range(i)):  # the axes before i, which were reduced after it
                tap = self._pick(backend, tap, j, self.winners[j])
            taps.append(tap)
        return taps

    def _pick(self, backend, a, i, winners):
        """a reduced along spatial axis i by taking its winning tap (one-hot winners: later wins overwrite)."""
        taps = _interleaved(backend, a, i - len(self.kernel), len(winners))
        picked = taps[0]
        for j in range(1, len(taps)):
            picked = backend.where(winners[j], taps[j], picked)
        return picked


def _crop_to_tiles(backend, x, kernel):
    """x without the trailing rows/columns that no whole tile covers (a view)."""
    nd = len(kernel)
    sizes = tuple(n - n % k for n, k in zip(x.shape[-nd:], kernel))
    if sizes == tuple(x.shape[-nd:]):
        return x
    return backend.getitem(x, (Ellipsis,) + tuple(slice(0, n) for n in sizes))


def _interleaved(backend, a, axis, k):
    """The k interleaved taps along ``axis`` (negative): a[..., j::k, ...] for j < k, as views."""
    rest = (slice(None),) * (-axis - 1)
    return [backend.getitem(a, (Ellipsis, slice(j, None, k)) + rest) for j in range(k)]


class MaxPoolNd(Function):
    """The largest value of each window: its gradient goes back to that window's winning element alone.

    With ``indices``, it also returns where the maximum was (a non-differentiable int64 output).
    """

    derivative = "∂L/∂x = g at each window's winning (first largest) element, summed where windows overlap"
    # PyTorch's names by the number of spatial dims (its max_pool1d runs the 2-D kernel, in a squeeze's node)
    node_names = ("MaxPool2DWithIndicesBackward0", "MaxPool3DWithIndicesBackward0")

    @staticmethod
    def forward(ctx, x, kernel, geo, pads, indices):
        if len(kernel) == 3:
            ctx.recorded_as(1)
        backend = x.device.backend
        if Tiles.fit(kernel, geo):
            best, ctx.winners = Tiles.find(backend, x.array, kernel)
        else:
            best, ctx.winners = Windows.find(backend, x.array, kernel, geo)
        out = x._wrap(best)
        if not indices:
            return out
        where = x._wrap(_flat_indices(backend, ctx.winners.taps(backend), x.shape, geo, pads))
        ctx.mark_non_differentiable(where)
        ctx.set_materialize_grads(False)
        return out, where

    @staticmethod
    def backward(ctx, grad, _=None):
        if grad is None:
            return None, None, None, None, None
        return WindowScatter.apply(grad, ctx.winners), None, None, None, None


class WindowScatter(Function):
    """Each value put at its window's winning tap (summed where windows overlap); its gradient is read back there.

    ``winners`` is a Windows or a Tiles: which tap of every window won the max-pooling.
    """

    derivative = "∂L/∂y = g read at each window's winning tap"

    @staticmethod
    def forward(ctx, y, winners):
        ctx.winners = winners
        return y._wrap(winners.scatter(y.device.backend, y.array))

    @staticmethod
    def backward(ctx, grad):
        return WindowGather.apply(grad, ctx.winners), None


class WindowGather(Function):
    """The value at the winning tap of every window; the gradient is put back at that tap.

    This is max-pooling with the winners already known.
    """

    derivative = "∂L/∂x = g put at each window's winning tap, summed where windows overlap"

    @staticmethod
    def forward(ctx, x, winners):
        ctx.winners = winners
        return x._wrap(winners.gather(x.device.backend, x.array))

    @staticmethod
    def backward(ctx, grad):
        return WindowScatter.apply(grad, ctx.winners), None


class WindowSum(Function):
    """The sum of every window (zero padding adds nothing); the gradient is spread over each window.

    Every element gets the sum of the gradients of the windows that cover it.
    """

    derivative = "∂L/∂x = g copied onto every element of its window, summed where windows overlap"

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
    """Each value copied onto every position of its window, summed where overlapping; the gradient sums each window."""

    derivative = "∂L/∂y = g summed over each window"

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
    result = MaxPoolNd.apply(x, kernel, geo, pads, return_indices)
    if not unbatched:
        return result
    return tuple(t.squeeze(0) for t in result) if return_indices else result.squeeze(0)


def _flat_indices(backend, taps, shape, geo, pads):
    """PyTorch's indices: the flat position of each winner within its (unpadded) input plane.

    ``taps[i]`` is the winner's position along spatial dim i inside its window.
    """
    flat, nd = None, len(taps)
    for i, (tap, s, d, p, n) in enumerate(zip(taps, geo.stride, geo.dilation, pads, shape[2:])):
        count = tap.shape[2 + i]
        start = backend.reshape(backend.arange(-p, count * s - p, s, int64), (count,) + (1,) * (nd - 1 - i))
        position = backend.add(backend.mul(tap, d), start)
        flat = position if flat is None else backend.add(backend.mul(flat, n), position)
    return flat


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


@autocast_op("fp32")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """The maximum of every window of (N, C, D, H, W); with return_indices, also where each maximum was."""
    return _max_pool("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def _with_indices(nd):
    def max_pool_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                              return_indices=False):
        return _max_pool(f"max_pool{nd}d_with_indices", nd, input, kernel_size, stride, padding, dilation, ceil_mode,
                         True)

    max_pool_with_indices.__name__ = max_pool_with_indices.__qualname__ = f"max_pool{nd}d_with_indices"
    max_pool_with_indices.__doc__ = f"max_pool{nd}d that always returns (output, indices), as PyTorch's does."
    return max_pool_with_indices


max_pool1d_with_indices, max_pool2d_with_indices, max_pool3d_with_indices = (_with_indices(nd) for nd in (1, 2, 3))


@autocast_op("fp32")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """The mean of every window of (N, C, D, H, W)."""
    return _avg_pool("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override)


# --- power-average pooling --------------------------------------------------------------------------

def _lp_pool(op, nd, input, norm_type, kernel_size, stride, ceil_mode):
    """(Σ over the window of x^p)^(1/p), as PyTorch computes it: p-th powers averaged, times the window size.

    A negative window sum (odd p) is taken as zero before the root (PyTorch's sign(s)·relu(|s|)).
    """
    kernel = ntuple(op, "kernel_size", kernel_size, nd, minimum=1)
    out = _avg_pool(op, nd, input.pow(norm_type), kernel, stride, 0, ceil_mode, True, None)
    return (out.sign() * out.abs().relu()).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of every window of (N, C, L): p = inf is max-pooling, p = 1 sum-pooling."""
    return _lp_pool("lp_pool1d", 1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of every window of (N, C, H, W)."""
    return _lp_pool("lp_pool2d", 2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """The p-norm of every window of (N, C, D, H, W)."""
    return _lp_pool("lp_pool3d", 3, input, norm_type, kernel_size, stride, ceil_mode)


# --- unpooling: each value put back where max-pooling found it --------------------------------------

def _max_unpool(op, nd, input, indices, kernel_size, stride, padding, output_size):
    x, unbatched = batched_input(op, input, nd)
    kernel = ntuple(op, "kernel_size", kernel_size, nd, minimum=1)
    no_stride = stride is None or (hasattr(stride, "__len__") and len(stride) == 0)
    stride = kernel if no_stride else ntuple(op, "stride", stride, nd, minimum=1)
    pads = ntuple(op, "padding", padding, nd, minimum=0)
    default = tuple((n - 1) * s + k - 2 * p for n, s, k, p in zip(x.shape[2:], stride, kernel, pads))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)[-nd:] if len(output_size) in (nd, nd + 1, nd + 2) else ()
        if len(size) != nd:
            raise ValueError(f"{op}: output_size should be a sequence containing {nd} or {nd + 2} elements, but it "
                             f"has a length of '{len(output_size)}'")
        for d, (want, best, s) in enumerate(zip(size, default, stride)):
            if not best - s < want < best + s:
                raise ValueError(f"{op}: invalid output_size \"{list(size)}\" (dim {d} must be between {best - s} and "
                                 f"{best + s})")
    if (not isinstance(indices, TrackedTensor) or indices.dtype is not int64
            or tuple(indices.shape) != tuple(input.shape)):
        raise RuntimeError(f"{op}: expected indices to be an int64 tensor of the input's shape "
                           f"{shape_str(input.shape)} (the indices max_pool{nd}d returned), got "
                           f"{describe(indices) if isinstance(indices, TrackedTensor) else type(indices).__name__}")
    index = indices.unsqueeze(0) if unbatched else indices
    plane = math.prod(size)
    flat = index.reshape(x.shape[0], x.shape[1], -1)
    if flat.numel():
        backend = x.device.backend
        low, high = (int(backend.to_numpy(f(flat.array))) for f in (backend.min, backend.max))
        if low < 0 or high >= plane:
            raise RuntimeError(f"{op}: Found an invalid max index: {low if low < 0 else high} (output volumes are of "
                               f"size {'x'.join(map(str, size))})")
    out = x.new_zeros((x.shape[0], x.shape[1], plane)).scatter(2, flat, x.reshape(x.shape[0], x.shape[1], -1))
    out = out.reshape(tuple(x.shape[:2]) + size)
    return out.squeeze(0) if unbatched else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool1d: each value put at its indices, zeros elsewhere."""
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool2d: each value put at its (flat, per-plane) index, zeros elsewhere."""
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """The partial inverse of max_pool3d."""
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


# --- adaptive pooling: a fixed output grid over any input size ----------------------------------------

def _adaptive_size(op, x, nd, output_size):
    """The output size as a tuple (None keeps the input's size along that dim)."""
    if not hasattr(output_size, "__len__"):
        output_size = (output_size,) * nd
    if len(output_size) != nd:
        raise RuntimeError(f"{op}: output_size must be {nd}, got {len(output_size)} sizes ({output_size})")
    size = tuple(n if o is None else int(o) for n, o in zip(x.shape[2:], output_size))
    if any(o < 0 for o in size):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 but received {size}")
    return size


def _adaptive_bounds(n, o):
    """Window i of n inputs into o outputs spans [floor(i·n/o), ceil((i+1)·n/o)), as PyTorch places them."""
    return [((i * n) // o, -(-(i + 1) * n // o)) for i in range(o)]


def _adaptive_avg_pool(op, nd, input, output_size):
    """Means over adaptive windows. When o divides n along every dim this is avg-pooling with kernel n/o;
    otherwise the windows differ in size, and averaging one axis is a product with a (o, n) matrix of
    1/size entries, one axis after another."""
    x, unbatched = batched_input(op, input, nd)
    size = _adaptive_size(op, x, nd, output_size)
    if all(o > 0 and n % o == 0 for n, o in zip(x.shape[2:], size)):
        kernel = tuple(n // o for n, o in zip(x.shape[2:], size))
        out = WindowSum.apply(x, kernel, Geometry(kernel, ((0, 0),) * nd, (1,) * nd)) / math.prod(kernel)
    else:
        out = x
        for i, (n, o) in enumerate(zip(x.shape[2:], size)):
            axis = 2 + i
            out = out.movedim(axis, -1).matmul(_averaging_matrix(x, n, o).transpose(0, 1)).movedim(-1, axis)
    return out.squeeze(0) if unbatched else out


def _averaging_matrix(x, n, o):
    """(o, n): row i averages the inputs of adaptive window i."""
    rows = [[1.0 / (end - start) if start <= j < end else 0.0 for j in range(n)]
            for start, end in _adaptive_bounds(n, o)]
    return x.new_tensor(rows).reshape(o, n)


def adaptive_avg_pool1d(input, output_size):
    """Means over output_size windows covering (N, C, L), whatever L is."""
    return _adaptive_avg_pool("adaptive_avg_pool1d", 1, input, output_size)


def adaptive_avg_pool2d(input, output_size):
    """Means over a grid of output_size windows covering (N, C, H, W) (None keeps that size)."""
    return _adaptive_avg_pool("adaptive_avg_pool2d", 2, input, output_size)


@autocast_op("fp32")
def adaptive_avg_pool3d(input, output_size):
    """Means over a grid of output_size windows covering (N, C, D, H, W)."""
    return _adaptive_avg_pool("adaptive_avg_pool3d", 3, input, output_size)


def _window_max_indices(backend, x, taps):
    """Where the maximum of every window is, as flat per-plane positions (N, C, *out) int64, the first largest
    in row-major order winning.

    ``taps[i]`` (host int64, shape (N or 1, C or 1, out_i, k_i)) lists the positions along spatial dim i that
    each window covers; the windows of one plane are one gather and one argmax.
    """
    n, c, spatial, nd = x.shape[0], x.shape[1], tuple(x.shape[2:]), len(taps)
    flat = np.zeros((1, 1), dtype=np.int64)  # positions, one dim at a time (Horner: flat · size + tap)
    for i, (size, tap) in enumerate(zip(spatial, taps)):
        tap = tap.reshape(tap.shape[:2] + (1,) * (2 * i) + tap.shape[2:])
        flat = flat.reshape(flat.shape + (1, 1)) * size + tap
    out, k = flat.shape[2::2], math.prod(flat.shape[3::2])  # flat: (N, C, o0, k0, o1, k1, ...)
    flat = np.transpose(flat, (0, 1) + tuple(range(2, 2 + 2 * nd, 2)) + tuple(range(3, 3 + 2 * nd, 2)))  # taps last
    flat = np.ascontiguousarray(np.broadcast_to(flat.reshape(flat.shape[:2] + out + (k,)), (n, c) + out + (k,)))
    where = backend.asarray(flat, int64)
    planes = backend.reshape(x.array, (n, c, -1))
    values = backend.reshape(backend.take_along_axis(planes, backend.reshape(where, (n, c, -1)), -1), where.shape)
    best = backend.reshape(backend.argmax(values, -1, True), (n, c) + out + (1,))
    return backend.reshape(backend.take_along_axis(where, best, -1), (n, c) + out)


def _adaptive_taps(n, o):
    """(1, 1, o, k): the positions of every adaptive window, padded to the longest by repeating its first
    position (a repeat never beats the original)."""
    bounds = _adaptive_bounds(n, o)
    k = max((end - start for start, end in bounds), default=1)
    taps = [[start + j if start + j < end else start for j in range(k)] for start, end in bounds]
    return np.array(taps, dtype=np.int64).reshape(1, 1, o, k)


def _gather_windows(x, where, out):
    """x's values at the flat per-plane positions ``where`` (so the gradient goes back to exactly those)."""
    values = x.reshape(x.shape[0], x.shape[1], -1).gather(2, where.reshape(x.shape[0], x.shape[1], -1))
    return values.reshape(tuple(x.shape[:2]) + tuple(out))


def _adaptive_max_pool(op, nd, input, output_size, return_indices):
    """The maximum of every adaptive window: positions found on arrays, values gathered (so gathered's gradient)."""
    x, unbatched = batched_input(op, input, nd)
    size = _adaptive_size(op, x, nd, output_size)
    if any(n == 0 for n in x.shape[2:]):
        empty = next(i for i, n in enumerate(input.shape) if n == 0)
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch dimensions, but input has "
                           f"sizes {list(input.shape)} with dimension {empty} being empty")
    if 0 in size:
        out = x.new_zeros(tuple(x.shape[:2]) + size)
        where = x.new_zeros(tuple(x.shape[:2]) + size, dtype=int64)
    else:
        taps = [_adaptive_taps(n, o) for n, o in zip(x.shape[2:], size)]
        where = x._wrap(_window_max_indices(x.device.backend, x, taps))
        out = _gather_windows(x, where, size)
    if unbatched:
        out, where = out.squeeze(0), where.squeeze(0)
    return (out, where) if return_indices else out


def _adaptive_max(nd, with_indices):
    name = f"adaptive_max_pool{nd}d" + ("_with_indices" if with_indices else "")

    def adaptive_max_pool(input, output_size, return_indices=False):
        return _adaptive_max_pool(name, nd, input, output_size, return_indices or with_indices)

    adaptive_max_pool.__name__ = adaptive_max_pool.__qualname__ = name
    adaptive_max_pool.__doc__ = (f"The maximum of every window of an output_size grid over a {nd}-D input"
                                 + (" and where it was (always both)." if with_indices else
                                    "; with return_indices, also where it was."))
    return adaptive_max_pool


adaptive_max_pool1d, adaptive_max_pool2d, adaptive_max_pool3d = (_adaptive_max(nd, False) for nd in (1, 2, 3))
(adaptive_max_pool1d_with_indices, adaptive_max_pool2d_with_indices,
 adaptive_max_pool3d_with_indices) = (_adaptive_max(nd, True) for nd in (1, 2, 3))



# --- fractional max pooling: pseudo-random windows that shrink by a non-integer factor ---------------

def _fractional_starts(samples, n, o, k):
    """PyTorch's interval sequence: window i starts at int((i + u) α) − int(u α), α = (n − k)/(o − 1), the
    last at n − k; u is the plane's random sample (host arrays, computed in the input's precision)."""
    starts = np.empty(samples.shape + (o,), dtype=np.int64)
    if o > 1:
        alpha = samples.dtype.type(n - k) / samples.dtype.type(o - 1)
        i = np.arange(o - 1, dtype=samples.dtype)
        starts[..., :-1] = ((i + samples[..., None]) * alpha).astype(np.int64) - (samples[..., None] * alpha).astype(
            np.int64)
    starts[..., -1] = n - k
    return starts


_SAMPLE_ORDER = {2: (1, 0), 3: (0, 1, 2)}  # which random sample drives which spatial dim (2-D: W first)


def _fractional_max_pool(op, nd, input, kernel_size, output_size, output_ratio, return_indices, _random_samples):
    x, unbatched = batched_input(op, input, nd)
    kernel = ntuple(op, "kernel_size", kernel_size, nd, minimum=1)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratio = (output_ratio,) * nd if not hasattr(output_ratio, "__len__") else tuple(output_ratio)
        if len(ratio) != nd:
            raise ValueError(f"{op} requires output_ratio to either be a single Int or tuple of Ints.")
        size = tuple(int(n * r) for n, r in zip(x.shape[2:], ratio))
    else:
        size = ntuple(op, "output_size", output_size, nd, minimum=1)
    for name, n, o, k in zip(("time", "height", "width")[3 - nd:], x.shape[2:], size, kernel):
        if o + k - 1 > n:
            raise RuntimeError(f"{op}(): pool {name} {k} too large relative to input {name} {n} (output_size "
                               f"{size}, kernel_size {kernel})")
    backend = x.device.backend
    if _random_samples is None:
        samples = backend.random_uniform(_rng(None), (x.shape[0], x.shape[1], nd), 0.0, 1.0, x.dtype)
    else:
        if tuple(_random_samples.shape) != (x.shape[0], x.shape[1], nd):
            raise RuntimeError(f"{op}(): expected _random_samples of shape ({x.shape[0]}, {x.shape[1]}, {nd}), got "
                               f"{shape_str(_random_samples.shape)}")
        samples = _random_samples.array
    samples = backend.to_numpy(samples)
    taps = []
    for d, (n, o, k) in enumerate(zip(x.shape[2:], size, kernel)):
        starts = _fractional_starts(samples[..., _SAMPLE_ORDER[nd][d]], n, o, k)
        taps.append(starts[..., None] + np.arange(k))
    where = x._wrap(_window_max_indices(backend, x, taps))
    out = _gather_windows(x, where, size)
    if unbatched:
        out, where = out.squeeze(0), where.squeeze(0)
    return (out, where) if return_indices else out


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max-pooling over pseudo-random, overlapping kernel_size windows placed so that (N, C, H, W) shrinks to
    output_size (or by output_ratio), a factor that need not be an integer (Graham's fractional max-pooling)."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Fractional max-pooling of (N, C, T, H, W) volumes."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """fractional_max_pool2d that always returns (output, indices)."""
    return _fractional_max_pool("fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, True,
                                _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """fractional_max_pool3d that always returns (output, indices)."""
    return _fractional_max_pool("fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, True,
                                _random_samples)

"""Convolution as a matrix product over windows: conv1d/2d/3d, conv_transpose1d/2d/3d, unfold, fold.

The input's windows are a strided view (no copy); laid out once as columns (im2col) they meet the
weight, reshaped to (out_channels, in_channels × kernel), in ONE matrix product. Three Functions
share a geometry: ``ConvNd`` (input, weight → output), ``ConvTransposeNd`` (output-shaped, weight →
input-shaped: the weight's transpose times the columns, summed back into place — col2im) and
``ConvWeightGrad`` (input, output-shaped → weight-shaped). The gradients of each are the other two,
so gradients of any order come from these three kernels.

Two layouts, each where it is cheapest: im2col keeps the batch first (one matrix per sample, so the
product lands directly in (N, C_out, *size) order), while col2im puts the batch last, (C, *size, N),
so that adding a tap's slab back is one pass over long contiguous runs rather than many short rows.
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

from ...autograd.function import Function
from ...ops._common import TrackedTensor, check_same_device, shape_str
from ...ops.autocast import autocast_op

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc",
           "unfold", "fold"]


class Geometry(NamedTuple):
    """How windows are laid over the input: stride, (before, after) padding per spatial dim, dilation, groups.

    A negative 'after' padding crops: conv_transpose's output_padding makes one, so that its adjoint
    convolution takes exactly as many windows as the transposed convolution was given.
    """

    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int = 1


# --- im2col and col2im on backend arrays -----------------------------------------------------------

def _pad_or_crop(backend, a, widths):
    """Zero-pad the spatial dims (the last len(widths)) by (before, after); negative widths crop instead.

    Padding writes the input into the middle of a zeros array (one copy, cheaper than a general pad).
    """
    lead = (slice(None),) * (a.ndim - len(widths))
    if any(lo < 0 or hi < 0 for lo, hi in widths):
        a = backend.getitem(a, lead + tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in
                                              zip(widths, a.shape[len(lead):])))
    if any(lo > 0 or hi > 0 for lo, hi in widths):
        sizes = a.shape[len(lead):]
        padded = backend.zeros(a.shape[:len(lead)] + tuple(n + max(lo, 0) + max(hi, 0) for n, (lo, hi) in
                                                            zip(sizes, widths)), backend.dtype_of(a))
        backend.setitem(padded, lead + tuple(slice(max(lo, 0), max(lo, 0) + n) for n, (lo, _) in zip(sizes, widths)), a)
        a = padded
    return a


def _spatial_axes(nd):
    return tuple(range(2, 2 + nd))


def columns(backend, x, kernel, geo):
    """im2col: x (N, C, *size) → columns (N, groups, C/groups · prod(kernel), L) and the output's spatial shape.

    Column [n, g, (c, taps), l] is the input under tap ``taps`` of window l of channel c in group g.
    The windows are a view; the one copy is the reshape into columns.
    """
    nd = len(kernel)
    x = _pad_or_crop(backend, x, geo.padding)
    windows = backend.sliding_windows(x, kernel, _spatial_axes(nd), geo.stride, geo.dilation)  # (N, C, *out, *k)
    n, c, out = x.shape[0], x.shape[1], windows.shape[2:2 + nd]
    g = geo.groups
    windows = backend.reshape(windows, (n, g, c // g) + windows.shape[2:])
    taps_first = (0, 1, 2) + tuple(range(3 + nd, 3 + 2 * nd)) + tuple(range(3, 3 + nd))
    cols = backend.reshape(backend.permute(windows, taps_first), (n, g, c // g * math.prod(kernel), math.prod(out)))
    return cols, out


def fold_columns(backend, cols, shape, geo):
    """col2im, the adjoint of ``columns``: cols (C, *kernel, *out, N) → (N, C, *size) = ``shape``, every
    entry added back to the input position it came from.

    The batch is the last axis: the slab of one tap, cols[:, ki, kj], is added onto the padded
    (C, *size, N) input as runs of W_out · N contiguous numbers, one pass per tap.
    """
    nd = len(shape) - 2
    padded = (shape[1],) + tuple(size + lo + hi for size, (lo, hi) in zip(shape[2:], geo.padding)) + (shape[0],)
    spatial = tuple(range(1, 1 + nd))
    windows = backend.permute(cols, (0,) + tuple(range(1 + nd, 2 + 2 * nd)) + spatial)  # (C, *out, N, *k)
    x = backend.fold_windows(windows, padded, spatial, geo.stride, geo.dilation)
    x = backend.permute(x, (nd + 1, 0) + spatial)  # (N, C, *padded), a view
    x = _pad_or_crop(backend, x, tuple((-lo, -hi) for lo, hi in geo.padding))
    return x if backend.is_contiguous(x) else backend.copy(x)


def _group_matrices(backend, a, groups):
    """(N, C, *spatial) as (N, groups, C/groups, prod(spatial)): a view when the layout allows."""
    return backend.reshape(a, (a.shape[0], groups, a.shape[1] // groups, -1))


# --- the three Functions -------------------------------------------------------------------------

class ConvNd(Function):
    """y = conv(x, w) + b: x gets the transposed convolution of g with w, w gets x's windows times g, b gets Σ g.

    Forward is the weight (groups, out/groups, in/groups · K) times x's columns, batched over N.
    """

    derivative = ("∂L/∂x = conv_transpose(g, w);  ∂L/∂w = Σ over batch and positions of x's windows · g;  "
                  "∂L/∂b = Σ g over batch and positions")
    node_names = ("ConvolutionBackward0",)  # PyTorch's one node for every convolution

    @staticmethod
    def forward(ctx, x, w, b, geo):
        backend = x.device.backend
        g = geo.groups
        cols, out = columns(backend, x.array, w.shape[2:], geo)
        y = backend.matmul(backend.reshape(w.array, (g, w.shape[0] // g, -1)), cols)  # (N, G, O/G, L)
        y = backend.reshape(y, (x.shape[0], w.shape[0]) + out)
        if b is not None:  # y is new: add the bias in its own memory
            backend.isub(y, backend.neg(backend.reshape(b.array, (-1,) + (1,) * len(out))))
        ctx.save_for_backward(x, w)
        ctx.geo = geo
        ctx.cols = cols if ctx.needs_input_grad[1] else None  # the weight's gradient needs them again
        return x._wrap(y)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        cols, ctx.cols = ctx.cols, None  # used once: a second backward (retain_graph) recomputes them
        # the weight's gradient first, so the columns are freed before col2im makes its own
        grad_w = ConvWeightGrad.apply(x, grad, w.shape[2:], ctx.geo, cols) if needs[1] else None
        del cols
        grad_x = ConvTransposeNd.apply(grad, w, x.shape[2:], ctx.geo) if needs[0] else None
        grad_b = grad.sum((0,) + _spatial_axes(grad.ndim - 2)) if needs[2] else None
        return grad_x, grad_w, grad_b, None


class ConvTransposeNd(Function):
    """x-shaped = conv_transpose(y-shaped, w), the adjoint of conv in its input: y's gradient is conv(g, w).

    w's gradient is the weight gradient of a conv from g to y. Each output position spreads its
    vector through the weight's transpose into one window's worth of columns (one matrix product,
    the batch as the last axis), and col2im adds every window back onto the positions it covers.
    ``size`` is the result's spatial size.
    """

    derivative = "∂L/∂y = conv(g, w);  ∂L/∂w = Σ over batch and positions of g's windows · y"
    node_names = ("ConvolutionBackward0",)  # (a transposed convolution is one too, in PyTorch)

    @staticmethod
    def forward(ctx, y, w, size, geo):
        backend = y.device.backend
        g, nd, n = geo.groups, len(size), y.shape[0]
        w_t = backend.permute(backend.reshape(w.array, (g, w.shape[0] // g, -1)), (0, 2, 1))  # (G, C/G · K, O/G)
        batch_last = backend.copy(backend.permute(y.array, tuple(range(1, nd + 2)) + (0,)))  # (O, *out, N)
        cols = backend.matmul(w_t, backend.reshape(batch_last, (g, w.shape[0] // g, -1)))  # (G, C/G · K, L · N)
        cols = backend.reshape(cols, (w.shape[1] * g,) + tuple(w.shape[2:]) + tuple(y.shape[2:]) + (n,))
        ctx.save_for_backward(y, w)
        ctx.geo = geo
        return y._wrap(fold_columns(backend, cols, (n, w.shape[1] * g) + tuple(size), geo))

    @staticmethod
    def backward(ctx, grad):
        y, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_y = ConvNd.apply(grad, w, None, ctx.geo) if needs[0] else None
        grad_w = ConvWeightGrad.apply(grad, y, w.shape[2:], ctx.geo, None) if needs[1] else None
        return grad_y, grad_w, None, None


class ConvWeightGrad(Function):
    """w-shaped = Σ over batch and positions of x's windows times y-shaped values: the adjoint of conv in its weight.

    Its gradients are the other two kernels: x gets conv_transpose(y, g) and y gets conv(x, g).
    ``cols`` are x's columns when the forward pass kept them (None: computed here).
    """

    derivative = "∂L/∂x = conv_transpose(y, g);  ∂L/∂y = conv(x, g)"

    @staticmethod
    def forward(ctx, x, y, kernel, geo, cols):
        backend = x.device.backend
        g = geo.groups
        if cols is None:
            cols, _ = columns(backend, x.array, kernel, geo)
        y_t = backend.permute(_group_matrices(backend, y.array, g), (0, 1, 3, 2))  # (N, G, L, O/G)
        w_t = backend.sum(backend.matmul(cols, y_t), (0,), False)  # (G, C/G · K, O/G)
        w = backend.reshape(backend.permute(w_t, (0, 2, 1)), (y.shape[1], x.shape[1] // g) + tuple(kernel))
        ctx.save_for_backward(x, y)
        ctx.geo = geo
        return x._wrap(w)

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_x = ConvTransposeNd.apply(y, grad, x.shape[2:], ctx.geo) if needs[0] else None
        grad_y = ConvNd.apply(x, grad, None, ctx.geo) if needs[1] else None
        return grad_x, grad_y, None, None, None


# --- arguments and checks --------------------------------------------------------------------------

def ntuple(op, name, value, nd, minimum=None):
    """An int or a sequence of nd ints as a tuple (PyTorch's _pair/_single), checked against a minimum."""
    if isinstance(value, TrackedTensor) or not hasattr(value, "__len__"):
        value = (operator.index(value),) * nd
    else:
        value = tuple(map(operator.index, value))
        if len(value) == 1:
            value *= nd
        if len(value) != nd:
            raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of {nd} values to match "
                               f"the convolution dimensions, but got {name}={list(value)}")
    if minimum is not None and any(v < minimum for v in value):
        raise RuntimeError(f"{op}: {name} must be {'positive' if minimum else 'non-negative'}, but got {name}={value}")
    return value


def conv_padding(op, padding, kernel, stride, dilation):
    """(before, after) per dim from an int, a tuple, 'valid' or 'same' ('same' puts any odd extra after, as PyTorch)."""
    nd = len(kernel)
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0),) * nd
        if padding != "same":
            raise ValueError(f"{op}: Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
        if any(s != 1 for s in stride):
            raise ValueError(f"{op}: padding='same' is not supported for strided convolutions (stride={stride}); "
                             "compute the padding yourself, or use stride=1")
        totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
        return tuple((t // 2, t - t // 2) for t in totals)
    return tuple((p, p) for p in ntuple(op, "padding", padding, nd, minimum=0))


def conv_geometry(op, nd, kernel, stride, padding, dilation, groups):
    if not isinstance(groups, int) or groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported (groups={groups})")
    stride = ntuple(op, "stride", stride, nd, minimum=1)
    dilation = ntuple(op, "dilation", dilation, nd, minimum=1)
    return Geometry(stride, conv_padding(op, padding, kernel, stride, dilation), dilation, groups)


_SPATIAL_NAMES = {1: "L", 2: "H, W", 3: "D, H, W"}


def batched_input(op, x, nd):
    """x as a batch, and whether it came without one: (C, *size) is a batch of one, as in PyTorch."""
    if not isinstance(x, TrackedTensor):
        raise TypeError(f"{op}: expected the input to be a gradlab Tensor, got {type(x).__name__}")
    if x.ndim == nd + 2:
        return x, False
    if x.ndim == nd + 1:
        return x.unsqueeze(0), True
    dims = _SPATIAL_NAMES[nd]
    raise RuntimeError(f"{op}: expected a {nd + 2}-D input (N, C, {dims}) or {nd + 1}-D (C, {dims}), "
                       f"got {x.ndim}-D input of shape {shape_str(x.shape)}")


def _check_operands(op, x, w, b):
    if w.dtype is not x.dtype or (b is not None and b.dtype is not x.dtype):
        raise RuntimeError(f"{op}: input ({x.dtype.name}), weight ({w.dtype.name})"
                           f"{'' if b is None else f' and bias ({b.dtype.name})'} must have the same dtype; "
                           "convert one of them, e.g. input.to(weight.dtype)")
    check_same_device(op, x, w, b)


def _check_kernel_fits(op, x, kernel, geo):
    padded = [n + lo + hi for n, (lo, hi) in zip(x.shape[2:], geo.padding)]
    reach = [d * (k - 1) + 1 for k, d in zip(kernel, geo.dilation)]
    if any(p < r for p, r in zip(padded, reach)):
        raise RuntimeError(f"{op}: Calculated padded input size per channel: ({' x '.join(map(str, padded))}). "
                           f"Kernel size: ({' x '.join(map(str, reach))}). Kernel size can't be greater than actual "
                           f"input size (input of shape {shape_str(x.shape)})")


@autocast_op("lower")
def conv(op, input, weight, bias, geo, nd):
    """The checked convolution that conv1d/conv2d and the Conv layers share; ``op`` names the caller in errors."""
    x, unbatched = batched_input(op, input, nd)
    _check_operands(op, x, weight, bias)
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected a {nd + 2}-D weight (out_channels, in_channels/groups, *kernel), "
                           f"got weight of shape {shape_str(weight.shape)}")
    if x.shape[1] != weight.shape[1] * geo.groups:
        raise RuntimeError(f"{op}: Given groups={geo.groups}, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {weight.shape[1] * geo.groups} channels, but got "
                           f"{x.shape[1]} channels instead")
    if weight.shape[0] % geo.groups:
        raise RuntimeError(f"{op}: out_channels ({weight.shape[0]}) must be divisible by groups ({geo.groups})")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"{op}: expected bias of shape ({weight.shape[0]},), got {shape_str(bias.shape)}")
    _check_kernel_fits(op, x, weight.shape[2:], geo)
    out = ConvNd.apply(x, weight, bias, geo)
    return out.squeeze(0) if unbatched else out


def transposed_size(op, x, kernel, stride, pads, dilation, extra):
    """The spatial size conv_transpose produces: (in − 1)·stride − 2·padding + dilation·(k − 1) + output_padding + 1."""
    size = tuple((n - 1) * s - 2 * p + d * (k - 1) + e + 1
                 for n, k, s, p, d, e in zip(x.shape[2:], kernel, stride, pads, dilation, extra))
    if any(n < 1 for n in size):
        raise RuntimeError(f"{op}: the output size {size} is not positive for input of shape {shape_str(x.shape)}; "
                           "use less padding")
    return size


@autocast_op("lower")
def conv_transpose(op, input, weight, bias, stride, padding, output_padding, groups, dilation, nd, output_size=None):
    """The checked transposed convolution; weight is (in_channels, out_channels/groups, *kernel)."""
    x, unbatched = batched_input(op, input, nd)
    _check_operands(op, x, weight, bias)
    kernel = weight.shape[2:]
    if weight.ndim != nd + 2:
        raise RuntimeError(f"{op}: expected a {nd + 2}-D weight (in_channels, out_channels/groups, *kernel), "
                           f"got weight of shape {shape_str(weight.shape)}")
    if x.shape[1] != weight.shape[0]:
        raise RuntimeError(f"{op}: Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {weight.shape[0]} channels, but got {x.shape[1]} channels instead")
    stride = ntuple(op, "stride", stride, nd, minimum=1)
    dilation = ntuple(op, "dilation", dilation, nd, minimum=1)
    pads = ntuple(op, "padding", padding, nd, minimum=0)
    extra = ntuple(op, "output_padding", output_padding, nd, minimum=0)
    if not isinstance(groups, int) or groups < 1 or weight.shape[0] % groups:
        raise RuntimeError(f"{op}: groups ({groups}) must be positive and divide in_channels ({weight.shape[0]})")
    if output_size is not None:
        extra = _output_padding_for(op, x, kernel, stride, pads, dilation, output_size, nd)
    if any(e >= s and e >= d for e, s, d in zip(extra, stride, dilation)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={extra}, stride={stride}, dilation={dilation}")
    geo = Geometry(stride, tuple((p, p - e) for p, e in zip(pads, extra)), dilation, groups)
    if bias is not None and tuple(bias.shape) != (weight.shape[1] * groups,):
        raise RuntimeError(f"{op}: expected bias of shape ({weight.shape[1] * groups},), got {shape_str(bias.shape)}")
    size = transposed_size(op, x, kernel, stride, pads, dilation, extra)
    out = ConvTransposeNd.apply(x, weight, size, geo)
    if bias is not None:
        out = out + bias.reshape((-1,) + (1,) * nd)
    return out.squeeze(0) if unbatched else out


def _output_padding_for(op, x, kernel, stride, pads, dilation, output_size, nd):
    """The output_padding that makes conv_transpose produce ``output_size`` (PyTorch's _output_padding)."""
    output_size = tuple(output_size)[-nd:]
    extra = []
    for n, k, s, p, d, want in zip(x.shape[2:], kernel, stride, pads, dilation, output_size):
        smallest = (n - 1) * s - 2 * p + d * (k - 1) + 1
        if not smallest <= want < smallest + s:
            raise ValueError(f"{op}: requested an output size of {output_size}, but valid sizes range from "
                             f"{smallest} to {smallest + s - 1} (for an input of shape {shape_str(x.shape)})")
        extra.append(want - smallest)
    return tuple(extra)


# --- the functional forms --------------------------------------------------------------------------

def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation, as in PyTorch) of (N, C, L) with weight (out, C/groups, k)."""
    geo = conv_geometry("conv1d", 1, weight.shape[2:], stride, padding, dilation, groups)
    return conv("conv1d", input, weight, bias, geo, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation, as in PyTorch) of (N, C, H, W) with weight (out, C/groups, kH, kW)."""
    geo = conv_geometry("conv2d", 2, weight.shape[2:], stride, padding, dilation, groups)
    return conv("conv2d", input, weight, bias, geo, 2)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution of (N, C, D, H, W) volumes with weight (out, C/groups, kD, kH, kW)."""
    geo = conv_geometry("conv3d", 3, weight.shape[2:], stride, padding, dilation, groups)
    return conv("conv3d", input, weight, bias, geo, 3)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of conv1d in its input ('deconvolution'): (N, C_in, L) → (N, C_out, L_out)."""
    return conv_transpose("conv_transpose1d", input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of conv2d in its input ('deconvolution'): upsamples (N, C_in, H, W) by the stride."""
    return conv_transpose("conv_transpose2d", input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """The adjoint of conv3d in its input: upsamples (N, C_in, D, H, W) volumes by the stride."""
    return conv_transpose("conv_transpose3d", input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


def conv_tbc(input, weight, bias, pad=0):
    """1-D convolution in time-batch-channel layout: input (T, N, C_in), weight (k, C_in, C_out), bias (C_out)
    → (T + 2·pad − k + 1, N, C_out). The same convolution as conv1d, with the axes in another order."""
    if not isinstance(input, TrackedTensor) or input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        raise RuntimeError(f"conv_tbc: expected input (T, N, C_in), weight (k, C_in, C_out) and bias (C_out), got "
                           f"{_describe_input(input)}, weight of shape {shape_str(weight.shape)} and bias of shape "
                           f"{shape_str(bias.shape)}")
    if input.shape[2] != weight.shape[1] or bias.shape[0] != weight.shape[2]:
        raise RuntimeError(f"conv_tbc: Input dim 2 (input channels) is not == dim 1 in the weight tensor (or bias "
                           f"does not match its output channels): input of shape {shape_str(input.shape)}, weight "
                           f"of shape {shape_str(weight.shape)}, bias of shape {shape_str(bias.shape)}")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


class Unfold(Function):
    """im2col as an op: (N, C, H, W) → (N, C · kH · kW, L); its gradient is fold."""

    derivative = "∂L/∂x = fold(g): each column entry added back where it was read, summed where windows overlap"
    node_names = ("Im2ColBackward0",)  # PyTorch's F.unfold

    @staticmethod
    def forward(ctx, x, kernel, geo):
        cols, out = columns(x.device.backend, x.array, kernel, geo)
        ctx.shape, ctx.kernel, ctx.out, ctx.geo = x.shape, kernel, out, geo
        return x._wrap(x.device.backend.reshape(cols, (x.shape[0], -1, cols.shape[-1])))

    @staticmethod
    def backward(ctx, grad):
        return Fold.apply(grad, ctx.shape, ctx.kernel, ctx.out, ctx.geo), None, None


class Fold(Function):
    """col2im as an op: (N, C · kH · kW, L) → (N, C, H, W), overlapping entries summed; its gradient is unfold."""

    derivative = "∂L/∂cols = unfold(g): each entry reads g at the position it was added to"
    node_names = ("Col2ImBackward0",)  # PyTorch's F.fold

    @staticmethod
    def forward(ctx, cols, shape, kernel, out, geo):
        backend = cols.device.backend
        ctx.kernel, ctx.geo = kernel, geo
        windows = backend.reshape(cols.array, tuple(shape[:2]) + tuple(kernel) + tuple(out))  # (N, C, *k, *out)
        batch_last = backend.permute(windows, tuple(range(1, windows.ndim)) + (0,))
        return cols._wrap(fold_columns(backend, batch_last, shape, geo))

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, ctx.kernel, ctx.geo), None, None, None, None


def _window_geometry(op, kernel_size, dilation, padding, stride):
    kernel = ntuple(op, "kernel_size", kernel_size, 2, minimum=1)
    stride = ntuple(op, "stride", stride, 2, minimum=1)
    dilation = ntuple(op, "dilation", dilation, 2, minimum=1)
    return kernel, Geometry(stride, tuple((p, p) for p in ntuple(op, "padding", padding, 2, minimum=0)), dilation)


def _window_counts(size, kernel, geo):
    return tuple((n + lo + hi - d * (k - 1) - 1) // s + 1 for n, k, (lo, hi), s, d in
                 zip(size, kernel, geo.padding, geo.stride, geo.dilation))


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """The sliding blocks of a batch (N, C, H, W) as columns (N, C · prod(kernel_size), L) (im2col)."""
    if not isinstance(input, TrackedTensor) or input.ndim not in (3, 4):
        raise RuntimeError(f"unfold: expected a 3-D or 4-D input, got {_describe_input(input)}")
    x, unbatched = batched_input("unfold", input, 2)
    kernel, geo = _window_geometry("unfold", kernel_size, dilation, padding, stride)
    _check_kernel_fits("unfold", x, kernel, geo)
    out = Unfold.apply(x, kernel, geo)
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum columns ``(N, C · prod(kernel_size), L)`` back into ``(N, C, *output_size)``: the adjoint of unfold (col2im)."""
    if not isinstance(input, TrackedTensor) or input.ndim not in (2, 3):
        raise RuntimeError(f"fold: expected a 2-D or 3-D input, got {_describe_input(input)}")
    cols = input.unsqueeze(0) if input.ndim == 2 else input
    size = ntuple("fold", "output_size", output_size, 2, minimum=1)
    kernel, geo = _window_geometry("fold", kernel_size, dilation, padding, stride)
    taps = math.prod(kernel)
    out = _window_counts(size, kernel, geo)
    if cols.shape[1] % taps or math.prod(out) != cols.shape[2]:
        raise RuntimeError(
            f"fold: expected input of shape (N, C × {taps}, {math.prod(out)}) for output_size={size}, "
            f"kernel_size={kernel}, dilation={geo.dilation}, padding={tuple(p for p, _ in geo.padding)}, "
            f"stride={geo.stride}; got {shape_str(input.shape)}")
    result = Fold.apply(cols, (cols.shape[0], cols.shape[1] // taps) + size, kernel, out, geo)
    return result.squeeze(0) if input.ndim == 2 else result


def _describe_input(x):
    return f"input of shape {shape_str(x.shape)}" if isinstance(x, TrackedTensor) else type(x).__name__

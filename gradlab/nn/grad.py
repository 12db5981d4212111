"""``gradlab.nn.grad``: the gradients of a convolution with respect to its input and its weight, as functions.

conv{1,2,3}d_input(input_size, weight, grad_output, ...) is the transposed convolution of grad_output;
conv{1,2,3}d_weight(input, weight_size, grad_output, ...) correlates the input's windows with it. They
are the very kernels convolution's backward uses, so they are differentiable too.
"""

from __future__ import annotations

from .functional.conv import ConvTransposeNd, ConvWeightGrad, conv_geometry, ntuple

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]


def _input_grad(nd, input_size, weight, grad_output, stride, padding, dilation, groups):
    op = f"conv{nd}d_input"
    if len(tuple(input_size)) not in (nd, nd + 2):
        raise ValueError(f"{op}: input_size must hold {nd + 2} sizes (N, C, *spatial) or the {nd} spatial ones, got "
                         f"{list(input_size)}")
    size = tuple(input_size)[-nd:]
    geo = conv_geometry(op, nd, tuple(weight.shape[2:]), stride, padding, dilation, groups)
    # the forward convolution may have left a remainder at the end uncovered: the transpose pads it back
    pads = tuple(lo for lo, _ in geo.padding)
    extra = tuple(n - ((o - 1) * s - 2 * p + d * (k - 1) + 1) for n, o, s, p, d, k in
                  zip(size, grad_output.shape[2:], geo.stride, pads, geo.dilation, weight.shape[2:]))
    geo = geo._replace(padding=tuple((p, p - e) for p, e in zip(pads, extra)))
    return ConvTransposeNd.apply(grad_output, weight, size, geo)


def _weight_grad(nd, input, weight_size, grad_output, stride, padding, dilation, groups):
    op = f"conv{nd}d_weight"
    kernel = ntuple(op, "weight_size", tuple(weight_size)[2:], nd, minimum=1)
    geo = conv_geometry(op, nd, kernel, stride, padding, dilation, groups)
    extra = tuple(n + 2 * p - d * (k - 1) - 1 - (o - 1) * s for n, o, s, (p, _), d, k in
                  zip(input.shape[2:], grad_output.shape[2:], geo.stride, geo.padding, geo.dilation, kernel))
    geo = geo._replace(padding=tuple((p, p - e) for (p, _), e in zip(geo.padding, extra)))
    return ConvWeightGrad.apply(input, grad_output, kernel, geo, None)


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its input, of shape input_size."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its input, of shape input_size."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its input, of shape input_size."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to its weight, of shape weight_size."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to its weight, of shape weight_size."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to its weight, of shape weight_size."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)

"""Affine maps: ``linear`` (y = x Wᵀ + b) and ``bilinear`` (y_o = x1ᵀ W_o x2 + b_o).

linear is one fused Function over any number of leading dims: one matrix product forward, and
backward as Tensor operations (grad Wᵀ-products and a sum), so it differentiates again.
"""

from __future__ import annotations

from ...autograd.function import Function
from ...ops._common import TrackedTensor, check_same_device, shape_str
from ...ops.linalg import einsum
from ...ops.autocast import autocast_op

__all__ = ["linear", "bilinear"]


class Linear(Function):
    """y = x @ wᵀ + b: x receives g times w, w receives gᵀ times x, and b the sum of g over the rows.

    x has shape (*, in). Contiguous leading dims are folded into the rows of one 2-D product, forward
    and backward (one large BLAS call is faster than a batch of small ones), and the bias is added
    into the product's own fresh array rather than into a new one.
    """

    derivative = "∂L/∂x = g · w;  ∂L/∂w = gᵀ · x;  ∂L/∂b = Σ g over the leading dims"
    # PyTorch's names for the product it does: addmm with a bias, mm without (for other than 2-D input
    # PyTorch wraps that node in a view's; here the one node does it all)
    node_names = ("AddmmBackward0", "MmBackward0")

    @staticmethod
    def forward(ctx, x, w, b):
        if b is None:
            ctx.recorded_as(1)
        backend = x.device.backend
        y = backend.matmul(_rows(backend, x.array), backend.permute(w.array, (1, 0)))
        if b is not None:
            backend.iadd(y, b.array)
        ctx.save_for_backward(x, w)
        return x._wrap(backend.reshape(y, x.shape[:-1] + (w.shape[0],)) if x.ndim != 2 else y)

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        needs = ctx.needs_input_grad
        rows = grad.reshape(-1, grad.shape[-1]) if grad.ndim != 2 else grad
        grad_x = grad_w = grad_b = None
        if needs[0]:
            grad_x = rows.matmul(w)
            grad_x = grad_x.reshape(x.shape) if x.ndim != 2 else grad_x
        if needs[1]:
            grad_w = rows.t().matmul(x.reshape(-1, x.shape[-1]) if x.ndim != 2 else x)
        if needs[2]:  # the column sums, as a vector-matrix product: BLAS does them faster than a reduction
            grad_b = rows.new_ones(rows.shape[0]).matmul(rows)
        return grad_x, grad_w, grad_b


def _rows(backend, a):
    """The array as (rows, features): a view when its layout allows, else a copy (as reshape gives)."""
    return a if a.ndim == 2 else backend.reshape(a, (-1, a.shape[-1]))


@autocast_op("lower")
def checked_linear(op, input, weight, bias):
    """linear with errors that name ``op`` (the function, or the layer that called it)."""
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"{op}: expected the input to be a gradlab Tensor, got {type(input).__name__}")
    check_same_device(op, input, weight, bias)
    if input.dtype is not weight.dtype or (bias is not None and bias.dtype is not weight.dtype):
        raise RuntimeError(f"{op}: input ({input.dtype.name}) and weight ({weight.dtype.name}) must have the same "
                           "dtype; convert one of them, e.g. input.to(weight.dtype)")
    if input.ndim == 0 or input.array.shape[-1] != weight.array.shape[-1]:
        raise RuntimeError(f"{op}: expected input with {weight.shape[-1]} features in the last dimension, got input "
                           f"of shape {shape_str(input.shape)} (weight of shape {shape_str(weight.shape)})")
    if bias is not None and tuple(bias.array.shape) not in ((weight.array.shape[0],), ()):
        raise RuntimeError(f"{op}: expected bias of shape ({weight.shape[0]},), got {shape_str(bias.shape)}")
    return Linear.apply(input, weight, bias)


def linear(input, weight, bias=None):
    """y = input @ weightᵀ + bias, with weight (out_features, in_features) and any leading dims on input."""
    return checked_linear("linear", input, weight, bias)


def checked_bilinear(op, input1, input2, weight, bias):
    check_same_device(op, input1, input2, weight, bias)
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"{op}: input1 and input2 must have the same leading dimensions, got "
                           f"{shape_str(input1.shape)} and {shape_str(input2.shape)}")
    for i, (x, size) in enumerate(((input1, weight.shape[1]), (input2, weight.shape[2])), 1):
        if x.ndim == 0 or x.shape[-1] != size:
            raise RuntimeError(f"{op}: input{i} size does not match weight size: expected {size} features in the last "
                               f"dimension, got input{i} of shape {shape_str(x.shape)} (weight of shape "
                               f"{shape_str(weight.shape)})")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = Σ_ij input1[..., i] · weight[o, i, j] · input2[..., j] + bias[o]."""
    return checked_bilinear("bilinear", input1, input2, weight, bias)

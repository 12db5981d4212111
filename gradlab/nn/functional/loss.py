"""Loss functions: how far predictions are from targets, as one number to minimise (or one per sample).

Each takes PyTorch's arguments and ``reduction``: 'mean' averages the per-element losses, 'sum'
adds them, 'none' returns them as they are. Losses built on logarithms work from logits
(log_softmax, log-sigmoid) so that huge scores give finite losses and finite gradients.
The graph is PyTorch's: a loss it records as one node is one Function here, reduction included
(mse_loss is MseLossBackward0, binary_cross_entropy_with_logits BinaryCrossEntropyWithLogitsBackward0),
cross-entropy over class indices is NllLoss after LogSoftmax (NllLossBackward0 after
LogSoftmaxBackward0), and the losses PyTorch composes (l1_loss, kl_div, ...) are composed of Tensor ops.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...autograd.function import Function, defined_by_caller, name_nodes
from ...autograd.grad_mode import grad_state
from ...dtypes import bool_, int64
from ...ops._common import (TrackedTensor, binary_operands, check_same_device, broadcast_shapes, describe, float_dtype_required,
                            shape_str)
from ...ops.elementwise import where
from ...ops.autocast import autocast_op
from ...ops.functional import cat
from .activation import _logsigmoid, logsigmoid, softplus
from .distance import pairwise_distance

__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss", "cosine_embedding_loss",
    "hinge_embedding_loss", "soft_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
    "multilabel_margin_loss", "triplet_margin_loss", "triplet_margin_with_distance_loss", "gaussian_nll_loss",
    "poisson_nll_loss", "ctc_loss",
]

_REDUCTIONS = ("mean", "sum", "none")


# --- reduction --------------------------------------------------------------------------------

def _legacy_reduction(size_average, reduce) -> str:
    """The reduction that the deprecated size_average/reduce flags ask for (PyTorch's mapping)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "none" if not reduce else ("mean" if size_average else "sum")
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{reduction}' instead.",
                  stacklevel=3)
    return reduction


def _reduction(size_average, reduce, reduction, allowed=_REDUCTIONS) -> str:
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction; use one of "
                         + ", ".join(repr(r) for r in allowed))
    return reduction


def _reduce(loss, reduction: str):
    """Average, add up or keep the per-element losses."""
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _tensors(op: str, **named) -> None:
    for name, value in named.items():
        if not isinstance(value, TrackedTensor):
            raise TypeError(f"{op}(): argument '{name}' must be a gradlab Tensor, got {describe(value)}")


# --- pointwise losses of the difference: mse, l1, smooth_l1, huber -----------------------------

def _pointwise_loss(op: str, compute, gradient, doc: str, derivative: str):
    """A Function for ``loss = reduce(f(input - target, *params))``: one node, reduction included, as in PyTorch.

    ``compute(backend, diff_array, *params)`` makes the per-element losses; ``gradient(grad, diff,
    *params)`` gives d loss / d input from Tensor operations (the target receives its negative),
    with ``grad`` the gradient of each element's loss (g, or g / count for 'mean'). Input and target
    may broadcast: the engine sums each gradient back to its input's shape. ``doc`` and
    ``derivative`` are the class's docstring and rule: that gradient in words and in math.
    """

    class PointwiseLoss(Function):
        @staticmethod
        def forward(ctx, input, target, reduction, *params):
            a, b, _ = binary_operands(op, input, target)  # PyTorch's type promotion and device check
            ctx.save_for_backward(input, target)
            ctx.params = params
            backend = input.device.backend
            return input._wrap(_reduced(ctx, backend, compute(backend, backend.sub(a, b), *params), reduction))

        @staticmethod
        def backward(ctx, grad):
            input, target = ctx.saved_tensors
            g = gradient(_element_grad(grad, ctx), input - target, *ctx.params)
            return ((g if ctx.needs_input_grad[0] else None,
                     -g if ctx.needs_input_grad[1] else None, None)
                    + (None,) * len(ctx.params))

    PointwiseLoss.__doc__, PointwiseLoss.derivative = doc, derivative
    PointwiseLoss.__name__ = PointwiseLoss.__qualname__ = "".join(p.capitalize() for p in op.split("_"))
    name_nodes(PointwiseLoss)
    return defined_by_caller(PointwiseLoss)


def _smooth_l1(b, d, beta):
    z = b.abs(d)
    return b.where(b.lt(z, beta), b.mul(b.mul(d, d), 0.5 / beta), b.sub(z, 0.5 * beta))


def _huber(b, d, delta):
    z = b.abs(d)
    return b.where(b.lt(z, delta), b.mul(b.mul(d, d), 0.5), b.mul(b.sub(z, 0.5 * delta), delta))


MseLoss = _pointwise_loss(
    "mse_loss", lambda b, d: b.mul(d, d), lambda g, d: g * d * 2,
    "(input − target)², reduced: input receives the gradient times 2 (input − target), target its negative.",
    "∂L/∂input = g · 2 (input − target) (g / count for 'mean');  ∂L/∂target = −∂L/∂input")
SmoothL1Loss = _pointwise_loss(
    "smooth_l1_loss", _smooth_l1, lambda g, d, beta: g * (d / beta).clamp(-1.0, 1.0),
    "Smooth L1, reduced: input receives the gradient times (input − target) / beta clamped to [−1, 1], target "
    "its negative.",
    "∂L/∂input = g · clamp((input − target) / beta, −1, 1) (g / count for 'mean');  ∂L/∂target = −∂L/∂input")
HuberLoss = _pointwise_loss(
    "huber_loss", _huber, lambda g, d, delta: g * d.clamp(-delta, delta),
    "Huber, reduced: input receives the gradient times input − target clamped to [−delta, delta], target its "
    "negative.",
    "∂L/∂input = g · clamp(input − target, −delta, delta) (g / count for 'mean');  ∂L/∂target = −∂L/∂input")


def _check_pointwise(op: str, input, target) -> None:
    """Check input and target. Shapes that differ but broadcast are allowed with PyTorch's UserWarning
    (an (N, 1) output against an (N,) target silently makes an (N, N) loss); shapes that cannot broadcast raise.
    """
    _tensors(op, input=input, target=target)
    if input.shape != target.shape:
        warnings.warn(f"{op}: Using a target size {shape_str(target.shape)} that is different to the input size "
                      f"{shape_str(input.shape)}. This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=4)
        broadcast_shapes(input.shape, target.shape, op=op)
    if not (input.dtype.is_floating_point or target.dtype.is_floating_point):
        raise RuntimeError(f"{op}: expected floating-point tensors, got input {describe(input)} and target "
                           f"{describe(target)}; convert them with .float()")


def _weighted(op: str, loss, input, weight, reduction, weighted_mean=True):
    """Per-element losses times weight (input's shape), then reduced: 'mean' is sum(w · loss) / sum(w),
    as PyTorch does, except huber's plain mean (weighted_mean=False)."""
    _tensors(op, weight=weight)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{op}: Weights and input must have the same size, got weight of shape "
                         f"{shape_str(weight.shape)} and input of shape {shape_str(input.shape)}")
    loss = loss * weight
    if reduction == "mean" and weighted_mean:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


@autocast_op("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (input - target)^2; weight (input's shape) gives sum(w * e) / sum(w) for 'mean'.

    One node (MseLossBackward0), as in PyTorch; with a weight it is composed of Tensor ops, as PyTorch's
    is. Input and target of different shapes broadcast with a warning, as in PyTorch.
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_pointwise("mse_loss", input, target)
    if weight is None:
        return MseLoss.apply(input, target, reduction)
    return _weighted("mse_loss", (input - target) ** 2, input, weight, reduction)


@autocast_op("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|``; weight (input's shape) gives sum(w * e) / sum(w) for 'mean'.

    Composed of Tensor ops (sub, abs, mean), as PyTorch's is. Input and target of different shapes
    broadcast with a warning, as in PyTorch.
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_pointwise("l1_loss", input, target)
    loss = (input - target).abs()
    return _reduce(loss, reduction) if weight is None else _weighted("l1_loss", loss, input, weight, reduction)


@autocast_op("fp32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """``0.5 d^2 / beta`` where ``|d| < beta``, ``|d| - 0.5 beta`` beyond: quadratic near zero, robust to outliers.

    beta=0 is the L1 loss (composed, as in PyTorch). Shapes that differ broadcast with a warning, as in PyTorch.
    """
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta (got beta={beta})")
    _check_pointwise("smooth_l1_loss", input, target)
    if beta == 0:
        return _reduce((input - target).abs(), reduction)
    return SmoothL1Loss.apply(input, target, reduction, float(beta))


@autocast_op("fp32")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """``0.5 d^2`` where ``|d| < delta``, ``delta * (|d| - 0.5 delta)`` beyond (smooth_l1 scaled by delta).

    Shapes that differ broadcast with a warning, as in PyTorch; weight multiplies before the plain mean.
    """
    reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta (got delta={delta})")
    _check_pointwise("huber_loss", input, target)
    if weight is None:
        return HuberLoss.apply(input, target, reduction, float(delta))
    loss = HuberLoss.apply(input, target, "none", float(delta))
    return _weighted("huber_loss", loss, input, weight, reduction, weighted_mean=False)


# --- classification over class indices: nll_loss, and cross_entropy as nll_loss(log_softmax) ----

class NllLoss(Function):
    """−weight[t] · input[t] for log-probabilities input and class indices t: input gets −g · weight[t] at t.

    Entries whose target is ignore_index count for nothing; 'mean' divides by the summed weight of
    the rest (every entry ignored: the loss is nan, the gradient zero, as in PyTorch). cross_entropy
    is this after log_softmax: two nodes, NllLossBackward0 after LogSoftmaxBackward0, as in PyTorch
    (class weights that require grad take the same loss composed of Tensor ops: see ``_nll``).
    """

    derivative = "∂L/∂input = −g · weight[target] at the target class, 0 elsewhere (g / Σ weight[target] for 'mean')"
    node_names = ("NllLossBackward0", "NllLoss2DBackward0")  # input (C) or (N, C); (N, C, d1, ...)

    @staticmethod
    def forward(ctx, input, target, weight, ignore_index, reduction, op):
        if input.ndim > 2:
            ctx.recorded_as(1)
        b, dim = input.device.backend, 0 if input.ndim == 1 else 1
        index, _, picked_weight, _ = _class_targets(op, input, target, weight, ignore_index, dim)
        loss, denominator = b.neg(b.mul(b.take_along_axis(input.array, index, dim), picked_weight)), None
        if reduction == "none":
            out = b.reshape(loss, target.shape)
        elif reduction == "sum":
            out = b.sum(loss)
        else:
            denominator = b.sum(picked_weight)
            out = b.div(b.sum(loss), denominator)
            # every target ignored: the loss is nan (0 / 0) but the gradient is zero, as in PyTorch
            denominator = b.where(b.eq(denominator, 0), 1.0, denominator)
        ctx.dim, ctx.reduction, ctx.shape = dim, reduction, input.shape
        wrap = input._wrap
        ctx.save_for_backward(target._wrap(index), wrap(picked_weight),
                              None if denominator is None else wrap(denominator))
        return wrap(out)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return (None,) * 6
        index, picked_weight, denominator = ctx.saved_tensors
        dim, shape = ctx.dim, ctx.shape
        g = grad.unsqueeze(dim) if ctx.reduction == "none" else grad if denominator is None else grad / denominator
        b = index.device.backend
        classes = b.reshape(b.arange(0, shape[dim], 1, int64), (shape[dim],) + (1,) * (len(shape) - dim - 1))
        if not grad_state.enabled:  # (not differentiated again: the same formula on arrays, without Tensors between)
            onehot = b.astype(b.eq(index.array, classes), grad.dtype)
            return (grad._wrap(b.mul(onehot, b.neg(b.mul(g.array, picked_weight.array)))),) + (None,) * 5
        return ((index == index._wrap(classes)) * (g * picked_weight).neg(),) + (None,) * 5


def _nll(log_probabilities, target, weight, ignore_index, reduction, op):
    """NllLoss, one node as in PyTorch; where the class weights require grad, the same loss composed of
    Tensor ops, so that they get their gradient (PyTorch refuses such weights)."""
    if weight is None or not weight.requires_grad or not grad_state.enabled:
        return NllLoss.apply(log_probabilities, target, weight, ignore_index, reduction, op)
    dim = 0 if log_probabilities.ndim == 1 else 1
    valid = target != ignore_index
    index = where(valid, target, 0)
    if index.numel():
        _check_class_range(op, log_probabilities.device.backend, index.array, log_probabilities.shape[dim],
                           ignore_index)
    picked_weight = weight.to(log_probabilities.dtype)[index] * valid
    loss = -(log_probabilities.gather(dim, index.unsqueeze(dim)).squeeze(dim) * picked_weight)
    if reduction != "mean":
        return _reduce(loss, reduction)
    denominator = picked_weight.sum()
    empty = denominator == 0  # every target ignored (or weighted 0): nan, with a zero gradient, as NllLoss
    return loss.sum() / where(empty, 1.0, denominator) + where(empty, math.nan, 0.0)


def _class_shape(input, dim: int) -> tuple:
    """The shape (C, 1, ..., 1) that lines a per-class vector up with the class dim of input."""
    return (input.shape[dim],) + (1,) * (input.ndim - dim - 1)


def _class_targets(op, input, target, weight, ignore_index, dim):
    """Backend arrays for the class-index losses: the target index with the class dim kept as size 1
    (ignored entries set to class 0), the 0/1 mask of kept entries, their weights, and the class
    weights shaped to broadcast on the input (or None)."""
    b = input.device.backend
    valid = b.ne(target.array, ignore_index)
    index = b.where(valid, target.array, 0)
    if index.size:
        _check_class_range(op, b, index, input.shape[dim], ignore_index)
    keep = target.shape[:dim] + (1,) + target.shape[dim:]
    index, valid = b.reshape(index, keep), b.astype(b.reshape(valid, keep), input.dtype)
    if weight is None:
        return index, valid, valid, None
    w = weight.array if weight.dtype is input.dtype else b.astype(weight.array, input.dtype)
    return index, valid, b.mul(b.getitem(w, index), valid), b.reshape(w, _class_shape(input, dim))


def _check_class_range(op, b, index, n_classes, ignore_index) -> None:
    def in_range(b, index):
        low, high = (int(v) for v in b.to_numpy(b.stack([b.min(index), b.max(index)], 0)))  # one read from the device
        if low < 0 or high >= n_classes:
            bad = low if low < 0 else high
            raise IndexError(f"{op}: Target {bad} is out of bounds for {n_classes} classes: class indices must be in "
                             f"[0, {n_classes - 1}] (or equal ignore_index={ignore_index})")

    b.check(in_range, index)


def _class_dim(op: str, input) -> int:
    """The class dimension: 0 for an unbatched (C,) input, else 1 ((N, C) or (N, C, d1, ...))."""
    _tensors(op, input=input)
    if input.ndim == 0:
        raise RuntimeError(f"{op}: expected an input of shape (C), (N, C) or (N, C, d1, ...), got a 0-d tensor")
    float_dtype_required(op, input)
    return 0 if input.ndim == 1 else 1


def _check_weight(op: str, weight, n_classes: int) -> None:
    if weight is None:
        return
    _tensors(op, weight=weight)
    if tuple(weight.shape) != (n_classes,):
        raise RuntimeError(f"{op}: weight tensor should be defined either for all {n_classes} classes or no classes "
                           f"but got weight tensor of shape: {shape_str(weight.shape)}")


def _check_class_indices(op: str, input, target, dim: int, probabilities_allowed: bool) -> None:
    expected = input.shape[:dim] + input.shape[dim + 1:]
    if target.dtype is not int64:
        hint = (f", or pass class probabilities as a floating-point target of the input's shape "
                f"{shape_str(input.shape)}" if probabilities_allowed else "")
        raise RuntimeError(f"{op}: expected target dtype to be int64 (Long) class indices, but got {describe(target)}; "
                           f"convert class indices with .long(){hint}")
    if target.shape != expected:
        if dim == 1 and target.ndim and target.shape[0] != input.shape[0]:
            raise ValueError(f"{op}: Expected input batch_size ({input.shape[0]}) to match target batch_size "
                             f"({target.shape[0]}): input of shape {shape_str(input.shape)}, target of shape "
                             f"{shape_str(target.shape)}")
        raise RuntimeError(f"{op}: Expected target size {shape_str(expected)} (one class index per input row) for "
                           f"input of shape {shape_str(input.shape)}, got target of shape {shape_str(target.shape)}")


@autocast_op("fp32")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood: -weight[t] * input[t] for log-probabilities input and class indices target.

    Targets equal to ignore_index count for nothing; 'mean' divides by the summed weight of the rest.
    """
    op = "nll_loss"
    reduction = _reduction(size_average, reduce, reduction)
    check_same_device(op, input, target, weight)
    dim = _class_dim(op, input)
    _tensors(op, target=target)
    _check_class_indices(op, input, target, dim, False)
    _check_weight(op, weight, input.shape[dim])
    return _nll(input, target, weight, ignore_index, reduction, op)


@autocast_op("fp32")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """-log softmax(input)[target]: the loss for classifying logits of shape (N, C) or (N, C, d1, ...).

    target holds class indices (shape (N) or (N, d1, ...), int64) or class probabilities (the
    input's shape). label_smoothing mixes the target with the uniform distribution.
    """
    op = "cross_entropy"
    reduction = _reduction(size_average, reduce, reduction)
    check_same_device(op, input, target, weight)
    dim = _class_dim(op, input)
    _tensors(op, target=target)
    n_classes = input.shape[dim]
    _check_weight(op, weight, n_classes)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"{op}: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target.shape != input.shape:
        _check_class_indices(op, input, target, dim, True)
        log_probabilities = input.log_softmax(dim)
        loss = _nll(log_probabilities, target, weight, ignore_index, reduction, op)
        if not label_smoothing:
            return loss
        return _label_smoothed(loss, log_probabilities, target, weight, ignore_index, reduction, label_smoothing, dim)
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected floating point type for target with class probabilities, got "
                           f"{describe(target)}; class indices (int64) have shape "
                           f"{shape_str(input.shape[:dim] + input.shape[dim + 1:])}")
    if ignore_index >= 0:
        raise RuntimeError(f"{op}: ignore_index is not supported for floating point target (class probabilities)")
    if label_smoothing:
        target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
    if weight is not None:
        target = target * weight.reshape(_class_shape(input, dim))
    loss = -(input.log_softmax(dim) * target).sum(dim)
    if reduction == "mean":  # averaged over the rows, not over the classes (an empty batch gives nan)
        return loss.sum() / (input.numel() // n_classes if n_classes else 0)
    return _reduce(loss, reduction)


def _label_smoothed(nll, logp, target, weight, ignore_index, reduction, smoothing, dim):
    """(1 − ε) · nll + ε / C · (−Σ_classes weight · logp), reduced as nll is: PyTorch's composition, op for op."""
    ignored = target == ignore_index
    smooth = -(logp if weight is None else logp * weight.reshape(_class_shape(logp, dim))).sum(dim)
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "mean":
        if weight is None:
            count = (~ignored).sum()
        else:
            count = weight[target.masked_fill(ignored, 0)].masked_fill(ignored, 0.0).sum()
        smooth = smooth.sum() / count
    elif reduction == "sum":
        smooth = smooth.sum()
    return nll * (1.0 - smoothing) + smooth * (smoothing / logp.shape[dim])


# --- binary classification --------------------------------------------------------------------

class BinaryCrossEntropy(Function):
    """−w (y log x + (1 − y) log(1 − x)), reduced: x receives g · w · (x − y) / (x (1 − x)), y g · w · log((1 − x) / x).

    x is the input (a probability) and y the target. Each log is clamped at −100 (PyTorch's
    convention), and the gradient's divisor is max(x (1 − x), 1e-12): finite even at x = 0 or 1.
    One node with its weight and reduction, as in PyTorch (whose weight gets no gradient; here it does).
    """

    derivative = ("∂L/∂input = g · w · (input − target) / max(input · (1 − input), 1e-12);  "
                  "∂L/∂target = g · w · log((1 − input) / input);  ∂L/∂weight = g · the unweighted loss "
                  "(g / count for 'mean')")

    @staticmethod
    def forward(ctx, input, target, weight, reduction):
        b = input.device.backend
        x, y = input.array, target.array
        log_x, log_1mx = b.maximum(b.log(x), -100.0), b.maximum(b.log1p(b.neg(x)), -100.0)
        loss = b.sub(b.mul(b.sub(y, 1.0), log_1mx), b.mul(y, log_x))
        ctx.save_for_backward(input, target, weight)
        return input._wrap(_reduced(ctx, b, loss if weight is None else b.mul(loss, weight.array), reduction))

    @staticmethod
    def backward(ctx, grad):
        x, y, w = ctx.saved_tensors
        needs, g = ctx.needs_input_grad, _element_grad(grad, ctx)
        gw = g if w is None else g * w
        grad_input = gw * (x - y) / ((1 - x) * x).clamp_min(1e-12) if needs[0] else None
        grad_target = gw * ((1 - x) / x).log() if needs[1] else None
        grad_weight = None
        if needs[2]:
            grad_weight = -g * (y * x.log().clamp_min(-100.0) + (1 - y) * (-x).log1p().clamp_min(-100.0))
        return grad_input, grad_target, grad_weight, None


class BinaryCrossEntropyWithLogits(Function):
    """w ((1 − y) x − c log σ(x)) with c = 1 + (pos_weight − 1) y, reduced: binary cross-entropy on σ(x), stably.

    log σ(x) = min(x, 0) − log(1 + exp(−|x|)) never overflows, so huge logits give finite losses and
    gradients. One node with its weights and reduction, as in PyTorch (whose weight and pos_weight
    get no gradient; here they do).
    """

    derivative = ("∂L/∂input = g · w · (1 − y − c · σ(−input));  ∂L/∂target = −g · w · (input + (pos_weight − 1) "
                  "· log σ(input));  ∂L/∂pos_weight = −g · w · y · log σ(input);  ∂L/∂weight = g · the unweighted "
                  "loss (g / count for 'mean')")

    @staticmethod
    def forward(ctx, input, target, weight, pos_weight, reduction):
        b = input.device.backend
        x, y = input.array, target.array
        log_sigmoid = _logsigmoid(b, x)
        if pos_weight is not None:
            log_sigmoid = b.mul(log_sigmoid, b.add(b.mul(b.sub(pos_weight.array, 1.0), y), 1.0))
        loss = b.sub(b.sub(x, b.mul(y, x)), log_sigmoid)
        ctx.save_for_backward(input, target, weight, pos_weight)
        return input._wrap(_reduced(ctx, b, loss if weight is None else b.mul(loss, weight.array), reduction))

    @staticmethod
    def backward(ctx, grad):
        x, y, w, pw = ctx.saved_tensors
        needs, g = ctx.needs_input_grad, _element_grad(grad, ctx)
        gw = g if w is None else g * w
        c = 1.0 if pw is None else (pw - 1) * y + 1
        log_sigmoid = logsigmoid(x) if needs[1] or needs[2] or needs[3] else None
        grad_input = gw * ((1 - y) - c * (-x).sigmoid()) if needs[0] else None
        grad_target = None
        if needs[1]:
            grad_target = -gw * (x if pw is None else x + (pw - 1) * log_sigmoid)
        grad_weight = g * ((1 - y) * x - c * log_sigmoid) if needs[2] else None
        grad_pos_weight = -gw * y * log_sigmoid if needs[3] else None
        return grad_input, grad_target, grad_weight, grad_pos_weight, None


def _reduced(ctx, backend, loss, reduction: str):
    """A one-node loss's per-element losses reduced in its forward; ctx keeps how, for _element_grad."""
    ctx.reduction, ctx.count = reduction, loss.size
    if reduction == "none":
        return loss
    total = backend.sum(loss)
    return total if reduction == "sum" else backend.div(total, loss.size)


def _element_grad(grad, ctx):
    """The gradient of each element's loss: the incoming one ('none', 'sum'), or it over the count for 'mean'."""
    return grad / ctx.count if ctx.reduction == "mean" else grad


def _check_same_shape(op: str, input, target, message: str) -> None:
    _tensors(op, input=input, target=target)
    if input.shape != target.shape:
        raise ValueError(f"{op}: " + message.format(target=shape_str(target.shape), input=shape_str(input.shape)))
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating-point target (the probability of the positive class), got "
                           f"{describe(target)}; convert it with .float()")


def _check_broadcasts_to(op: str, name: str, tensor, shape) -> None:
    if tensor is None:
        return
    _tensors(op, **{name: tensor})
    if broadcast_shapes(tensor.shape, shape, op=f"{op} ({name})") != shape:
        raise RuntimeError(f"{op}: {name} of shape {shape_str(tensor.shape)} must broadcast to the target's shape "
                           f"{shape_str(shape)}")


@autocast_op("fp32")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-w (y log x + (1 - y) log(1 - x)) for probabilities x in [0, 1] (the output of a sigmoid).

    Prefer binary_cross_entropy_with_logits on the raw scores: it is exact where sigmoid saturates.
    """
    op = "binary_cross_entropy"
    reduction = _reduction(size_average, reduce, reduction)
    check_same_device(op, input, target, weight)
    _check_same_shape(op, input, target, "Using a target size {target} that is different to the input size "
                                         "{input} is deprecated. Please ensure they have the same size.")
    float_dtype_required(op, input)
    _check_broadcasts_to(op, "weight", weight, input.shape)
    if input.numel():
        b = input.device.backend
        low, high = float(b.to_numpy(b.min(input.array))), float(b.to_numpy(b.max(input.array)))
        if low < 0 or high > 1:
            raise RuntimeError(f"{op}: all elements of input should be between 0 and 1, got values in [{low:.4g}, "
                               f"{high:.4g}]; apply .sigmoid() first, or use binary_cross_entropy_with_logits on the "
                               "raw scores")
    return BinaryCrossEntropy.apply(input, target, weight, reduction)


@autocast_op("fp32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy(sigmoid(x), y) computed stably: (1 - y) x - (1 + (pos_weight - 1) y) log sigmoid(x).

    pos_weight (broadcast along the last dimension, one per class) scales the positive examples.
    """
    op = "binary_cross_entropy_with_logits"
    reduction = _reduction(size_average, reduce, reduction)
    _check_same_shape(op, input, target, "Target size {target} must be the same as input size {input}")
    float_dtype_required(op, input)
    _check_broadcasts_to(op, "weight", weight, input.shape)
    _check_broadcasts_to(op, "pos_weight", pos_weight, input.shape)
    check_same_device(op, input, target, weight, pos_weight)
    return BinaryCrossEntropyWithLogits.apply(input, target, weight, pos_weight, reduction)


# --- distributions and embeddings -------------------------------------------------------------

@autocast_op("fp32")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """KL(target || model) pointwise: target * (log target - input), input being log-probabilities.

    log_target=True takes the target as log-probabilities too. 'batchmean' (sum / batch size) is
    the true KL divergence; 'mean' also divides by the number of classes (PyTorch warns about it).
    """
    op = "kl_div"
    _tensors(op, input=input, target=target)
    if size_average is None and reduce is None and reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      stacklevel=2)
    reduction = _reduction(size_average, reduce, reduction, _REDUCTIONS + ("batchmean",))
    if log_target:
        loss = target.exp() * (target - input)
    else:  # xlogy(t, t) - t * input: a zero target contributes zero, not 0 * log 0
        loss = target * (target.masked_fill(target == 0, 1.0).log() - input)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


@autocast_op("fp32")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """max(0, -y (x1 - x2) + margin): x1 should rank above x2 by margin where y = 1, below where y = -1."""
    op = "margin_ranking_loss"
    reduction = _reduction(size_average, reduce, reduction)
    _tensors(op, input1=input1, input2=input2, target=target)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"{op}: All input tensors should have same dimension but got sizes: input1: "
                           f"{shape_str(input1.shape)}, input2: {shape_str(input2.shape)}, target: "
                           f"{shape_str(target.shape)}")
    broadcast_shapes(input1.shape, input2.shape, target.shape, op=op)
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0.0), reduction)


_EPSILON = 1e-12  # keeps the cosine finite for zero vectors (PyTorch's constant)


@autocast_op("fp32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    """1 - cos(x1, x2) where y = 1 (pull together), max(0, cos(x1, x2) - margin) where y = -1 (push apart).

    Inputs are (N, D) with a target of shape (N), or (D) with a 0-d target.
    """
    op = "cosine_embedding_loss"
    reduction = _reduction(size_average, reduce, reduction)
    _tensors(op, input1=input1, input2=input2, target=target)
    if target.ndim > 1:
        raise RuntimeError(f"{op}: 0D or 1D target tensor expected, multi-target not supported (got target of shape "
                           f"{shape_str(target.shape)})")
    if not input1.ndim == input2.ndim == target.ndim + 1:
        raise RuntimeError(f"{op}: {target.ndim}D target tensor expects {target.ndim + 1}D input tensors, but found "
                           f"inputs with sizes {shape_str(input1.shape)} and {shape_str(input2.shape)}.")
    if input1.shape != input2.shape or target.shape != input1.shape[:-1]:
        raise RuntimeError(f"{op}: expected input1 and input2 of the same shape (N, D) and a target of shape (N), got "
                           f"input1 {shape_str(input1.shape)}, input2 {shape_str(input2.shape)}, target "
                           f"{shape_str(target.shape)}")
    dot = (input1 * input2).sum(-1)
    squares = ((input1 * input1).sum(-1) + _EPSILON) * ((input2 * input2).sum(-1) + _EPSILON)
    cos = dot / squares.sqrt()
    loss = where(target == 1, 1 - cos, 0.0) + where(target == -1, (cos - margin).clamp_min(0.0), 0.0)
    return _reduce(loss, reduction)


# --- margin losses ----------------------------------------------------------------------------

@autocast_op("fp32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    """x where y = 1, max(0, margin − x) where y = −1: x is a distance that should be small for similar pairs."""
    op = "hinge_embedding_loss"
    reduction = _reduction(size_average, reduce, reduction)
    _tensors(op, input=input, target=target)
    broadcast_shapes(input.shape, target.shape, op=op)
    loss = where(target != 1, (margin - input).clamp_min(0.0), 0.0) + where(target != -1, input, 0.0)
    return _reduce(loss, reduction)


@autocast_op("fp32")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(−y x)) for targets y = ±1: the logistic loss of a two-class score."""
    op = "soft_margin_loss"
    reduction = _reduction(size_average, reduce, reduction)
    _tensors(op, input=input, target=target)
    broadcast_shapes(input.shape, target.shape, op=op)
    return _reduce(softplus(-input * target), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Binary cross-entropy of every class score (N, C) against 0/1 targets, averaged over the C classes."""
    op = "multilabel_soft_margin_loss"
    reduction = _reduction(size_average, reduce, reduction)
    _tensors(op, input=input, target=target)
    if input.ndim == 0:
        raise RuntimeError(f"{op}: expected an input of shape (C) or (N, C), got a 0-d tensor")
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.sum(input.ndim - 1) / input.shape[-1], reduction)


def _margin_inputs(op, input, target):
    """(N, C) scores and (N,) targets from (C)/() or (N, C)/(N), checked as PyTorch checks them."""
    _tensors(op, input=input, target=target)
    if input.ndim > 2 or (input.ndim == 2 and input.shape[1] == 0) or (input.ndim < 2 and input.numel() == 0):
        raise RuntimeError(f"{op}: Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if target.dtype is not int64:
        raise RuntimeError(f"{op}: expected target of dtype int64 (class indices), got {describe(target)}; convert "
                           "it with .long()")
    return input.reshape(1, -1) if input.ndim < 2 else input


@autocast_op("fp32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """Σ_{j ≠ y} max(0, margin − x[y] + x[j])^p / C: the target's score should beat every other by margin."""
    op = "multi_margin_loss"
    reduction = _reduction(size_average, reduce, reduction)
    if p != 1 and p != 2:
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    scores = _margin_inputs(op, input, target)
    n, c = scores.shape
    if target.numel() != n or (input.ndim == 2 and target.ndim != 1):
        raise RuntimeError(f"{op}: inconsistent target size: got target of shape {shape_str(target.shape)} for "
                           f"input of shape {shape_str(input.shape)}; expected ({n},)")
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"{op}: inconsistent weight size, expected {c} but got {shape_str(weight.shape)}")
    index = target.reshape(n, 1)
    if n:
        backend = target.device.backend
        low, high = (int(backend.to_numpy(f(index.array))) for f in (backend.min, backend.max))
        if low < 0 or high >= c:
            raise IndexError(f"{op}: target out of range: got class {low if low < 0 else high} for {c} classes "
                             f"(class indices must be in [0, {c - 1}])")
    picked = scores.gather(1, index)
    hinge = (margin - picked + scores).clamp_min(0.0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight.gather(0, target.reshape(-1)).reshape(n, 1)
    classes = index._wrap(index.device.backend.reshape(index.device.backend.arange(0, c, 1, int64), (1, c)))
    loss = where(classes == index, 0.0, hinge).sum(1) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


@autocast_op("fp32")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """Σ over target classes j and non-target classes k of max(0, 1 − (x[j] − x[k])) / C.

    target (N, C) lists each sample's classes first and is cut at the first −1.
    """
    op = "multilabel_margin_loss"
    reduction = _reduction(size_average, reduce, reduction)
    check_same_device(op, input, target)
    scores = _margin_inputs(op, input, target)
    n, c = scores.shape
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"{op}: inconsistent target size: {list(target.shape)} for input of size "
                           f"{list(input.shape)}")
    backend = target.device.backend
    labels = backend.reshape(target.array, (n, c))
    if n and (int(backend.to_numpy(backend.min(labels))) < -1 or int(backend.to_numpy(backend.max(labels))) >= c):
        raise IndexError(f"{op}: target values must be class indices in [0, {c - 1}] or -1 (which ends the list), "
                         f"got values outside that range")
    listed = backend.eq(backend.cumsum(backend.astype(backend.eq(labels, -1), int64), 1), 0)  # before the first -1
    counts = backend.zeros((n, c), input.dtype)  # how often each class is listed
    rows = backend.reshape(backend.arange(0, n, 1, int64), (n, 1))
    backend.add_at(counts, (backend.broadcast_to(rows, (n, c)), backend.where(listed, labels, 0)),
                   backend.astype(listed, input.dtype))
    is_target = backend.astype(backend.gt(counts, 0), input.dtype)
    counts, others = scores._wrap(counts), scores._wrap(backend.sub(1.0, is_target))
    pairs = (1 - scores.unsqueeze(2) + scores.unsqueeze(1)).clamp_min(0.0)  # [i, j, k]: 1 − (x[j] − x[k])
    loss = (pairs * counts.unsqueeze(2) * others.unsqueeze(1)).sum((1, 2)) / c
    return _reduce(loss if input.ndim == 2 else loss.reshape(()), reduction)


def _same_ndim_triplet(anchor, positive, negative):
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")


@autocast_op("fp32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    """max(0, d(a, p) − d(a, n) + margin) with the p-norm distance: the anchor nearer its positive than its negative."""
    op = "triplet_margin_loss"
    reduction = _reduction(size_average, reduce, reduction)
    _tensors(op, anchor=anchor, positive=positive, negative=negative)
    _same_ndim_triplet(anchor, positive, negative)
    if anchor.ndim not in (1, 2):
        raise RuntimeError(f"{op}: expected 1-D (D) or 2-D (N, D) inputs, got anchor of shape "
                           f"{shape_str(anchor.shape)}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    return _reduce((margin + d_pos - d_neg).clamp_min(0.0), reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """max(0, d(a, p) − d(a, n) + margin) with any distance function (pairwise_distance by default)."""
    op = "triplet_margin_with_distance_loss"
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    _tensors(op, anchor=anchor, positive=positive, negative=negative)
    _same_ndim_triplet(anchor, positive, negative)
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0.0), reduction)


# --- likelihoods of distributions ---------------------------------------------------------------

def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """½ (log var + (input − target)² / var) (+ ½ log 2π when full): the negative log-likelihood of a Gaussian.

    var matches input (heteroscedastic), lacks its last dim or has a 1 in one dim (homoscedastic), or is
    a float. It is clamped at eps, the clamp passing gradients through unchanged (PyTorch's no-grad clamp).
    """
    op = "gaussian_nll_loss"
    _tensors(op, input=input, target=target)
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = input.new_full(input.shape, float(var))
    else:
        _tensors(op, var=var)
        if var.numel() and bool((var < 0).any()):
            raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and sum(v for n, v in zip(input.shape, var.shape) if n != v) == 1):
            raise ValueError(f"var is of incorrect size: {op} expects var of the input's shape "
                             f"{shape_str(input.shape)}, or that shape without its last dim or with a 1 in one dim; "
                             f"got {shape_str(var.shape)}")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp_min(eps) - var).detach()
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@autocast_op("fp32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    """exp(input) − target · input (log_input) or input − target · log(input + eps): Poisson negative log-likelihood.

    full adds Stirling's approximation of log(target!) where target > 1.
    """
    op = "poisson_nll_loss"
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not a valid value for reduction")
    _tensors(op, input=input, target=target)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + 0.5 * (2 * math.pi * safe).log()
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


# --- connectionist temporal classification ------------------------------------------------------

def _lengths(op, name, lengths, count):
    """input_lengths / target_lengths (a tensor, list or tuple) as host ints, one per sample."""
    if isinstance(lengths, TrackedTensor):
        values = lengths.device.backend.to_numpy(lengths.array).reshape(-1)
    else:
        values = np.asarray(lengths).reshape(-1)
    if values.dtype.kind not in "iu":
        raise RuntimeError(f"{op}: {name} must be integers, got {values.dtype}")
    if len(values) != count:
        raise RuntimeError(f"{op}: expected {name} to hold {count} lengths (one per sample), got {len(values)}")
    return values.astype(np.int64)


def _logaddexp(*terms):
    """log Σ exp(terms), exactly −inf where every term is −inf, with finite gradients everywhere (−inf entries,
    states no alignment reaches, would otherwise turn the gradient into NaN)."""
    top = terms[0]
    for t in terms[1:]:
        top = top.maximum(t)
    top = top.detach()
    unreachable = top == -math.inf
    shift = where(unreachable, 0.0, top)
    total = None
    for t in terms:
        e = (where(unreachable, 0.0, t) - shift).exp()
        total = e if total is None else total + e
    return where(unreachable, -math.inf, total.log() + shift)


def _extended_targets(op, targets, out_lengths, n, classes, blank, unbatched):
    """Each target with a blank before, between and after its labels ((N, 2S + 1), padded with blanks), and
    where a label may follow the label two back directly (it differs from it: no blank needed between)."""
    labels = targets.device.backend.to_numpy(targets.array).astype(np.int64)
    longest = int(out_lengths.max()) if n else 0
    if unbatched:  # one target, padded or not
        labels = labels.reshape(1, -1)
    if labels.ndim == 2:
        if labels.shape[0] != n:
            raise RuntimeError(f"{op}: padded targets must have one row per sample: got targets of shape "
                               f"{shape_str(targets.shape)} for a batch of {n}")
        if labels.shape[1] < longest:
            raise RuntimeError(f"{op}: Expected tensor to have size at least {longest} at dimension 1, but got size "
                               f"{labels.shape[1]} for argument #2 'targets' (a padded (N, S) target)")
        padded = labels[:, :max(longest, 1)]
    else:  # the targets of all samples, one after the other
        if labels.size != out_lengths.sum():
            raise RuntimeError(f"{op}: concatenated targets hold {labels.size} labels but target_lengths sum to "
                               f"{out_lengths.sum()}")
        padded = np.zeros((n, max(longest, 1)), dtype=np.int64)
        for i, (end, length) in enumerate(zip(np.cumsum(out_lengths), out_lengths)):
            padded[i, :length] = labels[end - length:end]
    padded = np.where(np.arange(padded.shape[1]) < out_lengths[:, None], padded, blank)
    if ((padded < 0) | (padded >= classes)).any():
        raise IndexError(f"{op}: target labels must be in [0, {classes - 1}]")
    extended = np.full((n, 2 * padded.shape[1] + 1), blank, dtype=np.int64)
    extended[:, 1::2] = padded
    skip = np.zeros(extended.shape, dtype=bool)
    skip[:, 2:] = (extended[:, 2:] != blank) & (extended[:, 2:] != extended[:, :-2])
    return extended, skip


def _forward_variables(lp, extended, skip, in_lengths):
    """α[n, s] = log p(the first s symbols of the extended target | the first T_n steps): each step an alignment
    stays on its symbol, moves to the next, or skips a blank; a sample's α stops changing after its T_n steps."""
    steps, n, width = lp.shape[0], lp.shape[1], extended.shape[1]
    emit = lp.gather(2, extended.unsqueeze(0).expand(steps, n, width))  # (T, N, 2S + 1)
    none = lp.new_full((n, 1), -math.inf)
    starts = lp.new_tensor(np.arange(width) < 2, dtype=bool_)  # a blank or the first label
    alpha = where(starts, emit[0], -math.inf)
    running = lp.new_tensor(in_lengths).unsqueeze(1)
    for t in range(1, steps):
        step = cat((none, alpha[:, :-1]), 1)
        jump = where(skip, cat((none, none, alpha[:, :-2]), 1), -math.inf)
        alpha = where(running > t, _logaddexp(alpha, step, jump) + emit[t], alpha)
    return alpha


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean", zero_infinity=False):
    """−log p(target | input) summed over every alignment of the target to the T input steps (Graves et al.).

    log_probs (T, N, C) (or (T, C)) are log-softmax outputs; targets are (N, S) padded or the N targets
    concatenated. The forward recursion over the extended target (a blank around every label) runs on
    Tensor operations, so gradients of any order follow. 'mean' divides each loss by its target length.
    The gradient is the true one with respect to log_probs (PyTorch's adds exp(log_probs), which its
    log_softmax backward then cancels); an impossible alignment has loss inf and a zero gradient where
    PyTorch's is NaN (zero_infinity=True also sets the loss to 0).
    """
    op = "ctc_loss"
    _tensors(op, log_probs=log_probs, targets=targets)
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    if log_probs.ndim not in (2, 3):
        raise RuntimeError(f"{op}: expected log_probs of shape (T, N, C) or (T, C), got {describe(log_probs)}")
    lp = log_probs.unsqueeze(1) if unbatched else log_probs
    steps, n, classes = lp.shape
    if not 0 <= blank < classes:
        raise RuntimeError(f"{op}: blank must be in label range (blank={blank}, {classes} classes)")
    in_lengths = _lengths(op, "input_lengths", input_lengths, n)
    out_lengths = _lengths(op, "target_lengths", target_lengths, n)
    if (in_lengths > steps).any() or (in_lengths < 0).any():
        raise RuntimeError(f"{op}: Expected input_lengths to have value at most {steps}, but got value "
                           f"{in_lengths.max() if (in_lengths > steps).any() else in_lengths.min()}")
    extended, skip = _extended_targets(op, targets, out_lengths, n, classes, blank, unbatched)
    alpha = _forward_variables(lp, targets.new_tensor(extended), lp.new_tensor(skip, dtype=bool_), in_lengths)
    last = targets.new_tensor(2 * out_lengths).unsqueeze(1)  # the final blank; the last label is just before it
    final = alpha.gather(1, last).squeeze(1)
    has_label = targets.new_tensor(out_lengths > 0, dtype=bool_)
    before = where(has_label, alpha.gather(1, (last - 1).clamp_min(0)).squeeze(1), -math.inf)
    loss = -_logaddexp(final, before)
    no_input = lp.new_tensor(np.where(out_lengths == 0, 0.0, math.inf))  # T = 0: only an empty target fits
    loss = where(lp.new_tensor(in_lengths > 0, dtype=bool_), loss, no_input)
    if zero_infinity:
        loss = where(loss == math.inf, 0.0, loss)
    if reduction == "mean":
        return (loss / lp.new_tensor(np.maximum(out_lengths, 1))).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss

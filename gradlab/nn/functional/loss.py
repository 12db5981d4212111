"""Loss functions: how far predictions are from targets, as one number to minimise (or one per sample).

Each takes PyTorch's arguments and ``reduction``: 'mean' averages the per-element losses, 'sum'
adds them, 'none' returns them as they are. Losses built on logarithms work from logits
(log_softmax, log-sigmoid) so that huge scores give finite losses and finite gradients.
Cross-entropy over class indices is one fused Function: log-softmax and the pick of the target's
log-probability in one forward, and the closed-form gradient ``(softmax - onehot) * scale`` back.
"""

from __future__ import annotations

import warnings

from ...autograd.function import Function
from ...autograd.grad_mode import grad_state
from ...dtypes import int64
from ...ops._common import (TrackedTensor, binary_operands, broadcast_shapes, describe, float_dtype_required,
                            shape_str)
from ...ops.elementwise import where
from .activation import logsigmoid

__all__ = [
    "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "cross_entropy", "nll_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss", "cosine_embedding_loss",
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
    """A Function for ``loss = f(input - target, *params)`` element by element (broadcasting).

    ``compute(backend, diff_array, *params)`` makes the loss; ``gradient(grad, diff, *params)``
    gives d loss / d input from Tensor operations (the target receives its negative). ``doc`` and
    ``derivative`` are the class's docstring and rule: that gradient in words and in math.
    """

    class PointwiseLoss(Function):
        @staticmethod
        def forward(ctx, input, target, *params):
            a, b, _ = binary_operands(op, input, target)  # PyTorch's type promotion and device check
            ctx.save_for_backward(input, target)
            ctx.params = params
            backend = input.device.backend
            return input._wrap(compute(backend, backend.sub(a, b), *params))

        @staticmethod
        def backward(ctx, grad):
            input, target = ctx.saved_tensors
            g = gradient(grad, input - target, *ctx.params)
            return ((g if ctx.needs_input_grad[0] else None,
                     -g if ctx.needs_input_grad[1] else None)
                    + (None,) * len(ctx.params))

    PointwiseLoss.__doc__, PointwiseLoss.derivative = doc, derivative
    PointwiseLoss.__name__ = PointwiseLoss.__qualname__ = "".join(p.capitalize() for p in op.split("_"))
    PointwiseLoss._node_type.__name__ = PointwiseLoss.__name__ + "Backward"
    return PointwiseLoss


def _smooth_l1(b, d, beta):
    z = b.abs(d)
    return b.where(b.lt(z, beta), b.mul(b.mul(d, d), 0.5 / beta), b.sub(z, 0.5 * beta))


def _huber(b, d, delta):
    z = b.abs(d)
    return b.where(b.lt(z, delta), b.mul(b.mul(d, d), 0.5), b.mul(b.sub(z, 0.5 * delta), delta))


_MSE = _pointwise_loss(
    "mse_loss", lambda b, d: b.mul(d, d), lambda g, d: g * d * 2,
    "(input − target)²: input receives the gradient times 2 (input − target), target its negative.",
    "∂L/∂input = g · 2 (input − target);  ∂L/∂target = −g · 2 (input − target)")
_L1 = _pointwise_loss(
    "l1_loss", lambda b, d: b.abs(d), lambda g, d: g * d.sign(),
    "|input − target|: input receives the gradient times sign(input − target), target its negative.",
    "∂L/∂input = g · sign(input − target);  ∂L/∂target = −g · sign(input − target)")
_SmoothL1 = _pointwise_loss(
    "smooth_l1_loss", _smooth_l1, lambda g, d, beta: g * (d / beta).clamp(-1.0, 1.0),
    "Smooth L1: input receives the gradient times (input − target) / beta clamped to [−1, 1], target its negative.",
    "∂L/∂input = g · clamp((input − target) / beta, −1, 1);  ∂L/∂target = −g · clamp((input − target) / beta, −1, 1)")
_Huber = _pointwise_loss(
    "huber_loss", _huber, lambda g, d, delta: g * d.clamp(-delta, delta),
    "Huber: input receives the gradient times input − target clamped to [−delta, delta], target its negative.",
    "∂L/∂input = g · clamp(input − target, −delta, delta);  ∂L/∂target = −g · clamp(input − target, −delta, delta)")


def _pointwise(op: str, function, input, target, reduction, weight, *params, weighted_mean=True):
    """Check and broadcast input/target, apply the loss, then weight and reduce.

    Shapes that differ but broadcast are allowed with PyTorch's UserWarning (an (N, 1) output
    against an (N,) target silently makes an (N, N) loss); shapes that cannot broadcast raise.
    """
    _tensors(op, input=input, target=target)
    if input.shape != target.shape:
        warnings.warn(f"{op}: Using a target size {shape_str(target.shape)} that is different to the input size "
                      f"{shape_str(input.shape)}. This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", stacklevel=3)
        broadcast_shapes(input.shape, target.shape, op=op)
    if not (input.dtype.is_floating_point or target.dtype.is_floating_point):
        raise RuntimeError(f"{op}: expected floating-point tensors, got input {describe(input)} and target "
                           f"{describe(target)}; convert them with .float()")
    loss = function.apply(input, target, *params)
    if weight is None:
        return _reduce(loss, reduction)
    _tensors(op, weight=weight)
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{op}: Weights and input must have the same size, got weight of shape "
                         f"{shape_str(weight.shape)} and input of shape {shape_str(input.shape)}")
    loss = loss * weight
    if reduction == "mean" and weighted_mean:  # PyTorch: sum(w * loss) / sum(w), except huber's plain mean
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (input - target)^2; weight (input's shape) gives sum(w * e) / sum(w) for 'mean'.

    Input and target of different shapes broadcast with a warning, as in PyTorch.
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _pointwise("mse_loss", _MSE, input, target, reduction, weight)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error |input - target|; weight (input's shape) gives sum(w * e) / sum(w) for 'mean'.

    Input and target of different shapes broadcast with a warning, as in PyTorch.
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _pointwise("l1_loss", _L1, input, target, reduction, weight)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta beyond: quadratic near zero, robust to outliers.

    beta=0 is the L1 loss. Shapes that differ broadcast with a warning, as in PyTorch.
    """
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta (got beta={beta})")
    if beta == 0:
        return _pointwise("smooth_l1_loss", _L1, input, target, reduction, None)
    return _pointwise("smooth_l1_loss", _SmoothL1, input, target, reduction, None, float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 d^2 where |d| < delta, delta * (|d| - 0.5 delta) beyond (smooth_l1 scaled by delta).

    Shapes that differ broadcast with a warning, as in PyTorch; weight multiplies before the plain mean.
    """
    reduction = _reduction(None, None, reduction)
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta (got delta={delta})")
    return _pointwise("huber_loss", _Huber, input, target, reduction, weight, float(delta), weighted_mean=False)


# --- classification over class indices: nll_loss and cross_entropy (fused) ---------------------

class ClassIndexLoss(Function):
    """Cross-entropy (nll) over class indices: from logits, input gets softmax minus the weighted one-hot target.

    loss_i = -(a_i * logp[i, t_i] + c_i * sum_k w_k logp[i, k]), logp = log_softmax(input) or input.
    a_i = (1 - label_smoothing) * w[t_i] and c_i = label_smoothing / C, both 0 where t_i is
    ignore_index. From logits the gradient is softmax * (a_i + c_i sum(w)) - a_i onehot(t_i) - c_i w.
    """

    derivative = ("∂L/∂input = g · (softmax(input) · (a + c · Σw) − a · onehot(target) − c · w) from logits, "
                  "−g · a · onehot(target) from log-probabilities (g / Σ w[target] for 'mean')")

    @staticmethod
    def forward(ctx, input, target, weight, ignore_index, smoothing, reduction, from_logits, op):
        b, dim = input.device.backend, 0 if input.ndim == 1 else 1
        n_classes = input.shape[dim]
        logp = b.log_softmax(input.array, dim) if from_logits else input.array
        index, valid, picked_weight, weight = _class_targets(op, input, target, weight, ignore_index, dim)
        a = b.mul(picked_weight, 1.0 - smoothing) if smoothing else picked_weight
        loss = b.mul(b.take_along_axis(logp, index, dim), a)
        c = None
        if smoothing:
            c = b.mul(valid, smoothing / n_classes)
            total = b.sum(logp if weight is None else b.mul(logp, weight), (dim,), True)
            loss = b.add(loss, b.mul(total, c))
        loss, denominator = b.neg(loss), None
        if reduction == "none":
            out = b.reshape(loss, target.shape)
        elif reduction == "sum":
            out = b.sum(loss)
        else:
            denominator = b.sum(picked_weight)
            out = b.div(b.sum(loss), denominator)
            # every target ignored: the loss is nan (0 / 0) but the gradient is zero, as in PyTorch
            denominator = b.where(b.eq(denominator, 0), 1.0, denominator)
        ctx.dim, ctx.n_classes, ctx.reduction, ctx.from_logits = dim, n_classes, reduction, from_logits
        wrap = input._wrap
        ctx.save_for_backward(input, None if weight is None else wrap(weight), wrap(logp), target._wrap(index), wrap(a),
                              None if c is None else wrap(c), None if denominator is None else wrap(denominator))
        return wrap(out)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[0]:
            return (None,) * 8
        input, weight, logp, index, a, c, denominator = ctx.saved_tensors
        dim = ctx.dim
        g = grad.unsqueeze(dim) if ctx.reduction == "none" else grad if denominator is None else grad / denominator
        backend = index.device.backend
        classes = index._wrap(backend.reshape(backend.arange(0, ctx.n_classes, 1, int64), _class_shape(input, dim)))
        onehot, ga = index == classes, g * a
        if not ctx.from_logits:
            return (onehot * -ga,) + (None,) * 7
        # under create_graph the softmax must come from input itself, so that it can be differentiated again
        p = input.softmax(dim) if grad_state.enabled else logp.exp()
        if c is None:
            return ((p - onehot) * ga,) + (None,) * 7
        gc = g * c
        total, smoothed = (ctx.n_classes, gc) if weight is None else (weight.sum(), gc * weight)
        return (p * (ga + gc * total) - onehot * ga - smoothed,) + (None,) * 7


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
    low, high = int(b.to_numpy(b.min(index))), int(b.to_numpy(b.max(index)))
    if low < 0 or high >= n_classes:
        bad = low if low < 0 else high
        raise IndexError(f"{op}: Target {bad} is out of bounds for {n_classes} classes: class indices must be in "
                         f"[0, {n_classes - 1}] (or equal ignore_index={ignore_index})")


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


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log-likelihood: -weight[t] * input[t] for log-probabilities input and class indices target.

    Targets equal to ignore_index count for nothing; 'mean' divides by the summed weight of the rest.
    """
    op = "nll_loss"
    reduction = _reduction(size_average, reduce, reduction)
    dim = _class_dim(op, input)
    _tensors(op, target=target)
    _check_class_indices(op, input, target, dim, False)
    _check_weight(op, weight, input.shape[dim])
    return ClassIndexLoss.apply(input, target, weight, ignore_index, 0.0, reduction, False, op)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """-log softmax(input)[target]: the loss for classifying logits of shape (N, C) or (N, C, d1, ...).

    target holds class indices (shape (N) or (N, d1, ...), int64) or class probabilities (the
    input's shape). label_smoothing mixes the target with the uniform distribution.
    """
    op = "cross_entropy"
    reduction = _reduction(size_average, reduce, reduction)
    dim = _class_dim(op, input)
    _tensors(op, target=target)
    n_classes = input.shape[dim]
    _check_weight(op, weight, n_classes)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"{op}: label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    if target.shape != input.shape:
        _check_class_indices(op, input, target, dim, True)
        return ClassIndexLoss.apply(input, target, weight, ignore_index, float(label_smoothing), reduction, True, op)
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


# --- binary classification --------------------------------------------------------------------

class BinaryCrossEntropy(Function):
    """-(y log x + (1 - y) log(1 - x)): x receives g · (x − y) / (x (1 − x)), y receives g · log((1 − x) / x).

    x is the input (a probability) and y the target. Each log is clamped at -100 (PyTorch's
    convention), and the gradient's divisor is max(x (1 - x), 1e-12): finite even at x = 0 or 1.
    """

    derivative = ("∂L/∂input = g · (input − target) / max(input · (1 − input), 1e-12);  "
                  "∂L/∂target = g · log((1 − input) / input)")

    @staticmethod
    def forward(ctx, input, target):
        b = input.device.backend
        x, y = input.array, target.array
        log_x, log_1mx = b.maximum(b.log(x), -100.0), b.maximum(b.log1p(b.neg(x)), -100.0)
        ctx.save_for_backward(input, target)
        return input._wrap(b.sub(b.mul(b.sub(y, 1.0), log_1mx), b.mul(y, log_x)))

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        grad_input = grad * (x - y) / ((1 - x) * x).clamp_min(1e-12) if ctx.needs_input_grad[0] else None
        grad_target = grad * ((1 - x) / x).log() if ctx.needs_input_grad[1] else None
        return grad_input, grad_target


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


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-w (y log x + (1 - y) log(1 - x)) for probabilities x in [0, 1] (the output of a sigmoid).

    Prefer binary_cross_entropy_with_logits on the raw scores: it is exact where sigmoid saturates.
    """
    op = "binary_cross_entropy"
    reduction = _reduction(size_average, reduce, reduction)
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
    loss = BinaryCrossEntropy.apply(input, target)
    return _reduce(loss if weight is None else loss * weight, reduction)


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
    log_sigmoid = logsigmoid(input)  # min(x, 0) - log1p(exp(-|x|)): finite for any x
    if pos_weight is not None:
        log_sigmoid = log_sigmoid * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sigmoid
    return _reduce(loss if weight is None else loss * weight, reduction)


# --- distributions and embeddings -------------------------------------------------------------

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

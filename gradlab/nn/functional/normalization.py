"""Normalisation: batch_norm, layer_norm, group_norm, rms_norm and normalize.

Batch, layer and group norm are one computation over different axes: subtract the mean, divide
by the standard deviation, then scale and shift. ``Normalize`` does it in a handful of backend
calls, and its backward is the closed form dx = (1/σ)(gγ − mean(gγ) − x̂·mean(gγ·x̂)) along the
normalised axes. Layer norm (the trailing axes, weight and bias as they are) is the backend's fused
``layer_norm`` kernel, forward and backward. Batch norm in evaluation mode uses fixed statistics, so it is a plain affine map.
"""

from __future__ import annotations

from ...autograd.broadcasting import summed_dims, sum_to_shape
from ...autograd.function import Function
from ...autograd.grad_mode import grad_state
from ...dtypes import float16, float32, float64
from ...ops._common import check_same_device, describe, float_dtype_required, shape_str

__all__ = ["batch_norm", "instance_norm", "layer_norm", "group_norm", "rms_norm", "normalize", "local_response_norm"]


def _count(shape, axes) -> int:
    n = 1
    for axis in axes:
        n *= shape[axis]
    return n


def _standardize(x, axes, eps):
    """x̂ and 1/σ from Tensor operations: backward uses them when its own graph is recorded."""
    centered = x - x.mean(axes, keepdim=True)
    inv_std = ((centered * centered).mean(axes, keepdim=True) + eps).rsqrt()
    return centered * inv_std, inv_std


def _blend(running, mean, var, count):
    """running ← (1 − momentum)·running + momentum·batch; the variance is the unbiased one, as in PyTorch."""
    running_mean, running_var, momentum = running
    backend = running_mean.device.backend
    for buffer, batch in ((running_mean, mean), (running_var, backend.mul(var, count / (count - 1)))):
        blended = backend.add(backend.mul(buffer.array, 1.0 - momentum),
                              backend.mul(backend.reshape(batch, buffer.shape), momentum))
        buffer._write("batch_norm", buffer._wrap(blended))


_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _total(backend, arrays, axes, shape):
    """Σ over ``axes`` of the product of one or two arrays, reshaped to ``shape``.

    One einsum reads the operands once and writes only the (small) result: no full-size temporary
    for the product, and numpy's einsum also sums faster than its own ``sum`` along these axes.
    """
    dims = _LETTERS[:arrays[0].ndim]
    kept = "".join(d for i, d in enumerate(dims) if i not in axes)
    return backend.reshape(backend.einsum(",".join([dims] * len(arrays)) + "->" + kept, *arrays), shape)


def _in_float32(backend, a):
    """float16 data as float32 (the statistics of float16 inputs are computed in float32, as in PyTorch)."""
    return backend.astype(a, float32) if backend.dtype_of(a) is float16 else a


def _as(backend, a, dtype):
    return a if backend.dtype_of(a) is dtype else backend.astype(a, dtype)


class Normalize(Function):
    """Normalize, scale, shift: bias gets Σ g, weight Σ g · x̂, x gets g · weight minus its mean and x̂-part, over σ.

    The output is x̂ · weight + bias with x̂ = (x − mean) / σ, σ = sqrt(var + eps), the statistics
    x's own over ``axes``. ``param_shape`` is how weight
    and bias broadcast against x (None: as they are); ``running`` = (running_mean, running_var,
    momentum) also blends the batch statistics into them. Forward makes two full-size arrays:
    x − mean, scaled in place into x̂ (saved for backward), and the output x̂·weight, the bias
    added in place. Sums are einsums (no temporaries for squares).
    """

    derivative = ("∂L/∂x = (ĝ − mean(ĝ) − x̂ · mean(ĝ · x̂)) / σ with ĝ = g · weight, means over the normalised axes;  "
                  "∂L/∂weight = Σ g · x̂;  ∂L/∂bias = Σ g (sums over the dims weight and bias broadcast along)")
    # PyTorch's names: layer norm (weight and bias as they are); batch and instance norm (per-channel weight)
    node_names = ("NativeLayerNormBackward0", "NativeBatchNormBackward0")

    @staticmethod
    def forward(ctx, x, weight, bias, axes, eps, param_shape, running):
        float_dtype_required("normalization", x)
        if param_shape is not None:
            ctx.recorded_as(1)
        b = x.device.backend
        ctx.axes, ctx.eps, ctx.param_shape = axes, eps, param_shape
        ctx.bias_shape = None if bias is None else bias.shape
        ctx.layer_norm = param_shape is None and running is None and axes == _trailing_axes(x.ndim, len(axes))
        if ctx.layer_norm:  # the backend's fused kernel: statistics over the trailing axes, weight/bias as they are
            out, saved = b.layer_norm(x.array, None if weight is None else weight.array,
                                      None if bias is None else bias.array, len(axes), eps)
            ctx.save_for_backward(x, weight, *(x._wrap(a) for a in saved))
            return x._wrap(out)
        stat_shape = tuple(1 if i in axes else n for i, n in enumerate(x.shape))
        count = _count(x.shape, axes)
        data = _in_float32(b, x.array)
        mean = _total(b, (data,), axes, stat_shape)
        b.imul(mean, 1.0 / count)
        x_hat = b.sub(data, mean)
        var = _total(b, (x_hat, x_hat), axes, stat_shape)
        b.imul(var, 1.0 / count)
        if running is not None:
            _blend(running, mean, var, count)
        b.iadd(var, eps)
        inv_std = b.div(1.0, b.sqrt(var))
        b.imul(x_hat, inv_std)
        w, bb = (None if t is None else t.array if param_shape is None else b.reshape(t.array, param_shape)
                 for t in (weight, bias))
        if w is not None:
            out = b.mul(x_hat, w)
            if bb is not None:
                b.iadd(out, bb)
        else:
            out = b.add(x_hat, 0.0 if bb is None else bb)  # never the saved x̂ itself
        ctx.save_for_backward(x, weight, x._wrap(x_hat), x._wrap(inv_std))
        return x._wrap(_as(b, out, x.dtype))

    @staticmethod
    def backward(ctx, grad):
        x, weight, *saved = ctx.saved_tensors
        if not grad_state.enabled:
            if ctx.layer_norm:
                return _layer_norm_backward(ctx, grad, x, weight, saved) + (None,) * 4
            return _normalize_backward(ctx, grad, weight, *saved) + (None,) * 4
        axes, param_shape = ctx.axes, ctx.param_shape
        x_hat, inv_std = _standardize(x, axes, ctx.eps)  # create_graph: the statistics as functions of x
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[1]:
            grad_w = _param_grad(grad * x_hat, weight.shape, param_shape)
        if ctx.needs_input_grad[2]:
            grad_b = _param_grad(grad, ctx.bias_shape, param_shape)
        if ctx.needs_input_grad[0]:
            gy = grad if weight is None else grad * (weight if param_shape is None else weight.reshape(param_shape))
            grad_x = (gy - gy.mean(axes, keepdim=True) - x_hat * (gy * x_hat).mean(axes, keepdim=True)) * inv_std
        return grad_x, grad_w, grad_b, None, None, None, None


def _trailing_axes(ndim, n):
    return tuple(range(ndim - n, ndim))


def _layer_norm_backward(ctx, grad, x, weight, saved):
    """The layer-norm case's backward: the backend's fused kernel, given what its forward saved."""
    grads = grad.device.backend.layer_norm_backward(grad.array, x.array, None if weight is None else weight.array,
                                                    tuple(s.array for s in saved), len(ctx.axes),
                                                    ctx.needs_input_grad[:3])
    return tuple(None if a is None else grad._wrap(a) for a in grads)


def _normalize_backward(ctx, grad, weight, x_hat, inv_std):
    """Normalize's backward on arrays (no graph being recorded): the same closed form, with two
    full-size temporaries instead of eight. dx = (g·w − mean(g·w) − x̂·mean(g·w·x̂)) / σ."""
    b, xh = grad.device.backend, x_hat.array
    g = _in_float32(b, grad.array)
    axes, param_shape, needs = ctx.axes, ctx.param_shape, ctx.needs_input_grad
    grad_w = grad_b = grad_x = None
    if needs[1] or needs[2]:
        broadcast = summed_dims(g.shape, param_shape or (weight.shape if weight is not None else ctx.bias_shape))
        if needs[1]:
            grad_w = grad._wrap(_as(b, _total(b, (g, xh), broadcast, weight.shape), weight.dtype))
        if needs[2]:
            grad_b = grad._wrap(_as(b, _total(b, (g,), broadcast, ctx.bias_shape), grad.dtype))
    if needs[0]:
        stat_shape = tuple(1 if i in axes else n for i, n in enumerate(g.shape))
        scale = 1.0 / _count(g.shape, axes)
        gy = g if weight is None else b.mul(g, weight.array if param_shape is None
                                            else b.reshape(weight.array, param_shape))
        mean_gy = _total(b, (gy,), axes, stat_shape)
        mean_gy_xh = _total(b, (gy, xh), axes, stat_shape)
        b.imul(mean_gy, scale)
        b.imul(mean_gy_xh, scale)
        shift = b.mul(xh, mean_gy_xh)
        b.iadd(shift, mean_gy)
        if gy is g:  # g is not ours to overwrite
            gy = b.sub(g, shift)
        else:
            b.isub(gy, shift)
        b.imul(gy, inv_std.array)
        grad_x = grad._wrap(_as(b, gy, grad.dtype))
    return grad_x, grad_w, grad_b


def _param_grad(grad, shape, param_shape):
    """Sum a gradient over the dims a weight (or bias) was broadcast along, back to its own shape."""
    if param_shape is None:
        return sum_to_shape(grad, shape)
    return sum_to_shape(grad, param_shape).reshape(shape)


def _check_size(op, name, tensor, size):
    if tensor is not None and tensor.numel() != size:
        raise RuntimeError(f"{op}: {name} should contain {size} elements (one per channel), not {tensor.numel()} "
                           f"({describe(tensor)})")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-5):
    """Normalise each channel (dim 1) over the batch and any spatial dims, then scale and shift it.

    In training the batch's statistics are used and blended into running_mean/running_var (if
    given) with ``momentum``; otherwise the running statistics are used as they are.
    """
    check_same_device("batch_norm", input, running_mean, running_var, weight, bias)
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an input with a channel dimension (N, C, ...), got {describe(input)}")
    channels = input.shape[1]
    for name, tensor in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                         ("running_var", running_var)):
        _check_size("batch_norm", name, tensor, channels)
    param_shape = (channels,) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // channels if channels else 0
        if count == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
        running = None
        if running_mean is not None and running_var is not None:
            running = (running_mean, running_var, momentum)
        axes = (0,) + tuple(range(2, input.ndim))
        return Normalize.apply(input, weight, bias, axes, eps, param_shape, running)
    if running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var must be defined in evaluation mode "
                           "(training=False); pass them, or use training=True to normalise with the batch's statistics")
    scale = (running_var + eps).rsqrt()  # fixed statistics: y = x · scale + shift, one channel at a time
    if weight is not None:
        scale = scale * weight
    shift = -running_mean * scale
    if bias is not None:
        shift = shift + bias
    return input * scale.reshape(param_shape) + shift.reshape(param_shape)


def _instance_norm(who, input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps):
    check_same_device(who, input, running_mean, running_var, weight, bias)
    if input.ndim < 3:
        raise ValueError(f"{who}: expected an input (N, C, *spatial) with at least one spatial dim, got "
                         f"{describe(input)}")
    channels = input.shape[1]
    for name, tensor in (("weight", weight), ("bias", bias), ("running_mean", running_mean),
                         ("running_var", running_var)):
        _check_size(who, name, tensor, channels)
    param_shape = (channels,) + (1,) * (input.ndim - 2)
    if not use_input_stats:  # evaluation with tracked statistics: batch norm's fixed affine map
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    spatial = _count(input.shape, range(2, input.ndim))
    if spatial == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {list(input.shape)}")
    axes = tuple(range(2, input.ndim))
    if running_mean is not None and running_var is not None:
        _blend_instance_stats(input, axes, spatial, running_mean, running_var, momentum)
    return Normalize.apply(input, weight, bias, axes, eps, param_shape, None)


def _blend_instance_stats(input, axes, spatial, running_mean, running_var, momentum):
    """running ← (1 − momentum)·running + momentum·(the per-sample statistics averaged over the batch), as
    PyTorch's instance norm does it (its batch norm over (1, N·C, …) averaged back over N); unbiased var."""
    b = input.device.backend
    data = _in_float32(b, input.array)
    mean = b.mul(b.sum(data, axes, True), 1.0 / spatial)
    centered = b.sub(data, mean)
    var = b.mul(b.sum(b.mul(centered, centered), axes, False), 1.0 / (spatial - 1))
    for buffer, batch in ((running_mean, b.reshape(mean, input.shape[:2])), (running_var, var)):
        per_channel = b.mul(b.sum(batch, (0,), False), 1.0 / input.shape[0])
        blended = b.add(b.mul(buffer.array, 1.0 - momentum), b.mul(_as(b, per_channel, buffer.dtype), momentum))
        buffer._write("instance_norm", buffer._wrap(blended))


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalise each channel of each sample over its spatial dims ``(N, C, *spatial)``, then scale and shift.

    With running statistics given, the batch's are blended into them; use_input_stats=False normalises
    with the running statistics instead.
    """
    return _instance_norm("instance_norm", input, running_mean, running_var, weight, bias, use_input_stats, momentum,
                          eps)


def _normalized_axes(who, input, normalized_shape, *params):
    """The trailing axes that normalized_shape names, after checking input and parameter shapes."""
    check_same_device(who, input, *params)
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"{who}: Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size {list(input.shape)}")
    for name, param in zip(("weight", "bias"), params):
        if param is not None and tuple(param.shape) != shape:
            raise RuntimeError(f"{who}: Expected {name} to be of same shape as normalized_shape, but got {name} of "
                               f"shape {list(param.shape)} and normalized_shape = {list(shape)}")
    return tuple(range(input.ndim - k, input.ndim))


def _layer_norm(who, input, normalized_shape, weight, bias, eps):
    axes = _normalized_axes(who, input, normalized_shape, weight, bias)
    return Normalize.apply(input, weight, bias, axes, eps, None, None)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last len(normalized_shape) dims of each sample, then scale and shift elementwise."""
    return _layer_norm("layer_norm", input, normalized_shape, weight, bias, eps)


def _group_norm(who, input, num_groups, weight, bias, eps):
    check_same_device(who, input, weight, bias)
    if input.ndim < 2:
        raise RuntimeError(f"{who}: Expected at least 2 dimensions for input tensor but received {input.ndim}")
    n, channels = input.shape[:2]
    if channels % num_groups:
        raise RuntimeError(f"{who}: Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(input.shape)} and num_groups={num_groups}")
    for name, param in (("weight", weight), ("bias", bias)):
        if param is not None and param.numel() != channels:
            raise RuntimeError(f"{who}: Expected {name} to be a vector of size equal to the number of channels in "
                               f"input, but got {name} of shape {list(param.shape)} and input of shape "
                               f"{list(input.shape)}")
    per_group = channels // num_groups
    if _count(input.shape, range(2, input.ndim)) * n * per_group == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                         f"{[n * per_group, num_groups] + list(input.shape[2:])}")
    grouped = input.reshape(n, num_groups, per_group, -1)  # each group's channels and positions share statistics
    out = GroupNormalize.apply(grouped, weight, bias, (2, 3), eps, (num_groups, per_group, 1), None)
    return out.reshape(input.shape)


class GroupNormalize(Normalize):
    """Normalize over each group of channels (input shaped (N, groups, channels per group, positions)),
    named as PyTorch's group norm."""

    node_names = ("NativeGroupNormBackward0",)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Split the channels into num_groups groups and normalise each group of each sample; per-channel affine."""
    return _group_norm("group_norm", input, num_groups, weight, bias, eps)


def _rms_norm(who, input, normalized_shape, weight, eps):
    axes = _normalized_axes(who, input, normalized_shape, weight)
    if eps is None:
        eps = 2.220446049250313e-16 if input.dtype is float64 else 1.1920928955078125e-07  # finfo(dtype).eps
    out = input * ((input * input).mean(axes, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Divide by the root mean square over the last dims (no mean subtracted), then scale elementwise."""
    return _rms_norm("rms_norm", input, normalized_shape, weight, eps)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(‖input‖_p, eps) along dim: unit vectors (the eps keeps zero vectors finite)."""
    result = input / input.norm(p, dim, keepdim=True).clamp_min(eps)
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        raise RuntimeError(f"normalize: out has shape {shape_str(out.shape)} but the result has shape "
                           f"{shape_str(result.shape)}")
    return out.copy_(result)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha · mean of x² over ``size`` neighbouring channels)^beta (AlexNet's normalisation).

    The neighbourhood of channel c is c − size//2 … c + (size − 1)//2, zero-padded at the ends,
    averaged as PyTorch does it with an average pool over the channel axis.
    """
    from .pooling import avg_pool2d, avg_pool3d
    from .vision import pad
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} dimensions): "
                         f"local_response_norm takes (N, C, *), got {describe(input)}")
    if input.numel() == 0:
        return input
    div = input * input
    if input.ndim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = input.shape
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1).reshape(sizes)
    return input / (div * alpha + k) ** beta

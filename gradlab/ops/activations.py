"""Activation functions: sigmoid, relu and its relatives, gelu, silu, softplus, softmax, log_softmax.

The pointwise ones are built like the rest of the elementwise maths (``elementwise``: compute on
arrays, backward with Tensor operations). gelu, silu, softmax and log_softmax use the backend's
fused kernels forward and backward (softmax's stable: the largest logit is subtracted first); under
create_graph their backward is the same formula written with Tensor operations.
"""

from __future__ import annotations

import math

from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from ..backends.contract import GELU_TANH_CUBIC, GELU_TANH_SCALE
from ._common import float_dtype_required, normalize_dim
from .elementwise import elementwise, where

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_gradient(g, x, approximate):
    """gelu's backward with Tensor operations, for create_graph (the slope as a function of x)."""
    if approximate == "tanh":
        t = ((x + x * x * x * GELU_TANH_CUBIC) * GELU_TANH_SCALE).tanh()
        slope = (1 + t) * 0.5 + x * (1 - t * t) * (1 + x * x * (3 * GELU_TANH_CUBIC)) * (0.5 * GELU_TANH_SCALE)
    else:
        slope = (1 + (x * _SQRT_HALF).erf()) * 0.5 + x * (x * x * -0.5).exp() * _INV_SQRT_2PI
    return g * slope


def _softplus(backend, a, beta, threshold):
    """log(1 + exp(beta * x)) / beta, and x itself where beta * x > threshold (exp would overflow)."""
    scaled = backend.mul(a, beta)
    return backend.where(backend.gt(scaled, threshold), a, backend.div(backend.log1p(backend.exp(scaled)), beta))


Sigmoid = elementwise("sigmoid", "sigmoid", lambda g, x, y: g * y * (1 - y), saves="out",
                      doc="sigmoid(x): the gradient is multiplied by out · (1 − out), the sigmoid's own slope.",
                      derivative="∂L/∂x = g · out · (1 − out)")
Relu = elementwise("relu", lambda b, a: b.maximum(a, 0), lambda g, x, y: g * (y > 0), inputs="keep", saves="out",
                   doc="relu(x) = max(x, 0): the gradient passes where x > 0 and stops elsewhere.",
                   derivative="∂L/∂x = g where out > 0, else 0")
LeakyRelu = elementwise("leaky_relu", lambda b, a, slope: b.where(b.gt(a, 0), a, b.mul(a, slope)),
                        lambda g, x, y, slope: where(x > 0, g, g * slope), inputs="floats",
                        doc="leaky_relu(x): the gradient passes where x > 0 and is scaled by the slope elsewhere.",
                        derivative="∂L/∂x = g where x > 0, else g · slope")
Elu = elementwise("elu", lambda b, a, alpha: b.where(b.gt(a, 0), a, b.mul(b.expm1(a), alpha)),
                  lambda g, x, y, alpha: where(x > 0, g, g * (y + alpha)), inputs="floats",
                  doc="elu(x): the gradient passes where x > 0 and is multiplied by alpha · exp(x) elsewhere.",
                  derivative="∂L/∂x = g where x > 0, else g · (out + alpha)")


class Gelu(Function):
    """gelu(x) = x · Φ(x): the gradient is multiplied by the slope Φ(x) + x · φ(x) (φ the normal density).

    Forward and backward are the backend's fused kernels: forward saves what backward needs (Φ(x):
    erf is the costly part). When the backward itself is being recorded (create_graph) it is
    written with Tensor operations instead. approximate='tanh' differentiates the tanh formula.
    """

    derivative = "∂L/∂x = g · (Φ(x) + x · φ(x)), Φ and φ the standard normal CDF and density (or the tanh form's slope)"

    @staticmethod
    def forward(ctx, x, approximate):
        float_dtype_required("gelu", x)
        out, saved = x.device.backend.gelu(x.array, approximate)
        ctx.approximate = approximate
        ctx.save_for_backward(x, *(x._wrap(a) for a in saved))
        return x._wrap(out)

    @staticmethod
    def backward(ctx, g):
        x, *saved = ctx.saved_tensors
        if is_grad_enabled():
            return _gelu_gradient(g, x, ctx.approximate), None
        grad = x.device.backend.gelu_backward(g.array, x.array, tuple(s.array for s in saved), ctx.approximate)
        return x._wrap(grad), None


class Silu(Function):
    """silu(x) = x · sigmoid(x): the gradient is multiplied by σ(x) · (1 + x · (1 − σ(x))).

    Forward and backward are the backend's fused kernels (backward recomputes σ(x) from the saved x);
    under create_graph the backward is the same formula in Tensor operations.
    """

    derivative = "∂L/∂x = g · σ(x) · (1 + x · (1 − σ(x)))"

    @staticmethod
    def forward(ctx, x):
        float_dtype_required("silu", x)
        ctx.save_for_backward(x)
        return x._wrap(x.device.backend.silu(x.array))

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        if is_grad_enabled():
            s = sigmoid(x)
            return (g * s * (1 + x * (1 - s)),)
        return (x._wrap(x.device.backend.silu_backward(g.array, x.array)),)


Softplus = elementwise("softplus", _softplus, lambda g, x, y, beta, threshold:
                       where(x * beta > threshold, g, g * sigmoid(x * beta)), inputs="floats",
                       doc="softplus(x): the gradient is multiplied by sigmoid(beta · x) (by 1 where it is linear).",
                       derivative="∂L/∂x = g · σ(beta · x), or g where beta · x > threshold")


def _fused(x, kernel: str, dim: int):
    """Run the backend's softmax / log_softmax kernel along dim (a 0-d tensor is a 1-element row)."""
    backend = x.device.backend
    data = x.array if x.ndim else backend.reshape(x.array, (1,))
    try:
        out = getattr(backend, kernel)(data, dim)
    except ValueError:  # the max of an empty row: an empty tensor gives an empty result
        if x.numel():
            raise
        return backend.copy(x.array)
    return out if x.ndim else backend.reshape(out, ())


def _fused_backward(y, g, kernel: str, dim: int):
    """The backend's softmax_backward / log_softmax_backward along dim (a 0-d tensor a 1-element row)."""
    backend = y.device.backend
    if y.ndim:
        return y._wrap(getattr(backend, kernel)(y.array, g.array, dim))
    row = getattr(backend, kernel)(backend.reshape(y.array, (1,)), backend.reshape(g.array, (1,)), 0)
    return y._wrap(backend.reshape(row, ()))


class Softmax(Function):
    """exp(x) / sum(exp(x)) along dim: x receives out · (g − the out-weighted sum of g along dim)."""

    derivative = "∂L/∂x = out · (g − Σ_dim g · out)"

    @staticmethod
    def forward(ctx, x, dim):
        float_dtype_required("softmax", x)
        ctx.dim = normalize_dim("softmax", dim, x.ndim)
        out = x._wrap(_fused(x, "softmax", ctx.dim))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        if is_grad_enabled():
            return y * (grad - (grad * y).sum(ctx.dim, keepdim=True)), None
        return _fused_backward(y, grad, "softmax_backward", ctx.dim), None


class LogSoftmax(Function):
    """x - logsumexp(x) along dim: x receives g minus softmax(x) times the sum of g along dim."""

    derivative = "∂L/∂x = g − exp(out) · Σ_dim g"

    @staticmethod
    def forward(ctx, x, dim):
        float_dtype_required("log_softmax", x)
        ctx.dim = normalize_dim("log_softmax", dim, x.ndim)
        out = x._wrap(_fused(x, "log_softmax", ctx.dim))
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        if is_grad_enabled():
            return grad - y.exp() * grad.sum(ctx.dim, keepdim=True), None
        return _fused_backward(y, grad, "log_softmax_backward", ctx.dim), None


# --- functional forms (gradlab.relu(x) as torch.relu(x) / torch.nn.functional.relu(x)) -----------

def sigmoid(input):
    """1 / (1 + exp(-x)), computed without overflow."""
    return Sigmoid.apply(input)


def relu(input):
    """max(x, 0)."""
    return Relu.apply(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """x for x > 0, negative_slope * x otherwise."""
    if inplace:
        return input._inplace("leaky_relu_", LeakyRelu.apply, negative_slope)
    return LeakyRelu.apply(input, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    if inplace:
        return input._inplace("elu_", Elu.apply, alpha)
    return Elu.apply(input, alpha)


def gelu(input, approximate="none"):
    """x * Phi(x), Phi the standard normal CDF; approximate='tanh' uses the tanh formula of the GPT-2 era."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return Gelu.apply(input, approximate)


def silu(input, inplace=False):
    """x * sigmoid(x) (also called swish)."""
    if inplace:
        return input._inplace("silu_", Silu.apply)
    return Silu.apply(input)


def softplus(input, beta=1.0, threshold=20.0):
    """A smooth relu: log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""
    return Softplus.apply(input, beta, threshold)


def softmax(input, dim, dtype=None):
    """Probabilities along dim: exp(x) / sum(exp(x)); dtype converts the input first."""
    return Softmax.apply(input if dtype is None else input.to(dtype), dim)


def log_softmax(input, dim, dtype=None):
    """log(softmax(x)), computed stably as x - logsumexp(x)."""
    return LogSoftmax.apply(input if dtype is None else input.to(dtype), dim)


class ActivationMethods:
    """Tensor's activation methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    sigmoid, relu, leaky_relu, elu, gelu, silu, softplus = sigmoid, relu, leaky_relu, elu, gelu, silu, softplus
    softmax, log_softmax = softmax, log_softmax

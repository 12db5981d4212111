"""Activation functions, as ``torch.nn.functional`` has them.

The common ones are gradlab ops already (relu, gelu, softmax, ...) and are re-exported with
PyTorch's functional signatures (``inplace=``, softmax's implicit dim). The piecewise ones
(hardtanh, hardsigmoid, hardswish), mish and logsigmoid are fused elementwise Functions; the
rest are short compositions of existing ops.
"""

from __future__ import annotations

import warnings

from ...autograd.function import name_nodes
from ...ops.activations import _softplus, gelu, leaky_relu, sigmoid, silu, softplus
from ...ops.activations import elu as _elu
from ...ops.activations import log_softmax as _log_softmax
from ...ops.activations import relu as _relu
from ...ops.autocast import autocast_op
from ...ops.activations import softmax as _softmax
from ...ops.elementwise import elementwise, tanh, where
from ...ops.reductions import argmax
from ...random import _rng

__all__ = ["relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "celu", "gelu", "silu",
           "mish", "hardtanh", "hardtanh_", "hardsigmoid", "hardswish", "softplus", "sigmoid", "tanh", "softsign",
           "logsigmoid", "tanhshrink", "threshold", "threshold_", "glu", "prelu", "softmax", "log_softmax",
           "softmin", "hardshrink", "softshrink", "rrelu", "selu_", "celu_", "rrelu_", "gumbel_softmax"]

_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def _hardtanh(backend, a, low, high):
    return backend.minimum(backend.maximum(a, low), high)


def _mish(backend, a):
    return backend.mul(a, backend.tanh(_softplus(backend, a, 1.0, 20.0)))


def _mish_gradient(g, x, y):
    t = softplus(x).tanh()
    return g * (t + x * sigmoid(x) * (1 - t * t))


def _hardswish_gradient(g, x, y):
    return where(x <= -3.0, 0.0, where(x < 3.0, g * (x / 3.0 + 0.5), g))


def _logsigmoid(backend, a):
    """min(x, 0) − log(1 + exp(−|x|)): never exponentiates a large positive number."""
    return backend.sub(backend.minimum(a, 0.0), backend.log1p(backend.exp(backend.neg(backend.abs(a)))))


# The gradient is zero at the kinks themselves, as in PyTorch (hardtanh'(min_val) = 0, unlike clamp's).
Hardtanh = elementwise("hardtanh", _hardtanh, lambda g, x, y, low, high: where((x > low) & (x < high), g, 0.0),
                       inputs="floats",
                       doc="hardtanh(x): the gradient passes strictly between the limits and stops outside them.",
                       derivative="∂L/∂x = g where low < x < high, else 0")
Hardsigmoid = elementwise("hardsigmoid", lambda b, a: b.div(_hardtanh(b, b.add(a, 3.0), 0.0, 6.0), 6.0),
                          lambda g, x, y: where((x > -3.0) & (x < 3.0), g / 6.0, 0.0), inputs="floats",
                          doc="hardsigmoid(x): the gradient is divided by 6 on the slope −3 < x < 3 and stops outside.",
                          derivative="∂L/∂x = g / 6 where −3 < x < 3, else 0")
Hardswish = elementwise("hardswish", lambda b, a: b.mul(a, b.div(_hardtanh(b, b.add(a, 3.0), 0.0, 6.0), 6.0)),
                        _hardswish_gradient, inputs="floats",
                        doc="hardswish(x): the gradient stops below −3, is scaled by x/3 + 1/2 up to 3, passes above.",
                        derivative="∂L/∂x = 0 where x ≤ −3, g · (x/3 + 1/2) where −3 < x < 3, g where x ≥ 3")
Mish = elementwise("mish", _mish, _mish_gradient, inputs="floats",
                   doc=("mish(x) = x · t with t = tanh(softplus(x)): the gradient is multiplied by "
                        "t + x · σ(x) · (1 − t²)."),
                   derivative="∂L/∂x = g · (t + x · σ(x) · (1 − t²)), t = tanh(softplus(x))")
Logsigmoid = elementwise("logsigmoid", _logsigmoid, lambda g, x, y: g * sigmoid(-x), inputs="floats",
                         doc="log(sigmoid(x)): the gradient is multiplied by sigmoid(−x) = 1 − sigmoid(x).",
                         derivative="∂L/∂x = g · σ(−x)")
name_nodes(Logsigmoid, "LogSigmoidBackward0")  # (PyTorch's spelling)


def _maybe_inplace(op, input, inplace, function, *args):
    """function(input, *args), or written back into input when inplace (Tensor._inplace)."""
    if inplace:
        return input._inplace(op, function, *args)
    return function(input, *args)


def relu(input, inplace=False):
    """max(x, 0)."""
    return input.relu_() if inplace else _relu(input)


def relu_(input):
    return input.relu_()


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input, alpha=1.0, inplace=False):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return _elu(input, alpha, inplace)


def elu_(input, alpha=1.0):
    return _elu(input, alpha, inplace=True)


def _selu(x):
    return _elu(x, _SELU_ALPHA) * _SELU_SCALE


def selu(input, inplace=False):
    """scale * elu(x, alpha) with the constants that keep activations self-normalising."""
    return _maybe_inplace("selu_", input, inplace, _selu)


def _celu(x, alpha):
    return _elu(x / alpha) * alpha


def celu(input, alpha=1.0, inplace=False):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""
    return _maybe_inplace("celu_", input, inplace, _celu, alpha)


def mish(input, inplace=False):
    """x * tanh(softplus(x))."""
    return _maybe_inplace("mish_", input, inplace, Mish.apply)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """x clipped to [min_val, max_val]."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val cannot be greater than max_val (got min_val={min_val}, max_val={max_val})")
    return _maybe_inplace("hardtanh_", input, inplace, Hardtanh.apply, min_val, max_val)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input, inplace=False):
    """min(max(x, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


def hardsigmoid(input, inplace=False):
    """relu6(x + 3) / 6: a piecewise-linear sigmoid."""
    return _maybe_inplace("hardsigmoid_", input, inplace, Hardsigmoid.apply)


def hardswish(input, inplace=False):
    """x * relu6(x + 3) / 6 (MobileNetV3)."""
    return _maybe_inplace("hardswish_", input, inplace, Hardswish.apply)


def softsign(input):
    """``x / (1 + |x|)``."""
    return input / (input.abs() + 1)


def logsigmoid(input):
    """log(sigmoid(x)), computed without overflow."""
    return Logsigmoid.apply(input)


def tanhshrink(input):
    """x - tanh(x)."""
    return input - input.tanh()


def _threshold(x, threshold, value):
    return where(x > threshold, x, value)


def threshold(input, threshold, value, inplace=False):
    """x where x > threshold, else value."""
    return _maybe_inplace("threshold_", input, inplace, _threshold, threshold, value)


def threshold_(input, threshold, value):
    return _maybe_inplace("threshold_", input, True, _threshold, threshold, value)


def glu(input, dim=-1):
    """The gated linear unit: a * sigmoid(b), where a and b are the two halves of input along dim."""
    size = input.shape[dim] if input.ndim else 0
    if input.ndim == 0 or size % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {dim} is size {size} "
                           f"(input of shape {list(input.shape)})")
    a, b = input.chunk(2, dim)
    return a * b.sigmoid()


@autocast_op("lower")
def prelu(input, weight):
    """x where x > 0, else weight * x; weight has one slope, or one per channel (dim 1)."""
    channels = input.shape[1] if input.ndim >= 2 else 1
    if weight.numel() != 1 and weight.numel() != channels:
        raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                           f"{weight.numel()} and channel size = {channels} (input of shape {list(input.shape)})")
    weight = weight.reshape((weight.numel(),) + (1,) * (input.ndim - 2) if input.ndim >= 2 else ())
    return where(input > 0, input, weight * input)


def _implicit_dim(name, ndim, stacklevel):
    """PyTorch's deprecated choice of dim when softmax gets none: 0 for 0-, 1- and 3-D inputs, else 1."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """exp(x) / sum(exp(x)) along dim: probabilities that sum to 1."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim, _stacklevel)
    return _softmax(input, dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """log(softmax(x)) along dim, computed stably as x - logsumexp(x)."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim, _stacklevel)
    return _log_softmax(input, dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """softmax(-x) along dim."""
    if dim is None:
        dim = _implicit_dim("softmin", input.ndim, _stacklevel)
    return _softmax(-input if dtype is None else -input.to(dtype), dim)


def hardshrink(input, lambd=0.5):
    """``x`` where ``|x| > lambd``, else 0."""
    return where(input.abs() > lambd, input, 0.0)


def softshrink(input, lambd=0.5):
    """x − lambd above lambd, x + lambd below −lambd, 0 between: shrinks every value towards zero by lambd."""
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be {lambd}.")
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd, 0.0))


def _rrelu(x, lower, upper, training):
    """In training each negative element gets its own slope drawn from U(lower, upper); otherwise their mean."""
    if not training:
        return leaky_relu(x, (lower + upper) / 2)
    backend = x.device.backend
    slopes = x._wrap(backend.random_uniform(_rng(None), x.shape, lower, upper, x.dtype))
    return where(x >= 0, x, x * slopes)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU: x for x ≥ 0, a · x below, a ~ U(lower, upper) in training, (lower + upper) / 2 else."""
    if lower > upper:
        raise ValueError(f"rrelu: lower bound should be less than or equal to upper bound (got lower={lower}, "
                         f"upper={upper})")
    return _maybe_inplace("rrelu_", input, inplace, _rrelu, lower, upper, training)


def _inplace_form(function, doc):
    """``function_``: function with inplace=True (one definition for every activation's in-place twin)."""
    def inplace(input, *args, **kwargs):
        return function(input, *args, inplace=True, **kwargs)

    inplace.__name__ = inplace.__qualname__ = function.__name__ + "_"
    inplace.__doc__ = doc
    return inplace


selu_ = _inplace_form(selu, "selu written into input.")
celu_ = _inplace_form(celu, "celu written into input.")
rrelu_ = _inplace_form(rrelu, "rrelu written into input.")


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """A differentiable sample from the categorical distribution softmax(logits): softmax((logits + g) / tau),
    g Gumbel noise. hard=True returns the one-hot of the sample, with the soft sample's gradient."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    backend = logits.device.backend
    uniform = backend.random_uniform(_rng(None), logits.shape, 0.0, 1.0, logits.dtype)
    gumbels = logits._wrap(backend.neg(backend.log(backend.neg(backend.log1p(backend.neg(uniform))))))  # −log(Exp(1))
    y_soft = _softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = argmax(y_soft, dim, keepdim=True)
    y_hard = logits.new_zeros(logits.shape).scatter(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft  # the straight-through estimator

"""Weight initialisation (``torch.nn.init``): fill a tensor in place, without recording a graph.

The schemes scale the spread of the starting weights to the layer's fan-in/fan-out so that
activations and gradients keep a steady size through many layers (Glorot/Xavier, He/Kaiming).
Random values are drawn on the host by gradlab's generator, so ``manual_seed`` reproduces them on
every device; the host-side work (rejection sampling, the QR of ``orthogonal_``) uses numpy.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad
from ..ops._common import describe
from ..random import _rng
from ..tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_"]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The factor by which a nonlinearity shrinks the spread of its input (1 for linear, √2 for relu...)."""
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            negative_slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            negative_slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + negative_slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _write(tensor: Tensor, array) -> Tensor:
    """Copy a backend array of the tensor's shape into its memory, outside the graph."""
    with no_grad():
        tensor.copy_(tensor._wrap(array))
    return tensor


def _write_host(tensor: Tensor, values: np.ndarray) -> Tensor:
    """Copy values computed on the host with numpy into ``tensor``."""
    return _write(tensor, tensor.device.backend.asarray(values.reshape(tensor.shape), tensor.dtype))


def _check_floating(op: str, tensor: Tensor) -> None:
    if not tensor.dtype.is_floating_point:
        raise RuntimeError(f"nn.init.{op}: expected a floating-point tensor, got a {describe(tensor)}; "
                           "random initialisation fills floating-point weights only")


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with values drawn uniformly from [a, b)."""
    _check_floating("uniform_", tensor)
    if a > b:
        raise RuntimeError(f"nn.init.uniform_: expects to return a [from, to) range, but found from={a} > to={b}")
    return _write(tensor, tensor.device.backend.random_uniform(_rng(generator), tensor.shape, a, b, tensor.dtype))


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with values drawn from the normal distribution N(mean, std²)."""
    _check_floating("normal_", tensor)
    if std < 0:
        raise RuntimeError(f"nn.init.normal_: normal expects std >= 0.0, but found std {std}")
    return _write(tensor, tensor.device.backend.random_normal(_rng(generator), tensor.shape, mean, std, tensor.dtype))


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Fill with N(mean, std²) values conditioned on lying in [a, b] (redrawing the ones outside)."""
    _check_floating("trunc_normal_", tensor)
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    rng, n = _rng(generator), tensor.numel()

    def cdf(x):
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    if cdf((b - mean) / std) - cdf((a - mean) / std) > 0.3:  # most normal draws land inside: redraw the rest
        values = rng.normal(mean, std, n)
        outside = (values < a) | (values > b)
        while outside.any():
            values[outside] = rng.normal(mean, std, int(outside.sum()))
            outside = (values < a) | (values > b)
    else:  # a narrow window: propose uniformly in [a, b] and accept by the density (relative to its peak)
        peak = -0.5 * ((max(a, min(mean, b)) - mean) / std) ** 2
        values = np.empty(n)
        pending = np.ones(n, dtype=bool)
        while pending.any():
            k = int(pending.sum())
            proposal = rng.uniform(a, b, k)
            accept = np.log(rng.uniform(size=k)) <= -0.5 * ((proposal - mean) / std) ** 2 - peak
            where = np.flatnonzero(pending)[accept]
            values[where] = proposal[accept]
            pending[where] = False
    return _write_host(tensor, values)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with one value."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the diagonal, as far as it goes)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _write_host(tensor, np.eye(*tensor.shape))


def _calculate_fan_in_and_fan_out(tensor: Tensor):
    """(inputs, outputs) feeding one unit: dim 1 and dim 0, times the kernel size for convolutions."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive_field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive_field, tensor.shape[0] * receptive_field


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot: U(-a, a) with a = gain·√(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot: N(0, std²) with std = gain·√(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a, mode: str, nonlinearity: str):
    """He's std = gain / √fan, or None for a zero-element tensor (nothing to fill, as PyTorch warns)."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    """He: U(-bound, bound) with bound = gain·√(3 / fan); ``a`` is leaky_relu's negative slope."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else uniform_(tensor, -math.sqrt(3.0) * std, math.sqrt(3.0) * std, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    """He: N(0, std²) with std = gain / √fan."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    return tensor if std is None else normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR of a Gaussian one, over dims 1.. flattened, times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    _check_floating("orthogonal_", tensor)
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flattened = _rng(generator).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flattened = flattened.T
    q, r = np.linalg.qr(flattened)
    q = q * np.sign(np.diag(r))  # the signs make Q uniformly distributed (Mezzadri, 2007)
    if rows < cols:
        q = q.T
    return _write_host(tensor, q * gain)

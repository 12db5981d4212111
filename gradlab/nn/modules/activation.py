"""Activation layers: thin Modules around the functions in ``gradlab.nn.functional``.

Each one keeps its settings as attributes (negative_slope, dim, inplace, ...) and prints them
as PyTorch does; only PReLU has a weight (its learnable negative slope).
"""

from __future__ import annotations

from ...creation import empty
from ...ops._common import shape_str
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh",
           "Softmax", "LogSoftmax", "Softmin", "Softplus", "Softsign", "LogSigmoid", "Tanhshrink", "Hardtanh",
           "Hardsigmoid", "Hardswish", "Threshold", "GLU", "Hardshrink", "Softshrink", "RReLU", "Softmax2d"]


def _inplace_str(inplace: bool, first: bool = False) -> str:
    """PyTorch prints inplace only when it is True: 'inplace=True' alone, or ', inplace=True' after others."""
    if not inplace:
        return ""
    return "inplace=True" if first else ", inplace=True"


class _Inplace(Module):
    """An activation whose only setting is ``inplace``: forward is ``_function(input, inplace)``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return self._function(input, self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, first=True)


class _Plain(Module):
    """An activation without settings: forward is ``_function(input)``."""

    def forward(self, input):
        return self._function(input)


class ReLU(_Inplace):
    """max(x, 0)."""

    _function = staticmethod(F.relu)


class SiLU(_Inplace):
    """x * sigmoid(x) (swish)."""

    _function = staticmethod(F.silu)


class Mish(_Inplace):
    """x * tanh(softplus(x))."""

    _function = staticmethod(F.mish)


class SELU(_Inplace):
    """scale * elu(x, alpha), with the self-normalising constants."""

    _function = staticmethod(F.selu)


class Hardsigmoid(_Inplace):
    """relu6(x + 3) / 6."""

    _function = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6."""

    _function = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Sigmoid(_Plain):
    """1 / (1 + exp(-x))."""

    _function = staticmethod(F.sigmoid)


class Tanh(_Plain):
    _function = staticmethod(F.tanh)


class Softsign(_Plain):
    """``x / (1 + |x|)``."""

    _function = staticmethod(F.softsign)


class LogSigmoid(_Plain):
    """log(sigmoid(x)), without overflow."""

    _function = staticmethod(F.logsigmoid)


class Tanhshrink(_Plain):
    """x - tanh(x)."""

    _function = staticmethod(F.tanhshrink)


class LeakyReLU(Module):
    """x for x > 0, negative_slope * x otherwise."""

    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class ELU(Module):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""

    _function = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return self._function(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    _function = staticmethod(F.celu)


class GELU(Module):
    """x * Phi(x), Phi the standard normal CDF; approximate='tanh' for the tanh formula."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Hardtanh(Module):
    """x clipped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"Hardtanh: min_val cannot be greater than max_val (got {min_val} > {max_val})")
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6)."""

    def __init__(self, inplace=False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, first=True)


class Threshold(Module):
    """x where x > threshold, else value."""

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _Dim(Module):
    """An activation along one dim: forward is ``_function(input, dim)``."""

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return self._function(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_Dim):
    """exp(x) / sum(exp(x)) along dim."""

    _function = staticmethod(F.softmax)


class LogSoftmax(_Dim):
    """log(softmax(x)) along dim."""

    _function = staticmethod(F.log_softmax)


class Softmin(_Dim):
    """softmax(-x) along dim."""

    _function = staticmethod(F.softmin)


class GLU(Module):
    """a * sigmoid(b), a and b the two halves of the input along dim."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class PReLU(Module):
    """x for x > 0, a * x otherwise, with a learnable slope a (one, or one per channel)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, dtype=dtype, device=device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0."""

    _function = staticmethod(F.hardshrink)

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return self._function(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """x − lambd above lambd, x + lambd below −lambd, else 0."""

    _function = staticmethod(F.softshrink)


class RReLU(Module):
    """Leaky ReLU with a random slope from U(lower, upper) per element in training, their mean in evaluation."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class Softmax2d(Module):
    """Softmax over the channels at every pixel of (N, C, H, W) or (C, H, W)."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead (input of shape "
                             f"{shape_str(input.shape)}; it takes (N, C, H, W) or (C, H, W))")
        return F.softmax(input, -3, _stacklevel=5)

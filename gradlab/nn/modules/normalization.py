"""Per-sample normalisation layers: LayerNorm, GroupNorm, RMSNorm.

Unlike batch norm these use each sample's own statistics, so they behave the same in training
and evaluation and keep no running buffers: LayerNorm over the last dims (the features of a
token), GroupNorm over groups of channels, RMSNorm by the root mean square alone.
"""

from __future__ import annotations

from ...creation import empty
from .. import init
from ...ops._common import shape_str
from ..functional.normalization import _group_norm, _layer_norm, _rms_norm, local_response_norm
from ..parameter import Parameter
from .module import Module

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


def _optional_parameter(module, name, wanted, shape, dtype, device):
    module.register_parameter(name, Parameter(empty(shape, dtype=dtype, device=device)) if wanted else None)


def _as_shape(normalized_shape) -> tuple:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(Module):
    """Normalise the last len(normalized_shape) dims of each sample, then scale and shift elementwise."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _optional_parameter(self, "weight", elementwise_affine, self.normalized_shape, dtype, device)
        _optional_parameter(self, "bias", elementwise_affine and bias, self.normalized_shape, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return _layer_norm(f"LayerNorm({self.normalized_shape})", input, self.normalized_shape, self.weight,
                           self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class GroupNorm(Module):
    """Split the channels into num_groups groups; normalise each group of each sample; per-channel affine."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None, *, bias=True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _optional_parameter(self, "weight", affine, (num_channels,), dtype, device)
        _optional_parameter(self, "bias", affine and bias, (num_channels,), dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input):
        return _group_norm(f"GroupNorm({self.num_groups}, {self.num_channels})", input, self.num_groups, self.weight,
                           self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Divide the last dims of each sample by their root mean square, then scale elementwise (no shift)."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _as_shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        _optional_parameter(self, "weight", elementwise_affine, self.normalized_shape, dtype, device)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input):
        return _rms_norm(f"RMSNorm({self.normalized_shape})", input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Divide each channel by (k + alpha · mean of x² over ``size`` neighbouring channels)^beta."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input):
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """Lua Torch's cross-channel LRN on (N, C, H, W): x · (k + alpha/size · Σ x² over a channel window)^−beta.

    The window is PyTorch's: channel c sums channels up to c + ⌈size/2⌉ − 1 and, once c is past the
    first ⌈size/2⌉, drops channels 1 … c − ⌈size/2⌉ (channel 0 stays in every sum, as in PyTorch's loop).
    """

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead (input of shape "
                             f"{shape_str(input.shape)}; it takes (N, C, H, W))")
        channels = input.shape[1]
        reach = int((self.size - 1) / 2 + 1)
        window = [[1.0 if j < min(c + reach, channels) and not (c > reach and 1 <= j <= c - reach) else 0.0
                   for j in range(channels)] for c in range(channels)]
        sums = input.new_tensor(window).matmul((input * input).movedim(1, -2)).movedim(-2, 1)
        return input * (sums * (self.alpha / self.size) + self.k) ** -self.beta

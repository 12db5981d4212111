"""Convolution layers: ``Conv1d/2d/3d`` and their transposes ``ConvTranspose1d/2d/3d``.

A convolution slides a small learned filter over the input: every output channel is the sum, over
input channels, of each window times the filter (cross-correlation, as in PyTorch). Groups split
the channels into independent convolutions. Weights start as PyTorch's do (kaiming_uniform_(a=√5)),
bias from U(±1/√fan_in).
"""

from __future__ import annotations

import math

from ...creation import empty
from ..functional.vision import pad
from .. import init
from ..functional.conv import conv, conv_geometry, conv_transpose, ntuple
from ..parameter import Parameter
from .module import Module

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(Module):
    """What every convolution layer shares: checked arguments, the weight and bias, init and repr."""

    _nd = 2
    transposed = False

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                 padding_mode, output_padding=0, device=None, dtype=None):
        super().__init__()
        nd, name = self._nd, type(self).__name__
        if not isinstance(groups, int) or groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got groups={groups}")
        if in_channels % groups != 0:
            raise ValueError(f"{name}: in_channels must be divisible by groups (in_channels={in_channels}, "
                             f"groups={groups})")
        if out_channels % groups != 0:
            raise ValueError(f"{name}: out_channels must be divisible by groups (out_channels={out_channels}, "
                             f"groups={groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"{name}: padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode={padding_mode!r}")
        if self.transposed and padding_mode != "zeros":
            raise ValueError(f'{name}: Only "zeros" padding mode is supported for {name}')
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = ntuple(name, "kernel_size", kernel_size, nd, minimum=1)
        self.stride = ntuple(name, "stride", stride, nd, minimum=1)
        self.dilation = ntuple(name, "dilation", dilation, nd, minimum=1)
        self.output_padding = ntuple(name, "output_padding", output_padding, nd, minimum=0)
        self.groups = groups
        self.padding_mode = padding_mode
        if isinstance(padding, str):
            conv_geometry(name, nd, self.kernel_size, self.stride, padding, self.dilation, groups)  # checks the string
            self.padding = padding
        else:
            self.padding = ntuple(name, "padding", padding, nd, minimum=0)
        geo = conv_geometry(name, nd, self.kernel_size, self.stride, self.padding, self.dilation, groups)
        self._reversed_padding_repeated_twice = tuple(w for lo_hi in reversed(geo.padding) for w in lo_hi)
        shape = (in_channels, out_channels // groups) if self.transposed else (out_channels, in_channels // groups)
        self.weight = Parameter(empty(shape + self.kernel_size, dtype=dtype, device=device))
        self.bias = Parameter(empty(out_channels, dtype=dtype, device=device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _name(self) -> str:
        """'Conv2d(1→16, 3×3)': how errors name this layer."""
        return (f"{type(self).__name__}({self.in_channels}→{self.out_channels}, "
                f"{'×'.join(map(str, self.kernel_size))})")

    def extra_repr(self) -> str:
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, device=device, dtype=dtype)

    def forward(self, input):
        name = self._name()
        padding = self.padding
        if self.padding_mode != "zeros":  # pad from the input itself first, then convolve without padding
            if input.ndim in (self._nd + 1, self._nd + 2):
                input = pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            padding = 0
        geo = conv_geometry(name, self._nd, self.kernel_size, self.stride, padding, self.dilation, self.groups)
        return conv(name, input, self.weight, self.bias, geo, self._nd)


class Conv1d(_Conv):
    """1-D convolution over (N, C_in, L) → (N, C_out, L_out)."""

    _nd = 1


class Conv2d(_Conv):
    """2-D convolution over (N, C_in, H, W) → (N, C_out, H_out, W_out)."""

    _nd = 2


class Conv3d(_Conv):
    """3-D convolution over (N, C_in, D, H, W) → (N, C_out, D_out, H_out, W_out) (video, volumes)."""

    _nd = 3


class _ConvTranspose(_ConvNd):
    transposed = True

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be an int or a tuple of ints, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias,
                         padding_mode, output_padding, device=device, dtype=dtype)

    def forward(self, input, output_size=None):
        return conv_transpose(self._name(), input, self.weight, self.bias, self.stride, self.padding,
                              self.output_padding, self.groups, self.dilation, self._nd, output_size)


class ConvTranspose1d(_ConvTranspose):
    """The transpose (adjoint) of Conv1d: (N, C_in, L) → (N, C_out, (L − 1)·stride − 2·padding + …)."""

    _nd = 1


class ConvTranspose2d(_ConvTranspose):
    """The transpose (adjoint) of Conv2d, often used to upsample: stride 2 roughly doubles H and W."""

    _nd = 2


class ConvTranspose3d(_ConvTranspose):
    """The transpose (adjoint) of Conv3d: upsamples volumes by the stride."""

    _nd = 3

"""PixelShuffle and PixelUnshuffle (sub-pixel convolution), and ChannelShuffle (ShuffleNet).

They only move elements: PixelShuffle turns r² channels into an r × r block of pixels (upsampling
without interpolation), PixelUnshuffle undoes it, ChannelShuffle interleaves channel groups.
"""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(Module):
    """(*, C · r², H, W) → (*, C, H · r, W · r), r = upscale_factor."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """(*, C, H · r, W · r) → (*, C · r², H, W), r = downscale_factor."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """``(N, C, *)`` with its channels split into ``groups`` groups and interleaved."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"

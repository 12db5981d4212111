"""Instance normalisation layers: InstanceNorm1d, InstanceNorm2d, InstanceNorm3d.

Each channel of each sample is normalised over its own positions (style transfer's normalisation:
the contrast of one image, not the batch's). By default there is no affine map and no running
statistics; ``track_running_stats=True`` keeps them as batch norm does, for use in evaluation.
"""

from __future__ import annotations

import warnings

from ...ops._common import shape_str
from ..functional.normalization import _instance_norm
from .batchnorm import _BatchNorm

__all__ = ["InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"]


class _InstanceNorm(_BatchNorm):
    """What the three layers share: batch norm's parameters and buffers, per-sample statistics."""

    _spatial = 1  # how many spatial dims follow the channel dim

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def _check_input(self, input) -> None:
        no_batch = self._spatial + 1
        if input.ndim not in (no_batch, no_batch + 1):
            dims = {1: "L", 2: "H, W", 3: "D, H, W"}[self._spatial]
            raise ValueError(f"{self._get_name()}({self.num_features}): expected {no_batch}D or {no_batch + 1}D input "
                             f"(C, {dims}) or (N, C, {dims}), got {input.ndim}D input of shape "
                             f"{shape_str(input.shape)}")
        feature_dim = input.ndim - no_batch
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"{self._get_name()}: expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: {input.shape[feature_dim]}.")
            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this "
                          "warning by not passing in num_features, which is not used because affine=False",
                          stacklevel=3)

    def forward(self, input):
        self._check_input(input)
        unbatched = input.ndim == self._spatial + 1
        x = input.unsqueeze(0) if unbatched else input
        out = _instance_norm(f"{self._get_name()}({self.num_features})", x, self.running_mean, self.running_var,
                             self.weight, self.bias, self.training or not self.track_running_stats,
                             self.momentum if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Instance norm over (N, C, L) or (C, L): each channel of each sample over its L positions."""

    _spatial = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance norm over (N, C, H, W) or (C, H, W): each channel of each image over its pixels."""

    _spatial = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance norm over (N, C, D, H, W) or (C, D, H, W)."""

    _spatial = 3

"""Dropout layers: Dropout (elements), Dropout1d/2d/3d (whole channels), AlphaDropout and FeatureAlphaDropout (SELU).

In training mode they zero inputs with probability p and scale the survivors by 1/(1 − p); in
evaluation mode (``model.eval()``) they pass the input through unchanged.
"""

from __future__ import annotations

from ..functional.dropout import (_check_p, alpha_dropout, dropout, dropout1d, dropout2d, dropout3d,
                                  feature_alpha_dropout)
from .module import Module

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _function = None

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        _check_p(p)
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return self._function(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability p in training, scaling the rest by 1/(1 − p)."""

    _function = staticmethod(dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability p in training."""

    _function = staticmethod(dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels (feature maps) of (N, C, H, W) inputs with probability p in training."""

    _function = staticmethod(dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability p in training."""

    _function = staticmethod(dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout for SELU networks: keeps the mean and variance of self-normalised activations."""

    _function = staticmethod(alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels of ``(N, C, *)`` inputs."""

    _function = staticmethod(feature_alpha_dropout)

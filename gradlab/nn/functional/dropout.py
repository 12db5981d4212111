"""Dropout: zero random elements (or whole channels) in training and scale the rest by 1/(1 − p).

The scaling keeps each element's expected value unchanged, so evaluation needs no correction and
dropout is the identity there. The mask comes from gradlab's default generator, so
``gradlab.manual_seed`` makes it reproducible; the gradient is the same mask times the gradient.
"""

from __future__ import annotations

import warnings

from ...ops._common import describe, float_dtype_required
from ...random import _rng

__all__ = ["dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"]

_SELU_ALPHA_PRIME = 1.7580993408473766  # −scale · alpha of SELU: the value a dropped SELU output stands in for


def _check_p(p) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _dropout(op, input, p, training, inplace, mask_shape):
    """input times a mask of shape mask_shape (broadcast over the rest): 0 with probability p, else 1/(1 − p)."""
    if not training or p == 0.0:
        return input
    float_dtype_required(op, input)
    backend = input.device.backend
    if p == 1.0:
        mask = backend.zeros(mask_shape, input.dtype)
    else:
        keep = backend.ge(backend.random_uniform(_rng(None), mask_shape, 0.0, 1.0, input.dtype), p)
        mask = backend.mul(backend.astype(keep, input.dtype), 1.0 / (1.0 - p))
    mask = input._wrap(mask)
    return input.mul_(mask) if inplace else input * mask


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability p and scale the others by 1/(1 − p); the identity unless training."""
    _check_p(p)
    return _dropout("dropout", input, p, training, inplace, input.shape)


def _feature_dropout(op, input, p, training, inplace, batched):
    """Channel-wise dropout: one draw per channel (per sample when batched) zeroes the whole channel."""
    _check_p(p)
    lead = 2 if batched else 1
    if input.ndim < lead:
        raise RuntimeError(f"{op}: Feature dropout requires at least 2 dimensions in the input (N, C, ...), "
                           f"got {describe(input)}")
    return _dropout(op, input, p, training, inplace, tuple(input.shape[:lead]) + (1,) * (input.ndim - lead))


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, L) or (C, L) inputs with probability p."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input "
                           f"({describe(input)}); dropout1d works on (N, C, L) or (C, L) inputs")
    return _feature_dropout("dropout1d", input, p, training, inplace, input.ndim == 3)


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels (feature maps) of (N, C, H, W) inputs with probability p."""
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead.", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. To maintain "
                      "the 1D channel-wise dropout behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout("dropout2d", input, p, training, inplace, True)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) inputs with probability p."""
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead.", stacklevel=2)
    return _feature_dropout("dropout3d", input, p, training, inplace, input.ndim == 5)


def _alpha_dropout(op, input, p, training, inplace, mask_shape):
    """Dropout for SELU networks: dropped elements are set to SELU's negative saturation −α′ (not 0), then
    a · x + b restores mean 0 and variance 1, with a = 1/√((α′² p + 1)(1 − p)) and b = a α′ p."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    float_dtype_required(op, input)
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    backend = input.device.backend
    keep = backend.astype(backend.ge(backend.random_uniform(_rng(None), mask_shape, 0.0, 1.0, input.dtype), p),
                          input.dtype)
    a = 1.0 / ((_SELU_ALPHA_PRIME ** 2 * p + 1) * (1 - p)) ** 0.5
    scale = input._wrap(backend.mul(keep, a))
    shift = input._wrap(backend.add(backend.mul(backend.sub(keep, 1.0), _SELU_ALPHA_PRIME * a),
                                    _SELU_ALPHA_PRIME * a * p))
    if inplace:
        return input.mul_(scale).add_(shift)
    return input * scale + shift


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Dropout that keeps SELU activations self-normalising (mean 0, variance 1); the identity unless training."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, input.shape)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (dim 1) of ``(N, C, *)`` inputs."""
    if input.ndim < 2:
        raise RuntimeError(f"feature_alpha_dropout: Feature dropout requires at least 2 dimensions in the input "
                           f"(N, C, ...), got {describe(input)}")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, shape)

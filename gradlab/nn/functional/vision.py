"""Resampling and rearranging images: pad, interpolate, pixel_shuffle, channel_shuffle, affine_grid, grid_sample.

Interpolation is separable: resizing (N, C, D, H, W) is resizing W, then H, then D, one axis at a
time. Along one axis every output position reads one input position (nearest) or a few, mixed with
fixed weights (linear: 2, cubic: 4) — ``index_select`` and a weighted sum, so the gradient is
index_select's (each weight's share added back where it was read) and differentiates again.
The positions and weights follow PyTorch's kernels exactly (including their float32 rounding).
"""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np

from ...dtypes import float64, int64
from ...ops._common import TrackedTensor, check_same_device, describe, shape_str
from ...ops.elementwise import where
from ...ops.functional import pad as _pad

__all__ = ["pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle", "affine_grid", "grid_sample",
           "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES"]


def pad(input, pad, mode="constant", value=None):
    """Pad the last dims by ``pad`` = (left, right, top, bottom, ...): 'constant' (value), 'reflect',
    'replicate' or 'circular' (the new elements taken from the input itself)."""
    return _pad(input, pad, mode, value)


# --- interpolate: which input positions each output position reads --------------------------------

_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) bicubic convolution coefficient


def _source_scale(n, o, align_corners, scale, real):
    """PyTorch's area_pixel_compute_scale: input pixels per output pixel along one axis."""
    if align_corners:
        return real((n - 1) / (o - 1)) if o > 1 else real(0)
    return real(1.0 / scale) if scale is not None and scale > 0 else real(n) / real(o)


def _nearest_indices(n, o, scale, exact):
    """floor(dst · scale) (or floor((dst + ½) · scale) for nearest-exact), in float32 as PyTorch computes it."""
    if o == n and not exact:
        return np.arange(o)
    s = np.float32(1.0 / scale) if scale is not None and scale > 0 else np.float32(n) / np.float32(o)
    dst = np.arange(o, dtype=np.float32)
    if exact:
        dst = dst + np.float32(0.5)
    return np.minimum(np.floor(dst * s).astype(np.int64), n - 1)


def _linear_taps(n, o, align_corners, scale, real):
    """Two taps (i0, i1) and weights (1 − λ, λ) for every output position."""
    s = _source_scale(n, o, align_corners, scale, real)
    dst = np.arange(o).astype(real)
    src = dst * s if align_corners else np.maximum(s * (dst + real(0.5)) - real(0.5), real(0))
    i0 = src.astype(np.int64)
    lam = np.clip(src - i0, 0, 1).astype(real)
    i1 = i0 + (i0 < n - 1)
    return [i0, i1], [real(1) - lam, lam]


def _cubic_taps(n, o, align_corners, scale, real):
    """Four taps i − 1 … i + 2 (clamped to the edge) and the cubic-convolution weights."""
    s = _source_scale(n, o, align_corners, scale, real)
    dst = np.arange(o).astype(real)
    src = dst * s if align_corners else s * (dst + real(0.5)) - real(0.5)
    i = np.floor(src).astype(np.int64)
    t = (src - i).astype(real)
    a = real(_CUBIC_A)

    def near(x):  # |x| ≤ 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = [far(t + 1), near(t), near(1 - t), far(2 - t)]
    return [np.clip(i + k, 0, n - 1) for k in (-1, 0, 1, 2)], weights


def _resample_axis(x, axis, taps, weights):
    """Σ_k weights[k] · x[..., taps[k], ...] along axis (one tap: a plain index_select)."""
    index = [x.new_tensor(t, dtype=int64) for t in taps]
    if weights is None:
        return x.index_select(axis, index[0])
    shape = (-1,) + (1,) * (x.ndim - axis - 1)
    out = None
    for i, w in zip(index, weights):
        term = x.index_select(axis, i) * x.new_tensor(w).reshape(shape)
        out = term if out is None else out + term
    return out


def _triangle(x):
    x = abs(x)
    return 1 - x if x < 1 else 0.0


def _keys_cubic(x, a=-0.5):  # antialiasing uses a = −0.5 (as PIL does), plain bicubic −0.75
    x = abs(x)
    if x < 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    return (((x - 5) * x + 8) * x - 4) * a if x < 2 else 0.0


def _antialias_matrix(n, o, align_corners, scale, mode, real):
    """(o, n) weights of an antialiased resize along one axis: when shrinking, the filter (triangle or cubic)
    is stretched by the scale, so every input pixel under an output pixel contributes (PyTorch's and PIL's rule)."""
    filter_fn, size = (_triangle, 2) if mode == "bilinear" else (_keys_cubic, 4)
    s = float(_source_scale(n, o, align_corners, scale, real))
    support = size * 0.5 * s if s >= 1.0 else size * 0.5
    invscale = 1.0 / s if s >= 1.0 else 1.0
    weights = np.zeros((o, n))
    for i in range(o):
        center = s * (i + 0.5)
        low = max(int(center - support + 0.5), 0)
        high = min(int(center + support + 0.5), n)
        taps = np.array([filter_fn((j - center + 0.5) * invscale) for j in range(low, high)])
        weights[i, low:high] = taps / taps.sum() if taps.sum() != 0 else taps
    return weights.astype(real)


def _filter_axis(x, axis, weights):
    """x resampled along axis by the (o, n) weight matrix (one matrix product)."""
    return x.movedim(axis, -1).matmul(x.new_tensor(weights).transpose(0, 1)).movedim(-1, axis)


_MODES_BY_DIM = {3: ("linear",), 4: ("bilinear", "bicubic"), 5: ("trilinear",)}
_ALL_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")


def _as_list(value, nd):
    """value as a list of nd entries, and whether it came as a sequence."""
    if isinstance(value, (list, tuple)):
        return list(value), True
    return [value] * nd, False


def _output_geometry(input, size, scale_factor, recompute_scale_factor, mode):
    """(output size, scale factors or None per dim) as torch.nn.functional.interpolate works them out."""
    nd = input.ndim - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is None and scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        sizes, listed = _as_list(size, nd)
        if listed and len(sizes) != nd:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {list(sizes)}. "
                             "Please provide input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, "
                             "...,oK) format.")
        return [int(s) for s in sizes], None
    scales, listed = _as_list(scale_factor, nd)
    if listed and len(scales) != nd:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input with "
                         f"spatial dimensions of {list(input.shape[2:])} and scale_factor of shape {list(scales)}. "
                         "Please provide input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, "
                         "...,sK) format.")
    sizes = [int(math.floor(float(n) * float(s))) for n, s in zip(input.shape[2:], scales)]
    if mode == "area" or recompute_scale_factor:
        return sizes, None
    return sizes, [float(s) for s in scales]


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resize the spatial dims of (N, C, L), (N, C, H, W) or (N, C, D, H, W) to ``size`` or by ``scale_factor``.

    mode: 'nearest', 'nearest-exact', 'linear' (3-D), 'bilinear'/'bicubic' (4-D), 'trilinear' (5-D), or
    'area' (adaptive average pooling). align_corners=True maps the corner pixels' centres onto each other;
    antialias=True (bilinear/bicubic, 4-D) widens the filter when shrinking, so no input pixel is skipped.
    """
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"interpolate: expected the input to be a gradlab Tensor, got {type(input).__name__}")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if mode not in _ALL_MODES or input.ndim not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  "the modes: nearest | linear | bilinear | bicubic | trilinear | area | nearest-exact "
                                  f"(got {mode})")
    if mode not in ("nearest", "area", "nearest-exact") and mode not in _MODES_BY_DIM[input.ndim]:
        wanted = next(d for d, modes in _MODES_BY_DIM.items() if mode in modes)
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {wanted}D input")
    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError(f"Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor as "
                         f"input (got mode={mode!r} and a {input.ndim}-D input)")
    if not input.dtype.is_floating_point and mode != "nearest" and mode != "nearest-exact":
        raise RuntimeError(f"interpolate: mode {mode!r} needs a floating-point input, got {describe(input)}")
    sizes, scales = _output_geometry(input, size, scale_factor, recompute_scale_factor, mode)
    if any(o <= 0 for o in sizes):
        raise RuntimeError(f"interpolate: Input and output sizes should be greater than 0, but got input "
                           f"{shape_str(input.shape)} and output size {tuple(sizes)}")
    if mode == "area":
        from .pooling import _adaptive_avg_pool
        return _adaptive_avg_pool("interpolate", input.ndim - 2, input, sizes)
    real = np.float64 if input.dtype is float64 else np.float32
    out = input
    for i in reversed(range(input.ndim - 2)):
        n, o, s = input.shape[2 + i], sizes[i], None if scales is None else scales[i]
        if antialias:
            out = _filter_axis(out, 2 + i, _antialias_matrix(n, o, align_corners, s, mode, real))
        elif mode in ("nearest", "nearest-exact"):
            out = _resample_axis(out, 2 + i, [_nearest_indices(n, o, s, mode == "nearest-exact")], None)
        elif mode == "bicubic":
            out = _resample_axis(out, 2 + i, *_cubic_taps(n, o, align_corners, s, real))
        else:
            out = _resample_axis(out, 2 + i, *_linear_taps(n, o, align_corners, s, real))
    return out


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated name of interpolate (PyTorch warns and calls it)."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(..., mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# --- rearranging channels and pixels ------------------------------------------------------------

def _check_factor(op, name, factor, input, what):
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"{op}: expected the input to be a gradlab Tensor, got {type(input).__name__}")
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input with {input.ndim} "
                           f"dimension(s) (shape {shape_str(input.shape)}); {what}")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor}")


def pixel_shuffle(input, upscale_factor):
    """(*, C · r², H, W) → (*, C, H · r, W · r): each group of r² channels becomes an r × r block of pixels."""
    r = upscale_factor
    _check_factor("pixel_shuffle", "upscale_factor", r, input, "it expects (*, C × r², H, W)")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H · r, W · r) → (*, C · r², H, W): the inverse of pixel_shuffle."""
    r = downscale_factor
    _check_factor("pixel_unshuffle", "downscale_factor", r, input, "it expects (*, C, H × r, W × r)")
    *lead, c, h, w = input.shape
    for name, size, dim in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={size} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    """``(N, C, *)`` with the channels of ``groups`` groups interleaved: ``(g, C/g)`` transposed to ``(C/g, g)`` (ShuffleNet)."""
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"channel_shuffle: expected the input to be a gradlab Tensor, got {type(input).__name__}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes "
                           f"{list(input.shape)}; it works on (N, C, *)")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    x = input.reshape((n, groups, c // groups) + tuple(rest)).transpose(1, 2)
    return x.reshape(input.shape)


native_channel_shuffle = channel_shuffle


# --- spatial transformers: affine_grid and grid_sample --------------------------------------------

GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def _align_corners_default(op, align_corners):
    if align_corners is None:
        warnings.warn(f"Default {op} behavior has changed to align_corners=False since 1.3.0. Please specify "
                      f"align_corners=True if the old behavior is desired. See the documentation of {op} for details.",
                      stacklevel=3)
        return False
    return align_corners


def affine_grid(theta, size, align_corners=None):
    """The sampling grid (N, H, W, 2) (or (N, D, H, W, 3)) of the affine maps theta (N, 2, 3) (or (N, 3, 4)):
    each output pixel's normalised coordinates [x, y, 1] times thetaᵀ, ready for grid_sample."""
    align_corners = _align_corners_default("affine_grid", align_corners)
    if not isinstance(theta, TrackedTensor) or not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype if isinstance(theta, TrackedTensor) else type(theta).__name__}")
    size = [int(s) for s in size]
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    nd = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (nd, nd + 1):
        raise ValueError(f"Expected a batch of {nd}D affine matrices of shape Nx{nd}x{nd + 1} for size {size}. Got "
                         f"{list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise ValueError(f"affine_grid: theta holds {theta.shape[0]} matrices but size asks for a batch of {size[0]}")
    axes = []  # x (the last dim) first, as the grid's coordinates are ordered
    for n in reversed(size[2:]):
        steps = np.linspace(-1.0, 1.0, n) if n > 1 else np.zeros(1)
        axes.append(steps if align_corners else steps * (n - 1) / n)
    mesh = list(np.meshgrid(*axes[::-1], indexing="ij"))[::-1]  # coordinates over (D,) H, W, listed x, y(, z)
    base = np.stack(mesh + [np.ones_like(mesh[0])], axis=-1).reshape(-1, nd + 1)
    grid = theta.new_tensor(base).matmul(theta.transpose(1, 2))  # (N, prod(size), nd)
    return grid.reshape([size[0]] + size[2:] + [nd])


def _unnormalize(coord, n, align_corners):
    """[-1, 1] → pixel coordinates: the corner pixels' centres (align_corners) or their outer edges."""
    return (coord + 1) / 2 * (n - 1) if align_corners else ((coord + 1) * n - 1) / 2


def _reflect(coord, twice_low, twice_high):
    """coord reflected into [twice_low / 2, twice_high / 2], as often as needed (PyTorch's reflect_coordinates)."""
    if twice_low == twice_high:
        return coord * 0
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    coord = (coord - low).abs()
    flips = (coord.detach() / span).floor()
    extra = coord - flips * span
    odd = (flips - (flips / 2).floor() * 2) == 1
    return where(odd, span - extra + low, extra + low)


def _pad_coordinate(coord, n, padding_mode, align_corners):
    """Where a coordinate outside the image reads from: the edge (border) or its mirror image (reflection)."""
    if padding_mode == "border":
        return coord.clamp(0, n - 1)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (n - 1)) if align_corners else _reflect(coord, -1, 2 * n - 1)
        return coord.clamp(0, n - 1)
    return coord


def _cubic_weights(t):
    a = _CUBIC_A

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(coord, n, mode, padding_mode, align_corners):
    """Along one axis: the (index, weight) pairs every output position reads, and where each index is inside.

    Indices carry no gradient; the weights carry the gradient with respect to the grid.
    """
    coord = _unnormalize(coord, n, align_corners)
    if mode == "bicubic":  # the taps themselves are padded, one by one
        start = coord.detach().floor()
        positions = [_pad_coordinate(start + k, n, padding_mode, align_corners) for k in (-1, 0, 1, 2)]
        return list(zip(positions, _cubic_weights(coord - start)))
    coord = _pad_coordinate(coord, n, padding_mode, align_corners)
    if mode == "nearest":  # a constant weight: the grid's gradient is zero (as PyTorch reports it), not absent
        return [(coord.detach().round(), coord * 0.0 + 1.0)]
    start = coord.detach().floor()
    frac = coord - start
    return [(start, 1 - frac), (start + 1, frac)]


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Sample input (N, C, H, W) (or (N, C, D, H, W)) at the normalised coordinates of grid (N, H', W', 2):
    grid[..., 0] is x (along W) and grid[..., 1] is y, both in [-1, 1]. Differentiable in input and grid."""
    align_corners = _align_corners_default("grid_sample", align_corners)
    if mode not in GRID_SAMPLE_INTERPOLATION_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in GRID_SAMPLE_PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    for name, t in (("input", input), ("grid", grid)):
        if not isinstance(t, TrackedTensor):
            raise TypeError(f"grid_sample: expected {name} to be a gradlab Tensor, got {type(t).__name__}")
    check_same_device("grid_sample", input, grid)
    if input.ndim not in (4, 5) or grid.ndim != input.ndim or grid.shape[0] != input.shape[0] \
            or grid.shape[-1] != input.ndim - 2:
        raise RuntimeError(f"grid_sample: expected input (N, C, H, W) with grid (N, H_out, W_out, 2), or input "
                           f"(N, C, D, H, W) with grid (N, D_out, H_out, W_out, 3), same N; got input of shape "
                           f"{shape_str(input.shape)} and grid of shape {shape_str(grid.shape)}")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype.name} and grid has {grid.dtype.name}")
    n, c, *sizes = input.shape
    out_shape = tuple(grid.shape[1:-1])
    per_axis = [_taps(grid[..., len(sizes) - 1 - d], size, mode, padding_mode, align_corners)
                for d, size in enumerate(sizes)]  # per spatial dim of input (D, H, W); the grid lists x first
    planes = input.reshape(n, c, -1)
    out = None
    for combo in itertools.product(*per_axis):
        flat, weight, inside = None, None, None
        for (position, w), size in zip(combo, sizes):
            ok = (position >= 0) & (position <= size - 1)
            index = position.clamp(0, size - 1).long()
            flat = index if flat is None else flat * size + index
            inside = ok if inside is None else inside & ok
            weight = w if weight is None else weight * w
        index = flat.reshape(n, 1, -1).expand(n, c, flat[0].numel())
        values = planes.gather(2, index).reshape((n, c) + out_shape)
        term = values * where(inside, weight, 0.0).unsqueeze(1)
        out = term if out is None else out + term
    return out

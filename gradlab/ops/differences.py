"""Finite differences and the trapezoid rule: diff, trapezoid (trapz), cumulative_trapezoid.

All are slices of the tensor subtracted or averaged, so their gradients come from narrow, sub,
mul and sum: a difference sends +g to the later element and −g to the earlier one.
"""

from __future__ import annotations

from .. import dtypes as dt
from ._common import TrackedTensor, describe, normalize_dim
from .joining import cat


def _later_and_earlier(x, axis):
    """x[1:] and x[:-1] along axis, as views."""
    n = x.shape[axis]
    return x.narrow(axis, 1, n - 1), x.narrow(axis, 0, n - 1)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The n-th forward difference along dim: out[i] = x[i + 1] − x[i], n times (bool tensors: x[i + 1] != x[i]).

    prepend / append are joined on before differencing, as numpy's diff does.
    """
    if input.ndim == 0:
        raise RuntimeError(f"diff expects input to be at least one-dimensional, got {describe(input)}")
    if n < 0:
        raise RuntimeError(f"diff: order must be non-negative but got {n}")
    axis = normalize_dim("diff", dim, input.ndim)
    pieces = [input]
    for name, extra, at in (("prepend", prepend, 0), ("append", append, 1)):
        if extra is not None:
            if not isinstance(extra, TrackedTensor) or extra.ndim != input.ndim:
                raise RuntimeError(f"diff expects {name} to have the same number of dimensions as input "
                                   f"({input.ndim}), got {describe(extra)}")
            pieces.insert(len(pieces) * at, extra)
    out = cat(pieces, axis) if len(pieces) > 1 else input
    for _ in range(n):
        if out.shape[axis] == 0:  # differenced more often than there are elements: empty, as in PyTorch
            break
        later, earlier = _later_and_earlier(out, axis)
        out = later != earlier if out.dtype is dt.bool_ else later - earlier
    return out


def _spacing(op, y, x, dx, axis):
    """The widths between samples along axis, shaped to broadcast against y's pairs (or a number)."""
    if x is None:
        return 1 if dx is None else dx
    if not isinstance(x, TrackedTensor):
        return x  # a number: the spacing, as dx
    if x.ndim == 1:
        if x.shape[0] != y.shape[axis]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point, but got {x.shape[0]} "
                               f"values for {y.shape[axis]} samples along dim {axis} of {describe(y)}")
        later, earlier = _later_and_earlier(x, 0)
        return (later - earlier).reshape((-1,) + (1,) * (y.ndim - 1 - axis))
    later, earlier = _later_and_earlier(x, normalize_dim(op, axis - y.ndim, x.ndim))
    return later - earlier


def _areas(op, y, x, dx, dim):
    """The area of each trapezoid between neighbouring samples along dim, and that dim."""
    if x is not None and dx is not None:
        raise RuntimeError(f"{op}: received both x and dx; give the sample points or their spacing, not both")
    axis = normalize_dim(op, dim, y.ndim)
    if not y.dtype.is_floating_point:
        y = y.to(dt.get_default_dtype())
    later, earlier = _later_and_earlier(y, axis)
    return (later + earlier) * _spacing(op, y, x, dx, axis) / 2, axis


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """The integral of y along dim by the trapezoid rule: at sample points x (a tensor), or spacing dx (default 1)."""
    areas, axis = _areas("trapezoid", y, x, dx, dim)
    return areas.sum(axis)


def trapz(y, x=None, *, dx=None, dim=-1):
    """The old name of trapezoid."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """The running integral by the trapezoid rule: one fewer element along dim than y."""
    areas, axis = _areas("cumulative_trapezoid", y, x, dx, dim)
    return areas.cumsum(axis)

"""Finite differences and the trapezoid rule: diff, gradient, trapezoid (trapz), cumulative_trapezoid.

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


def _along(t, axis, ndim):
    """A 1-d tensor of coefficients shaped to broadcast along axis of an ndim tensor."""
    return t.reshape((-1,) + (1,) * (ndim - 1 - axis))


def _derivative_along(f, axis, dx, edge_order):
    """numpy's gradient along one axis: second-order central differences inside, for any spacing dx
    (a 1-d tensor of the n − 1 gaps), and one-sided differences of edge_order at the two ends."""
    n, nd = f.shape[axis], f.ndim

    def at(start, length):
        return f.narrow(axis, start, length)

    def gap(i):  # the i-th gap (negative: from the end), shaped to broadcast against f
        return dx.narrow(0, i % dx.shape[0], 1).reshape((1,) * nd)

    dx1, dx2 = _along(dx.narrow(0, 0, n - 2), axis, nd), _along(dx.narrow(0, 1, n - 2), axis, nd)
    inside = (at(0, n - 2) * (-dx2 / (dx1 * (dx1 + dx2))) + at(1, n - 2) * ((dx2 - dx1) / (dx1 * dx2))
              + at(2, n - 2) * (dx1 / (dx2 * (dx1 + dx2))))
    if edge_order == 1:
        first = (at(1, 1) - at(0, 1)) / gap(0)
        last = (at(n - 1, 1) - at(n - 2, 1)) / gap(-1)
    else:
        a, b = gap(0), gap(1)
        first = (at(0, 1) * (-(2 * a + b) / (a * (a + b))) + at(1, 1) * ((a + b) / (a * b))
                 + at(2, 1) * (-a / (b * (a + b))))
        a, b = gap(-2), gap(-1)
        last = (at(n - 3, 1) * (b / (a * (a + b))) + at(n - 2, 1) * (-(a + b) / (a * b))
                + at(n - 1, 1) * ((2 * b + a) / (b * (a + b))))
    return cat([first, inside, last], axis)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimated derivatives of sampled values along each dim in dim (None: all), as numpy's gradient:
    central differences inside, one-sided ones (of edge_order 1 or 2) at the ends. spacing is one
    number, a number per dim, or a tensor of sample coordinates per dim. Returns one tensor per dim."""
    if edge_order not in (1, 2):
        raise RuntimeError(f"torch.gradient only supports edge_order=1 and edge_order=2, got {edge_order}")
    axes = (tuple(range(input.ndim)) if dim is None else
            tuple(normalize_dim("gradient", d, input.ndim) for d in ((dim,) if isinstance(dim, int) else dim)))
    spacings = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(axes)
    if len(spacings) != len(axes):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or a list of length equal "
                           f"to the dims it differentiates along ({len(axes)}), but got a list of length "
                           f"{len(spacings)}")
    f = input if input.dtype.is_floating_point else input.to(dt.get_default_dtype())
    out = []
    for axis, step in zip(axes, spacings):
        n = f.shape[axis]
        if n < edge_order + 1:
            raise RuntimeError(f"torch.gradient expected each dimension size to be at least edge_order+1, but dim "
                               f"{axis} of {describe(input)} has size {n} for edge_order={edge_order}")
        if isinstance(step, TrackedTensor) and step.ndim == 1:
            if step.shape[0] != n:
                raise RuntimeError(f"torch.gradient expected each tensor of coordinates to have one entry per "
                                   f"sample: {step.shape[0]} coordinates for size {n} of dim {axis}")
            later, earlier = _later_and_earlier(step.to(f.dtype), 0)
            dx = later - earlier
        else:
            dx = f.new_full((n - 1,), float(step))
        out.append(_derivative_along(f, axis, dx, edge_order))
    return tuple(out)

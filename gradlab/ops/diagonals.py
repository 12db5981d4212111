"""Diagonals: diagonal (a view), diagonal_scatter, diag, diag_embed, diagflat, trace, fill_diagonal_.

Two Functions, each the other's backward: ``Diagonal`` reads the diagonal of two dims as a view
(the backend walks it with one stride, the sum of the two dims' strides), and ``DiagonalScatter``
writes values onto it in a copy. Everything else here is built from the two.
"""

from __future__ import annotations

from ..autograd.function import Function
from .autocast import autocast_op
from ..dtypes import int64
from ._common import TrackedTensor, describe, normalize_dim
from .indexing import IndexPut


class Diagonal(Function):
    """The diagonal of dims dim1 and dim2, as a view whose last dim runs along it; g goes back onto the diagonal."""

    derivative = "∂L/∂x = zeros of x's shape with g on the diagonal (diagonal_scatter)"

    @staticmethod
    def forward(ctx, x, offset, dim1, dim2):
        ctx.shape, ctx.dims = x.shape, (offset, dim1, dim2)
        return x._view_of(x.device.backend.diagonal(x.array, offset, dim1, dim2))

    @staticmethod
    def backward(ctx, grad):
        return DiagonalScatter.apply(grad.new_zeros(ctx.shape), grad, *ctx.dims), None, None, None


class DiagonalScatter(Function):
    """A copy of x with src written onto the diagonal of dim1 and dim2: src gets the diagonal's gradient, x the rest."""

    derivative = "∂L/∂x = g with zeros on the diagonal;  ∂L/∂src = diagonal(g)"

    @staticmethod
    def forward(ctx, x, src, offset, dim1, dim2):
        ctx.src_shape, ctx.dims = src.shape, (offset, dim1, dim2)
        backend = x.device.backend
        out = backend.copy(x.array)
        values = src.array if src.dtype is x.dtype else backend.astype(src.array, x.dtype)
        backend.setitem(backend.diagonal(out, offset, dim1, dim2), Ellipsis, values)
        return x._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        grad_x = DiagonalScatter.apply(grad, grad.new_zeros(ctx.src_shape), *ctx.dims) if ctx.needs_input_grad[0] else None
        grad_src = Diagonal.apply(grad, *ctx.dims).clone() if ctx.needs_input_grad[1] else None
        return grad_x, grad_src, None, None, None


def _dims(op, input, dim1, dim2, ndim=None):
    ndim = input.ndim if ndim is None else ndim
    if ndim < 2:
        raise RuntimeError(f"{op}(): expected a tensor with at least 2 dimensions, got {describe(input)}")
    d1, d2 = normalize_dim(op, dim1, ndim), normalize_dim(op, dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"{op}(): diagonal dimensions cannot be identical {dim1}, {dim2}")
    return d1, d2


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The offset-th diagonal of dims dim1 and dim2 (offset > 0: above the main one), as a view, its length last."""
    d1, d2 = _dims("diagonal", input, dim1, dim2)
    return Diagonal.apply(input, offset, d1, d2)


def diagonal_copy(input, offset=0, dim1=0, dim2=1):
    """diagonal, copied out: a tensor of its own rather than a view."""
    return diagonal(input, offset, dim1, dim2).clone()


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """A copy of input with src on its offset-th diagonal of dims dim1 and dim2 (src shaped like that diagonal)."""
    d1, d2 = _dims("diagonal_scatter", input, dim1, dim2)
    if not isinstance(src, TrackedTensor):
        raise TypeError(f"diagonal_scatter(): argument 'src' must be a Tensor, not {type(src).__name__}")
    wanted = input.device.backend.diagonal(input.array, offset, d1, d2).shape
    if tuple(src.shape) != tuple(wanted):
        raise RuntimeError(f"diagonal_scatter(): expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(wanted)}")
    return DiagonalScatter.apply(input, src, offset, d1, d2)


def diag_embed(input, offset=0, dim1=-2, dim2=-1):
    """A tensor with input's last dim on the offset-th diagonal of the new dims dim1 and dim2, zeros elsewhere."""
    d1, d2 = _dims("diag_embed", input, dim1, dim2, input.ndim + 1)
    n = input.shape[-1] + abs(offset)
    shape = list(input.shape[:-1])
    for d in sorted((d1, d2)):
        shape.insert(d, n)
    return DiagonalScatter.apply(input.new_zeros(tuple(shape)), input, offset, d1, d2)


def diag(input, diagonal=0):
    """1-D input: a square matrix with it on the diagonal-th diagonal. 2-D input: that diagonal, copied."""
    if input.ndim == 1:
        n = input.shape[0] + abs(diagonal)
        return DiagonalScatter.apply(input.new_zeros((n, n)), input, diagonal, 0, 1)
    if input.ndim == 2:
        return Diagonal.apply(input, diagonal, 0, 1).clone()
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D ({describe(input)}); "
                       "use diagonal() or diag_embed() for batches")


def diagflat(input, offset=0):
    """A square matrix with the flattened input on its offset-th diagonal."""
    return diag(input.reshape(-1), offset)


@autocast_op("fp32")
def trace(input):
    """The sum of a matrix's main diagonal."""
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim} ({describe(input)})")
    return Diagonal.apply(input, 0, 0, 1).sum()


def _fill_diagonal(input, fill_value, wrap):
    """A copy of input with fill_value where all indices are equal (wrap: continuing below, every cols + 1 rows)."""
    if input.ndim < 2:
        raise RuntimeError(f"fill_diagonal_(): dimensions must larger than 1, got {describe(input)}")
    if input.ndim > 2 and len(set(input.shape)) != 1:
        raise RuntimeError(f"fill_diagonal_(): all dimensions of input must be of equal length, got {describe(input)}")
    # in the flattened tensor the diagonal is every (1 + n + n² + ...)-th element
    rows, cols = input.shape[0], input.shape[-1]
    step = sum(cols ** k for k in range(input.ndim))
    end = input.numel() if wrap or input.ndim > 2 else min(rows, cols) * cols
    backend = input.device.backend
    positions = backend.arange(0, end, step, int64)
    return IndexPut.apply(input.reshape(-1), (positions,), fill_value).reshape(input.shape)


class DiagonalMethods:
    """Tensor's diagonal methods (mixed into gradlab.Tensor): the functional forms, the tensor first."""

    __slots__ = ()

    diagonal, diagonal_scatter, diag, diag_embed, diagflat, trace = (diagonal, diagonal_scatter, diag, diag_embed,
                                                                     diagflat, trace)

    def fill_diagonal_(self, fill_value, wrap=False):
        return self._inplace("fill_diagonal_", _fill_diagonal, fill_value, wrap)

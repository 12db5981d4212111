"""``gradlab.linalg``: norms of vectors and matrices, as ``torch.linalg``.

A vector norm reduces |x| over some dims ((sum |x|^p)^(1/p), max |x| for p = inf); a matrix
norm treats two dims as a matrix: 'fro' is the vector 2-norm of all its entries, ord 1 / inf the
largest column / row sum of |x|. Everything is composed from differentiable Tensor methods.
"""

from __future__ import annotations

import math

from .ops._common import describe, normalize_dim
from .ops.linalg import matmul

__all__ = ["matmul", "matrix_norm", "norm", "vector_norm"]

_MATRIX_ORDS = ("fro", 1, -1, math.inf, -math.inf)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The p-norm of x over dim (None: all elements, flattened); ord is any number, inf or -inf."""
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg.vector_norm: ord must be a number (2, 1, inf, ...), got {ord!r}; "
                        "use linalg.matrix_norm for 'fro' and 'nuc'")
    x = _floating("linalg.vector_norm", x, dtype)
    return x.norm(float(ord), None if dim == () else dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """A norm of the matrices held in the two dims ``dim``: 'fro', 1, -1, inf or -inf.

    ord 1 is the largest column sum of |A| (inf: the largest row sum; -1 and -inf the smallest).
    """
    A = _floating("linalg.matrix_norm", A, dtype)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_norm: The input tensor A must have at least 2 dimensions, but got "
                           f"{describe(A)}; use linalg.vector_norm for vectors")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple (the rows dim and the columns dim), got {dim!r}")
    rows, cols = (normalize_dim("linalg.matrix_norm", d, A.ndim) for d in dim)
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got {tuple(dim)}")
    if ord == "fro":
        return A.norm(2.0, (rows, cols), keepdim)
    if ord not in _MATRIX_ORDS:
        needs_svd = " (it needs the singular values, which gradlab does not compute)" if ord in ("nuc", 2, -2) else ""
        raise RuntimeError(f"linalg.matrix_norm: Order {ord!r} not supported{needs_svd}; "
                           "use 'fro', 1, -1, inf or -inf")
    summed, across = (rows, cols) if abs(ord) == 1 else (cols, rows)  # ord 1: sum down each column
    sums = A.abs().sum(summed, keepdim=True)
    pick = sums.amax if ord > 0 else sums.amin
    return pick((rows, cols), keepdim)  # the summed dim has size 1: reducing it too just drops it


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector or a matrix norm, chosen as torch.linalg.norm chooses.

    dim an int (or 1-tuple): a vector norm; a 2-tuple: a matrix norm. With dim=None, ord=None is the
    2-norm of all elements; any other ord needs a 1-D input (vector norm) or a 2-D one (matrix norm).
    """
    if dim is None:
        if ord is None:
            return vector_norm(A, 2, None, keepdim, dtype=dtype)
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. "
                               f"Got {A.ndim}D ({describe(A)}); pass dim to choose the dims")
        dim = tuple(range(A.ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) == 1:
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if len(dims) == 2:
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}; "
                       "use linalg.vector_norm for a norm over more dims")


def _floating(op, x, dtype):
    """x in dtype (if given), which must be floating point: norms of integers are refused, as in PyTorch."""
    if dtype is not None:
        x = x.to(dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point tensor as input. Got {describe(x)}; "
                           "convert it first with .float() or pass dtype=gradlab.float32")
    return x

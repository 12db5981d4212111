"""``gradlab.linalg``, as ``torch.linalg``: norms, and everything built on the solvers and decompositions.

The Functions with their own gradient rules (inv, solve, det, cholesky, qr, svd, eigh, lu, ...) are
in ``gradlab.ops.solvers`` and ``gradlab.ops.decompositions``; this module adds what is composed from
them and from Tensor methods. A vector norm reduces |x| over some dims ((sum |x|^p)^(1/p), max |x|
for p = inf); a matrix norm treats two dims as a matrix ('fro': all entries; 1 / inf: the largest
column / row sum; 'nuc' / 2 / -2: the sum / largest / smallest singular value).
"""

from __future__ import annotations

import math

from .ops import diagonals
from .ops.autocast import autocast_op
from .ops.numpy_spellings import accept_numpy_spellings
from .ops._common import Tensor, describe, normalize_dim
from .ops._linalg_common import default_tolerances
from .ops.linalg import matmul
from .ops.linalg_api import (LinAlgError, cholesky, cholesky_ex, det, eig, eigh, eigvals, eigvalsh, householder_product,
                             inv, inv_ex, ldl_factor, ldl_factor_ex, ldl_solve, lstsq, lu, lu_factor, lu_factor_ex,
                             lu_solve, matrix_exp, matrix_power, pinv, qr, slogdet, solve, solve_ex, solve_triangular,
                             svd, svdvals)
from .ops.products import linalg_cross as cross, vecdot
from .ops.shape import cat

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "householder_product", "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq",
           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power",
           "matrix_rank", "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd",
           "svdvals", "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

_MATRIX_ORDS = ("fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf)


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The p-norm of x over dim (None: all elements, flattened); ord is any number, inf or -inf."""
    if isinstance(ord, str) or not isinstance(ord, (int, float)):
        raise TypeError(f"linalg.vector_norm: ord must be a number (2, 1, inf, ...), got {ord!r}; "
                        "use linalg.matrix_norm for 'fro' and 'nuc'")
    x = _floating("linalg.vector_norm", x, dtype)
    return x.norm(float(ord), None if dim == () else dim, keepdim)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """A norm of the matrices held in the two dims ``dim``: 'fro', 'nuc', 2, -2, 1, -1, inf or -inf.

    ord 1 is the largest column sum of |A| (inf: the largest row sum; -1 and -inf the smallest);
    'nuc' is the sum of the singular values, 2 the largest and -2 the smallest.
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
        raise RuntimeError(f"linalg.matrix_norm: Order {ord!r} not supported; use 'fro', 'nuc', 2, -2, 1, -1, inf "
                           "or -inf")
    if ord in ("nuc", 2, -2):
        values = svdvals(A.movedim((rows, cols), (-2, -1)))
        out = values.sum(-1) if ord == "nuc" else values.amax(-1) if ord == 2 else values.amin(-1)
        return out.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), (min(rows, cols), max(rows, cols))) if keepdim \
            else out
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


@autocast_op("fp32")
def cond(A, p=None):
    """The condition number ‖A‖ ‖A⁻¹‖: for p None or 2 the ratio of the largest to the smallest singular value.

    p -2 is the inverse ratio; the other norms ('fro', 'nuc', 1, -1, inf, -inf) need square A and
    give inf for a singular one.
    """
    A = _floating("linalg.cond", A, None)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.cond: The input tensor A must have at least 2 dimensions. Got {describe(A)}")
    if p in (None, 2, -2):
        values = svdvals(A)
        ratio = values[..., 0] / values[..., -1]
        return ratio if p != -2 else 1 / ratio
    if A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.cond(ord={p!r}): A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices; use p=2 for a rectangular matrix")
    inverse, info = inv_ex(A)
    out = matrix_norm(A, p) * matrix_norm(inverse, p)
    return out.masked_fill(info > 0, math.inf)


@autocast_op("fp32")
def matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None):
    """How many singular values exceed max(atol, rtol · s_max) (eigenvalue magnitudes when hermitian).

    rtol defaults to eps · max(m, n), or to 0 when atol is given; tol is the old name for atol.
    """
    A = _floating("linalg.matrix_rank", A, None)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.matrix_rank: The input tensor A must have at least 2 dimensions. Got {describe(A)}")
    atol, rtol = default_tolerances(A, tol if atol is None else atol, rtol)
    values = (eigvalsh(A).abs() if hermitian else svdvals(A)).detach()
    if not values.shape[-1]:
        return values.sum(-1).long()
    largest = values.amax(-1, keepdim=True)
    cutoff = largest * (rtol.unsqueeze(-1) if isinstance(rtol, Tensor) else rtol)
    cutoff = cutoff.maximum(atol.unsqueeze(-1).to(cutoff.dtype)) if isinstance(atol, Tensor) else cutoff.clamp_min(atol)
    return (values > cutoff).sum(-1)


def multi_dot(tensors):
    """The product of a chain of matrices; the first may be a row vector and the last a column vector (1-D)."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t.ndim not in allowed:
            where = "first and last tensors" if i in (0, len(tensors) - 1) else "tensors in the middle"
            raise RuntimeError(f"multi_dot(): the {where} must be {' or '.join(map(str, allowed))}D but tensor {i} "
                               f"is {t.ndim}D ({describe(t)})")
    first_vector, last_vector = tensors[0].ndim == 1, tensors[-1].ndim == 1
    tensors[0] = tensors[0].unsqueeze(0) if first_vector else tensors[0]
    tensors[-1] = tensors[-1].unsqueeze(-1) if last_vector else tensors[-1]
    result = tensors[0]
    for i, t in enumerate(tensors[1:], 1):
        if result.shape[-1] != t.shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i - 1} and {i} with shapes {tuple(tensors[i - 1].shape)} and "
                               f"{tuple(t.shape)} cannot be multiplied")
        result = result @ t
    if first_vector:
        result = result.squeeze(0)
    return result.squeeze(-1) if last_vector else result


@autocast_op("fp32")
def tensorinv(A, ind=2):
    """The inverse of A seen as a matrix from its last dims to its first ind dims: tensordot(A⁻¹, A, ind) = I."""
    if ind <= 0:
        raise RuntimeError(f"linalg.tensorinv: Expected a strictly positive integer for 'ind', but got {ind}")
    rows, cols = A.shape[:ind], A.shape[ind:]
    if math.prod(rows) != math.prod(cols):
        raise RuntimeError(f"linalg.tensorinv: Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {math.prod(cols)} != {math.prod(rows)}")
    return inv(A.reshape(math.prod(rows), math.prod(cols))).reshape(cols + rows)


@autocast_op("fp32")
def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.ndim) = B: A's trailing dims (after moving ``dims`` there) are X's shape."""
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        A = A.movedim(dims, list(range(A.ndim - len(dims), A.ndim)))
    x_shape = A.shape[B.ndim:]
    if A.shape[:B.ndim] != B.shape or math.prod(x_shape) != B.numel():
        raise RuntimeError(f"linalg.tensorsolve: Expected self to satisfy the requirement prod(self.shape[other.ndim:])"
                           f" == prod(self.shape[:other.ndim]), but got {math.prod(x_shape)} != {B.numel()} "
                           f"(A of shape {tuple(A.shape)}, B of shape {tuple(B.shape)})")
    return solve(A.reshape(B.numel(), B.numel()), B.reshape(B.numel())).reshape(x_shape)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """torch.diagonal with the matrix dims last by default: the diagonals of a batch of matrices, as a view."""
    return diagonals.diagonal(A, offset, dim1, dim2)


def vander(x, *, N=None):
    """The Vandermonde matrix of x: columns x⁰, x¹, ..., x^(N−1) (N defaults to len(x))."""
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension.")
    N = x.shape[-1] if N is None else N
    if N < 1:
        raise RuntimeError(f"linalg.vander: N must be greater than 1, but got {N}")
    ones = x.new_ones(x.shape + (1,))
    if N == 1:
        return ones
    powers = x.unsqueeze(-1).expand(x.shape + (N - 1,)).cumprod(-1)
    return cat([ones, powers], -1)


def _floating(op, x, dtype):
    """x in dtype (if given), which must be floating point: norms of integers are refused, as in PyTorch."""
    if dtype is not None:
        x = x.to(dtype)
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point tensor as input. Got {describe(x)}; "
                           "convert it first with .float() or pass dtype=gradlab.float32")
    return x


accept_numpy_spellings(globals())  # linalg.vector_norm(x, axis=1, keepdims=True), as torch.linalg takes them

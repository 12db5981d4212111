"""Products built on matmul and einsum: the BLAS-style ``add*`` forms, kron, tensordot, cross, distances.

None of these needs a gradient rule of its own: each is a composition of matmul, einsum and
elementwise Tensor operations, whose rules the engine chains. ``addmm(input, a, b)`` is
``beta * input + alpha * (a @ b)``, the update BLAS's gemm performs, and likewise for the others.
"""

from __future__ import annotations

import math
import warnings

from ..dtypes import int64
from .autocast import autocast_op
from ._common import TrackedTensor, broadcast_shapes, describe, normalize_dim
from ._common import in_place
from .linalg import _fixed_shape, _LETTERS, bmm, einsum, mm, mv, outer
from .shape import stack

# --- beta * input + alpha * product -----------------------------------------------------------------


def _scaled_sum(op, input, product, beta, alpha):
    """beta · input + alpha · product; beta = 0 ignores input entirely (its nan and inf too), as BLAS does."""
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"{op}: expected input to be a gradlab Tensor, got {describe(input)}")
    try:
        fits = broadcast_shapes(input.shape, product.shape) == tuple(product.shape)
    except RuntimeError:
        fits = False
    if not fits:
        raise RuntimeError(f"{op}: input of shape {tuple(input.shape)} cannot be broadcast to the shape of the "
                           f"product, {tuple(product.shape)}")
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return scaled + (input if beta == 1 else input * beta)


@autocast_op("lower")
def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """beta · input + alpha · (mat1 @ mat2), for (n, k) @ (k, m); input broadcasts to (n, m)."""
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


@autocast_op("lower")
def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta · input + alpha · (batch1 @ batch2), one product per batch element."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


@autocast_op("lower")
def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """beta · input + alpha · Σ_b batch1[b] @ batch2[b]: the batch of products summed into one matrix."""
    return _scaled_sum("addbmm", input, bmm(batch1, batch2).sum(0), beta, alpha)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    """beta · input + alpha · (mat @ vec)."""
    return _scaled_sum("addmv", input, mv(mat, vec), beta, alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    """beta · input + alpha · outer(vec1, vec2)."""
    return _scaled_sum("addr", input, outer(vec1, vec2), beta, alpha)


# --- products of whole tensors -----------------------------------------------------------------------


def kron(input, other):
    """The Kronecker product: every element of input times the whole of other, laid out block by block."""
    ndim = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (ndim - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (ndim - other.ndim) + tuple(other.shape))
    spread_a = [n for size in a.shape for n in (size, 1)]  # a's dims at the even places, b's at the odd ones
    spread_b = [n for size in b.shape for n in (1, size)]
    return (a.reshape(spread_a) * b.reshape(spread_b)).reshape([m * n for m, n in zip(a.shape, b.shape)])


def tensordot(a, b, dims=2):
    """Sum of products over dims of a paired with dims of b: dims=n pairs a's last n with b's first n,
    dims=([1, 0], [0, 1]) names them."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif hasattr(dims, "tolist"):
        return tensordot(a, b, dims.tolist() if dims.ndim != 0 else int(dims.item()))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"both dimension lists should have same length, got {dims_a} and {dims_b}")
    dims_a = [normalize_dim("tensordot", d, a.ndim) for d in dims_a]
    dims_b = [normalize_dim("tensordot", d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim {da} "
                               f"and second has size {b.shape[db]} in dim {db}")
    labels = iter(_LETTERS)
    sub_a = [next(labels) for _ in range(a.ndim)]
    sub_b = [next(labels) for _ in range(b.ndim)]
    for da, db in zip(dims_a, dims_b):
        sub_b[db] = sub_a[da]
    out = [c for i, c in enumerate(sub_a) if i not in dims_a] + [c for i, c in enumerate(sub_b) if i not in dims_b]
    return einsum(f"{''.join(sub_a)},{''.join(sub_b)}->{''.join(out)}", a, b)


def inner(input, other):
    """Sum of products over the last dim of each: the result has shape input.shape[:-1] + other.shape[:-1]."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def vdot(input, other):
    """The dot product of two 1-D tensors (real tensors: no conjugation)."""
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input.ndim}D and {other.ndim}D tensors")
    if input.shape != other.shape:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{other.shape[0]}] "
                           f"to have the same number of elements, but got {input.shape[0]} and {other.shape[0]} "
                           "elements respectively")
    _fixed_shape("dot", input, other, 1, 1)
    return input @ other


@autocast_op("lower")
def vecdot(x, y, *, dim=-1):
    """Σ x·y along dim, the other dims broadcast (linalg.vecdot; real tensors: no conjugation)."""
    return (x * y).sum(dim)


def cross(input, other, dim=None):
    """torch.cross: the cross product of 3-vectors along dim. dim=None (deprecated) takes the first dim of size 3."""
    if dim is None:
        shape = broadcast_shapes(input.shape, other.shape, op="cross")
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError(f"cross: no dimension of size 3 in input of shape {tuple(shape)}")
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated. Please either pass the dim "
                      "explicitly or simply use torch.linalg.cross. The default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
    return _cross("cross", input, other, dim)


def linalg_cross(input, other, *, dim=-1):
    """linalg.cross: the cross product of 3-vectors along dim (default the last), batch dims broadcast."""
    return _cross("linalg.cross", input, other, dim)


def _cross(op, a, b, dim):
    ndim = max(a.ndim, b.ndim)
    axis = normalize_dim(op, dim, ndim)
    size_a, size_b = (x.shape[axis - ndim + x.ndim] if axis - ndim + x.ndim >= 0 else 1 for x in (a, b))
    if size_a != 3 or size_b != 3:
        raise RuntimeError(f"{op}: inputs dimension {dim} must have length 3. Got {size_a} and {size_b}")
    a, b = a.movedim(axis - ndim, -1), b.movedim(axis - ndim, -1)
    (a1, a2, a3), (b1, b2, b3) = a.unbind(-1), b.unbind(-1)
    return stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], -1).movedim(-1, axis - ndim)


# --- distances ---------------------------------------------------------------------------------------


@autocast_op("fp32")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between every row of x1 (..., P, M) and every row of x2 (..., R, M): (..., P, R).

    compute_mode is accepted for PyTorch's signature; the distances are always taken from differences.
    """
    if compute_mode not in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                            "donot_use_mm_for_euclid_dist"):
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    return _distance(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


def pdist(input, p=2):
    """The p-norm distance between each pair of rows i < j of an (N, M) input, in row-major order: N(N−1)/2 values."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got {p}")
    n = input.shape[0]
    backend = input.device.backend
    first = [i for i in range(n) for _ in range(i + 1, n)]
    second = [j for i in range(n) for j in range(i + 1, n)]
    index = [input._wrap(backend.asarray(rows, int64)) for rows in (first, second)]
    return _distance(input.index_select(0, index[0]) - input.index_select(0, index[1]), p)


def _distance(diff, p):
    """‖diff‖_p over the last dim; at a zero distance the gradient is 0 (a subgradient), as in PyTorch."""
    if p == 0:
        return (diff != 0).to(diff.dtype).sum(-1)
    if p == math.inf:
        return diff.abs().amax(-1)
    zero = (diff == 0).all(-1, keepdim=True)
    safe = diff.masked_fill(zero, 1.0)  # keeps the power's derivative finite where every difference is 0
    if p == 1:
        return diff.abs().sum(-1)
    norm = (safe.abs() ** p).sum(-1) ** (1.0 / p)
    return norm.masked_fill(zero.squeeze(-1), 0.0)


def chain_matmul(*matrices):
    """The product of 2-D matrices, left to right (deprecated in PyTorch for linalg.multi_dot).

    ``gradlab.chain_matmul(..., out=r)`` writes into r, as every torch-level function does (ops/out_argument.py)."""
    if len(matrices) == 1 and isinstance(matrices[0], (list, tuple)):
        matrices = tuple(matrices[0])
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    result = matrices[0]
    for m in matrices[1:]:
        result = mm(result, m)
    return result


# --- Tensor methods ------------------------------------------------------------------------------------


def _adjoint_check(x, name):
    if x.ndim < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. "
                           f"Got {x.ndim}-D tensor.")


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    """``torch.addmv_``: addmv written into input."""
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


class ProductMethods:
    """Tensor's product methods (mixed into gradlab.Tensor); the in-place forms write the result back."""

    __slots__ = ()

    addmm, addbmm, baddbmm, addmv, addr = addmm, addbmm, baddbmm, addmv, addr
    kron, inner, vdot, cross = kron, inner, vdot, cross

    addmm_ = in_place("addmm_", addmm)
    addbmm_ = in_place("addbmm_", addbmm)
    baddbmm_ = in_place("baddbmm_", baddbmm)
    addmv_ = in_place("addmv_", addmv)
    addr_ = in_place("addr_", addr)

    @property
    def mH(self):
        """The conjugate transpose of the last two dims; for real tensors, mT."""
        _adjoint_check(self, "mH")
        return self.transpose(-2, -1)

    @property
    def H(self):
        """The conjugate transpose of a matrix; for real tensors, its transpose."""
        if self.ndim != 2:
            raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor. "
                               "For batches of matrices, consider using tensor.mH")
        return self.transpose(0, 1)

    def adjoint(self):
        """The conjugate transpose of the last two dims, as a view; for real tensors, the transpose."""
        _adjoint_check(self, "adjoint()")
        return self.transpose(-2, -1)

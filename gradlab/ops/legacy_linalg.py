"""The torch-level linear-algebra names (``torch.svd``, ``torch.qr``, ``torch.lu``, ...), built on ``linalg``.

They predate ``torch.linalg`` and differ from it in small ways kept here on purpose: ``torch.svd``
returns V (not Vᵀ) and takes ``some=``, ``triangular_solve(b, A)`` puts b first and also returns a
copy of A, ``lu`` returns pivots with optional infos.
"""

from __future__ import annotations

import math
from collections import namedtuple

from ._common import describe
from .autocast import autocast_op
from ._linalg_common import check_matrix, eye_like, raise_on_info
from .decompositions import permutation_matrix
from . import linalg_api as linalg
from .linalg_api import householder_matrix, householder_product, lu_factor_ex, matrix_exp, solve_triangular, svdvals
from .shape import cat

slogdet_result = namedtuple("slogdet", ("sign", "logabsdet"))
svd_result = namedtuple("svd", ("U", "S", "V"))
qr_result = namedtuple("qr", ("Q", "R"))
triangular_solve_result = namedtuple("triangular_solve", ("solution", "cloned_coefficient"))
lu_unpack_result = namedtuple("lu_unpack", ("P", "L", "U"))
geqrf_result = namedtuple("geqrf", ("a", "tau"))


def det(input):
    """torch.det: linalg.det."""
    return linalg.det(input)


def slogdet(input):
    """torch.slogdet: linalg.slogdet's (sign, logabsdet)."""
    return slogdet_result(*linalg.slogdet(input))


def logdet(input):
    """log(det A): nan for a negative determinant, -inf for a singular matrix."""
    sign, logabsdet = linalg.slogdet(check_matrix("logdet", input))
    return logabsdet.masked_fill(sign < 0, math.nan)


@autocast_op("fp32")
def inverse(input):
    """torch.inverse: linalg.inv."""
    return linalg.inv(input)


@autocast_op("fp32")
def pinverse(input, rcond=1e-15):
    """torch.pinverse: linalg.pinv with the relative tolerance rcond."""
    return linalg.pinv(input, rtol=rcond)


@autocast_op("fp32")
def cholesky(input, upper=False):
    """torch.cholesky: linalg.cholesky, with upper also positional."""
    return linalg.cholesky(input, upper=upper)


def matrix_power(input, n):
    """torch.matrix_power: linalg.matrix_power."""
    return linalg.matrix_power(input, n)


def svd(input, some=True, compute_uv=True):
    """(U, S, V) with A = U diag(S) Vᵀ — V itself, unlike linalg.svd's Vh. some=False: full square U and V.

    compute_uv=False returns zero-filled U (m x m) and V (n x n) beside the singular values.
    """
    check_matrix("svd", input, square=False)
    if not compute_uv:
        m, n = input.shape[-2:]
        S = linalg.svdvals(input)
        return svd_result(input.new_zeros(input.shape[:-2] + (m, m)), S, input.new_zeros(input.shape[:-2] + (n, n)))
    U, S, Vh = linalg.svd(input, full_matrices=not some)
    return svd_result(U, S, Vh.transpose(-2, -1))


def qr(input, some=True):
    """(Q, R): some=True the reduced decomposition, some=False the complete one."""
    return qr_result(*linalg.qr(input, "reduced" if some else "complete"))


@autocast_op("fp32")
def cholesky_solve(input, input2, upper=False):
    """X with A X = B, given B (input) and A's Cholesky factor L (input2, or U = Lᵀ when upper)."""
    L = input2.transpose(-2, -1) if upper else input2
    y = solve_triangular(L, input, upper=False)
    return solve_triangular(L.transpose(-2, -1), y, upper=True)


@autocast_op("fp32")
def cholesky_inverse(input, upper=False):
    """A⁻¹ from A's Cholesky factor: (L Lᵀ)⁻¹ = L⁻ᵀ L⁻¹."""
    check_matrix("cholesky_inverse", input)
    return cholesky_solve(eye_like(input, input.shape[-1]).expand(input.shape), input, upper)


def triangular_solve(input, A, upper=True, transpose=False, unitriangular=False):
    """(solution, cloned_coefficient): X with A X = b (Aᵀ X = b when transpose) and a copy of A. Note b first."""
    coefficient = A.transpose(-2, -1) if transpose else A
    solution = solve_triangular(coefficient, input, upper=upper != transpose, unitriangular=unitriangular)
    return triangular_solve_result(solution, A.clone())


def lu(A, pivot=True, get_infos=False):
    """(A_LU, pivots) or (A_LU, pivots, infos) with get_infos: linalg.lu_factor_ex without its checks."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    if not get_infos:
        raise_on_info("torch.lu", info, lambda k: f"U[{k},{k}] is zero and using it on lu_solve would result in a "
                      "division by zero. Pass get_infos=True to get the infos instead of an error")
    return (LU, pivots, info) if get_infos else (LU, pivots)


@autocast_op("fp32")
def lu_solve(b, LU_data, LU_pivots):
    """torch.lu_solve(b, LU, pivots): linalg.lu_solve with b first."""
    return linalg.lu_solve(LU_data, LU_pivots, b)


def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """(P, L, U) from the packed LU and its pivots; a part not unpacked is returned empty."""
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    empty = LU_data.new_zeros((0,))
    P = permutation_matrix(LU_data, LU_pivots, m) if unpack_pivots else empty
    if not unpack_data:
        return lu_unpack_result(P, empty, empty)
    L = LU_data[..., :, :k].tril(-1) + eye_like(LU_data, m, k)
    return lu_unpack_result(P, L, LU_data[..., :k, :].triu())


def nuclear_norm(input, dim=None, keepdim=False):
    """The sum of the singular values of the matrices in dims ``dim`` (default: a 2-D input's two dims)."""
    if dim is None:
        if input.ndim != 2:
            raise RuntimeError(f"nuclear_norm: Expected a tensor with 2 dimensions, but got a tensor with {input.ndim} "
                               "dimensions instead; pass dim=(rows, cols) for a batch")
        dim = (0, 1)
    rows, cols = (d % input.ndim for d in dim)
    norm = svdvals(input.movedim((rows, cols), (-2, -1))).sum(-1)
    return norm.unsqueeze(-1).unsqueeze(-1).movedim((-2, -1), sorted((rows, cols))) if keepdim else norm


def geqrf(input):
    """(a, tau), LAPACK's compact QR: R on and above a's diagonal, Householder vectors below it (no gradient)."""
    check_matrix("geqrf", input, square=False)
    a, tau = input.device.backend.geqrf(input.detach().array)
    return geqrf_result(input._wrap(a), input._wrap(tau))


def orgqr(input, tau):
    """Q's first n columns from geqrf's (a, tau): linalg.householder_product."""
    return householder_product(input, tau)


def ormqr(input, tau, other, left=True, transpose=False):
    """Q @ other (left=False: other @ Q; transpose: with Qᵀ), Q the full product of the reflectors in (input, tau)."""
    size = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != size:
        raise RuntimeError(f"ormqr: input.shape[-2] must equal other.shape[{-2 if left else -1}] ({size}), but got "
                           f"input of shape {tuple(input.shape)} and other of shape {tuple(other.shape)}")
    Q = householder_matrix(check_matrix("ormqr", input, square=False), tau)
    Q = Q.transpose(-2, -1) if transpose else Q
    return Q @ other if left else other @ Q


def adjoint(input):
    """The transpose of the last two dims as a view (the conjugate transpose, for real tensors)."""
    return input.adjoint()


def _removed(name, replacement):
    """A function PyTorch removed in 1.9: calling it raises PyTorch's error, which names the replacement."""
    def function(*args, **kwargs):
        raise RuntimeError(f"This function was deprecated since version 1.9 and is now removed. `torch.{name}` is "
                           f"deprecated in favor of `{replacement}`.")

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Removed in PyTorch 1.9 (it raises, as there): use {replacement}."
    return function


REMOVED = {"solve": "torch.linalg.solve", "lstsq": "torch.linalg.lstsq", "symeig": "torch.linalg.eigh",
           "eig": "torch.linalg.eig (complex; for a symmetric matrix torch.linalg.eigh)",
           "matrix_rank": "torch.linalg.matrix_rank"}
removed = {name: _removed(name, replacement) for name, replacement in REMOVED.items()}


class LegacyLinalgMethods:
    """Tensor's linear-algebra methods (mixed into gradlab.Tensor): x.det(), x.inverse(), x.svd(), ..."""

    __slots__ = ()

    det, logdet, inverse, pinverse, svd, qr = det, logdet, inverse, pinverse, svd, qr
    cholesky_solve, cholesky_inverse, triangular_solve = cholesky_solve, cholesky_inverse, triangular_solve
    lu, lu_solve, matrix_power, matrix_exp = lu, lu_solve, matrix_power, matrix_exp
    geqrf, slogdet, cholesky = geqrf, slogdet, cholesky
    solve, lstsq, symeig, eig = (removed[name] for name in ("solve", "lstsq", "symeig", "eig"))

    def orgqr(self, input2):
        return orgqr(self, input2)

    def ormqr(self, input2, input3, left=True, transpose=False):
        return ormqr(self, input2, input3, left, transpose)


solve, lstsq, symeig, eig, matrix_rank = (removed[name] for name in ("solve", "lstsq", "symeig", "eig", "matrix_rank"))

__all__ = ["adjoint", "cholesky", "cholesky_inverse", "cholesky_solve", "det", "eig", "geqrf",
           "inverse", "logdet", "lstsq", "lu", "lu_solve", "lu_unpack", "matrix_exp", "matrix_power", "matrix_rank",
           "nuclear_norm", "orgqr", "ormqr", "pinverse", "qr", "slogdet", "solve", "svd", "symeig", "triangular_solve"]

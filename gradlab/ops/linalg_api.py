"""``torch.linalg``'s solvers and decompositions: PyTorch's signatures, checks and named results.

Each function checks its input as PyTorch does (floating point, at least 2-D, square where needed),
calls one Function from ``solvers`` or ``decompositions``, and returns PyTorch's named tuple. The
``_ex`` forms return the per-matrix ``info`` instead of raising.
"""

from __future__ import annotations

from collections import namedtuple

from ._common import TrackedTensor, broadcast_shapes, describe
from .autocast import autocast_op
from ._linalg_common import (LinAlgError, check_floating, check_matrix, check_same_dtype, default_tolerances, eps,
                             eye_like, raise_on_info)
from .decompositions import Cholesky, Eigh, LdlFactor, LdlSolve, Lu, Qr, Svd, permutation_matrix
from .shape import cat
from .determinants import Det, Slogdet
from .solvers import Inv, MatrixExp, Pinv, Solve, SolveTriangular

slogdet_result = namedtuple("linalg_slogdet", ("sign", "logabsdet"))
inv_ex_result = namedtuple("linalg_inv_ex", ("inverse", "info"))
solve_ex_result = namedtuple("linalg_solve_ex", ("result", "info"))
cholesky_ex_result = namedtuple("linalg_cholesky_ex", ("L", "info"))
qr_result = namedtuple("linalg_qr", ("Q", "R"))
svd_result = namedtuple("linalg_svd", ("U", "S", "Vh"))
eigh_result = namedtuple("linalg_eigh", ("eigenvalues", "eigenvectors"))
lu_result = namedtuple("linalg_lu", ("P", "L", "U"))
lu_factor_result = namedtuple("linalg_lu_factor", ("LU", "pivots"))
lu_factor_ex_result = namedtuple("linalg_lu_factor_ex", ("LU", "pivots", "info"))
ldl_factor_result = namedtuple("linalg_ldl_factor", ("LD", "pivots"))
ldl_factor_ex_result = namedtuple("linalg_ldl_factor_ex", ("LD", "pivots", "info"))
lstsq_result = namedtuple("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))


# --- determinants and inverses ---------------------------------------------------------------------


def det(A):
    """The determinant of each square matrix; 0 for a singular one (its gradient is the cofactor matrix)."""
    return Det.apply(check_matrix("linalg.det", A))


def slogdet(A):
    """(sign, log|det A|): the determinant without overflow; log|det| is -inf for a singular matrix."""
    return slogdet_result(*Slogdet.apply(check_matrix("linalg.slogdet", A)))


@autocast_op("fp32")
def inv(A):
    """A⁻¹ for each square matrix; a singular one raises LinAlgError naming the zero pivot."""
    return Inv.apply(check_matrix("linalg.inv", A), True)[0]


def inv_ex(A, *, check_errors=False):
    """(inverse, info): info is 0 for an invertible matrix, else the 1-based index of the zero pivot."""
    return inv_ex_result(*Inv.apply(check_matrix("linalg.inv_ex", A), check_errors))


# --- solving A X = B ---------------------------------------------------------------------------------


@autocast_op("fp32")
def solve(A, B, *, left=True):
    """X with A X = B (left=False: X A = B). B may be a vector, or a batch of them; batches broadcast."""
    return solve_ex(A, B, left=left, check_errors=True).result


def solve_ex(A, B, *, left=True, check_errors=False):
    """(result, info), as solve but reporting a singular A in info instead of raising."""
    check_matrix("linalg.solve", A)
    _check_b("linalg.solve", A, B)
    vector = _is_vector_rhs(A, B)
    if vector:
        B = B.unsqueeze(-1)
    if not left:  # X A = B is Aᵀ Xᵀ = Bᵀ
        A, B = A.transpose(-2, -1), B.transpose(-2, -1)
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({A.shape[-2]}x{A.shape[-1]} and "
                           f"{B.shape[-2]}x{B.shape[-1]})")
    _broadcast_batch("linalg.solve", A, B)
    x, info = Solve.apply(A, B, check_errors)
    x = x if left else x.transpose(-2, -1)
    return solve_ex_result(x.squeeze(-1) if vector else x, info)


def _is_vector_rhs(A, B):
    """PyTorch's rule: B is a (batch of) vector(s) if it is 1-D, or has one dim fewer than A and A's batch shape."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])


def _check_b(op, A, B):
    if not isinstance(B, TrackedTensor):
        raise TypeError(f"{op}: expected B to be a gradlab Tensor, got {describe(B)}")
    check_floating(op, B)
    check_same_dtype(op, A, B)


def _broadcast_batch(op, A, B):
    try:
        return broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except RuntimeError:
        raise RuntimeError(f"{op}: the batch dimensions of A {tuple(A.shape)} and B {tuple(B.shape)} (all but the "
                           "last two) do not broadcast; expand one of them to the other's batch shape") from None


def solve_triangular(A, B, *, upper, left=True, unitriangular=False):
    """X with A X = B (left=False: X A = B) for triangular A, reading only A's upper or lower triangle."""
    check_matrix("linalg.solve_triangular", A)
    _check_b("linalg.solve_triangular", A, B)
    if B.ndim < 2:
        raise RuntimeError(f"linalg.solve_triangular: The input tensor B must have at least 2 dimensions. "
                           f"Got {describe(B)}; for a vector b use b.unsqueeze(-1)")
    if not left:  # X A = B is Aᵀ Xᵀ = Bᵀ, and Aᵀ has the other triangle
        return solve_triangular(A.transpose(-2, -1), B.transpose(-2, -1), upper=not upper,
                                unitriangular=unitriangular).transpose(-2, -1)
    if B.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    _broadcast_batch("linalg.solve_triangular", A, B)
    return SolveTriangular.apply(A, B, bool(upper), bool(unitriangular))


# --- decompositions ----------------------------------------------------------------------------------


@autocast_op("fp32")
def cholesky(A, *, upper=False):
    """L (lower triangular, positive diagonal) with A = L Lᵀ; upper=True gives U = Lᵀ with A = Uᵀ U."""
    return cholesky_ex(A, upper=upper, check_errors=True).L


def cholesky_ex(A, *, upper=False, check_errors=False):
    """(L, info): info is the order of the first leading minor that is not positive-definite (0: none)."""
    L, info = Cholesky.apply(check_matrix("linalg.cholesky", A), check_errors)
    return cholesky_ex_result(L.transpose(-2, -1) if upper else L, info)


def qr(A, mode="reduced"):
    """(Q, R) with A = Q R, Q orthonormal columns, R upper triangular. mode 'reduced', 'complete' or 'r'."""
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of 'reduced' (default), 'r', "
                           "or 'complete'")
    return qr_result(*Qr.apply(check_matrix("linalg.qr", A, square=False), mode))


def svd(A, full_matrices=True, *, driver=None):
    """(U, S, Vh) with A = U diag(S) Vh, S descending. full_matrices=False keeps k = min(m, n) columns."""
    _check_driver("linalg.svd", driver)
    return svd_result(*Svd.apply(check_matrix("linalg.svd", A, square=False), bool(full_matrices)))


@autocast_op("fp32")
def svdvals(A, *, driver=None):
    """The singular values, descending (differentiable: their gradient is U diag(g) Vᵀ)."""
    _check_driver("linalg.svdvals", driver)
    return Svd.apply(check_matrix("linalg.svdvals", A, square=False), False)[1]


def _check_driver(op, driver):
    if driver is not None:
        raise RuntimeError(f"{op}: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER "
                           "backend.")


def eigh(A, UPLO="L"):
    """(eigenvalues ascending, eigenvectors as columns) of a symmetric A, reading its UPLO triangle."""
    _check_uplo("linalg.eigh", UPLO)
    return eigh_result(*Eigh.apply(check_matrix("linalg.eigh", A), UPLO == "L"))


@autocast_op("fp32")
def eigvalsh(A, UPLO="L"):
    """The eigenvalues of a symmetric A, ascending."""
    _check_uplo("linalg.eigvalsh", UPLO)
    return Eigh.apply(check_matrix("linalg.eigvalsh", A), UPLO == "L")[0]


def _check_uplo(op, UPLO):
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO!r}")


def _complex_refused(op):
    raise RuntimeError(f"{op}: the eigenvalues of a general real matrix can be complex, and gradlab has no complex "
                       "dtypes. For a symmetric matrix use linalg.eigh (or linalg.eigvalsh), whose results are real.")


def eig(A):
    """Refused: a general matrix's eigenvalues are complex; use eigh for a symmetric one."""
    _complex_refused("linalg.eig")


@autocast_op("fp32")
def eigvals(A):
    """Refused: a general matrix's eigenvalues are complex; use eigvalsh for a symmetric one."""
    _complex_refused("linalg.eigvals")


def lu(A, *, pivot=True):
    """(P, L, U) with A = P L U: P a permutation, L unit lower triangular, U upper triangular."""
    return lu_result(*Lu.apply(check_matrix("linalg.lu", A, square=False), pivot))


def lu_factor(A, *, pivot=True):
    """(LU, pivots): L and U packed in one matrix (L's unit diagonal left out) and LAPACK's 1-based pivots."""
    LU, pivots, info = lu_factor_ex(A, pivot=pivot)
    _raise_if_singular_u("torch.linalg.lu_factor", info)
    return lu_factor_result(LU, pivots)


def _raise_if_singular_u(op, info):
    raise_on_info(op, info, lambda k: f"U[{k},{k}] is zero and using it on lu_solve would result in a division by "
                  "zero. If you still want to perform the factorization, consider calling linalg.lu(A, pivot) or "
                  "linalg.lu_factor_ex(A, pivot)")


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    """(LU, pivots, info), as lu_factor; info is the 1-based index of the first zero on U's diagonal (0: none)."""
    check_matrix("linalg.lu_factor", A, square=False)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")
    _, pivots, info = A.device.backend.lu_factor(A.array)
    pivots, info = A._wrap(pivots), A._wrap(info)
    if check_errors:
        _raise_if_singular_u("torch.linalg.lu_factor_ex", info)
    _, L, U = Lu.apply(A, True)  # the packed matrix is L's strict lower part plus U, so its gradient flows
    m, n = A.shape[-2:]
    if m > n:
        U = cat([U, U.new_zeros(U.shape[:-2] + (m - n, n))], -2)
    elif m < n:
        L = cat([L, L.new_zeros(L.shape[:-2] + (m, n - m))], -1)
    return lu_factor_ex_result(L.tril(-1) + U, pivots, info)


def lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """X with A X = B (adjoint: Aᵀ X = B; left=False: X A = B) from lu_factor's (LU, pivots)."""
    check_matrix("linalg.lu_solve", LU)
    _check_b("linalg.lu_solve", LU, B)
    if not left:  # X A = B is Aᵀ Xᵀ = Bᵀ
        return lu_solve(LU, pivots, B.transpose(-2, -1), adjoint=not adjoint).transpose(-2, -1)
    if B.ndim < 2 or B.shape[-2] != LU.shape[-1]:
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({LU.shape[-2]}x{LU.shape[-1]} and {describe(B)})")
    P = permutation_matrix(LU, pivots, LU.shape[-1])
    if adjoint:  # Aᵀ = Uᵀ Lᵀ Pᵀ, so X = P L⁻ᵀ U⁻ᵀ B
        y = SolveTriangular.apply(LU.transpose(-2, -1), B, False, False)
        return P @ SolveTriangular.apply(LU.transpose(-2, -1), y, True, True)
    y = SolveTriangular.apply(LU, P.transpose(-2, -1) @ B, False, True)  # L Y = Pᵀ B
    return SolveTriangular.apply(LU, y, True, False)  # U X = Y


def ldl_factor(A, *, hermitian=False):
    """(LD, pivots): A = L D Lᵀ for symmetric (possibly indefinite) A, with Bunch–Kaufman pivoting.

    L (unit lower) and the block-diagonal D (1 x 1 and 2 x 2 blocks) are packed in LD's lower
    triangle; pivots are LAPACK's (negative for a 2 x 2 block). Only A's lower triangle is read.
    """
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return ldl_factor_result(LD, pivots)


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """(LD, pivots, info): info is the 1-based index of the first exactly-zero diagonal block of D (0: none)."""
    LD, pivots, info = LdlFactor.apply(check_matrix("torch.linalg.ldl_factor_ex", A))
    if check_errors:
        raise_on_info("torch.linalg.ldl_factor", info, lambda k: f"D[{k},{k}] is exactly zero, so the matrix is "
                      "singular and ldl_solve with these factors would divide by zero; use ldl_factor_ex to get "
                      "info instead of this error")
    return ldl_factor_ex_result(LD, pivots, info)


def ldl_solve(LD, pivots, B, *, hermitian=False):
    """X with A X = B from ldl_factor's (LD, pivots)."""
    check_matrix("torch.linalg.ldl_solve", LD)
    _check_b("torch.linalg.ldl_solve", LD, B)
    if B.ndim < 2 or B.shape[-2] != LD.shape[-1]:
        raise RuntimeError(f"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is {LD.shape[-2]} by "
                           f"{LD.shape[-1]} but each b matrix is {describe(B)}")
    return LdlSolve.apply(LD, pivots, B)


# --- built on the decompositions ---------------------------------------------------------------------


def pinv(A, *, atol=None, rtol=None, hermitian=False):
    """The pseudo-inverse V diag(1/s) Uᵀ, dropping singular values s ≤ max(atol, rtol · s_max).

    rtol defaults to eps · max(m, n), or to 0 when only atol is given (PyTorch's rule).
    """
    check_matrix("linalg.pinv", A, square=hermitian)
    atol, rtol = default_tolerances(A, atol, rtol)
    return Pinv.apply(A, atol, rtol, bool(hermitian))


def lstsq(A, B, rcond=None, *, driver=None):
    """The least-squares solution of A X ≈ B (the minimum-norm one when A is rank deficient), as pinv(A) @ B.

    What else is reported depends on the driver, as in PyTorch: 'gelsy' (the default) gives the rank,
    'gelsd' and 'gelss' the rank, the singular values and (for a tall full-rank A) the squared residuals,
    'gels' the residuals alone.
    """
    check_matrix("linalg.lstsq", A, square=False)
    _check_b("linalg.lstsq", A, B)
    driver = "gelsy" if driver is None else driver
    if driver not in ("gels", "gelsy", "gelsd", "gelss"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), "
                           f"but got {driver!r}")
    vector = B.ndim == A.ndim - 1
    B2 = B.unsqueeze(-1) if vector else B
    if B2.shape[-2] != A.shape[-2]:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    rtol = eps(A.dtype) * max(A.shape[-2:]) if rcond is None or rcond < 0 else rcond
    solution = Pinv.apply(A, 0.0, rtol, False) @ B2
    values = svdvals(A).detach()
    cutoff = values.amax(-1, keepdim=True) * rtol if values.shape[-1] else values
    rank = (values > cutoff).sum(-1) if driver != "gels" else A.new_zeros((0,)).long()
    m, n = A.shape[-2:]
    empty = A.new_zeros((0,))
    residuals = empty
    if driver != "gelsy" and m > n and (driver == "gels" or bool((rank == n).all())):  # gels assumes full rank
        residuals = ((A @ solution - B2) ** 2).sum(-2)
    singular_values = values if driver in ("gelsd", "gelss") else empty
    return lstsq_result(solution.squeeze(-1) if vector else solution, residuals, rank, singular_values)


def matrix_exp(A):
    """exp(A) = I + A + A²/2! + ..., for each square matrix."""
    return MatrixExp.apply(check_matrix("linalg.matrix_exp", A))


def matrix_power(A, n):
    """A multiplied by itself n times by repeated squaring; n = 0 gives I, a negative n powers of A⁻¹."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"linalg.matrix_power: n must be an int, got {n!r}")
    if n < 0:
        check_matrix("linalg.matrix_power", A)  # it takes an inverse: floating point only
    elif A.ndim < 2 or A.shape[-1] != A.shape[-2]:  # integer matrices have non-negative powers, as in PyTorch
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but got {describe(A)}")
    if n == 0:
        return eye_like(A, A.shape[-1]).expand(A.shape).clone()
    if n < 0:
        A, n = inv(A), -n
    result, square = None, A
    while n:
        if n & 1:
            result = square if result is None else result @ square
        n >>= 1
        if n:
            square = square @ square
    return result


@autocast_op("fp32")
def householder_product(A, tau):
    """Q = H₁ H₂ ⋯ H_k, its first n columns, with H_i = I − τ_i v_i v_iᵀ and v_i the i-th column of A
    below its diagonal (with a 1 on it): how geqrf stores Q."""
    check_matrix("linalg.householder_product", A, square=False)
    m, n = A.shape[-2:]
    if m < n or tau.ndim < 1 or tau.shape[-1] > n or tau.shape[:-1] != A.shape[:-2]:
        raise RuntimeError(f"linalg.householder_product: expected A (..., m, n) with m >= n and tau (..., k) with "
                           f"k <= n and A's batch shape, but got A of shape {tuple(A.shape)} and tau of shape "
                           f"{tuple(tau.shape)}")
    return householder_matrix(A, tau)[..., :, :n]


def householder_matrix(A, tau):
    """The whole m x m product of the reflectors stored in A's columns (below the diagonal) and tau."""
    m, n = A.shape[-2:]
    reflectors = A.tril(-1) + eye_like(A, m, n)
    Q = eye_like(A, m).expand(A.shape[:-2] + (m, m))
    for i in range(tau.shape[-1]):
        v = reflectors[..., :, i:i + 1]
        Q = Q - ((Q @ v) * tau[..., i:i + 1].unsqueeze(-1)) @ v.transpose(-2, -1)
    return Q


__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "det", "eig", "eigh", "eigvals", "eigvalsh", "householder_product",
           "inv", "inv_ex", "ldl_factor", "ldl_factor_ex", "ldl_solve", "lstsq", "lu", "lu_factor", "lu_factor_ex",
           "lu_solve", "matrix_exp", "matrix_power", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular",
           "svd", "svdvals"]

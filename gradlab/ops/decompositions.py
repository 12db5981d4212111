"""Matrix decompositions: Cholesky, QR, SVD, the symmetric eigendecomposition, and LU.

Each factor is a function of A, so a loss of the factors has a gradient for A. The rules come from
differentiating the defining identity (A = L Lᵀ, A = Q R, A = U S Vᵀ, ...) and using what the
factors are constrained to be (triangular, orthogonal, diagonal). Where the factors are not unique
(the signs of singular vectors, eigenvectors of a repeated eigenvalue) only a loss that does not
depend on that choice has a meaningful gradient, as in PyTorch.
"""

from __future__ import annotations

from ..autograd.function import Function
from ._linalg_common import diag_embed, eye_like, raise_on_info
from .shape import cat
from .solvers import SolveTriangular


def _mT(x):
    return x.transpose(-2, -1)


def _solve_right_upper(B, R):
    """B R⁻ᵀ for upper-triangular R, as a triangular solve: (R⁻¹ Bᵀ)ᵀ."""
    return _mT(SolveTriangular.apply(R, _mT(B), True, False))


class Cholesky(Function):
    """A = L Lᵀ: A receives L⁻ᵀ Φ(Lᵀ g) L⁻¹, Φ taking the lower triangle with a halved diagonal (symmetrized).

    Only A's lower triangle is read; its gradient is given as the symmetric matrix, as in PyTorch.
    """

    derivative = "∂L/∂A = L⁻ᵀ · sym(Φ(Lᵀ · g)) · L⁻¹,  Φ = lower triangle with half the diagonal"

    @staticmethod
    def forward(ctx, A, check_errors):
        L, info = A.device.backend.cholesky(A.array)
        L, info = A._wrap(L), A._wrap(info)
        if check_errors:
            raise_on_info("linalg.cholesky", info, lambda k: "The factorization could not be completed because the "
                          f"input is not positive-definite (the leading minor of order {k} is not positive-definite).")
        ctx.save_for_backward(L)
        ctx.mark_non_differentiable(info)
        return L, info

    @staticmethod
    def backward(ctx, grad, grad_info):
        (L,) = ctx.saved_tensors
        phi = (_mT(L) @ grad).tril()
        phi = 0.5 * (phi + _mT(phi.tril(-1)))  # symmetric, with half of phi's diagonal
        left = SolveTriangular.apply(_mT(L), phi, True, False)  # L⁻ᵀ phi
        return _mT(SolveTriangular.apply(_mT(L), _mT(left), True, False)), None  # (L⁻ᵀ phi) L⁻¹


class Qr(Function):
    """A = Q R: A receives (g_Q + Q · copyltu(M)) R⁻ᵀ with M = R g_Rᵀ − g_Qᵀ Q (for m ≥ n).

    copyltu(M) mirrors M's lower triangle onto its upper one. A wide A = [X | Y] is split so that
    X = Q R₁ is square (Liao et al., 2019).
    """

    derivative = "∂L/∂A = (g_Q + Q · copyltu(R · g_Rᵀ − g_Qᵀ · Q)) · R⁻ᵀ  (m ≥ n; wide A split into [X | Y])"

    @staticmethod
    def forward(ctx, A, mode):
        ctx.mode = mode
        Q, R = (A._wrap(f) for f in A.device.backend.qr(A.array, mode))
        ctx.save_for_backward(A, Q, R)
        return Q, R

    @staticmethod
    def backward(ctx, grad_q, grad_r):
        A, Q, R = ctx.saved_tensors
        m, n = A.shape[-2:]
        if ctx.mode == "r":
            raise RuntimeError("linalg.qr_backward: The derivative of linalg.qr depends on Q, which is not computed "
                               "when mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to "
                               "differentiate through linalg.qr.")
        if ctx.mode == "complete" and m > n:
            raise RuntimeError("linalg.qr_backward: The QR decomposition is not differentiable when mode='complete' "
                               "and nrows > ncols.")
        if m >= n:
            return _qr_square_backward(Q, R, grad_q, grad_r), None
        X, Y = A[..., :, :m], A[..., :, m:]
        R1, grad_r1, grad_r2 = R[..., :, :m], grad_r[..., :, :m], grad_r[..., :, m:]
        grad_x = _qr_square_backward(Q, R1, grad_q + Y @ _mT(grad_r2), grad_r1)
        return cat([grad_x, Q @ grad_r2], -1), None


def _qr_square_backward(Q, R, grad_q, grad_r):
    M = R @ _mT(grad_r) - _mT(grad_q) @ Q
    copyltu = M.tril() + _mT(M.tril(-1))
    return _solve_right_upper(grad_q + Q @ copyltu, R)


class Svd(Function):
    """A = U diag(S) Vᵀ: A receives U (diag(g_S) + the skew parts of Uᵀg_U, Vᵀg_V over s_j² − s_i²) Vᵀ.

    Plus, for a tall (wide) A, the part of g_U (g_V) outside the span of U (V), over S. The terms
    over s_j² − s_i² blow up when two singular values meet: the singular vectors are not unique there.
    """

    derivative = ("∂L/∂A = U · (diag(g_S) + (skew(Uᵀ g_U) S + S skew(Vᵀ g_V)) / (s_j² − s_i²)) · Vᵀ "
                  "+ (I − U Uᵀ) g_U S⁻¹ Vᵀ + U S⁻¹ g_Vᵀ (I − V Vᵀ)")

    @staticmethod
    def forward(ctx, A, full_matrices):
        U, S, Vh = (A._wrap(f) for f in A.device.backend.svd(A.array, full_matrices))
        ctx.save_for_backward(U, S, Vh)
        return U, S, Vh

    @staticmethod
    def backward(ctx, grad_u, grad_s, grad_vh):
        U, S, Vh = ctx.saved_tensors
        m, n = U.shape[-2], Vh.shape[-1]
        k = S.shape[-1]
        # full_matrices: the columns past k are not determined by A; as in PyTorch, only the first k take part
        U, grad_u = U[..., :, :k], grad_u[..., :, :k]
        Vh, grad_vh = Vh[..., :k, :], grad_vh[..., :k, :]
        S2 = S * S
        E = S2.unsqueeze(-2) - S2.unsqueeze(-1) + eye_like(S, k)  # s_j² − s_i², with ones on the diagonal
        UtgU = _mT(U) @ grad_u
        VtgV = Vh @ _mT(grad_vh)
        inner = ((UtgU - _mT(UtgU)) * S.unsqueeze(-2) + S.unsqueeze(-1) * (VtgV - _mT(VtgV))) / E
        inner = inner + diag_embed(grad_s)
        if m > n:
            gUSinv = grad_u / S.unsqueeze(-2)
            return (U @ inner + gUSinv - U @ (_mT(U) @ gUSinv)) @ Vh, None
        if m < n:
            SinvgVh = grad_vh / S.unsqueeze(-1)
            return U @ (inner @ Vh + SinvgVh - (SinvgVh @ _mT(Vh)) @ Vh), None
        return U @ inner @ Vh, None


class Eigh(Function):
    """A = V diag(λ) Vᵀ (symmetric A): A receives V (diag(g_λ) + skew(Vᵀ g_V) / 2(λ_j − λ_i)) Vᵀ.

    Only one triangle of A is read; the gradient is given as a symmetric matrix, as in PyTorch.
    """

    derivative = "∂L/∂A = V · (diag(g_λ) + (Vᵀg_V − g_Vᵀ V) / (2 (λ_j − λ_i))) · Vᵀ"

    @staticmethod
    def forward(ctx, A, lower):
        values, vectors = (A._wrap(f) for f in A.device.backend.eigh(A.array, lower))
        ctx.save_for_backward(values, vectors)
        return values, vectors

    @staticmethod
    def backward(ctx, grad_values, grad_vectors):
        values, V = ctx.saved_tensors
        n = values.shape[-1]
        VtgV = _mT(V) @ grad_vectors
        gap = values.unsqueeze(-2) - values.unsqueeze(-1) + eye_like(values, n)  # λ_j − λ_i, ones on the diagonal
        inner = 0.5 * (VtgV - _mT(VtgV)) / gap + diag_embed(grad_values)
        return V @ inner @ _mT(V), None


class Lu(Function):
    """A = P L U: A receives P L⁻ᵀ (strict lower of Lᵀg_L + upper of g_U Uᵀ) U⁻ᵀ (square A).

    A wide or tall A is split so that one square block carries that rule and the rest is a solve.
    """

    derivative = "∂L/∂A = P · L⁻ᵀ · (tril₋₁(Lᵀ · g_L) + triu(g_U · Uᵀ)) · U⁻ᵀ  (square; wide/tall split)"

    @staticmethod
    def forward(ctx, A, pivot):
        if not pivot:
            raise RuntimeError("linalg.lu: LU without pivoting is not implemented on the CPU (as in PyTorch); "
                               "use pivot=True")
        backend = A.device.backend
        lu, pivots, info = backend.lu_factor(A.array)
        P, L, U = _unpack(A, A._wrap(lu), A._wrap(pivots))
        ctx.save_for_backward(P, L, U)
        ctx.mark_non_differentiable(P)
        return P, L, U

    @staticmethod
    def backward(ctx, grad_p, grad_l, grad_u):
        P, L, U = ctx.saved_tensors
        m, n = L.shape[-2], U.shape[-1]
        if m == n:
            return P @ _lu_square_backward(L, U, grad_l, grad_u), None
        if m < n:  # A = P L [U1 | U2]: U2 = L⁻¹ Pᵀ A2
            U1, U2, grad_u1, grad_u2 = U[..., :, :m], U[..., :, m:], grad_u[..., :, :m], grad_u[..., :, m:]
            grad_a2 = SolveTriangular.apply(_mT(L), grad_u2, True, True)  # L⁻ᵀ g_U2
            grad_a1 = _lu_square_backward(L, U1, grad_l - grad_a2 @ _mT(U2), grad_u1)
            return P @ cat([grad_a1, grad_a2], -1), None
        # m > n: Pᵀ A = [L1; L2] U, L2 = (Pᵀ A)₂ U⁻¹
        L1, L2, grad_l1, grad_l2 = L[..., :n, :], L[..., n:, :], grad_l[..., :n, :], grad_l[..., n:, :]
        grad_a2 = _solve_right_upper(grad_l2, U)  # g_L2 U⁻ᵀ
        grad_a1 = _lu_square_backward(L1, U, grad_l1, grad_u - _mT(L2) @ grad_a2)
        return P @ cat([grad_a1, grad_a2], -2), None


class LdlFactor(Function):
    """A = L D Lᵀ with symmetric pivoting: no gradient, as in PyTorch (use cholesky or solve to differentiate)."""

    derivative = "no gradient (PyTorch defines none for linalg.ldl_factor; backward raises)"

    @staticmethod
    def forward(ctx, A):
        ld, pivots, info = A.device.backend.ldl_factor(A.array)
        pivots, info = A._wrap(pivots), A._wrap(info)
        ctx.mark_non_differentiable(pivots, info)
        return A._wrap(ld), pivots, info

    @staticmethod
    def backward(ctx, grad_ld, grad_pivots, grad_info):
        raise RuntimeError("derivative for linalg.ldl_factor is not implemented (in PyTorch neither); to "
                           "differentiate, factor with linalg.cholesky or solve with linalg.solve")


class LdlSolve(Function):
    """X = A⁻¹B from A's L D Lᵀ factors: B receives A⁻¹ g (A is symmetric); the factors get no gradient."""

    derivative = "∂L/∂B = A⁻¹ · g  (A = L D Lᵀ symmetric);  no gradient for LD, as in PyTorch"

    @staticmethod
    def forward(ctx, LD, pivots, B):
        ctx.save_for_backward(LD, pivots)
        return B._wrap(B.device.backend.ldl_solve(LD.array, pivots.array, B.array))

    @staticmethod
    def backward(ctx, grad):
        LD, pivots = ctx.saved_tensors
        if ctx.needs_input_grad[0]:
            raise RuntimeError("derivative for linalg.ldl_solve with respect to LD is not implemented (in PyTorch "
                               "neither); to differentiate through A, use linalg.solve")
        return None, None, LdlSolve.apply(LD, pivots, grad)


def _lu_square_backward(L, U, grad_l, grad_u):
    """L⁻ᵀ (tril₋₁(Lᵀ g_L) + triu(g_U Uᵀ)) U⁻ᵀ, for the square factors of Pᵀ A = L U."""
    middle = (_mT(L) @ grad_l).tril(-1) + (grad_u @ _mT(U)).triu()
    left = SolveTriangular.apply(_mT(L), middle, True, True)
    return _solve_right_upper(left, U)


def _unpack(A, lu, pivots):
    """(P, L, U) from the packed LU and its pivots: L unit lower (m x k), U upper (k x n), P a permutation matrix."""
    m, n = lu.shape[-2:]
    k = min(m, n)
    L = lu[..., :, :k].tril(-1) + eye_like(lu, m, k)
    U = lu[..., :k, :].triu()
    return permutation_matrix(A, pivots, m), L, U


def permutation_matrix(A, pivots, m):
    """P with A = P L U, from LAPACK's pivots (row i was swapped with row pivots[i] − 1, in order)."""
    return A._wrap(A.device.backend.lu_permutation(pivots.array, m, A.dtype))


__all__ = ["Cholesky", "Eigh", "LdlFactor", "LdlSolve", "Lu", "Qr", "Svd", "permutation_matrix"]

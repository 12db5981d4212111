"""Linear-algebra kernels: factorizations and solvers, computed on the host with numpy.

These cannot be composed from the elementwise primitives at any sensible cost, so every backend
inherits this host version (its arrays go to numpy and back through ``to_numpy``/``asarray``) and
overrides a kernel only to run it on its own device. numpy.linalg's LAPACK does the work where it
has the routine; LU, substitution, LDLᵀ and the exponential are written out below. Like LAPACK, the kernels that can fail report
an ``info`` per matrix (0: fine, k > 0: where it failed) instead of raising; the ops turn info into
PyTorch's errors. Every kernel takes batches (..., m, n).
"""

from __future__ import annotations

import math

import numpy as np

from ..dtypes import int32


class LinalgKernels:
    """Host (numpy) kernels for factorizations and solvers, mixed into every Backend."""

    def _host(self, a):
        return np.asarray(self.to_numpy(a))

    def _back(self, a, like):
        return self.asarray(np.array(a, order="C", copy=None), self.dtype_of(like))

    def _info(self, info):
        return self.asarray(info, int32)

    # --- LU with partial pivoting: the factorization the solvers report failures from -----------

    def lu_factor(self, a):
        """(LU, pivots, info): L (unit lower, below the diagonal) and U packed in one array, LAPACK's getrf.

        pivots[i] (1-based) is the row swapped with row i at step i; info is the 1-based index of the
        first exactly-zero pivot U[k-1, k-1] (0 if none).
        """
        lu, pivots, info = _lu_factor(self._host(a))
        return self._back(lu, a), self._info(pivots), self._info(info)

    def lu_permutation(self, pivots, m, dtype):
        """The m x m permutation matrix P of A = P L U, from the pivots: the row swaps replayed in order."""
        pivots = self._host(pivots)
        order = _swap_rows(np.broadcast_to(np.arange(m), pivots.shape[:-1] + (m,)), pivots)
        p_transposed = order[..., :, None] == np.arange(m)  # row i of Pᵀ A is row order[i] of A
        return self.asarray(np.ascontiguousarray(np.swapaxes(p_transposed, -1, -2)), dtype)

    def solve_triangular(self, a, b, upper, unitriangular):
        """X with A X = B for triangular A, by substitution (a zero on the diagonal gives inf/nan, as in LAPACK)."""
        return self._back(_solve_triangular(self._host(a), self._host(b), upper, unitriangular), b)

    # --- factorizations and solvers that can fail: LAPACK's info --------------------------------

    def inv(self, a):
        """(A⁻¹, info): info > 0 where U of A's LU has a zero on its diagonal (then A⁻¹ holds inf/nan)."""
        host = self._host(a)
        try:
            return self._back(np.linalg.inv(host), a), self._info(np.zeros(host.shape[:-2], np.int32))
        except np.linalg.LinAlgError:  # LAPACK's inverse failed: redo it by LU, which says which pivot was zero
            eye = np.broadcast_to(np.eye(host.shape[-1], dtype=host.dtype), host.shape)
            lu, pivots, info = _lu_factor(host)
            return self._back(_lu_solve(lu, pivots, eye), a), self._info(info)

    def solve(self, a, b):
        """(X, info) with A X = B, batch dims broadcast; info as for inv."""
        host_a, host_b = self._host(a), self._host(b)
        shape = np.broadcast_shapes(host_a.shape[:-2], host_b.shape[:-2])
        host_a = np.broadcast_to(host_a, shape + host_a.shape[-2:])
        host_b = np.broadcast_to(host_b, shape + host_b.shape[-2:])
        try:
            return self._back(np.linalg.solve(host_a, host_b), b), self._info(np.zeros(shape, np.int32))
        except np.linalg.LinAlgError:
            lu, pivots, info = _lu_factor(host_a)
            return self._back(_lu_solve(lu, pivots, host_b), b), self._info(info)

    def ldl_factor(self, a):
        """(LD, pivots, info): A = L D Lᵀ with Bunch–Kaufman pivoting, L and D packed in A's lower triangle
        (LAPACK's sytrf); info is the 1-based index of the first zero on D's diagonal (0: none)."""
        ld, pivots, info = _ldl_factor(self._host(a))
        return self._back(ld, a), self._info(pivots), self._info(info)

    def ldl_solve(self, ld, pivots, b):
        """X with A X = B from ldl_factor's (LD, pivots)."""
        return self._back(_ldl_solve(self._host(ld), self._host(pivots), self._host(b)), b)

    def cholesky(self, a):
        """(L, info) with A = L Lᵀ from A's lower triangle; info is the order of the first leading minor
        that is not positive-definite (L is then zero from that column on)."""
        host = self._host(a)
        try:
            return self._back(np.linalg.cholesky(host), a), self._info(np.zeros(host.shape[:-2], np.int32))
        except np.linalg.LinAlgError:  # LAPACK's Cholesky failed: redo it column by column to find where
            low, info = _cholesky(host)
            return self._back(low, a), self._info(info)

    # --- determinants and the decompositions that always succeed --------------------------------

    def det(self, a):
        return self._back(np.linalg.det(self._host(a)), a)

    def slogdet(self, a):
        sign, logabsdet = np.linalg.slogdet(self._host(a))
        return self._back(sign, a), self._back(logabsdet, a)

    def qr(self, a, mode):
        """(Q, R) by Householder reflections (LAPACK geqrf); mode 'reduced', 'complete' or 'r' (Q empty)."""
        host = self._host(a)
        if mode == "r":
            return self._back(np.zeros((0,), host.dtype), a), self._back(np.linalg.qr(host, mode="r"), a)
        q, r = np.linalg.qr(host, mode=mode)
        return self._back(q, a), self._back(r, a)

    def geqrf(self, a):
        """(a, tau), LAPACK's geqrf: R on and above the diagonal, the Householder vectors below it, their scales."""
        h, tau = np.linalg.qr(self._host(a), mode="raw")  # numpy hands LAPACK's column-major result back transposed
        return self._back(np.swapaxes(h, -1, -2), a), self._back(tau, a)

    def svd(self, a, full_matrices):
        """(U, S, Vh) with A = U diag(S) Vh, S descending (LAPACK gesdd)."""
        u, s, vh = np.linalg.svd(self._host(a), full_matrices=full_matrices)
        return self._back(u, a), self._back(s, a), self._back(vh, a)

    def eigh(self, a, lower):
        """(eigenvalues ascending, eigenvectors as columns) of a symmetric matrix, from one triangle."""
        values, vectors = np.linalg.eigh(self._host(a), UPLO="L" if lower else "U")
        return self._back(values, a), self._back(vectors, a)

    def matrix_exp(self, a):
        """exp(A) = Σ Aᵏ/k!, by scaling and squaring: exp(A) = exp(A / 2ˢ)^(2ˢ) with ‖A / 2ˢ‖ ≤ 1/2,
        where an 18-term Taylor sum is exact to double precision."""
        host = self._host(a)
        norm = float(np.abs(host).sum(-2).max()) if host.size else 0.0  # the 1-norm bounds every eigenvalue
        squarings = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 and math.isfinite(norm) else 0
        x = host / 2.0 ** squarings
        eye = np.broadcast_to(np.eye(host.shape[-1], dtype=host.dtype), host.shape)
        result = eye.copy()
        for k in range(18, 0, -1):  # Horner: I + x/1 (I + x/2 (I + ... (I + x/18)))
            result = eye + (x @ result) / k
        for _ in range(squarings):
            result = result @ result
        return self._back(result, a)


# --- the host algorithms themselves (numpy arrays in, numpy arrays out) -------------------------


def _matrices(a, core=2):
    """a with its batch dims flattened into one (kept as an explicit size, so an empty batch works too)."""
    return a.reshape((math.prod(a.shape[:a.ndim - core]),) + a.shape[a.ndim - core:])


def _lu_factor(a):
    """Gaussian elimination with partial pivoting (the largest |entry| of each column moves up), batched."""
    *batch, m, n = a.shape
    lu = _matrices(np.array(a, dtype=np.result_type(a.dtype, np.float32)))
    rows = np.arange(lu.shape[0])
    k = min(m, n)
    pivots = np.zeros((lu.shape[0], k), dtype=np.int32)
    info = np.zeros(lu.shape[0], dtype=np.int32)
    for j in range(k):
        p = j + np.argmax(np.abs(lu[:, j:, j]), axis=1)
        pivots[:, j] = p + 1
        top, chosen = lu[rows, j].copy(), lu[rows, p].copy()
        lu[rows, j], lu[rows, p] = chosen, top
        pivot = lu[:, j, j]
        zero = pivot == 0
        info[(info == 0) & zero] = j + 1
        safe = np.where(zero, 1, pivot)  # a zero pivot leaves the column below it as it is, as getrf does
        lu[:, j + 1:, j] = np.where(zero[:, None], lu[:, j + 1:, j], lu[:, j + 1:, j] / safe[:, None])
        lu[:, j + 1:, j + 1:] -= lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return lu.reshape(*batch, m, n), pivots.reshape(*batch, k), info.reshape(batch)


def _swap_rows(rows, pivots):
    """A copy of rows (..., m, ...) with row j swapped with row pivots[j] − 1, for j in order (LAPACK's laswp)."""
    shape = np.broadcast_shapes(rows.shape[:pivots.ndim - 1], pivots.shape[:-1])
    out = np.array(np.broadcast_to(rows, shape + rows.shape[pivots.ndim - 1:]))
    flat = out.reshape((math.prod(shape),) + out.shape[len(shape):])
    swaps = _matrices(np.broadcast_to(pivots, shape + pivots.shape[-1:]), 1).astype(np.int64) - 1
    batch = np.arange(flat.shape[0])
    for j in range(swaps.shape[-1]):
        top, other = flat[batch, j].copy(), flat[batch, swaps[:, j]].copy()
        flat[batch, j], flat[batch, swaps[:, j]] = other, top
    return out


def _lu_solve(lu, pivots, b):
    """Swap B's rows as the pivots say, then solve L Y = Pᵀ B and U X = Y."""
    shape = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2], pivots.shape[:-1])
    swapped = _swap_rows(np.broadcast_to(b, shape + b.shape[-2:]).astype(np.result_type(lu, b)),
                         np.broadcast_to(pivots, shape + pivots.shape[-1:]))
    y = _solve_triangular(lu, swapped, upper=False, unitriangular=True)
    return _solve_triangular(lu, y, upper=True, unitriangular=False)


def _cholesky(a):
    """(L, info) column by column: info is the first column whose pivot is not positive (L is zero from there)."""
    flat = _matrices(a)
    low = np.zeros_like(flat)
    info = np.zeros(flat.shape[0], np.int32)
    for j in range(flat.shape[-1]):
        d = flat[:, j, j] - np.einsum("bk,bk->b", low[:, j, :j], low[:, j, :j])
        info[(info == 0) & ((d <= 0) | np.isnan(d))] = j + 1
        fine = info == 0
        root = np.sqrt(np.where(fine, d, 1))
        column = (flat[:, j + 1:, j] - np.einsum("bik,bk->bi", low[:, j + 1:, :j], low[:, j, :j])) / root[:, None]
        low[:, j, j] = np.where(fine, root, 0)
        low[:, j + 1:, j] = np.where(fine[:, None], column, 0)
    return low.reshape(a.shape), info.reshape(a.shape[:-2])


def _solve_triangular(a, b, upper, unitriangular):
    """Back (upper) or forward (lower) substitution, one row at a time, for every column and batch at once."""
    n = a.shape[-1]
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, shape + a.shape[-2:])
    x = np.array(np.broadcast_to(b, shape + b.shape[-2:]), dtype=np.result_type(a, b))
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in (range(n - 1, -1, -1) if upper else range(n)):
            done = slice(i + 1, n) if upper else slice(0, i)
            x[..., i, :] -= np.einsum("...k,...kj->...j", a[..., i, done], x[..., done, :])
            if not unitriangular:
                x[..., i, :] /= a[..., i, i, None]
    return x


_BUNCH_KAUFMAN_ALPHA = (1 + math.sqrt(17)) / 8  # the pivot threshold that bounds element growth best


def _ldl_factor(a):
    """A = L D Lᵀ with symmetric pivoting (Bunch–Kaufman), LAPACK's unblocked sytf2 on the lower triangle.

    D is block diagonal with 1 x 1 and 2 x 2 blocks. pivots[k] > 0: rows and columns k and pivots[k]
    were swapped and D[k, k] is a 1 x 1 block; pivots[k] = pivots[k+1] < 0: rows k+1 and −pivots[k]
    were swapped and D[k:k+2, k:k+2] is a 2 x 2 block (all 1-based).
    """
    *batch, n, _ = a.shape
    flat = _matrices(np.tril(np.array(a, dtype=np.result_type(a.dtype, np.float32))))
    pivots = np.zeros((flat.shape[0], n), np.int32)
    info = np.zeros(flat.shape[0], np.int32)
    for A, piv, b in zip(flat, pivots, range(flat.shape[0])):
        info[b] = _sytf2_lower(A, piv)
    return flat.reshape(*batch, n, n), pivots.reshape(*batch, n), info.reshape(batch)


def _sytf2_lower(A, piv):
    """Factor one matrix in place (0-based indices here; pivots are written 1-based); returns info."""
    n, info, k = A.shape[0], 0, 0
    while k < n:
        step, absakk = 1, abs(A[k, k])
        imax = k + 1 + int(np.argmax(np.abs(A[k + 1:, k]))) if k < n - 1 else k
        colmax = abs(A[imax, k]) if k < n - 1 else 0.0
        if max(absakk, colmax) == 0 or np.isnan(absakk):
            info, kp = info or k + 1, k
        else:
            if absakk >= _BUNCH_KAUFMAN_ALPHA * colmax:
                kp = k
            else:
                rowmax = np.abs(A[imax, k:imax]).max()
                if imax < n - 1:
                    rowmax = max(rowmax, np.abs(A[imax + 1:, imax]).max())
                if absakk >= _BUNCH_KAUFMAN_ALPHA * colmax * (colmax / rowmax):
                    kp = k
                elif abs(A[imax, imax]) >= _BUNCH_KAUFMAN_ALPHA * rowmax:
                    kp = imax
                else:
                    kp, step = imax, 2
            kk = k + step - 1
            if kp != kk:  # swap rows and columns kk and kp of the trailing lower triangle
                A[kp + 1:, [kk, kp]] = A[kp + 1:, [kp, kk]]
                column, row = A[kk + 1:kp, kk].copy(), A[kp, kk + 1:kp].copy()
                A[kk + 1:kp, kk], A[kp, kk + 1:kp] = row, column
                A[kk, kk], A[kp, kp] = A[kp, kp], A[kk, kk]
                if step == 2:
                    A[k + 1, k], A[kp, k] = A[kp, k], A[k + 1, k]
            if step == 1 and k < n - 1:
                x = A[k + 1:, k].copy()
                A[k + 1:, k + 1:] -= np.tril(np.outer(x, x)) / A[k, k]
                A[k + 1:, k] = x / A[k, k]
            elif step == 2 and k < n - 2:
                d21 = A[k + 1, k]
                d11, d22 = A[k + 1, k + 1] / d21, A[k, k] / d21
                d21 = (1 / (d11 * d22 - 1)) / d21
                wk = d21 * (d11 * A[k + 2:, k] - A[k + 2:, k + 1])
                wkp1 = d21 * (d22 * A[k + 2:, k + 1] - A[k + 2:, k])
                A[k + 2:, k + 2:] -= np.tril(np.outer(A[k + 2:, k], wk) + np.outer(A[k + 2:, k + 1], wkp1))
                A[k + 2:, k], A[k + 2:, k + 1] = wk, wkp1
        if step == 1:
            piv[k] = kp + 1
        else:
            piv[k] = piv[k + 1] = -(kp + 1)
        k += step
    return info


def _ldl_solve(ld, pivots, b):
    """X with A X = B from sytf2's factors: undo L and D (with the swaps), then Lᵀ (LAPACK's sytrs)."""
    shape = np.broadcast_shapes(ld.shape[:-2], b.shape[:-2], pivots.shape[:-1])
    n = ld.shape[-1]
    lds = _matrices(np.broadcast_to(ld, shape + (n, n)))
    pivs = _matrices(np.broadcast_to(pivots, shape + (n,)), 1)
    x = _matrices(np.array(np.broadcast_to(b, shape + b.shape[-2:]), dtype=np.result_type(ld, b)))
    for A, piv, B in zip(lds, pivs, x):
        k = 0
        while k < n:  # L D Y = P B
            if piv[k] > 0:
                kp = piv[k] - 1
                B[[k, kp]] = B[[kp, k]]
                B[k + 1:] -= np.outer(A[k + 1:, k], B[k])
                B[k] /= A[k, k]
                k += 1
            else:
                kp = -piv[k] - 1
                B[[k + 1, kp]] = B[[kp, k + 1]]
                B[k + 2:] -= np.outer(A[k + 2:, k], B[k]) + np.outer(A[k + 2:, k + 1], B[k + 1])
                akm1k = A[k + 1, k]
                akm1, ak = A[k, k] / akm1k, A[k + 1, k + 1] / akm1k
                bkm1, bk = B[k] / akm1k, B[k + 1] / akm1k
                denom = akm1 * ak - 1
                B[k], B[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
                k += 2
        k = n - 1
        while k >= 0:  # Lᵀ X = Y, then the swaps undone
            B[k] -= A[k + 1:, k] @ B[k + 1:]
            if piv[k] > 0:
                kp = piv[k] - 1
                B[[k, kp]] = B[[kp, k]]
                k -= 1
            else:
                B[k - 1] -= A[k + 1:, k - 1] @ B[k + 1:]
                kp = -piv[k] - 1
                B[[k, kp]] = B[[kp, k]]
                k -= 2
    return x.reshape(shape + b.shape[-2:])

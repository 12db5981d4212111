"""Linear-algebra kernels: factorizations and solvers, computed on the host with numpy's LAPACK.

These cannot be composed from the elementwise primitives at any sensible cost, so every backend
inherits this host version (its arrays go to numpy and back through ``to_numpy``/``asarray``) and
overrides a kernel only to run it on its own device. Like LAPACK, the kernels that can fail report
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
        swaps = self._host(pivots).astype(np.int64) - 1
        order = np.array(np.broadcast_to(np.arange(m), swaps.shape[:-1] + (m,)))
        flat, flat_swaps = order.reshape(-1, m), swaps.reshape(-1, swaps.shape[-1])
        rows = np.arange(flat.shape[0])
        for j in range(flat_swaps.shape[-1]):
            top, other = flat[rows, j].copy(), flat[rows, flat_swaps[:, j]].copy()
            flat[rows, j], flat[rows, flat_swaps[:, j]] = other, top
        p_transposed = order[..., :, None] == np.arange(m)  # row i of Pᵀ A is row order[i] of A
        return self.asarray(np.ascontiguousarray(np.swapaxes(p_transposed, -1, -2)), dtype)

    def lu_solve(self, lu, pivots, b):
        """X with A X = B from A's packed LU and its pivots."""
        return self._back(_lu_solve(self._host(lu), self._host(pivots), self._host(b)), b)

    def solve_triangular(self, a, b, upper, unitriangular):
        """X with A X = B for triangular A, by substitution (a zero on the diagonal gives inf/nan, as in LAPACK)."""
        return self._back(_solve_triangular(self._host(a), self._host(b), upper, unitriangular), b)

    # --- solvers that can fail: info from the LU factorization ----------------------------------

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

    def cholesky(self, a):
        """(L, info) with A = L Lᵀ from A's lower triangle; info is the order of the first leading minor
        that is not positive-definite (L is then zero from that column on)."""
        host = self._host(a)
        try:
            return self._back(np.linalg.cholesky(host), a), self._info(np.zeros(host.shape[:-2], np.int32))
        except np.linalg.LinAlgError:
            pass
        flat = host.reshape(-1, *host.shape[-2:])
        n = flat.shape[-1]
        low = np.zeros_like(flat)
        info = np.zeros(flat.shape[0], np.int32)
        for j in range(n):  # column by column, to find where it fails
            d = flat[:, j, j] - np.einsum("bk,bk->b", low[:, j, :j], low[:, j, :j])
            bad = (d <= 0) | np.isnan(d)
            info[(info == 0) & bad] = j + 1
            root = np.sqrt(np.where(bad, 1, d))
            column = (flat[:, j + 1:, j] - np.einsum("bik,bk->bi", low[:, j + 1:, :j], low[:, j, :j])) / root[:, None]
            ok = (info == 0)[:, None]
            low[:, j, j] = np.where(info == 0, root, 0)
            low[:, j + 1:, j] = np.where(ok, column, 0)
        return self._back(low.reshape(host.shape), a), self._info(info.reshape(host.shape[:-2]))

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

    def svd(self, a, full_matrices):
        """(U, S, Vh) with A = U diag(S) Vh, S descending (LAPACK gesdd)."""
        u, s, vh = np.linalg.svd(self._host(a), full_matrices=full_matrices)
        return self._back(u, a), self._back(s, a), self._back(vh, a)

    def svdvals(self, a):
        return self._back(np.linalg.svd(self._host(a), compute_uv=False), a)

    def eigh(self, a, lower):
        """(eigenvalues ascending, eigenvectors as columns) of a symmetric matrix, from one triangle."""
        values, vectors = np.linalg.eigh(self._host(a), UPLO="L" if lower else "U")
        return self._back(values, a), self._back(vectors, a)

    def eigvalsh(self, a, lower):
        return self._back(np.linalg.eigvalsh(self._host(a), UPLO="L" if lower else "U"), a)

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


def _lu_factor(a):
    """Gaussian elimination with partial pivoting (the largest |entry| of each column moves up), batched."""
    *batch, m, n = a.shape
    lu = np.array(a, dtype=np.result_type(a.dtype, np.float32)).reshape(-1, m, n)
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


def _lu_solve(lu, pivots, b):
    """Swap B's rows as the pivots say, then solve L Y = P B and U X = Y."""
    shape = np.broadcast_shapes(lu.shape[:-2], b.shape[:-2], pivots.shape[:-1])
    x = np.array(np.broadcast_to(b, shape + b.shape[-2:]), dtype=np.result_type(lu, b))
    flat = x.reshape(-1, *x.shape[-2:])
    swaps = np.broadcast_to(pivots, shape + pivots.shape[-1:]).reshape(-1, pivots.shape[-1]) - 1
    rows = np.arange(flat.shape[0])
    for j in range(swaps.shape[-1]):
        top, other = flat[rows, j].copy(), flat[rows, swaps[:, j]].copy()
        flat[rows, j], flat[rows, swaps[:, j]] = other, top
    y = _solve_triangular(lu, flat.reshape(x.shape), upper=False, unitriangular=True)
    return _solve_triangular(lu, y, upper=True, unitriangular=False)


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

"""torch.linalg's solvers and decompositions, the torch-level names, and the add*/kron/cross products.

Forward values against numpy and PyTorch, float64 gradchecks (with gauge-invariant losses where the
factors are not unique: signs of singular vectors and eigenvectors), and PyTorch's error messages.
"""

import math
import warnings

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck
from helpers import assert_close, leaf, randn, requires_torch, to_torch, torch


def _spd(n, batch=(), seed=0):
    """A symmetric positive-definite matrix (batch)."""
    x = randn(*batch, n, n, seed=seed)
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def _sym(x):
    return (x + x.transpose(-2, -1)) / 2


def _t(x):
    return torch.tensor(np.asarray(x))


# --- forward values against numpy ----------------------------------------------------------------------

NUMPY_CASES = [
    ("det", lambda A: gl.linalg.det(A), lambda a: np.linalg.det(a), (2, 3, 3)),
    ("inv", lambda A: gl.linalg.inv(A), lambda a: np.linalg.inv(a), (2, 3, 3)),
    ("pinv", lambda A: gl.linalg.pinv(A), lambda a: np.linalg.pinv(a), (2, 4, 3)),
    ("svdvals", lambda A: gl.linalg.svdvals(A), lambda a: np.linalg.svd(a, compute_uv=False), (2, 3, 4)),
    ("matrix_rank", lambda A: gl.linalg.matrix_rank(A), lambda a: np.linalg.matrix_rank(a), (2, 4, 3)),
    ("nuc", lambda A: gl.linalg.matrix_norm(A, "nuc"), lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1)), (2, 3, 4)),
    ("spectral", lambda A: gl.linalg.matrix_norm(A, 2), lambda a: np.linalg.norm(a, 2, axis=(-2, -1)), (2, 3, 4)),
    ("-2", lambda A: gl.linalg.matrix_norm(A, -2), lambda a: np.linalg.norm(a, -2, axis=(-2, -1)), (3, 4)),
    ("cond", lambda A: gl.linalg.cond(A), lambda a: np.linalg.cond(a), (2, 3, 3)),
    ("cond_fro", lambda A: gl.linalg.cond(A, "fro"), lambda a: np.linalg.cond(a, "fro"), (3, 3)),
    ("matrix_power3", lambda A: gl.linalg.matrix_power(A, 3), lambda a: np.linalg.matrix_power(a, 3), (2, 3, 3)),
    ("matrix_power-2", lambda A: gl.linalg.matrix_power(A, -2), lambda a: np.linalg.matrix_power(a, -2), (3, 3)),
    ("matrix_power0", lambda A: gl.linalg.matrix_power(A, 0), lambda a: np.linalg.matrix_power(a, 0), (3, 3)),
    ("slogdet", lambda A: gl.linalg.slogdet(A).logabsdet, lambda a: np.linalg.slogdet(a)[1], (2, 3, 3)),
    ("eigvalsh", lambda A: gl.linalg.eigvalsh(A), lambda a: np.linalg.eigvalsh(a), (2, 3, 3)),
    ("tensorinv", lambda A: gl.linalg.tensorinv(A.reshape(8, 2, 4), ind=1),
     lambda a: np.linalg.tensorinv(a.reshape(8, 2, 4), ind=1), (8, 8)),
]


@pytest.mark.parametrize("name, op, expected, shape", NUMPY_CASES, ids=[c[0] for c in NUMPY_CASES])
def test_values_match_numpy(name, op, expected, shape):
    a = randn(*shape)
    assert_close(op(leaf(a, requires_grad=False)), expected(a), rtol=1e-7, atol=1e-9)


def test_solve_matches_numpy_for_matrices_vectors_and_broadcast_batches():
    A, b, B = randn(2, 3, 3), randn(3, seed=1), randn(1, 3, 2, seed=2)
    assert_close(gl.linalg.solve(leaf(A), leaf(b)), np.linalg.solve(A, np.broadcast_to(b, (2, 3))[..., None])[..., 0])
    assert_close(gl.linalg.solve(leaf(A), leaf(B)), np.linalg.solve(A, B))
    assert_close(gl.linalg.solve(leaf(A), leaf(randn(2, 3, seed=4))), np.linalg.solve(A, randn(2, 3, seed=4)[..., None])[..., 0])
    X = gl.linalg.solve(leaf(A), leaf(randn(2, 4, 3, seed=3)), left=False)
    assert_close(X.detach() @ leaf(A, False), randn(2, 4, 3, seed=3))


def test_decompositions_reconstruct_their_matrix():
    a = randn(2, 4, 3)
    Q, R = gl.linalg.qr(leaf(a))
    assert_close(Q @ R, a)
    assert_close(Q.mT @ Q, np.eye(3).reshape(1, 3, 3).repeat(2, 0), atol=1e-12)
    U, S, Vh = gl.linalg.svd(leaf(a), full_matrices=False)
    assert_close((U * S.unsqueeze(-2)) @ Vh, a)
    assert gl.linalg.svd(leaf(a)).U.shape == (2, 4, 4)
    P, L, U = gl.linalg.lu(leaf(a))
    assert_close(P @ L @ U, a)
    s = _spd(3, (2,))
    L = gl.linalg.cholesky(leaf(s))
    assert_close(L @ L.mT, s)
    assert_close(gl.linalg.cholesky(leaf(s), upper=True), np.swapaxes(np.linalg.cholesky(s), -1, -2))
    w, V = gl.linalg.eigh(leaf(s))
    assert_close((V * w.unsqueeze(-2)) @ V.mT, s)
    assert_close(gl.linalg.eigh(leaf(np.triu(s)), UPLO="U").eigenvalues, np.linalg.eigvalsh(s))


def test_matrix_exp_and_solve_triangular_match_scipy():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = randn(3, 3) * 2
    assert_close(gl.linalg.matrix_exp(leaf(a)), scipy_linalg.expm(a), rtol=1e-10)
    assert_close(gl.matrix_exp(leaf(np.zeros((2, 2)))), np.eye(2))
    b = randn(3, 2, seed=1)
    for upper in (True, False):
        for unit in (True, False):
            tri = np.triu(a) if upper else np.tril(a)
            expected = scipy_linalg.solve_triangular(tri, b, lower=not upper, unit_diagonal=unit)
            assert_close(gl.linalg.solve_triangular(leaf(a), leaf(b), upper=upper, unitriangular=unit), expected)


# --- forward values against PyTorch ---------------------------------------------------------------------


@requires_torch
def test_linalg_results_match_torch():
    a, s, b = randn(2, 3, 3), _spd(3, (2,)), randn(2, 3, 2, seed=1)
    t4 = randn(3, 2, 3, 2, seed=2)
    A, S, B = leaf(a, False), leaf(s, False), leaf(b, False)
    ta, ts, tb = _t(a), _t(s), _t(b)
    pairs = [
        (gl.linalg.det(A), torch.linalg.det(ta)), (gl.linalg.inv(A), torch.linalg.inv(ta)),
        (gl.linalg.solve(A, B), torch.linalg.solve(ta, tb)), (gl.linalg.cholesky(S), torch.linalg.cholesky(ts)),
        (gl.linalg.qr(A).R, torch.linalg.qr(ta).R), (gl.linalg.qr(A).Q, torch.linalg.qr(ta).Q),
        (gl.linalg.qr(A, mode="r").R, torch.linalg.qr(ta, mode="r").R),
        (gl.linalg.svdvals(A), torch.linalg.svdvals(ta)), (gl.linalg.eigvalsh(S), torch.linalg.eigvalsh(ts)),
        (gl.linalg.pinv(A, hermitian=False), torch.linalg.pinv(ta)), (gl.linalg.pinv(S, hermitian=True),
                                                                      torch.linalg.pinv(ts, hermitian=True)),
        (gl.linalg.matrix_exp(A), torch.linalg.matrix_exp(ta)), (gl.linalg.lu_factor(A).LU, torch.linalg.lu_factor(ta).LU),
        (gl.linalg.lu_factor(A).pivots, torch.linalg.lu_factor(ta).pivots),
        (gl.linalg.lu(A).P, torch.linalg.lu(ta).P), (gl.linalg.lu(A).L, torch.linalg.lu(ta).L),
        (gl.linalg.lu_solve(*gl.linalg.lu_factor(A), B), torch.linalg.lu_solve(*torch.linalg.lu_factor(ta), tb)),
        (gl.linalg.lu_solve(*gl.linalg.lu_factor(A), B, adjoint=True),
         torch.linalg.lu_solve(*torch.linalg.lu_factor(ta), tb, adjoint=True)),
        (gl.linalg.lu_solve(*gl.linalg.lu_factor(A), B.mT, left=False),
         torch.linalg.lu_solve(*torch.linalg.lu_factor(ta), tb.mT, left=False)),
        (gl.linalg.matrix_norm(A, "nuc"), torch.linalg.matrix_norm(ta, "nuc")),
        (gl.linalg.matrix_norm(A, -2, keepdim=True), torch.linalg.matrix_norm(ta, -2, keepdim=True)),
        (gl.linalg.cond(A, 1), torch.linalg.cond(ta, 1)), (gl.linalg.matrix_rank(S, hermitian=True),
                                                           torch.linalg.matrix_rank(ts, hermitian=True)),
        (gl.linalg.matrix_power(A, -3), torch.linalg.matrix_power(ta, -3)),
        (gl.linalg.vander(A[0, 0], N=4), torch.linalg.vander(ta[0, 0], N=4)),
        (gl.linalg.diagonal(A, offset=1), torch.linalg.diagonal(ta, offset=1)),
        (gl.linalg.diagonal(A, offset=-1, dim1=0, dim2=2), torch.linalg.diagonal(ta, offset=-1, dim1=0, dim2=2)),
        (gl.linalg.vecdot(A, B[..., 0].unsqueeze(-2)), torch.linalg.vecdot(ta, tb[..., 0].unsqueeze(-2))),
        (gl.linalg.cross(A, B[..., :1].mT), torch.linalg.cross(ta, tb[..., :1].mT)),
        (gl.linalg.multi_dot([A[0, 0], A[0], A[1], A[1, :, 0]]),
         torch.linalg.multi_dot([ta[0, 0], ta[0], ta[1], ta[1, :, 0]])),
        (gl.linalg.tensorsolve(leaf(t4, False), B[0]), torch.linalg.tensorsolve(_t(t4), tb[0])),
        (gl.linalg.tensorsolve(leaf(t4, False).movedim(2, 0), B[0], dims=(0,)),
         torch.linalg.tensorsolve(_t(t4).movedim(2, 0), tb[0], dims=(0,))),
        (gl.linalg.householder_product(A[0], A[1, :, 0]), torch.linalg.householder_product(ta[0], ta[1, :, 0])),
        (gl.linalg.solve_triangular(A, B, upper=True, left=True), torch.linalg.solve_triangular(ta, tb, upper=True)),
        (gl.linalg.solve_triangular(A, B.mT, upper=False, left=False, unitriangular=True),
         torch.linalg.solve_triangular(ta, tb.mT, upper=False, left=False, unitriangular=True)),
    ]
    for ours, theirs in pairs:
        assert_close(ours, theirs, rtol=1e-7, atol=1e-10)


@requires_torch
def test_lstsq_matches_torch_for_each_driver():
    a, b = randn(2, 5, 3), randn(2, 5, 2, seed=1)
    for driver in ("gelsy", "gelsd", "gels"):
        ours = gl.linalg.lstsq(leaf(a), leaf(b), driver=driver)
        theirs = torch.linalg.lstsq(_t(a), _t(b), driver=driver)
        assert type(ours).__name__ == "linalg_lstsq"
        assert_close(ours.solution, theirs.solution, rtol=1e-7)
        assert_close(ours.residuals, theirs.residuals, rtol=1e-7)
        assert_close(ours.singular_values, theirs.singular_values, rtol=1e-7)
        assert_close(ours.rank, theirs.rank)


@requires_torch
def test_torch_level_names_match_torch():
    a, s, b = randn(3, 3), _spd(3), randn(3, 2, seed=1)
    A, S, B = leaf(a, False), leaf(s, False), leaf(b, False)
    ta, ts, tb = _t(a), _t(s), _t(b)
    L, tL = gl.linalg.cholesky(S), torch.linalg.cholesky(ts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pairs = [
            (gl.det(A), torch.det(ta)), (A.logdet(), ta.logdet()), (gl.logdet(S), torch.logdet(ts)),
            (A.inverse(), ta.inverse()), (gl.pinverse(A), torch.pinverse(ta)), (A.slogdet()[1], ta.slogdet()[1]),
            (gl.svd(A).S, torch.svd(ta).S), (gl.svd(A, compute_uv=False).V, torch.svd(ta, compute_uv=False).V),
            (gl.svd(leaf(randn(4, 2), False), some=False).U.abs(), torch.svd(_t(randn(4, 2)), some=False).U.abs()),
            (gl.qr(A).R, torch.qr(ta).R), (S.cholesky(), ts.cholesky()),
            (gl.cholesky_solve(B, L), torch.cholesky_solve(tb, tL)),
            (gl.cholesky_solve(B, L.mT, upper=True), torch.cholesky_solve(tb, tL.mT, upper=True)),
            (gl.cholesky_inverse(L), torch.cholesky_inverse(tL)),
            (gl.triangular_solve(B, A).solution, torch.triangular_solve(tb, ta).solution),
            (gl.triangular_solve(B, A, upper=False, transpose=True).solution,
             torch.triangular_solve(tb, ta, upper=False, transpose=True).solution),
            (gl.triangular_solve(B, A).cloned_coefficient, torch.triangular_solve(tb, ta).cloned_coefficient),
            (gl.lu(A)[0], torch.lu(ta)[0]), (gl.lu(A, get_infos=True)[2], torch.lu(ta, get_infos=True)[2]),
            (gl.lu_solve(B, *gl.lu(A)), torch.lu_solve(tb, *torch.lu(ta))),
            (gl.lu_unpack(*gl.lu(A)).P, torch.lu_unpack(*torch.lu(ta)).P),
            (gl.lu_unpack(*gl.lu(A)).U, torch.lu_unpack(*torch.lu(ta)).U),
            (A.matrix_power(2), ta.matrix_power(2)), (A.matrix_exp(), ta.matrix_exp()),
        ]
    for ours, theirs in pairs:
        assert_close(ours, theirs, rtol=1e-7, atol=1e-10)
    U, S_, V = gl.svd(A)
    assert type(gl.svd(A)).__name__ == "svd"
    assert_close((U * S_) @ V.mT, a)  # V, not Vh


def test_named_results_and_ex_forms():
    a = randn(2, 3, 3)
    assert gl.linalg.slogdet(leaf(a))._fields == ("sign", "logabsdet")
    assert gl.linalg.svd(leaf(a))._fields == ("U", "S", "Vh")
    assert gl.linalg.eigh(leaf(a))._fields == ("eigenvalues", "eigenvectors")
    assert gl.linalg.lu_factor_ex(leaf(a))._fields == ("LU", "pivots", "info")
    singular = np.zeros((2, 2, 2))
    singular[0] = np.eye(2)
    inverse, info = gl.linalg.inv_ex(leaf(singular))
    assert info.tolist() == [0, 1] and info.dtype is gl.int32
    assert gl.linalg.solve_ex(leaf(singular), leaf(np.ones((2, 2, 1)))).info.tolist() == [0, 1]
    assert gl.linalg.cholesky_ex(leaf(-np.eye(3))).info.item() == 1
    assert gl.linalg.lu_factor_ex(leaf(singular)).info.tolist() == [0, 1]
    assert gl.linalg.det(leaf(singular)).tolist() == [1.0, 0.0]
    assert gl.linalg.pinv(leaf(np.diag([2.0, 1e-3])), atol=1e-2).tolist() == [[0.5, 0.0], [0.0, 0.0]]


# --- gradients -------------------------------------------------------------------------------------------

GRAD_CASES = [
    ("det", lambda A: gl.linalg.det(A), (2, 3, 3)),
    ("slogdet", lambda A: gl.linalg.slogdet(A).logabsdet, (2, 3, 3)),
    ("inv", lambda A: gl.linalg.inv(A), (2, 3, 3)),
    ("pinv_tall", lambda A: gl.linalg.pinv(A), (4, 3)),
    ("pinv_wide", lambda A: gl.linalg.pinv(A), (2, 3)),
    ("matrix_exp", lambda A: gl.linalg.matrix_exp(A), (2, 3, 3)),
    ("matrix_power-2", lambda A: gl.linalg.matrix_power(A, -2), (3, 3)),
    ("cholesky", lambda A: gl.linalg.cholesky(A @ A.mT + 3 * gl.eye(3, dtype=gl.float64)), (2, 3, 3)),
    ("cholesky_upper", lambda A: gl.linalg.cholesky(A @ A.mT + 3 * gl.eye(3, dtype=gl.float64), upper=True), (3, 3)),
    ("qr_tall", lambda A: gl.linalg.qr(A), (4, 3)),
    ("qr_square", lambda A: gl.linalg.qr(A), (2, 3, 3)),
    ("qr_wide", lambda A: gl.linalg.qr(A), (2, 4)),
    ("svd_tall", lambda A: _svd_invariant(A), (4, 3)),
    ("svd_wide", lambda A: _svd_invariant(A), (2, 3, 4)),
    ("svd_square", lambda A: _svd_invariant(A), (3, 3)),
    ("svdvals", lambda A: gl.linalg.svdvals(A), (3, 4)),
    ("nuclear_norm", lambda A: gl.linalg.matrix_norm(A, "nuc"), (3, 4)),
    ("spectral_norm", lambda A: gl.linalg.matrix_norm(A, 2), (3, 4)),
    ("eigh", lambda A: _eigh_invariant(_sym(A)), (2, 3, 3)),
    ("eigvalsh", lambda A: gl.linalg.eigvalsh(_sym(A)), (3, 3)),
    ("lu_square", lambda A: gl.linalg.lu(A)[1:], (2, 3, 3)),
    ("lu_wide", lambda A: gl.linalg.lu(A)[1:], (2, 4)),
    ("lu_tall", lambda A: gl.linalg.lu(A)[1:], (4, 2)),
    ("lu_factor", lambda A: gl.linalg.lu_factor(A).LU, (3, 3)),
    ("cond", lambda A: gl.linalg.cond(A), (3, 3)),
    ("householder", lambda A: gl.linalg.householder_product(A, A[:2, 0] * 0.5), (4, 3)),
    ("vander", lambda x: gl.linalg.vander(x, N=4), (3,)),
    ("tensorinv", lambda A: gl.linalg.tensorinv(A.reshape(2, 2, 4), ind=2), (4, 4)),
    ("cholesky_inverse", lambda A: gl.cholesky_inverse(A.tril() + 3 * gl.eye(3, dtype=gl.float64)), (3, 3)),
    ("logdet", lambda A: gl.logdet(A @ A.mT + gl.eye(3, dtype=gl.float64)), (3, 3)),
]


def _svd_invariant(A):
    """What a loss of the SVD may depend on: S, and U Vh (a sign flip of a singular pair leaves both as they are)."""
    U, S, Vh = gl.linalg.svd(A, full_matrices=False)
    return S, U @ Vh, (U * S.unsqueeze(-2)) @ U.mT


def _eigh_invariant(A):
    """Eigenvalues, and V f(Λ) Vᵀ: a sign flip of an eigenvector leaves it as it is."""
    values, vectors = gl.linalg.eigh(A)
    return values, (vectors * values.unsqueeze(-2).exp()) @ vectors.mT


@pytest.mark.parametrize("name, op, shape", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradcheck(name, op, shape):
    a = randn(*shape, seed=3) + (np.eye(shape[-1]) * 2 if len(shape) > 1 and shape[-1] == shape[-2] else 0)
    assert gradcheck(op, (leaf(a),))


SECOND_ORDER = ["det", "slogdet", "inv", "matrix_exp", "cholesky", "qr_tall", "qr_wide", "svd_tall", "svd_wide", "eigh",
                "lu_square", "lu_wide", "lu_tall", "pinv_tall"]
SECOND_ORDER_CASES = [c for c in GRAD_CASES if c[0] in SECOND_ORDER]


@pytest.mark.parametrize("name, op, shape", SECOND_ORDER_CASES, ids=[c[0] for c in SECOND_ORDER_CASES])
def test_gradgradcheck(name, op, shape):
    a = randn(*shape, seed=5) + (np.eye(shape[-1]) * 2 if shape[-1] == shape[-2] else 0)
    assert gradgradcheck(op, (leaf(a),))


def test_solvers_gradcheck_in_both_inputs():
    A, B = leaf(randn(2, 3, 3) + 2 * np.eye(3)), leaf(randn(3, 2, seed=1))
    assert gradcheck(lambda A, B: gl.linalg.solve(A, B), (A, B))
    assert gradcheck(lambda A, B: gl.linalg.solve(A, B[:, 0]), (A, B))
    assert gradcheck(lambda A, B: gl.linalg.solve(A[0], B.mT, left=False), (A, B))
    assert gradcheck(lambda A, B: gl.linalg.solve_triangular(A, B, upper=True), (A, B))
    assert gradcheck(lambda A, B: gl.linalg.solve_triangular(A, B, upper=False, unitriangular=True), (A, B))
    assert gradcheck(lambda A, B: gl.linalg.lu_solve(*gl.linalg.lu_factor(A), B), (A, B))
    assert gradcheck(lambda A, B: gl.linalg.lstsq(A[0, :, :2], B).solution, (A, B))
    assert gradcheck(lambda A, B: gl.cholesky_solve(B, A.tril() + 3 * gl.eye(3, dtype=gl.float64)), (A, B))
    assert gradgradcheck(lambda A, B: gl.linalg.solve(A, B), (A, B))


def test_det_gradient_of_a_singular_matrix_is_its_cofactor_matrix():
    a = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # rank 2: the cofactors are not all zero
    A = leaf(a)
    gl.linalg.det(A).backward()
    cofactors = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j) for j in range(3)]
                          for i in range(3)])
    assert_close(A.grad, cofactors, atol=1e-10)
    if torch is not None:  # torch's SVD path gives the cofactors too (its plain backward gives zeros here)
        t = to_torch(a, True)
        (expected,) = torch.autograd.grad(torch.linalg.det(t), t, create_graph=True)
        assert_close(A.grad, expected, atol=1e-10)


@requires_torch
def test_gradients_match_torch():
    a, b = randn(3, 3) + 2 * np.eye(3), randn(3, 2, seed=1)
    cases = [
        (lambda m, x: m.linalg.det(x), (a,)), (lambda m, x: m.linalg.inv(x), (a,)),
        (lambda m, x, y: m.linalg.solve(x, y), (a, b)), (lambda m, x: m.linalg.pinv(x), (a[:, :2],)),
        (lambda m, x: m.linalg.matrix_exp(x), (a,)), (lambda m, x: m.linalg.svdvals(x), (a,)),
        (lambda m, x: m.linalg.eigvalsh(x), (a,)), (lambda m, x: m.linalg.cholesky(x @ x.mT), (a,)),
        (lambda m, x: m.linalg.qr(x).R, (a,)), (lambda m, x: m.linalg.lu_factor(x).LU, (a,)),
    ]
    for f, arrays in cases:
        ours = [leaf(x) for x in arrays]
        theirs = [to_torch(x, True) for x in arrays]
        weight = randn(*f(torch, *theirs).shape, seed=9)
        (f(gl, *ours) * leaf(weight, False)).sum().backward()
        (f(torch, *theirs) * _t(weight)).sum().backward()
        for x, t in zip(ours, theirs):
            assert_close(x.grad, t.grad, rtol=1e-6)


# --- errors ------------------------------------------------------------------------------------------------

ERRORS = [
    (lambda: gl.linalg.inv(gl.tensor([[1.0, 2.0], [2.0, 4.0]])), gl.linalg.LinAlgError,
     r"linalg.inv: The diagonal element 2 is zero, the inversion could not be completed because the input matrix is "
     r"singular\."),
    (lambda: gl.linalg.inv(gl.ones(3, 2, 2)), gl.linalg.LinAlgError, r"linalg.inv: \(Batch element 0\): The diagonal "
                                                                      r"element 2 is zero"),
    (lambda: gl.linalg.inv(gl.ones(2, 3)), RuntimeError, r"linalg.inv: A must be batches of square matrices, but they "
                                                         r"are 2 by 3 matrices"),
    (lambda: gl.linalg.det(gl.ones(3)), RuntimeError, r"linalg.det: The input tensor A must have at least 2 dimensions"),
    (lambda: gl.linalg.inv(gl.ones(2, 2, dtype=gl.int64)), RuntimeError,
     r"linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda: gl.linalg.svd(gl.ones(2, 2, dtype=gl.int32)), RuntimeError, r"linalg.svd: Expected a floating point .* Got Int"),
    (lambda: gl.linalg.inv(gl.ones(2, 2, dtype=gl.float16)), RuntimeError,
     r"linalg.inv: Low precision dtypes not supported. Got Half"),
    (lambda: gl.linalg.solve(gl.zeros(2, 2), gl.ones(2)), gl.linalg.LinAlgError,
     r"torch.linalg.solve: The solver failed because the input matrix is singular\."),
    (lambda: gl.linalg.solve(gl.eye(2), gl.ones(3, 2)), RuntimeError,
     r"linalg.solve: Incompatible shapes of A and B for the equation AX = B \(2x2 and 3x2\)"),
    (lambda: gl.linalg.solve(gl.eye(2), gl.ones(2, 1, dtype=gl.float64)), RuntimeError,
     r"linalg.solve: Expected A and B to have the same dtype, but found A of type Float and B of type Double"),
    (lambda: gl.linalg.solve(gl.ones(3, 2, 2), gl.ones(2, 2, 1)), RuntimeError,
     r"linalg.solve: the batch dimensions of A \(3, 2, 2\) and B \(2, 2, 1\)"),
    (lambda: gl.linalg.cholesky(gl.tensor([[1.0, 2.0], [2.0, 1.0]])), gl.linalg.LinAlgError,
     r"linalg.cholesky: The factorization could not be completed because the input is not positive-definite \(the "
     r"leading minor of order 2 is not positive-definite\)\."),
    (lambda: gl.linalg.cholesky(-gl.eye(2).expand(2, 2, 2)), gl.linalg.LinAlgError,
     r"linalg.cholesky: \(Batch element 0\): .*order 1"),
    (lambda: gl.linalg.eig(gl.eye(2)), RuntimeError, r"linalg.eig: .*complex.*use linalg.eigh"),
    (lambda: gl.linalg.eigvals(gl.eye(2)), RuntimeError, r"linalg.eigvals: .*linalg.eigh"),
    (lambda: gl.linalg.eigh(gl.ones(2, 3)), RuntimeError, r"linalg.eigh: A must be batches of square matrices"),
    (lambda: gl.linalg.eigh(gl.eye(2), UPLO="X"), RuntimeError, r"UPLO argument to be 'L' or 'U'"),
    (lambda: gl.linalg.svd(gl.eye(2), driver="gesvd"), RuntimeError, r"linalg.svd: keyword argument `driver=` is only "
                                                                      r"supported on CUDA"),
    (lambda: gl.linalg.qr(gl.eye(2), mode="full"), RuntimeError, r"qr received unrecognized mode 'full'"),
    (lambda: gl.linalg.lu_factor(gl.zeros(2, 2)), gl.linalg.LinAlgError,
     r"torch.linalg.lu_factor: U\[1,1\] is zero and using it on lu_solve would result in a division by zero"),
    (lambda: gl.linalg.lu_factor(gl.eye(2), pivot=False), RuntimeError, r"LU without pivoting is not implemented on"),
    (lambda: gl.linalg.lstsq(gl.ones(3, 2), gl.ones(2, 2)), RuntimeError,
     r"torch.linalg.lstsq: input.size\(-2\) should match other.size\(-2\)"),
    (lambda: gl.linalg.matrix_power(gl.zeros(2, 2), -1), gl.linalg.LinAlgError, r"linalg.inv: The diagonal element 1"),
    (lambda: gl.linalg.matrix_power(gl.ones(2, 3), 2), RuntimeError, r"linalg.matrix_power: A must be batches of square"),
    (lambda: gl.linalg.matrix_norm(gl.ones(2, 2), "max"), RuntimeError, r"Order 'max' not supported"),
    (lambda: gl.linalg.multi_dot([gl.ones(2)]), RuntimeError, r"multi_dot\(\): expected at least 2 tensors but got 1"),
    (lambda: gl.linalg.tensorinv(gl.ones(2, 3), ind=1), RuntimeError, r"prod\(self.shape\[ind:\]\) == "),
    (lambda: gl.linalg.cross(gl.ones(2), gl.ones(2)), RuntimeError,
     r"linalg.cross: inputs dimension -1 must have length 3. Got 2 and 2"),
    (lambda: gl.linalg.diagonal(gl.ones(2, 2), dim1=0, dim2=-2), RuntimeError, r"diagonal dimensions cannot be identical 0, -2"),
]


@pytest.mark.parametrize("call, error, message", ERRORS, ids=[m[:40] for _, _, m in ERRORS])
def test_errors_name_the_operation(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_linalg_error_is_a_runtime_error_and_qr_refuses_gradients_it_cannot_give():
    assert issubclass(gl.linalg.LinAlgError, RuntimeError)
    A = leaf(randn(4, 3))
    with pytest.raises(RuntimeError, match=r"depends on Q, which is not computed when mode='r'"):
        gl.linalg.qr(A, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match=r"not differentiable when mode='complete' and nrows > ncols"):
        gl.linalg.qr(A, mode="complete").Q.sum().backward()


# --- products ------------------------------------------------------------------------------------------------

PRODUCTS = [
    ("addmm", lambda m, i, a, b: m.addmm(i, a, b, beta=0.5, alpha=2.0), ((3,), (2, 4), (4, 3))),
    ("addmm_default", lambda m, i, a, b: m.addmm(i, a, b), ((2, 3), (2, 4), (4, 3))),
    ("baddbmm", lambda m, i, a, b: m.baddbmm(i, a, b, beta=2.0, alpha=0.5), ((2, 3), (5, 2, 4), (5, 4, 3))),
    ("addbmm", lambda m, i, a, b: m.addbmm(i, a, b, alpha=3.0), ((2, 3), (5, 2, 4), (5, 4, 3))),
    ("addmv", lambda m, i, a, b: m.addmv(i, a, b, beta=-1.0), ((2,), (2, 4), (4,))),
    ("addr", lambda m, i, a, b: m.addr(i, a, b, alpha=2.0), ((2, 3), (2,), (3,))),
    ("kron", lambda m, a, b: m.kron(a, b), ((2, 3), (3, 1, 2))),
    ("tensordot_int", lambda m, a, b: m.tensordot(a, b, dims=2), ((2, 3, 4), (3, 4, 5))),
    ("tensordot_lists", lambda m, a, b: m.tensordot(a, b, dims=([1, 0], [2, 0])), ((3, 2, 4), (3, 5, 2))),
    ("inner", lambda m, a, b: m.inner(a, b), ((2, 3), (4, 3))),
    ("vdot", lambda m, a, b: m.vdot(a, b), ((3,), (3,))),
    ("cross_dim", lambda m, a, b: m.cross(a, b, dim=0), ((3, 2), (3, 2))),
    ("linalg_cross", lambda m, a, b: m.linalg.cross(a, b), ((2, 3), (1, 3))),
    ("cdist", lambda m, a, b: m.cdist(a, b), ((2, 4, 3), (2, 5, 3))),
    ("cdist_p1", lambda m, a, b: m.cdist(a, b, p=1.0), ((4, 3), (5, 3))),
    ("cdist_p3", lambda m, a, b: m.cdist(a, b, p=3, compute_mode="donot_use_mm_for_euclid_dist"), ((4, 3), (5, 3))),
    ("cdist_inf", lambda m, a, b: m.cdist(a, b, p=math.inf), ((4, 3), (5, 3))),
    ("pdist", lambda m, a: m.pdist(a), ((4, 3),)),
    ("pdist_p1", lambda m, a: m.pdist(a, p=1), ((4, 3),)),
    ("chain_matmul", lambda m, a, b, c: m.chain_matmul(a, b, c), ((2, 3), (3, 4), (4, 2))),
]


@pytest.mark.parametrize("name, op, shapes", PRODUCTS, ids=[c[0] for c in PRODUCTS])
def test_products_gradcheck(name, op, shapes):
    arrays = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert gradcheck(lambda *xs: op(gl, *xs), tuple(leaf(a) for a in arrays))


@requires_torch
@pytest.mark.parametrize("name, op, shapes", PRODUCTS, ids=[c[0] for c in PRODUCTS])
def test_products_match_torch(name, op, shapes):
    arrays = [randn(*s, seed=i) for i, s in enumerate(shapes)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(op(gl, *(leaf(a) for a in arrays)), op(torch, *(_t(a) for a in arrays)), rtol=1e-7, atol=1e-10)


def test_products_match_numpy():
    a, b = randn(2, 3), randn(3, 4, seed=1)
    assert_close(gl.kron(leaf(a), leaf(b)), np.kron(a, b))
    assert_close(gl.tensordot(leaf(a), leaf(b), dims=1), np.tensordot(a, b, 1))
    assert_close(gl.inner(leaf(a), leaf(b.T)), np.inner(a, b.T))
    assert_close(gl.cross(leaf(a), leaf(a[::-1].copy()), dim=1), np.cross(a, a[::-1]))
    assert_close(gl.addmm(leaf(np.ones(4)), leaf(a), leaf(b), beta=2), 2 + a @ b)


def test_cdist_gradient_at_zero_distance_is_zero_and_beta_zero_ignores_nan():
    x = leaf(np.array([[1.0, 2.0], [3.0, 4.0]]))
    gl.cdist(x, x.detach()).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()
    nan_input = gl.full((2, 2), math.nan, dtype=gl.float64)
    assert_close(gl.addmm(nan_input, leaf(np.eye(2)), leaf(np.eye(2)), beta=0), np.eye(2))


def test_in_place_product_methods_write_into_the_tensor():
    c = gl.zeros(2, 3, dtype=gl.float64)
    a, b = leaf(randn(2, 4), False), leaf(randn(4, 3, seed=1), False)
    assert c.addmm_(a, b, alpha=2) is c
    assert_close(c, 2 * (a.numpy() @ b.numpy()))
    c.addr_(a[:, 0], b[0], beta=0)
    assert_close(c, np.outer(a.numpy()[:, 0], b.numpy()[0]))
    v = gl.ones(2, dtype=gl.float64)
    v.addmv_(a, b[:, 0])
    assert_close(v, 1 + a.numpy() @ b.numpy()[:, 0])
    m = gl.ones(2, 3, dtype=gl.float64)
    m.addbmm_(a.unsqueeze(0), b.unsqueeze(0))
    assert_close(m, 1 + a.numpy() @ b.numpy())
    n = gl.ones(1, 2, 3, dtype=gl.float64)
    n.baddbmm_(a.unsqueeze(0), b.unsqueeze(0), beta=0.5)
    assert_close(n, 0.5 + (a.numpy() @ b.numpy())[None])


def test_cross_without_dim_takes_the_first_dim_of_size_3_and_warns():
    a, b = randn(3, 3), randn(3, 3, seed=1)
    with pytest.warns(UserWarning, match="without specifying the dim arg is deprecated"):
        out = gl.cross(leaf(a), leaf(b))
    assert_close(out, np.cross(a, b, axis=0))


def test_transposes_of_real_matrices():
    x = leaf(randn(2, 3, 4), False)
    assert_close(x.mH, np.swapaxes(x.numpy(), -1, -2))
    assert_close(x.adjoint(), np.swapaxes(x.numpy(), -1, -2))
    assert_close(x[0].H, x.numpy()[0].T)
    with pytest.raises(RuntimeError, match=r"tensor.H is only supported on matrices \(2-D tensors\). Got 3-D tensor"):
        x.H
    with pytest.raises(RuntimeError, match=r"tensor.mH is only supported on matrices or batches of matrices. Got 1-D"):
        x[0, 0].mH


PRODUCT_ERRORS = [
    (lambda: gl.addmm(gl.ones(4), gl.ones(2, 2), gl.ones(2, 3)), r"addmm: input of shape \(4,\) cannot be broadcast to "
                                                                r"the shape of the product, \(2, 3\)"),
    (lambda: gl.vdot(gl.ones(2, 2), gl.ones(2)), r"1D tensors expected, but got 2D and 1D tensors"),
    (lambda: gl.tensordot(gl.ones(2, 3), gl.ones(4, 5), dims=1), r"contracted dimensions need to match, but first has "
                                                                 r"size 3 in dim 1 and second has size 4 in dim 0"),
    (lambda: gl.cdist(gl.ones(3, 2), gl.ones(4, 3)), r"X1 and X2 must have the same number of columns. X1: 2 X2: 3"),
    (lambda: gl.pdist(gl.ones(2, 3, 3)), r"pdist only supports 2D tensors, got: 3D"),
    (lambda: gl.chain_matmul(gl.ones(2)), r"Tensor dimension is 1, expected 2 instead."),
    (lambda: gl.inner(gl.ones(2, 3), gl.ones(2)), r"inner\(\) the last dimension must match"),
    (lambda: gl.baddbmm(gl.ones(2, 2), gl.ones(3, 2, 2), gl.ones(2, 2, 2)), r"bmm: the batch sizes differ"),
]


@pytest.mark.parametrize("call, message", PRODUCT_ERRORS, ids=[m[:30] for _, m in PRODUCT_ERRORS])
def test_product_errors(call, message):
    with pytest.raises(RuntimeError, match=message):
        call()


# --- LDLᵀ, LAPACK's compact QR, and the rest of the torch-level names ------------------------------------


def _indefinite(n, seed):
    x = randn(n, n, seed=seed)
    s = x + x.T
    s[0, 0] = 0.0  # a zero first pivot forces a 2 x 2 block
    return s


@requires_torch
@pytest.mark.parametrize("seed", range(4))
def test_ldl_factor_and_solve_match_torch_pivots_included(seed):
    s, b = _indefinite(5, seed), randn(5, 2, seed=seed + 10)
    ours, theirs = gl.linalg.ldl_factor_ex(leaf(s, False)), torch.linalg.ldl_factor_ex(_t(s))
    assert_close(ours.LD, theirs.LD, rtol=1e-10)
    assert ours.pivots.tolist() == theirs.pivots.tolist()
    assert ours.info.item() == theirs.info.item() == 0
    x = gl.linalg.ldl_solve(ours.LD, ours.pivots, leaf(b, False))
    assert_close(x, np.linalg.solve(s, b), rtol=1e-9)
    assert_close(x, torch.linalg.ldl_solve(theirs.LD, theirs.pivots, _t(b)), rtol=1e-9)


def test_ldl_factor_uses_two_by_two_blocks_and_reports_a_singular_matrix():
    LD, pivots = gl.linalg.ldl_factor(leaf(np.array([[0.0, 1.0], [1.0, 0.0]]), False))
    assert pivots.tolist() == [-2, -2]  # one 2 x 2 block: no 1 x 1 pivot can be zero
    assert gl.linalg.ldl_factor_ex(gl.zeros(2, 3, 3)).info.tolist() == [1, 1]
    with pytest.raises(gl.linalg.LinAlgError, match=r"torch.linalg.ldl_factor: \(Batch element 0\): D\[1,1\] is "
                                                     r"exactly zero"):
        gl.linalg.ldl_factor(gl.zeros(2, 3, 3))
    with pytest.raises(RuntimeError, match=r"Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 2 "
                                           r"by 2"):
        gl.linalg.ldl_solve(LD, pivots, gl.ones(3, 1, dtype=gl.float64))


def test_ldl_solve_differentiates_in_b_and_ldl_factor_refuses_as_torch_does():
    s = _indefinite(4, 1)
    LD, pivots = gl.linalg.ldl_factor(leaf(s, False))
    assert gradcheck(lambda B: gl.linalg.ldl_solve(LD, pivots, B), (leaf(randn(4, 2)),))
    A = leaf(s)
    with pytest.raises(RuntimeError, match=r"derivative for linalg.ldl_factor is not implemented \(in PyTorch neither\)"):
        gl.linalg.ldl_factor(A).LD.sum().backward()


@requires_torch
def test_geqrf_orgqr_ormqr_match_torch():
    a, c = randn(4, 3), randn(4, 2, seed=1)
    ours, theirs = gl.geqrf(leaf(a, False)), torch.geqrf(_t(a))
    assert type(ours).__name__ == "geqrf"
    assert_close(ours.a, theirs.a, rtol=1e-10)
    assert_close(ours.tau, theirs.tau, rtol=1e-10)
    assert_close(gl.orgqr(*ours), torch.orgqr(*theirs), rtol=1e-10)
    assert_close(ours.a.orgqr(ours.tau), np.linalg.qr(a)[0], rtol=1e-10)
    for left, transpose in ((True, False), (True, True), (False, False), (False, True)):
        other = c if left else c.T
        assert_close(gl.ormqr(*ours, leaf(other, False), left, transpose),
                     torch.ormqr(*theirs, _t(other), left, transpose), rtol=1e-10)
    assert gradcheck(lambda a, tau, c: gl.ormqr(a, tau, c, left=True, transpose=True), (
        leaf(ours.a.numpy()), leaf(ours.tau.numpy()), leaf(c)))


@requires_torch
def test_vander_adjoint_and_addmv_in_place_match_torch():
    x = randn(4)
    assert_close(gl.vander(leaf(x, False)), torch.vander(_t(x)))
    assert_close(gl.vander(leaf(x, False), N=3, increasing=True), torch.vander(_t(x), N=3, increasing=True))
    assert gl.vander(gl.tensor([1, 2, 3])).tolist() == torch.vander(torch.tensor([1, 2, 3])).tolist()
    assert gradcheck(lambda x: gl.vander(x, N=5), (leaf(x),))
    a = randn(2, 3, 4)
    assert_close(gl.adjoint(leaf(a, False)), torch.adjoint(_t(a)))
    v, m, w = randn(2), randn(2, 3, seed=1), randn(3, seed=2)
    ours, theirs = leaf(v, False), _t(v)
    assert gl.addmv_(ours, leaf(m, False), leaf(w, False), beta=2, alpha=3) is ours
    torch.addmv_(theirs, _t(m), _t(w), beta=2, alpha=3)
    assert_close(ours, theirs)


@pytest.mark.parametrize("name, replacement", [("solve", "torch.linalg.solve"), ("lstsq", "torch.linalg.lstsq"),
                                               ("symeig", "torch.linalg.eigh"), ("eig", "torch.linalg.eig"),
                                               ("matrix_rank", "torch.linalg.matrix_rank")])
def test_functions_pytorch_removed_raise_its_error_naming_the_replacement(name, replacement):
    with pytest.raises(RuntimeError, match=rf"deprecated since version 1.9 and is now removed. `torch.{name}` is "
                                           rf"deprecated in favor of `{replacement}"):
        getattr(gl, name)(gl.eye(2), gl.eye(2))
    if name != "matrix_rank":
        with pytest.raises(RuntimeError, match="is now removed"):
            getattr(gl.eye(2), name)()


def test_matrix_exp_of_a_large_matrix_squares_and_keeps_its_gradient():
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = randn(3, 3) * 4  # ‖A‖ > 1/2: scaling and squaring
    assert_close(gl.linalg.matrix_exp(leaf(a)), scipy_linalg.expm(a), rtol=1e-9)
    assert gradcheck(gl.linalg.matrix_exp, (leaf(a),), atol=1e-4)


def test_svd_full_matrices_gradient_uses_the_determined_columns():
    A = leaf(randn(4, 3))
    assert gradcheck(lambda A: _svd_full_invariant(A), (A,))


def _svd_full_invariant(A):
    U, S, Vh = gl.linalg.svd(A, full_matrices=True)
    return S, U[:, :3] @ Vh


@requires_torch
def test_nuclear_and_frobenius_norms_match_torch_and_differentiate():
    a = randn(2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_close(gl.nuclear_norm(leaf(a[0], False)), torch.nuclear_norm(_t(a[0])))
        assert_close(gl.nuclear_norm(leaf(a, False), dim=(0, 2), keepdim=True),
                     torch.nuclear_norm(_t(a), dim=(0, 2), keepdim=True))
        assert_close(gl.frobenius_norm(leaf(a, False), dim=(0, 2)), torch.frobenius_norm(_t(a), dim=(0, 2)))
    assert gradcheck(lambda x: gl.nuclear_norm(x, dim=(1, 2)), (leaf(a),))
    with pytest.raises(RuntimeError, match=r"nuclear_norm: Expected a tensor with 2 dimensions, but got a tensor "
                                           r"with 3 dimensions"):
        gl.nuclear_norm(leaf(a))


@requires_torch
@pytest.mark.parametrize("shape", [(0, 3, 3), (2, 0, 0)])
def test_empty_batches_and_empty_matrices_give_torchs_shapes(shape):
    cases = [lambda m, x: m.linalg.det(x), lambda m, x: m.linalg.inv(x), lambda m, x: m.linalg.cholesky(x),
             lambda m, x: m.linalg.svd(x).S, lambda m, x: m.linalg.eigh(x).eigenvalues,
             lambda m, x: m.linalg.lu_factor(x).LU, lambda m, x: m.linalg.lu(x).P, lambda m, x: m.linalg.pinv(x),
             lambda m, x: m.linalg.ldl_factor(x).LD, lambda m, x: m.linalg.matrix_exp(x),
             lambda m, x: m.linalg.matrix_rank(x), lambda m, x: m.linalg.solve(x, x)]
    for f in cases:
        assert_close(f(gl, gl.zeros(*shape, dtype=gl.float64)), f(torch, torch.zeros(*shape, dtype=torch.float64)))


SQUARE_ONLY = {"det": gl.linalg.det, "slogdet": gl.linalg.slogdet, "inv": gl.linalg.inv, "inv_ex": gl.linalg.inv_ex,
               "cholesky": gl.linalg.cholesky, "cholesky_ex": gl.linalg.cholesky_ex, "eigh": gl.linalg.eigh,
               "eigvalsh": gl.linalg.eigvalsh, "matrix_exp": gl.linalg.matrix_exp,
               "ldl_factor": gl.linalg.ldl_factor}
ANY_SHAPE = {"svd": gl.linalg.svd, "svdvals": gl.linalg.svdvals, "qr": gl.linalg.qr, "pinv": gl.linalg.pinv,
             "lu": gl.linalg.lu, "lu_factor": gl.linalg.lu_factor}


@pytest.mark.parametrize("name", sorted(SQUARE_ONLY))
def test_square_only_functions_refuse_rectangles_vectors_and_integers(name):
    function = SQUARE_ONLY[name]
    with pytest.raises(RuntimeError, match=r"A must be batches of square matrices, but they are 2 by 3 matrices"):
        function(gl.ones(4, 2, 3))
    with pytest.raises(RuntimeError, match=r"The input tensor A must have at least 2 dimensions"):
        function(gl.ones(3))
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got Long"):
        function(gl.ones(2, 2, dtype=gl.int64))


@pytest.mark.parametrize("name", sorted(ANY_SHAPE))
def test_rectangular_functions_refuse_integers_and_vectors(name):
    function = ANY_SHAPE[name]
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got Int"):
        function(gl.ones(2, 3, dtype=gl.int32))
    with pytest.raises(RuntimeError, match=r"The input tensor A must have at least 2 dimensions"):
        function(gl.ones(3))


def test_tensor_methods_are_the_functional_forms():
    a, s, b = randn(3, 3) + 2 * np.eye(3), _spd(3), randn(3, 2, seed=1)
    A, S, B = leaf(a, False), leaf(s, False), leaf(b, False)
    L = S.cholesky()
    pairs = [
        (A.det(), gl.det(A)), (A.slogdet()[1], gl.slogdet(A)[1]), (A.pinverse(), gl.pinverse(A)),
        (A.svd().V, gl.svd(A).V), (A.qr().Q, gl.qr(A).Q), (S.cholesky(upper=True), gl.cholesky(S, upper=True)),
        (B.cholesky_solve(L), gl.cholesky_solve(B, L)), (L.cholesky_inverse(), gl.cholesky_inverse(L)),
        (B.triangular_solve(A).solution, gl.triangular_solve(B, A).solution), (A.lu()[0], gl.lu(A)[0]),
        (B.lu_solve(*A.lu()), gl.lu_solve(B, *gl.lu(A))), (A.geqrf().a, gl.geqrf(A).a),
        (A.geqrf().a.ormqr(A.geqrf().tau, B), gl.ormqr(*gl.geqrf(A), B)),
        (A.addmm(A, A, beta=2), gl.addmm(A, A, A, beta=2)), (A.kron(B), gl.kron(A, B)),
        (A.inner(B.mT), gl.inner(A, B.mT)),
        (A[0].vdot(A[1]), gl.vdot(A[0], A[1])), (A.cross(A.flip(0), dim=0), gl.cross(A, A.flip(0), dim=0)),
        (A[:, :2].addr(A[:, 0], A[0, :2]), gl.addr(A[:, :2], A[:, 0], A[0, :2])),
        (A[0].addmv(A, A[1]), gl.addmv(A[0], A, A[1])),
        (A.baddbmm(A.unsqueeze(0), A.unsqueeze(0)), gl.baddbmm(A, A.unsqueeze(0), A.unsqueeze(0))),
        (A.addbmm(A.unsqueeze(0), A.unsqueeze(0)), gl.addbmm(A, A.unsqueeze(0), A.unsqueeze(0))),
    ]
    for method, function in pairs:
        assert_close(method, function)


def test_ldl_and_triangular_solvers_take_batches():
    s = np.stack([_indefinite(4, seed) for seed in range(3)])
    b = randn(3, 4, 2, seed=7)
    LD, pivots = gl.linalg.ldl_factor(leaf(s, False))
    assert_close(gl.linalg.ldl_solve(LD, pivots, leaf(b, False)), np.linalg.solve(s, b), rtol=1e-9)
    L = gl.linalg.cholesky(leaf(_spd(4, (3,)), False))
    assert_close(gl.cholesky_solve(leaf(b, False), L), np.linalg.solve(_spd(4, (3,)), b), rtol=1e-9)
    assert_close(gl.linalg.solve_triangular(L, leaf(b[0], False), upper=False), np.linalg.solve(L.numpy(), b[0]),
                 rtol=1e-9)


def test_linalg_diagonal_is_a_view_with_offset_and_dims():
    A = gl.arange(24.0).reshape(2, 3, 4)
    d = gl.linalg.diagonal(A, offset=1)
    assert_close(d, np.diagonal(A.numpy(), offset=1, axis1=-2, axis2=-1))
    assert np.shares_memory(d.numpy(), A.numpy())
    A.add_(1)
    assert_close(d, np.diagonal(A.numpy(), offset=1, axis1=-2, axis2=-1))
    assert_close(gl.linalg.diagonal(A, offset=-1, dim1=0, dim2=2), np.diagonal(A.numpy(), -1, 0, 2))
    assert gradcheck(lambda x: gl.linalg.diagonal(x, offset=-1), (leaf(randn(3, 4)),))


def test_torch_level_names_take_torchs_keywords():
    a = randn(3, 3) + 2 * np.eye(3)
    A = leaf(a, False)
    assert_close(gl.matrix_power(input=A, n=2), a @ a)
    assert_close(gl.det(input=A), np.linalg.det(a))
    assert type(gl.slogdet(input=A)).__name__ == "slogdet"
    assert_close(gl.cholesky(A @ A.mT, True), np.linalg.cholesky(a @ a.T).T)
    geqrf = gl.geqrf(input=A)
    assert_close(gl.ormqr(geqrf.a, tau=geqrf.tau, other=A, left=True), np.linalg.qr(a)[0] @ a)
    assert_close(geqrf.a.ormqr(geqrf.tau, A, transpose=True), np.linalg.qr(a)[0].T @ a)
    assert_close(geqrf.a.orgqr(input2=geqrf.tau), np.linalg.qr(a)[0])

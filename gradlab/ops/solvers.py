"""Solving linear systems: inverse, solve, triangular solve, determinants, pseudo-inverse, matrix exponential.

Every rule here comes from one identity: d(A⁻¹) = −A⁻¹ dA A⁻¹. So the gradient of X = A⁻¹B is a
solve with Aᵀ, that of det(A) is det(A)·A⁻ᵀ, and each backward is again a solve — which is why
higher derivatives work. exp(A)'s gradient is a block of the exponential of a 2n x 2n matrix.
"""

from __future__ import annotations

from ..autograd.function import Function
from ._linalg_common import eye_like, raise_on_info
from .shape import cat


def _mT(x):
    return x.transpose(-2, -1)


class Inv(Function):
    """A⁻¹: A receives −A⁻ᵀ · g · A⁻ᵀ, the inverse on both sides of the incoming gradient."""

    derivative = "∂L/∂A = −A⁻ᵀ · g · A⁻ᵀ"

    @staticmethod
    def forward(ctx, A, check_errors):
        inverse, info = A.device.backend.inv(A.array)
        info = A._wrap(info)
        if check_errors:
            raise_on_info("linalg.inv", info, lambda k: f"The diagonal element {k} is zero, the inversion could "
                          "not be completed because the input matrix is singular.")
        out = A._wrap(inverse)
        ctx.save_for_backward(out)
        ctx.mark_non_differentiable(info)
        return out, info

    @staticmethod
    def backward(ctx, grad, grad_info):
        (inverse,) = ctx.saved_tensors
        return -(_mT(inverse) @ grad @ _mT(inverse)), None


class Solve(Function):
    """X = A⁻¹B: B receives A⁻ᵀ · g (a solve with Aᵀ), and A receives −(A⁻ᵀ · g) · Xᵀ.

    B is a batch of matrices here; the caller turns a vector b into a one-column matrix.
    """

    derivative = "∂L/∂A = −(A⁻ᵀ · g) · Xᵀ;  ∂L/∂B = A⁻ᵀ · g"

    @staticmethod
    def forward(ctx, A, B, check_errors):
        x, info = A.device.backend.solve(A.array, B.array)
        info = A._wrap(info)
        if check_errors:
            raise_on_info("torch.linalg.solve", info,
                          lambda k: "The solver failed because the input matrix is singular.")
        out = A._wrap(x)
        ctx.save_for_backward(A, out)
        ctx.mark_non_differentiable(info)
        return out, info

    @staticmethod
    def backward(ctx, grad, grad_info):
        A, x = ctx.saved_tensors
        grad_b, _ = Solve.apply(_mT(A), grad, False)
        grad_a = -(grad_b @ _mT(x)) if ctx.needs_input_grad[0] else None
        return grad_a, grad_b, None


class SolveTriangular(Function):
    """X = A⁻¹B for triangular A: B receives a solve with Aᵀ, A receives −(A⁻ᵀ g) Xᵀ on its triangle only.

    Only A's triangle (without the diagonal, if unitriangular) is read, so only it gets a gradient.
    """

    derivative = "∂L/∂A = triangle of −(A⁻ᵀ · g) · Xᵀ;  ∂L/∂B = A⁻ᵀ · g"

    @staticmethod
    def forward(ctx, A, B, upper, unitriangular):
        ctx.upper, ctx.unitriangular = upper, unitriangular
        out = A._wrap(A.device.backend.solve_triangular(A.array, B.array, upper, unitriangular))
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        A, x = ctx.saved_tensors
        upper, unit = ctx.upper, ctx.unitriangular
        grad_b = SolveTriangular.apply(_mT(A), grad, not upper, unit)
        grad_a = None
        if ctx.needs_input_grad[0]:
            full = -(grad_b @ _mT(x))
            grad_a = full.triu(int(unit)) if upper else full.tril(-int(unit))
        return grad_a, grad_b, None, None


class MatrixExp(Function):
    """exp(A) = Σ Aᵏ/k!: A receives the upper-right block of exp([[Aᵀ, g], [0, Aᵀ]]).

    That block is the adjoint of the Fréchet derivative of exp at A (Mathias's block-matrix identity).
    """

    derivative = "∂L/∂A = [exp([[Aᵀ, g], [0, Aᵀ]])]₁₂"

    @staticmethod
    def forward(ctx, A):
        ctx.save_for_backward(A)
        return A._wrap(A.device.backend.matrix_exp(A.array))

    @staticmethod
    def backward(ctx, grad):
        (A,) = ctx.saved_tensors
        n = A.shape[-1]
        At = _mT(A).expand(grad.shape)
        block = cat([cat([At, grad], -1), cat([grad.new_zeros(grad.shape), At], -1)], -2)
        return MatrixExp.apply(block)[..., :n, n:]


class Pinv(Function):
    """A⁺, the Moore–Penrose pseudo-inverse: the derivative of A⁺ for a fixed rank (Golub and Pereyra)."""

    derivative = "∂L/∂A = −A⁺ᵀ · g · A⁺ᵀ + (I − A A⁺) · gᵀ · A⁺A⁺ᵀ + A⁺ᵀA⁺ · gᵀ · (I − A⁺A)"

    @staticmethod
    def forward(ctx, A, atol, rtol, hermitian):
        out = A._wrap(pinv_array(A, atol, rtol, hermitian))
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        A, P = ctx.saved_tensors
        m, n = A.shape[-2:]
        Pt, gt = _mT(P), _mT(grad)
        # d(A⁺) = −A⁺ dA A⁺ + A⁺A⁺ᵀ dAᵀ (I − A A⁺) + (I − A⁺A) dAᵀ A⁺ᵀA⁺, transposed onto A
        first = -(Pt @ grad @ Pt)
        second = (eye_like(A, m) - A @ P) @ gt @ (P @ Pt)
        third = (Pt @ P) @ gt @ (eye_like(A, n) - P @ A)
        return first + second + third, None, None, None


def pinv_array(A, atol, rtol, hermitian):
    """The pseudo-inverse as a backend array: V diag(1/s) Uᵀ, keeping only s > max(atol, rtol · s_max)."""
    backend = A.device.backend
    if hermitian:
        values, vectors = backend.eigh(A.array, True)
        magnitude = backend.abs(values)
        left, right = vectors, backend.permute(vectors, _swap_last(A.ndim))
    else:
        u, magnitude, vh = backend.svd(A.array, False)
        values = magnitude
        left, right = backend.permute(vh, _swap_last(A.ndim)), backend.permute(u, _swap_last(A.ndim))
    largest = backend.max(magnitude, (-1,), True) if magnitude.shape[-1] else magnitude
    cutoff = backend.maximum(backend.mul(_as_array(A, rtol, largest), largest), _as_array(A, atol, largest))
    keep = backend.gt(magnitude, cutoff)
    safe = backend.where(keep, values, backend.ones(values.shape, A.dtype))
    inverse = backend.where(keep, backend.div(1.0, safe), backend.zeros(values.shape, A.dtype))
    row = backend.reshape(inverse, inverse.shape[:-1] + (1, inverse.shape[-1]))  # 1/s scales the columns of V
    return backend.matmul(backend.mul(left, row), right)


def _swap_last(ndim):
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def _as_array(A, tol, like):
    """A tolerance (a number or a tensor of one per matrix) as an array that broadcasts against (..., 1)."""
    backend = A.device.backend
    if hasattr(tol, "array"):
        return backend.reshape(backend.astype(tol.array, A.dtype), tol.shape + (1,))
    return backend.full((1,) * len(like.shape), float(tol), A.dtype)

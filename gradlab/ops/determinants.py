"""Determinants: det and slogdet, whose gradients are the cofactors (or A⁻ᵀ for log|det|).

A file of their own because the cofactors of a singular matrix come from its SVD, so these build on
both the solvers (the inverse) and the decompositions (the SVD).
"""

from __future__ import annotations

from ..autograd.function import Function
from .decompositions import Svd
from .shape import cat
from .solvers import Inv, _mT


class Det(Function):
    """det(A): A receives g · det(A) · A⁻ᵀ, the cofactor matrix (for a singular A, from its SVD)."""

    derivative = "∂L/∂A = g · det(A) · A⁻ᵀ"

    @staticmethod
    def forward(ctx, A):
        out = A._wrap(A.device.backend.det(A.array))
        ctx.save_for_backward(A, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        A, det = ctx.saved_tensors
        return grad.unsqueeze(-1).unsqueeze(-1) * cofactor(A, det)


def cofactor(A, det):
    """det(A)·A⁻ᵀ, the matrix of cofactors. When some A is singular A⁻¹ does not exist, but with
    A = U S Vᵀ the cofactors are det(U)det(V) · U diag(∏_{j≠i} s_j) Vᵀ, which holds for every A."""
    backend = A.device.backend
    if backend.to_numpy(backend.all(backend.ne(det.array, 0), None, False)):
        inverse, _ = Inv.apply(A, False)
        return det.unsqueeze(-1).unsqueeze(-1) * _mT(inverse)
    U, S, Vh = Svd.apply(A, False)
    orientation = A._wrap(backend.mul(backend.det(U.detach().array), backend.det(Vh.detach().array)))
    ones = S.new_ones(S.shape[:-1] + (1,))
    before = cat([ones, S[..., :-1]], -1).cumprod(-1)  # ∏_{j<i} s_j
    after = cat([ones, S.flip(-1)[..., :-1]], -1).cumprod(-1).flip(-1)  # ∏_{j>i} s_j
    others = before * after
    return orientation.unsqueeze(-1).unsqueeze(-1) * ((U * others.unsqueeze(-2)) @ Vh)


class Slogdet(Function):
    """(sign, log|det A|): log|det A| sends g · A⁻ᵀ back to A; the sign has no gradient."""

    derivative = "∂L/∂A = g_logabsdet · A⁻ᵀ"

    @staticmethod
    def forward(ctx, A):
        sign, logabsdet = A.device.backend.slogdet(A.array)
        sign, logabsdet = A._wrap(sign), A._wrap(logabsdet)
        ctx.save_for_backward(A)
        ctx.mark_non_differentiable(sign)
        return sign, logabsdet

    @staticmethod
    def backward(ctx, grad_sign, grad_logabsdet):
        (A,) = ctx.saved_tensors
        inverse, _ = Inv.apply(A, False)
        return grad_logabsdet.unsqueeze(-1).unsqueeze(-1) * _mT(inverse)

"""Distances and similarities between vectors: cosine_similarity, pairwise_distance, pdist.

All are compositions of Tensor ops (norms, sums), so their gradients come from those ops. The small
eps constants keep zero vectors finite, exactly where PyTorch puts them.
"""

from __future__ import annotations

from ...dtypes import int64
from ...ops._common import TrackedTensor, broadcast_shapes, describe, normalize_dim, shape_str
from ...ops.numpy_spellings import accept_numpy_spellings

__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]


def _tensors(op, **named):
    for name, value in named.items():
        if not isinstance(value, TrackedTensor):
            raise TypeError(f"{op}(): argument '{name}' must be a gradlab Tensor, got {type(value).__name__}")


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1 · x2 / (max(‖x1‖, eps) · max(‖x2‖, eps)) along dim, after broadcasting x1 and x2."""
    _tensors("cosine_similarity", x1=x1, x2=x2)
    shape = broadcast_shapes(x1.shape, x2.shape, op="cosine_similarity")
    x1, x2 = x1.broadcast_to(shape), x2.broadcast_to(shape)
    dim = normalize_dim("cosine_similarity", dim, len(shape))
    n1 = x1.norm(2, dim, keepdim=True).clamp_min(eps)
    n2 = x2.norm(2, dim, keepdim=True).clamp_min(eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """‖x1 − x2 + eps‖_p over the last dim (rows of two batches, or two vectors)."""
    _tensors("pairwise_distance", x1=x1, x2=x2)
    ndim = max(x1.ndim, x2.ndim)
    if ndim == 0:
        raise RuntimeError("pairwise_distance: expected at least 1-D inputs (vectors (D) or batches (N, D)), got "
                           f"{describe(x1)} and {describe(x2)}")
    broadcast_shapes(x1.shape, x2.shape, op="pairwise_distance")
    return (x1 - x2 + eps).norm(p, ndim - 1, keepdim=keepdim)


def pdist(input, p=2):
    """The p-norm distance between every pair of rows i < j of (N, M): N(N − 1)/2 values, row-major order."""
    _tensors("pdist", input=input)
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D (input of shape "
                           f"{shape_str(input.shape)}); pass rows of vectors (N, M)")
    if p < 0:
        raise RuntimeError(f"pdist only supports non-negative p values, got p={p}")
    n = input.shape[0]
    first = [i for i in range(n) for _ in range(i + 1, n)]
    second = [j for i in range(n) for j in range(i + 1, n)]
    a = input.index_select(0, input.new_tensor(first, dtype=int64))
    b = input.index_select(0, input.new_tensor(second, dtype=int64))
    return (a - b).norm(p, 1)


accept_numpy_spellings(globals())  # pairwise_distance(x1, x2, keepdims=True), as torch's takes it

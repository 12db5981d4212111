"""Embedding lookups, and one_hot.

An embedding is a table of rows read by index: the forward is ``weight[indices]``, and the
backward adds each incoming gradient row into the row it was read from (one index-add call; an
index used twice gets both gradients). The padding row's gradient stays zero.
"""

from __future__ import annotations

from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...dtypes import int32, int64
from ...ops._common import describe
from ...ops.elementwise import where
from ...ops.indexing import one_hot

__all__ = ["embedding", "one_hot"]


class EmbeddingLookup(Function):
    """weight[indices]: one row of the table per index; backward index-adds the gradient rows back."""

    derivative = ("∂L/∂weight = each row of g added into the row it was read from (the padding row 0, "
                  "rows scaled by 1 / count with scale_grad_by_freq)")

    @staticmethod
    def forward(ctx, weight, indices, padding_idx, scale_grad_by_freq):
        ctx.save_for_backward(indices)
        ctx.rows, ctx.padding_idx, ctx.scale_grad_by_freq = weight.shape[0], padding_idx, scale_grad_by_freq
        return weight._wrap(weight.device.backend.getitem(weight.array, (indices.array,)))

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        if ctx.scale_grad_by_freq:
            grad = grad * _inverse_frequency(grad, indices, ctx.rows)
        return RowSum.apply(grad, indices, ctx.rows, ctx.padding_idx), None, None, None


class RowSum(Function):
    """A (rows, ...) table of zeros with each row of grad added at its index; its gradient is read back at the indices.

    The padding row stays zero, and so does the gradient read from it.
    """

    derivative = "∂L/∂grad = g[indices], 0 where indices = padding_idx"

    @staticmethod
    def forward(ctx, grad, indices, rows, padding_idx):
        backend = grad.device.backend
        out = backend.zeros((rows,) + tuple(grad.shape[indices.ndim:]), grad.dtype)
        backend.add_at(out, indices.array, grad.array)
        if padding_idx is not None:
            backend.setitem(out, padding_idx, 0)
        ctx.save_for_backward(indices)
        ctx.padding_idx = padding_idx
        return grad._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        rows = EmbeddingLookup.apply(grad, indices, None, False)
        if ctx.padding_idx is not None:
            rows = where((indices == ctx.padding_idx).unsqueeze(-1), 0.0, rows)
        return rows, None, None, None


def _inverse_frequency(grad, indices, rows):
    """1 / (how often each index occurs in the batch), shaped to scale the gradient rows."""
    backend = grad.device.backend
    counts = backend.zeros((rows,), grad.dtype)
    backend.add_at(counts, backend.reshape(indices.array, (-1,)), 1)
    frequency = backend.getitem(counts, (indices.array,))
    return grad._wrap(backend.reshape(backend.div(1.0, frequency), indices.shape + (1,)))


def _padding_index(who, padding_idx, rows):
    """padding_idx in [0, rows), a negative one counted from the end, or None."""
    if padding_idx is None:
        return None
    if not -rows <= padding_idx < rows:
        raise AssertionError(f"{who}: Padding_idx must be within num_embeddings (got padding_idx={padding_idx} "
                             f"for {rows} embeddings)")
    return padding_idx % rows


def _renorm_(weight, indices, max_norm, norm_type):
    """Rescale, in place, the rows that indices read whose norm exceeds max_norm (torch.embedding_renorm_)."""
    with no_grad():
        flat = indices.reshape(-1)
        picked = weight[flat]
        norms = picked.norm(norm_type, 1, keepdim=True)
        scaled = picked * where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    weight.device.backend.setitem(weight.array, (flat.array,), scaled.array)  # only these rows: no copy of the table
    weight._version[0] += 1


def _embedding(who, input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq):
    if input.dtype is not int64 and input.dtype is not int32:
        raise RuntimeError(f"{who}: Expected tensor for argument #1 'indices' to have one of the following scalar "
                           f"types: Long, Int; but got {describe(input)} instead; convert it with .long()")
    if weight.ndim != 2:
        raise RuntimeError(f"{who}: 'weight' must be 2-D (num_embeddings, embedding_dim), got {describe(weight)}")
    rows = weight.shape[0]
    padding_idx = _padding_index(who, padding_idx, rows)
    backend = input.device.backend
    if input.numel():  # checked before max_norm rescales any row; numpy would wrap negatives around
        low, high = (int(backend.to_numpy(f(input.array))) for f in (backend.min, backend.max))
        if low < 0 or high >= rows:
            raise IndexError(f"{who}: index out of range in self: index {low if low < 0 else high} for a table of "
                             f"{rows} embeddings (valid indices are 0 to {rows - 1})")
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return EmbeddingLookup.apply(weight, input, padding_idx, scale_grad_by_freq)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """The rows of weight picked by the integer indices in input: shape input.shape + (embedding_dim,).

    gradlab has no sparse tensors: with sparse=True the gradient is dense, with the same values.
    """
    return _embedding("embedding", input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)

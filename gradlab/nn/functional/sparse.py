"""Embedding lookups (single rows, and bags of rows reduced to one), and one_hot.

An embedding is a table of rows read by index: the forward is ``weight[indices]``, and the
backward adds each incoming gradient row into the row it was read from (one index-add call; an
index used twice gets both gradients). The padding row's gradient stays zero.
"""

from __future__ import annotations

import numpy as np

from ...autograd.function import Function
from ...autograd.grad_mode import no_grad
from ...dtypes import bool_, int32, int64
from ...ops._common import check_same_device, describe, shape_str
from ...ops.elementwise import where
from ...ops.indexing import one_hot

__all__ = ["embedding", "embedding_bag", "one_hot"]


class EmbeddingLookup(Function):
    """weight[indices]: one row of the table per index; backward index-adds the gradient rows back."""

    derivative = ("∂L/∂weight = each row of g added into the row it was read from (the padding row 0, "
                  "rows scaled by 1 / count with scale_grad_by_freq)")
    node_names = ("EmbeddingBackward0",)

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
    check_same_device(who, weight, input)
    if weight.ndim != 2:
        raise RuntimeError(f"{who}: 'weight' must be 2-D (num_embeddings, embedding_dim), got {describe(weight)}")
    rows = weight.shape[0]
    padding_idx = _padding_index(who, padding_idx, rows)
    backend = input.device.backend
    if input.numel():  # checked before max_norm rescales any row; numpy would wrap negatives around
        backend.check(_indices_below, input.array, who, rows)
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    return EmbeddingLookup.apply(weight, input, padding_idx, scale_grad_by_freq)


def _indices_below(backend, indices, who, rows) -> None:
    low, high = (int(backend.to_numpy(f(indices))) for f in (backend.min, backend.max))
    if low < 0 or high >= rows:
        raise IndexError(f"{who}: index out of range in self: index {low if low < 0 else high} for a table of "
                         f"{rows} embeddings (valid indices are 0 to {rows - 1})")


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """The rows of weight picked by the integer indices in input: shape input.shape + (embedding_dim,).

    gradlab has no sparse tensors: with sparse=True the gradient is dense, with the same values.
    """
    return _embedding("embedding", input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)


# --- bags of embeddings --------------------------------------------------------------------------

def _bags(who, input, offsets, include_last_offset):
    """The flat indices, which bag each belongs to (host int64 array) and how many bags there are."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        n, length = input.shape
        return input.reshape(-1), np.repeat(np.arange(n), length), n
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError(f"offsets has to be a 1D Tensor (got {describe(offsets)})")
    starts = offsets.device.backend.to_numpy(offsets.array).astype(np.int64)
    count = len(starts) - 1 if include_last_offset else len(starts)
    if len(starts) and starts[0] != 0:
        raise RuntimeError(f"{who}: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                           f"from position 0. However, got {starts[0]}")
    if len(starts) and starts[-1] > input.shape[0]:
        raise RuntimeError(f"{who}: offsets[-1] can not be greater than input's length {input.shape[0]}, but got "
                           f"offsets[-1] of {starts[-1]}")
    if np.any(np.diff(starts) < 0):
        raise RuntimeError(f"{who}: offsets must be non-decreasing (each bag starts where the one before it ends), "
                           f"got {starts.tolist()}")
    bag = np.searchsorted(starts, np.arange(input.shape[0]), side="right") - 1
    if include_last_offset:  # the last offset closes the last bag (as PyTorch's kernel does, it runs to the end)
        bag = np.minimum(bag, count - 1)
    return input, bag, max(count, 0)


def _bag_max_rows(rows, bag, kept, count):
    """For every bag and feature, the row position holding the largest kept value (first wins), and which
    bags are empty."""
    values = rows.device.backend.to_numpy(rows.array)
    winners = np.zeros((count, rows.shape[1]), dtype=np.int64)
    empty = np.ones((count, 1), dtype=bool)
    for b in range(count):
        members = np.nonzero((bag == b) & kept)[0]
        if len(members):
            winners[b] = members[np.argmax(values[members], axis=0)]
            empty[b] = False
    return winners, empty


def _embedding_bag(who, input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, per_sample_weights,
                   include_last_offset, padding_idx):
    check_same_device(who, weight, input, offsets, per_sample_weights)
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({shape_str(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({shape_str(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max (got {mode!r})")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    flat, bag, count = _bags(who, input, offsets, include_last_offset)
    padding_idx = _padding_index(who, padding_idx, weight.shape[0])
    rows = _embedding(who, flat, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq)  # (N, D)
    backend = flat.device.backend
    kept = bag >= 0
    if padding_idx is not None:
        kept &= backend.to_numpy(flat.array) != padding_idx
    dim = weight.shape[1]
    if mode == "max":
        winners, empty = _bag_max_rows(rows, bag, kept, count)
        out = rows.gather(0, flat.new_tensor(winners)) if len(bag) else weight.new_zeros((count, dim))
        return where(weight.new_tensor(empty, dtype=bool_), 0.0, out)
    share = kept.astype(np.float64)
    if mode == "mean":  # an empty bag (or one of padding only) averages to zero
        sizes = np.bincount(bag[kept], minlength=count)[:count] if count else np.zeros(0)
        share = np.where(kept, share / np.maximum(sizes[np.maximum(bag, 0)] if len(bag) else 1, 1), 0.0)
    scaled = rows * weight.new_tensor(share).reshape(-1, 1)
    if per_sample_weights is not None:
        scaled = scaled * per_sample_weights.reshape(-1, 1)
    index = flat.new_tensor(np.broadcast_to(np.maximum(bag, 0)[:, None], (len(bag), dim)))
    return weight.new_zeros((count, dim)).scatter_add(0, index, scaled)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """The sum, mean or max of each bag of embedding rows, without materialising the bags' rows per bag.

    A 2-D input (B, L) is B bags of L indices; a 1-D input is cut into bags at ``offsets``. Rows at
    padding_idx are left out (an empty bag gives zeros); per_sample_weights scale each row ('sum' only).
    """
    return _embedding_bag("embedding_bag", input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode,
                          per_sample_weights, include_last_offset, padding_idx)

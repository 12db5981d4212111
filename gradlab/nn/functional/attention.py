"""Attention as functions: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

Attention is a soft dictionary lookup: every query scores every key (q·k scaled by 1/sqrt(d)),
softmax turns a query's scores into weights, and its output is the weighted sum of the values.
Masks take (query, key) pairs out before the softmax. All heads and batch elements are computed
at once, as a few large batched matrix products.
"""

from __future__ import annotations

import math

from ...autograd.function import Function
from ...autograd.grad_mode import grad_state
from ...dtypes import bool_
from ...ops._common import ShapeError, broadcast_shapes, check_same_device, shape_str
from ...ops.autocast import autocast_op
from ...ops.shape import cat, pad, stack
from ...tensor import Tensor
from .dropout import dropout
from .linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


class AttentionWeights(Function):
    """softmax(scale · q kᵀ + mask) over the keys: the softmax's gradient dS goes to q through k, to k through q.

    The scores and their softmax are one node. ``mask`` is None, a bool tensor (True = the pair
    takes part) or a float tensor added to the scores. A query whose every key is masked gets
    weights ``empty_row_value``: 0 in ``scaled_dot_product_attention``, NaN (the softmax of all
    -inf) in nn.MultiheadAttention's weights.
    Backward, with P the weights: dS = P ⊙ (dP − Σ_keys dP ⊙ P), dq = scale · dS k, dk = scale · dSᵀ q.
    """

    derivative = ("∂L/∂q = scale · dS · k;  ∂L/∂k = scale · dSᵀ · q;  ∂L/∂mask = dS (a float mask), "
                  "with dS = out ⊙ (g − Σ_keys g ⊙ out)")

    @staticmethod
    def forward(ctx, q, k, mask, scale, empty_row_value):
        out = q._wrap(_softmax_scores(q.device.backend, q.array, k.array, mask, scale, empty_row_value))
        ctx.scale = scale
        ctx.save_for_backward(q, k, out, mask if mask is not None and mask.dtype.is_floating_point else None)
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, p, mask = ctx.saved_tensors
        d_scores = p * (grad - (grad * p).sum(-1, keepdim=True))
        grad_q = d_scores.matmul(k) * ctx.scale if ctx.needs_input_grad[0] else None
        grad_k = d_scores.mT.matmul(q) * ctx.scale if ctx.needs_input_grad[1] else None
        grad_mask = d_scores if ctx.needs_input_grad[2] else None
        return grad_q, grad_k, grad_mask, None, None


def _softmax_scores(b, q, k, mask, scale, empty_row_value):
    """The attention weights softmax(scale · q kᵀ + mask) as an array: the scores are scaled and
    masked in their own fresh array, and the softmax makes the only other one."""
    scores = b.matmul(q, _mT(b, k))
    b.imul(scores, scale)
    empty = None
    if mask is not None:
        if mask.dtype.is_floating_point:
            b.iadd(scores, mask.array)
        else:
            scores = b.where(mask.array, scores, -math.inf)
        empty = _empty_rows(b, mask)
        if b.any_true(empty):
            scores = b.where(empty, 0.0, scores)  # softmax of a row of -inf is 0/0: fill those rows after it
        else:
            empty = None
    weights = b.softmax(scores, scores.ndim - 1)
    if empty is not None:
        weights = b.where(empty, empty_row_value, weights)
    return weights


def _mT(b, a):
    """The last two axes swapped (a view)."""
    return b.permute(a, tuple(range(a.ndim - 2)) + (a.ndim - 1, a.ndim - 2))


def _empty_rows(b, mask):
    """Where a query has no key left to attend to (kept-dims shape of the mask, last dim 1)."""
    axis = (mask.ndim - 1,)
    if mask.dtype.is_floating_point:
        return b.all(b.eq(mask.array, -math.inf), axis, True)
    return b.logical_not(b.any(mask.array, axis, True))


class SelfAttention(Function):
    """Multi-head self-attention from the packed projection qkv = x W_inᵀ + b_in: the gradient returns packed too.

    v gets Pᵀ g; q and k get the softmax's gradient dS through each other, scaled. qkv is
    (N, L, 3E) (batch_first) or (L, N, 3E); the output, (N, L, E) or (L, N, E), is what the
    output projection takes. Each head's q, k and v are strided views of qkv, never copies: the
    products read them in place and write the heads' outputs (in backward dq, dk and dv) straight
    into their slots of one packed array (matmul_into), so there is no head split or merge to copy
    or to differentiate. Forward makes the scores (softmaxed into P, saved) and the output; backward
    makes dP (turned into dS in place) and d_qkv. With create_graph, backward is Tensor operations.
    """

    derivative = ("∂L/∂qkv = (scale · dS · k, scale · dSᵀ · q, Pᵀ · g) packed per head;  "
                  "∂L/∂mask = dS (a float mask), with P the weights and dS = P ⊙ (g vᵀ − Σ_keys (g vᵀ) ⊙ P)")

    @staticmethod
    def forward(ctx, qkv, num_heads, mask, scale, empty_row_value, batch_first):
        b = qkv.device.backend
        q, k, v = _heads(b, qkv.array, num_heads, batch_first)
        p = _softmax_scores(b, q, k, mask, scale, empty_row_value)
        a, n, width = qkv.shape
        out = b.empty((a, n, num_heads, width // (3 * num_heads)), qkv.dtype)
        b.matmul_into(p, v, _head_view(b, out, batch_first))
        ctx.num_heads, ctx.scale, ctx.empty_row_value, ctx.batch_first = num_heads, scale, empty_row_value, batch_first
        ctx.save_for_backward(qkv, qkv._wrap(p), mask)
        return qkv._wrap(b.reshape(out, (a, n, width // 3)))

    @staticmethod
    def backward(ctx, grad):
        qkv, p, mask = ctx.saved_tensors
        if grad_state.enabled:
            return _self_attention_graph(ctx, grad, qkv, mask)
        b, heads, batch_first, needs = qkv.device.backend, ctx.num_heads, ctx.batch_first, ctx.needs_input_grad
        q, k, v = _heads(b, qkv.array, heads, batch_first)
        g = _head_view(b, b.reshape(grad.array, grad.shape[:2] + (heads, -1)), batch_first)
        d_scores = b.matmul(g, _mT(b, v))  # dP, turned into dS = P ⊙ (dP − Σ_keys dP ⊙ P) in place
        rows = b.einsum("...ij,...ij->...i", d_scores, p.array)
        b.isub(d_scores, b.reshape(rows, rows.shape + (1,)))
        b.imul(d_scores, p.array)
        grad_mask = qkv._wrap(d_scores) if needs[2] else None
        grad_qkv = None
        if needs[0]:
            packed = b.empty(qkv.shape, qkv.dtype)
            dq, dk, dv = _heads(b, packed, heads, batch_first)
            b.matmul_into(d_scores, k, dq)
            b.imul(dq, ctx.scale)
            b.matmul_into(_mT(b, d_scores), q, dk)
            b.imul(dk, ctx.scale)
            b.matmul_into(_mT(b, p.array), g, dv)
            grad_qkv = qkv._wrap(packed)
        return grad_qkv, None, grad_mask, None, None, None


def _self_attention_graph(ctx, grad, qkv, mask):
    """SelfAttention's backward as Tensor operations (create_graph): P is recomputed as a node of
    the graph, so that its own dependence on q and k reaches the second derivatives."""
    heads, scale = ctx.num_heads, ctx.scale
    a, n, width = qkv.shape
    q, k, v = qkv.unflatten(-1, (3, heads, width // (3 * heads))).permute(*_PACKED_AXES[ctx.batch_first]).unbind(0)
    p = AttentionWeights.apply(q, k, mask, scale, ctx.empty_row_value)
    g = grad.unflatten(-1, (heads, -1)).permute(*_HEAD_AXES[ctx.batch_first])
    d_scores = g.matmul(v.mT)
    d_scores = p * (d_scores - (d_scores * p).sum(-1, keepdim=True))
    grad_q, grad_k, grad_v = d_scores.matmul(k) * scale, d_scores.mT.matmul(q) * scale, p.mT.matmul(g)
    inverse = _inverse(_PACKED_AXES[ctx.batch_first])
    grad_qkv = stack([grad_q, grad_k, grad_v]).permute(*inverse).reshape(a, n, width)
    grad_mask = d_scores if ctx.needs_input_grad[2] else None
    return grad_qkv, None, grad_mask, None, None, None


# (N, L, ...) or (L, N, ...) → (N, heads, L, head_dim); the packed layout has the q/k/v axis in front.
_HEAD_AXES = {True: (0, 2, 1, 3), False: (1, 2, 0, 3)}
_PACKED_AXES = {True: (2, 0, 3, 1, 4), False: (2, 1, 3, 0, 4)}


def _inverse(axes):
    return tuple(sorted(range(len(axes)), key=axes.__getitem__))


def _head_view(b, a, batch_first):
    """(N, L, heads, head_dim) or (L, N, heads, head_dim) seen as (N, heads, L, head_dim)."""
    return b.permute(a, _HEAD_AXES[batch_first])


def _heads(b, packed, num_heads, batch_first):
    """q, k, v of every head as (N, heads, L, head_dim) views of a packed (N, L, 3E) or (L, N, 3E) array."""
    a, n, width = packed.shape
    split = b.reshape(packed, (a, n, 3, num_heads, width // (3 * num_heads)))
    both = b.permute(split, _PACKED_AXES[batch_first])
    return b.getitem(both, 0), b.getitem(both, 1), b.getitem(both, 2)


# --- scaled_dot_product_attention -----------------------------------------------------------------

@autocast_op("lower")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q kᵀ / sqrt(E) + mask) v over the last two dims, as ``torch.nn.functional.scaled_dot_product_attention``.

    query (..., L, E), key (..., S, E), value (..., S, Ev) give (..., L, Ev). A bool ``attn_mask``
    marks with True the pairs that TAKE PART; a float one is added to the scores. ``is_causal``
    lets query i see keys 0..i only. A query with every key masked out gets output 0.
    """
    _check_qkv(query, key, value, enable_gqa)
    if enable_gqa:
        key, value = _repeat_heads(key, query.shape[-3]), _repeat_heads(value, query.shape[-3])
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True; "
                               "pass one or the other (a causal mask is built from is_causal)")
        attn_mask = causal_mask(query, query.shape[-2], key.shape[-2])
    elif attn_mask is not None:
        attn_mask = _checked_mask(attn_mask, query, key)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    weights = AttentionWeights.apply(query, key, attn_mask, scale, 0.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    return weights.matmul(value)


def causal_mask(like, L: int, S: int):
    """An (L, S) bool mask, True on and below the diagonal: query i may look at keys 0..i."""
    return like.new_ones((L, S), dtype=bool_).tril()


def _check_qkv(query, key, value, enable_gqa):
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{op}: expected {name} to be a gradlab Tensor, got {type(t).__name__}")
        if t.ndim < 2:
            raise RuntimeError(f"{op}: {name} must have at least 2 dims (..., sequence, features), "
                               f"got shape {shape_str(t.shape)}")
    check_same_device(op, query, key, value)
    if not (query.dtype is key.dtype is value.dtype):
        raise RuntimeError(f"{op}: Expected query, key, and value to have the same dtype, but got query.dtype: "
                           f"{query.dtype.name}, key.dtype: {key.dtype.name} and value.dtype: {value.dtype.name} "
                           "instead; convert them with .to(query.dtype)")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(
            f"{op}: query {shape_str(query.shape)}, key {shape_str(key.shape)} and value {shape_str(value.shape)} "
            "do not fit: expected query (..., L, E), key (..., S, E) and value (..., S, Ev) — query and key must "
            "share the feature size E, key and value the sequence length S"
        )
    if enable_gqa and (query.ndim < 3 or key.shape[-3] != value.shape[-3] or query.shape[-3] % key.shape[-3]):
        raise RuntimeError(f"{op}: with enable_gqa=True the number of query heads (dim -3 of query "
                           f"{shape_str(query.shape)}) must be a multiple of the key/value heads (key "
                           f"{shape_str(key.shape)}, value {shape_str(value.shape)})")


def _repeat_heads(x, heads: int):
    """Grouped-query attention: each key/value head serves heads // kv_heads consecutive query heads."""
    kv_heads = x.shape[-3]
    if kv_heads == heads:
        return x
    shape = x.shape[:-3] + (kv_heads, heads // kv_heads) + x.shape[-2:]
    return x.unsqueeze(-3).expand(shape).reshape(x.shape[:-3] + (heads,) + x.shape[-2:])


def _checked_mask(mask, query, key):
    """A bool or float mask that broadcasts to the scores' shape (..., L, S), in the query's float dtype."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"scaled_dot_product_attention: attn_mask must be a gradlab Tensor, got {type(mask).__name__}")
    check_same_device("scaled_dot_product_attention", query, mask)
    scores_shape = broadcast_shapes(query.shape[:-2], key.shape[:-2]) + (query.shape[-2], key.shape[-2])
    try:
        fits = broadcast_shapes(mask.shape, scores_shape) == scores_shape
    except ShapeError:
        fits = False
    if not fits:
        raise RuntimeError(f"scaled_dot_product_attention: attn_mask of shape {shape_str(mask.shape)} does not "
                           f"broadcast to the attention scores' shape {shape_str(scores_shape)} (batch..., L, S)")
    if mask.dtype.name == "bool" or mask.dtype is query.dtype:
        return mask
    if mask.dtype.is_floating_point:
        return mask.to(query.dtype)
    raise RuntimeError(f"scaled_dot_product_attention: Expected attn_mask dtype to be bool or float, but got "
                       f"{mask.dtype.name}; use a bool mask (True = take part) or an additive float mask")


# --- multi-head attention -------------------------------------------------------------------------

def canonical_mask(mask, name: str, dtype):
    """A bool mask (True = masked OUT, nn.MultiheadAttention's convention) as an additive float mask."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"{name} must be a gradlab Tensor or None, got {type(mask).__name__}")
    if mask.dtype.is_floating_point:
        return mask
    if mask.dtype.name != "bool":
        raise AssertionError(f"only bool and floating types of {name} are supported, got {mask.dtype.name}")
    return mask.new_zeros(mask.shape, dtype=dtype).masked_fill(mask, -math.inf)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """The forward pass of ``nn.MultiheadAttention`` on (L, N, E) inputs (or unbatched (L, E)), as in PyTorch.

    Returns (output, weights): weights (N, L, S) averaged over heads, (N, num_heads, L, S) if not
    ``average_attn_weights``, or None when ``need_weights`` is False. Bool masks mark with True
    the pairs that are masked OUT; float masks are added to the scores.
    """
    return _multi_head_attention(
        query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, bias_v,
        add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask, need_weights, attn_mask,
        (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None, static_k, static_v,
        average_attn_weights, is_causal, batch_first=False)


def _multi_head_attention(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k,
                          bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training, key_padding_mask,
                          need_weights, attn_mask, separate_weights, static_k, static_v, average_attn_weights,
                          is_causal, batch_first):
    """multi_head_attention_forward in either layout: the projections run on the input as it is laid out
    ((L, N, E) or (N, L, E)), and permuted views give every head its (N, heads, L, head_dim) block."""
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    self_attention = query is key is value
    bdim = 0 if batch_first else 1
    if not batched:
        query, key, value = query.unsqueeze(bdim), key.unsqueeze(bdim), value.unsqueeze(bdim)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    sdim = 1 - bdim
    tgt_len, bsz, embed_dim = query.shape[sdim], query.shape[bdim], query.shape[2]
    src_len = key.shape[sdim]
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint says the mask is causal: build it from is_causal instead
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", query.dtype)
        is_causal = False
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"MultiheadAttention: was expecting embedding dimension of {embed_dim_to_check}, but got "
                             f"query of shape {shape_str(query.shape)} with {embed_dim} features")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")

    if not training:
        dropout_p = 0.0
    if self_attention and separate_weights is None and bias_k is None and bias_v is None and not add_zero_attn \
            and static_k is None and static_v is None and not need_weights and dropout_p == 0.0:
        # the common case (a transformer layer's): one node from the packed projection to the joined heads
        if attn_mask is not None:
            attn_mask = _mha_attn_mask(attn_mask, bsz, num_heads, tgt_len, src_len)
        attn_mask = _with_padding(attn_mask, key_padding_mask, bsz, src_len)
        if is_causal:
            attn_mask = causal_mask(query, tgt_len, src_len)
        qkv = linear(query, in_proj_weight, in_proj_bias)
        out = SelfAttention.apply(qkv, num_heads, attn_mask, 1.0 / math.sqrt(head_dim), 0.0, batch_first)
        out = linear(out, out_proj_weight, out_proj_bias)
        return (out if batched else out.squeeze(bdim)), None

    if separate_weights is None:
        if key.shape != value.shape:
            raise AssertionError(f"MultiheadAttention: key shape {shape_str(key.shape)} does not match value shape "
                                 f"{shape_str(value.shape)}")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    else:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"MultiheadAttention: key's sequence and batch dims {shape_str(key.shape[:2])} do not "
                                 f"match value's {shape_str(value.shape[:2])}")
        biases = in_proj_bias.chunk(3) if in_proj_bias is not None else (None,) * 3
        q, k, v = (linear(x, w, b) for x, w, b in zip((query, key, value), separate_weights, biases))

    if attn_mask is not None:
        attn_mask = _mha_attn_mask(attn_mask, bsz, num_heads, tgt_len, src_len)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key or value.")
        shape = (bsz, 1, embed_dim) if batch_first else (1, bsz, embed_dim)
        k, v = cat([k, bias_k.expand(shape)], sdim), cat([v, bias_v.expand(shape)], sdim)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    elif (bias_k is None) != (bias_v is None):
        raise AssertionError("MultiheadAttention: bias_k and bias_v must be given together")

    q = _split_heads(q, num_heads, batch_first)
    k = _split_heads(k, num_heads, batch_first) if static_k is None else _static(static_k, bsz, num_heads, head_dim, "k")
    v = _split_heads(v, num_heads, batch_first) if static_v is None else _static(static_v, bsz, num_heads, head_dim, "v")
    if add_zero_attn:
        zeros = k.new_zeros((bsz, num_heads, 1, head_dim))
        k, v = cat([k, zeros], 2), cat([v, zeros], 2)
        attn_mask = _pad_last(attn_mask)
        key_padding_mask = _pad_last(key_padding_mask)
    src_len = k.shape[2]
    attn_mask = _with_padding(attn_mask, key_padding_mask, bsz, src_len)
    if is_causal:
        attn_mask = causal_mask(q, tgt_len, src_len)

    weights = AttentionWeights.apply(q, k, attn_mask, 1.0 / math.sqrt(head_dim), math.nan if need_weights else 0.0)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, training=True)
    out = weights.matmul(v)  # (N, heads, L, head_dim)
    out = out.permute(0, 2, 1, 3) if batch_first else out.permute(2, 0, 1, 3)
    out = linear(out.reshape(query.shape[:2] + (embed_dim,)), out_proj_weight, out_proj_bias)
    if need_weights:
        weights = weights.mean(1) if average_attn_weights else weights
    else:
        weights = None
    if not batched:
        out = out.squeeze(bdim)
        weights = weights.squeeze(0) if weights is not None else None
    return out, weights


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """Whether the inputs are batched (3-D) or unbatched (2-D), after checking that the others agree."""
    for name, t in (("query", query), ("key", key), ("value", value)):
        if not isinstance(t, Tensor):
            raise TypeError(f"MultiheadAttention: expected {name} to be a gradlab Tensor, got {type(t).__name__}")
    if query.ndim not in (2, 3):
        raise AssertionError("MultiheadAttention: query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.ndim}-D query tensor of shape {shape_str(query.shape)}")
    batched = query.ndim == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"MultiheadAttention: for {kind} `query`, expected `key` and `value` to be {query.ndim}-D "
                             f"but found {key.ndim}-D and {value.ndim}-D tensors respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(f"MultiheadAttention: for {kind} `query`, expected `key_padding_mask` to be `None` or "
                             f"{query.ndim - 1}-D but found a {key_padding_mask.ndim}-D tensor of shape "
                             f"{shape_str(key_padding_mask.shape)} instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(f"MultiheadAttention: for {kind} `query`, expected `attn_mask` to be `None`, 2-D or "
                                 f"3-D but found a {attn_mask.ndim}-D tensor of shape {shape_str(attn_mask.shape)}")
        if not batched and attn_mask.ndim == 3:
            expected = (num_heads, query.shape[0], key.shape[0])
            if tuple(attn_mask.shape) != expected:
                raise AssertionError(f"MultiheadAttention: Expected `attn_mask` shape to be {shape_str(expected)} but "
                                     f"got {shape_str(attn_mask.shape)}")
    return batched


def _mha_attn_mask(attn_mask, bsz, num_heads, tgt_len, src_len):
    """(L, S) stays as it is (it broadcasts); (N * heads, L, S) becomes (N, heads, L, S)."""
    if attn_mask.ndim == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {shape_str(attn_mask.shape)}, but should be "
                               f"{shape_str((tgt_len, src_len))} (target length, source length).")
        return attn_mask
    if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
        raise RuntimeError(f"The shape of the 3D attn_mask is {shape_str(attn_mask.shape)}, but should be "
                           f"{shape_str((bsz * num_heads, tgt_len, src_len))} (batch * num_heads, target length, "
                           "source length).")
    return attn_mask.reshape(bsz, num_heads, tgt_len, src_len)


def _with_padding(attn_mask, key_padding_mask, bsz, src_len):
    """The additive key_padding_mask (N, S) folded into attn_mask as (N, 1, 1, S)."""
    if key_padding_mask is None:
        return attn_mask
    if tuple(key_padding_mask.shape) != (bsz, src_len):
        raise AssertionError(f"MultiheadAttention: expected key_padding_mask of shape {shape_str((bsz, src_len))} "
                             f"(batch, source length), got {shape_str(key_padding_mask.shape)}")
    padding = key_padding_mask.reshape(bsz, 1, 1, src_len)
    return padding if attn_mask is None else attn_mask + padding


def _in_projection_packed(query, key, value, weight, bias):
    """q, k, v from the packed (3E, E) weight: one product for self-attention, two when key is value."""
    E = query.shape[-1]
    if key is value:
        if query is key:
            return linear(query, weight, bias).unflatten(-1, (3, E)).unbind(-2)
        w_q, w_kv = weight.split((E, 2 * E))
        b_q, b_kv = bias.split((E, 2 * E)) if bias is not None else (None, None)
        k, v = linear(key, w_kv, b_kv).unflatten(-1, (2, E)).unbind(-2)
        return linear(query, w_q, b_q), k, v
    weights = weight.chunk(3)
    biases = bias.chunk(3) if bias is not None else (None,) * 3
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))


def _split_heads(x, num_heads, batch_first):
    """(L, N, E) or (N, L, E) as the view (N, heads, L, head_dim)."""
    a, b, E = x.shape
    x = x.reshape(a, b, num_heads, E // num_heads)
    return x.permute(0, 2, 1, 3) if batch_first else x.permute(1, 2, 0, 3)


def _static(t, bsz, num_heads, head_dim, name):
    """A precomputed static_k / static_v of shape (N * heads, S, head_dim) as (N, heads, S, head_dim)."""
    if t.ndim != 3 or t.shape[0] != bsz * num_heads or t.shape[2] != head_dim:
        raise AssertionError(f"expecting static_{name} of shape ({bsz * num_heads}, S, {head_dim}) "
                             f"(batch * num_heads, S, head_dim), but got {shape_str(t.shape)}")
    return t.reshape(bsz, num_heads, t.shape[1], head_dim)


def _pad_last(mask):
    """One more key column that takes part (0 in an additive mask), for bias_k/bias_v and add_zero_attn."""
    if mask is None:
        return None
    return pad(mask, (0, 1))

"""Multi-head attention: nn.MultiheadAttention with PyTorch's parameters, masks and outputs.

The inputs are projected to queries, keys and values (one packed (3E, E) weight when their sizes
agree), split into ``num_heads`` heads of E / num_heads features, attended separately — all heads
in one batched product — and joined again by the output projection ``out_proj``.
"""

from __future__ import annotations

from ...creation import empty
from .. import init
from ..functional.attention import _multi_head_attention
from ..parameter import Parameter
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention"]


class NonDynamicallyQuantizableLinear(Linear):
    """The Linear of ``MultiheadAttention.out_proj`` (PyTorch's name for it, kept so the repr matches)."""


class MultiheadAttention(Module):
    """Attention over num_heads heads, as ``torch.nn.MultiheadAttention``.

    forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False) returns (output, weights or None). Inputs are
    (L, N, E), (N, L, E) with batch_first=True, or unbatched (L, E). Bool masks mark with True the
    positions NOT allowed to attend; float masks are added to the attention scores.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError(f"MultiheadAttention: embed_dim must be divisible by num_heads, got embed_dim="
                                 f"{embed_dim} and num_heads={num_heads}; each head gets embed_dim // num_heads "
                                 "features, so choose num_heads among the divisors of embed_dim")

        def weight(*shape):
            return Parameter(empty(shape, dtype=dtype, device=device))

        if self._qkv_same_embed_dim:
            self.in_proj_weight = weight(3 * embed_dim, embed_dim)
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = weight(embed_dim, embed_dim)
            self.k_proj_weight = weight(embed_dim, self.kdim)
            self.v_proj_weight = weight(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = weight(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = weight(1, 1, embed_dim)
            self.bias_v = weight(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """Xavier-uniform projections, zero biases, Xavier-normal bias_k/bias_v, as PyTorch does."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    reset_parameters = _reset_parameters

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        separate = None if self._qkv_same_embed_dim else (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight)
        return _multi_head_attention(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias, self.training,
            key_padding_mask, need_weights, attn_mask, separate, None, None, average_attn_weights, is_causal,
            batch_first=self.batch_first)

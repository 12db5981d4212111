"""The Transformer encoder: TransformerEncoderLayer and a stack of them, TransformerEncoder.

One layer is self-attention followed by a two-layer MLP, each wrapped in a residual connection
and a LayerNorm. ``norm_first=False`` (the original post-norm) normalises after each residual sum;
``norm_first=True`` (pre-norm, usual today) normalises the input of each block instead, which
trains more stably in deep stacks.
"""

from __future__ import annotations

import copy
import math

from ..functional.activation import gelu, relu
from ..functional.attention import canonical_mask
from .activation import GELU, ReLU
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder"]

_ACTIVATIONS = {"relu": relu, "gelu": gelu}


def _get_activation_fn(activation: str):
    if activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _generate_square_subsequent_mask(sz: int, like):
    """The (sz, sz) causal float mask: 0 on and below the diagonal, -inf above (future positions)."""
    return like.new_full((sz, sz), -math.inf).triu(1)


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward MLP, each with a residual connection and LayerNorm.

    post-norm: x = norm1(x + SA(x)); x = norm2(x + FF(x)).  pre-norm (norm_first=True):
    x = x + SA(norm1(x)); x = x + FF(norm2(x)).  FF(x) = linear2(dropout(activation(linear1(x)))).
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """src: (S, N, E), (N, S, E) with batch_first=True, or unbatched (S, E); masks as in MultiheadAttention."""
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask", src.dtype)
        src_mask = canonical_mask(src_mask, "src_mask", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """num_layers deep copies of encoder_layer applied in turn, then the optional final ``norm``.

    ``enable_nested_tensor`` and ``mask_check`` are accepted for compatibility: they steer PyTorch's
    inference fast path, which gradlab does not have (PyTorch's fast path also zeroes the outputs at
    padded positions; here they hold whatever the layers computed).
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """src as in TransformerEncoderLayer; is_causal=None detects a causal ``mask`` by comparing it."""
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask", src.dtype)
        mask = canonical_mask(mask, "mask", src.dtype)
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        seq_len = src.shape[0] if src.ndim == 2 else src.shape[1 if batch_first else 0]
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """The is_causal hint as given, or (when None) whether mask equals the causal mask of that size."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    size = size if size is not None else mask.shape[-2]
    causal = _generate_square_subsequent_mask(size, mask)
    return tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())

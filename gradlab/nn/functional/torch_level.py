"""The nn.functional ops that PyTorch also has at its top level: ``torch.conv2d``, ``torch.dropout``.

Those are ATen's forms of the same computations: ATen's argument order and names, flags passed
by position (``torch.dropout(x, p, train)``) and reductions given as numbers (0 none, 1 mean,
2 sum). Each one here hands over to the nn.functional form, so every op has one implementation.
"""

from __future__ import annotations

from .. import functional as F

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(op: str, code) -> str:
    """ATen's reduction number as nn.functional's word."""
    if code in _REDUCTIONS.values():
        return code
    if code not in _REDUCTIONS:
        raise ValueError(f"{op}: reduction must be 0 (none), 1 (mean) or 2 (sum), or one of "
                         f"'none', 'mean', 'sum'; got {code!r}")
    return _REDUCTIONS[code]


# The same signature as nn.functional's: the very same functions.
_SAME = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu",
         "celu", "celu_", "selu", "selu_", "relu_", "threshold", "threshold_", "hardshrink", "rrelu", "rrelu_",
         "pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "cosine_similarity", "pairwise_distance", "pdist",
         "bilinear", "rms_norm", "adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d", "max_pool1d",
         "max_pool2d", "max_pool3d")
globals().update({name: getattr(F, name) for name in _SAME})


def dropout(input, p: float, train: bool):
    return F.dropout(input, p, train)


def alpha_dropout(input, p: float, train: bool):
    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input, p: float, train: bool):
    return F.feature_alpha_dropout(input, p, train)


def batch_norm(input, weight, bias, running_mean, running_var, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool = True):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = True):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5, cudnn_enable: bool = True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5, cudnn_enabled: bool = True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False, sparse: bool = False):
    """ATen's argument order: the table first. padding_idx=-1 means none (nn.functional's None)."""
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode: bool = False):
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def kl_div(input, target, reduction=1, *, log_target: bool = False):
    return F.kl_div(input, target, reduction=_reduction("kl_div", reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(
        "binary_cross_entropy_with_logits", reduction), pos_weight=pos_weight)


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction("cosine_embedding_loss",
                                                                                          reduction))


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction("margin_ranking_loss",
                                                                                        reduction))


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction("poisson_nll_loss",
                                                                                              reduction))


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


__all__ = sorted(list(_SAME) + [
    "alpha_dropout", "batch_norm", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "dropout",
    "embedding", "feature_alpha_dropout", "group_norm", "hinge_embedding_loss", "instance_norm", "kl_div",
    "layer_norm", "margin_ranking_loss", "max_pool1d_with_indices", "poisson_nll_loss", "triplet_margin_loss"])

"""The functional forms of the ops, re-exported by ``gradlab`` (``gradlab.exp(x)`` as ``torch.exp(x)``)."""

from .arithmetic import add, div, mul, neg, pow, sub
from .indexing import (gather, index_select, masked_fill, one_hot, scatter, scatter_add, take_along_dim, tril,
                       triu)
from .linalg import bmm, dot, einsum, ger, matmul, mm, mv, outer
from .reductions import (all, amax, amin, any, argmax, argmin, cumprod, cumsum, logsumexp, max, mean, min, norm, prod,
                         std, sum, var)
from .repeat import repeat_interleave
from .shape import (broadcast_to, cat, chunk, concat, concatenate, flatten, flip, meshgrid, movedim, moveaxis, narrow, pad,
                    permute, reshape, roll, split, squeeze, stack, swapaxes, swapdims, t, tile, transpose, unbind,
                    unflatten, unsqueeze)
from .activations import elu, gelu, leaky_relu, log_softmax, relu, sigmoid, silu, softmax, softplus
from .elementwise import (abs, ceil, clamp, clamp_max, clamp_min, clip, cos, erf, exp, expm1, floor, isfinite, isinf,
                          isnan, log, log1p, logical_not, maximum, minimum, reciprocal, round, rsqrt, sign, sin, sqrt,
                          square, tan, tanh, trunc, where)

__all__ = ["add", "div", "mul", "neg", "pow", "sub"]
__all__ += ["bmm", "dot", "einsum", "ger", "matmul", "mm", "mv", "outer"]
__all__ += ["gather", "index_select", "masked_fill", "one_hot", "scatter", "scatter_add", "take_along_dim", "tril",
            "triu"]
__all__ += ["all", "amax", "amin", "any", "argmax", "argmin", "cumprod", "cumsum", "logsumexp", "max", "mean", "min",
            "norm", "prod", "std", "sum", "var"]
__all__ += ["broadcast_to", "cat", "chunk", "concat", "concatenate", "flatten", "flip", "meshgrid", "movedim", "moveaxis", "narrow",
            "pad", "permute", "reshape", "roll", "split", "squeeze", "stack", "swapaxes", "swapdims", "t", "tile",
            "transpose", "unbind", "unflatten", "unsqueeze"]
__all__ += ["elu", "gelu", "leaky_relu", "log_softmax", "relu", "sigmoid", "silu", "softmax", "softplus"]
__all__ += ["abs", "ceil", "clamp", "clamp_max", "clamp_min", "clip", "cos", "erf", "exp", "expm1", "floor", "isfinite",
            "isinf", "isnan", "log", "log1p", "logical_not", "maximum", "minimum", "reciprocal", "round", "rsqrt", "sign",
            "sin", "sqrt", "square", "tan", "tanh", "trunc", "where"]
__all__ += ["repeat_interleave"]
from .queries import is_nonzero, is_same_size, is_signed, typename  # noqa: E402
__all__ += ["is_nonzero", "is_same_size", "is_signed", "typename"]

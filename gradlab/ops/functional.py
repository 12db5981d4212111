"""The functional forms of the ops, re-exported by ``gradlab`` (``gradlab.exp(x)`` as ``torch.exp(x)``)."""

from .arithmetic import add, div, mul, neg, pow, sub
from .indexing import (gather, index_select, masked_fill, one_hot, scatter, scatter_add, take_along_dim, tril,
                       triu)
from .indexing import index_add, index_copy, index_fill, index_put, index_put_, index_reduce, scatter_reduce
from .linalg import bmm, dot, einsum, ger, matmul, mm, mv, outer
from .reductions import (all, amax, amin, any, argmax, argmin, cumprod, cumsum, logsumexp, max, mean, min, norm, prod,
                         std, sum, var)
from .repeat import repeat_interleave
from .sorting import (argsort, bucketize, cummax, cummin, kthvalue, median, mode, msort, nanmedian, nanquantile,
                      quantile, searchsorted, sort, topk, unique, unique_consecutive)
from .diagonals import diag, diag_embed, diagflat, diagonal, diagonal_copy, diagonal_scatter, trace
from .selection import (argwhere, masked_scatter, masked_select, nonzero, nonzero_static, put, select, select_copy,
                        select_scatter, slice_copy, slice_scatter, take)
from .products import (addbmm, addmm, addmv, addmv_, addr, baddbmm, cdist, chain_matmul, cross, inner, kron, pdist,
                       tensordot, vdot)
from .legacy_linalg import (adjoint, cholesky, cholesky_inverse, cholesky_solve, det, eig, geqrf, inverse,
                            logdet, lstsq, lu, lu_solve, lu_unpack, matrix_exp, matrix_power, matrix_rank, nuclear_norm,
                            orgqr, ormqr, pinverse, qr, slogdet, solve, svd, symeig, triangular_solve)
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
__all__ += ["argsort", "bucketize", "cummax", "cummin", "kthvalue", "median", "mode", "msort", "nanmedian", "nanquantile",
            "quantile", "searchsorted", "sort", "topk", "unique", "unique_consecutive"]
__all__ += ["index_add", "index_copy", "index_fill", "index_put", "index_put_", "index_reduce", "scatter_reduce"]
__all__ += ["diag", "diag_embed", "diagflat", "diagonal", "diagonal_copy", "diagonal_scatter", "trace"]
__all__ += ["argwhere", "masked_scatter", "masked_select", "nonzero", "nonzero_static", "put", "select", "select_copy",
            "select_scatter", "slice_copy", "slice_scatter", "take"]
# (imported below __all__, so that each helper's names stay together)
from .copies import *  # noqa: E402,F401,F403  (view_copy, permute_copy, ..., made from one table)
from .copies import __all__ as _copy_names  # noqa: E402
from .differences import cumulative_trapezoid, diff, gradient, trapezoid, trapz  # noqa: E402
from .reductions import logcumsumexp  # noqa: E402
from .shape import (as_strided, as_strided_, atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes,
                    broadcast_tensors, cartesian_prod, column_stack, combinations, constant_pad_nd, dsplit, dstack,
                    fliplr, flipud, hsplit, hstack, ravel, resize_as_, rot90, row_stack, split_with_sizes,
                    tensor_split, unravel_index, unsafe_chunk, unsafe_split, unsafe_split_with_sizes, vander, vsplit,
                    vstack)
from .statistics import (aminmax, bincount, corrcoef, count_nonzero, cov, dist, frobenius_norm, histc, histogram,
                         nanmean, nansum, norm_except_dim, renorm, std_mean, var_mean)

__all__ += _copy_names
__all__ += ["cumulative_trapezoid", "diff", "gradient", "trapezoid", "trapz", "logcumsumexp"]
__all__ += ["as_strided", "as_strided_", "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
            "broadcast_tensors", "cartesian_prod", "column_stack", "combinations", "constant_pad_nd", "dsplit",
            "dstack", "fliplr", "flipud", "hsplit", "hstack", "ravel", "resize_as_", "rot90", "row_stack",
            "split_with_sizes", "tensor_split", "unravel_index", "unsafe_chunk", "unsafe_split",
            "unsafe_split_with_sizes", "vander", "vsplit", "vstack"]
__all__ += ["aminmax", "bincount", "corrcoef", "count_nonzero", "cov", "dist", "frobenius_norm", "histc", "histogram",
            "nanmean", "nansum", "norm_except_dim", "renorm", "std_mean", "var_mean"]
__all__ += ["addbmm", "addmm", "addmv", "addmv_", "addr", "baddbmm", "cdist", "chain_matmul", "cross", "inner", "kron",
            "pdist", "tensordot", "vdot"]
__all__ += ["adjoint", "cholesky", "cholesky_inverse", "cholesky_solve", "det", "eig", "geqrf", "inverse",
            "logdet", "lstsq", "lu", "lu_solve", "lu_unpack", "matrix_exp", "matrix_power", "matrix_rank",
            "nuclear_norm", "orgqr", "ormqr", "pinverse", "qr", "slogdet", "solve", "svd", "symeig",
            "triangular_solve"]
from .bitwise import (bitwise_and, bitwise_left_shift, bitwise_not, bitwise_or, bitwise_right_shift, bitwise_xor,
                      logical_and, logical_or, logical_xor)
from .comparison import (allclose, eq, equal, ge, greater, greater_equal, gt, is_nonzero, is_same_size, is_signed,
                         isclose, isin, isneginf, isposinf, isreal, le, less, less_equal, lt, ne, not_equal)
from .inplace import TORCH_INPLACE
from .pointwise import (absolute, addcdiv, angle, addcmul, copysign, exp2, fix, float_power, floor_divide, fmax, fmin, fmod,
                        frac, frexp, gcd, heaviside, lcm, ldexp, lerp, log10, log2, logaddexp, logaddexp2, nan_to_num,
                        negative, nextafter, positive, remainder, rsub, sgn, signbit)
from .special import digamma, erfc, erfinv, i0, igamma, igammac, lgamma, logit, mvlgamma, polygamma, xlogy
from .trigonometric import (acos, acosh, arccos, arccosh, arcsin, arcsinh, arctan, arctan2, arctanh, asin, asinh, atan,
                            atan2, atanh, cosh, deg2rad, hypot, rad2deg, sinc, sinh)
from .real import conj, conj_physical, imag, is_complex, is_conj, is_neg, real, resolve_conj, resolve_neg
from .arithmetic import div as divide, div as true_divide, mul as multiply, sub as subtract

globals().update(TORCH_INPLACE)  # gradlab.exp_(x), gradlab.relu_(x), ... as in torch

__all__ += ["bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
            "logical_and", "logical_or", "logical_xor"]
__all__ += ["allclose", "eq", "equal", "ge", "greater", "greater_equal", "gt", "is_nonzero", "is_same_size",
            "is_signed", "isclose", "isin", "isneginf", "isposinf", "isreal", "le", "less", "less_equal", "lt", "ne",
            "not_equal"]
__all__ += ["absolute", "addcdiv", "angle", "addcmul", "copysign", "exp2", "fix", "float_power", "floor_divide", "fmax", "fmin",
            "fmod", "frac", "frexp", "gcd", "heaviside", "lcm", "ldexp", "lerp", "log10", "log2", "logaddexp",
            "logaddexp2", "nan_to_num", "negative", "nextafter", "positive", "remainder", "rsub", "sgn", "signbit"]
__all__ += ["digamma", "erfc", "erfinv", "i0", "igamma", "igammac", "lgamma", "logit", "mvlgamma", "polygamma", "xlogy"]
__all__ += ["acos", "acosh", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctan2", "arctanh", "asin", "asinh",
            "atan", "atan2", "atanh", "cosh", "deg2rad", "hypot", "rad2deg", "sinc", "sinh"]
__all__ += ["divide", "true_divide", "multiply", "subtract"]
__all__ += ["conj", "conj_physical", "imag", "is_complex", "is_conj", "is_neg", "real", "resolve_conj", "resolve_neg"]
__all__ += list(TORCH_INPLACE)

from .numpy_spellings import accept_numpy_spellings  # noqa: E402

accept_numpy_spellings(globals(), leave=("norm",))  # gradlab.sum(x, axis=1, keepdims=True), as in torch

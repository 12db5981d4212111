"""``out=``: a torch-level function writes its result into a tensor you give, as PyTorch's do.

``gradlab.add(x, y, out=r)`` computes ``x + y`` as usual, writes it into ``r``'s memory and
returns ``r`` (whose version counter goes up, as with any in-place write). PyTorch's rules hold,
checked here once for every function in ``OUT_FUNCTIONS``:

* autograd does not go through ``out=``: with grad mode on, an argument (or ``out``) that
  requires grad is an error, since the write could not be differentiated;
* the result must fit out's dtype (a float result cannot go into an integer tensor), and an
  index output (``argmax``, the indices of ``max(x, dim)``) must be int64 exactly;
* an ``out`` of another shape is resized to the result's, with PyTorch's warning when it held
  elements (an empty ``out`` is resized silently).
"""

from __future__ import annotations

import functools
import warnings

from ..autograd.function import TrackedTensor
from ..autograd.grad_mode import grad_state
from ..dtypes import int64
from ._common import describe

# Every function of ``gradlab`` whose PyTorch namesake takes out= (read from torch's own signatures).
OUT_FUNCTIONS = tuple("""
    abs absolute acos acosh add addbmm addcdiv addcmul addmm addmv addr alias_copy all amax amin aminmax angle any
    arange arccos arccosh arcsin arcsinh arctan arctan2 arctanh argmax argmin argsort as_strided_copy asin asinh atan
    atan2 atanh baddbmm bernoulli bitwise_and bitwise_left_shift bitwise_not bitwise_or bitwise_right_shift bitwise_xor
    bmm bucketize cat ceil chain_matmul cholesky cholesky_inverse cholesky_solve clamp clamp_max clamp_min clip
    column_stack concat concatenate conj_physical copysign cos cosh cross cummax cummin cumprod cumsum deg2rad
    detach_copy diag diagonal_copy diff digamma div divide dot dstack empty eq erf erfc erfinv exp exp2 expand_copy
    expm1 eye fix float_power floor floor_divide fmax fmin fmod frac frexp frobenius_norm full gather gcd ge geqrf ger
    greater greater_equal gt hardshrink heaviside histc histogram hstack hypot i0 igamma igammac index_add index_copy
    index_reduce index_select inner inverse isin isneginf isposinf kron kthvalue lcm ldexp le lerp less less_equal
    lgamma linspace log log10 log1p log2 log_softmax logaddexp logaddexp2 logcumsumexp logical_and logical_not
    logical_or logical_xor logit logspace logsumexp lstsq lt lu_solve lu_unpack masked_select matmul matrix_power
    matrix_rank max maximum mean median min minimum mm mode msort mul multinomial multiply mv mvlgamma nan_to_num
    nanmean nanmedian nanquantile nansum narrow_copy ne neg negative nextafter nonzero nonzero_static norm normal
    not_equal nuclear_norm ones orgqr ormqr outer permute_copy polygamma pow prod qr quantile rad2deg rand randint randn
    randperm reciprocal remainder renorm round row_stack rsqrt scatter scatter_add scatter_reduce searchsorted
    select_copy sgn sigmoid sign signbit sin sinc sinh slice_copy slice_scatter slogdet softmax solve sort split_copy
    split_with_sizes_copy sqrt square squeeze_copy stack std sub subtract sum svd symeig t_copy take take_along_dim tan
    tanh tensordot threshold topk transpose_copy triangular_solve tril triu true_divide trunc unbind_copy
    unfold_copy unsqueeze_copy var vdot view_copy vstack where xlogy zeros
""".split())
_INDEX_FUNCTIONS = ("argmax", "argmin", "argsort", "nonzero", "nonzero_static")  # (and every 'indices' field)


def writes_out(fn):
    """``fn`` that also takes ``out=``: the result is written into that tensor (or tuple of tensors)."""
    name = fn.__name__

    @functools.wraps(fn)
    def writing_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if grad_state.enabled and _requires_grad(args, kwargs, out):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        return _write_into(name, fn(*args, **kwargs), out)

    writing_out.writes_out = True
    return writing_out


def accept_out(namespace: dict) -> None:
    """Give each function of ``OUT_FUNCTIONS`` in ``namespace`` (a module's globals()) its ``out=``."""
    for name in OUT_FUNCTIONS:
        fn = namespace.get(name)
        if fn is not None and not getattr(fn, "writes_out", False):
            namespace[name] = writes_out(fn)


def _requires_grad(args, kwargs, out) -> bool:
    values = list(args) + list(kwargs.values()) + (list(out) if isinstance(out, (tuple, list)) else [out])
    for value in values:
        for t in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(t, TrackedTensor) and t.requires_grad:
                return True
    return False


def _write_into(name: str, result, out):
    """Check out against the result, resize it if its shape differs, write the result in; return out."""
    if isinstance(result, TrackedTensor):
        if not isinstance(out, TrackedTensor):
            raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
        _write_one(name, result, out, index=name in _INDEX_FUNCTIONS)
        return out
    fields = getattr(result, "_fields", None) or [f"output {i}" for i in range(len(result))]
    if not isinstance(out, (tuple, list)) or len(out) != len(result) or not all(
            isinstance(o, TrackedTensor) for o in out):
        raise TypeError(f"{name}(): this call returns {len(result)} tensors ({', '.join(fields)}), so out= must be a "
                        f"tuple of {len(result)} tensors, got {_what(out)}")
    for field, r, o in zip(fields, result, out):
        _write_one(name, r, o, index=field == "indices")
    return type(result)(*out) if hasattr(result, "_fields") else type(result)(out)


def _write_one(name: str, result, out, index: bool) -> None:
    if out.device != result.device:
        raise RuntimeError(f"{name}(): the result is on {result.device} but out is on {out.device}; pass an out "
                           f"tensor on {result.device}")
    if index and out.dtype is not int64:
        raise RuntimeError(f"{name}(): Expected out tensor to have dtype long int (int64) for the indices, but got "
                           f"{out.dtype.name} instead")
    if result.dtype is not out.dtype and result.dtype.category > out.dtype.category:
        raise RuntimeError(f"{name}(): result type {result.dtype.name} can't be cast to the desired output type "
                           f"{out.dtype.name}; pass an out tensor of dtype {result.dtype.name}")
    if out.shape != result.shape:
        _resize(name, out, result.shape)
    out._write(f"{name}()", result)


def _resize(name: str, out, shape) -> None:
    if out._base is not None:
        raise RuntimeError(f"{name}(): out has shape {list(out.shape)} but the result has shape {list(shape)}, and out "
                           "is a view, which gradlab does not resize; pass an out tensor of the result's shape")
    if out.numel():
        warnings.warn(f"{name}(): An output with one or more elements was resized since it had shape "
                      f"{list(out.shape)}, which does not match the required output shape {list(shape)}. This "
                      "behavior is deprecated, and in a future PyTorch release outputs will not be resized unless "
                      "they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, "
                      "to zero elements with t.resize_(0).", UserWarning, stacklevel=5)
    out.resize_(*shape)


def _what(out) -> str:
    if isinstance(out, (tuple, list)):
        return f"a {type(out).__name__} of {len(out)}: " + ", ".join(describe(o) for o in out)
    return describe(out)

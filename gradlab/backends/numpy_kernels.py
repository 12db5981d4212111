"""The numpy backend's hand-written kernels: faster than composing primitives, with the same results.

``numpy_backend.py`` is the reference (one numpy call per primitive); what needs more than one
call to be fast lives here: erf and Φ for float32 from minimax polynomials (several times faster
than scipy's float64 erf, within 1 ulp), softmax and sigmoid in place in one new array, and the
heavy paths' fused kernels (log-softmax, the softmax backwards, layer norm) with einsum sums and
in-place steps. Each has a composed fallback in ``contract.py`` and a test against an exact reference.
"""

from __future__ import annotations

import math

import numpy as np


_erf_impl = None


def _erf_exact(a):
    """The error function: scipy's when installed, else math.erf element by element (both in float64)."""
    global _erf_impl
    if _erf_impl is None:
        try:
            from scipy.special import erf as _erf_impl_
        except ImportError:  # exact but slow; `pip install scipy` makes it fast
            _erf_impl_ = np.vectorize(math.erf, otypes=[np.float64])
        _erf_impl = _erf_impl_
    return np.asarray(_erf_impl(a), dtype=a.dtype)


# Minimax fits (Lawson's iteration on a dense grid against scipy's float64 erf), highest degree first.
_ERF_EDGE = 0.8  # |t| up to here: the float32 polynomial; beyond: the float64 tail
_ERF_NEAR = (-0.0006549597422797366, 0.005087440001616609, -0.02682210863254952, 0.11283142836156804,
             -0.37612603820870083, 0.1283791640183358)  # erf(t)/t - 1 in z = t², |error| < 3.1e-9
_NDTR_EDGE = 1.5  # the same for Φ(x), in x: the tail starts at |x| = 1.5 (about 1% of a GELU's inputs)
_NDTR_NEAR = (-2.53580435054621e-08, 6.13110881434889e-07, -9.348781016463121e-06, 0.00011533659622956302,
              -0.0011872732399989508, 0.009973541810627238, -0.06649037846241793,
              0.3989422803736256)  # (Φ(x) - 1/2)/x in v = x², |error| < 3e-11
_ERF_TAIL = (0.03472753275491064, -0.35290931463383146, 1.6075658122694998, -4.3237693641084505,
             7.589871774425575, -9.012565012833853, 7.138035686167942, -3.3794962529960673, 0.47844684230079115,
             0.360980089179168, 0.004790024690236622, -0.2822868522521923, 3.0319619378216256e-06,
             0.5641895756108276)  # t·erfc(t)·exp(t²) in u = 1/t, relative error < 1.5e-8 for every t >= 0.8
_BLOCK = 1 << 17  # elements per block: a block's temporaries are reused from the heap's free lists


def _horner(coefficients, v, out):
    """Σ c_i v^i into ``out`` (an array the caller owns, not v), two in-place passes per degree."""
    np.multiply(v, coefficients[0], out=out)
    np.add(out, coefficients[1], out=out)
    for c in coefficients[2:]:
        np.multiply(out, v, out=out)
        np.add(out, c, out=out)
    return out


def _erf_near(t, out):
    """erf(t) = t + t·y(t²) for |t| <= 0.8, in place in float32: written this way the rounding of the
    small term t·y barely reaches the result (within 1 ulp)."""
    _horner(_ERF_NEAR, np.multiply(t, t), out)
    np.multiply(out, t, out=out)
    np.add(out, t, out=out)


def _ndtr_near(x, out):
    """Φ(x) = 1/2 + x·w(x²) for |x| <= 1.5, in place in float32 (within 9e-8 of the exact value)."""
    _horner(_NDTR_NEAR, np.multiply(x, x), out)
    np.multiply(out, x, out=out)
    np.add(out, 0.5, out=out)


def _float32_kernel(a, near, edge, cdf):
    """erf (or Φ when cdf) of a float32 array, several times faster than scipy's float64 erf.

    Block by block, ``near`` evaluates a polynomial on every element (clipped to ±edge) in float32
    with in-place passes, into the output. The elements beyond the edge (and NaN: few, for typical
    activations) are redone in float64 from erfc(|t|) = exp(-t²)·R(1/|t|), on those elements only.
    """
    x = a.reshape(-1)
    out = np.empty_like(x)
    for start in range(0, x.size, _BLOCK):
        xb, o = x[start:start + _BLOCK], out[start:start + _BLOCK]
        clipped = np.clip(xb, -edge, edge)
        near(clipped, o)
        tail = np.flatnonzero(np.not_equal(xb, clipped))
        if tail.size:
            t = xb[tail].astype(np.float64)
            o[tail] = _erf_tail(t * 0.7071067811865476 if cdf else t, cdf)
    return out.reshape(a.shape)


def _erf_tail(t, cdf):
    """erf(t), or (1 + erf(t)) / 2, in float64 through erfc(|t|), exact to float32's precision."""
    s = np.abs(t)
    u = np.reciprocal(s)
    erfc = _horner(_ERF_TAIL, u, np.empty_like(s))
    erfc *= u
    np.multiply(s, s, out=s)
    erfc *= np.exp(np.negative(s, out=s), out=s)
    if cdf:  # the lower tail 0.5·erfc keeps its relative precision (no 1 - 1 cancellation)
        erfc *= 0.5
        return np.where(t > 0, 1.0 - erfc, erfc)
    return np.copysign(1.0 - erfc, t)


def erf(a):
    """The error function: a fast float32-accurate kernel for float32, exact otherwise (the backend
    sends 16-bit floats through float32)."""
    if a.dtype == np.float32:
        return _float32_kernel(a, _erf_near, _ERF_EDGE, cdf=False)
    return _erf_exact(a)


def ndtr(a):
    """Φ(a) for float32 from its own polynomial (the kernel of erf, in x rather than x/√2)."""
    return _float32_kernel(a, _ndtr_near, _NDTR_EDGE, cdf=True)


def softmax(a, axis):
    """exp(a - max) / sum in one new array: the shift makes it, exp and the scaling work in place.
    Along the last axis einsum sums the rows several times faster than np.sum does."""
    with np.errstate(invalid="ignore"):  # a row of -inf gives NaN, as the composed kernel does
        e = np.subtract(a, np.max(a, axis=axis, keepdims=True))
        np.exp(e, out=e)
        if axis == e.ndim - 1:
            e /= np.einsum("...i->...", e)[..., None]
        else:
            e /= np.sum(e, axis=axis, keepdims=True)
    return e


def sigmoid(a, out=...):
    """1 / (1 + exp(-a)) in four in-place passes (into ``out`` when given, which may be ``a``); exp
    overflowing to inf gives exactly 0, as it should."""
    e = np.negative(a, out=out)
    with np.errstate(over="ignore"):
        np.exp(e, out=e)
    np.add(e, 1, out=e)
    return np.reciprocal(e, out=e)


def erfc(a):
    """1 - erf(a) without the cancellation: scipy's erfc when installed, else math.erfc element by element."""
    try:
        from scipy.special import erfc as exact
    except ImportError:
        exact = np.vectorize(math.erfc, otypes=[np.float64])
    return np.asarray(exact(a), dtype=a.dtype)


# --- the heavy paths' fused kernels (float32 / float64; the backend widens 16-bit floats first) -----

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _total(arrays, axes):
    """Σ over ``axes`` of the product of one or two arrays, the summed axes kept as size 1.

    One einsum reads the operands once and writes only the (small) result: no full-size temporary
    for the product, and numpy's einsum also sums faster than its own ``sum`` along these axes.
    """
    ndim = arrays[0].ndim
    axes = {axis % ndim for axis in axes} if ndim else set()
    dims = _LETTERS[:ndim]
    kept = "".join(d for i, d in enumerate(dims) if i not in axes)
    total = np.einsum(",".join([dims] * len(arrays)) + "->" + kept, *arrays)
    return np.asarray(total).reshape(tuple(1 if i in axes else n for i, n in enumerate(arrays[0].shape)))


def log_softmax(a, axis):
    """(a − max) − log Σ exp(a − max) in two new arrays: the shifted logits (the result, in place) and exp."""
    with np.errstate(invalid="ignore"):  # a row of -inf gives NaN, as the composed kernel does
        shifted = np.subtract(a, np.max(a, axis=axis, keepdims=True))
        shifted -= np.log(_total((np.exp(shifted),), (axis,)))
    return shifted


def softmax_backward(y, g, axis):
    """y · (g − Σ g·y): the sum is one einsum of g and y (no product array), the rest in one new array."""
    out = np.subtract(g, _total((g, y), (axis,)))
    out *= y
    return out


def log_softmax_backward(y, g, axis):
    """g − exp(y) · Σ g, in the one array exp(y) makes."""
    p = np.exp(y)
    p *= _total((g,), (axis,))
    return np.subtract(g, p, out=p)


def _trailing(ndim, n):
    return tuple(range(ndim - n, ndim))


def layer_norm(a, weight, bias, n, eps):
    """Layer norm in two full-size arrays: a − mean, scaled in place into x̂ (saved), and the output
    x̂·weight with the bias added in place. Sums are einsums (no temporaries for squares)."""
    axes = _trailing(a.ndim, n)
    scale = 1.0 / max(math.prod(a.shape[a.ndim - n:]), 1)
    mean = _total((a,), axes)
    mean *= scale
    x_hat = np.subtract(a, mean)
    inv_std = _total((x_hat, x_hat), axes)
    inv_std *= scale
    inv_std += eps
    np.sqrt(inv_std, out=inv_std)
    np.reciprocal(inv_std, out=inv_std)
    x_hat *= inv_std
    if weight is None:
        out = np.add(x_hat, 0.0 if bias is None else bias)  # never the saved x̂ itself
    else:
        out = np.multiply(x_hat, weight)
        if bias is not None:
            out += bias
    return out, (x_hat, inv_std)


def layer_norm_backward(g, a, weight, saved, n, needs):
    """Layer norm's three gradients with two full-size temporaries (g·weight and the shift x̂·mean(ĝx̂) + mean(ĝ)):
    grad_a = (ĝ − mean(ĝ) − x̂·mean(ĝ·x̂)) / σ, ĝ = g·weight; grad_weight = Σ g·x̂, grad_bias = Σ g over the leading axes."""
    x_hat, inv_std = saved
    axes, lead = _trailing(g.ndim, n), tuple(range(g.ndim - n))
    trailing_shape = g.shape[g.ndim - n:]
    grad_a = grad_weight = grad_bias = None
    if needs[1]:
        grad_weight = _total((g, x_hat), lead).reshape(trailing_shape).astype(weight.dtype, copy=False)
    if needs[2]:
        grad_bias = _total((g,), lead).reshape(trailing_shape)
    if needs[0]:
        scale = 1.0 / max(math.prod(trailing_shape), 1)
        gy = g if weight is None else np.multiply(g, weight)
        mean_gy = _total((gy,), axes)
        mean_gy *= scale
        mean_gy_xh = _total((gy, x_hat), axes)
        mean_gy_xh *= scale
        shift = np.multiply(x_hat, mean_gy_xh)
        shift += mean_gy
        if gy is g:  # g is not ours to overwrite: the result goes into shift
            grad_a = np.subtract(g, shift, out=shift)
        else:
            grad_a = np.subtract(gy, shift, out=gy)
        grad_a *= inv_std
    return grad_a, grad_weight, grad_bias

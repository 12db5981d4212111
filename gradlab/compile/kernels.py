"""Faster kernels for a few numpy-backend calls, giving the same bits: what a compiled program runs in
their place when numba is installed.

A program calls the backend as eager did; where one call is worth a compiled loop of its own (GELU's
forward on float32 arrays: numpy makes several passes), the program calls the loop here instead,
the same arithmetic step for step as the kernel it stands in for. (The tape's GELU rule also uses
numba's serial backward, which is within a rounding of numpy's, not equal to it.)
"""

from __future__ import annotations

import functools

import numpy as np

_NEAR = _TAIL = _EDGE = None  # numpy_kernels' float32 Φ: its polynomial near 0, float64 tail, edge (set on first use)


def _gelu32(x, out, cdf):
    """out = x · Φ(x) for float32, exactly as numpy_kernels.ndtr and a multiply compute it: Φ's polynomial
    in float32 on x clipped to ±1.5 (Horner, one rounding per step), then the float64 tail beyond."""
    n0, n1, n2, n3, n4, n5, n6, n7 = _NEAR
    edge, half = _EDGE, np.float32(0.5)
    for i in range(x.shape[0]):
        c = min(max(x[i], -edge), edge)
        v = c * c
        o = v * n0 + n1  # (two roundings: numba contracts nothing without fastmath)
        o = o * v + n2
        o = o * v + n3
        o = o * v + n4
        o = o * v + n5
        o = o * v + n6
        o = o * v + n7
        cdf[i] = o * c + half
    for i in range(x.shape[0]):
        xi = x[i]
        if not abs(xi) <= edge:  # beyond the edge, and NaN
            t = np.float64(xi) * 0.7071067811865476
            s = abs(t)
            u = 1.0 / s
            r = u * _TAIL[0] + _TAIL[1]
            for k in range(2, len(_TAIL)):
                r = r * u + _TAIL[k]
            r = r * u * np.exp(-(s * s)) * 0.5
            cdf[i] = np.float32(1.0 - r if t > 0 else r)
    for i in range(x.shape[0]):
        out[i] = x[i] * cdf[i]


@functools.cache
def numba_gelu32():
    """numba's compile of _gelu32 (several times fewer passes than numpy's kernel), or None without numba."""
    global _NEAR, _TAIL, _EDGE
    try:
        import numba
    except ImportError:
        return None
    from ..backends import numpy_kernels

    _NEAR = tuple(np.float32(c) for c in numpy_kernels._NDTR_NEAR)
    _TAIL, _EDGE = tuple(numpy_kernels._ERF_TAIL), np.float32(numpy_kernels._NDTR_EDGE)
    return numba.njit(cache=True)(_gelu32)  # (numba's default error model: 1/s never divides by 0 here, and is faster)


def faster(backend, name, args, arrays):
    """A kernel to call instead of ``backend.<name>(*args)`` (same arguments, same results), or None.
    ``arrays(arg)`` gives the traced array an argument stood for (its dtype decides)."""
    if backend.name != "numpy":
        return None
    if name == "gelu" and len(args) == 2 and args[1] == "none" and arrays(args[0]).dtype == np.float32:
        kernel = numba_gelu32()
        return None if kernel is None else functools.partial(_gelu32_call, kernel)
    return None  # (numba's GELU backward rounds differently from numpy's in the last bit: not used here)


def _gelu32_call(kernel, a, approximate):
    flat = np.ascontiguousarray(a).reshape(-1)
    y, cdf = np.empty(flat.shape, a.dtype), np.empty(flat.shape, a.dtype)
    kernel(flat, y, cdf)
    return y.reshape(a.shape), (cdf.reshape(a.shape),)

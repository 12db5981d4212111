"""How a conformance case runs and is judged: the same function on the reference and on a device.

A case is a function ``(device, sizes, dtype) -> {name: Tensor}``: it builds its inputs from a seeded
numpy generator on the host (so every device starts from the same numbers), moves them to ``device``,
computes forward and backward there, and returns the outputs and gradients it wants compared.
``check`` runs it on 'cpu' (numpy, the reference) and on the device and compares every entry.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import gradlab as gl

# Tolerances, relative to the reference's magnitude. float32 has ~6e-8 relative rounding per operation;
# a backend that fuses, reorders a sum or uses another libm may differ by a few ulps per step and by ~n ulps
# over an n-term sum, so rtol 1e-5 / atol 1e-6·scale leave room for ~100 ulps, far below any real bug (a
# wrong index or formula is off by O(1)). float64 rounds at 1e-16: 1e-10 / 1e-12·scale is as far from
# both. ``scale`` is max(1, max |reference|), so near-zero entries of a large result (a gradient that
# cancels) are judged against the size of the numbers that produced them. Cases that accumulate a lot
# (matmul, convolution, normalisation, whole layers, optimizer steps) widen this by their ``tol`` factor.
TOLERANCES = {gl.float32: (1e-5, 1e-6), gl.float64: (1e-10, 1e-12)}


@dataclass(frozen=True)
class Case:
    name: str
    fn: object
    dtype: object
    slow: bool
    tol: float
    dtypes: frozenset  # every floating dtype the case computes in (a backend lacking one skips it)


CASES: dict = {}


def case(*dtypes, slow=False, tol=1.0, needs=()):
    """Register a case for each dtype (its id is ``name[dtype]``; no dtypes: the case picks its own, and
    ``needs`` names the floating dtypes it uses besides float32)."""
    def register(fn):
        for dtype in dtypes or (None,):
            name = fn.__name__ if dtype is None else f"{fn.__name__}[{dtype.name if hasattr(dtype, 'name') else dtype}]"
            assert name not in CASES, f"two cases named {name}"
            CASES[name] = Case(name, fn, dtype, slow, tol, frozenset(needs) | ({dtype} if dtype else set()))
        return fn

    return register


# --- building inputs --------------------------------------------------------------------------------

def host(shape, seed, low=-2.0, high=2.0, dtype=np.float64):
    """A reproducible numpy array of uniform values in [low, high)."""
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(dtype)


def on(device, array, dtype=None, grad=False):
    """A leaf on ``device`` holding ``array`` (in ``dtype`` when given)."""
    return gl.tensor(np.asarray(array), dtype=dtype, device=device, requires_grad=grad)


def leaf(device, shape, seed, dtype, low=-2.0, high=2.0):
    """A random leaf that requires grad."""
    return on(device, host(shape, seed, low, high), dtype, grad=True)


def forward_backward(fn, *leaves, seed=99):
    """fn's outputs and the gradients of its inputs, backward from random upstream gradients.

    fn returns a tensor or a dict of named tensors: each is compared on its own (a sum of outputs could
    hide two errors that cancel), and each gets its own random upstream gradient in the backward pass.
    """
    outs = fn(*leaves)
    results = dict(outs) if isinstance(outs, dict) else {"out": outs}
    total = None
    for i, out in enumerate(results.values()):
        if isinstance(out, gl.Tensor) and out.requires_grad:
            term = (out * on(out.device, host(out.shape, seed + i), out.dtype)).sum()
            total = term if total is None else total + term
    if total is not None:
        total.backward()
        for i, x in enumerate(leaves):
            if isinstance(x, gl.Tensor) and x.requires_grad:
                results[f"grad{i}"] = x.grad
    return results


def module_results(module, out, inputs=()):
    """A module's output, its inputs' gradients and every parameter's gradient, after backward."""
    out.backward(on(out.device, host(out.shape, 98), out.dtype))
    results = {"out": out}
    results.update({f"grad_input{i}": x.grad for i, x in enumerate(inputs) if x.requires_grad})
    results.update({f"grad {name}": p.grad for name, p in module.named_parameters() if p.grad is not None})
    return results


# --- judging -----------------------------------------------------------------------------------------

def run(case_: Case, device, sizes):
    """The case on ``device``, every result checked to be there and brought to the host."""
    gl.manual_seed(0)
    results = case_.fn(device, sizes, case_.dtype)
    host_results = {}
    for key, value in results.items():
        if isinstance(value, gl.Tensor):
            assert value.device == device, f"{case_.name}: '{key}' is on {value.device}, expected {device}"
            host_results[key] = (value.dtype, value.detach().cpu().numpy())
        else:
            host_results[key] = (None, value)
    return host_results


def assert_matches(case_: Case, expected: dict, actual: dict):
    assert actual.keys() == expected.keys(), f"{case_.name}: results {sorted(actual)} != {sorted(expected)}"
    for key, (dtype, want) in expected.items():
        got_dtype, got = actual[key]
        where = f"{case_.name}: '{key}'"
        assert got_dtype == dtype, f"{where} has dtype {got_dtype}, the reference {dtype}"
        if dtype is None and not isinstance(want, np.ndarray):
            assert got == want, f"{where}: {got!r} != {want!r}"
            continue
        want, got = np.asarray(want), np.asarray(got)
        assert got.shape == want.shape, f"{where} has shape {got.shape}, the reference {want.shape}"
        if dtype in TOLERANCES:
            rtol, atol = TOLERANCES[dtype]
            finite = want[np.isfinite(want)]
            scale = max(1.0, float(np.abs(finite).max())) if finite.size else 1.0
            np.testing.assert_allclose(got, want, rtol=rtol * case_.tol, atol=atol * case_.tol * scale,
                                       err_msg=where)
        else:  # integers, bools, 16-bit floats given their own case: exact
            np.testing.assert_array_equal(got, want, err_msg=where)


def check(case_: Case, device, sizes):
    """The case on the device agrees with numpy's, entry by entry (skipped where the backend lacks its dtype)."""
    supported = getattr(device.backend, "supported_dtypes", None)
    lacking = sorted(d.name for d in case_.dtypes if supported is not None and d not in supported)
    if lacking:
        pytest.skip(f"the {device.backend.name} backend has no {', '.join(lacking)}")
    expected = run(case_, gl.device("cpu"), sizes)
    actual = run(case_, device, sizes)
    assert_matches(case_, expected, actual)

"""Shared test helpers: float64 inputs, comparisons with numpy and (when installed) PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import gradlab as gl

try:
    import torch
except ImportError:  # the tests that need it skip, and say why
    torch = None

requires_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed (pip install torch==2.13.0)")


def randn(*shape, seed=0, dtype=np.float64):
    """A reproducible standard-normal numpy array."""
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def leaf(array, requires_grad=True, dtype=None):
    """A gradlab leaf tensor holding a copy of ``array`` (float64 unless dtype says otherwise)."""
    array = np.asarray(array)
    if dtype is None and array.dtype.kind == "f":
        dtype = gl.float64
    return gl.tensor(array, dtype=dtype, requires_grad=requires_grad)


def noncontiguous_leaf(array, requires_grad=True):
    """A float64 leaf whose data is laid out column-major: same values, non-contiguous strides."""
    array = np.asarray(array, dtype=np.float64)
    # the reversed-axes array made contiguous, then permuted back: a view on the default device
    t = gl.tensor(np.array(array.T, order="C")).permute(*range(array.ndim)[::-1]).detach()
    assert array.ndim < 2 or t.device.type not in ("cpu", "numba") or not t.is_contiguous()
    return t.requires_grad_(requires_grad)


def assert_close(actual, expected, rtol=1e-6, atol=1e-8):
    """Compare a gradlab tensor (or anything array-like) with expected values and shape."""
    if isinstance(actual, gl.Tensor):
        actual = actual.detach().numpy()
    if torch is not None and isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"shape {actual.shape} != expected {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def to_torch(array, requires_grad=False):
    t = torch.tensor(np.asarray(array))
    return t.requires_grad_(requires_grad) if requires_grad else t


def watch_trusted_forwards(monkeypatch) -> list:
    """Patch Function.apply to note every op recorded while a trusted (_forward_is_primitive) forward runs.

    Function.apply skips switching recording off around gradlab's own forwards, trusting them to use
    backend primitives only; the returned list fills with "Op inside Outer.forward" for each breach.
    """
    Function = gl.autograd.Function
    original = Function.apply.__func__
    running, found = [], []

    def watched_apply(cls, *inputs):
        if running and running[-1]._forward_is_primitive and gl.is_grad_enabled() and any(
                isinstance(x, gl.Tensor) and x.requires_grad for x in inputs):
            found.append(f"{cls.__name__} inside {running[-1].__name__}.forward")
        running.append(cls)
        try:
            return original(cls, *inputs)
        finally:
            running.pop()

    monkeypatch.setattr(Function, "apply", classmethod(watched_apply))
    return found


def device_marks(name: str, slow: bool = False) -> list:
    """Marks for a test run on device ``name``: a skip that says why when its backend does not load here
    (numba, mlx or numba-cuda not installed), else ``slow`` when asked."""
    try:
        gl.device(name).backend
    except RuntimeError as error:
        return [pytest.mark.skip(reason=f"the {name} backend does not load here: {error}")]
    return [pytest.mark.slow] if slow else []


def assert_same_bits(a, b, what: str) -> None:
    """a and b are equal bit for bit (NaN where NaN), with the largest difference named when they are not."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
    assert np.array_equal(a, b, equal_nan=True), f"{what}: compiled differs from eager (max |Δ| " \
                                                   f"{np.nanmax(np.abs(a - b))})"

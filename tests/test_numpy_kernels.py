"""The numpy backend's fast kernels: float32 erf / ndtr (accuracy over a dense grid), in-place kernels,
softmax and matmul_into, each against an exact reference; and GELU in float32 against float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import randn

import gradlab as gl
from gradlab.backends.contract import Backend
from gradlab.backends.numpy_backend import NumpyBackend

B = NumpyBackend()
F32_EPS = float(np.finfo(np.float32).eps)
np_erf = np.vectorize(math.erf, otypes=[np.float64])


def exact_ndtr(x):
    """Φ(x) in float64: 0.5·erfc(−x/√2), relative-accurate in the lower tail too."""
    return 0.5 * np.vectorize(math.erfc, otypes=[np.float64])(-np.asarray(x, dtype=np.float64) / math.sqrt(2.0))


SPECIALS = np.float32([0.0, -0.0, 1e-30, -1e-38, 0.8, -0.8, np.nextafter(np.float32(0.8), np.float32(1)), 3.92, 4.0,
                       -4.5, 9.0, -40.0, np.inf, -np.inf])


def dense_grid():
    """Every float32 step is not needed: 600k points through the polynomial edge, the tail and beyond."""
    return np.concatenate([np.linspace(-7, 7, 400_001, dtype=np.float32),
                           np.linspace(0.7, 0.9, 200_001, dtype=np.float32), SPECIALS])


def test_float32_erf_is_within_one_ulp_of_the_exact_value_everywhere():
    x = dense_grid()
    got = B.erf(x)
    assert got.dtype == np.float32 and got.shape == x.shape
    exact = np_erf(x.astype(np.float64))
    err = np.abs(got.astype(np.float64) - exact)
    assert err.max() < 0.5 * F32_EPS  # well below float32's epsilon, the scale of erf's values
    ulp = np.spacing(np.abs(exact.astype(np.float32))).astype(np.float64)
    normal = np.abs(exact) > 1e-37
    assert (err[normal] / ulp[normal]).max() <= 1.0
    assert np.mean(got == exact.astype(np.float32)) > 0.95  # mostly the correctly rounded value itself


def test_float32_erf_special_values_and_shapes():
    assert np.isnan(B.erf(np.float32([np.nan]))).all()
    np.testing.assert_array_equal(B.erf(np.float32([np.inf, -np.inf, 40, -40])), [1, -1, 1, -1])
    assert np.signbit(B.erf(np.float32([-0.0])))[0]
    assert B.erf(np.float32(0.5)).shape == () and B.erf(np.zeros((2, 0), np.float32)).shape == (2, 0)
    strided = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2] / 10
    np.testing.assert_allclose(B.erf(strided), np_erf(strided.astype(np.float64)), rtol=2e-7)
    half = B.erf(np.float16([0.5, -2.0]))
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, np_erf([0.5, -2.0]), rtol=1e-3)


def test_float64_erf_keeps_the_exact_path():
    x = randn(1000, seed=1) * 3
    np.testing.assert_allclose(B.erf(x), np_erf(x), rtol=1e-15, atol=1e-16)


def test_float32_ndtr_is_accurate_in_value_and_in_the_lower_tail():
    x = np.concatenate([np.linspace(-12, 12, 400_001, dtype=np.float32), np.float32([-14.0, 14.0, 0.0])])
    got = B.ndtr(x)
    exact = exact_ndtr(x)
    assert np.abs(got - exact).max() < 0.8 * F32_EPS  # (PyTorch's float32 GELU: 7.5e-8 from its erf alone)
    lower = (x < -1.5) & (exact > 1.2e-38)  # Φ as 0.5·erfc(|t|) there (normal floats): relative precision
    assert (np.abs(got[lower] - exact[lower]) / exact[lower]).max() < 2 * F32_EPS
    np.testing.assert_array_equal(B.ndtr(np.float32([np.inf, -np.inf, -60.0])), [1.0, 0.0, 0.0])
    assert np.isnan(B.ndtr(np.float32([np.nan]))).all()


def test_ndtr_fallback_and_float64_agree_with_the_exact_cdf():
    x = randn(500, seed=2) * 4
    np.testing.assert_allclose(B.ndtr(x), exact_ndtr(x), rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(Backend.ndtr(B, x), exact_ndtr(x), rtol=1e-13, atol=1e-16)


def test_in_place_kernels_write_into_the_array():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    before = a
    B.iadd(a, np.float32([1, 2, 3]))
    B.imul(a, 2.0)
    assert a is before
    np.testing.assert_array_equal(a, (np.arange(6).reshape(2, 3) + [1, 2, 3]) * 2)
    c = np.ones((2, 3))
    Backend.iadd(B, c, 1.0)  # the composed fallbacks give the same result
    Backend.imul(B, c, 3.0)
    np.testing.assert_array_equal(c, np.full((2, 3), 6.0))


def test_softmax_kernel_matches_the_composed_one_and_handles_masked_rows():
    a = randn(3, 4, 5, seed=3)
    np.testing.assert_allclose(B.softmax(a, 2), Backend.softmax(B, a, 2), rtol=1e-14)
    np.testing.assert_allclose(B.softmax(a, 0).sum(0), np.ones((4, 5)), rtol=1e-14)
    row = np.array([[-np.inf, -np.inf], [0.0, 1.0]])
    with np.errstate(all="raise"):
        out = B.softmax(row, 1)
    assert np.isnan(out[0]).all() and np.allclose(out[1].sum(), 1.0)


def test_matmul_into_writes_through_a_strided_view():
    a, b = randn(2, 3, 4, seed=4), randn(2, 4, 5, seed=5)
    packed = np.zeros((2, 3, 2, 5))
    B.matmul_into(a, b, packed[:, :, 1])
    np.testing.assert_allclose(packed[:, :, 1], a @ b, rtol=1e-14)
    assert not packed[:, :, 0].any()
    Backend.matmul_into(B, a, b, packed[:, :, 0])
    np.testing.assert_allclose(packed[:, :, 0], a @ b, rtol=1e-14)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_float32_forward_and_backward_match_float64(approximate):
    x64 = randn(4, 257, seed=6) * 3
    g64 = randn(4, 257, seed=7)
    results = []
    for dtype in (gl.float32, gl.float64):
        x = gl.tensor(x64, dtype=dtype, requires_grad=True)
        y = gl.nn.functional.gelu(x, approximate=approximate)
        y.backward(gl.tensor(g64, dtype=dtype))
        assert y.dtype is dtype and x.grad.dtype is dtype
        results.append((y.detach().numpy().astype(np.float64), x.grad.numpy().astype(np.float64)))
    (y32, dx32), (y64, dx64) = results
    np.testing.assert_allclose(y32, y64, rtol=2e-6, atol=2e-7)
    np.testing.assert_allclose(dx32, dx64, rtol=2e-6, atol=2e-6)

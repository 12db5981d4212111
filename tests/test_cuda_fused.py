"""The CUDA backend's fused kernels (backends/cuda_fused.py) against numpy formulas written out here.

Without a GPU the kernels run under numba's simulator (set below, before numba.cuda is imported), so
the shapes stay small. The kernels are called on a bare ``CudaFusedKernels`` with the few primitives
they use done on the host (``HostGlue``): this file tests the kernels, not CudaBackend's primitives.
"""

import os

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not os.path.exists("/dev/nvidiactl"):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import math

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda", reason="the CUDA backend needs numba-cuda (pip install 'gradlab[cuda]')")

from gradlab import dtypes as dt  # noqa: E402
from gradlab.backends.contract import Backend  # noqa: E402
from gradlab.backends.cuda_fused import CudaFusedKernels  # noqa: E402
from gradlab.backends.numpy_backend import NumpyBackend  # noqa: E402

try:
    from scipy.special import erf as _erf
except ImportError:  # pragma: no cover
    _erf = np.vectorize(math.erf)


class HostGlue(CudaFusedKernels, Backend):
    """The primitives the fused kernels lean on, done through the host: a stand-in for CudaBackend's."""

    dtype_of = staticmethod(NumpyBackend.dtype_of)

    @staticmethod
    def _host(a):
        return a.copy_to_host()

    def astype(self, a, dtype):
        return cuda.to_device(self._host(a).astype(dtype.name))

    def copy(self, a):
        return cuda.to_device(np.ascontiguousarray(self._host(a)))

    def is_contiguous(self, a):
        return a.is_c_contiguous()

    def zeros(self, shape, dtype):
        return cuda.to_device(np.zeros(shape, dtype.name))

    def permute(self, a, axes):
        return cuda.to_device(np.ascontiguousarray(self._host(a).transpose(axes)))

    def broadcast_to(self, a, shape):
        return cuda.to_device(np.ascontiguousarray(np.broadcast_to(self._host(a), shape)))

    def argsort(self, a, axis):
        return cuda.to_device(np.argsort(self._host(a), axis=axis, kind="stable"))

    def setitem(self, a, index, value):
        a[index] = value

    def matmul(self, a, b):
        return cuda.to_device(self._host(a) @ self._host(b))


# xoroshiro and splitmix wrap uint64s around on purpose; simulated threads are numpy scalars, which warn
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in scalar:RuntimeWarning",
                                        "ignore:The keyword argument 'nopython=False':DeprecationWarning")

B = HostGlue()
RNG = np.random.default_rng(0)
FLOATS = [np.float32, np.float64]
TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-12, atol=1e-13),
       np.float16: dict(rtol=2e-3, atol=2e-3)}


def dev(x):
    return cuda.to_device(np.ascontiguousarray(x))


def host(a):
    return a.copy_to_host()


def check(got, want, dtype):
    got = host(got) if not isinstance(got, np.ndarray) else got
    assert got.dtype == np.dtype(dtype) and got.shape == want.shape
    np.testing.assert_allclose(got.astype(np.float64), want, **TOL[dtype])


def randn(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


# --- softmax family ---------------------------------------------------------------------------------

def softmax_ref(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


# rows longer than one block and not a multiple of it (the simulator's blocks are smaller), of length 1,
# and along a middle axis
LONG = 13 if cuda.config.ENABLE_CUDASIM else 131
SHAPES = [((3, LONG), -1), ((4, 1), -1), ((2, 5, 3), 1), ((6, 7), 0)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", SHAPES)
def test_softmax_and_log_softmax_match_the_formula(shape, axis, dtype):
    x = randn(*shape, dtype=dtype) * 3
    want = softmax_ref(x, axis)
    check(B.softmax(dev(x), axis), want, dtype)
    check(B.log_softmax(dev(x), axis), np.log(want), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,axis", SHAPES)
def test_softmax_gradients_match_the_formula(shape, axis, dtype):
    x, g = randn(*shape, dtype=dtype), randn(*shape, dtype=dtype)
    y = softmax_ref(x, axis).astype(dtype)
    y64, g64 = y.astype(np.float64), g.astype(np.float64)
    check(B.softmax_backward(dev(y), dev(g), axis), y64 * (g64 - (g64 * y64).sum(axis, keepdims=True)), dtype)
    logy = np.log(y64).astype(dtype)
    want = g64 - np.exp(logy.astype(np.float64)) * g64.sum(axis, keepdims=True)
    check(B.log_softmax_backward(dev(logy), dev(g), axis), want, dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("axis,keepdims", [(1, False), ((0, 2), True), (None, False), ((1, 2), False), (-1, True)])
def test_logsumexp_over_neighbouring_and_scattered_axes(axis, keepdims, dtype):
    x = randn(2, 11, 3, dtype=dtype) * 4
    x64 = x.astype(np.float64)
    m = x64.max(axis=axis, keepdims=True)
    want = np.log(np.exp(x64 - m).sum(axis=axis, keepdims=True)) + m
    if not keepdims:
        want = want.reshape(np.sum(x64, axis=axis).shape)
    check(B.logsumexp(dev(x), axis, keepdims), want, dtype)


def test_logsumexp_of_a_row_of_minus_infinity_is_minus_infinity():
    x = np.array([[-np.inf, -np.inf], [0.0, 0.0]], np.float32)
    np.testing.assert_allclose(host(B.logsumexp(dev(x), 1, False)), [-np.inf, np.log(2)], rtol=1e-6)


def test_16_bit_floats_are_computed_in_float32_and_keep_their_dtype():
    x = randn(4, 9, dtype=np.float16)
    check(B.softmax(dev(x), 1), softmax_ref(x.astype(np.float32), 1), np.float16)
    check(B.gelu(dev(x), "tanh")[0], gelu_tanh_ref(x.astype(np.float64)), np.float16)


def test_a_strided_input_is_copied_to_rows_first():
    x = randn(3, 10)
    view = dev(x)[:, 2:9]  # every row cut: not contiguous
    assert not view.is_c_contiguous()
    check(B.softmax(view, 1), softmax_ref(x[:, 2:9], 1), np.float64)
    out, _ = B.layer_norm(view, None, None, 1, 1e-5)
    check(out, layer_norm_ref(x[:, 2:9], None, None, 1, 1e-5), np.float64)


def test_a_non_float_array_is_refused_with_the_kernel_named():
    with pytest.raises(TypeError, match=r"softmax: the CUDA kernel takes float32 or float64 arrays.*int64"):
        B.softmax(dev(np.arange(6).reshape(2, 3)), 1)


# --- layer norm ---------------------------------------------------------------------------------------

def layer_norm_ref(x, w, b, n, eps):
    axes = tuple(range(x.ndim - n, x.ndim))
    mean = x.mean(axes, keepdims=True)
    out = (x - mean) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return out * (1 if w is None else w) + (0 if b is None else b)


def layer_norm_grads_ref(g, x, w, n, eps):
    """grad_a by differentiating the formula numerically would be circular; this is the textbook form."""
    axes = tuple(range(x.ndim - n, x.ndim))
    mean = x.mean(axes, keepdims=True)
    rstd = 1 / np.sqrt(x.var(axes, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    gw = g * (1 if w is None else w)
    grad_a = rstd * (gw - gw.mean(axes, keepdims=True) - xhat * (gw * xhat).mean(axes, keepdims=True))
    lead = tuple(range(x.ndim - n))
    return grad_a, (g * xhat).sum(lead), g.sum(lead)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,n,affine", [((5, LONG), 1, True), ((3, 2, 4), 2, True), ((6, 1), 1, True),
                                            ((4, 7), 1, False)])
def test_layer_norm_forward_and_backward_match_the_formulas(shape, n, affine, dtype):
    x = randn(*shape, dtype=dtype) * 2 + 3
    w = randn(*shape[-n:], dtype=dtype) if affine else None
    b = randn(*shape[-n:], dtype=dtype) if affine else None
    g = randn(*shape, dtype=dtype)
    eps = 1e-5
    out, saved = B.layer_norm(dev(x), None if w is None else dev(w), None if b is None else dev(b), n, eps)
    x64, w64, b64, g64 = (None if v is None else v.astype(np.float64) for v in (x, w, b, g))
    check(out, layer_norm_ref(x64, w64, b64, n, eps), dtype)
    grad_a, grad_w, grad_b = B.layer_norm_backward(dev(g), dev(x), None if w is None else dev(w), saved, n,
                                                   (True, True, True))
    want_a, want_w, want_b = layer_norm_grads_ref(g64, x64, w64, n, eps)
    tol = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: TOL[np.float64]}[dtype]
    np.testing.assert_allclose(host(grad_a), want_a, **tol)
    np.testing.assert_allclose(host(grad_w), want_w, **tol)
    np.testing.assert_allclose(host(grad_b), want_b, **tol)


def test_layer_norm_of_16_bit_floats_saves_float32_statistics():
    x, w, b = randn(3, 6, dtype=np.float16), randn(6, dtype=np.float16), randn(6, dtype=np.float16)
    out, (mean, rstd) = B.layer_norm(dev(x), dev(w), dev(b), 1, 1e-5)
    x32, w32, b32 = (v.astype(np.float64) for v in (x, w, b))
    check(out, layer_norm_ref(x32, w32, b32, 1, 1e-5), np.float16)
    assert mean.dtype == np.float32 and rstd.dtype == np.float32
    grad_a, grad_w, _ = B.layer_norm_backward(dev(x), dev(x), dev(w), (mean, rstd), 1, (True, True, False))
    want_a, want_w, _ = layer_norm_grads_ref(x32, x32, w32, 1, 1e-5)
    check(grad_a, want_a, np.float16)
    check(grad_w, want_w, np.float16)


def test_layer_norm_backward_leaves_out_what_is_not_needed():
    x, g = randn(3, 4), randn(3, 4)
    _, saved = B.layer_norm(dev(x), None, None, 1, 1e-5)
    grad_a, grad_w, grad_b = B.layer_norm_backward(dev(g), dev(x), None, saved, 1, (False, False, True))
    assert grad_a is None and grad_w is None
    np.testing.assert_allclose(host(grad_b), g.sum(0), rtol=1e-12)


# --- activations ----------------------------------------------------------------------------------------

def gelu_tanh_ref(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def ndtr_ref(x):
    return 0.5 * (1 + _erf(x / np.sqrt(2)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_activations_and_their_gradients_match_the_formulas(dtype):
    x = np.concatenate([randn(300) * 3, [0.0, -8.0, 8.0, 30.0, -30.0]]).astype(dtype)
    g = randn(x.size, dtype=dtype)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    sig = 1 / (1 + np.exp(-x64))
    check(B.sigmoid(dev(x)), sig, dtype)
    check(B.ndtr(dev(x)), ndtr_ref(x64), dtype)
    check(B.silu(dev(x)), x64 * sig, dtype)
    check(B.silu_backward(dev(g), dev(x)), g64 * sig * (1 + x64 * (1 - sig)), dtype)
    out, saved = B.gelu(dev(x), "none")
    check(out, x64 * ndtr_ref(x64), dtype)
    pdf = np.exp(-x64 ** 2 / 2) / np.sqrt(2 * np.pi)
    check(B.gelu_backward(dev(g), dev(x), saved, "none"), g64 * (ndtr_ref(x64) + x64 * pdf), dtype)
    out, saved = B.gelu(dev(x), "tanh")
    check(out, gelu_tanh_ref(x64), dtype)
    h = 1e-6  # the tanh form's derivative checked against a central difference of the formula in float64
    want = g64 * (gelu_tanh_ref(x64 + h) - gelu_tanh_ref(x64 - h)) / (2 * h)
    got = host(B.gelu_backward(dev(g), dev(x), saved, "tanh")).astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ndtr_keeps_the_lower_tail():
    x = np.array([-10.0, -20.0])
    np.testing.assert_allclose(host(B.ndtr(dev(x))), [7.61985302416047e-24, 2.7536241186062337e-89], rtol=1e-12)


# --- windows --------------------------------------------------------------------------------------------

WINDOWS = [  # (shape, window, axes, steps, dilation): disjoint, overlapping, dilated, 1-d
    ((2, 3, 6, 6), (2, 2), (2, 3), (2, 2), (1, 1)),
    ((2, 3, 5, 6), (3, 2), (2, 3), (1, 1), (1, 1)),
    ((1, 2, 7, 7), (2, 3), (2, 3), (2, 1), (2, 2)),
    ((3, 10), (4,), (1,), (3,), (1,)),
]


@pytest.mark.parametrize("dtype", FLOATS + [np.float16])
@pytest.mark.parametrize("shape,window,axes,steps,dilation", WINDOWS)
def test_sliding_windows_copies_numpys_window_view(shape, window, axes, steps, dilation, dtype):
    x = randn(*shape, dtype=dtype)
    want = NumpyBackend.sliding_windows(x, window, axes, steps, dilation)
    got = B.sliding_windows(dev(x), window, axes, steps, dilation)
    assert got.is_c_contiguous()
    np.testing.assert_array_equal(host(got), want)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,window,axes,steps,dilation", WINDOWS)
def test_fold_windows_adds_back_like_numpy(shape, window, axes, steps, dilation, dtype):
    count = NumpyBackend.sliding_windows(np.zeros(shape), window, axes, steps, dilation).shape
    windows = randn(*count, dtype=dtype)
    want = NumpyBackend.fold_windows(windows.astype(np.float64), shape, axes, steps, dilation)
    check(B.fold_windows(dev(windows), shape, axes, steps, dilation), want, dtype)


def test_fold_windows_of_16_bit_floats_adds_in_float32():
    windows = randn(1, 4, 3, dtype=np.float16)
    want = NumpyBackend.fold_windows(windows.astype(np.float32), (1, 6), (1,), (1,), (1,))
    check(B.fold_windows(dev(windows), (1, 6), (1,), (1,), (1,)), want.astype(np.float64), np.float16)


# --- matmul into a strided output -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS)
def test_matmul_into_writes_through_a_strided_view_and_broadcasts_batches(dtype):
    a, b = randn(2, 3, 17, 5, dtype=dtype), randn(1, 3, 5, 19, dtype=dtype)  # 17, 19: not multiples of a tile
    a, b = a[:, :2, :9], b[:, :2, :, :7]  # the simulator's tiles are smaller: 9 and 7 are not multiples of them
    packed = dev(np.full((2, 2, 9, 2 * 7), 7, dtype))
    out = packed[:, :, :, 7:]  # the second half of each row: a strided view
    assert not out.is_c_contiguous()
    B.matmul_into(dev(a), dev(b), out)
    got = host(packed)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(got[..., 7:], want, **TOL[dtype])
    assert (got[..., :7] == 7).all()  # the other half of the packed buffer is untouched


def test_matmul_into_two_dimensional_and_16_bit():
    a, b = randn(3, 20, dtype=np.float16), randn(20, 2, dtype=np.float16)
    out = dev(np.zeros((3, 2), np.float16))
    B.matmul_into(dev(a), dev(b), out)
    check(out, a.astype(np.float64) @ b.astype(np.float64), np.float16)


def test_matmul_into_refuses_an_out_of_the_wrong_shape():
    with pytest.raises(ValueError, match=r"matmul_into: a \(2, 3\) @ b \(3, 4\) gives \(2, 4\), but out has shape \(4, 2\)"):
        B.matmul_into(dev(randn(2, 3)), dev(randn(3, 4)), dev(np.zeros((4, 2))))


# --- random numbers -----------------------------------------------------------------------------------

def draw(method, seed, *args):
    return host(getattr(B, method)(np.random.default_rng(seed), *args))


def test_uniform_numbers_have_the_shape_dtype_range_and_moments():
    for dtype, native in [(dt.float32, np.float32), (dt.float64, np.float64)]:
        u = draw("random_uniform", 1, (20, 30), -2.0, 3.0, dtype)
        assert u.shape == (20, 30) and u.dtype == native
        assert u.min() >= -2.0 and u.max() < 3.0
        assert abs(u.mean() - 0.5) < 0.15 and abs(u.var() - 25 / 12) < 0.25
    assert draw("random_uniform", 1, (3,), 0.0, 1.0, dt.float16).dtype == np.float16


def test_normal_numbers_have_the_right_moments():
    z = draw("random_normal", 2, (1500,), 1.0, 2.0, dt.float32)
    assert z.dtype == np.float32 and np.isfinite(z).all()
    assert abs(z.mean() - 1.0) < 0.15 and abs(z.std() - 2.0) < 0.15
    assert abs(((z - 1) / 2 > 1.96).mean() - 0.025) < 0.015  # 1500 draws: sd 0.004  # the tails of a normal, not of a uniform


def test_the_same_seed_gives_the_same_device_numbers():
    for method, args in [("random_uniform", ((5, 7), 0.0, 1.0, dt.float32)),
                         ("random_normal", ((300,), 0.0, 1.0, dt.float64)),
                         ("random_integers", (0, 10, (9,), dt.int64)),
                         ("random_permutation", (12, dt.int64))]:
        first, again, other = draw(method, 5, *args), draw(method, 5, *args), draw(method, 6, *args)
        np.testing.assert_array_equal(first, again)
        assert not np.array_equal(first, other)


def test_consecutive_draws_from_one_generator_differ():
    rng = np.random.default_rng(0)
    first = host(B.random_uniform(rng, (50,), 0.0, 1.0, dt.float32))
    assert not np.array_equal(first, host(B.random_uniform(rng, (50,), 0.0, 1.0, dt.float32)))


def test_integers_cover_their_range_and_take_the_dtype():
    ints = draw("random_integers", 3, -3, 4, (500,), dt.int32)
    assert ints.dtype == np.int32 and set(ints.tolist()) == set(range(-3, 4))
    big = draw("random_integers", 3, 0, 2 ** 62, (200,), dt.int64)
    assert big.min() >= 0 and big.max() > 2 ** 60  # draws from the whole 62-bit range
    with pytest.raises(ValueError, match=r"random_integers: high \(2\) must be above low \(2\)"):
        B.random_integers(np.random.default_rng(0), 2, 2, (3,), dt.int64)


def test_a_permutation_holds_every_index_once():
    perm = draw("random_permutation", 4, 50, dt.int64)
    assert sorted(perm.tolist()) == list(range(50)) and perm.tolist() != list(range(50))

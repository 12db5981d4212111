"""The numba backend, kernel by kernel, against independent numpy formulas (float64 references), on both
sides of its size threshold; gradients of the fused ops through gradlab's ops; and a small MLP whose
losses on device='numba' match device='cpu'. Skipped without numba."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

numba = pytest.importorskip("numba", reason="the numba backend needs numba (pip install 'gradlab[numba]')")

import gradlab as gl  # noqa: E402
from gradlab.backends import numba_kernels  # noqa: E402
from gradlab.backends.numba_backend import PARALLEL_MIN_SIZE, NumbaBackend  # noqa: E402

B = NumbaBackend()
RNG = np.random.default_rng(0)
SMALL, LARGE = 37, PARALLEL_MIN_SIZE + 5  # element counts below and above the threshold
_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
# float64 compiles every kernel a second time (a few seconds each, cold): those cases are marked slow
DTYPES = [np.float32, pytest.param(np.float64, marks=pytest.mark.slow)]
TOL = {np.float32: dict(rtol=3e-6, atol=1e-6), np.float64: dict(rtol=1e-12, atol=1e-14)}


def data(shape, dtype=np.float32, scale=3.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def close(got, expected, dtype, **tol):
    assert got.dtype == np.dtype(dtype), (got.dtype, dtype)
    np.testing.assert_allclose(got.astype(np.float64), expected, **{**TOL[dtype], **tol})


def ndtr(x):
    return 0.5 * _erfc(-np.asarray(x, np.float64) / math.sqrt(2.0))


def sigmoid(x):
    x = np.asarray(x, np.float64)
    return 1.0 / (1.0 + np.exp(-x))


# --- elementwise primitives --------------------------------------------------------------------------

ELEMENTWISE = {"exp": np.exp, "tanh": np.tanh, "erf": _erf, "ndtr": ndtr, "sigmoid": sigmoid}


@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
@pytest.mark.parametrize("n", [SMALL, LARGE])
def test_elementwise_float32_matches_the_float64_value(name, n):
    x = data(n)
    close(getattr(B, name)(x), ELEMENTWISE[name](x.astype(np.float64)), np.float32)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["exp", "erf", "sigmoid"])
def test_elementwise_float64(name):
    x = data(LARGE, np.float64)
    close(getattr(B, name)(x), ELEMENTWISE[name](x), np.float64)


def test_exp32_special_values_and_the_subnormal_range():
    x = np.float32([np.nan, np.inf, -np.inf, 88.7, 88.8, -87.3, -90, -100, -103.9, -104.5, 0, -0.0, 1e-30])
    x = np.concatenate([x, np.linspace(-103, 88, LARGE, dtype=np.float32)])
    got = B.exp(x)
    with np.errstate(over="ignore"):
        exact = np.exp(x.astype(np.float64))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(x))
    big = exact > np.finfo(np.float32).max
    np.testing.assert_array_equal(np.isinf(got), big)  # overflow exactly where float32 overflows
    rest = ~np.isnan(x) & ~big
    # within 1 ulp of the exact value (float32's ulp at that value, subnormals included)
    ulp = np.spacing(exact[rest].astype(np.float32)).astype(np.float64)
    assert got[2] == 0 and (np.abs(got[rest] - exact[rest]) / ulp).max() <= 1.0


def test_tanh32_is_odd_and_exact_at_the_ends():
    x = np.concatenate([np.float32([0.0, -0.0, 1e-20, 0.6249, 0.6251, 20, -20, np.inf, -np.inf, np.nan]), data(LARGE)])
    got = B.tanh(x)
    np.testing.assert_allclose(got[:-LARGE - 1], np.tanh(x[:-LARGE - 1].astype(np.float64)), rtol=3e-7)
    assert np.isnan(got[9]) and np.signbit(got[1]) and got[6] == -1 and got[7] == 1
    np.testing.assert_array_equal(B.tanh(-x[10:]), -got[10:])


def test_elementwise_layouts_and_dtypes():
    x = data((3 * PARALLEL_MIN_SIZE // 64, 128))[:, ::2]  # non-contiguous, above the threshold
    close(B.exp(x), np.exp(x.astype(np.float64)), np.float32)
    assert B.exp(np.float32(0.5)).shape == () and B.exp(np.zeros((2, 0), np.float32)).shape == (2, 0)
    half = data(LARGE, np.float16, 1.0)
    got = B.erf(half)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got, _erf(half.astype(np.float64)), rtol=1e-3, atol=1e-3)


# --- softmax, log_softmax, logsumexp and their backward --------------------------------------------

def softmax64(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


SHAPES = [(5, 7), (2, 3, PARALLEL_MIN_SIZE // 3), (1,)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_softmax_log_softmax_logsumexp(dtype, shape):
    x = data(shape, dtype, 5.0)
    x64 = x.astype(np.float64)
    close(B.softmax(x, -1), softmax64(x64, -1), dtype)
    lse = np.log(np.exp(x64 - x64.max(-1, keepdims=True)).sum(-1)) + x64.max(-1)
    close(B.log_softmax(x, x.ndim - 1), x64 - lse[..., None], dtype)
    close(B.logsumexp(x, (x.ndim - 1,), False), lse, dtype)
    close(B.logsumexp(x, -1, True), lse[..., None], dtype)


def test_softmax_other_axes_noncontiguous_halves_and_edges():
    x = data((40, 300), scale=4.0)
    close(B.softmax(x, 0), softmax64(x.astype(np.float64), 0), np.float32)  # numpy's route
    t = x.T  # non-contiguous, softmax along its last axis
    close(B.softmax(t, 1), softmax64(t.astype(np.float64), 1), np.float32)
    half = B.log_softmax(x.astype(np.float16), 1)
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, np.log(softmax64(x.astype(np.float16).astype(np.float64), 1)), atol=2e-2)
    edge = np.float32([[-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf], [np.inf, 0, 0]])
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(np.isnan(B.softmax(edge, 1)), np.isnan(softmax64(edge.astype(np.float64), 1)))
    np.testing.assert_allclose(B.logsumexp(edge, -1, False), [np.log(1 + np.e), -np.inf, np.inf], rtol=1e-7)


@pytest.mark.parametrize("rows", [33, PARALLEL_MIN_SIZE // 257 + 1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_and_log_softmax_backward(dtype, rows):
    x, g = data((rows, 257), dtype), data((rows, 257), dtype)
    y = softmax64(x.astype(np.float64), 1)
    g64 = g.astype(np.float64)
    y_in = y.astype(dtype)
    close(B.softmax_backward(y_in, g, 1), y_in * (g64 - (g64 * y_in).sum(1, keepdims=True)), dtype)
    ly = np.log(y).astype(dtype)
    close(B.log_softmax_backward(ly, g, 1), g64 - np.exp(ly.astype(np.float64)) * g64.sum(1, keepdims=True), dtype)
    # along axis 0 (numpy's composition) and through a transposed gradient
    # (g − Σ g·y cancels terms of size ~3 summed over `rows` float32 values: a few ulps of 3, not of the result)
    close(B.softmax_backward(y_in, g, 0), y_in * (g64 - (g64 * y_in).sum(0, keepdims=True)), dtype,
          atol=1e-5 if dtype == np.float32 else 1e-13)
    gt = np.ascontiguousarray(g.T).T
    close(B.log_softmax_backward(ly, gt, 1), g64 - np.exp(ly.astype(np.float64)) * g64.sum(1, keepdims=True), dtype)


# --- GELU and SiLU -------------------------------------------------------------------------------

K, C = math.sqrt(2 / math.pi), 0.044715


def gelu64(x, approximate):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(K * (x + C * x ** 3)))
    return x * ndtr(x)


def gelu_slope64(x, approximate):
    if approximate == "tanh":
        t = np.tanh(K * (x + C * x ** 3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * K * (1 + 3 * C * x * x)
    return ndtr(x) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


@pytest.mark.parametrize("shape", [(70, 131), (PARALLEL_MIN_SIZE // 131 + 1, 131)])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_forward_and_backward(approximate, dtype, shape):
    x, g = data(shape, dtype), data(shape, dtype)
    out, saved = B.gelu(x, approximate)
    x64 = x.astype(np.float64)
    close(out, gelu64(x64, approximate), dtype, atol=2e-6 if dtype == np.float32 else 1e-14)
    close(B.gelu_backward(g, x, saved, approximate), g * gelu_slope64(x64, approximate), dtype,
          atol=1e-5 if dtype == np.float32 else 1e-13)


@pytest.mark.parametrize("n", [1001, PARALLEL_MIN_SIZE // 3 + 1])
@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_forward_and_backward(dtype, n):
    x, g = data((3, n), dtype), data((3, n), dtype)
    x64, s = x.astype(np.float64), sigmoid(x)
    close(B.silu(x), x64 * s, dtype)
    close(B.silu_backward(g, x), g * s * (1 + x64 * (1 - s)), dtype, atol=1e-5 if dtype == np.float32 else 1e-14)


def test_fused_elementwise_on_edges_and_halves():
    for shape in [(), (0,), (2, 0)]:
        x = np.zeros(shape, np.float32)
        assert B.gelu(x, "none")[0].shape == shape and B.silu(x).shape == shape
        assert B.gelu_backward(x, x, B.gelu(x, "none")[1], "none").shape == shape
    half = data(50, np.float16, 1.0)
    out, saved = B.gelu(half, "none")
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, gelu64(half.astype(np.float64), "none"), rtol=2e-3, atol=1e-3)
    strided = data((20, 30))[:, ::3]
    close(B.silu(strided), strided * sigmoid(strided), np.float32)


# --- layer norm --------------------------------------------------------------------------------------

def layer_norm64(x, w, b, n, eps):
    axes = tuple(range(x.ndim - n, x.ndim))
    x_hat = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    return x_hat, x_hat * (1 if w is None else w) + (0 if b is None else b)


def layer_norm_grads64(g, x, w, n, eps):
    axes = tuple(range(x.ndim - n, x.ndim))
    lead = tuple(range(x.ndim - n))
    x_hat, _ = layer_norm64(x, None, None, n, eps)
    inv = 1 / np.sqrt(x.var(axes, keepdims=True) + eps)
    gh = g * (1 if w is None else w)
    dx = (gh - gh.mean(axes, keepdims=True) - x_hat * (gh * x_hat).mean(axes, keepdims=True)) * inv
    return dx, (g * x_hat).sum(lead), g.sum(lead)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, n", [((50, 96), 1), ((3, 7, 4, 8), 2), ((5,), 1), ((PARALLEL_MIN_SIZE // 96 + 1, 96), 1)])
def test_layer_norm_forward_and_backward(dtype, shape, n):
    x, g = data(shape, dtype) + 2, data(shape, dtype)
    w, b = data(shape[len(shape) - n:], dtype), data(shape[len(shape) - n:], dtype)
    x64, g64, w64 = (a.astype(np.float64) for a in (x, g, w))
    out, saved = B.layer_norm(x, w, b, n, 1e-5)
    close(out, layer_norm64(x64, w64, b.astype(np.float64), n, 1e-5)[1], dtype, atol=1e-5 if dtype == np.float32 else 1e-12)
    grads = B.layer_norm_backward(g, x, w, saved, n, (True, True, True))
    for got, expected in zip(grads, layer_norm_grads64(g64, x64, w64, n, 1e-5)):
        assert got.shape == expected.shape
        close(got, expected, dtype, rtol=2e-5 if dtype == np.float32 else 1e-10, atol=2e-5 if dtype == np.float32 else 1e-12)


def test_layer_norm_without_parameters_and_partial_needs():
    x, g = data((64, 33)), data((64, 33))
    out, saved = B.layer_norm(x, None, None, 1, 1e-5)
    x_hat, _ = layer_norm64(x.astype(np.float64), None, None, 1, 1e-5)
    close(out, x_hat, np.float32, atol=1e-5)
    dx, gw, gb = B.layer_norm_backward(g, x, None, saved, 1, (True, False, False))
    assert gw is None and gb is None
    close(dx, layer_norm_grads64(g.astype(np.float64), x.astype(np.float64), None, 1, 1e-5)[0], np.float32, atol=2e-5)
    w = np.ones(33, np.float32)
    dx, gw, gb = B.layer_norm_backward(g, x, w, saved, 1, (False, True, False))
    assert dx is None and gb is None and gw.shape == (33,)
    half, _ = B.layer_norm(x.astype(np.float16), None, None, 1, 1e-5)
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, x_hat, atol=2e-2)


# --- through gradlab's ops: values and gradients on device='numba' against device='cpu' --------------

def on(device, array, requires_grad=True):
    return gl.tensor(array, device=device, requires_grad=requires_grad)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "gelu", "gelu_tanh", "sigmoid", "silu", "logsumexp",
                                "layer_norm", "cross_entropy"])
def test_ops_agree_with_the_numpy_backend_forward_and_backward(op):
    x = data((64, 257), scale=2.0)
    target = RNG.integers(0, 257, 64)
    weight, bias = data(257), data(257)
    results, cotangents = {}, {}
    for device in ("cpu", "numba"):
        t = on(device, x)
        F = gl.nn.functional
        if op == "gelu_tanh":
            y = F.gelu(t, approximate="tanh")
        elif op == "logsumexp":
            y = t.logsumexp(1)
        elif op == "layer_norm":
            y = F.layer_norm(t, (257,), on(device, weight), on(device, bias))
        elif op == "cross_entropy":
            y = F.cross_entropy(t, gl.tensor(target, device=device))
        elif op in ("softmax", "log_softmax"):
            y = getattr(t, op)(1)
        else:
            y = getattr(F, op)(t)
        assert y.device.type == device
        cotangent = cotangents.setdefault(y.shape, data(y.shape))  # the same one on both devices
        (y * on(device, cotangent, False)).sum().backward()
        results[device] = (y.detach().numpy(), t.grad.numpy())
    # float32 noise: e.g. gelu's tanh form cancels in 1 + tanh(u) where x << 0, log_softmax's backward in
    # g − exp(y)·Σg, so the last bit of either backend's exp or tanh shows there at the 1e-6 level
    for got, expected in zip(results["numba"], results["cpu"]):
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-5)


def test_a_small_mlp_trains_to_the_same_losses_as_on_numpy():
    x, y = data((256, 20), scale=1.0), RNG.integers(0, 5, 256)
    losses = {}
    for device in ("cpu", "numba"):
        gl.manual_seed(0)
        model = gl.nn.Sequential(gl.nn.Linear(20, 64), gl.nn.GELU(), gl.nn.LayerNorm(64), gl.nn.Linear(64, 5))
        if device == "numba":
            for p in model.parameters():
                p.data = gl.tensor(p.detach().numpy(), device="numba")
        optimizer = gl.optim.SGD(model.parameters(), lr=0.1)
        xs, ys = gl.tensor(x, device=device), gl.tensor(y, device=device)
        losses[device] = []
        for _ in range(5):
            optimizer.zero_grad()
            loss = gl.nn.functional.cross_entropy(model(xs), ys)
            loss.backward()
            optimizer.step()
            losses[device].append(loss.item())
        assert all(p.device.type == device for p in model.parameters())
    assert losses["numba"][-1] < losses["numba"][0]
    np.testing.assert_allclose(losses["numba"], losses["cpu"], rtol=1e-5)


# --- processes ---------------------------------------------------------------------------------------

def test_the_first_call_compile_time_is_measurable_on_its_own():
    times = B.warm_up()
    assert {"softmax float32", "layer_norm float32", "gelu float32", "softmax float32 (serial)"} <= set(times)
    assert all(seconds >= 0 for seconds in times.values())


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX-only")
def test_a_forked_child_runs_the_kernels_serially():
    """GNU OpenMP aborts a child forked after its threads started; the child gets serial twins instead."""
    x = data((8, 4096))
    expected = B.softmax(x, 1)  # the parallel kernel has run: the thread pool exists
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, report, leave without running pytest's exit handlers
        try:
            ok = np.allclose(B.softmax(x, 1), expected) and numba_kernels.softmax_rows.py_func.__name__.endswith("_serial")
            os.write(write, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1" and status == 0

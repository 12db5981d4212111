"""Autocast: inside ``gradlab.autocast`` matrix products run in the lower dtype, losses in float32, as in torch."""

import threading
import warnings

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn.functional as F
from gradlab.ops.autocast import autocast_op
from helpers import randn, requires_torch, torch

LOWER = [(gl.bfloat16, "bfloat16"), (gl.float16, "float16")]
BF16_EPS = 2.0**-7  # one bfloat16 rounding step, relative


def f32(array, requires_grad=False):
    return gl.tensor(np.asarray(array, dtype=np.float32), requires_grad=requires_grad)


def tf32(array, requires_grad=False):
    return torch.tensor(np.asarray(array, dtype=np.float32), requires_grad=requires_grad)


def values(t):
    return t.detach().float().numpy()


def dtype_name(t):
    return str(t.dtype).split(".")[-1]


# --- which ops change dtype, against torch -----------------------------------------------------------

def _ops(lib, functional, to_tensor):
    x, w, b = to_tensor(randn(4, 8, seed=1)), to_tensor(randn(3, 8, seed=2)), to_tensor(randn(3, seed=3))
    image, kernel = to_tensor(randn(2, 3, 6, 6, seed=4)), to_tensor(randn(4, 3, 3, 3, seed=5))
    q = to_tensor(randn(2, 5, 4, seed=6))
    target = lib.tensor([0, 1, 2, 0])
    return {
        "linear": lambda: functional.linear(x, w, b),
        "matmul": lambda: lib.matmul(x, w.t()),
        "@": lambda: x @ w.t(),
        "mm": lambda: lib.mm(x, w.t()),
        "bmm": lambda: lib.bmm(q, q.transpose(1, 2)),
        "conv2d": lambda: functional.conv2d(image, kernel, padding=1),
        "sdpa": lambda: functional.scaled_dot_product_attention(q, q, q),
        "relu": lambda: functional.relu(x),
        "prelu": lambda: functional.prelu(x, lib.tensor([0.25])),
        "relu(linear)": lambda: functional.relu(functional.linear(x, w, b)),
        "mse_loss(linear)": lambda: functional.mse_loss(functional.linear(x, w, b), lib.zeros(4, 3)),
        "cross_entropy(linear)": lambda: functional.cross_entropy(functional.linear(x, w, b), target),
        "l1_loss(half)": lambda: functional.l1_loss(x.half(), x.half()),
        "prod(half)": lambda: x.half().prod(),
        "add(linear, x32)": lambda: functional.linear(x, w, b) + b,
        "float64 matmul": lambda: lib.matmul(x.double(), w.double().t()),
        "int matmul": lambda: lib.matmul(target.view(2, 2), target.view(2, 2)),
    }


@requires_torch
@pytest.mark.parametrize("dtype, name", LOWER)
def test_output_dtypes_match_torch(dtype, name):
    ours, theirs = _ops(gl, F, f32), _ops(torch, torch.nn.functional, tf32)
    with gl.autocast("cpu", dtype=dtype):
        got = {op: dtype_name(fn()) for op, fn in ours.items()}
    with torch.autocast("cpu", dtype=getattr(torch, name)):
        expected = {op: dtype_name(fn()) for op, fn in theirs.items()}
    assert got == expected
    assert got["linear"] == name and got["cross_entropy(linear)"] == "float32" and got["float64 matmul"] == "float64"


@requires_torch
@pytest.mark.parametrize("dtype, name", LOWER)
def test_values_equal_torch_within_lower_precision_rounding(dtype, name):
    ours, theirs = _ops(gl, F, f32), _ops(torch, torch.nn.functional, tf32)
    eps = BF16_EPS if dtype is gl.bfloat16 else 2.0**-10
    for op in ("linear", "matmul", "conv2d", "sdpa", "mse_loss(linear)", "cross_entropy(linear)"):
        with gl.autocast("cpu", dtype=dtype):
            got = values(ours[op]())
        with torch.autocast("cpu", dtype=getattr(torch, name)):
            expected = values(theirs[op]())
        scale = np.abs(expected).max()
        np.testing.assert_allclose(got, expected, rtol=4 * eps, atol=4 * eps * scale, err_msg=op)


@requires_torch
def test_float32_master_weights_get_float32_gradients_like_torch():
    x, w, b = randn(6, 8, seed=1), randn(3, 8, seed=2), randn(3, seed=3)
    target = [0, 1, 2, 0, 1, 2]
    gw, gb = f32(w, True), f32(b, True)
    tw, tb = tf32(w, True), tf32(b, True)
    with gl.autocast("cpu"):
        loss = F.cross_entropy(F.linear(f32(x), gw, gb), gl.tensor(target))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tloss = torch.nn.functional.cross_entropy(torch.nn.functional.linear(tf32(x), tw, tb), torch.tensor(target))
    loss.backward()
    tloss.backward()
    assert gw.grad.dtype is gl.float32 and gb.grad.dtype is gl.float32 and tw.grad.dtype is torch.float32
    np.testing.assert_allclose(gw.grad.numpy(), tw.grad.numpy(), atol=4 * BF16_EPS * np.abs(tw.grad.numpy()).max())
    np.testing.assert_allclose(gb.grad.numpy(), tb.grad.numpy(), atol=4 * BF16_EPS * np.abs(tb.grad.numpy()).max())


def test_a_module_runs_in_bfloat16_and_its_parameters_stay_float32():
    model = gl.nn.Sequential(gl.nn.Conv2d(3, 4, 3), gl.nn.ReLU(), gl.nn.Flatten(), gl.nn.Linear(16, 2))
    with gl.autocast("cpu"):
        out = model(f32(randn(2, 3, 4, 4)))
        loss = F.cross_entropy(out, gl.tensor([0, 1]))
    assert out.dtype is gl.bfloat16 and loss.dtype is gl.float32
    loss.backward()
    assert all(p.dtype is gl.float32 and p.grad.dtype is gl.float32 for p in model.parameters())


def test_a_weight_used_twice_is_cast_once_and_the_cache_is_dropped_on_exit():
    w = f32(randn(3, 3), requires_grad=True)
    with gl.autocast("cpu"):
        a, b = gl.matmul(w, w), gl.matmul(w, w)
        assert a.grad_fn.next_functions[0][0] is b.grad_fn.next_functions[0][0]  # the same cast node
        assert gl.ops.autocast.state.cache
    assert not gl.ops.autocast.state.cache
    with gl.autocast("cpu", cache_enabled=False):
        a, b = gl.matmul(w, w), gl.matmul(w, w)
        assert a.grad_fn.next_functions[0][0] is not b.grad_fn.next_functions[0][0]


# --- enabling, nesting, decorating, threads ------------------------------------------------------------

def test_enabled_false_runs_in_float32():
    with gl.autocast("cpu", enabled=False):
        assert not gl.is_autocast_enabled("cpu")
        assert gl.matmul(f32(randn(2, 2)), f32(randn(2, 2))).dtype is gl.float32


def test_nesting_restores_the_outer_state():
    x = f32(randn(2, 2))
    assert gl.autocast_increment_nesting() == 1 and gl.autocast_decrement_nesting() == 0
    with gl.autocast("cpu"):
        with gl.autocast("cpu", dtype=gl.float16):
            assert gl.get_autocast_dtype("cpu") is gl.float16 and (x @ x).dtype is gl.float16
            with gl.autocast("cpu", enabled=False):
                assert (x @ x).dtype is gl.float32
            assert gl.is_autocast_enabled("cpu")
        assert gl.get_autocast_dtype("cpu") is gl.bfloat16 and (x @ x).dtype is gl.bfloat16
    assert not gl.is_autocast_enabled("cpu") and (x @ x).dtype is gl.float32


def test_an_error_inside_the_block_still_restores_the_state():
    with pytest.raises(ZeroDivisionError):
        with gl.autocast("cpu"):
            1 / 0
    assert not gl.is_autocast_enabled("cpu") and not gl.ops.autocast.state.active


def test_decorator_form():
    @gl.autocast("cpu")
    def forward(x):
        assert gl.is_autocast_enabled("cpu")
        return x @ x

    assert forward(f32(randn(2, 2))).dtype is gl.bfloat16
    assert not gl.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match=r"autocast\(\)\(func\) requires a callable, but got int"):
        gl.autocast("cpu")(3)


def test_state_is_per_thread_and_a_new_thread_starts_with_autocast_off():
    x = f32(randn(4, 4))
    seen, inside, release = {}, threading.Event(), threading.Event()

    def other_thread():
        seen["enabled"] = gl.is_autocast_enabled("cpu")
        seen["dtype"] = (x @ x).dtype
        inside.set()
        release.wait(5)

    def autocast_thread():
        with gl.autocast("cpu", dtype=gl.float16):
            gl.set_autocast_dtype("cpu", gl.float16)
            seen["autocast thread"] = (x @ x).dtype
            inside.wait(5)
            release.set()

    threads = [threading.Thread(target=autocast_thread), threading.Thread(target=other_thread)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"enabled": False, "dtype": gl.float32, "autocast thread": gl.float16}
    assert gl.get_autocast_dtype("cpu") is gl.bfloat16


@requires_torch
def test_state_functions_match_torch_defaults_and_round_trip():
    assert gl.get_autocast_dtype("cpu") is gl.bfloat16 and torch.get_autocast_dtype("cpu") is torch.bfloat16
    assert gl.get_autocast_dtype("cuda") is gl.float16 and torch.get_autocast_dtype("cuda") is torch.float16
    assert gl.is_autocast_enabled() is torch.is_autocast_enabled() is False
    assert gl.is_autocast_cache_enabled() is torch.is_autocast_cache_enabled() is True
    assert gl.is_autocast_available("cpu") and not gl.is_autocast_available("tpu")
    try:
        gl.set_autocast_cpu_enabled(True)
        gl.set_autocast_cpu_dtype(gl.float16)
        assert gl.is_autocast_cpu_enabled() and gl.get_autocast_cpu_dtype() is gl.float16
        assert (f32(randn(2, 2)) @ f32(randn(2, 2))).dtype is gl.float16
        gl.set_autocast_cache_enabled(False)
        assert not gl.is_autocast_cache_enabled()
        gl.set_autocast_enabled(True)  # the one-argument form means 'cuda'
        assert gl.is_autocast_enabled() and gl.is_autocast_enabled("cuda")
        gl.set_autocast_dtype("cuda", gl.bfloat16)
        assert gl.get_autocast_dtype("cuda") is gl.bfloat16
    finally:
        gl.set_autocast_enabled("cpu", False)
        gl.set_autocast_enabled(False)
        gl.set_autocast_cpu_dtype(gl.bfloat16)
        gl.set_autocast_dtype("cuda", gl.float16)
        gl.set_autocast_cache_enabled(True)
    assert not gl.ops.autocast.state.active and gl.ops.autocast._anywhere.threads == 0


# --- warnings and errors ---------------------------------------------------------------------------------

def test_cuda_autocast_without_a_gpu_warns_and_disables(monkeypatch):
    monkeypatch.setattr(gl.cuda, "is_available", lambda: False)  # (the simulator, or a GPU, would say True)
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling autocast."):
        ctx = gl.autocast("cuda")
    with ctx:
        assert not gl.is_autocast_enabled("cuda")
    with pytest.warns(FutureWarning, match=r"gradlab.cuda.amp.autocast\(args...\)` is deprecated"):
        with pytest.warns(UserWarning, match="CUDA is not available"):
            gl.cuda.amp.autocast()


def test_unsupported_dtype_warns_and_disables():
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported. Disabling autocast"):
        with gl.autocast("cpu", dtype=gl.float32):
            assert not gl.is_autocast_enabled("cpu")


def test_bad_device_types_are_errors():
    with pytest.raises(RuntimeError, match="User specified an unsupported autocast device_type 'tpu'"):
        gl.autocast("tpu")
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        gl.autocast(gl.device("cpu"))
    with pytest.raises(RuntimeError, match="get_autocast_dtype: unsupported autocast device_type 'tpu'"):
        gl.get_autocast_dtype("tpu")


def test_old_cpu_spelling_warns_and_works():
    with pytest.warns(FutureWarning, match=r"Please use `gradlab.amp.autocast\('cpu', args...\)` instead"):
        ctx = gl.cpu.amp.autocast()
    with ctx:
        assert (f32(randn(2, 2)) @ f32(randn(2, 2))).dtype is gl.bfloat16
    assert gl.amp.autocast is gl.autocast


def test_autocast_op_refuses_what_it_cannot_forward():
    with pytest.raises(ValueError, match="policy must be 'lower' or 'fp32', got 'half'"):
        autocast_op("half")
    with pytest.raises(TypeError, match="has positional-only parameters"):
        autocast_op("lower")(lambda x, /: x)


def test_marked_ops_keep_their_signature_and_keywords():
    import inspect

    assert str(inspect.signature(gl.prod)) == "(input, dim=None, keepdim=False, *, dtype=None)"
    assert gl.matmul.autocast_policy == "lower" and F.mse_loss.autocast_policy == "fp32"
    x = f32([[1.0, 2.0], [3.0, 4.0]])
    with gl.autocast("cpu"):
        assert gl.prod(x.half(), dim=1, keepdim=True).dtype is gl.float32
        assert gl.matmul(input=x, other=x).dtype is gl.bfloat16


# --- custom Functions ---------------------------------------------------------------------------------------

class _Square(gl.autograd.Function):
    """x² with custom_fwd(cast_inputs=float32): inside autocast forward sees float32 and runs with autocast off."""

    derivative = "∂L/∂x = 2x g"

    @staticmethod
    @gl.amp.custom_fwd(device_type="cpu", cast_inputs=gl.float32)
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.seen = (x.dtype, gl.is_autocast_enabled("cpu"))
        return x * x

    @staticmethod
    @gl.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        ctx.seen_in_backward = gl.is_autocast_enabled("cpu")
        return 2 * x * grad


def test_custom_fwd_casts_inputs_and_custom_bwd_restores_the_forward_state():
    x = gl.tensor([1.0, 2.0], dtype=gl.bfloat16, requires_grad=True)
    with gl.autocast("cpu"):
        y = _Square.apply(x)
    assert y.grad_fn.seen == (gl.float32, False) and y.dtype is gl.float32
    y.sum().backward()
    assert y.grad_fn.seen_in_backward is False
    assert x.grad.dtype is gl.bfloat16 and values(x.grad).tolist() == [2.0, 4.0]
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        gl.amp.custom_fwd(device_type=None)


# --- gradients in mixed precision --------------------------------------------------------------------------

@requires_torch
def test_a_mixed_dtype_sum_gives_each_input_a_grad_of_its_own_dtype_like_torch():
    a, b = gl.ones(3, dtype=gl.bfloat16, requires_grad=True), gl.ones(3, requires_grad=True)
    ta, tb = torch.ones(3, dtype=torch.bfloat16, requires_grad=True), torch.ones(3, requires_grad=True)
    ((a + b) * 3.0).sum().backward()
    ((ta + tb) * 3.0).sum().backward()
    assert (dtype_name(a.grad), dtype_name(b.grad)) == (dtype_name(ta.grad), dtype_name(tb.grad)) == \
        ("bfloat16", "float32")
    assert values(a.grad).tolist() == [3.0] * 3


@requires_torch
def test_a_transformer_layer_trains_under_autocast_like_torch():
    gl.manual_seed(0)
    layer = gl.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
    theirs = torch.nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True)
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in layer.state_dict().items()})
    x = randn(2, 5, 16).astype(np.float32)
    with gl.autocast("cpu"):
        loss = layer(f32(x)).square().mean()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tloss = theirs(tf32(x)).square().mean()
    loss.backward()
    tloss.backward()
    assert loss.dtype is gl.float32 and tloss.dtype is torch.float32
    np.testing.assert_allclose(values(loss), values(tloss), rtol=8 * BF16_EPS)
    ours, expected = dict(layer.named_parameters()), dict(theirs.named_parameters())
    for name, p in ours.items():
        assert p.grad.dtype is gl.float32, name
        g, tg = p.grad.numpy(), expected[name].grad.numpy()
        np.testing.assert_allclose(g, tg, atol=0.05 * np.abs(tg).max() + 1e-6, err_msg=name)


def _more_ops(lib, F, to_tensor):
    a = to_tensor(randn(3, 3, seed=7))
    spd = to_tensor(randn(3, 3, seed=8) @ randn(3, 3, seed=8).T + 3 * np.eye(3))
    v, b3 = to_tensor(randn(3, seed=9)), to_tensor(randn(2, 3, 3, seed=10))
    vol = to_tensor(randn(1, 2, 4, 4, 4, seed=11))
    half = lambda t: t.to(lib.bfloat16)  # noqa: E731  (fp32 ops get lower-precision inputs)
    target = to_tensor(np.sign(randn(3, 3, seed=12)))
    return {
        "addmm": lambda: lib.addmm(a, a, a), "baddbmm": lambda: lib.baddbmm(b3, b3, b3),
        "addbmm": lambda: lib.addbmm(a, b3, b3), "vecdot": lambda: lib.linalg.vecdot(a, a),
        "conv3d": lambda: F.conv3d(vol, to_tensor(randn(2, 2, 3, 3, 3, seed=13))),
        "cdist": lambda: lib.cdist(half(a), half(a)), "trace": lambda: lib.trace(half(a)),
        "inverse": lambda: lib.inverse(half(spd)), "cholesky": lambda: lib.cholesky(half(spd)),
        "linalg.inv": lambda: lib.linalg.inv(half(spd)), "linalg.solve": lambda: lib.linalg.solve(half(spd), half(a)),
        "linalg.cholesky": lambda: lib.linalg.cholesky(half(spd)),
        "linalg.eigvalsh": lambda: lib.linalg.eigvalsh(half(spd)),
        "quantile": lambda: lib.quantile(half(v), 0.5),
        "max_pool3d": lambda: F.max_pool3d(half(vol), 2), "avg_pool3d": lambda: F.avg_pool3d(half(vol), 2),
        "hinge_embedding_loss": lambda: F.hinge_embedding_loss(half(a), target),
        "soft_margin_loss": lambda: F.soft_margin_loss(half(a), target),
        "triplet_margin_loss": lambda: F.triplet_margin_loss(half(a), half(a) + 1, half(a) - 1),
        "poisson_nll_loss": lambda: F.poisson_nll_loss(half(a), target.abs()),
    }


@requires_torch
def test_the_rest_of_torchs_cpu_lists_cast_as_torch_does():
    ours, theirs = _more_ops(gl, F, f32), _more_ops(torch, torch.nn.functional, tf32)
    with gl.autocast("cpu"):
        got = {op: dtype_name(fn()) for op, fn in ours.items()}
    with torch.autocast("cpu", dtype=torch.bfloat16):
        expected = {op: dtype_name(fn()) for op, fn in theirs.items()}
    assert got == expected

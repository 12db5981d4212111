"""BatchNorm1d/2d/3d, LayerNorm, GroupNorm, RMSNorm and F.batch_norm/layer_norm/group_norm/normalize."""

import numpy as np
import pytest
from helpers import assert_close, noncontiguous_leaf, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def copy_state(gl_module, torch_module):
    """Load torch's parameters and buffers into the gradlab module (same values, float64 kept)."""
    state = {k: gl.tensor(v.detach().numpy()) for k, v in torch_module.state_dict().items()}
    gl_module.load_state_dict(state)


def randomize_affine(torch_module, seed=0):
    """Give torch's weight and bias non-trivial values, so the affine part is really tested."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in torch_module.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))


def run_both(gl_module, torch_module, x, seed=1):
    """Forward and backward (with a random upstream gradient) through both; returns the two inputs."""
    up = randn(*x.shape, seed=seed)
    gx, tx = gl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    go, to = gl_module(gx), torch_module(tx)
    assert_close(go, to, rtol=1e-10, atol=1e-10)
    (go * gl.tensor(up)).sum().backward()
    (to * torch.tensor(up)).sum().backward()
    assert_close(gx.grad, tx.grad, rtol=1e-8, atol=1e-10)
    for (name, gp), tp in zip(gl_module.named_parameters(), torch_module.parameters()):
        assert_close(gp.grad, tp.grad, rtol=1e-8, atol=1e-10)
    return gx, tx


def assert_same_buffers(gl_module, torch_module):
    for (name, gb), (tname, tb) in zip(gl_module.named_buffers(), torch_module.named_buffers()):
        assert name == tname
        assert_close(gb, tb, rtol=1e-12, atol=1e-14)


# --- batch norm vs PyTorch ------------------------------------------------------------------------

BATCHNORM_CASES = [
    ("BatchNorm1d", (8, 3)),
    ("BatchNorm1d", (4, 3, 5)),
    ("BatchNorm2d", (4, 3, 5, 6)),
    ("BatchNorm3d", (2, 3, 2, 3, 4)),
]


@requires_torch
@pytest.mark.parametrize("name, shape", BATCHNORM_CASES)
@pytest.mark.parametrize("affine", [True, False])
def test_batchnorm_train_forward_grads_and_running_stats_match_torch(name, shape, affine):
    tm = getattr(torch.nn, name)(3, affine=affine).double()
    gm = getattr(nn, name)(3, affine=affine).double()
    randomize_affine(tm)
    copy_state(gm, tm)
    run_both(gm, tm, randn(*shape, seed=2) * 3 + 1)
    assert_same_buffers(gm, tm)
    assert int(gm.num_batches_tracked) == 1


@requires_torch
@pytest.mark.parametrize("momentum", [0.1, None, 0.5])
def test_batchnorm_running_stat_trajectory_matches_torch(momentum):
    tm = torch.nn.BatchNorm2d(4, momentum=momentum).double()
    gm = nn.BatchNorm2d(4, momentum=momentum).double()
    for step in range(5):
        x = randn(6, 4, 3, 3, seed=10 + step) * (step + 1) + step
        with torch.no_grad():
            tm(torch.tensor(x))
        with gl.no_grad():
            gm(gl.tensor(x))
        assert_same_buffers(gm, tm)
    assert int(gm.num_batches_tracked) == 5
    assert gm.num_batches_tracked.dtype == gl.int64


@requires_torch
def test_batchnorm_eval_uses_running_stats_like_torch():
    tm = torch.nn.BatchNorm1d(3).double()
    gm = nn.BatchNorm1d(3).double()
    randomize_affine(tm)
    copy_state(gm, tm)
    for step in range(3):
        x = randn(10, 3, seed=step) * 2 + 3
        tm(torch.tensor(x))
        gm(gl.tensor(x))
    tm.eval()
    gm.eval()
    x = randn(7, 3, seed=20)
    run_both(gm, tm, x)
    assert_same_buffers(gm, tm)  # eval changes nothing
    assert int(gm.num_batches_tracked) == 3


def test_batchnorm_eval_batch_of_one_is_allowed_and_train_batch_of_one_is_not():
    gm = nn.BatchNorm1d(3)
    gm.eval()
    assert gm(gl.randn(1, 3)).shape == (1, 3)
    gm.train()
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, "
                                         r"got input size \[1, 3\]"):
        gm(gl.randn(1, 3))


@requires_torch
def test_batchnorm_without_running_stats_uses_batch_stats_in_eval():
    tm = torch.nn.BatchNorm2d(3, track_running_stats=False).double()
    gm = nn.BatchNorm2d(3, track_running_stats=False).double()
    assert gm.running_mean is None and gm.running_var is None and gm.num_batches_tracked is None
    assert list(gm.state_dict()) == list(tm.state_dict())
    tm.eval()
    gm.eval()
    run_both(gm, tm, randn(2, 3, 4, 4, seed=3))


@requires_torch
def test_batchnorm_bias_false_matches_torch():
    tm = torch.nn.BatchNorm1d(3, bias=False).double()
    gm = nn.BatchNorm1d(3, bias=False).double()
    assert gm.bias is None
    randomize_affine(tm)
    copy_state(gm, tm)
    run_both(gm, tm, randn(5, 3, 2, seed=4))


def test_batchnorm_float32_keeps_dtype_and_state_dict_layout():
    gm = nn.BatchNorm2d(2)
    out = gm(gl.randn(3, 2, 4, 4))
    assert out.dtype == gl.float32 and gm.running_mean.dtype == gl.float32
    assert list(gm.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]


def test_batchnorm_default_initialisation_and_reset():
    gm = nn.BatchNorm1d(4)
    assert_close(gm.weight.detach(), np.ones(4))
    assert_close(gm.bias.detach(), np.zeros(4))
    gm(gl.randn(8, 4) + 5)
    assert gm.running_mean.numpy().min() > 0
    gm.reset_running_stats()
    assert_close(gm.running_mean, np.zeros(4))
    assert_close(gm.running_var, np.ones(4))
    assert int(gm.num_batches_tracked) == 0


def test_batchnorm_output_is_normalised_per_channel():
    x = randn(50, 3, 4, seed=5) * np.array([1.0, 10.0, 0.1])[:, None] + 7
    out = nn.BatchNorm1d(3).double()(gl.tensor(x)).detach().numpy()
    var = x.var(axis=(0, 2))
    np.testing.assert_allclose(out.mean(axis=(0, 2)), 0, atol=1e-10)
    np.testing.assert_allclose(out.var(axis=(0, 2)), var / (var + 1e-5), rtol=1e-10)


def test_batchnorm_gradcheck_and_gradgradcheck_train_mode():
    x = gl.tensor(randn(3, 2, 2, seed=6), requires_grad=True)
    w = gl.tensor(randn(2, seed=7), requires_grad=True)
    b = gl.tensor(randn(2, seed=8), requires_grad=True)

    def fn(x, w, b):
        return F.batch_norm(x, None, None, w, b, training=True)

    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_batchnorm_gradcheck_eval_mode_and_noncontiguous_input():
    x = noncontiguous_leaf(randn(4, 3, seed=9))
    w = gl.tensor(randn(3, seed=10), requires_grad=True)
    b = gl.tensor(randn(3, seed=11), requires_grad=True)
    mean, var = gl.tensor(randn(3, seed=12)), gl.tensor(np.abs(randn(3, seed=13)) + 0.5)
    assert gradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b, training=False), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.batch_norm(x, mean, var, w, b, training=False), (x, w, b))
    assert gradcheck(lambda x: F.batch_norm(x, None, None, training=True), (x,))


@requires_torch
def test_functional_batch_norm_matches_torch_and_updates_buffers():
    x = randn(5, 3, 4, seed=14)
    w, b = randn(3, seed=15), randn(3, seed=16)
    rm, rv = randn(3, seed=17), np.abs(randn(3, seed=18)) + 1
    g_rm, g_rv, t_rm, t_rv = gl.tensor(rm), gl.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    for training in (True, False):
        go = F.batch_norm(gl.tensor(x), g_rm, g_rv, gl.tensor(w), gl.tensor(b), training, 0.3, 1e-3)
        to = torch.nn.functional.batch_norm(torch.tensor(x), t_rm, t_rv, torch.tensor(w), torch.tensor(b),
                                            training, 0.3, 1e-3)
        assert_close(go, to, rtol=1e-10, atol=1e-12)
        assert_close(g_rm, t_rm, rtol=1e-12)
        assert_close(g_rv, t_rv, rtol=1e-12)


# --- batch norm errors and repr -----------------------------------------------------------------


def test_batchnorm2d_given_3d_input_names_layer_and_shape():
    with pytest.raises(ValueError, match=r"BatchNorm2d\(16\): expected a 4-D input \(N, C, H, W\), "
                                         r"got 3-D input of shape \(16, 8, 8\)"):
        nn.BatchNorm2d(16)(gl.randn(16, 8, 8))
    with pytest.raises(ValueError, match=r"BatchNorm1d\(4\): expected a 2-D input \(N, C\) or 3-D input"):
        nn.BatchNorm1d(4)(gl.randn(2, 4, 3, 3))


def test_batchnorm_wrong_channel_count_names_layer_and_shape():
    with pytest.raises(RuntimeError, match=r"BatchNorm2d\(16\): expected input with 16 channels in dimension 1, "
                                           r"got input of shape \(2, 8, 4, 4\)"):
        nn.BatchNorm2d(16)(gl.randn(2, 8, 4, 4))
    with pytest.raises(RuntimeError, match=r"batch_norm: weight should contain 3 elements"):
        F.batch_norm(gl.randn(2, 3), None, None, gl.ones(4), training=True)


def test_functional_batch_norm_eval_needs_running_stats():
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined in evaluation mode"):
        F.batch_norm(gl.randn(4, 3), None, None, training=False)


@requires_torch
@pytest.mark.parametrize("kwargs", [{}, {"momentum": None, "affine": False}, {"eps": 1e-3, "bias": False},
                                    {"track_running_stats": False}])
def test_batchnorm_repr_matches_torch(kwargs):
    for name in ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"):
        assert repr(getattr(nn, name)(16, **kwargs)) == repr(getattr(torch.nn, name)(16, **kwargs))


# --- layer norm -------------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("normalized_shape, shape", [(5, (2, 3, 5)), ((3, 4), (2, 3, 4)), ([6], (6,)),
                                                     ((2, 3), (2, 3))])
@pytest.mark.parametrize("kwargs", [{}, {"elementwise_affine": False}, {"bias": False}, {"eps": 1e-2}])
def test_layernorm_forward_and_grads_match_torch(normalized_shape, shape, kwargs):
    tm = torch.nn.LayerNorm(normalized_shape, **kwargs).double()
    gm = nn.LayerNorm(normalized_shape, **kwargs).double()
    randomize_affine(tm)
    copy_state(gm, tm)
    run_both(gm, tm, randn(*shape, seed=21) * 4 - 2)


def test_layernorm_gradcheck_and_gradgradcheck():
    x = gl.tensor(randn(2, 3, 4, seed=22), requires_grad=True)
    w = gl.tensor(randn(4, seed=23), requires_grad=True)
    b = gl.tensor(randn(4, seed=24), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (4,), w, b), (x, w, b))
    assert gradgradcheck(lambda x, w, b: F.layer_norm(x, (4,), w, b), (x, w, b))
    x2 = noncontiguous_leaf(randn(3, 4, seed=25))
    assert gradcheck(lambda x: F.layer_norm(x, (3, 4)), (x2,))
    assert gradgradcheck(lambda x: F.layer_norm(x, (3, 4)), (x2,))


def test_layernorm_output_statistics_and_default_init():
    gm = nn.LayerNorm(64)
    assert_close(gm.weight.detach(), np.ones(64))
    assert_close(gm.bias.detach(), np.zeros(64))
    out = gm(gl.tensor(randn(10, 64, seed=26) * 5 + 3, dtype=gl.float32)).detach().numpy()
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.mean(-1), 0, atol=1e-5)
    np.testing.assert_allclose(out.std(-1), 1, rtol=1e-3)


def test_layernorm_mismatched_last_dims_raise_clear_error():
    with pytest.raises(RuntimeError, match=r"LayerNorm\(\(128,\)\): Given normalized_shape=\[128\], expected input "
                                           r"with shape \[\*, 128\], but got input of size \[2, 64\]"):
        nn.LayerNorm(128)(gl.randn(2, 64))
    with pytest.raises(RuntimeError, match=r"layer_norm: Given normalized_shape=\[3, 4\]"):
        F.layer_norm(gl.randn(4), (3, 4))
    with pytest.raises(RuntimeError, match=r"Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(gl.randn(2, 4), (4,), gl.ones(3))


@requires_torch
@pytest.mark.parametrize("args, kwargs", [((128,), {}), (((3, 4),), {"eps": 1e-6}), ((8,), {"bias": False}),
                                          ((8,), {"elementwise_affine": False})])
def test_layernorm_repr_matches_torch(args, kwargs):
    assert repr(nn.LayerNorm(*args, **kwargs)) == repr(torch.nn.LayerNorm(*args, **kwargs))
    assert repr(nn.LayerNorm(128)) == "LayerNorm((128,), eps=1e-05, elementwise_affine=True, bias=True)"


# --- group norm, rms norm, normalize ------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("groups, shape", [(2, (3, 4, 5)), (1, (2, 6, 2, 2)), (3, (2, 3)), (2, (2, 4, 2, 2, 2))])
@pytest.mark.parametrize("affine", [True, False])
def test_groupnorm_matches_torch(groups, shape, affine):
    tm = torch.nn.GroupNorm(groups, shape[1], affine=affine).double()
    gm = nn.GroupNorm(groups, shape[1], affine=affine).double()
    randomize_affine(tm)
    copy_state(gm, tm)
    run_both(gm, tm, randn(*shape, seed=30) * 2 + 1)
    assert repr(gm) == repr(tm)


def test_groupnorm_gradcheck_and_errors():
    x = gl.tensor(randn(2, 4, 3, seed=31), requires_grad=True)
    w = gl.tensor(randn(4, seed=32), requires_grad=True)
    b = gl.tensor(randn(4, seed=33), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.group_norm(x, 2, w, b), (x, w, b))
    assert gradgradcheck(lambda x: F.group_norm(x, 2), (x,))
    with pytest.raises(ValueError, match=r"num_channels \(6\) must be divisible by num_groups \(4\)"):
        nn.GroupNorm(4, 6)
    with pytest.raises(RuntimeError, match=r"Expected number of channels in input to be divisible by num_groups, but "
                                           r"got input of shape \[3, 6, 2\] and num_groups=4"):
        F.group_norm(gl.randn(3, 6, 2), 4)
    with pytest.raises(RuntimeError, match=r"GroupNorm\(2, 4\): Expected weight to be a vector of size equal to the "
                                           r"number of channels in input.*input of shape \[2, 6, 3\]"):
        nn.GroupNorm(2, 4)(gl.randn(2, 6, 3))


@requires_torch
@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rmsnorm_matches_torch(eps):
    tm = torch.nn.RMSNorm((3, 4), eps=eps).double()
    gm = nn.RMSNorm((3, 4), eps=eps).double()
    randomize_affine(tm)
    copy_state(gm, tm)
    run_both(gm, tm, randn(2, 3, 4, seed=40))
    assert repr(gm) == repr(tm)


@requires_torch
@pytest.mark.parametrize("p, dim", [(2.0, 1), (1.0, -1), (3.0, 0)])
def test_normalize_matches_torch(p, dim):
    x = randn(3, 4, seed=41)
    x[1] = 0.0  # a zero row: eps keeps it finite
    gx, tx = gl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    go, to = F.normalize(gx, p, dim), torch.nn.functional.normalize(tx, p, dim)
    assert_close(go, to, rtol=1e-10)
    up = randn(3, 4, seed=42)
    (go * gl.tensor(up)).sum().backward()
    (to * torch.tensor(up)).sum().backward()
    assert_close(gx.grad, tx.grad, rtol=1e-8, atol=1e-12)


def test_normalize_gradcheck():
    x = gl.tensor(randn(3, 4, seed=43), requires_grad=True)
    assert gradcheck(lambda x: F.normalize(x, dim=-1), (x,))


def test_layernorm_float16_computes_its_statistics_in_float32():
    """Sums of float16 overflow at 65504: the statistics and the backward run in float32, the results are float16."""
    x = (randn(4, 3000, seed=60) * 0.3 + 100).astype(np.float16)  # row sums near 300000
    w = (randn(3000, seed=61) * 0.1 + 1).astype(np.float16)
    up = randn(4, 3000, seed=62).astype(np.float16)
    results = []
    for dtype in (gl.float16, gl.float64):
        gx, gw = gl.tensor(x, dtype=dtype, requires_grad=True), gl.tensor(w, dtype=dtype, requires_grad=True)
        out = F.layer_norm(gx, (3000,), gw)
        out.backward(gl.tensor(up, dtype=dtype))
        assert out.dtype is dtype and gx.grad.dtype is dtype and gw.grad.dtype is dtype
        results.append([t.detach().numpy().astype(np.float64) for t in (out, gx.grad, gw.grad)])
    for half, exact in zip(*results):
        assert np.isfinite(half).all()
        np.testing.assert_allclose(half, exact, atol=5e-3 * np.abs(exact).max())

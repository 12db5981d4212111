"""Ops compiled from their recorded backend calls give eager's numbers, bit for bit (numpy and numba).

Each case runs ``gl.compile.make_step`` (or ``gl.compile(fn)``) and eager on a twin: once the first call has traced,
the program's loss, every ``.grad``, buffer and (with an optimizer) parameter are eager's — no rule for any op.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import gradlab as gl
from helpers import assert_same_bits, device_marks

nn, F = gl.nn, gl.nn.functional


DEVICES = [pytest.param("cpu", id="numpy"), pytest.param("numba", id="numba", marks=device_marks("numba"))]


def _rng(seed=0):
    return np.random.default_rng(seed)


def _t(shape, rng=None, device="cpu"):
    return gl.tensor((rng or _rng()).standard_normal(shape), dtype=gl.float64, device=device)


def _assert_runs_its_program(step):
    """One signature, traced once, run as a program compiled from its record (not eagerly)."""
    assert step.fallback is None, step.fallback
    assert step.traces == 1 and len(step.cache) == 1, (step.traces, len(step.cache))
    (compiled,) = step.cache.values()
    assert compiled.program.instrs


def _assert_same_state(model, twin, what):
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        assert (q.grad is None) == (p.grad is None), f"{what}: {name}.grad"
        if p.grad is not None:
            assert_same_bits(q.grad.numpy(), p.grad.numpy(), f"{what}: {name}.grad")
        assert_same_bits(q.detach().numpy(), p.detach().numpy(), f"{what}: {name}")
    for (name, a), b in zip(model.named_buffers(), twin.buffers()):
        assert_same_bits(b.numpy(), a.numpy(), f"{what}: buffer {name}")


def _compare(model, x, y, loss_fn, calls=3, device="cpu", dtype=gl.float64):
    """Eager and compiled losses, gradients and buffers, bit for bit on every call; the step."""
    y = x if y is None else y  # (a target the loss ignores)
    model = model.to(dtype).to(device)
    x, y = x.to(device), y.to(device)
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, loss_fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gl.compile.CompileWarning)  # no fallback to eager, silent or not
        for call in range(calls):
            model.zero_grad()
            twin.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            got = step(x, y)
            assert_same_bits(got.numpy(), loss.detach().numpy(), f"call {call}: the loss")
            _assert_same_state(model, twin, f"call {call}")
    _assert_runs_its_program(step)
    return step


def _sum_of_squares(out, y):
    return (out * out).sum()


class Apply(nn.Module):
    """A module around a function of the input and two parameters (elementwise arithmetic)."""

    def __init__(self, fn, a_shape, b_shape):
        super().__init__()
        rng = _rng()
        self.fn = fn
        self.a = nn.Parameter(gl.tensor(rng.standard_normal(a_shape) + 3.0, dtype=gl.float64))
        self.b = nn.Parameter(gl.tensor(rng.standard_normal(b_shape) + 3.0, dtype=gl.float64))

    def forward(self, x):
        return self.fn(x, self.a, self.b)


# --- elementwise arithmetic ----------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", [
    lambda x, a, b: (x + a) - b * x,
    lambda x, a, b: x / a + b / (x * x + b),
    lambda x, a, b: (x * a + x * a) - (b - a),
], ids=["add-sub-mul", "div", "repeated"])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((5,), (1, 5)), ((4, 1), ())], ids=["same", "row", "column"])
def test_arithmetic_with_broadcasting_matches_eager(fn, shapes, device):
    _compare(Apply(fn, *shapes), _t((4, 5)) + 2.0, None, _sum_of_squares, device=device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fn", [lambda x, a, b: (x * a + 2.0) * 3 - 0.5, lambda x, a, b: (x / 3.0 - a) / 0.7,
                                lambda x, a, b: (x - 1) * 0.1 + a], ids=["mul-add", "div", "sub-mul"])
def test_arithmetic_with_a_python_number_matches_eager(fn, device):
    _compare(Apply(fn, (3,), (3,)), _t((2, 3)), None, _sum_of_squares, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_a_bool_operand_matches_eager(device):
    _compare(Apply(lambda x, a, b: x * a + True, (3,), (3,)), _t((2, 3)), None, _sum_of_squares, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_a_chain_of_adds_matches_eager(device):
    """Twenty adds of one parameter (where numba is installed, run as fused kernels on the numpy backend)."""
    class Chain(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(gl.ones(16, dtype=gl.float64))

        def forward(self, x):
            y = x
            for _ in range(20):
                y = y + self.w
            return y
    _compare(Chain(), _t((16,)), None, _sum_of_squares, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_float32_chains_round_each_step_as_eager_does(device):
    """Fused or not, float32 arithmetic with Python numbers gives eager's float32 numbers bit for bit."""
    model = Apply(lambda x, a, b: ((x * 0.1 + a) * 3.7 - b / 0.3) * x, (3,), (3,))
    x = gl.tensor(_rng().standard_normal((4, 3)), dtype=gl.float32)
    _compare(model, x, None, _sum_of_squares, device=device, dtype=gl.float32)


# --- activations, linear layers, losses ------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_activations_between_linear_layers_match_eager(device):
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8), nn.GELU("tanh"),
                          nn.Linear(8, 3))
    _compare(model, _t((5, 6)), gl.tensor([0, 1, 2, 1, 0]), F.cross_entropy, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_relu_gradient_is_zero_at_zero_and_where_negative(device):
    x = gl.tensor([[-1.0, 0.0, 2.0]], dtype=gl.float64)
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    with gl.no_grad():
        model[0].weight.copy_(gl.eye(3))
        model[0].bias.zero_()
    _compare(model, x, None, _sum_of_squares, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_linear_with_leading_dims_and_without_bias_matches_eager(device):
    model = nn.Sequential(nn.Linear(4, 6, bias=False), nn.Tanh(), nn.Linear(6, 3))
    _compare(model, _t((2, 3, 4)), None, _sum_of_squares, device=device)


class Gates(nn.Module):
    """sigmoid and tanh of a Linear's output, multiplied (an LSTM cell's shape of work), and QuickGELU."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 6)

    def forward(self, x):
        h = self.fc(x)
        gate = h.sigmoid() * h.tanh()
        return gate.tanh() + h * (1.702 * h).sigmoid()


def _extremes(dtype):
    x = _rng().standard_normal((5, 4)) * 30
    x[0, :4] = [800.0, -800.0, 0.0, -0.0]
    return gl.tensor(x, dtype=dtype)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [gl.float64, gl.float32], ids=["float64", "float32"])
def test_sigmoid_and_tanh_give_eagers_numbers_at_the_extremes(dtype, device):
    _compare(Gates(), _extremes(dtype), None, _sum_of_squares, device=device, dtype=dtype)


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_matches_eager(device):
    """log_softmax then nll_loss: two backwards, each run as its recorded calls."""
    _compare(nn.Linear(4, 3), _t((5, 4)), gl.tensor([0, 1, 2, 1, 0]), F.cross_entropy, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_skips_ignore_index_and_checks_the_range_on_every_run(device):
    step = _compare(nn.Linear(4, 3), _t((5, 4)), gl.tensor([0, -100, 2, 1, -100]), F.cross_entropy, device=device)
    with pytest.raises(IndexError, match="out of bounds"):  # the op's check, replayed by the program's run
        step(_t((5, 4), device=device), gl.tensor([0, 1, 3, 1, 0], device=device))
    assert step.fallback is None


@pytest.mark.parametrize("device", DEVICES)
def test_log_softmax_read_twice_matches_eager(device):
    """The log-probabilities have a second reader: their gradient is a sum of two."""
    def twice(out, y):
        logp = out.log_softmax(1)
        return F.nll_loss(logp, y) + (logp * logp).mean()
    _compare(nn.Linear(4, 3), _t((5, 4)), gl.tensor([0, 1, 2, 1, 0]), twice, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_cross_entropy_with_class_weights_and_label_smoothing_matches_eager(device):
    def smoothed(out, y):
        return F.cross_entropy(out, y, label_smoothing=0.1) + F.cross_entropy(out, y, weight=gl.tensor(
            [1.0, 2.0, 0.5], dtype=gl.float64, device=out.device), reduction="sum")
    _compare(nn.Linear(4, 3), _t((5, 4)), gl.tensor([0, 1, 2, 1, 0]), smoothed, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_split_into_a_piece_without_a_gradient_matches_eager(device):
    """The middle piece of a split reaches no loss: its part of the gradient is zeros."""
    def loss_fn(out, y):
        first, _, last = out.split((2, 4, 1), -1)
        return (first.tanh() * last).sum() + (first * first).sum()
    _compare(nn.Linear(3, 7), _t((4, 3), _rng(2)), None, loss_fn, device=device)


# --- convolution, pooling, normalization ----------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kwargs", [dict(padding=1), dict(padding=(2, 0), stride=2), dict(stride=(1, 2), dilation=2),
                                    dict(padding=1, bias=False)], ids=["padded", "strided", "dilated", "no-bias"])
def test_conv2d_matches_eager(kwargs, device):
    x = _t((3, 2, 9, 8))
    conv = nn.Conv2d(2, 4, 3, **kwargs).double()
    with gl.no_grad():
        size = conv(x)[0].numel()
    model = nn.Sequential(conv, nn.ReLU(), nn.Conv2d(4, 3, 1), nn.Flatten(), nn.Linear(3 * size // 4, 3))
    _compare(model, x, gl.tensor([0, 2, 1]), F.cross_entropy, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_conv1d_and_conv3d_match_eager(device):
    _compare(nn.Sequential(nn.Conv1d(2, 3, 3, padding=2, stride=2), nn.Flatten(), nn.Linear(21, 2)),
             _t((2, 2, 11)), gl.tensor([0, 1]), F.cross_entropy, device=device)
    _compare(nn.Sequential(nn.Conv3d(2, 2, 2, padding=1), nn.Flatten()), _t((2, 2, 3, 3, 2)), None,
             _sum_of_squares, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_grouped_conv_matches_eager(device):
    _compare(nn.Sequential(nn.Conv2d(2, 4, 3, groups=2), nn.Flatten()), _t((2, 2, 5, 5)), None, _sum_of_squares,
             device=device)


def _pool_model(kernel):
    model = nn.Sequential(nn.Conv2d(3, 3, 1), nn.MaxPool2d(kernel), nn.Flatten())
    with gl.no_grad():  # an identity conv: the pool sees x itself
        model[0].weight.zero_()
        model[0].weight[:, :, 0, 0] = gl.eye(3)
        model[0].bias.zero_()
    return model


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("kernel", [2, (3, 2), 1], ids=["2", "3x2", "1"])
def test_max_pool_matches_eager_with_ties_and_nan(kernel, device):
    x = _t((2, 3, 6, 6))
    x.array[0, 0, :2, :2] = 1.5  # a window of ties: the first tap wins
    x.array[0, 1, 2:4, 2] = -0.5
    x.array[1, 2, 0, 0:2] = 4.0
    _compare(_pool_model(kernel), x, None, _sum_of_squares, device=device)
    x.array[1, 1, 1, 1] = np.nan  # NaN wins its window (eager's scan decides; the step traced with it sees it again)
    with np.errstate(invalid="ignore"):
        _compare(_pool_model(kernel), x, None, _sum_of_squares, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_max_pool_whose_windows_overlap_matches_eager(device):
    _compare(nn.Sequential(nn.Conv2d(1, 1, 1), nn.MaxPool2d(3, stride=2)), _t((2, 1, 7, 7)), None, _sum_of_squares,
             device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_layer_norm_and_batch_norm_match_eager(device):
    """LayerNorm over one and two dims, with and without its affine; BatchNorm's running statistics too."""
    model = nn.Sequential(nn.LayerNorm(6), nn.Linear(6, 6), nn.LayerNorm(6, elementwise_affine=False),
                          nn.Linear(6, 6), nn.LayerNorm((2, 6)))
    _compare(model, _t((3, 2, 6)), None, _sum_of_squares, device=device)
    _compare(nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6)), _t((4, 6)), None, _sum_of_squares, device=device)


# --- whole models ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_a_transformer_block_matches_eager(device):
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.t = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=True,
                                                batch_first=True)

        def forward(self, x):
            return self.t(x)
    _compare(Block(), _t((2, 3, 8)), None, _sum_of_squares, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_lstm_steps_match_eager(device):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.fc = nn.LSTM(3, 4, batch_first=True), nn.Linear(4, 2)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])
    _compare(Net(), _t((2, 2, 3), _rng(1)), gl.tensor([0, 1]), F.cross_entropy, device=device)


@pytest.mark.parametrize("device", DEVICES)
def test_an_optimizer_trajectory_matches_eager(device):
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 25, 3)).double()
    model = model.to(device)
    twin = copy.deepcopy(model)
    opt, twin_opt = gl.optim.AdamW(model.parameters(), lr=0.01), gl.optim.AdamW(twin.parameters(), lr=0.01)
    step = gl.compile.make_step(twin, F.cross_entropy, optimizer=twin_opt)
    x, y = _t((4, 1, 5, 5), device=device), gl.tensor([0, 1, 2, 1], device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gl.compile.CompileWarning)
        for call in range(5):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            assert_same_bits(step(x, y).numpy(), loss.detach().numpy(), f"call {call}: the loss")
            _assert_same_state(model, twin, f"call {call}")
    _assert_runs_its_program(step)


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_accumulate_across_calls_without_aliasing_a_kept_buffer(device):
    """Without zero_grad, .grad accumulates: a gradient handed over from a buffer the program reuses
    must not be overwritten by the next run."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.image = nn.Parameter(_t((2, 1, 6, 6)))  # a leaf fed to the conv: its gradient comes from the conv's
            self.conv = nn.Conv2d(1, 2, 3, padding=1)
            self.fc = nn.Linear(2 * 9, 3)

        def forward(self, x):
            h = F.max_pool2d(F.relu(self.conv(self.image)) * x, 2)
            return self.fc(h.flatten(1))
    model = Net().double().to(device)
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, F.cross_entropy)
    rng = _rng()
    y = gl.tensor([0, 2], device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("error", gl.compile.CompileWarning)
        for call in range(3):  # fresh inputs, no zero_grad
            x = _t((2, 1, 6, 6), rng, device=device)
            F.cross_entropy(model(x), y).backward()
            step(x, y)
            _assert_same_state(model, twin, f"call {call}")
    _assert_runs_its_program(step)


# --- forward only: gl.compile(fn), recorded too ------------------------------------------------------------


def _forward_compare(fn, x):
    """gl.compile(fn)(x) on its second and third calls (run as the program) against fn(x), bit for bit."""
    fast = gl.compile(fn)
    with warnings.catch_warnings(), np.errstate(all="ignore"), gl.no_grad():
        warnings.simplefilter("error", gl.compile.CompileWarning)
        want = fn(x).numpy()
        for _ in range(3):
            got = fast(x).numpy()
            assert_same_bits(got, want, "the forward")
    assert fast.fallback is None and fast.traces == 1 and len(fast.cache) == 1
    return got


@pytest.mark.parametrize("device", DEVICES)
def test_float32_gelu_forward_is_eager_bit_for_bit(device):
    """The compiled float32 GELU (numba's loop on the numpy backend, where installed) gives eager's numbers
    exactly, NaN and ±inf and the edges of its polynomial included."""
    values = _rng().standard_normal(4096).astype(np.float32) * np.float32(1.7)
    values[:6] = [np.nan, np.inf, -np.inf, 1.5, -1.5000001, -0.0]
    _forward_compare(nn.GELU(), gl.tensor(values.reshape(64, 64), dtype=gl.float32, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_sigmoid_saturates_as_eager_does(device):
    x = gl.tensor([[-1000.0, -40.0, 0.0, 40.0, 1000.0, float("inf"), -float("inf")]], dtype=gl.float64, device=device)
    got = _forward_compare(lambda t: t.sigmoid() * t.tanh().tanh(), x)
    assert got[0, 0] == 0.0 and got[0, 3] == (1.0 / (1.0 + np.exp(-40.0))) * np.tanh(np.tanh(40.0))

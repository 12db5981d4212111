"""Compile rules (gradlab/compile/rules_*.py) against eager: the loss and every gradient in float64.

Each case runs ``loss_fn(model(x), y).backward()`` eagerly and a compiled step on a deep copy; the
step's second call runs the planned program (the first one traces, eagerly). The program must use
the rule (no instruction of the op run as it is) — or, for a case a rule declines, the generic one.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import gradlab as gl
from gradlab.compile import rules
from gradlab.compile.generic import GenericForward
from gradlab.nn.functional.conv import ConvNd
from gradlab.nn.functional.linear import Linear
from gradlab.nn.functional.loss import NllLoss
from gradlab.nn.functional.normalization import Normalize
from gradlab.nn.functional.pooling import MaxPoolNd
from gradlab.ops.activations import Gelu, LogSoftmax, Relu
from gradlab.ops.arithmetic import Add, Div, Mul, Sub

nn, F = gl.nn, gl.nn.functional
TOL = 1e-10


@pytest.fixture(autouse=True)
def _tape_rules(monkeypatch):
    """These tests check the tape's rules, which segments and ``gl.compile(fn)`` still plan with (and a step
    whose record cannot account for an array); make_step compiles from its recorded calls instead
    (tests/test_compile_record.py)."""
    monkeypatch.setattr(gl.compile.step, "RECORDED_BACKENDS", ())


def _rng():
    return np.random.default_rng(0)


def _t(shape, rng=None):
    return gl.tensor((rng or _rng()).standard_normal(shape), dtype=gl.float64)


def _generic_ops(step):
    """The Function classes the program runs as they are (the generic path's forward instructions)."""
    (compiled,) = step.cache.values()
    return {ins.fn.function for ins in compiled.program.instrs if isinstance(ins.fn, GenericForward)}


def _compare(model, x, y, loss_fn, calls=2):
    """Eager and compiled losses and gradients, equal to TOL on every call after the trace; the step."""
    y = x if y is None else y  # (a target the loss ignores)
    model = model.double()
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, loss_fn)
    for _ in range(calls):
        model.zero_grad()
        twin.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        got = step(x, y)
        assert abs(loss.item() - got.item()) <= TOL
        for (name, p), q in zip(model.named_parameters(), twin.parameters()):
            assert (q.grad is None) == (p.grad is None), name
            if p.grad is not None:
                np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=0, atol=TOL, err_msg=name)
    assert step.traces == 1 and step.fallback is None
    return step


def _has_numba():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _sum_of_squares(out, y):
    return (out * out).sum()


class Apply(nn.Module):
    """A module around a function of the input and two parameters (for the elementwise rules)."""

    def __init__(self, fn, a_shape, b_shape):
        super().__init__()
        rng = _rng()
        self.fn = fn
        self.a = nn.Parameter(gl.tensor(rng.standard_normal(a_shape) + 3.0, dtype=gl.float64))
        self.b = nn.Parameter(gl.tensor(rng.standard_normal(b_shape) + 3.0, dtype=gl.float64))

    def forward(self, x):
        return self.fn(x, self.a, self.b)


@pytest.mark.parametrize("fn, functions", [
    (lambda x, a, b: (x + a) - b * x, {Add, Sub, Mul}),
    (lambda x, a, b: x / a + b / (x * x + b), {Div, Add, Mul}),
    (lambda x, a, b: (x * a + x * a) - (b - a), {Mul, Add, Sub}),
])
@pytest.mark.parametrize("shapes", [((4, 5), (4, 5)), ((5,), (1, 5)), ((4, 1), ())])
def test_arithmetic_rules_match_eager_with_broadcasting(fn, functions, shapes):
    step = _compare(Apply(fn, *shapes), _t((4, 5)) + 2.0, None, _sum_of_squares)
    assert not (_generic_ops(step) & functions)


def test_activation_rules_match_eager():
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 8), nn.GELU(), nn.Linear(8, 8), nn.GELU("tanh"),
                          nn.Linear(8, 3))
    step = _compare(model, _t((5, 6)), gl.tensor([0, 1, 2, 1, 0]), F.cross_entropy)
    assert not (_generic_ops(step) & {Relu, Gelu, Linear, LogSoftmax, NllLoss})


def test_relu_gradient_is_zero_at_zero_and_where_negative():
    x = gl.tensor([[-1.0, 0.0, 2.0]], dtype=gl.float64)
    model = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
    with gl.no_grad():
        model[0].weight.copy_(gl.eye(3))
        model[0].bias.zero_()
    step = _compare(model, x, None, _sum_of_squares)
    assert Relu not in _generic_ops(step)


def test_linear_rule_folds_leading_dims_and_works_without_bias():
    model = nn.Sequential(nn.Linear(4, 6, bias=False), nn.Tanh(), nn.Linear(6, 3))
    step = _compare(model, _t((2, 3, 4)), None, _sum_of_squares)
    assert Linear not in _generic_ops(step)


def test_cross_entropy_rule_ignores_ignore_index_and_checks_the_range():
    model = nn.Linear(4, 3)
    y = gl.tensor([0, -100, 2, 1, -100])
    step = _compare(model, _t((5, 4)), y, F.cross_entropy)
    assert not _generic_ops(step) & {LogSoftmax, NllLoss}
    with pytest.raises(IndexError, match="out of bounds"):
        step(_t((5, 4)), gl.tensor([0, 1, 3, 1, 0]))


def _instruction_names(step):
    (compiled,) = step.cache.values()
    return [ins.name for ins in compiled.program.instrs]


def test_cross_entropys_two_backwards_run_as_one_fused_instruction():
    """Eager records NllLoss after LogSoftmax, as PyTorch; the program runs their backwards as one
    (softmax − onehot) · g / N, and nll_loss's own one-hot gradient, read by nobody, is dropped."""
    step = _compare(nn.Linear(4, 3), _t((5, 4)), gl.tensor([0, 1, 2, 1, 0]), F.cross_entropy)
    names = _instruction_names(step)
    assert "LogSoftmax.backward of NllLoss.backward (softmax − onehot) · g / N" in names
    assert "NllLoss.backward (−onehot · g / N)" not in names and "LogSoftmax.backward" not in names


def test_log_softmax_read_twice_is_not_fused():
    """Where the log-probabilities have a second reader, their gradient is a sum: the two backwards stay apart."""
    def twice(out, y):
        logp = out.log_softmax(1)
        return F.nll_loss(logp, y) + (logp * logp).mean()
    step = _compare(nn.Linear(4, 3), _t((5, 4)), gl.tensor([0, 1, 2, 1, 0]), twice)
    names = _instruction_names(step)
    assert "LogSoftmax.backward" in names and "NllLoss.backward (−onehot · g / N)" in names
    assert not any("of NllLoss.backward" in name for name in names)


def test_cross_entropy_rule_declines_class_weights_and_keeps_label_smoothing():
    def smoothed(out, y):
        return F.cross_entropy(out, y, label_smoothing=0.1) + F.cross_entropy(out, y, weight=gl.tensor(
            [1.0, 2.0, 0.5], dtype=gl.float64), reduction="sum")
    step = _compare(nn.Linear(4, 3), _t((5, 4)), gl.tensor([0, 1, 2, 1, 0]), smoothed)
    assert NllLoss in _generic_ops(step) and LogSoftmax not in _generic_ops(step)


@pytest.mark.parametrize("kwargs", [dict(padding=1), dict(padding=(2, 0), stride=2), dict(stride=(1, 2), dilation=2),
                                    dict(padding=1, bias=False)])
def test_conv2d_rule_matches_eager(kwargs):
    x = _t((3, 2, 9, 8))
    conv = nn.Conv2d(2, 4, 3, **kwargs).double()
    with gl.no_grad():
        size = conv(x)[0].numel()
    model = nn.Sequential(conv, nn.ReLU(), nn.Conv2d(4, 3, 1), nn.Flatten(), nn.Linear(3 * size // 4, 3))
    step = _compare(model, x, gl.tensor([0, 2, 1]), F.cross_entropy)
    assert ConvNd not in _generic_ops(step)


def test_conv1d_and_conv3d_rules_match_eager():
    x = _t((2, 2, 11))
    step = _compare(nn.Sequential(nn.Conv1d(2, 3, 3, padding=2, stride=2), nn.Flatten(), nn.Linear(21, 2)),
                    x, gl.tensor([0, 1]), F.cross_entropy)
    assert ConvNd not in _generic_ops(step)
    step = _compare(nn.Sequential(nn.Conv3d(2, 2, 2, padding=1), nn.Flatten()), _t((2, 2, 3, 3, 2)), None,
                    _sum_of_squares)
    assert ConvNd not in _generic_ops(step)


@pytest.mark.parametrize("kernel", [2, (3, 2), 1])
def test_max_pool_rule_matches_eager_with_ties_and_nan(kernel):
    x = _t((2, 3, 6, 6))
    x.array[0, 0, :2, :2] = 1.5  # a window of ties: the first tap wins
    x.array[0, 1, 2:4, 2] = -0.5
    x.array[1, 2, 0, 0:2] = 4.0
    model = nn.Sequential(nn.Conv2d(3, 3, 1), nn.MaxPool2d(kernel), nn.Flatten())
    with gl.no_grad():
        model[0].weight.zero_()
        model[0].weight[:, :, 0, 0] = gl.eye(3)
        model[0].bias.zero_()
    step = _compare(model, x, None, _sum_of_squares)
    assert MaxPoolNd not in _generic_ops(step)
    x.array[1, 1, 1, 1] = np.nan  # NaN wins its window (eager's scan decides, inside the rule)
    model = model.double()
    eager = copy.deepcopy(model)
    eager.zero_grad()
    _sum_of_squares(eager(x), x).backward()
    twin = copy.deepcopy(model)
    s = gl.compile.make_step(twin, _sum_of_squares)
    s(x, x)
    twin.zero_grad()
    s(x, x)
    for p, q in zip(eager.parameters(), twin.parameters()):
        np.testing.assert_array_equal(q.grad.numpy(), p.grad.numpy())


def test_max_pool_rule_declines_what_does_not_tile():
    step = _compare(nn.Sequential(nn.Conv2d(1, 1, 1), nn.MaxPool2d(3, stride=2)), _t((2, 1, 7, 7)), None,
                    _sum_of_squares)
    assert MaxPoolNd in _generic_ops(step)


def test_conv_rule_declines_groups():
    step = _compare(nn.Sequential(nn.Conv2d(2, 4, 3, groups=2), nn.Flatten()), _t((2, 2, 5, 5)), None,
                    _sum_of_squares)
    assert ConvNd in _generic_ops(step)


def test_layer_norm_rule_matches_eager_and_batch_norm_runs_as_it_is():
    model = nn.Sequential(nn.LayerNorm(6), nn.Linear(6, 6), nn.LayerNorm(6, elementwise_affine=False),
                          nn.Linear(6, 6), nn.LayerNorm((2, 6)))
    step = _compare(model, _t((3, 2, 6)), None, _sum_of_squares)
    assert Normalize not in _generic_ops(step)
    step = _compare(nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6)), _t((4, 6)), None, _sum_of_squares)
    assert Normalize in _generic_ops(step)


def test_transformer_block_compiles_to_rules_and_matches_eager():
    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.t = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation="gelu", norm_first=True,
                                                batch_first=True)

        def forward(self, x):
            return self.t(x)
    step = _compare(Block(), _t((2, 3, 8)), None, _sum_of_squares)
    assert not (_generic_ops(step) & {Linear, Normalize, Gelu, Add})


def test_a_chain_of_adds_has_no_backward_instruction_of_its_own():
    class Chain(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(gl.ones(16, dtype=gl.float64))

        def forward(self, x):
            y = x
            for _ in range(20):
                y = y + self.w
            return y
    step = _compare(Chain(), _t((16,)), None, _sum_of_squares)
    (compiled,) = step.cache.values()
    names = [ins.name for ins in compiled.program.instrs]
    assert Add not in _generic_ops(step) and not any("Add.backward" in name for name in names)
    if _has_numba():  # the 20 adds run as one fused kernel, and the 20 gradients of w as another
        assert any("Add ×20" in name for name in names) and "Add" not in names, names
        assert len(names) <= 6, names
    else:
        assert names.count("Add") == 20


@pytest.mark.parametrize("fn", [lambda x, a, b: (x * a + 2.0) * 3 - 0.5, lambda x, a, b: (x / 3.0 - a) / 0.7,
                                lambda x, a, b: (x - 1) * 0.1 + a])
def test_arithmetic_with_a_python_number_matches_eager(fn):
    step = _compare(Apply(fn, (3,), (3,)), _t((2, 3)), None, _sum_of_squares)
    assert not (_generic_ops(step) & {Add, Sub, Mul, Div})


def test_a_bool_operand_is_left_to_the_generic_path():
    step = _compare(Apply(lambda x, a, b: x * a + True, (3,), (3,)), _t((2, 3)), None, _sum_of_squares)
    assert Add in _generic_ops(step) and Mul not in _generic_ops(step)


def test_float32_chains_round_each_step_as_numpy_does():
    """Fused or not, float32 arithmetic with Python numbers gives eager's float32 numbers bit for bit."""
    model = Apply(lambda x, a, b: ((x * 0.1 + a) * 3.7 - b / 0.3) * x, (3,), (3,)).float()
    twin = copy.deepcopy(model)
    x = gl.tensor(_rng().standard_normal((4, 3)), dtype=gl.float32)
    step = gl.compile.make_step(twin, _sum_of_squares)
    for _ in range(2):
        model.zero_grad()
        twin.zero_grad()
        _sum_of_squares(model(x), x).backward()
        step(x, x)
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(q.grad.numpy(), p.grad.numpy())


def test_an_optimizer_trajectory_through_the_rules_matches_eager():
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(2 * 25, 3)).double()
    twin = copy.deepcopy(model)
    opt, twin_opt = gl.optim.AdamW(model.parameters(), lr=0.01), gl.optim.AdamW(twin.parameters(), lr=0.01)
    step = gl.compile.make_step(twin, F.cross_entropy, optimizer=twin_opt)
    rng = _rng()
    x, y = _t((4, 1, 5, 5), rng), gl.tensor([0, 1, 2, 1])
    for _ in range(5):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
        step(x, y)
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), rtol=0, atol=TOL)


def test_every_rule_is_registered():
    assert {Add, Sub, Mul, Div, Relu, Gelu, Linear, LogSoftmax, NllLoss, ConvNd, MaxPoolNd,
            Normalize} <= set(rules.RULES)


def test_gradients_accumulate_across_calls_without_aliasing_a_kept_buffer():
    """Without zero_grad, .grad accumulates; a gradient taken from a buffer the rules keep must have been copied."""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.image = nn.Parameter(_t((2, 1, 6, 6)))  # a leaf fed to the conv: its ∂x is a kept buffer
            self.conv = nn.Conv2d(1, 2, 3, padding=1)
            self.fc = nn.Linear(2 * 9, 3)

        def forward(self, x):
            h = F.max_pool2d(F.relu(self.conv(self.image)) * x, 2)
            return self.fc(h.flatten(1))
    model = Net().double()
    twin = copy.deepcopy(model)
    step = gl.compile.make_step(twin, F.cross_entropy)
    rng = _rng()
    y = gl.tensor([0, 2])
    for _ in range(3):
        x = _t((2, 1, 6, 6), rng)
        F.cross_entropy(model(x), y).backward()
        step(x, y)
    for (name, p), q in zip(model.named_parameters(), twin.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=0, atol=TOL, err_msg=name)


def test_float32_gelu_forward_is_eager_bit_for_bit():
    """The compiled float32 GELU (numba's loop where installed) gives numpy's kernel's numbers exactly,
    NaN and ±inf and the edges of its polynomial included."""
    values = _rng().standard_normal(4096).astype(np.float32) * np.float32(1.7)
    values[:6] = [np.nan, np.inf, -np.inf, 1.5, -1.5000001, -0.0]
    x = gl.tensor(values.reshape(64, 64), dtype=gl.float32)
    model = nn.GELU()
    fast = gl.compile(model)
    with np.errstate(invalid="ignore"), gl.no_grad():  # (eager's −inf · Φ(−inf) = −inf · 0 warns)
        fast(x)
        np.testing.assert_array_equal(fast(x).numpy(), model(x).numpy())

"""Compile rules for sigmoid and tanh (gradlab/compile/rules_activation.py) against eager, in float64
(and float32 forward bit for bit), and their place in the fusion pass's chains."""

from __future__ import annotations

import copy

import numpy as np
import pytest

import gradlab as gl
from gradlab.compile import rules_activation
from gradlab.compile.generic import GenericForward
from gradlab.ops.activations import Sigmoid
from gradlab.ops.elementwise import Tanh
from gradlab.ops.joining import Stack
from gradlab.ops.splitting import Split, Unbind

nn, F = gl.nn, gl.nn.functional


def _has_numba():
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


def _generic_ops(step):
    (compiled,) = step.cache.values()
    return {ins.fn.function for ins in compiled.program.instrs if isinstance(ins.fn, GenericForward)}


def _sum_of_squares(out, y):
    return (out * out).sum()


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
    x = np.random.default_rng(0).standard_normal((5, 4)) * 30
    x[0, :4] = [800.0, -800.0, 0.0, -0.0]
    return gl.tensor(x, dtype=dtype)


@pytest.mark.parametrize("dtype", [gl.float64, gl.float32])
def test_sigmoid_and_tanh_rules_are_eagers_numbers(dtype):
    model = Gates() if dtype == gl.float32 else Gates().double()
    twin = copy.deepcopy(model)
    x = _extremes(dtype)
    step = gl.compile.make_step(twin, _sum_of_squares)
    for _ in range(2):
        model.zero_grad()
        twin.zero_grad()
        loss = _sum_of_squares(model(x), x)
        loss.backward()
        got = step(x, x)
        assert got.item() == loss.item()  # bit for bit: the same operations in the same order
        for p, q in zip(model.parameters(), twin.parameters()):
            assert np.array_equal(q.grad.numpy(), p.grad.numpy())
    assert step.traces == 1 and step.fallback is None
    assert not (_generic_ops(step) & {Sigmoid, Tanh})


def test_sigmoid_rule_saturates_as_eager_does():
    x = gl.tensor([[-1000.0, -40.0, 0.0, 40.0, 1000.0, float("inf"), -float("inf")]], dtype=gl.float64)
    fast = gl.compile(lambda t: t.sigmoid() * t.tanh().tanh())
    with np.errstate(all="ignore"):
        want = (x.sigmoid() * x.tanh().tanh()).numpy()
        fast(x)
        got = fast(x).numpy()
    assert np.array_equal(got, want)
    assert got[0, 0] == 0.0 and got[0, 3] == (1.0 / (1.0 + np.exp(-40.0))) * np.tanh(np.tanh(40.0))


def test_quick_gelu_is_one_fused_group():
    model = nn.Sequential(nn.Linear(4, 6)).double()

    def quick_gelu(x):
        h = model(x)
        return h * (1.702 * h).sigmoid()
    tape = gl.jit.trace(quick_gelu, _extremes(gl.float64))
    assert tape.count_ops() == {"Linear": 1, "Mul": 2, "Sigmoid": 1}
    groups = gl.compile.fusion_groups(tape)
    assert groups  # (a fused kernel's chain, or at least the ops written in place in one buffer)
    if _has_numba() and rules_activation.numba_matches("exp", "float64"):
        assert groups == [[1, 2, 3]]


def test_lstm_steps_use_the_rules_and_match_eager():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.fc = nn.LSTM(3, 4, batch_first=True), nn.Linear(4, 2)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])
    model = Net().double()
    twin = copy.deepcopy(model)
    x = gl.tensor(np.random.default_rng(1).standard_normal((2, 2, 3)), dtype=gl.float64)
    y = gl.tensor([0, 1])
    step = gl.compile.make_step(twin, F.cross_entropy)
    for _ in range(2):
        model.zero_grad()
        twin.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        assert abs(step(x, y).item() - loss.item()) <= 1e-10
        for p, q in zip(model.parameters(), twin.parameters()):
            np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=0, atol=1e-10)
    assert not (_generic_ops(step) & {Sigmoid, Tanh, Split, Unbind, Stack})


def test_split_rule_gives_a_piece_without_a_gradient_zeros():
    model = nn.Linear(3, 7).double()
    twin = copy.deepcopy(model)

    def loss_fn(out, y):
        first, _, last = out.split((2, 4, 1), -1)
        return (first.tanh() * last).sum() + (first * first).sum()
    x = gl.tensor(np.random.default_rng(2).standard_normal((4, 3)), dtype=gl.float64)
    step = gl.compile.make_step(twin, loss_fn)
    for _ in range(2):
        model.zero_grad()
        twin.zero_grad()
        loss = loss_fn(model(x), x)
        loss.backward()
        assert step(x, x).item() == loss.item()
        for p, q in zip(model.parameters(), twin.parameters()):
            assert np.array_equal(q.grad.numpy(), p.grad.numpy())
    assert Split not in _generic_ops(step)

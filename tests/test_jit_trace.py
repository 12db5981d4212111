"""gl.jit.trace: a forward recorded as a linear tape of ops that you can count, read, replay and save.

The expected counts come from each model's structure (a 3-Linear MLP runs 3 Linear ops), never from
a tape; the replayed numbers are compared with an eager forward of the same model, in float64.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from helpers import randn

import gradlab as gl

nn = gl.nn


def tensor(*shape, seed=0):
    return gl.tensor(randn(*shape, seed=seed))


def mlp():
    """Linear → ReLU → Linear → Tanh → Linear: three Linear ops, one ReLU, one Tanh."""
    gl.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 3)).double()


def cnn():
    """Conv2d → ReLU → MaxPool2d → Flatten → Linear: one op per layer."""
    gl.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(2 * 4 * 4, 3)).double()


class Block(nn.Module):
    """A named child inside a named child, so that module paths are dotted."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x) * 2.0


def net():
    gl.manual_seed(0)
    return Net().double()


def as_numpy(t):
    return t.detach().numpy()


def assert_same(actual, expected):
    """Exactly the same numbers: the replay runs the very same kernels as the eager forward."""
    np.testing.assert_array_equal(as_numpy(actual), as_numpy(expected))


# --- what the tape records ---------------------------------------------------------------------------


def test_an_mlp_records_one_op_per_layer():
    tape = gl.jit.trace(mlp(), tensor(5, 4))
    assert isinstance(tape, gl.jit.Tape)
    counts = tape.count_ops()
    linear = [name for name in counts if "linear" in name.lower()]
    assert len(linear) == 1 and counts[linear[0]] == 3, counts
    assert sum(counts.values()) == 5 == len(tape) == len(tape.ops) == len(list(tape))
    # count_ops keeps the order of first appearance: the model starts with a Linear, then its ReLU
    assert list(counts)[0] == linear[0]
    assert "relu" in list(counts)[1].lower() and any("tanh" in name.lower() for name in counts)


def test_a_cnn_records_conv_relu_pool_flatten_linear_in_order():
    tape = gl.jit.trace(cnn(), tensor(2, 1, 8, 8))
    names = [op.name.lower() for op in tape.ops]
    assert len(names) == 5, names
    assert "conv" in names[0] and "relu" in names[1] and "pool" in names[2] and "linear" in names[4], names


def test_a_function_records_its_ops_in_order():
    tape = gl.jit.trace(lambda a, b: (a * b + a).exp().sum(), tensor(3, 2), tensor(3, 2, seed=1))
    assert [op.name for op in tape.ops] == ["Mul", "Add", "Exp", "Sum"]
    assert tape.count_ops() == {"Mul": 1, "Add": 1, "Exp": 1, "Sum": 1}


def test_ops_nested_inside_a_functions_forward_are_not_entries():
    class Twice(gl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2.0 + x - x  # tensor ops inside: one Twice on the tape, not a Mul, an Add and a Sub

        @staticmethod
        def backward(ctx, grad):
            return grad * 2.0

    x = gl.tensor(randn(3), requires_grad=True)
    tape = gl.jit.trace(lambda x: Twice.apply(x).exp(), x)
    assert [op.name for op in tape.ops] == ["Twice", "Exp"]


def test_tracing_under_no_grad_records_the_same_ops():
    model = mlp()
    x = tensor(5, 4)
    with gl.no_grad():
        quiet = gl.jit.trace(model, x)
    assert quiet.count_ops() == gl.jit.trace(model, x).count_ops()


def test_each_op_knows_its_shapes_dtype_device_and_function():
    model = mlp()
    tape = gl.jit.trace(model, tensor(5, 4))
    first = tape.ops[0]
    assert isinstance(first, gl.jit.TapeOp)
    assert [op.index for op in tape.ops] == list(range(len(tape)))
    assert first.function.__name__ == first.name
    assert issubclass(first.function, gl.autograd.Function)
    assert first.in_shapes[0] == (5, 4) and (8, 4) in first.in_shapes  # the input, then the weight
    assert first.out_shapes == ((5, 8),)
    assert tape.ops[-1].out_shapes == ((5, 3),)
    for op in tape.ops:
        assert op.dtypes == ("float64",) and op.device == "cpu"
        assert len(op.outputs) == len(op.out_shapes) == 1


def test_each_op_knows_the_module_it_ran_in():
    tape = gl.jit.trace(mlp(), tensor(5, 4))
    assert [op.module for op in tape.ops] == ["0", "1", "2", "3", "4"]
    tape = gl.jit.trace(net(), tensor(5, 4))
    modules = [op.module for op in tape.ops]
    assert modules[:4] == ["blocks.0.fc", "blocks.0.act", "blocks.1.fc", "blocks.1.act"]
    assert modules[4] == "head"
    assert modules[5] == ""  # `* 2.0` runs in Net.forward itself, at the top level


def test_values_name_inputs_parameters_and_op_outputs():
    model = mlp()
    tape = gl.jit.trace(model, tensor(5, 4))
    values = tape.values
    assert len(tape.inputs) == 1
    x = values[tape.inputs[0]]
    assert isinstance(x, gl.jit.Value) and x.kind == "input" and tuple(x.shape) == (5, 4)
    parameters = {v.name: v for v in values.values() if v.kind == "parameter"}
    assert set(parameters) == set(model.state_dict())  # named by their state_dict names
    assert tuple(parameters["2.weight"].shape) == (8, 8)
    for op in tape.ops:
        for out in op.outputs:
            assert values[out].kind == "op"
        for arg in op.args:
            if isinstance(arg, gl.jit.Ref):
                assert arg.value in values
    assert tape.signature == (((5, 4), "float64", "cpu"),)


def test_a_buffer_is_a_buffer_and_a_python_number_a_constant():
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).double().eval()  # eval: the running stats are read
    tape = gl.jit.trace(model, tensor(5, 4))
    buffers = {v.name for v in tape.values.values() if v.kind == "buffer"}
    assert {"1.running_mean", "1.running_var"} <= buffers
    tape = gl.jit.trace(net(), tensor(5, 4))
    last = tape.ops[-1]  # `* 2.0`: the number is kept in the op's args as it is
    assert 2.0 in [arg for arg in last.args if not isinstance(arg, gl.jit.Ref)]


def test_the_listing_mentions_every_op():
    tape = gl.jit.trace(net(), tensor(5, 4))
    text = str(tape)
    assert text == tape.listing()
    assert len(text.strip().splitlines()) >= len(tape)
    for op in tape.ops:
        assert op.name in text
    assert "blocks.1.fc" in text and "(5, 4)" in text.replace("[", "(").replace("]", ")")


# --- replay --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("build, shape", [(mlp, (5, 4)), (cnn, (2, 1, 8, 8)), (net, (5, 4))])
def test_replay_equals_the_eager_forward_exactly(build, shape):
    model = build()
    tape = gl.jit.trace(model, tensor(*shape))
    x2 = tensor(*shape, seed=7)  # another input of the same signature
    assert_same(tape.replay(x2), model(x2))


def test_replay_reads_the_parameters_as_they_are_now():
    model = mlp()
    x = tensor(5, 4)
    tape = gl.jit.trace(model, x)
    before = as_numpy(tape.replay(x)).copy()
    with gl.no_grad():
        for p in model.parameters():
            p.mul_(1.5).add_(0.25)  # changed in place, as an optimizer does
    after = tape.replay(x)
    assert_same(after, model(x))
    assert not np.allclose(as_numpy(after), before)


def test_replay_follows_in_place_ops_inside_forward():
    w = gl.tensor(randn(3), requires_grad=True)

    def f(x):
        h = x * w
        h.mul_(2.0)  # written into h's memory: what comes next reads the doubled values
        h += 1.0
        return h.relu_() * 3.0

    x = tensor(3)
    tape = gl.jit.trace(f, x)
    x2 = tensor(3, seed=4)
    assert_same(tape.replay(x2), f(x2))


def test_replay_of_a_write_through_a_view_is_right_or_says_it_cannot_be():
    w = gl.tensor(np.ones(4), requires_grad=True)

    def f(x):
        h = x * w
        h[:2].mul_(3.0)  # a write through a view of h changes h
        return h

    x2 = gl.tensor(np.arange(4.0) + 10)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            tape = gl.jit.trace(f, gl.tensor(np.arange(4.0)))
            got = tape.replay(x2)
        except (RuntimeError, ValueError) as error:  # refusing, with a reason, is fine too
            assert "view" in str(error)
            return
    said = [str(w.message) for w in caught]
    if not said:  # a replay that says nothing must give what the forward gives: [30, 33, 12, 13]
        assert_same(got, f(x2))
    else:
        assert any("view" in message for message in said), said


def test_replay_builds_no_graph():
    model = mlp()
    x = gl.tensor(randn(5, 4), requires_grad=True)
    tape = gl.jit.trace(model, x)
    out = tape.replay(x)
    assert out.grad_fn is None and not out.requires_grad
    # nothing to backpropagate: the parameters' .grad stay as they were
    assert all(p.grad is None for p in model.parameters())


def test_replay_returns_what_the_function_returned():
    def two(a, b):
        return a + b, (a * b).tanh()

    a, b = tensor(3, 2), tensor(3, 2, seed=1)
    tape = gl.jit.trace(two, a, b)
    a2, b2 = tensor(3, 2, seed=2), tensor(3, 2, seed=3)
    got = tape.replay(a2, b2)
    assert isinstance(got, tuple) and len(got) == 2
    for g, e in zip(got, two(a2, b2)):
        assert_same(g, e)


def test_replay_with_another_signature_says_which_input_and_what_was_expected():
    tape = gl.jit.trace(mlp(), tensor(5, 4))
    with pytest.raises(ValueError, match="input 0") as info:
        tape.replay(tensor(6, 4))
    assert "(5, 4)" in str(info.value) and "(6, 4)" in str(info.value)  # what it was traced with, what it got
    with pytest.raises(ValueError, match="float32"):
        tape.replay(gl.tensor(randn(5, 4), dtype=gl.float32))
    with pytest.raises((TypeError, ValueError), match="1 input"):
        tape.replay(tensor(5, 4), tensor(5, 4))  # one input too many: a call error, as in Python


# --- save and load ------------------------------------------------------------------------------------


def test_a_saved_tape_is_plain_data_and_replays_the_same_numbers(tmp_path):
    model = net()
    x = tensor(5, 4)
    tape = gl.jit.trace(model, x)
    path = tmp_path / "net.tape.npz"
    tape.save(path)
    with np.load(path, allow_pickle=False) as data:  # no pickle anywhere: every entry loads as plain data
        assert len(data.files) > 0
        for name in data.files:
            assert data[name].dtype != object
    loaded = gl.jit.load(path)
    assert isinstance(loaded, gl.jit.Tape)
    assert loaded.count_ops() == tape.count_ops()
    assert [op.module for op in loaded.ops] == [op.module for op in tape.ops]
    assert loaded.signature == tape.signature
    x2 = tensor(5, 4, seed=3)
    assert_same(loaded.replay(x2), tape.replay(x2))
    assert_same(loaded.replay(x2), model(x2))
    assert_same(gl.jit.Tape.load(path).replay(x2), model(x2))

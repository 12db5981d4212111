"""record() names the line of the user's code behind each operation, however deep the modules nest.

(record.py finds it in a few frames: inside one of gradlab's own layers it reuses where the layer was
called. These tests mark the lines they expect in their own source, so the answer is not the code's.)
"""

import inspect

import gradlab as gl
import gradlab.nn as nn


def line_of(marker: str) -> int:
    """The line of this file that ends with ``# <marker>``."""
    lines = inspect.getsource(inspect.getmodule(line_of)).splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.act = nn.Sequential(nn.Tanh())

    def forward(self, x):
        h = self.fc(x)  # inner-fc
        h = h * 2.0  # inner-mul
        return self.act(h)  # inner-act


class MyLinear(nn.Linear):
    """A user's subclass of a gradlab layer: its forward is the user's code."""

    def forward(self, x):
        return super().forward(x) + 1.0  # my-linear


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.blocks = nn.Sequential(nn.Linear(3, 3), nn.ReLU())
        self.mine = MyLinear(3, 3)

    def forward(self, x):
        x = self.inner(x)  # outer-inner
        x = self.blocks(x)  # outer-blocks
        return self.mine(x)  # outer-mine


def recorded_ops():
    gl.manual_seed(0)
    model = Outer()
    with gl.lab.record() as rec:
        model(gl.randn(2, 3)).sum()  # the-sum
    return [(op.record.function.__name__, op.group, op.where[1]) for op in rec.ops]


def test_each_operation_gets_the_innermost_line_of_the_users_code():
    ops = recorded_ops()
    assert ops == [
        ("Linear", "inner.fc", line_of("inner-fc")),
        ("Mul", "inner", line_of("inner-mul")),
        ("Tanh", "inner.act.0", line_of("inner-act")),
        ("Linear", "blocks.0", line_of("outer-blocks")),
        ("Relu", "blocks.1", line_of("outer-blocks")),
        ("Linear", "mine", line_of("my-linear")),
        ("Add", "mine", line_of("my-linear")),
        ("Sum", None, line_of("the-sum")),
    ], ops


def test_hooks_on_a_gradlab_layer_are_the_users_code():
    gl.manual_seed(0)
    layer = nn.Linear(3, 3)
    layer.register_forward_pre_hook(lambda module, args: (args[0] * 2.0,))  # the-pre-hook
    layer.register_forward_hook(lambda module, args, out: out * 3.0)  # the-hook
    with gl.lab.record() as rec:
        layer(gl.randn(2, 3, requires_grad=True))  # the-call
    assert [(op.record.function.__name__, op.where[1]) for op in rec.ops] == [
        ("Mul", line_of("the-pre-hook")), ("Linear", line_of("the-call")), ("Mul", line_of("the-hook"))]


def test_the_same_layer_called_from_two_lines_gets_each_line():
    gl.manual_seed(0)
    layer = nn.Tanh()
    x = gl.randn(2, requires_grad=True)
    with gl.lab.record() as rec:
        y = layer(x)  # first-call
        layer(y)  # second-call
    assert [op.where[1] for op in rec.ops] == [line_of("first-call"), line_of("second-call")]

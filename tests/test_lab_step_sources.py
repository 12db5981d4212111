"""One shape for a step: gradlab's engine and the Scalar twin yield the same ``BackwardStep`` (with ``targets``,
the node each gradient goes to), and the stepper asks one backward source per engine instead of branching.
(PyTorch's steps: tests/test_lab_torch_stepper.py.)"""

from __future__ import annotations

import pytest

import gradlab as gl
from gradlab import Scalar
from gradlab.autograd import backward_steps
from gradlab.lab.capture import CaptureError
from gradlab.lab.scalar_source import ScalarSource
from gradlab.lab.step_sources import source_for
from gradlab.lab.stepping import Stepping
from gradlab.lab.tensor_source import TensorSource


def tensor_loss():
    gl.manual_seed(0)
    w = gl.randn(3, 2, requires_grad=True)
    b = gl.zeros(2, requires_grad=True)
    return ((gl.randn(4, 3) @ w + b).tanh() * (w.sum() + 1)).mean()


def scalar_loss():
    x, y = Scalar(0.5, "x"), Scalar(-1.2, "y")
    a = x * y
    return (a + x).tanh() * a + y.exp()


def test_gradlabs_steps_name_where_each_gradient_goes():
    steps = list(backward_steps(tensor_loss()))
    for step in steps:
        assert step.targets == tuple(child for child, _ in step.node.next_functions)
        assert len(step.targets) == len(step.grads_out)


def test_the_scalar_twins_steps_have_the_same_shape():
    steps = list(scalar_loss().backward_steps())
    for step in steps:
        assert step.targets == step.node.parents and len(step.targets) == len(step.grads_out)


@pytest.mark.parametrize("make, source", [(tensor_loss, TensorSource), (scalar_loss, ScalarSource)])
def test_each_engine_has_its_source_and_the_stepper_describes_their_steps_alike(make, source):
    stepping = Stepping(make())
    assert type(stepping.source) is source
    while stepping.step() is not None:
        pass
    for step in stepping.steps:
        assert set(step) == {"index", "node", "grads_in", "sent", "leaf"}
        assert all(row["to"] in stepping.graph.nodes for row in step["sent"] if row["to"] is not None)
    sent_to = {row["to"] for step in stepping.steps for row in step["sent"]} - {None}  # (None: the constant 1)
    ran = {step["node"] for step in stepping.steps}
    assert sent_to <= ran  # every gradient goes to a node that then runs


def test_something_no_engine_steps_is_refused_naming_what_works():
    with pytest.raises(CaptureError, match="cannot step a list; give it a loss tensor.*a gradlab.Scalar or a "
                                           "PyTorch loss tensor"):
        source_for([1.0])

"""Every built-in Function states its local derivative rule, in words (docstring) and in math (``derivative``).

The lab shows both beside a graph node: ``node.function.__doc__`` (its first line) and
``node.function.derivative``, written with ``g`` for the incoming gradient and ``out`` for the output.
"""

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd.function import Function
from gradlab.ops.activations import Sigmoid
from gradlab.ops.arithmetic import Mul
from gradlab.ops.elementwise import Exp, Tanh
from gradlab.scalar import Scalar, ScalarFunction
from helpers import assert_close, leaf, randn


def _subclasses(base) -> list:
    """Every subclass of base, recursively (factory-made ones too), defined in gradlab itself."""
    found, stack = [], [base]
    while stack:
        for cls in stack.pop().__subclasses__():
            if cls not in found:
                found.append(cls)
                stack.append(cls)
    return [cls for cls in found if cls.__module__.split(".")[0] == "gradlab"]


def _first_line(cls) -> str:
    doc = cls.__doc__ or ""  # a class's own docstring: __doc__ is not inherited
    return doc.strip().splitlines()[0].strip() if doc.strip() else ""


def _states_a_rule(cls) -> bool:
    rule = cls.derivative
    return isinstance(rule, str) and ("∂L/∂" in rule or "no gradient" in rule)


FUNCTIONS = _subclasses(Function)
SCALAR_FUNCTIONS = _subclasses(ScalarFunction)


def _missing(classes) -> list:
    """'module.Name: what it lacks' for each class without a docstring line or a rule of its own."""
    missing = []
    for cls in classes:
        lacks = []
        if not _first_line(cls):
            lacks.append("a docstring whose first line says the rule in words")
        if not _states_a_rule(cls):
            lacks.append('derivative = "∂L/∂x = ..." (or "no gradient (...)")')
        elif "backward" in vars(cls) and "derivative" not in vars(cls):
            lacks.append("a derivative of its own (it overrides backward but inherits its parent's rule)")
        if lacks:
            missing.append(f"{cls.__module__}.{cls.__qualname__}: " + "; ".join(lacks))
    return missing


def test_every_function_states_its_rule_in_words_and_in_math():
    assert len(FUNCTIONS) > 100  # the walk found the factory-made classes too (Exp, Eq, MseLoss, ...)
    missing = _missing(FUNCTIONS)
    assert not missing, (
        f"{len(missing)} Function classes lack a derivative rule. Give each a docstring whose first line says "
        "the rule in words and a class attribute derivative in plain Unicode math, g being the incoming gradient "
        "and out the output, one clause per differentiable input separated by ';  ' (e.g. "
        "derivative = \"∂L/∂a = g · b;  ∂L/∂b = g · a\"); for a class built by a factory, pass them through "
        "the factory:\n  " + "\n  ".join(missing)
    )


def test_every_scalar_function_states_its_rule_in_words_and_in_math():
    assert len(SCALAR_FUNCTIONS) >= 10
    missing = _missing(SCALAR_FUNCTIONS)
    assert not missing, (
        f"{len(missing)} ScalarFunction classes lack a derivative rule: give each a docstring and a class "
        "attribute derivative, e.g. derivative = \"∂L/∂x = g · out\":\n  " + "\n  ".join(missing)
    )


def test_factory_made_functions_each_state_their_own_rule():
    assert Exp.derivative != Tanh.derivative
    assert len({gl.ops.elementwise.Sin.derivative, gl.ops.elementwise.Log.derivative, Sigmoid.derivative}) == 3
    assert gl.ops.arithmetic.Lt.derivative == "no gradient (piecewise constant)"


# Each rule, checked against the numbers backward gives: (function, op, expected input gradients from
# x, out and g, words the docstring uses, and the rule itself).
SPOT_CHECKS = [
    (Mul, lambda a, b: a * b, lambda a, b, out, g: (g * b, g * a), "other input", "∂L/∂a = g · b;  ∂L/∂b = g · a"),
    (Exp, lambda a: a.exp(), lambda a, out, g: (g * out,), "output", "∂L/∂x = g · out"),
    (Tanh, lambda a: a.tanh(), lambda a, out, g: (g * (1 - out ** 2),), "1 − tanh²", "∂L/∂x = g · (1 − out²)"),
    (Sigmoid, lambda a: a.sigmoid(), lambda a, out, g: (g * out * (1 - out),), "out · (1 − out)",
     "∂L/∂x = g · out · (1 − out)"),
]


@pytest.mark.parametrize("function, op, expected, words, rule", SPOT_CHECKS, ids=lambda v: getattr(v, "__name__", ""))
def test_the_stated_rule_is_what_backward_computes(function, op, expected, words, rule):
    n_inputs = op.__code__.co_argcount
    arrays = [randn(3, 4, seed=i) for i in range(n_inputs)]
    inputs = [leaf(a) for a in arrays]
    out = op(*inputs)
    assert out.grad_fn.function is function  # what the lab reads from a node
    assert out.grad_fn.function.derivative == rule
    assert words in _first_line(function)
    g = randn(3, 4, seed=9)
    out.backward(gl.tensor(g, dtype=gl.float64))
    for x, grad in zip(inputs, expected(*arrays, out.detach().numpy(), g)):
        assert_close(x.grad, grad)


def test_a_scalar_rule_is_what_its_backward_computes():
    x, y = Scalar(2.0), Scalar(-3.0)
    out = x * y
    assert out.grad_fn.function.derivative == "∂L/∂x = g · y;  ∂L/∂y = g · x"
    assert "other input" in _first_line(out.grad_fn.function)
    out.backward()
    assert (x.grad, y.grad) == (-3.0, 2.0)
    t = Scalar(0.5)
    z = t.tanh()
    assert z.grad_fn.function.derivative == "∂L/∂x = g · (1 − out²)"
    z.backward()
    assert np.isclose(t.grad, 1 - np.tanh(0.5) ** 2)

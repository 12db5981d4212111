"""Every Function says the file that defines it: its module binds its name (the lab shows it, docs link it).

Factories (``elementwise()``, ``binary()``, the pointwise losses, the comparisons) make classes for
other files; each class, and its node type, must report the module that called the factory.
"""

import importlib
import inspect
import pkgutil

import pytest

import gradlab as gl
from gradlab.autograd.function import Function
from gradlab.jit.serialize import _find_class

OPTIONAL = ("gradlab.backends.cuda_backend", "gradlab.backends.numba_backend", "gradlab.backends.mlx_backend")


def gradlab_functions():
    """Every Function subclass gradlab defines, once all of gradlab is imported (optional parts if they load)."""
    for module in pkgutil.walk_packages(gl.__path__, "gradlab."):
        try:
            importlib.import_module(module.name)
        except ImportError as error:  # an optional package this machine lacks (numba, mlx, a widget library)
            if (error.name or "gradlab").startswith("gradlab"):
                raise
        except RuntimeError:  # a backend without its device (CUDA without a GPU)
            if module.name not in OPTIONAL:
                raise
    todo, found = list(Function.__subclasses__()), set()
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("gradlab."):
            found.add(cls)
    return sorted(found, key=lambda cls: (cls.__module__, cls.__qualname__))


FUNCTIONS = gradlab_functions()


def bound_in_its_module(cls) -> bool:
    obj = inspect.getmodule(cls)
    for part in cls.__qualname__.split("."):
        obj = getattr(obj, part, None)
    return obj is cls


def test_every_function_is_named_by_the_module_it_reports():
    wrong = [f"{cls.__module__}.{cls.__qualname__}" for cls in FUNCTIONS if not bound_in_its_module(cls)]
    assert len(FUNCTIONS) > 150 and not wrong, f"{len(wrong)} classes report a module that does not name them: {wrong}"


def test_every_node_type_reports_its_functions_module():
    wrong = [cls.__qualname__ for cls in FUNCTIONS if cls._node_type.__module__ != cls.__module__]
    assert not wrong


@pytest.mark.parametrize("make, module, name", [
    (lambda x: x.sigmoid(), "gradlab.ops.activations", "Sigmoid"),
    (lambda x: x.sinh(), "gradlab.ops.trigonometric", "Sinh"),
    (lambda x: x.atan2(x + 1), "gradlab.ops.trigonometric", "Atan2"),
    (lambda x: x.log2(), "gradlab.ops.pointwise", "Log2"),
    (lambda x: x.lgamma(), "gradlab.ops.special", "Lgamma"),
    (lambda x: gl.nn.functional.mse_loss(x, x.detach() + 1, reduction="none"), "gradlab.nn.functional.loss", "MseLoss"),
])
def test_a_factory_made_op_reports_the_file_that_defines_it(make, module, name):
    function = make(gl.ones(3, requires_grad=True)).grad_fn.function
    assert function.__module__ == module and type(make(gl.ones(1, requires_grad=True)).grad_fn).__module__ == module
    if name is not None:
        assert function.__qualname__ == name and getattr(importlib.import_module(module), name) is function


def test_classes_of_ops_without_a_gradient_report_their_file_too():
    assert gl.ops.arithmetic.Eq.__module__ == "gradlab.ops.arithmetic"  # _no_grad_binary()
    assert gl.ops.comparison.Isposinf.__module__ == "gradlab.ops.comparison"  # elementwise()
    assert gl.ops.bitwise.BitwiseAnd.__module__ == "gradlab.ops.bitwise"  # binary()


def test_gradlab_ops_still_run_their_forwards_as_primitives():
    """Function.apply trusts the forwards of gradlab.ops and gradlab.nn.functional (decided from the module)."""
    ops = [cls for cls in FUNCTIONS if cls.__module__.startswith(("gradlab.ops.", "gradlab.nn.functional."))]
    assert len(ops) > 150 and [cls.__qualname__ for cls in ops if not cls._forward_is_primitive] == []

    class Mine(Function):  # a user's Function is not trusted
        @staticmethod
        def forward(ctx, x):
            return x * 2

    assert Mine.__module__ == __name__ and not Mine._forward_is_primitive


def test_a_tape_saved_under_a_factorys_module_still_finds_its_class():
    assert _find_class("gradlab.ops.activations:Sigmoid") is gl.ops.activations.Sigmoid
    assert _find_class("gradlab.ops.elementwise:Sigmoid") is gl.ops.activations.Sigmoid  # as older tapes name it

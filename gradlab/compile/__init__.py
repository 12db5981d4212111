"""``gradlab.compile``: plan a training step (or a forward pass) once, then run it as a flat program.

``step = gl.compile.make_step(model, loss_fn, optimizer=opt)`` then ``loss = step(x, y)`` runs
forward, loss, backward and the update; ``fast = gl.compile(model)`` runs a forward with no graph.
Both trace once per input signature (``gradlab.jit``), plan a program of array instructions
(``plan.py``, ``rules.py``, ``passes.py``) and fall back to eager, with a ``CompileWarning``,
for what a tape cannot hold.
"""

import sys
import types

from .forward import CompiledFunction, compile
from .groups import fusion_groups
from .step import CompiledStep, CompileWarning, make_step

__all__ = ["CompileWarning", "CompiledFunction", "CompiledStep", "compile", "fusion_groups", "make_step"]


class _CallableModule(types.ModuleType):
    """``gl.compile`` is a module (``gl.compile.make_step``) that can also be called: ``gl.compile(fn)``."""

    def __call__(self, fn):
        return compile(fn)


sys.modules[__name__].__class__ = _CallableModule

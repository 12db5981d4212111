"""``gradlab.compile``: record a training step (or a forward pass) once, then run it as a flat program.

``step = gl.compile.make_step(model, loss_fn, optimizer=opt)`` then ``loss = step(x, y)`` runs
forward, loss, backward and the update; ``fast = gl.compile(model)`` runs a forward with no graph.
Both run once eagerly per input signature while the backend records every call it is asked to make
(``trace.py``), lower that record into a program (``lower.py``, ``leaves.py``), rewrite it
(``passes.py``, ``fuse.py``) and run it (``program.py``); no module here knows how an op
differentiates. What a record cannot hold makes them run eagerly, after a ``CompileWarning``.
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

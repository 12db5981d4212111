"""``gl.compile(fn)``: a forward pass (inference, evaluation) traced once per input signature and run as a program.

Like ``torch.compile`` for a function or Module: the first call with new shapes runs it eagerly
while tracing; later calls run the planned forward program, building no graph. What a tape
cannot hold (``.item()``, an ``if`` on a tensor, a random draw outside an op) makes it run
eagerly after one ``CompileWarning``. On MLX the program itself is handed to ``mx.compile``.
"""

from __future__ import annotations

import warnings

from ..autograd.grad_mode import no_grad
from ..jit.tape import _fill_one
from ..jit.tracer import Tracer
from .generic import ShapeChanged
from .mlx_runner import runner
from .plan import plan
from .step import CompileWarning, escape_reason, signature


class CompiledFunction:
    """``fast = gl.compile(model)``; ``fast(x)`` gives what ``model(x)`` gives, with no graph."""

    def __init__(self, fn):
        if not callable(fn):
            raise TypeError(f"gl.compile expects a function or Module, got {type(fn).__name__}")
        self.fn = fn
        self.cache: dict = {}
        self.traces = 0
        self.fallback = None
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *inputs):
        from ..autograd.function import TrackedTensor

        if self.fallback is not None or not all(isinstance(x, TrackedTensor) for x in inputs):
            return self._eager(inputs)
        key = signature(inputs, self.fn if hasattr(self.fn, "training") else None)
        entry = self.cache.get(key)
        if entry is None:
            return self._trace(key, inputs)
        tape, program, run = entry
        env = program.environment()
        for slot, x in zip(program.inputs, inputs):
            env[slot] = x.array
        try:
            with no_grad():
                run(env)
        except ShapeChanged as error:
            self._give_up(f"an op's output shape changed between calls with the same input shapes ({error})")
            return self._eager(inputs)
        like = inputs[0]
        values = {int(name[4:]): like._wrap(env[slot]) for name, slot in program.results.items()}
        values.update({vid: t for vid, t in tape.externals.items() if vid not in values})
        return _fill_one(tape.output, values)

    def _trace(self, key, inputs):
        tracer = Tracer(self.fn, inputs)
        with no_grad(), tracer:
            out = self.fn(*inputs)
        self.traces += 1
        reason = escape_reason(tracer.escapes, "the function")
        if reason is not None:
            self._give_up(reason, stacklevel=4)
            return out
        tape = tracer.tape(out)
        program = plan(tape, inputs[0].device.backend, inputs[0]._wrap, backward=False)
        self.cache[key] = (tape, program, runner(program))
        return out

    def _eager(self, inputs):
        with no_grad():
            return self.fn(*inputs)

    def _give_up(self, reason, stacklevel=3):
        self.fallback = reason
        self.cache.clear()
        warnings.warn(f"gl.compile: running eagerly: {reason}", CompileWarning, stacklevel=stacklevel)

    def __repr__(self):
        return f"<gradlab.compile of {getattr(self.fn, '__name__', type(self.fn).__name__)}: {len(self.cache)} signature(s)>"


def compile(fn) -> CompiledFunction:
    """Compile a function or Module for forward use: ``fast = gl.compile(model)``; ``fast(x)``."""
    return CompiledFunction(fn)

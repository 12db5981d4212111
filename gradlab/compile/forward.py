"""``gl.compile(fn)``: a forward pass (inference, evaluation) recorded once per input signature and run as a program.

Like ``torch.compile`` for a function or Module: the first call with new shapes runs it eagerly,
under ``no_grad``, while its backend calls are recorded (``trace.py``); that record, lowered
(``lower.py``), is what later calls run. A value that leaves the ops for Python (``.item()``,
an ``if`` on a tensor) makes it run eagerly after one ``CompileWarning``. On MLX the program is
handed to ``mx.compile``.
"""

from __future__ import annotations

import warnings

from ..autograd.grad_mode import no_grad
from ..jit.tracer import Tracer
from .lower import GuardFailed, Unrecorded, lower
from .mlx_runner import runner
from .step import CompileWarning, escape_reason, signature
from .trace import record, tensors_in, with_tensors


class _Place:
    """Where a tensor of the function's result goes (the first result's shape, kept without its arrays)."""

    array = None


_PLACE = _Place()


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

        if self.fallback is not None or not inputs or not all(isinstance(x, TrackedTensor) for x in inputs):
            return self._eager(inputs)
        key = signature(inputs, self.fn if hasattr(self.fn, "training") else None)
        entry = self.cache.get(key)
        if entry is None:
            return self._trace(key, inputs)
        program, run, shape_of_result = entry
        env = program.environment()
        for slot, x in zip(program.inputs, inputs):
            env[slot] = x.array
        try:
            with no_grad():
                run(env)
        except GuardFailed as error:
            self._give_up(str(error))
            return self._eager(inputs)
        for name, (tensor, how) in program.handed.items():  # a pure (MLX) program's rebound buffers
            tensor.array = env[program.results[name]]
        outs = (inputs[0]._wrap(env[program.results[f"out:{i}"]]) for i in range(len(tensors_in(shape_of_result))))
        return with_tensors(shape_of_result, outs)

    def _trace(self, key, inputs):
        backend = inputs[0].device.backend
        tracer = Tracer(self.fn, inputs)
        out, recorded = record(self.fn, list(inputs), tracer, self.fn, None)
        self.traces += 1
        reason = escape_reason(tracer.escapes, "the function")
        if reason is None:
            try:
                program = lower(recorded, backend, pure=backend.name == "mlx")
            except (GuardFailed, Unrecorded) as error:
                reason = str(error)
        if reason is not None:
            self._give_up(reason, stacklevel=4)
            return out
        self.cache[key] = (program, runner(program), with_tensors(out, (_PLACE for _ in tensors_in(out))))
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

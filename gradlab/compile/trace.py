"""Trace: watch the backend while one real step runs, and write down every call it was asked to make.

The step runs eagerly — forward, loss, the engine's own backward — with the device's backend
replaced by a ``Recording`` that passes each call on and notes it: the method, its arguments
(arrays by identity, everything else as it was), and the arrays it gave back. That list *is* the
program (as PyTorch's ``make_fx`` traces a step down to ATen calls, and a JAX jaxpr is the
primitives its tracer saw): nothing in ``gradlab.compile`` needs to know how any op differentiates.

A call that reads values back to the host (``to_numpy``, ``any_true``) is a *guard*: running the
program again, the value must come out the same, or the program no longer says what the code does.
A check written as ``backend.check(fn, *arrays)`` (an op validating its input) is replayed as it is.
"""

from __future__ import annotations

from threading import get_ident
from typing import NamedTuple

from ..autograd import observers
from ..autograd.engine import backward_steps

# Calls that answer from an array's metadata alone: the same for every run of one signature.
METADATA = frozenset({"native_dtype", "dtype_of", "is_contiguous", "synchronize", "supported_dtypes", "check"})
HOST_READS = frozenset({"to_numpy", "any_true"})
# Calls that change memory they were given (the first array argument; matmul_into's out is its last), or the
# state of a random generator.
WRITES = frozenset({"setitem", "add_at", "multiply_at", "maximum_at", "minimum_at", "matmul_into", "isub", "iadd",
                    "imul"})
RANDOM = frozenset({"random_uniform", "random_normal", "random_integers", "random_permutation"})


def written(name, ins):
    """Which of a writing call's array arguments (``ins``, in order) it writes into."""
    return ins[-1] if name == "matmul_into" else ins[0]


class Call(NamedTuple):
    """One backend call as it happened: ``results = method(*args, **kwargs)``, arrays named by number.

    ``args``/``kwargs`` hold ``ArrayRef``s where an array was passed; ``results`` is the call's result
    with each array replaced by its ``ArrayRef`` (None for a call that only writes). ``op`` is the
    index of the traced op it ran inside (None outside any op: the engine's own sums, a leaf's .grad),
    ``phase`` 'forward' or 'backward'."""

    name: str
    method: object
    args: tuple
    kwargs: dict
    results: object
    op: int | None
    phase: str
    seen: object = None  # what a host read gave back, as it was then (a guard compares with it)


class ArrayRef(NamedTuple):
    """An array in a recording: its number (first seen order)."""

    index: int


class Recording:
    """A stand-in for one backend: every call goes through to it and is written into ``calls``.

    Only the thread that records is written down (a data-loader thread using the device meanwhile
    is not part of the step). ``arrays[i]`` is the array numbered i, kept alive so no id is reused."""

    def __init__(self, backend, ops=()):
        self.backend = backend
        self.name = backend.name
        self.calls: list = []
        self.arrays: list = []
        self.checks: list = []  # (position in calls, fn, args) of each backend.check
        self._number: dict = {}  # id(array) -> its number
        self._array_type = backend.array_type
        self._thread = get_ident()
        self.phase = "forward"
        self._ops = ops  # the tracer's ops so far: a call made inside an op belongs to the one appended next

    def __getattr__(self, name):
        attr = getattr(self.backend, name)
        if name in METADATA or not callable(attr):
            return attr

        def call(*args, **kwargs):
            if get_ident() != self._thread:
                return attr(*args, **kwargs)
            result = attr(*args, **kwargs)
            self._write(name, attr, args, kwargs, result)
            return result

        call.__name__ = name
        object.__setattr__(self, name, call)  # found directly next time
        return call

    def check(self, fn, *args):
        """Run ``fn(backend, *args)`` (an op's validation, which may read values back) and replay it every run."""
        if get_ident() == self._thread:
            self.checks.append((len(self.calls), fn, self._refs(args)))
        return fn(self.backend, *args)

    # --- numbering arrays ------------------------------------------------------------------------

    def number(self, a) -> int:
        """The number of array ``a`` (a new one the first time it is seen)."""
        n = self._number.get(id(a))
        if n is None:
            n = self._number[id(a)] = len(self.arrays)
            self.arrays.append(a)
        return n

    def known(self, a) -> int | None:
        return self._number.get(id(a))

    def _refs(self, value):
        if isinstance(value, self._array_type):
            return ArrayRef(self.number(value))
        if value.__class__ in (tuple, list):
            return value.__class__(self._refs(v) for v in value)
        return value

    def _fresh_refs(self, value):
        """Number a call's results: an array it returns is new unless it is one already seen (an input handed back)."""
        if isinstance(value, self._array_type):
            n = self._number.get(id(value))
            if n is None or not self._alive_as(value, n):
                n = self._number[id(value)] = len(self.arrays)
                self.arrays.append(value)
            return ArrayRef(n)
        if value.__class__ in (tuple, list):
            return value.__class__(self._fresh_refs(v) for v in value)
        return value

    def _alive_as(self, value, n) -> bool:
        return self.arrays[n] is value

    def _write(self, name, method, args, kwargs, result) -> None:
        op = len(self._ops) if (self.phase == "forward" and observers.inside_op()) else None
        seen = _snapshot(result) if name in HOST_READS else None
        self.calls.append(Call(name, method, self._refs(args), {k: self._refs(v) for k, v in kwargs.items()},
                               self._fresh_refs(result), op, self.phase, seen))


def _snapshot(value):
    """A host read's value, copied (on numpy, ``to_numpy`` hands back the array itself, which may change later)."""
    import numpy as np

    return np.array(value, copy=True) if isinstance(value, np.ndarray) else value


class Recorded(NamedTuple):
    """What one traced step left: the recording, and the arrays the caller's names point at afterwards."""

    recording: Recording
    inputs: list  # array numbers of the step's inputs, in order
    live: dict  # array number -> the tensor (parameter, buffer, constant) whose .array it was when the step began
    outputs: dict  # what the caller reads back -> its array number ("loss")
    grads: dict  # leaf tensor -> array number of the .grad the step gave it
    rebound: dict  # tensor -> array number, for each live tensor whose .array the step replaced
    ops: list  # the tracer's ops: Call.op indexes them (the op a call ran inside, or whose backward it ran)


class watching:
    """``with watching(device, tracer.ops) as rec:`` — the device's ops compute through a Recording while inside."""

    def __init__(self, device, ops=()):
        self.device, self.ops = device, ops

    def __enter__(self) -> Recording:
        self.real = self.device.backend
        self.recording = Recording(self.real, self.ops)
        object.__setattr__(self.device, "backend", self.recording)
        return self.recording

    def __exit__(self, *exc):
        object.__setattr__(self.device, "backend", self.real)
        return False


def record_step(model, loss_fn, inputs, tracer):
    """Run one eager step — ``loss_fn(model(x), *targets)``, then the engine's backward — while the
    device's backend is recorded and the tracer watches the forward's ops. Returns (loss, Recorded).

    The optimizer's update is not recorded: the program calls the optimizer itself, per parameter."""
    return record(lambda x, *targets: loss_fn(model(x), *targets), inputs, tracer, model, "loss")


def record(fn, inputs, tracer, model, backward):
    """``out = fn(*inputs)`` recorded, then (``backward``) the engine's backward: ``"loss"`` from the scalar
    ``out``, ``"seeded"`` from the gradient given as the last input (a piece of a model: its input's
    gradient is an output too, ``input_grad``), None for none (a forward alone, run under no_grad).
    ``model``'s parameters and buffers are the live tensors. Returns (out, Recorded)."""
    from ..autograd.grad_mode import no_grad

    live = _live_tensors(model)
    args = inputs[:-1] if backward == "seeded" else inputs
    with watching(inputs[0].device, tracer.ops) as rec:
        numbers = [rec.number(x.array) for x in inputs]
        start = [(t, t.array, rec.number(t.array)) for t in live]
        if backward is None:
            with no_grad(), tracer:
                out = fn(*args)
        else:
            with tracer:
                out = fn(*args)
            rec.phase = "backward"
            op_of = tracer.op_of_node()
            done = len(rec.calls)
            seed = inputs[-1] if backward == "seeded" else None
            for step in backward_steps(out, seed):  # the engine's own backward, one node at a time
                op = op_of.get(step.node)
                if op is not None:
                    rec.calls[done:] = [call._replace(op=op.index) for call in rec.calls[done:]]
                done = len(rec.calls)
    captured = [t for t in tracer.externals.values() if all(t is not s for s, _, _ in start)]
    live_numbers = {n: t for t, a, n in start if t.array is a}
    made = set().union(*(_numbers(call.results) for call in rec.calls))
    for t in captured:
        n = rec.known(t.array)
        if n is not None and n not in made:
            live_numbers[n] = t
    leaves = [t for t in live + captured if t.requires_grad and t.grad_fn is None and t.grad is not None]
    grads = {t: rec.known(t.grad.array) for t in leaves}  # (None: a .grad made outside the calls)
    rebound = {t: rec.known(t.array) for t, a, _ in start if t.array is not a}
    outputs = {}
    if backward is None:  # a forward alone: each tensor it returns (in a tuple, list or dict: tensors_in)
        outputs.update({f"out:{i}": rec.known(t.array) for i, t in enumerate(tensors_in(out))})
    elif hasattr(out, "array") and rec.known(out.array) is not None:
        outputs["loss"] = rec.known(out.array)
    if backward == "seeded" or (backward == "loss" and inputs[0].requires_grad):
        outputs["input_grad"] = rec.known(inputs[0].grad.array) if inputs[0].grad is not None else None
    return out, Recorded(rec, numbers, live_numbers, outputs, grads, rebound, tracer.ops)


def tensors_in(value) -> list:
    """The tensors in a function's result, depth first: the result itself, or those in its tuples,
    lists and dicts (``with_tensors`` puts new ones in their places)."""
    if hasattr(value, "array"):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    return []


def with_tensors(value, tensors):
    """``value`` with its tensors (``tensors_in`` order) replaced by the next of the iterator ``tensors``."""
    if hasattr(value, "array"):
        return next(tensors)
    if isinstance(value, (tuple, list)):
        items = [with_tensors(v, tensors) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {k: with_tensors(v, tensors) for k, v in value.items()}
    return value


def _live_tensors(model) -> list:
    """The model's parameters and buffers: read afresh at the start of every run of the program."""
    if not hasattr(model, "parameters"):
        return []
    return list(model.parameters()) + list(model.buffers())


def _numbers(value):
    if isinstance(value, ArrayRef):
        return {value.index}
    if value.__class__ in (tuple, list):
        return set().union(*(_numbers(v) for v in value)) if value else set()
    return set()

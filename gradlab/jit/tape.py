"""A tape: the operations of one forward pass, in the order they ran — a straight-line program.

Each entry names the Function that ran, its arguments (numbered values or plain constants), its
outputs, their shapes and dtypes, and the module it ran in. There is no graph and no Python
control flow left: replaying the tape runs the same ops again on new inputs of the same shapes.
"""

from __future__ import annotations

from ..autograd.function import TrackedTensor
from ..autograd.grad_mode import no_grad
from . import serialize
from .entries import Ref, TapeOp, Value, dtype_name  # noqa: F401  (TapeOp, Value: the tape's parts, named here too)


class Tape:
    """What ``gl.jit.trace`` returns: ``len(tape)`` ops, ``count_ops()``, a listing, ``replay`` and ``save``."""

    def __init__(self, ops, values, inputs, output, externals, escapes=(), modules=None):
        self.ops = list(ops)
        self.values = dict(values)
        self.inputs = list(inputs)
        self.output = output  # the function's result with Refs in place of tensors
        self.externals = dict(externals)  # value id -> the live tensor (parameters, buffers, constants)
        self.escapes = tuple(escapes)  # (what, module) of values that left the ops outside any op
        self.modules = dict(modules or {})  # dotted path -> class name of each module that ran ("" is the root)

    # --- reading it ----------------------------------------------------------------------------------

    def __len__(self):
        return len(self.ops)

    def __iter__(self):
        return iter(self.ops)

    def __getitem__(self, i):
        return self.ops[i]

    @property
    def signature(self) -> tuple:
        """(shape, dtype, device) of each input: what ``replay`` accepts."""
        return tuple((self.values[v].shape, self.values[v].dtype, self._device_of(v)) for v in self.inputs)

    def _device_of(self, vid):
        for op in self.ops:
            if vid in op.refs():
                return op.device
        return "cpu"

    def count_ops(self) -> dict:
        """How many times each operation ran, in the order each first appeared."""
        counts: dict = {}
        for op in self.ops:
            counts[op.name] = counts.get(op.name, 0) + 1
        return counts

    def listing(self) -> str:
        """One line per op: ``%7 = Linear(%6, fc.weight, fc.bias)  -> (128, 10) float32   # fc``."""
        lines = [f"Tape: {len(self.ops)} ops on inputs " + ", ".join(
            f"%{v} {_shape(self.values[v].shape)} {self.values[v].dtype}" for v in self.inputs)]
        for op in self.ops:
            shapes = ", ".join(f"{_shape(s)} {d}" for s, d in zip(op.out_shapes, op.dtypes) if s is not None)
            where = f"   # {op.module}" if op.module else ""
            lines.append(f"{op.index:4d}  {self.line(op)}  -> {shapes}{where}")
        lines.append(f"      return {_show(self.output, self._names())}")
        return "\n".join(lines)

    def line(self, op) -> str:
        """One op as an assignment, parameters and buffers by name: ``%7 = Linear(%6, fc.weight, fc.bias)``."""
        names = self._names()
        outs = ", ".join(f"%{o}" for o in op.outputs if o is not None) or "_"
        return f"{outs} = {op.name}({', '.join(_show(a, names) for a in op.args)})"

    def _names(self) -> dict:
        return {v.id: v.name for v in self.values.values() if v.kind in ("parameter", "buffer")}

    def __str__(self):
        return self.listing()

    def __repr__(self):
        counts = ", ".join(f"{name} ×{n}" for name, n in self.count_ops().items())
        return f"<gradlab.jit.Tape: {len(self.ops)} ops ({counts})>"

    # --- running it again ----------------------------------------------------------------------------

    def check_signature(self, inputs, what: str = "replay") -> None:
        """A clear error unless the inputs have the shapes, dtypes and devices the tape was traced with."""
        if len(inputs) != len(self.inputs):
            raise TypeError(f"Tape.{what}: the tape was traced with {len(self.inputs)} input(s), got {len(inputs)}")
        for i, (x, (shape, dtype, device)) in enumerate(zip(inputs, self.signature)):
            if not isinstance(x, TrackedTensor):
                raise TypeError(f"Tape.{what}: input {i} must be a tensor, got {type(x).__name__}")
            got = (tuple(x.shape), dtype_name(x), str(x.device))
            if got != (shape, dtype, device):
                raise ValueError(
                    f"Tape.{what}: input {i} is {_shape(got[0])} {got[1]} on {got[2]}, but the tape was traced with "
                    f"{_shape(shape)} {dtype} on {device}; trace again for these inputs (gl.jit.trace(fn, *inputs))")

    def replay(self, *inputs):
        """Run the ops again on new inputs of the same signature, building no autograd graph.

        Parameters and buffers are read as they are now, so a replay after a training step uses
        the new weights (as calling the model would).
        """
        self.check_signature(inputs)
        env = dict(self.externals)
        env.update(zip(self.inputs, inputs))
        with no_grad():
            for op in self.ops:
                out = op.function.apply(*_fill(op.args, env))
                for vid, o in zip(op.outputs, out if isinstance(out, tuple) else (out,)):
                    if vid is not None:
                        env[vid] = o
        return _fill_one(self.output, env)

    # --- keeping it ----------------------------------------------------------------------------------

    def save(self, path) -> None:
        """Write the tape as data: a .npz of its constants' arrays and a JSON description (no pickle)."""
        serialize.save_tape(self, path)

    @staticmethod
    def load(path) -> "Tape":
        """Read a tape written by ``save``; its Functions are looked up by name (gradlab's own, or importable)."""
        return Tape(*serialize.load_parts(path))


def _fill(args, env):
    return [_fill_one(a, env) for a in args]


def _fill_one(a, env):
    if a.__class__ is Ref:
        return env[a.value]
    if isinstance(a, (tuple, list)):
        return _rebuild(a, [_fill_one(x, env) for x in a])
    if isinstance(a, dict):
        return {k: _fill_one(v, env) for k, v in a.items()}
    return a


def _rebuild(like, items):
    """A tuple, list or named tuple of the same type as ``like``, holding ``items``."""
    if isinstance(like, tuple) and hasattr(like, "_fields"):
        return type(like)(*items)
    return type(like)(items)


def _shape(shape) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def _show(a, names) -> str:
    if a.__class__ is Ref:
        return names.get(a.value, f"%{a.value}")
    if isinstance(a, tuple) and hasattr(a, "_fields"):  # a named tuple (a convolution's geometry): its own repr
        text = repr(a)
        return text if len(text) <= 60 else text[:57] + "..."
    if isinstance(a, tuple):
        return "(" + ", ".join(_show(x, names) for x in a) + ("," if len(a) == 1 else "") + ")"
    if isinstance(a, list):
        return "[" + ", ".join(_show(x, names) for x in a) + "]"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_show(v, names)}" for k, v in a.items()) + "}"
    text = repr(a)
    return text if len(text) <= 40 else text[:37] + "..."

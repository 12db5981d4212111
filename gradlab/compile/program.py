"""The compiled program: a flat list of instructions over numbered slots, and the builder that writes it.

An instruction is ``outs = fn(*ins)`` on backend arrays: one backend call the recorded step made
(``lower.py``), a leaf's ``.grad`` or update (``leaves.py``), or a fused run of them (``fuse.py``).
Running a program is one loop over the list: no graph, no Tensors, no decisions. Everything was
decided when it was lowered — which calls remain, where each gradient lands, which buffers are
reused — and the passes in ``passes.py`` edit the list before it runs.
"""

from __future__ import annotations

from typing import NamedTuple


class Slot(NamedTuple):
    """What a slot will hold: an array of this shape and dtype (native), or another object a call returned
    (shape None: a tuple of arrays, a host value)."""

    shape: tuple | None
    dtype: object
    name: str


class Instr:
    """``outs = fn(*ins)``. ``pure`` instructions may be dropped when nobody reads their outputs;
    ``fresh`` ones return new memory of their own (never a view of an input), so their output may
    be handed to the user (a ``.grad``) without a copy; a not-fresh one may return a view of its
    inputs or an object that keeps them (``holders`` of the inputs at positions ``aliases``). ``ufunc``
    marks one elementwise numpy ufunc, which the buffer pass may run in place into a buffer (``fn`` then
    also accepts ``out=``)."""

    __slots__ = ("fn", "ins", "outs", "name", "op", "pure", "fresh", "ufunc", "phase", "many", "aliases", "holders")

    def __init__(self, fn, ins, outs, name, op=None, pure=True, fresh=True, ufunc=None, phase="forward", many=None,
                 aliases=None, holders=None):
        self.fn, self.ins, self.outs, self.name, self.op = fn, tuple(ins), tuple(outs), name, op
        self.pure, self.fresh, self.ufunc, self.phase = pure, fresh, ufunc, phase
        self.aliases = aliases  # positions of the inputs a not-fresh output may hold or view (None: all)
        self.holders = holders  # the outputs that may (a view, a tuple holding them; None: all)
        self.many = len(self.outs) != 1 if many is None else many  # fn returns a sequence, one item per output

    def __repr__(self):
        outs = ", ".join(f"%{o}" for o in self.outs)
        ins = ", ".join(f"%{i}" if i is not None else "None" for i in self.ins)
        return f"{outs} = {self.name}({ins})"


class Builder:
    """Writes a program: ``slot()`` names a new value, ``emit()`` appends an instruction computing some."""

    def __init__(self, backend):
        self.backend = backend
        self.slots: list = []
        self.instrs: list = []
        self.constants: dict = {}  # slot -> a value fixed when lowered (host data the step turned into an array)
        self.phase = "forward"

    def slot(self, shape, dtype, name: str = "") -> int:
        self.slots.append(Slot(tuple(shape) if shape is not None else None, dtype, name))
        return len(self.slots) - 1

    def like(self, slot: int, name: str = "") -> int:
        """A new slot of the same shape and dtype as ``slot``."""
        s = self.slots[slot]
        return self.slot(s.shape, s.dtype, name or s.name)

    def emit(self, fn, ins, outs, name, **flags) -> tuple:
        """Append ``outs = fn(*ins)``; ``outs`` are slots made beforehand. Returns them."""
        flags.setdefault("phase", self.phase)
        self.instrs.append(Instr(fn, ins, outs, name, **flags))
        return tuple(outs)


class Program:
    """A lowered list of instructions and the slots they use. ``run(env)`` executes it in place."""

    def __init__(self, builder: Builder, inputs, externals, results):
        self.slots = builder.slots
        self.instrs = builder.instrs
        self.constants = builder.constants
        self.inputs = list(inputs)  # slots the caller fills with the input arrays, in order
        self.externals = dict(externals)  # slot -> live tensor read at the start of each run (parameters)
        self.results = dict(results)  # what the caller reads back: name -> slot
        self.backend = builder.backend
        self.buffers: dict = {}  # slot -> preallocated array it writes into (from passes.assign_buffers)
        self.handed: dict = {}  # result name -> (tensor, "grad" or "array"): what the caller of a pure program writes
        self.impure = None  # why it cannot run as one pure function (mx.compile), when it cannot
        self._steps = None

    def environment(self) -> list:
        env = [None] * len(self.slots)
        for slot, value in self.constants.items():
            env[slot] = value
        return env

    def compile_steps(self) -> None:
        """Turn each instruction into a closure over its slot numbers (the loop then does no lookups),
        paired with the slots it reads for the last time: the run lets go of them right after."""
        from .passes import lifetimes

        frees: dict = {}
        for slot, n in lifetimes(self, views=False).items():
            frees.setdefault(n, []).append(slot)
        self._steps = [(_step(ins, self.buffers.get(ins.outs[0]) if not ins.many else None),
                        tuple(frees.get(n, ()))) for n, ins in enumerate(self.instrs)]

    def run(self, env: list) -> list:
        for slot, tensor in self.externals.items():
            env[slot] = tensor.array
        return self.run_steps(env)

    def run_steps(self, env: list) -> list:
        """The instructions alone, on an environment whose inputs and parameters are filled in."""
        if self._steps is None:
            self.compile_steps()
        for step, frees in self._steps:
            step(env)
            for slot in frees:
                env[slot] = None
        return env

    def listing(self) -> str:
        lines = []
        for i, ins in enumerate(self.instrs):
            buffer = " (into a reused buffer)" if ins.outs and ins.outs[0] in self.buffers else ""
            ops = [i.op for i in getattr(ins.fn, "instrs", None) or (ins,) if i.op is not None]  # (a fused run: its steps')
            ops = list({id(op): op for op in ops if op.name not in ins.name}.values())  # a primitive: the ops it serves
            source = ("   ← " + ", ".join(op.name + (f" in {op.module}" if op.module else "") for op in ops)) if ops else ""
            lines.append(f"{i:4d} {ins.phase[:3]}  {ins!r}{buffer}{source}")
        return "\n".join(lines)

    def __len__(self):
        return len(self.instrs)


def _step(ins: Instr, buffer):
    """The closure that runs one instruction on the environment list."""
    fn, outs = ins.fn, ins.outs
    args = ins.ins
    if not outs:  # an instruction for its effect (adding into a .grad)
        if len(args) == 1:
            (a,) = args
            return lambda env: fn(env[a])
        return lambda env: fn(*[env[i] for i in args])
    if buffer is not None:
        (o,) = outs
        if len(args) == 1:
            (a,) = args
            return lambda env: env.__setitem__(o, fn(env[a], out=buffer))
        if len(args) == 2:
            a, b = args
            return lambda env: env.__setitem__(o, fn(env[a], env[b], out=buffer))
        return lambda env: env.__setitem__(o, fn(*[env[i] for i in args], out=buffer))
    if not ins.many:
        (o,) = outs
        if len(args) == 1:
            (a,) = args
            return lambda env: env.__setitem__(o, fn(env[a]))
        if len(args) == 2:
            a, b = args
            return lambda env: env.__setitem__(o, fn(env[a], env[b]))
        return lambda env: env.__setitem__(o, fn(*[env[i] if i is not None else None for i in args]))

    if len(outs) == 2 and None not in args:  # a call with two results (an array and what its backward keeps)
        o0, o1 = outs
        if len(args) == 1:
            (a,) = args

            def run_one(env):
                env[o0], env[o1] = fn(env[a])
            return run_one
        if len(args) == 2:
            a, b = args

            def run_two(env):
                env[o0], env[o1] = fn(env[a], env[b])
            return run_two

    def run(env):
        results = fn(*[env[i] if i is not None else None for i in args])
        for o, r in zip(outs, results):
            env[o] = r
    return run

"""Lowering: a recorded step (``trace.py``) becomes a program (``program.py``), one instruction per call.

Each backend call the step made is an instruction ``outs = method(*ins)``, with whatever was not
an array (an axis, a Python number, a dtype) bound into it as it was. Where each array came from
decides what its slot is: the step's inputs are filled in per run, the model's parameters and
buffers are read live at the start of each run, and a call's result is that instruction's output.
Nothing here knows what any op computes or how it differentiates: the engine's own backward was
one of the things recorded. What is left to decide is where each ``.grad`` is final (then it is
handed to the leaf, and the optimizer may move it) and which values a run must keep for the user.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np

from . import kernels, passes
from .leaves import before_copy, hand_to_leaves
from .program import Builder, Instr, Program
from .trace import HOST_READS, RANDOM, WRITES, ArrayRef, written


class Unrecorded(Exception):
    """The record cannot be this step's program: an array reached its calls that none of them made and
    that is no input, parameter or buffer (some op computed it on ``.array`` with numpy directly, or took
    a captured tensor's ``.array`` as an index), or a guard could stop a run half done (``LateGuard``).
    The step then runs eagerly, saying why."""


class GuardFailed(Exception):
    """A value the traced step read back to the host came out different: the program no longer says what the code does."""


def lower(recorded, backend, *, optimizer=None, fuse: bool = True, buffers: bool = True, pure: bool = False) -> Program:
    """The program of one recorded training step: its calls, each leaf's ``.grad`` where it is final, and
    (with an optimizer that moves each parameter on its own) each parameter's update right after.

    ``pure`` (MLX, whose program ``mx.compile`` traces as one function): the gradients and rebound
    arrays come back as results instead (``program.handed`` says whose), for the caller to write. A
    program that cannot be pure (``program.impure`` says why) is made as on the other backends, and
    runs instruction by instruction."""
    rec = recorded.recording
    b = Builder(backend)
    sources = _Sources(b, rec, recorded.live)
    inputs = [sources.input(n, f"input {i}") for i, n in enumerate(recorded.inputs)]
    checks = iter(rec.checks)
    check = next(checks, None)
    numpy_arrays = backend.name in passes.OUT_BACKENDS
    for position, call in enumerate(rec.calls):
        while check is not None and check[0] <= position:
            _emit_check(b, sources, check)
            check = next(checks, None)
        b.phase = call.phase
        _emit_call(b, sources, call, rec, numpy_arrays, recorded.ops)
    while check is not None:
        _emit_check(b, sources, check)
        check = next(checks, None)

    now = _writes_as_values(b, numpy_arrays)
    impure = _impure(b.instrs, set(inputs) | set(sources.externals)) if pure else None
    pure = pure and impure is None
    b.phase = "backward"
    if any(n is None for n in list(recorded.outputs.values()) + list(recorded.grads.values())
           + list(recorded.rebound.values())):
        raise Unrecorded("a .grad, output or buffer of the step was given an array made outside the backend's calls")
    results = {name: now(sources.slot(before_copy(rec, n) if name == "input_grad" else n))
               for name, n in recorded.outputs.items()}
    grads = {leaf: now(sources.slot_of[before_copy(rec, n)]) for leaf, n in recorded.grads.items()}
    handed = {}  # result name -> (tensor, "grad" or "array"): what a pure program's caller writes back
    if pure:
        for k, (leaf, slot) in enumerate(grads.items()):
            results[f"grad:{k}"], handed[f"grad:{k}"] = slot, (leaf, "grad")
    else:
        hand_to_leaves(b, grads, optimizer, {id(t): slot for slot, t in sources.externals.items()})
    b.phase = "update"
    for k, (tensor, n) in enumerate(recorded.rebound.items()):
        slot = now(sources.slot(n))
        results[f"rebind:{k}"] = slot  # handed to a tensor: never a buffer the next run writes over
        if pure:
            handed[f"rebind:{k}"] = (tensor, "array")
        else:
            b.instrs.append(Instr(Rebind(tensor), (slot,), (), "rebind .array", pure=False, phase="update"))
    _hoist_constants(b, set(results.values()))
    program = Program(b, inputs, sources.externals, results)
    program.handed, program.impure = handed, impure
    _refuse_late_guards(program)
    passes.run_all(program, fuse=fuse, buffers=buffers)
    return program


# --- where an array comes from ------------------------------------------------------------------


class _Sources:
    """Array number -> slot. A number no call made is a source: an input, a live tensor's array (read at
    the start of each run), or host data given to ``asarray`` (a constant). Any other is an array the
    record cannot account for (``Unrecorded``)."""

    def __init__(self, b, rec, live):
        self.b, self.rec, self.live = b, rec, live
        self.slot_of: dict = {}
        self.externals: dict = {}
        self.where = "the step"  # the call being lowered (named in an Unrecorded error)
        self.host_data = False  # whether it takes host data (asarray): an array from outside is a constant then

    def input(self, n, name) -> int:
        """The slot of the step's input (a second one that was the same array is read as the first: the
        signature keeps programs apart by which inputs are one array)."""
        a = self.rec.arrays[n]
        slot = self.b.slot(a.shape, a.dtype, name)
        self.slot_of.setdefault(n, slot)
        return slot

    def slot(self, n) -> int:
        slot = self.slot_of.get(n)
        if slot is None:
            a = self.rec.arrays[n]
            tensor = self.live.get(n)
            slot = self.slot_of[n] = self.b.slot(a.shape, a.dtype, "parameter")
            if tensor is None and self.host_data:  # asarray(numpy data): a constant of the program, as traced
                self.b.constants[slot] = a
                return slot
            if tensor is None:
                raise Unrecorded(f"an array of shape {tuple(a.shape)}, passed to {self.where}, was made outside the "
                                 "backend's calls")
            self.externals[slot] = tensor
        return slot

    def new(self, n) -> int:
        a = self.rec.arrays[n]
        slot = self.slot_of[n] = self.b.slot(getattr(a, "shape", None), getattr(a, "dtype", None), "")
        return slot


# --- one call, one instruction ------------------------------------------------------------------


def _emit_call(b, sources, call, rec, numpy_arrays, ops) -> None:
    op = ops[call.op] if call.op is not None and call.op < len(ops) else None
    sources.where = f"{call.name}" + (f" (in {op.name})" if op is not None else f" ({call.phase})")
    sources.host_data = call.name == "asarray"
    ins: list = []
    args = _holes(call.args, sources, ins)
    kwargs = {k: _holes(v, sources, ins) for k, v in call.kwargs.items()}
    if call.name in RANDOM:
        args = tuple(_live_generator(a) for a in args)
    made = [r.index for r in _refs(call.results) if r.index not in sources.slot_of]
    if call.name in HOST_READS:
        fn = Guard(call.method, args, kwargs, call.seen, call.name)
        outs = [sources.new(n) for n in made]
        b.emit(fn, ins, outs, f"guard {call.name}", pure=False, fresh=not outs)
        return
    effect = call.name in WRITES or call.name in RANDOM
    if not made and not effect:
        return  # it handed back what it was given (a reshape to the same shape): nothing to run
    outs = [sources.new(n) for n in made]
    single = isinstance(call.results, ArrayRef) and len(outs) == 1
    method = kernels.faster(b.backend, call.name, call.args, lambda ref: rec.arrays[ref.index]) or call.method
    fn = _bind(method, args, kwargs, ins)
    flags = {}
    if single and numpy_arrays:
        flags = _as_ufunc(b.backend, call, args, kwargs, ins, rec) or {}
        fn = flags.pop("fn", fn)
    elif not single and outs:
        fn = _Flatten(fn, call.results, set(made))
    if call.name == "getitem" and _masked(call.args, rec):
        fn = ShapeGuard(fn, rec.arrays[made[0]].shape)  # x[mask]: as many elements as the mask has True
    fresh = _fresh(call, rec, made, numpy_arrays)
    b.emit(fn, ins, outs, call.name, op=op, pure=not effect, fresh=fresh, many=not single, **flags)


def _emit_check(b, sources, check) -> None:
    _, validate, refs = check
    ins: list = []
    args = _holes(refs, sources, ins)
    b.emit(_bind(functools.partial(validate, b.backend), args, {}, ins), ins, (), f"check {validate.__name__}",
           pure=False)


class _Hole:
    """Where the k-th array input goes in a call's arguments."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k


def _holes(value, sources, ins):
    """The arguments with each array replaced by a hole; the arrays' slots appended to ``ins``."""
    if isinstance(value, ArrayRef):
        ins.append(sources.slot(value.index))
        return _Hole(len(ins) - 1)
    if value.__class__ in (tuple, list):
        return value.__class__(_holes(v, sources, ins) for v in value)
    return value


def _refs(value):
    if isinstance(value, ArrayRef):
        yield value
    elif value.__class__ in (tuple, list):
        for v in value:
            yield from _refs(v)


def _fill(value, arrays):
    if value.__class__ is _Hole:
        return arrays[value.k]
    if value.__class__ in (tuple, list):
        return value.__class__(_fill(v, arrays) for v in value)
    if value.__class__ is _LiveGenerator:
        return value.now()
    return value


def _bind(method, args, kwargs, ins):
    """``fn(*arrays)`` calling ``method`` with the arrays put back in their places."""
    plain = not kwargs and all(a.__class__ is _Hole for a in args) and [a.k for a in args] == list(range(len(ins)))
    if plain:
        return method
    return functools.partial(_call, method, args, kwargs)


def _call(method, args, kwargs, *arrays):
    return method(*_fill(args, arrays), **{k: _fill(v, arrays) for k, v in kwargs.items()})


class _Flatten:
    """A call whose result is a tuple (or holds several arrays): its new arrays, in order, as a list."""

    def __init__(self, fn, results, made):
        self.fn, self.results, self.made = fn, results, made
        self.__name__ = getattr(fn, "__name__", "call")

    def __call__(self, *arrays):
        return [a for a, ref in zip(_leaves(self.fn(*arrays), self.results), _refs(self.results))
                if ref.index in self.made]


def _leaves(value, shape):
    if isinstance(shape, ArrayRef):
        yield value
    elif shape.__class__ in (tuple, list):
        for v, s in zip(value, shape):
            yield from _leaves(v, s)


class _LiveGenerator:
    """The default generator's numpy Generator, looked up when the call runs (``manual_seed`` replaces it)."""

    def now(self):
        from ..generator import default_generator

        return default_generator._rng


def _live_generator(arg):
    from ..generator import default_generator

    return _LiveGenerator() if arg is default_generator._rng else arg


def _fresh(call, rec, made, numpy_arrays) -> bool:
    """Whether every new result is memory of its own (not a view of an argument, nor an object holding one)."""
    if not made:
        return True
    if not numpy_arrays:
        return call.name not in VIEWS
    arrays = [rec.arrays[r.index] for r in _refs(call.args)] + [rec.arrays[r.index] for v in call.kwargs.values()
                                                               for r in _refs(v)]
    return not any(np.may_share_memory(rec.arrays[n], a) for n in made for a in arrays
                   if isinstance(rec.arrays[n], np.ndarray) and isinstance(a, np.ndarray))


VIEWS = frozenset({"reshape", "permute", "broadcast_to", "getitem", "diagonal", "sliding_windows", "to_numpy",
                   "astype"})


# --- elementwise calls the passes can fuse and run in place -------------------------------------

_UFUNCS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum}
_SCALAR_FORMULAS = {"add": ("{} + {c}", "{c} + {}"), "sub": ("{} - {c}", "{c} - {}"), "mul": ("{} * {c}", "{c} * {}")}


def _as_ufunc(backend, call, args, kwargs, ins, rec):
    """numpy's own ufunc (``out=`` capable) for an add, sub, mul, maximum, minimum (ReLU, clamp) or neg the
    backend does as numpy does (and the backend's sigmoid, which takes ``out=`` as a ufunc does), when every
    array has the result's dtype (or, multiplied, is a bool mask): the buffer pass may then run it in place,
    and the fusion pass fold + − × of one dtype into one kernel (not max/min: numba's max does not pass a
    NaN on as numpy's does). None for any other call."""
    from ..backends.numpy_backend import NumpyBackend

    name = call.name
    if kwargs or getattr(type(backend), name, None) is not getattr(NumpyBackend, name, object()):
        return None
    out = rec.arrays[call.results.index]
    if not isinstance(out, np.ndarray) or out.dtype.kind not in "fc":
        return None
    arrays = [rec.arrays[r.index] for r in _refs(call.args)]
    mixed = any(a.dtype != out.dtype for a in arrays)
    if mixed and not (name == "mul" and all(a.dtype == out.dtype or a.dtype == np.bool_ for a in arrays)):
        return None  # (a mask times a gradient is the float's own loop: into a float buffer, the same bits)
    if name == "neg" and len(args) == 1:
        return {"fn": functools.partial(np.negative, out=...), "ufunc": True}
    if name == "sigmoid" and len(args) == 1:  # numpy_kernels.sigmoid: four in-place passes, into a buffer too
        return {"fn": functools.partial(NumpyBackend.sigmoid, out=...), "ufunc": True}
    if name not in _UFUNCS or len(args) != 2:
        return None
    holes = [a.__class__ is _Hole for a in args]
    if all(holes) and [a.k for a in args] == [0, 1]:
        return {"fn": functools.partial(_UFUNCS[name], out=...), "ufunc": True}
    number = args[1] if holes[0] else args[0]
    if sum(holes) != 1 or isinstance(number, bool) or not isinstance(number, (int, float)):
        return None
    formulas = _SCALAR_FORMULAS.get(name)
    return {"fn": ScalarUfunc(_UFUNCS[name], number, formulas[0 if holes[0] else 1] if formulas else None, holes[0]),
            "ufunc": True}


class ScalarUfunc:
    """``a ∘ number`` (``first``) or ``number ∘ a`` with numpy's ufunc, into ``out`` when given. ``formula``
    and ``number`` tell the fusion pass the step it does (``{}`` the array, ``{c}`` the number; no formula:
    not fused)."""

    def __init__(self, ufunc, number, formula, first):
        self.ufunc, self.number, self.formula, self.first = ufunc, number, formula, first
        self.__name__ = ufunc.__name__

    def __call__(self, a, out=...):
        return self.ufunc(a, self.number, out=out) if self.first else self.ufunc(self.number, a, out=out)


# --- in-place arithmetic on the program's own values -----------------------------------------------

_IN_PLACE = {"iadd": "add", "isub": "sub", "imul": "mul"}


def _writes_as_values(b, numpy_arrays):
    """``iadd(a, b)`` into an array only this program made, that no view or saved object can see, is
    ``a' = a + b`` with every later reader of a reading a' instead: the same numbers, now an elementwise
    value the buffer pass may run in place again and the fusion pass may fold into a kernel (a bias added
    after a matmul, the engine summing gradients one by one). Returns the slot that holds a value now."""
    from ..backends.numpy_backend import NumpyBackend

    renamed: dict = {}

    def now(slot):
        while slot in renamed:
            slot = renamed[slot]
        return slot

    if not numpy_arrays:
        return now
    seen_through = {i for ins in b.instrs if not ins.fresh for i in ins.ins}  # viewed, or held by a ctx
    made_by: dict = {}
    for n, ins in enumerate(b.instrs):
        ins.ins = tuple(now(i) for i in ins.ins)
        for o in ins.outs:
            made_by[o] = ins
        name = _IN_PLACE.get(ins.name)
        if name is None or len(ins.ins) not in (1, 2) or getattr(type(b.backend), ins.name) is not getattr(
                NumpyBackend, ins.name):
            continue
        a = ins.ins[0]
        maker, slot = made_by.get(a), b.slots[a]
        if maker is None or not maker.fresh or maker.many or a in seen_through or slot.dtype.kind not in "fc":
            continue  # an input, parameter or constant; a view; an array something else can see
        form = _value_form(b, ins, name, slot)
        if form is None:
            continue
        out = b.like(a)
        b.instrs[n] = Instr(form, ins.ins, (out,), name, op=ins.op, phase=ins.phase, ufunc=True)
        made_by[out] = b.instrs[n]
        renamed[a] = out
    return now


def _value_form(b, ins, name, slot):
    """numpy's ufunc computing ``a ∘ other`` as a new value of a's shape and dtype, or None."""
    fn = ins.fn
    if len(ins.ins) == 2:
        other = b.slots[ins.ins[1]]
        if other.dtype != slot.dtype or np.broadcast_shapes(other.shape, slot.shape) != slot.shape:
            return None
        return functools.partial(_UFUNCS[name], out=...)
    number = fn.args[1][1] if isinstance(fn, functools.partial) and fn.func is _call else None
    if isinstance(number, bool) or not isinstance(number, (int, float)):
        return None
    return ScalarUfunc(_UFUNCS[name], number, _SCALAR_FORMULAS[name][0], True)


# --- constants ------------------------------------------------------------------------------------

CREATION = frozenset({"zeros", "ones", "full", "arange"})  # (not empty: its contents are whatever memory held)


def _hoist_constants(b, results) -> None:
    """A filled array made from no array (the ones of ``1 - y`` in sigmoid's backward, a sum's gradient
    seed) is the same every run: made once now, a constant of the program, unless some instruction writes
    into it or a view of it, or hands it out (a result, a rebound buffer) — anything that could change it."""
    for n, ins in enumerate(b.instrs):
        if ins.name in CREATION and not ins.ins and ins.pure and len(ins.outs) == 1 and not _changed(b.instrs, ins.outs[0], results):
            b.constants[ins.outs[0]] = ins.fn()
            b.instrs[n] = None
    b.instrs[:] = [ins for ins in b.instrs if ins is not None]


def _changed(instrs, slot, results) -> bool:
    """Whether any instruction may write into ``slot``'s memory (directly or through a view), or it (or a
    view of it) leaves the program."""
    roots = {slot}
    for ins in instrs:
        if ins is None:
            continue
        if not ins.pure and any(i in roots for i in ins.ins):  # (a write, a .grad, a rebind, a guard: all kept out)
            return True
        if not ins.fresh and any(i in roots for i in ins.ins):
            roots.update(ins.outs)
    return bool(roots & results)


# --- host reads, checks, rebinding ---------------------------------------------------------------


class Guard:
    """A host read run again: the value must be what the traced step saw, or the run stops (``GuardFailed``)."""

    def __init__(self, method, args, kwargs, seen, name):
        self.fn = functools.partial(_call, method, args, kwargs)
        self.seen, self.name = seen, name

    def __call__(self, *arrays):
        value = self.fn(*arrays)
        if not _same(value, self.seen):
            raise GuardFailed(f"a value read back to the host ({self.name}) changed between calls with the same "
                              "input shapes, and what the step did next depended on it")
        return value


class ShapeGuard:
    """A call whose result's shape depends on values (indexing by a mask): the shape must stay the traced one."""

    def __init__(self, fn, shape):
        self.fn, self.shape = fn, tuple(shape)
        self.__name__ = "getitem"

    def __call__(self, *arrays):
        out = self.fn(*arrays)
        if tuple(out.shape) != self.shape:
            raise GuardFailed(f"x[mask] gave shape {tuple(out.shape)} where the traced step's gave {self.shape}: an output "
                              "shape changed between calls with the same input shapes (it depends on the values)")
        return out


def _masked(args, rec) -> bool:
    """Whether a getitem's index holds a bool array (a mask), whose count of True decides the result's shape."""
    return any(getattr(rec.arrays[r.index], "dtype", None) == np.bool_ for r in _refs(args[1:]))


def _same(value, seen) -> bool:
    if isinstance(seen, np.ndarray):
        value = np.asarray(value)
        return (value.shape == seen.shape and value.dtype == seen.dtype
                and bool(np.array_equal(value, seen, equal_nan=value.dtype.kind in "fc")))
    if isinstance(seen, numbers.Number) and isinstance(value, numbers.Number):
        return value == seen or (value != value and seen != seen)
    return value == seen


class Rebind:
    """``tensor.array = value``: the step gave a live tensor (a running statistic) a new array."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __call__(self, a):
        self.tensor.array = a


class LateGuard(Unrecorded):
    """A guard comes after the program has written into a parameter, buffer or input (a BatchNorm's
    running mean before a max-pool's NaN check): failing, it would stop a run with that write done."""


def _refuse_late_guards(program) -> None:
    """A guard after the program has changed a parameter, buffer or input could stop a run half done,
    leaving that change behind: such a step runs eagerly instead."""
    sources = set(program.externals) | set(program.inputs)
    changed = False
    for ins in program.instrs:
        if isinstance(ins.fn, (Guard, ShapeGuard)) and changed:
            raise LateGuard(f"{ins.name} comes after a write into a parameter, buffer or input")
        if ins.phase == "update" or (not ins.pure and ins.ins and ins.name in WRITES and written(ins.name, ins.ins) in sources):
            changed = True


def _impure(instrs, given) -> str | None:
    """Why the program cannot be one pure function (mx.compile's, traced once), or None: it writes into a
    parameter, buffer or input it was given — inside a traced function the write would stay there
    (BatchNorm's running statistics) — or draws random numbers, which the trace would freeze."""
    for ins in instrs:
        if ins.name in WRITES and ins.ins and written(ins.name, ins.ins) in given:
            return f"{ins.name} writes into a parameter, buffer or input"
        if ins.name in RANDOM:
            return f"{ins.name} draws random numbers"
    return None

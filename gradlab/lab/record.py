"""``record()``: watch a forward pass and remember every operation, with the module it ran in.

Inside ``with gl.lab.record() as rec:`` an observer on ``Function.apply`` (the engine's one
recording point) keeps each operation as it runs, and global module hooks keep the stack of
modules being called, so each operation knows its module path (``encoder.layers.0.attn``) and
the line of your code that called it. It also reads the clock at every event, so each
operation knows how long it took (``Recording.forward_seconds``; ``gl.lab.profile`` builds on it).

It sees the thread that started it, as PyTorch's modes do: other threads' operations are theirs.
In-place writes are noted with the version of each tensor involved, so the graph can show what the
forward really computed, and say so where a value changed after the forward used it.
"""

from __future__ import annotations

import functools
import linecache
import os
import sys
import time
from threading import get_ident
from typing import Any, NamedTuple

from ..autograd import observers
from ..autograd.function import TrackedTensor
from ..nn.modules import module as module_hooks

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class RecordedOp(NamedTuple):
    """One operation of a recorded forward: what ran, in which module call, from which line."""

    record: observers.OpRecord
    group: str | None
    where: tuple  # (filename, line number) of the user's code, or ("", 0)
    versions: tuple = ((), ())  # the version of each input and each output as it ran (None: not a tensor)

    @property
    def source(self) -> str:
        """'In[3], line 2' for a notebook cell, 'train.py, line 40' for a file."""
        filename, line = self.where
        return f"{short_filename(filename)}, line {line}" if filename else ""

    @property
    def code(self) -> str:
        filename, line = self.where
        return linecache.getline(filename, line).strip() if filename else ""


class RecordedWrite(NamedTuple):
    """An in-place write seen while recording: ``target``'s memory took ``source``'s values, before op
    number ``position`` ran. ``x.add_(y)`` is two: a copy of x's old value is made (target: the copy,
    source: x), then ``old + y`` is written into x (target: x, source: the result)."""

    position: int
    target: Any
    source: Any
    target_version: int  # the versions just after the write
    source_version: int


class ModuleCall:
    """One call of a module while recording: a group of the graph."""

    __slots__ = ("id", "name", "calls", "parent", "module")

    def __init__(self, id, name, calls, parent, module):
        self.id, self.name, self.calls, self.parent, self.module = id, name, calls, parent, module

    @property
    def label(self) -> str:
        """'layers.0 (Linear)'; a module's second call says so."""
        kind = type(self.module).__name__
        label = f"{self.name} ({kind})" if self.name != kind else kind
        return label + (f" · call {self.calls}" if self.calls > 1 else "")


class Recording:
    """What ``record()`` saw: the operations in order, the module calls, and parameter names.

    Pass it to ``gl.lab.GraphView`` or ``gl.lab.BackpropStepper``. It keeps the tensors of the
    forward alive, so the graph can show their values. While the forward runs it only notes what
    happened (cheaply); names and paths are worked out afterwards, when first asked for.
    """

    def __init__(self, synchronize: bool = False):
        self._ops: list = []  # (OpRecord, index of the module call it ran in or -1, (file, line))
        self._versions: list = []  # per op: the versions of its inputs, then of its outputs, as it ran
        self._writes: list = []  # RecordedWrite of each in-place write outside an op's forward
        self._thread = None  # the thread that records: only its operations and module calls are noted
        self._seconds: list = []  # forward seconds of each op in _ops: from the previous event to it
        self._last = 0.0  # the clock when the previous event's bookkeeping ended
        self._nested = 0.0  # seconds spent noting nested operations since then: not the op's own time
        self.synchronize = synchronize  # wait for an async/lazy device before each reading (profiling)
        self._calls: list = []  # (module, index of the calling module call or -1)
        self._stack: list = []  # indices into _calls of the modules running now
        self._frames: list = []  # beside _stack: [each one's Module.__call__ frame, where it was called or None]
        self._arguments: dict = {}  # id -> each tensor passed to a module call (kept, so that no id is reused)
        self._handles = []
        self.active = False
        self.torch = None  # what it saw of PyTorch (pytorch/record.py), when the user's code had imported torch

    @functools.cached_property
    def calls(self) -> dict:
        """call id -> ModuleCall, in the order the modules were called."""
        self._finished()
        return {call.id: call for call in self._named_calls}

    @functools.cached_property
    def ops(self) -> list:
        """The operations in the order they ran, each with its module call and source line."""
        self._finished()
        ids = [call.id for call in self._named_calls]
        return [RecordedOp(record, ids[call] if call >= 0 else None, where,
                           (tuple(versions[:len(record.inputs)]), tuple(versions[len(record.inputs):])))
                for (record, call, where), versions in zip(self._ops, self._versions)]

    def passed_to_a_module(self, x) -> bool:
        """Whether ``x`` went into some module call as an argument (data given to the model), rather than being
        made inside a module's forward (a dropout mask, a constant)."""
        return self._arguments.get(id(x)) is x

    @property
    def writes(self) -> list:
        """The in-place writes the forward made, in order (``RecordedWrite``), each placed between two ops."""
        self._finished()
        return list(self._writes)

    @functools.cached_property
    def _named_calls(self) -> list:
        """Name every module call by its path (``encoder.layers.0.attn``); a second call gets ``#2``.

        A module inside a container its parent never calls (``self.layers[0]`` of a ModuleList) is
        named through it (``layers.0``); one its caller does not own is named by its class. Two
        different modules that would get the same path are told apart (``Linear_2``).
        """
        named, owners, counts = [], {}, {}
        for module, parent_index in self._calls:
            parent = named[parent_index] if parent_index >= 0 else None
            kind = type(module).__name__
            name = (_descendant_name(parent.module, module) if parent is not None else None) or kind
            path = name if parent is None or parent.parent is None else f"{parent.id}.{name}"
            same_path = owners.setdefault(path, [])
            if not any(m is module for m in same_path):
                same_path.append(module)
            n = next(i for i, m in enumerate(same_path) if m is module)
            if n:
                path, name = f"{path}_{n + 1}", f"{name}_{n + 1}"
            calls = counts[path] = counts.get(path, 0) + 1
            call_id = path if calls == 1 else f"{path}#{calls}"
            named.append(ModuleCall(call_id, name, calls, parent.id if parent is not None else None, module))
        return named

    @functools.cached_property
    def param_names(self) -> dict:
        """id(parameter) -> (its name by module path, the group it belongs to).

        Calls nest and come in order, so a submodule's call names its parameters after its parent's
        did: each ends in the innermost module called that holds it (``self.out_proj.weight``, used
        by attention without calling ``out_proj``, stays with the attention).
        """
        names: dict = {}
        for call in self.calls.values():
            if call.calls == 1:
                prefix = call.id if call.parent is not None else ""
                for name, param in call.module.named_parameters():
                    names[id(param)] = (f"{prefix}.{name}" if prefix else name, call.id)
        return names

    @functools.cached_property
    def buffer_names(self) -> dict:
        """id(buffer) -> (its name by module path, the group it belongs to), as ``param_names`` names
        parameters: a BatchNorm's ``running_mean`` is data its module keeps, not data given to the model."""
        names: dict = {}
        for call in self.calls.values():
            if call.calls == 1:
                prefix = call.id if call.parent is not None else ""
                for name, buffer in call.module.named_buffers():
                    names[id(buffer)] = (f"{prefix}.{name}" if prefix else name, call.id)
        return names

    def _finished(self) -> None:
        if self.active:
            raise RuntimeError("gl.lab: the recording is still running; read it after the `with gl.lab.record()` block")

    @property
    def output(self):
        """The last tensor the forward produced that has a graph (usually the loss)."""
        if self.torch is not None and self.torch.noted and not self._ops:  # a PyTorch forward (pytorch/record.py)
            return self.torch.output
        last = None
        for record, _, _ in reversed(self._ops):
            for out in record.outputs:
                if hasattr(out, "grad_fn"):
                    if out.grad_fn is not None:
                        return out
                    last = last if last is not None else out
        return last

    @property
    def forward_seconds(self) -> list:
        """Seconds each operation took, in the order of ``ops``: the time from the previous event (the
        previous operation, or entering or leaving a module) to this one, less the recording's own
        bookkeeping; so an operation's time includes the Python of yours that led to it."""
        return list(self._seconds)

    def op_records(self):
        """The ``OpRecord`` of each operation, in the order they ran: cheap, and readable while recording
        (``ops`` adds each one's module call and source line, once the block has ended)."""
        return (record for record, _, _ in self._ops)

    def __len__(self):
        return len(self._ops) + (len(self.torch) if self.torch is not None else 0)

    def __repr__(self):
        state = "recording" if self.active else "finished"
        return f"<gradlab.lab.Recording: {len(self)} operations in {len(self._calls)} module calls, {state}>"

    # --- what the observers call: note the event, no more --------------------------------------------

    def _on_op(self, record: observers.OpRecord) -> None:
        if self.synchronize:
            _wait_for(record.outputs)
        now = _clock()
        if not record.nested:
            where = _where(self._frames)
            self._ops.append((record, self._stack[-1] if self._stack else -1, where))
            self._versions.append(_versions(record.inputs + record.outputs))
            self._seconds.append(now - self._last - self._nested)
            self._nested = 0.0
            self._last = _clock()
        else:  # inside another op's forward: its time belongs to that op, but our bookkeeping does not
            self._nested += _clock() - now

    def _on_write(self, target, source) -> None:
        started = _clock()
        if not observers.inside_op():  # (inside an op's forward, that op is what the graph shows)
            self._writes.append(RecordedWrite(len(self._ops), target, source, target.version, source.version))
        self._nested += _clock() - started  # the next op's time is the write's too, but not this bookkeeping

    def _on_enter(self, module, args) -> None:
        if get_ident() != self._thread:
            return
        stack, calls = self._stack, self._calls
        calls.append((module, stack[-1] if stack else -1))
        stack.append(len(calls) - 1)
        self._frames.append([sys._getframe(1), None])  # Module.__call__'s frame, and where it was called (asked once)
        for a in args:
            if isinstance(a, TrackedTensor):
                self._arguments[id(a)] = a
        self._nested = 0.0  # a module call starts: the next operation's time starts here
        self._last = _clock()

    def _restart_clock(self) -> None:
        """A module call starts or ends: the next operation's time starts here."""
        self._nested = 0.0
        self._last = _clock()

    def _on_exit(self, module, args, output) -> None:
        # called also when the module's forward raised (always_call): pop up to this module's call
        if get_ident() != self._thread:
            return
        stack, calls = self._stack, self._calls
        if stack and calls[stack[-1]][0] is module:
            stack.pop()  # (almost always: the innermost call is the one ending)
            self._frames.pop()
        else:
            for i in range(len(stack) - 1, -1, -1):
                if calls[stack[i]][0] is module:
                    del stack[i:], self._frames[i:]
                    break
        self._nested = 0.0  # a module call ends: the next operation's time starts here
        self._last = _clock()


class record:
    """Context manager: ``with gl.lab.record() as rec: loss = loss_fn(model(x), y)``.

    ``synchronize=True`` waits for an asynchronous or lazy device (CUDA, MLX) after every operation,
    so that its time is the device's work and not only the queueing of it (numpy: no difference).
    """

    def __init__(self, synchronize: bool = False):
        if not isinstance(synchronize, bool):
            raise TypeError(f"gl.lab.record(synchronize=...) takes True or False (wait for the device after each "
                            f"operation, to time it); got {type(synchronize).__name__} {synchronize!r}")
        self.recording = Recording(synchronize)

    def __enter__(self) -> Recording:
        rec = self.recording
        if rec.active or rec._ops:
            raise RuntimeError("gl.lab.record(): this recorder was already used; start a new one with gl.lab.record()")
        rec._thread = get_ident()
        rec._handles = [
            observers.subscribe(rec._on_op),
            observers.watch_writes(rec._on_write),
            module_hooks.register_module_forward_pre_hook(rec._on_enter),
            module_hooks.register_module_forward_hook(rec._on_exit, always_call=True),
        ]
        rec.active = True
        _note_frameworks()
        if "torch" in sys.modules:  # the user's code uses PyTorch: watch it too (pytorch/record.py)
            from .pytorch.record import watch_torch
            rec._handles += watch_torch(rec, _not_users)
        rec._restart_clock()
        return rec

    def __exit__(self, *exc):
        rec = self.recording
        for handle in rec._handles:
            handle.remove()
        rec._handles, rec._stack, rec.active = [], [], False
        return False


_clock = time.perf_counter


def _versions(values) -> list:
    """The version of each tensor among ``values`` now (None for a value that is not a tensor): an operation's
    inputs and outputs as it ran, so that the graph can tell a value changed in place after the forward used it."""
    versions = []
    for value in values:  # (a plain loop: cheaper than a comprehension for an op's few values)
        versions.append(value.version if isinstance(value, TrackedTensor) else None)
    return versions


def _wait_for(outputs) -> None:
    """Let the device finish (or, lazily, compute) what this operation queued before the clock is read."""
    for out in outputs:
        device = getattr(out, "device", None)
        if device is not None and hasattr(out, "array"):
            device.backend.synchronize()
            return


def _descendant_name(parent, child) -> str | None:
    """The dotted name of ``child`` below ``parent`` (``layers.0``), searching breadth first."""
    queue = [("", parent)]
    while queue:
        prefix, module = queue.pop(0)
        for name, sub in module.named_children():
            dotted = prefix + name
            if sub is child:
                return dotted
            queue.append((dotted + ".", sub))
    return None


_code_is_ours: dict = {}
# Code that runs the user's code but is not theirs: a forward started by a click in a widget (the
# comm's callback, on the kernel's thread) has only these below gradlab, and then no line is shown.
_FRAMEWORKS = ("ipywidgets", "ipykernel", "comm", "traitlets", "anywidget", "tornado", "asyncio", "threading",
               "concurrent")
_not_users = (PACKAGE_DIR,)


_modules_seen = -1  # len(sys.modules) when the frameworks were last noted: a module imported since may be one


def _note_frameworks() -> None:
    """Add the frameworks imported so far to what is not the user's code: a package's folder, a
    single-file module's file (their code objects exist only once imported: _code_is_ours stays right)."""
    global _not_users, _modules_seen
    if len(sys.modules) == _modules_seen:
        return  # nothing imported since: the same frameworks (this runs at every record(): it costs a tiny forward 5%)
    _modules_seen = len(sys.modules)
    places = {PACKAGE_DIR}
    for name in _FRAMEWORKS:
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            places.add(os.path.dirname(file) + os.sep if os.path.basename(file) == "__init__.py" else file)
    _not_users = tuple(sorted(places))


def _where(calls: list = ()) -> tuple:
    """(filename, line) where the user's code asked for this operation: the innermost frame that is
    not gradlab's (nor a framework's), or ("", 0) when there is none.

    ``calls``: [frame, where] of each module call running (record's ``_frames``). Reaching the frame of the
    innermost one's ``Module.__call__`` with only gradlab's frames on the way, the answer is where that module
    was called: worked out once per call (its caller waits on that line until the call returns), so an
    operation of a layer deep in a model looks at a few frames, not at every frame up to the user's code."""
    # Skip this, _on_op, observers.notify and the op's apply (apply calls notify, which calls each observer):
    # each frame looked at becomes a frame object, and one costs 3% of recording an add.
    return _user_frame(sys._getframe(4), calls, len(calls) - 1)


def _user_frame(frame, calls, innermost: int) -> tuple:
    """The innermost frame from ``frame`` outwards that is not ours, as (filename, line); the module calls
    ``calls[:innermost + 1]`` answer for their frames (and remember the answer)."""
    stop = calls[innermost][0] if innermost >= 0 else None
    while frame is not None:
        if frame is stop:
            call = calls[innermost]
            if call[1] is None:
                call[1] = _user_frame(frame.f_back, calls, innermost - 1)
            return call[1]
        code = frame.f_code
        ours = _code_is_ours.get(code)
        if ours is None:
            ours = _code_is_ours[code] = code.co_filename.startswith(_not_users)
        if not ours:
            return code.co_filename, frame.f_lineno
        frame = frame.f_back
    return "", 0


def short_filename(filename: str) -> str:
    """A notebook cell is named as Jupyter shows it (In[3]); a file by its base name."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if shell is not None:
        named = shell.compile.format_code_name(filename)
        if named is not None:
            return named[1]
    return os.path.basename(filename)

"""``record()``: watch a forward pass and remember every operation, with the module it ran in.

Inside ``with gl.lab.record() as rec:`` an observer on ``Function.apply`` (the engine's one
recording point) keeps each operation as it runs, and global module hooks keep the stack of
modules being called, so each operation knows its module path (``encoder.layers.0.attn``) and
the line of your code that called it.
"""

from __future__ import annotations

import linecache
import os
import sys
from dataclasses import dataclass

from ..autograd import observers
from ..autograd.function import Function
from ..nn.modules import module as module_hooks

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


@dataclass
class RecordedOp:
    """One operation of a recorded forward: what ran, in which module call, from which line."""

    record: observers.OpRecord
    group: str | None
    source: str
    code: str


@dataclass
class ModuleCall:
    """One call of a module while recording: a group of the graph."""

    id: str
    label: str
    parent: str | None
    module: object


class Recording:
    """What ``record()`` saw: the operations in order, the module calls, and parameter names.

    Pass it to ``gl.lab.GraphView`` or ``gl.lab.BackpropStepper``. It keeps the tensors of the
    forward alive, so the graph can show their values.
    """

    def __init__(self):
        self.ops: list[RecordedOp] = []
        self.calls: dict[str, ModuleCall] = {}
        self.param_names: dict[int, tuple[str, str]] = {}  # id(tensor) -> (name, group id)
        self._stack: list[ModuleCall] = []
        self._call_count: dict[str, int] = {}
        self._handles = []
        self.active = False

    @property
    def output(self):
        """The last tensor the forward produced (usually the loss)."""
        for op in reversed(self.ops):
            for out in op.record.outputs:
                if hasattr(out, "grad_fn"):
                    return out
        return None

    def __len__(self):
        return len(self.ops)

    def __repr__(self):
        state = "recording" if self.active else "finished"
        return f"<gradlab.lab.Recording: {len(self.ops)} operations in {len(self.calls)} module calls, {state}>"

    # --- what the observers call ------------------------------------------------------------------

    def _on_op(self, record: observers.OpRecord) -> None:
        nested, source, code = _where()
        if not nested:
            group = self._stack[-1].id if self._stack else None
            self.ops.append(RecordedOp(record, group, source, code))

    def _on_enter(self, module, args) -> None:
        parent = self._stack[-1] if self._stack else None
        name = _child_name(parent.module, module) if parent is not None else None
        if parent is None:
            path = type(module).__name__
        elif name is None:  # called from a parent that does not own it (a module passed in): name it by class
            path = f"{parent.id}.{type(module).__name__}" if parent.parent is not None else type(module).__name__
        else:
            path = name if parent.parent is None else f"{parent.id}.{name}"
        calls = self._call_count[path] = self._call_count.get(path, 0) + 1
        call_id = path if calls == 1 else f"{path}#{calls}"
        shown = name or path.rsplit(".", 1)[-1]
        label = f"{shown} ({type(module).__name__})" if shown != type(module).__name__ else shown
        if calls > 1:
            label += f" · call {calls}"
        call = ModuleCall(call_id, label, parent.id if parent is not None else None, module)
        self.calls[call_id] = call
        self._stack.append(call)
        qualified = call_id if parent is not None else ""
        for pname, param in module._parameters.items():
            if param is not None and id(param) not in self.param_names:
                self.param_names[id(param)] = (f"{qualified}.{pname}" if qualified else pname, call_id)

    def _on_exit(self, module, args, output) -> None:
        # pop up to this module's call: a forward that raised inside a child left that child on the stack
        for i in range(len(self._stack) - 1, -1, -1):
            if self._stack[i].module is module:
                del self._stack[i:]
                break


class record:
    """Context manager: ``with gl.lab.record() as rec: loss = loss_fn(model(x), y)``."""

    def __init__(self):
        self.recording = Recording()

    def __enter__(self) -> Recording:
        rec = self.recording
        if rec.active or rec.ops:
            raise RuntimeError("gl.lab.record(): this recorder was already used; start a new one with gl.lab.record()")
        rec._handles = [
            observers.subscribe(rec._on_op),
            module_hooks.register_module_forward_pre_hook(rec._on_enter),
            module_hooks.register_module_forward_hook(rec._on_exit),
        ]
        rec.active = True
        return rec

    def __exit__(self, *exc):
        rec = self.recording
        for handle in rec._handles:
            handle.remove()
        rec._handles, rec._stack, rec.active = [], [], False
        return False


def _child_name(parent, child) -> str | None:
    for name, module in parent._modules.items():
        if module is child:
            return name
    return None


_code_is_ours: dict = {}
_APPLY_CODE = Function.apply.__func__.__code__


def _where() -> tuple[bool, str, str]:
    """(nested, "file:line", code): where the user's code asked for this operation.

    ``nested`` is True for an operation run inside another Function's forward (a custom
    Function built from tensor operations): the graph shows only the outer one, as PyTorch does.
    """
    frame = sys._getframe(3).f_back  # skip _on_op, notify and this operation's own apply
    source = code_line = None
    while frame is not None:
        code = frame.f_code
        if code is _APPLY_CODE:
            return True, "", ""
        if source is None:
            ours = _code_is_ours.get(code)
            if ours is None:
                ours = _code_is_ours[code] = code.co_filename.startswith(_PACKAGE_DIR)
            if not ours:
                filename, line = code.co_filename, frame.f_lineno
                source, code_line = f"{_short(filename)}:{line}", linecache.getline(filename, line).strip()
        frame = frame.f_back
    return False, source or "", code_line or ""


def _short(filename: str) -> str:
    """A notebook cell's file is a temporary path: show only its base name."""
    return os.path.basename(filename)

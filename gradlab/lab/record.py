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
from typing import NamedTuple

from ..autograd import observers
from ..autograd.function import Function
from ..nn.modules import module as module_hooks

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


class RecordedOp(NamedTuple):
    """One operation of a recorded forward: what ran, in which module call, from which line."""

    record: observers.OpRecord
    group: str | None
    where: tuple  # (filename, line number) of the user's code, or ("", 0)

    @property
    def source(self) -> str:
        """'In[3], line 2' for a notebook cell, 'train.py, line 40' for a file."""
        filename, line = self.where
        return f"{_short(filename)}, line {line}" if filename else ""

    @property
    def code(self) -> str:
        filename, line = self.where
        return linecache.getline(filename, line).strip() if filename else ""


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
    forward alive, so the graph can show their values.
    """

    def __init__(self):
        self.ops: list[RecordedOp] = []
        self.calls: dict[str, ModuleCall] = {}
        self.param_names: dict[int, tuple[str, str]] = {}  # id(tensor) -> (name, group id)
        self._stack: list[ModuleCall] = []
        self._call_count: dict[str, int] = {}
        self._paths: dict = {}  # (parent call id, id(module)) -> (path, name)
        self._roots: dict = {}  # class name -> the distinct top-level modules of that class
        self._handles = []
        self.active = False

    @property
    def output(self):
        """The last tensor the forward produced that has a graph (usually the loss)."""
        last = None
        for op in reversed(self.ops):
            for out in op.record.outputs:
                if hasattr(out, "grad_fn"):
                    if out.grad_fn is not None:
                        return out
                    last = last if last is not None else out
        return last

    def __len__(self):
        return len(self.ops)

    def __repr__(self):
        state = "recording" if self.active else "finished"
        return f"<gradlab.lab.Recording: {len(self.ops)} operations in {len(self.calls)} module calls, {state}>"

    # --- what the observers call ------------------------------------------------------------------

    def _on_op(self, record: observers.OpRecord) -> None:
        where = _where()
        if where is not None:
            group = self._stack[-1].id if self._stack else None
            self.ops.append(RecordedOp(record, group, where))

    def _on_enter(self, module, args) -> None:
        parent = self._stack[-1] if self._stack else None
        key = (parent.id if parent is not None else None, id(module))
        named = self._paths.get(key)
        if named is None:
            named = self._paths[key] = self._path_of(parent, module)
        path, name = named
        calls = self._call_count[path] = self._call_count.get(path, 0) + 1
        call_id = path if calls == 1 else f"{path}#{calls}"
        call = ModuleCall(call_id, name, calls, parent.id if parent is not None else None, module)
        self.calls[call_id] = call
        self._stack.append(call)
        if calls == 1:  # name the module's parameters after its first call
            qualified = call_id if parent is not None else ""
            for pname, param in module._parameters.items():
                if param is not None and id(param) not in self.param_names:
                    self.param_names[id(param)] = (f"{qualified}.{pname}" if qualified else pname, call_id)

    def _path_of(self, parent, module) -> tuple:
        """(module path, short name): the attribute names from the outermost module down."""
        kind = type(module).__name__
        if parent is None:  # a second top-level module of the same class is a different group
            roots = self._roots.setdefault(kind, [])
            if module not in roots:
                roots.append(module)
            n = next(i for i, m in enumerate(roots) if m is module)
            name = kind if n == 0 else f"{kind}_{n + 1}"
            return name, name
        name = _child_name(parent.module, module)
        if name is None:  # called from a module that does not own it (passed in): named by its class
            name = kind
        return (name if parent.parent is None else f"{parent.id}.{name}"), name

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


def _where():
    """(filename, line) where the user's code asked for this operation; None when it is nested.

    An operation run inside another Function's forward (a custom Function built from tensor
    operations) is nested: the graph shows only the outer one, as PyTorch does.
    """
    frame = sys._getframe(3).f_back  # skip _on_op, notify and this operation's own apply
    where = None
    while frame is not None:
        code = frame.f_code
        if code is _APPLY_CODE:
            return None
        if where is None:
            ours = _code_is_ours.get(code)
            if ours is None:
                ours = _code_is_ours[code] = code.co_filename.startswith(_PACKAGE_DIR)
            if not ours:
                where = (code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return where or ("", 0)


def _short(filename: str) -> str:
    """A notebook cell is named as Jupyter shows it (In[3]); a file by its base name."""
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    if shell is not None:
        named = shell.compile.format_code_name(filename)
        if named is not None:
            return named[1]
    return os.path.basename(filename)

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
        self._owners: dict = {}  # path -> the distinct modules that claimed it
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
        if calls == 1:
            self._name_parameters(module, call_id if parent is not None else "", call_id)

    def _name_parameters(self, module, prefix: str, call_id: str) -> None:
        """Name the module's parameters (its submodules' too) by their path, and put them in its group.

        Calls nest, so a submodule's call comes later and takes its own parameters: each ends in the
        innermost module called that holds it (``self.out_proj.weight``, used by attention without
        calling ``out_proj``, stays with the attention).
        """
        for name, param in module.named_parameters():
            self.param_names[id(param)] = (f"{prefix}.{name}" if prefix else name, call_id)

    def _path_of(self, parent, module) -> tuple:
        """(module path, short name): the attribute names from the outermost module down.

        A module inside a container its parent never calls (``self.layers[0]`` of a ModuleList) is
        named through it (``layers.0``); one that its caller does not own is named by its class.
        Two different modules that would get the same path are told apart (``Linear_2``).
        """
        kind = type(module).__name__
        name = _descendant_name(parent.module, module) if parent is not None else None
        name = name or kind
        path = name if parent is None or parent.parent is None else f"{parent.id}.{name}"
        owners = self._owners.setdefault(path, [])
        if not any(m is module for m in owners):
            owners.append(module)
        n = next(i for i, m in enumerate(owners) if m is module)
        if n:
            path, name = f"{path}_{n + 1}", f"{name}_{n + 1}"
        return path, name

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


def _descendant_name(parent, child) -> str | None:
    """The dotted name of ``child`` below ``parent`` (``layers.0``), searching breadth first."""
    queue = [("", parent)]
    while queue:
        prefix, module = queue.pop(0)
        for name, sub in module._modules.items():
            if sub is None:
                continue
            dotted = prefix + name
            if sub is child:
                return dotted
            queue.append((dotted + ".", sub))
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

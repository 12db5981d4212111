"""``record()`` on PyTorch: watch each torch call as it runs, with its module and your line of code.

A ``TorchFunctionMode`` sees every torch function and Tensor method your code calls (``F.linear``,
``x.relu()``, ``loss_fn(...)``), at the level you wrote them, and the tensors they return, whose
``grad_fn`` is the node PyTorch's backward will run. PyTorch's global module hooks give the module
path, as gradlab's do for gradlab modules: both feed the one ``Recording``. A call that makes no
``grad_fn`` (a shape, an initialisation under no_grad) is no part of the backward graph and is not kept.

Values are copied only where needed: each tensor's version (``t._version``, bumped by every
in-place write) is noted as the call ran, and a tensor about to be written in place that the
forward already used is copied first, so the graph can show what the forward really computed.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import time
from typing import NamedTuple

import torch
from torch import Tensor, is_grad_enabled
from torch._C._autograd import _get_sequence_nr as next_node_number
from torch.overrides import TorchFunctionMode

TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_clock = time.perf_counter


class TorchCall(NamedTuple):
    """One torch call of a recorded forward, as it ran."""

    function: object  # what was called: torch.nn.functional.linear, Tensor.relu, ...
    inputs: tuple  # the tensors it was given (in its arguments, and one level into lists)
    before: tuple  # each input's grad_fn and version as the call took it (a call writing it in place changes both)
    outputs: tuple  # the tensors it returned
    made: tuple  # each output's grad_fn and version just after the call
    call: int  # the index of the module call it ran in (Recording._calls), or -1
    where: tuple  # (filename, line) of your code that made it, or ("", 0)
    seconds: float  # how long the call itself took
    first: int  # the sequence number PyTorch gave the first node this call made (or would have)
    args: tuple  # the call's own arguments and keywords, to run it again ("check this node")
    kwargs: dict

    @property
    def name(self) -> str:
        return getattr(self.function, "__name__", None) or str(self.function)


class TorchWatcher(TorchFunctionMode):
    """Notes each torch call that makes a backward node, into ``rec.torch`` (a ``TorchRecording``).
    (Torch function modes are per thread: other threads' calls are not seen.)"""

    def __init__(self, rec, torch_recording, not_users=()):
        super().__init__()
        self.stack, self.calls, self.noted = rec._stack, torch_recording, torch_recording.noted
        self.not_users = (*not_users, TORCH_DIR)  # where code is not the user's: gradlab's, frameworks', torch's
        self.lines = {}  # id(frame) -> (frame, your line above it): see where()
        self.synchronize = rec.synchronize and torch.cuda.is_available()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # kept short: it runs for every torch call of the forward (docs/lab.md has the overhead it adds)
        if kwargs:
            target = _written(func, args, kwargs)
        else:
            kwargs = {}
            target = args[0] if _IN_PLACE[func] and args and isinstance(args[0], Tensor) else None
        if target is not None:  # its grad_fn and version change: note them, and keep what the forward saw
            written = (target.grad_fn, target._version)
            if is_grad_enabled():
                self.calls.copies[(id(target), written[1])] = target.detach().clone()
        first = next_node_number()
        started = _clock()
        out = func(*args, **kwargs)
        if self.synchronize:
            torch.cuda.synchronize()
        seconds = _clock() - started
        if isinstance(out, Tensor) and (target is None or out is target):  # most calls: one tensor out
            fn = out.grad_fn
            if fn is None:
                return out
            outputs, made = (out,), [(fn, out._version)]
        else:
            outputs = _tensors_out(out)
            if target is not None and not any(o is target for o in outputs):  # x[0] = 1 returns None: x it made
                outputs += (target,)
            made = [(o.grad_fn, o._version) for o in outputs]
            if all(fn is None for fn, _ in made):
                return out
        # an input's grad_fn and version change only if the call writes it: read them now, but the target's before
        inputs = _tensors_in(args + tuple(kwargs.values()) if kwargs else args)
        before = [written if t is target else (t.grad_fn, t._version) for t in inputs]
        stack = self.stack
        self.noted.append((func, inputs, before, outputs, made, stack[-1] if stack else -1,
                           where(self.not_users, self.lines), seconds, first, args, kwargs))
        return out


class TorchRecording:
    """The torch part of a ``Recording``: the calls in order, the tensors given to modules, and the
    copies kept of values that an in-place write overwrote."""

    def __init__(self):
        self.first = next_node_number()  # nodes numbered below this were made before the recording
        self.noted: list = []  # each call as a plain tuple, cheap to note: ``events`` names the fields
        self.arguments: dict = {}  # id -> each torch tensor given to a module call (kept: no id is reused)
        self.copies: dict = {}  # (id(tensor), version) -> a copy of what it held at that version

    @functools.cached_property
    def events(self) -> list:
        """The calls that made backward nodes, in order (``TorchCall``); read once the recording has ended."""
        return [TorchCall(*noted) for noted in self.noted]

    def passed_to_a_module(self, t) -> bool:
        return self.arguments.get(id(t)) is t

    def holder(self, t, version):
        """``t`` if it still holds what it held at ``version``, else the copy kept of that, else None."""
        if version is None or t._version == version:
            return t
        return self.copies.get((id(t), version))

    @property
    def output(self):
        """The last tensor with a grad_fn the forward made (usually the loss)."""
        for event in reversed(self.events):
            for out, (fn, _) in zip(reversed(event.outputs), reversed(event.made)):
                if fn is not None:
                    return out
        return None

    def __len__(self):
        return len(self.noted)


class _Handle:
    def __init__(self, remove):
        self.remove = remove


def watch_torch(rec, not_users=()) -> list:
    """Start watching PyTorch for ``rec``: its calls (a TorchFunctionMode) and module calls (global
    hooks); ``not_users`` are the folders and files whose code is not the user's (record.py's, to
    which torch's is added). Returns the handles whose ``remove()`` stops it."""
    calls = rec.torch = TorchRecording()
    hooks = torch.nn.modules.module
    mode = TorchWatcher(rec, calls, not_users)
    arguments, stack, lines = calls.arguments, rec._stack, mode.lines

    def enter(module, args):
        rec._on_enter(module, args)
        for a in args:
            if isinstance(a, Tensor):
                arguments[id(a)] = a

    def leave(module, args, output):
        rec._on_exit(module, args, output)
        if not stack:  # the outermost module returned: the frames where() remembered are done
            lines.clear()

    handles = [hooks.register_module_forward_pre_hook(enter),
               hooks.register_module_forward_hook(leave, always_call=True)]
    mode.__enter__()
    return [_Handle(lambda: mode.__exit__(None, None, None)), *handles]


def _tensors_in(values) -> tuple:
    """The tensors among a call's arguments, and in the lists among them (``torch.cat([a, b])``)."""
    found = [v for v in values if isinstance(v, Tensor)]
    if len(found) < len(values):
        for value in values:
            if isinstance(value, (list, tuple)):
                found.extend(v for v in value if isinstance(v, Tensor))
    return tuple(found)


IN_PLACE_OPERATORS = {f"__i{op}__" for op in ("add", "sub", "mul", "matmul", "truediv", "floordiv", "mod", "pow",
                                              "and", "or", "xor", "lshift", "rshift")} | {"__setitem__"}


def _tensors_out(out) -> tuple:
    """The tensors a call returned: one, or those in the tuple or list it returned (a Size is no such tuple)."""
    if isinstance(out, Tensor):
        return (out,)
    if isinstance(out, (list, tuple)) and type(out) is not torch.Size:
        return tuple(o for o in out if isinstance(o, Tensor))
    return ()


class _InPlace(dict):
    """function -> whether its name says it writes its first argument: ``add_``, ``__iadd__``, ``__setitem__``."""

    def __missing__(self, func):
        name = getattr(func, "__name__", "") or ""
        self[func] = in_place = (name.endswith("_") and not name.startswith("_")) or name in IN_PLACE_OPERATORS
        return in_place


_IN_PLACE = _InPlace()


def _written(func, args, kwargs):
    """The tensor this call is about to write in place: ``x.add_(y)``, ``x += y``, ``x[0] = 1``,
    ``F.relu(x, inplace=True)``, ``torch.add(a, b, out=c)``; None for most calls."""
    out = kwargs.get("out")
    if isinstance(out, Tensor):
        return out
    if (_IN_PLACE[func] or kwargs.get("inplace") is True) and args and isinstance(args[0], Tensor):
        return args[0]
    return None


_code_is_ours: dict = {}
MOST_FRAMES_KEPT = 4096
RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def where(not_users: tuple = (TORCH_DIR,), lines=None) -> tuple:
    """(filename, line) of the innermost frame whose file is not in ``not_users`` (torch's, gradlab's, a
    framework's): your code that made the call (the same idea as gradlab's ``record._where``).

    Each frame looked at becomes a frame object, and a call inside ``nn.Linear`` looks through a dozen of
    torch's (its forward, the module machinery, a Sequential's...): ``lines`` remembers the answer for each
    torch frame passed. While that frame runs, the frames above it wait, so the answer stays right; the
    frame object is kept with it, so that its id cannot be another frame's.
    """
    frame = sys._getframe(2)
    passed = []
    while frame is not None:
        known = lines.get(id(frame)) if lines is not None else None
        if known is not None:
            found = known[1]
            break
        code = frame.f_code
        ours = _code_is_ours.get(code)
        if ours is None:
            ours = _code_is_ours[code] = code.co_filename.startswith(not_users)
        if not ours:
            found = (code.co_filename, frame.f_lineno)
            break
        if not code.co_flags & RESUMABLE:  # a generator resumed elsewhere has another caller then
            passed.append(frame)
        frame = frame.f_back
    else:
        found = ("", 0)
    if lines is not None and passed:
        if len(lines) > MOST_FRAMES_KEPT:  # (calls outside any module: no module's return empties it)
            lines.clear()
        for frame in passed:
            lines[id(frame)] = (frame, found)
    return found

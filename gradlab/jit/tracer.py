"""The tracer: run a function once and write down every operation it asks for, in order.

It listens where the lab's graph capture listens, to the observers in ``Function.apply``. Each
tensor it meets becomes a numbered *value*: an input, a parameter or buffer of the module, a
constant captured from outside, or the output of an earlier op. What it cannot see — a value
leaving the ops through ``.item()`` or ``bool()``, a random draw outside any op — it notes as an
*escape*, because a replay could not repeat what Python did with it. It sees its own thread only, as
PyTorch's modes do: what other threads run meanwhile is not part of the call.
"""

from __future__ import annotations

import warnings
from threading import get_ident

from ..autograd import observers
from ..autograd.function import TrackedTensor
from ..nn.modules import module as module_hooks
from .entries import Ref, TapeOp, Value, dtype_name
from .tape import Tape, _rebuild
from .write_back import WriteBack


class Tracer:
    """Collects the ops of one call. ``with Tracer(root) as t: out = fn(*inputs)``, then ``t.tape(out)``."""

    def __init__(self, root=None, inputs=()):
        self.values: dict = {}  # value id -> Value
        self.ops: list = []
        self.externals: dict = {}  # value id -> the tensor itself (parameters, buffers, constants)
        self.escapes: list = []  # (what, module path) of values that left the ops outside any op
        self._ids: dict = {}  # id(tensor) -> value id of its current version
        self._alive: list = []  # every tensor met, kept alive so that no id() is reused while tracing
        self._stack: list = []  # dotted paths of the modules running now
        self.modules: dict = {}  # dotted path -> class name of each module that ran
        self._module_names = {id(m): name for name, m in root.named_modules()} if hasattr(root, "named_modules") else {}
        self._param_names = {}
        if hasattr(root, "named_parameters"):
            self._param_names.update({id(p): ("parameter", name) for name, p in root.named_parameters()})
            self._param_names.update({id(b): ("buffer", name) for name, b in root.named_buffers()})
        self.inputs = [self._new_value(t, "input", f"input {i}") for i, t in enumerate(inputs)]
        self._handles = []
        self._random_in_op = False
        self._viewed: set = set()  # ids of tensors some op made a view of: a write into one reaches the views
        self._thread = None  # the thread that traces: other threads' module calls are not this call's

    # --- listening ---------------------------------------------------------------------------------

    def __enter__(self):
        self._thread = get_ident()
        self._handles = [observers.subscribe(self._on_op), observers.watch_escapes(self._on_escape),
                         observers.watch_writes(self._on_write),
                         module_hooks.register_module_forward_pre_hook(self._on_enter),
                         module_hooks.register_module_forward_hook(self._on_exit, always_call=True)]
        return self

    def __exit__(self, *exc):
        for handle in self._handles:
            handle.remove()
        self._handles = []
        return False

    def _on_enter(self, module, args):
        if get_ident() != self._thread:
            return
        name = self._module_names.get(id(module))
        name = name if name is not None else type(module).__name__
        self.modules.setdefault(name, type(module).__name__)
        self._stack.append(name)

    def _on_exit(self, module, args, output):  # (also when the module's forward raised: always_call)
        if get_ident() != self._thread:
            return
        if self._stack:
            self._stack.pop()

    def _on_escape(self, what: str):
        if not observers.inside_op():
            self.escapes.append((what, self._stack[-1] if self._stack else ""))
        elif what == "random":
            self._random_in_op = True  # inside an op: that op draws again whenever it runs

    def _on_write(self, target, source):
        """An in-place op wrote ``source``'s values into ``target``: from now on target *is* that value."""
        if observers.inside_op():
            return  # inside an op's forward: that op is the entry
        vid = self._ids.get(id(target))
        if target._base is not None or id(target) in self._viewed:
            self.escapes.append(("an in-place write into a tensor that has views", self._stack[-1] if self._stack else ""))
        ref = self._argument(source)
        if vid is not None and self.values[vid].kind in ("input", "parameter", "buffer", "constant"):
            # it outlives the call: the write happens again at every replay, as an op of its own
            record = observers.OpRecord(WriteBack, (target, source), (target,), None)
            self._on_op(record, args=(Ref(vid), ref))
        else:
            self._ids[id(target)] = ref.value

    def _on_op(self, record: observers.OpRecord, args=None):
        if record.nested:
            return  # inside another op's forward: that op is the entry
        args = args or tuple(self._argument(a) for a in record.inputs)
        if any(_is_array(a) for a in _constants(args)):  # a mask or index made from a tensor's values, most likely
            self.escapes.append((f"an array passed to {record.function.__name__}", self._stack[-1] if self._stack else ""))
        outputs = []
        for out in record.outputs:
            if getattr(out, "_base", None) is not None:
                self._viewed.add(id(out._base))
            if isinstance(out, TrackedTensor):
                outputs.append(self._new_value(out, "op", f"%{len(self.values)}"))
            else:
                outputs.append(None)  # a non-tensor output (rare): nothing can use it as a value
        self.ops.append(TapeOp(
            index=len(self.ops), function=record.function, args=args, outputs=tuple(outputs),
            in_shapes=tuple(tuple(a.shape) for a in _tensors(record.inputs)),
            out_shapes=tuple(tuple(o.shape) if isinstance(o, TrackedTensor) else None for o in record.outputs),
            dtypes=tuple(dtype_name(o) if isinstance(o, TrackedTensor) else None for o in record.outputs),
            device=str(_first_device(record)), module=self._stack[-1] if self._stack else "",
            views=tuple(i for i, o in enumerate(record.outputs) if getattr(o, "_base", None) is not None),
            inplace=tuple(i for i, o in enumerate(record.outputs) if any(o is a for a in record.inputs)),
            random=self._random_in_op))
        self._random_in_op = False

    # --- values ------------------------------------------------------------------------------------

    def _argument(self, a):
        if isinstance(a, TrackedTensor):
            vid = self._ids.get(id(a))
            if vid is None:
                kind, name = self._param_names.get(id(a), ("constant", None))
                vid = self._new_value(a, kind, name or f"constant {len(self.externals)}")
                self.externals[vid] = a
            return Ref(vid)
        if isinstance(a, (tuple, list)) and any(isinstance(x, (TrackedTensor, tuple, list)) for x in a):
            return _rebuild(a, [self._argument(x) for x in a])
        return a

    def _new_value(self, t, kind, name) -> int:
        vid = len(self.values)
        self.values[vid] = Value(vid, kind, tuple(t.shape), dtype_name(t), name)
        self._ids[id(t)] = vid
        self._alive.append(t)
        return vid

    def structure(self, out):
        """The function's result with every tensor replaced by the Ref of its value."""
        if isinstance(out, TrackedTensor):
            vid = self._ids.get(id(out))
            if vid is None:  # returned untouched (an input, a parameter) or made outside any op
                vid = self._new_value(out, "constant", f"constant {len(self.externals)}")
                self.externals[vid] = out
            return Ref(vid)
        if isinstance(out, (tuple, list)):
            return _rebuild(out, [self.structure(x) for x in out])
        if isinstance(out, dict):
            return {k: self.structure(v) for k, v in out.items()}
        return out

    def op_of_node(self) -> dict:
        """Each backward node the traced ops made (an output's ``grad_fn``) -> the op that made it."""
        tensor_of = {self._ids[id(t)]: t for t in self._alive if id(t) in self._ids}
        made = {}
        for op in self.ops:
            for vid in op.outputs:
                node = getattr(tensor_of.get(vid), "grad_fn", None)
                if node is not None:
                    made.setdefault(node, op)
        return made

    def tape(self, out) -> Tape:
        return Tape(self.ops, self.values, self.inputs, self.structure(out), self.externals, tuple(self.escapes),
                    self.modules)


def _tensors(inputs):
    for a in inputs:
        if isinstance(a, TrackedTensor):
            yield a
        elif isinstance(a, (tuple, list)):
            yield from _tensors(a)


def _constants(args):
    for a in args:
        if isinstance(a, (tuple, list)):
            yield from _constants(a)
        elif a.__class__ is not Ref:
            yield a


def _is_array(a) -> bool:
    """A backend array (numpy's, MLX's, a device array) rather than a Python constant."""
    return hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, (int, float, bool, complex))


def _first_device(record):
    for t in _tensors(record.outputs + record.inputs):
        return t.device
    return "cpu"


def trace(fn_or_module, *example_inputs) -> Tape:
    """Run ``fn_or_module(*example_inputs)`` once and return its operations as a ``Tape``.

    Like ``torch.jit.trace``: the tape holds the ops this call ran, so Python control flow is
    frozen at the branch these inputs took (the tape's ``escapes`` say where that may matter).
    """
    if not callable(fn_or_module):
        raise TypeError(f"jit.trace expects a function or Module, got {type(fn_or_module).__name__}")
    for i, x in enumerate(example_inputs):
        if not isinstance(x, TrackedTensor):
            raise TypeError(f"jit.trace: example input {i} is a {type(x).__name__}; pass tensors "
                            "(other arguments can be bound first, e.g. with functools.partial)")
    tracer = Tracer(fn_or_module, example_inputs)
    with tracer:
        out = fn_or_module(*example_inputs)
    tape = tracer.tape(out)
    if tape.escapes:
        what, where = tape.escapes[0]
        more = f" (and {len(tape.escapes) - 1} more: tape.escapes lists them)" if len(tape.escapes) > 1 else ""
        warnings.warn(f"jit.trace: {what}{f' in module {where!r}' if where else ''}{more}: the tape holds what this "
                      "call did, and a replay on other inputs may not do what the function would", TracerWarning,
                      stacklevel=2)
    return tape


class TracerWarning(UserWarning):
    """The traced function did something a tape cannot repeat faithfully (as torch.jit's TracerWarning)."""

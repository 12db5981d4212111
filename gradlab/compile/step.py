"""``make_step``: a training step recorded once per input signature, then run as one program.

The first call with new shapes runs the step eagerly — forward, loss, the engine's own backward —
while the backend writes down every call it is asked to make (``trace.py``); that record becomes
the program (``lower.py``, ``leaves.py``, ``passes.py``). Later calls with the same signature run
the program: no graph is built, and the gradients it computes reach every ``.grad`` as backward
would, before the optimizer (if any) takes its step — or, with an optimizer that moves each
parameter on its own, inside the program, as soon as the parameter's gradient is final.

What a record cannot hold — a value that leaves the ops for Python (``.item()``, an ``if`` on a
tensor), an array an op made with numpy outside the backend — makes the step run eagerly from
then on, after one ``CompileWarning`` that says why. A host read the backend answered (a NaN
check) is a guard: if its answer changes, the step falls back the same way.
"""

from __future__ import annotations

import warnings

from ..jit.tracer import Tracer
from ..ops import autocast
from .compiled import Compiled
from .lower import GuardFailed, Unrecorded, lower
from .segments import check_segments, segmented, updates_in_program
from .trace import record_step

# What the tracer calls an escape from its ops, but a record holds: its calls draw, write and index as the step did.
REPLAYED_ESCAPES = ("random", "an in-place write", "a tensor used as an index", "an array passed to")


class CompileWarning(UserWarning):
    """The compiled step (or function) could not be compiled and runs eagerly instead; the message says why."""


def signature(inputs, model=None) -> tuple:
    """What a program is planned for: each input's shape, dtype and device (and which are one array), the
    model's mode, autocast's state."""
    sig = tuple([(x.array.shape, x.array.dtype, x.device) for x in inputs])
    arrays = [id(x.array) for x in inputs]
    if len(set(arrays)) < len(arrays):  # step(x, x): a program reads the one array for both
        sig += (("same array", tuple(arrays.index(a) for a in arrays)),)
    if model is not None:
        sig += (getattr(model, "training", None),)
    if autocast.state.active:  # the ops traced under autocast cast to its dtypes: another program
        sig += (("autocast", tuple(sorted((k, str(autocast.state.dtype[k])) for k, on in autocast.state.enabled.items()
                                          if on))),)
    return sig


class CompiledStep:
    """``loss = step(x, y)``: ``loss_fn(model(x), y)``, its backward, and (with an optimizer) the update."""

    def __init__(self, model, loss_fn, optimizer=None, segments=1):
        if not callable(model):
            raise TypeError(f"compile.make_step: model must be a Module or callable, got {type(model).__name__}")
        if not callable(loss_fn):
            raise TypeError(f"compile.make_step: loss_fn must be callable as loss_fn(output, target), "
                            f"got {type(loss_fn).__name__}")
        if optimizer is not None and not (hasattr(optimizer, "step") and hasattr(optimizer, "zero_grad")):
            raise TypeError(f"compile.make_step: optimizer must be a gradlab optimizer, got {type(optimizer).__name__}")
        self.model, self.loss_fn, self.optimizer = model, loss_fn, optimizer
        self.segments = check_segments(model, segments)
        self.cache: dict = {}
        self.traces = 0
        self.fallback = None  # the reason this step runs eagerly, once it does

    def __call__(self, x, *targets):
        inputs = (x,) + targets
        if self.fallback is not None:
            return self._eager(inputs)
        try:
            key = signature(inputs, self.model)
        except AttributeError:
            bad = next(i for i, t in enumerate(inputs) if not hasattr(t, "array"))
            raise TypeError(f"compile.make_step: step(x, *targets) takes tensors, but argument {bad} is a "
                            f"{type(inputs[bad]).__name__}; pass it as a tensor (gl.tensor(...)), or bind it into "
                            "loss_fn (functools.partial)") from None
        compiled = self.cache.get(key)
        if compiled is None:
            return self._trace(key, inputs)
        if self.optimizer is not None:
            self.optimizer.zero_grad(set_to_none=True)
        try:
            loss = compiled.run([t.array for t in inputs])
        except GuardFailed as error:
            self._give_up(str(error))
            return self._eager(inputs)
        if self.optimizer is not None:
            if compiled.updates:
                self.optimizer._materialize()
            else:
                self.optimizer.step()
        return inputs[0]._wrap(loss)

    # --- tracing, and the eager way -------------------------------------------------------------------

    def _trace(self, key, inputs):
        """Run this step eagerly while its backend calls are recorded, then lower the record to a program."""
        if self.optimizer is not None:
            self.optimizer.zero_grad(set_to_none=True)
        backend = inputs[0].device.backend
        tracer = Tracer(self.model, inputs)
        held = _hold_grads(self.model) if self.optimizer is None else {}
        try:
            loss, recorded = record_step(self.model, self.loss_fn, inputs, tracer)
        finally:
            _give_back_grads(held)
        if self.optimizer is not None:
            self.optimizer.step()
        self.traces += 1
        reason = _why_not(tracer, inputs)
        if reason is None and ("loss" not in recorded.outputs or tuple(loss.shape) != ()):
            shape = "no tensor" if "loss" not in recorded.outputs else f"shape {tuple(loss.shape)}"
            raise ValueError(f"compile.make_step: loss_fn must return a scalar (0-d) loss tensor, got {shape}; "
                             "reduce it first, e.g. .mean() or .sum()")
        if reason is None:
            try:
                one = Compiled(tracer.tape(loss), lower(recorded, backend, optimizer=updates_in_program(self.optimizer, backend),
                                                        pure=backend.name == "mlx"))
                self.cache[key] = segmented(self, inputs, one, lambda: Compiled(one.tape, lower(recorded, backend)))
            except (GuardFailed, Unrecorded) as error:
                reason = str(error)
        if reason is not None:
            self._give_up(reason, stacklevel=4)
        return loss.detach()

    def _eager(self, inputs):
        if self.optimizer is not None:
            self.optimizer.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.model(inputs[0]), *inputs[1:])
        loss.backward()
        if self.optimizer is not None:
            self.optimizer.step()
        return loss.detach()

    def _give_up(self, reason: str, stacklevel: int = 3) -> None:
        """Run eagerly from now on, after one warning (pointing at the caller's line)."""
        self.fallback = reason
        self.cache.clear()
        warnings.warn(f"compile.make_step: running this step eagerly: {reason}", CompileWarning, stacklevel=stacklevel)

    def memory(self) -> dict:
        """Peak bytes of the planned intermediate values (parameters and inputs not counted), per signature."""
        from .passes import peak_bytes

        peaks = [max(peak_bytes(p) for p in compiled.programs()) for compiled in self.cache.values()]
        return {"peak_bytes": max(peaks, default=0), "segments": self.segments}

    def __repr__(self):
        state = f"eager ({self.fallback})" if self.fallback else f"{len(self.cache)} signature(s) compiled"
        return f"<gradlab.compile step: {state}, traced {self.traces}×>"


def _why_not(tracer, inputs) -> str | None:
    """Why this record cannot become a program, or None when it can."""
    reason = escape_reason(tracer.escapes)
    if reason is not None:
        return reason
    if any(t.grad_fn is not None for t in tracer.externals.values()):
        return ("the step uses a tensor computed before it, with its graph: every run's backward would go through "
                "that graph again; detach() it, or compute it inside the step")
    for i, x in enumerate(inputs):
        if getattr(x, "requires_grad", False):
            return f"input {i} requires grad; compiled steps fill the parameters' .grad only"
    return None


def escape_reason(escapes, subject: str = "the forward") -> str | None:
    """The first escape the tracer saw that a record cannot hold, in words, or None. A record replays random
    draws, writes through views and indexing by a tensor as the backend was asked to do them (the index
    array is one of the arrays it records): only a value leaving the ops for Python stops it."""
    kept = [(what, where) for what, where in escapes if not what.startswith(REPLAYED_ESCAPES)]
    if not kept:
        return None
    what, where = kept[0]
    place = f" in module '{where}'" if where else ""
    return (f"{subject} reads a tensor's value with {what}{place}, so what it does next may depend on the data "
            "(data-dependent control flow); a program would freeze the branch taken once")


def _hold_grads(model) -> dict:
    """Without an optimizer the step adds into each ``.grad``: the recorded step starts from None (its
    ``.grad`` is then the step's own gradient), and the old ones are added back after."""
    held = {}
    for p in (model.parameters() if hasattr(model, "parameters") else ()):
        if p.grad is not None:
            held[p] = p.grad
            p.grad = None
    return held


def _give_back_grads(held) -> None:
    from ..autograd.grad_mode import no_grad

    with no_grad():
        for p, old in held.items():
            if p.grad is not None:
                old.add_(p.grad)
            p.grad = old


def make_step(model, loss_fn, optimizer=None, segments=1) -> CompiledStep:
    """Compile ``loss_fn(model(x), y)``, its backward and the optimizer's update into one step.

    ``step = gl.compile.make_step(model, loss_fn, optimizer=opt)`` then ``loss = step(x, y)``.
    Without an optimizer the step only fills every ``.grad``, as ``loss.backward()`` would.
    ``segments=N`` splits an ``nn.Sequential`` into N pieces whose forward is run again during
    backward (less memory, more time); ``"auto"`` tries a few and keeps the fastest.
    """
    return CompiledStep(model, loss_fn, optimizer, segments)

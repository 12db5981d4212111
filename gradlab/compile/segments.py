"""Segments: a Sequential compiled as N pieces, each one's forward run again during backward.

One program keeps every activation its backward needs until backward reaches it: peak memory
grows with depth. Split into pieces, the forward keeps only each piece's *input*; backward then
runs each piece again, last to first, as forward-and-backward with its output's gradient coming
from the piece after it (gradient checkpointing, as ``torch.utils.checkpoint_sequential``).
The price is one more forward of every piece but the last. ``"auto"`` times a few counts on
the first batch and keeps the fastest.
"""

from __future__ import annotations

import time

from ..autograd.grad_mode import no_grad
from ..jit.tracer import Tracer
from .compiled import Compiled
from .lower import lower
from .trace import record

AUTO_COUNTS = (1, 2, 4)


def check_segments(model, segments):
    """The segment count asked for, checked: 1, an int up to the Sequential's length, or "auto"."""
    from ..nn.modules.container import Sequential

    if segments == "auto":
        return "auto"
    if segments.__class__ is not int or segments < 1:
        raise ValueError(f"compile.make_step: segments must be a positive int or 'auto', got {segments!r}")
    if segments > 1:
        if not isinstance(model, Sequential):
            raise ValueError(f"compile.make_step: segments={segments} splits an nn.Sequential into pieces, but the model "
                             f"is a {type(model).__name__}; use segments=1, or build the model as an nn.Sequential")
        if segments > len(model):
            raise ValueError(f"compile.make_step: segments={segments} is more than the Sequential's {len(model)} layers")
        if model.training and any(True for _ in model.buffers()):
            raise ValueError("compile.make_step: segments > 1 runs each piece's forward again during backward, which "
                             "would update running statistics (BatchNorm) twice per step; use segments=1")
    return segments


def updates_in_program(optimizer, backend):
    """The optimizer, when the program can move each parameter itself (``Optimizer._update``), else None:
    an optimizer with a ``step`` of its own (LBFGS), or a pure MLX program, takes its step after the run."""
    from ..optim.optimizer import Optimizer

    if optimizer is None or type(optimizer).step is not Optimizer.step or backend.name == "mlx":
        return None
    return optimizer


def segmented(step, inputs, one, probe):
    """``one`` program (``step.segments == 1``), ``Pieces`` of ``step.segments``, or for "auto" the fastest of 1,
    2 and 4 on this batch; ``probe()`` is one program that moves no parameter (the probes' runs must not train)."""
    if step.segments == 1:
        return one
    if step.segments != "auto":
        return Pieces(step, inputs, step.segments)
    from ..nn.modules.container import Sequential

    counts = [n for n in AUTO_COUNTS if n == 1 or (isinstance(step.model, Sequential) and n <= len(step.model)
                                                     and not (step.model.training and any(True for _ in step.model.buffers())))]
    candidates = {1: probe() if one.updates else one}
    candidates.update({n: Pieces(step, inputs, n) for n in counts if n > 1})
    arrays = [t.array for t in inputs]
    params = [p for p in step.model.parameters()]
    kept = [p.grad for p in params]  # probing fills .grad: each probe starts from None, and they are put back after
    times = {}
    backend = inputs[0].device.backend
    for n, compiled in candidates.items():
        for p in params:
            p.grad = None
        compiled.run(arrays)
        start = time.perf_counter()
        for _ in range(2):
            compiled.run(arrays)
            backend.synchronize()
        times[n] = time.perf_counter() - start
    for p, g in zip(params, kept):
        p.grad = g
    best = min(times, key=times.get)
    step.segments = best
    step.probe_seconds = times
    return one if best == 1 else candidates[best]


class Pieces:
    """A Sequential's step as N pieces, each compiled from its own record (trace.py, lower.py): every piece
    but the last as a forward alone and as forward-and-backward from its output's gradient, the last as
    forward, loss and backward. Forward keeps each piece's input; backward reruns each piece.

    Recording runs each piece once, with the parameters' ``.grad`` held aside and put back after. The
    pieces keep no buffers between runs (one program's are reused to save time; N programs' would add
    up): each value is allocated when made and let go at its last reader."""

    def __init__(self, step, inputs, n):
        model, loss_fn = step.model, step.loss_fn
        bounds = [round(i * len(model) / n) for i in range(n + 1)]
        self.pieces = [model[a:b] for a, b in zip(bounds, bounds[1:])]
        backend = inputs[0].device.backend
        pure = backend.name == "mlx"

        def compiled(fn, piece, args, backward):
            tracer = Tracer(piece, args)
            out, recorded = record(fn, args, tracer, piece, backward)
            return Compiled(tracer.tape(out), lower(recorded, backend, buffers=False, pure=pure)), out

        held = [(p, p.grad) for p in model.parameters()]
        for p, _ in held:
            p.grad = None
        try:
            self.forwards, self.backwards = [], []
            h = inputs[0].detach()
            for piece in self.pieces[:-1]:
                forward, out = compiled(piece, piece, [h], None)
                self.forwards.append(forward)
                leaf = h.detach().requires_grad_(True)
                self.backwards.append(compiled(piece, piece, [leaf, out.new_ones(out.shape)], "seeded")[0])
                h = out.detach()
            last = self.pieces[-1]
            self.last = compiled(lambda h, *targets: loss_fn(last(h), *targets), last,
                                 [h.detach().requires_grad_(True)] + list(inputs[1:]), "loss")[0]
        finally:
            for p, g in held:
                p.grad = g

    def run(self, arrays):
        x, targets = arrays[0], arrays[1:]
        kept = [x]
        with no_grad():
            for forward in self.forwards:
                env = forward.program.environment()
                env[forward.program.inputs[0]] = kept[-1]
                forward.program.run(env)
                kept.append(env[next(iter(forward.program.results.values()))])
        loss = self.last.run([kept[-1]] + list(targets))
        g = self.last.input_grad
        for backward, h in zip(reversed(self.backwards), reversed(kept[:-1])):
            backward.run([h, g])
            g = backward.input_grad
        return loss

    updates = False  # the optimizer steps after the run: a parameter shared by two pieces must not move early

    def programs(self):
        return [c.program for c in self.forwards + self.backwards + [self.last]]


__all__ = ["check_segments", "segmented", "Pieces"]

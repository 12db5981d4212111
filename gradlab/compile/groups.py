"""Which ops of a tape the compiled forward runs as one: elementwise runs fused into one kernel, and runs of
elementwise ops, each reading the one before, computed in place into reused buffers (no new memory).

The tape is replayed once on zeros while its backend calls are recorded (``trace.py``), and the record
lowered as ``gl.compile`` would (``lower.py``); each instruction of that program knows the op it ran
inside. The lab draws each group of two ops or more as one super-node (``GraphView(tape)``).
"""

from __future__ import annotations

from ..creation import zeros
from ..dtypes import as_dtype
from ..jit.tracer import Tracer
from .lower import lower
from .trace import record


def fusion_groups(tape) -> list:
    """Lists of tape op indices, each a run the forward program fuses or writes in one buffer (2 ops or more)."""
    if not tape.ops:
        return []
    inputs = [zeros(shape, dtype=as_dtype(dtype), device=device) for shape, dtype, device in tape.signature]
    device = inputs[0].device if inputs else tape.ops[0].device
    tracer = Tracer(tape.replay, inputs)
    _, recorded = record(tape.replay, inputs, tracer, None, None)
    program = lower(recorded, device.backend)
    calls: dict = {}  # op index -> its instructions
    for ins in program.instrs:
        if ins.op is not None:
            calls.setdefault(ins.op.index, []).append(ins)
    in_place = {k for k, instrs in calls.items() if all(i.ufunc and i.outs and i.outs[0] in program.buffers
                                                         for i in instrs)}
    groups, group, last = [], [], None
    for ins in program.instrs:
        chain = getattr(ins.fn, "instrs", None)  # fuse.FusedChain: the instructions it runs as one kernel
        if chain is not None:
            groups.append(list(dict.fromkeys(i.op.index for i in chain if i.op is not None)))
            group, last = [], None
            continue
        k = ins.op.index if ins.op is not None else None
        if k not in in_place:
            group, last = [], None
            continue
        if not (group and (k == group[-1] or last in ins.ins)):  # not reading the run's last value: a new run
            group = []
            groups.append(group)
        if k not in group:
            group.append(k)
        last = ins.outs[0]
    return [g for g in groups if len(g) > 1]

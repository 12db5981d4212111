"""Which ops of a tape the planned forward fuses: chains of elementwise ops that run in one buffer.

The lab draws each such chain as one super-node (``GraphView(tape)``), opened to show its ops.
"""

from __future__ import annotations

from ..creation import empty
from .plan import plan


def fusion_groups(tape) -> list:
    """Lists of tape op indices, each a chain the forward program runs in place in one buffer (2 ops or more)."""
    template = next(iter(tape.externals.values()), None)
    if template is None:
        template = empty((0,), device=tape.ops[0].device if tape.ops else "cpu")
    program = plan(tape, template.device.backend, template._wrap, backward=False)
    group_of_buffer: dict = {}  # id(buffer) -> the group (list of op indices) that writes it
    groups = []
    for ins in program.instrs:
        chain = getattr(ins.fn, "instrs", None)  # rules_fuse.FusedChain: the instructions it runs as one kernel
        if chain is not None:
            groups.append(list(dict.fromkeys(i.op.index for i in chain if i.op is not None)))
            continue
        buffer = program.buffers.get(ins.outs[0]) if ins.op is not None and not ins.many else None
        if buffer is None:
            continue
        reads_it = any(program.buffers.get(i) is buffer for i in ins.ins if i is not None)
        group = group_of_buffer.get(id(buffer)) if reads_it else None
        if group is None:
            group = []
            groups.append(group)
        if ins.op.index not in group:
            group.append(ins.op.index)
        group_of_buffer[id(buffer)] = group
    return [g for g in groups if len(g) > 1]

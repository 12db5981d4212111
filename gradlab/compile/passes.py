"""Passes over a planned program, each a small rewrite of its instruction list or of how it runs.

- ``drop_dead``: an instruction whose outputs nobody reads, and that changes nothing else, goes.
- ``lifetimes``: the last instruction that reads each slot; the run lets go of it there, so
  memory holds only what is still to be used (as eager backward frees what each node saved).
- ``assign_buffers``: an instruction that can write into given memory (``out=``) gets a buffer
  of its own, allocated once and reused every run; two slots whose lifetimes do not overlap
  share one (interval colouring by shape and dtype).
- ``fuse_elementwise``: a chain of elementwise ufuncs, each read only by the next, runs in place
  in the first one's buffer.
"""

from __future__ import annotations

import math

from ..dtypes import NATIVE_TO_DTYPE


def run_all(program, fuse: bool = True) -> None:
    drop_dead(program)
    if fuse:
        fuse_elementwise(program)
    assign_buffers(program)


def _kept(program) -> set:
    return set(program.results.values()) | set(program.externals) | set(program.inputs)


def drop_dead(program) -> None:
    """Walk backwards, keeping an instruction only if it is impure or a kept instruction reads it."""
    wanted = _kept(program)
    kept = []
    for ins in reversed(program.instrs):
        if not ins.pure or any(o in wanted for o in ins.outs):
            kept.append(ins)
            wanted.update(i for i in ins.ins if i is not None)
    program.instrs = kept[::-1]


def lifetimes(program) -> dict:
    """slot -> index of the last instruction that reads it (slots never read are let go where made)."""
    last = {}
    for n, ins in enumerate(program.instrs):
        for o in ins.outs:
            last.setdefault(o, n)
        for i in ins.ins:
            if i is not None:
                last[i] = n
    for slot in _kept(program) | set(program.constants):
        last.pop(slot, None)
    return last


def assign_buffers(program) -> None:
    """Give each ``out=``-capable instruction's output a reusable buffer, shared across disjoint lifetimes."""
    backend = program_backend(program)
    if backend is None:
        return
    last = lifetimes(program)
    free: dict = {}  # (shape, dtype) -> buffers whose slot is dead
    releases: dict = {}  # instruction index -> buffers freed after it
    owner: dict = {}  # id(buffer) -> slot now using it
    for n, ins in enumerate(program.instrs):
        if ins.ufunc is not None and len(ins.outs) == 1 and ins.outs[0] in last:
            slot = program.slots[ins.outs[0]]
            key = (slot.shape, slot.dtype)
            pool = free.get(key)
            buffer = pool.pop() if pool else backend.empty(slot.shape, NATIVE_TO_DTYPE[slot.dtype])
            program.buffers[ins.outs[0]] = buffer
            owner[id(buffer)] = ins.outs[0]
            releases.setdefault(last[ins.outs[0]], []).append((key, buffer))
        for key, buffer in releases.pop(n, ()):
            free.setdefault(key, []).append(buffer)


def program_backend(program):
    return program.backend


def fuse_elementwise(program) -> None:
    """Chains of single-use elementwise ufuncs: each link writes into the chain's first buffer.

    ``a = x + w; b = a * 2; c = relu(b)``: a, b and c become one piece of memory, written three
    times — numpy's ``out=`` doing by hand what a fusing compiler does with one loop.
    """
    reads: dict = {}
    for ins in program.instrs:
        for i in ins.ins:
            if i is not None:
                reads[i] = reads.get(i, 0) + 1
    kept = _kept(program)
    for prev, ins in zip(program.instrs, program.instrs[1:]):
        if (prev.ufunc is not None and ins.ufunc is not None and len(prev.outs) == 1 and reads.get(prev.outs[0]) == 1
                and prev.outs[0] in ins.ins and prev.outs[0] not in kept
                and program.slots[prev.outs[0]] == program.slots[ins.outs[0]]._replace(name=program.slots[prev.outs[0]].name)):
            ins.ufunc = ("in place", prev.outs[0])


def peak_bytes(program) -> int:
    """The most bytes the program's slots hold at once, by their lifetimes (inputs and parameters not counted)."""
    last = lifetimes(program)
    live, peak, ends = 0, 0, {}
    for n, ins in enumerate(program.instrs):
        for o in ins.outs:
            slot = program.slots[o]
            if slot.shape is not None and slot.dtype is not None and o not in program.externals:
                size = math.prod(slot.shape) * slot.dtype.itemsize
                live += size
                ends.setdefault(last.get(o, n), []).append(size)
        peak = max(peak, live)
        for size in ends.pop(n, ()):
            live -= size
    return peak

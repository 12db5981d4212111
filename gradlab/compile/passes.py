"""Passes over a planned program, each a small rewrite of its instruction list or of how it runs.

- ``drop_dead``: an instruction whose outputs nobody reads, and that changes nothing else, goes.
- ``lifetimes``: the last instruction that reads each slot; the run lets go of it there, so
  memory holds only what is still to be used (as eager backward frees what each node saved).
- ``assign_buffers``: an instruction that can write into given memory (``out=``) gets a buffer
  of its own, allocated once and reused every run; two slots whose lifetimes do not overlap
  share one, and a chain of elementwise instructions runs in place in one buffer.
"""

from __future__ import annotations

import math

from ..dtypes import NATIVE_TO_DTYPE


def run_all(program, fuse: bool = True, buffers: bool = True) -> None:
    """Every pass, in order. ``buffers=False`` keeps no memory between runs (each value is allocated
    as it is made and let go at its last reader): segments choose that, since their point is memory."""
    drop_dead(program)
    if fuse and program.backend.name in OUT_BACKENDS:
        from .fuse import fuse_chains  # elementwise runs as one numba kernel, where numba is installed

        fuse_chains(program)
    if fuse and buffers:
        assign_buffers(program)
    hand_over(program)


def hand_over(program) -> None:
    """A gradient the program made in memory of its own, read by nothing else, becomes the ``.grad`` as it is."""
    made_by = {o: ins for ins in program.instrs for o in ins.outs}
    reads: dict = {}
    for ins in program.instrs:
        for i in ins.ins:
            reads[i] = reads.get(i, 0) + 1
    for ins in program.instrs:
        if hasattr(ins.fn, "own") and ins.ins:
            g = ins.ins[0]
            maker = made_by.get(g)
            ins.fn.own = (maker is not None and maker.fresh and g not in program.buffers and reads.get(g) == 1
                          and g not in program.constants)


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


def lifetimes(program, views: bool = True) -> dict:
    """slot -> index of the last instruction after which nothing needs its memory.

    That is its last reader — or, with ``views``, later, when an instruction that may return a view
    of it (one not ``fresh``: a reshape, an op run as it is, whose ctx keeps its inputs for
    backward) made a value that lives on: its *buffer* must not be reused before. (The run itself
    lets go of a slot at its last reader: a view or ctx holds the array by its own reference.)
    Slots needed after the run (results, inputs, parameters) are not listed.
    """
    end = len(program.instrs)
    last = {}
    for n, ins in enumerate(program.instrs):
        for o in ins.outs:
            last.setdefault(o, n)
        for i in ins.ins:
            if i is not None:
                last[i] = n
    for slot in _kept(program) | set(program.constants):
        last[slot] = end
    for ins in reversed(program.instrs if views else ()):
        if not ins.fresh:
            reach = max((last.get(o, -1) for o in (ins.outs if ins.holders is None else ins.holders)), default=-1)
            for i in (ins.ins if ins.aliases is None else [ins.ins[k] for k in ins.aliases]):
                if i is not None and last.get(i, -1) < reach:
                    last[i] = reach
    return {slot: n for slot, n in last.items() if n < end}


def assign_buffers(program) -> None:
    """Give each ``out=``-capable instruction's output a buffer, allocated once and reused every run.

    Slots whose lifetimes do not overlap share a buffer (interval colouring by shape and dtype).
    An elementwise instruction may write over an input it reads for the last time, so its dying
    inputs' buffers are freed *before* its output takes one: a chain ``relu(x @ w + b) * 2`` then
    runs in one piece of memory, in place — what a fusing compiler would do, through numpy's ``out=``.
    """
    if program.backend.name not in OUT_BACKENDS:
        return
    last = lifetimes(program)
    free: dict = {}  # (shape, dtype) -> buffers no live slot uses
    held: dict = {}  # slot -> (key, buffer) it writes into
    for n, ins in enumerate(program.instrs):
        dying = [i for i in dict.fromkeys(ins.ins) if i is not None and last.get(i) == n and i in held]
        if ins.ufunc is not None:  # elementwise: may reuse what it reads for the last time
            for i in dying:
                key, buffer = held.pop(i)
                free.setdefault(key, []).append(buffer)
        if ins.ufunc is not None and not ins.many and ins.outs[0] in last:
            slot = program.slots[ins.outs[0]]
            key = (slot.shape, slot.dtype)
            pool = free.get(key)
            buffer = pool.pop() if pool else program.backend.empty(slot.shape, NATIVE_TO_DTYPE[slot.dtype])
            program.buffers[ins.outs[0]] = buffer
            held[ins.outs[0]] = (key, buffer)
        if ins.ufunc is None:
            for i in dying:
                key, buffer = held.pop(i)
                free.setdefault(key, []).append(buffer)


OUT_BACKENDS = ("numpy", "numba")  # backends whose arrays are numpy's: ``out=`` writes into them


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

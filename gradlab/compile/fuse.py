"""Fusion: a run of elementwise instructions (+ − × ÷, negation) over arrays of one shape becomes ONE
numba kernel, one loop over the elements doing every step of the chain in registers.

The values between the steps never exist as arrays; only those read after the run (or kept, as a
gradient is) are written out. Each step is the same operation in the same order as numpy's, so the
numbers are the same. The kernel's source is generated per chain and compiled once per chain shape.
"""

from __future__ import annotations

import functools

import numpy as np

MIN_STEPS = 3  # a shorter run gains less than the kernel call costs
_SYMBOLS = {np.add: "{} + {}", np.subtract: "{} - {}", np.multiply: "{} * {}", np.divide: "{} / {}",
            np.negative: "-{}"}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _numba():
    try:
        import numba
    except ImportError:
        return None
    return numba


def _formula(program, ins):
    """(template, number) of a fusable elementwise step — ``{0}``, ``{1}`` its inputs, ``{c}`` a number
    it holds — or None."""
    fn = ins.fn
    if isinstance(fn, functools.partial) and not fn.args and fn.keywords == {"out": ...}:
        template = _SYMBOLS.get(fn.func)
        return None if template is None else (template.replace("{}", "{0}", 1).replace("{}", "{1}", 1), None)
    formula = getattr(fn, "formula", None)
    if isinstance(formula, str):
        number = getattr(fn, "number", None)
        if number is not None and type(number) not in (int, float):
            return None
        return formula.replace("{}", "{0}", 1), number
    backend = program.backend
    for name, ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.divide)):
        if fn is getattr(backend, name, None):
            return _SYMBOLS[ufunc].replace("{}", "{0}", 1).replace("{}", "{1}", 1), None
    return None


def _fusable(program, ins):
    if ins.many or len(ins.outs) != 1 or not ins.pure or _formula(program, ins) is None:
        return False
    out = program.slots[ins.outs[0]]
    if not isinstance(out.dtype, np.dtype) or out.dtype not in _FLOATS or out.shape is None:
        return False
    return all(i is not None and program.slots[i].shape == out.shape and isinstance(program.slots[i].dtype, np.dtype)
               and program.slots[i].dtype == out.dtype
               for i in ins.ins)


def fuse_chains(program) -> None:
    """Replace each run of at least MIN_STEPS adjacent fusable instructions by one fused instruction."""
    if _numba() is None:
        return
    readers: dict = {}
    for n, ins in enumerate(program.instrs):
        for i in ins.ins:
            if i is not None:
                readers.setdefault(i, []).append(n)
    kept = set(program.results.values()) | set(program.externals) | set(program.inputs)
    out, run = [], []

    def close():
        fused = _fused(program, run, readers, kept) if len(run) >= MIN_STEPS else None
        if fused is not None:
            out.append(fused)
        else:
            out.extend(ins for _, ins in run)
        run.clear()

    for n, ins in enumerate(program.instrs):
        if _fusable(program, ins) and (not run or _same_kind(program, run[0][1], ins)):
            run.append((n, ins))
        else:
            close()
            if _fusable(program, ins):
                run.append((n, ins))
            else:
                out.append(ins)
    close()
    program.instrs = out


def _same_kind(program, first, ins):
    a, b = program.slots[first.outs[0]], program.slots[ins.outs[0]]
    return a.shape == b.shape and a.dtype == b.dtype and first.phase == ins.phase


def _fused(program, run, readers, kept):
    """One instruction for the run: inputs are what it reads from before it, outputs what is read after it."""
    last = run[-1][0]
    made = {ins.outs[0] for _, ins in run}
    inputs = list(dict.fromkeys(i for _, ins in run for i in ins.ins if i not in made))
    outputs = [o for o in dict.fromkeys(ins.outs[0] for _, ins in run)
               if o in kept or any(r > last for r in readers.get(o, ())) or o not in readers]
    if not outputs:
        return None
    names = {s: f"a{k}" for k, s in enumerate(inputs)}
    lines, numbers = [], []
    for k, (_, ins) in enumerate(run):
        template, number = _formula(program, ins)
        operands = [f"{names[i]}[i]" if i in inputs else names[i] for i in ins.ins]
        constant = ""
        if number is not None:
            constant = f"c{len(numbers)}"
            numbers.append(number)
        names[ins.outs[0]] = f"t{k}"
        lines.append(f"        t{k} = " + template.format(*operands, c=constant))
    for k, o in enumerate(outputs):
        lines.append(f"        o{k}[i] = {names[o]}")
    slot = program.slots[run[0][1].outs[0]]
    kernel = _kernel(tuple(lines), len(inputs), len(outputs), tuple(repr(float(n)) for n in numbers), slot.dtype.name)
    chain = FusedChain(kernel, [ins for _, ins in run], slot.shape, slot.dtype, len(outputs))
    steps = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in _counts(ins.name for _, ins in run))
    instr = type(run[0][1])  # program.Instr (not imported: program.py reaches passes.py, which calls this)
    return instr(chain, inputs, outputs, f"fused[{len(run)}]: {steps}", pure=True, fresh=True,
                 phase=run[0][1].phase, many=True)


def _counts(names):
    counts: dict = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts.items()


@functools.lru_cache(maxsize=256)
def _kernel(lines, n_in, n_out, numbers, dtype):
    """The numba kernel for one chain's body (compiled once per distinct body, for contiguous arrays; numba
    compiles another layout when it meets one). Every number is of the arrays' dtype, as numpy casts a
    Python number to it, so each step rounds as numpy's does."""
    numba = _numba()
    args = ", ".join([f"a{k}" for k in range(n_in)] + [f"o{k}" for k in range(n_out)])
    head = [f"    zero, one = np.{dtype}(0), np.{dtype}(1)"] + [f"    c{k} = np.{dtype}({n})" for k, n in enumerate(numbers)]
    source = (f"def kernel({args}):\n" + "\n".join(head) + "\n    for i in range(o0.shape[0]):\n" + "\n".join(lines)
              + "\n")
    scope: dict = {"np": np}
    exec(compile(source, "<fused elementwise chain>", "exec"), scope)  # noqa: S102 (source made above, from templates)
    kernel = numba.njit(error_model="numpy")(scope["kernel"])
    # compiled now, while the step is planned (its first call), not in the middle of the second
    kernel.compile(f"void({', '.join([f'{dtype}[::1]'] * (n_in + n_out))})")
    return kernel


class FusedChain:
    """The fused instruction's function: flattens its inputs, runs the kernel, hands back new arrays.
    ``instrs`` are the instructions it replaced (what a picture of the program may open)."""

    def __init__(self, kernel, instrs, shape, dtype, n_out):
        self.kernel, self.instrs, self.shape, self.dtype, self.n_out = kernel, instrs, shape, dtype, n_out
        self.size = int(np.prod(shape, dtype=np.int64))

    def __call__(self, *arrays):
        outs = [np.empty(self.size, self.dtype) for _ in range(self.n_out)]
        self.kernel(*[a.reshape(-1) for a in arrays], *outs)
        return [o.reshape(self.shape) for o in outs]

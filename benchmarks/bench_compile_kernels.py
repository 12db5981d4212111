"""What each compile rule buys: a compiled step's time per op, with the rules and without them.

For each model, two programs are planned from one tape: with ``gradlab.compile.rules.RULES`` (the
hot ops lowered to array instructions of their own) and with none (every op run by its own
forward/backward, the generic path). Each instruction of each program is timed over a few runs
(medians), and the times are summed per op of the tape. Run: python benchmarks/bench_compile_kernels.py
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import gradlab as gl  # noqa: E402
from bench_training import cnn, mlp, transformer  # noqa: E402
from gradlab.compile import plan as planning, rules  # noqa: E402
from gradlab.jit import trace  # noqa: E402


def _op_of(ins):
    """The tape op an instruction belongs to, by name: 'Linear.backward (∂W = gᵀ·x)' → 'Linear'."""
    name = ins.name.split(" ")[0].split(".")[0]
    return name.split("[")[0] if not name.startswith("fused") else "fused"


def time_program(program, arrays, runs=7):
    """Median seconds per op name (forward and backward together) over ``runs`` runs of the program."""
    samples = defaultdict(list)
    for _ in range(runs):
        env = program.environment()
        for slot, a in zip(program.inputs, arrays):
            env[slot] = a
        for slot, tensor in program.externals.items():
            env[slot] = tensor.array
        if program._steps is None:
            program.compile_steps()
        per_op = defaultdict(float)
        with gl.no_grad():
            for (step, frees), ins in zip(program._steps, program.instrs):
                start = time.perf_counter()
                step(env)
                per_op[_op_of(ins)] += time.perf_counter() - start
                for slot in frees:
                    env[slot] = None
        for name, seconds in per_op.items():
            samples[name].append(seconds)
    return {name: statistics.median(s) for name, s in samples.items()}


def compare(title, model, loss_fn, inputs):
    tape = trace(lambda *a: loss_fn(model(a[0]), *a[1:]), *inputs)
    backend, wrap = inputs[0].device.backend, inputs[0]._wrap
    arrays = [t.array for t in inputs]
    with_rules = planning.plan(tape, backend, wrap)
    saved = dict(rules.RULES)
    rules.RULES.clear()
    try:
        generic = planning.plan(tape, backend, wrap)
    finally:
        rules.RULES.update(saved)
    time_program(with_rules, arrays, runs=2)  # warm up (numba compiles, buffers are made)
    time_program(generic, arrays, runs=2)
    fast, slow = time_program(with_rules, arrays), time_program(generic, arrays)
    print(f"\n{title}: {len(generic)} instructions generic, {len(with_rules)} with rules")
    for name in dict.fromkeys(list(slow) + list(fast)):
        print(f"   {name:16s} generic {slow.get(name, 0) * 1e3:8.3f} ms   rule {fast.get(name, 0) * 1e3:8.3f} ms")
    print(f"   {'total':16s} generic {sum(slow.values()) * 1e3:8.3f} ms   rule {sum(fast.values()) * 1e3:8.3f} ms")


def main():
    rng = np.random.default_rng(0)
    F = gl.nn.functional
    x = gl.tensor(rng.standard_normal((128, 784)), dtype=gl.float32)
    compare("MLP 784-256-256-10, batch 128", mlp(gl), F.cross_entropy, (x, gl.tensor(rng.integers(0, 10, 128))))
    x = gl.tensor(rng.standard_normal((64, 1, 28, 28)), dtype=gl.float32)
    compare("CNN, batch 64", cnn(gl), F.cross_entropy, (x, gl.tensor(rng.integers(0, 10, 64))))
    x = gl.tensor(rng.standard_normal((16, 64, 128)), dtype=gl.float32)
    compare("pre-norm transformer block", transformer(gl), lambda out, y: out.sum(), (x, x))

    class Chain(gl.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = gl.nn.Parameter(gl.ones(16))

        def forward(self, x):
            for _ in range(100):
                x = x + self.w
            return x
    x = gl.ones(16)
    compare("chain of 100 adds (16 elements)", Chain(), lambda out, s: (out * s).sum(), (x, x))


if __name__ == "__main__":
    main()

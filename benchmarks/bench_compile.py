"""The compiled step (gl.compile.make_step) against eager gradlab and eager PyTorch CPU, in one run.

1. MLP 784-256-256-10 (ReLU), cross-entropy, SGD step, batch 128           target: compiled ≤ 0.85× torch
2. CNN (2 convs, pools, linear; bench_training's), SGD step, 64×1×28×28     target: ≤ 1.1×
3. LSTM(32, 64) over 20 steps, batch 32, a Linear on the last step, SGD step  target: ≤ 1.0×
4. pre-norm transformer block (bench_training's), forward + backward        target: ≤ 1.0×
   (make_step without an optimizer, loss = out.sum())
5. a chain of 100 adds of 16-element float32 tensors, forward + backward,
   in µs per op (a Module whose forward is x + w + w + ..., loss (out * y).sum())  target: ≤ 1.0 µs/op
6. peak memory of a deep MLP (16 × Linear(512, 512) + ReLU, batch 256, SGD step) with segments=1, 2, 4, "auto":
   the plan's own figure (``step.memory()["peak_bytes"]``), and what tracemalloc (which sees numpy's
   allocations) finds at the peak of one warm step, for the compiled steps and for eager

"compiled" is the step made from the backend calls its first call recorded (compile/trace.py, lower.py); its
first call (the eager step recorded, then lowered to a program) is timed too.
The models and weights are bench_training's (copied from the PyTorch model, so all compute the same
numbers). Without PyTorch it still runs and reports compiled against eager gradlab.
Run: python benchmarks/bench_compile.py
"""

from __future__ import annotations

import gc
import os
import sys
import time
import tracemalloc
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import gradlab as gl  # noqa: E402
from _timing import interleaved, try_import_torch  # noqa: E402
from bench_engine import CHAIN, SIZE  # noqa: E402
from bench_engine import chain as eager_chain  # noqa: E402
from bench_training import cnn, copy_weights, forward_backward, mlp, training_step, transformer  # noqa: E402


def build_pair(build, torch):
    """The gradlab model, with the PyTorch model's weights when torch is here (None in its place otherwise)."""
    if torch is None:
        gl.manual_seed(0)
        return build(gl), None
    torch.manual_seed(0)
    torch_model = build(torch)
    gradlab_model = build(gl)
    copy_weights(torch_model, gradlab_model)
    return gradlab_model, torch_model


def compiled_training_step(model, x, y, lr=0.01):
    step = gl.compile.make_step(model, gl.nn.functional.cross_entropy, optimizer=gl.optim.SGD(model.parameters(), lr=lr))
    return step, lambda: step(x, y)


FIRST_CALLS: dict = {}  # case -> seconds of the compiled step's first call (record + lower)


def first_call(title, run):
    """Make the step's first call now, timed."""
    started = time.perf_counter()
    run()
    FIRST_CALLS[title] = time.perf_counter() - started
    return run


def lstm(lib):
    """An LSTM classifier: LSTM(32, 64) over the sequence, a Linear(64, 10) on its last step."""

    class LastStep(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = lib.nn.LSTM(32, 64, batch_first=True)
            self.head = lib.nn.Linear(64, 10)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.head(out[:, -1])

    return LastStep()


def summed(out, y):
    return out.sum()


def compiled_forward_backward(model, x):
    step = gl.compile.make_step(model, summed)
    dummy = gl.zeros(1)

    def run():
        model.zero_grad()  # as the eager loop does: every call starts from no .grad
        step(x, dummy)

    return step, run


class AddChain(gl.nn.Module):
    """x + w + w + ... (CHAIN adds): bench_engine's chain as a model, so that make_step can compile it."""

    def __init__(self):
        super().__init__()
        self.w = gl.nn.Parameter(gl.ones(SIZE))

    def forward(self, x):
        y = x
        for _ in range(CHAIN):
            y = y + self.w
        return y


def weighted_sum(out, y):
    return (out * y).sum()


def timing_cases(torch, rng):
    """Each case: title, target, {candidate: fn}, the compiled steps (to report a fallback)."""
    cases = []
    train = {
        "MLP 784-256-256-10 SGD step, batch 128": (mlp, (128, 784), 10, "≤ 0.85× torch"),
        "CNN SGD step, 64x1x28x28": (cnn, (64, 1, 28, 28), 10, "≤ 1.1× torch"),
        "LSTM(32, 64), 20 steps, SGD step, batch 32": (lstm, (32, 20, 32), 10, "≤ 1.0× torch"),
    }
    for title, (build, shape, classes, target) in train.items():
        x_np, y_np = rng.standard_normal(shape), rng.integers(0, classes, shape[0])
        xg, yg = gl.tensor(x_np, dtype=gl.float32), gl.tensor(y_np)
        eager_model, torch_model = build_pair(build, torch)
        compiled_model, _ = build_pair(build, torch)
        step, compiled = compiled_training_step(compiled_model, xg, yg)
        candidates = {"compiled": first_call(title, compiled), "eager": training_step(gl, eager_model, xg, yg)}
        if torch is not None:
            candidates["torch"] = training_step(torch, torch_model, torch.tensor(x_np, dtype=torch.float32),
                                                torch.tensor(y_np))
        cases.append((title, target, candidates, step))

    x_np = rng.standard_normal((16, 64, 128))
    xg = gl.tensor(x_np, dtype=gl.float32)
    eager_model, torch_model = build_pair(transformer, torch)
    compiled_model, _ = build_pair(transformer, torch)
    title = "pre-norm transformer block fwd+bwd, 16x64x128"
    step, compiled = compiled_forward_backward(compiled_model, xg)
    candidates = {"compiled": first_call(title, compiled), "eager": forward_backward(eager_model, xg)}
    if torch is not None:
        candidates["torch"] = forward_backward(torch_model, torch.tensor(x_np, dtype=torch.float32))
    cases.append((title, "≤ 1.0× torch", candidates, step))

    x, seed = gl.ones(SIZE), gl.ones(SIZE)
    title = f"chain of {CHAIN} adds, {SIZE}-element float32, fwd+bwd"

    def chain_step():
        model = AddChain()
        step = gl.compile.make_step(model, weighted_sum)

        def run():
            step(x, seed)
            model.w.grad = None  # as bench_engine's chain does after each backward

        return step, run

    step, compiled = chain_step()
    candidates = {"compiled": first_call(title, compiled), "eager": eager_chain(gl)}
    if torch is not None:
        candidates["torch"] = eager_chain(torch)
    cases.append((title, "≤ 1.0 µs/op compiled", candidates, step))
    return cases


# --- peak memory ------------------------------------------------------------------------------------------


def deep_mlp(depth=16, width=512):
    gl.manual_seed(0)
    layers = []
    for _ in range(depth):
        layers += [gl.nn.Linear(width, width), gl.nn.ReLU()]
    return gl.nn.Sequential(*layers)


def held_at_peak(make, warm_calls=4) -> tuple:
    """The most bytes held at once during one warm call (tracemalloc, which sees numpy's allocations).

    Tracing starts before ``make()`` builds the model and its step, so the figure counts everything the
    step keeps: parameters, .grad, optimizer state, a plan's preallocated buffers, and the temporaries of
    the call itself. ``warm_calls`` come first ("auto" probes on the first batches). Returns (bytes, step).
    """
    gc.collect()
    tracemalloc.start()
    try:
        step, call = make()
        for _ in range(warm_calls):
            call()
        gc.collect()
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1], step
    finally:
        tracemalloc.stop()


def memory_rows(rng, batch=256, width=512):
    x = gl.tensor(rng.standard_normal((batch, width)), dtype=gl.float32)
    y = gl.tensor(rng.integers(0, width, batch))

    def eager():
        model = deep_mlp()
        opt = gl.optim.SGD(model.parameters(), lr=0.01)

        def call():
            opt.zero_grad()
            gl.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()

        return None, call

    def compiled(segments):
        def make():
            model = deep_mlp()
            step = gl.compile.make_step(model, gl.nn.functional.cross_entropy,
                                        optimizer=gl.optim.SGD(model.parameters(), lr=0.01), segments=segments)
            return step, lambda: step(x, y)

        return make

    # import everything the steps use first (a tiny model through every path): modules are not the step's memory
    for segments in (1, 2, "auto"):
        tiny = gl.nn.Sequential(gl.nn.Linear(4, 4), gl.nn.ReLU(), gl.nn.Linear(4, 4))
        warm = gl.compile.make_step(tiny, gl.nn.functional.cross_entropy,
                                    optimizer=gl.optim.SGD(tiny.parameters(), lr=0.01), segments=segments)
        for _ in range(4):
            warm(gl.ones(2, 4), gl.tensor([0, 1]))
    held, _ = held_at_peak(eager)
    rows = [("eager", None, held, None, None)]
    candidates, steps, helds = {"eager": eager()[1]}, {}, {}
    for segments in (1, 2, 4, "auto"):
        helds[segments], steps[segments] = held_at_peak(compiled(segments))
        candidates[segments] = (lambda s: lambda: s(x, y))(steps[segments])
    times = interleaved(candidates, rounds=3, repeats=5, warmup=1)
    rows[0] = rows[0][:3] + (times["eager"], None)
    for segments, step in steps.items():
        label = f"segments={segments}" + (f" (chose {step.segments})" if segments == "auto" else "")
        rows.append((label, step.memory()["peak_bytes"], helds[segments], times[segments], step.fallback))
    return rows


# --- report ---------------------------------------------------------------------------------------------


def main():
    torch = try_import_torch()
    print(f"numpy {np.__version__}, torch {torch.__version__ if torch else 'not installed'}, "
          f"{os.cpu_count()} cpus" + (f", torch threads {torch.get_num_threads()}" if torch else ""))
    if torch is None:
        print("PyTorch is not installed: compiled is compared with eager gradlab only (pip install torch==2.13.0)")
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    rows = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", gl.compile.CompileWarning)
        for title, target, candidates, step in timing_cases(torch, rng):
            times = interleaved(candidates, rounds=7, repeats=10, warmup=2)
            rows.append((title, target, times, step.fallback))
        memory = memory_rows(rng)
    for w in caught:
        print(f"warning: {w.category.__name__}: {w.message}")

    print("\ntime per step; ratios to PyTorch CPU eager measured in this run")
    header = f"{'case':52s} {'torch':>9s} {'eager':>9s} {'compiled':>9s} {'eager/torch':>11s} " \
             f"{'comp/torch':>10s} {'comp/eager':>10s}  target"
    print(header)
    print("-" * len(header))
    for title, target, times, fallback in rows:
        per_op = "adds" in title
        scale, unit = (1e6 / CHAIN, "µs/op") if per_op else (1e3, "ms")

        def shown(name):
            return f"{times[name] * scale:7.2f}" if name in times else "      —"

        def ratio(a, b):
            return f"{times[a] / times[b]:.2f}x" if a in times and b in times else "—"

        print(f"{title:52s} {shown('torch'):>9s} {shown('eager'):>9s} {shown('compiled'):>9s} "
              f"{ratio('eager', 'torch'):>11s} {ratio('compiled', 'torch'):>10s} "
              f"{ratio('compiled', 'eager'):>10s}  {target} ({unit})")
        if fallback:
            print(f"   compiled fell back to eager: {fallback}")

    print("\nfirst call of the compiled step (the eager step recorded, then lowered), ms")
    for title, *_ in rows:
        print(f"{title:52s} {FIRST_CALLS[title] * 1e3:8.1f}")

    print("\npeak memory, deep MLP 16 x Linear(512, 512) + ReLU, batch 256, float32, SGD step")
    print("   planned: step.memory()['peak_bytes'] (the plan's intermediate values);")
    print("   held: the most bytes held at once in one warm step, everything counted (parameters 16 MiB, .grad,")
    print("   optimizer state, preallocated buffers, temporaries), from tracemalloc")
    eager_bytes = memory[0][2]
    one_program = memory[1][1]
    print(f"{'':24s} {'planned MiB':>11s} {'/ seg=1':>8s} {'held MiB':>9s} {'/ eager':>8s} {'ms/step':>8s}")
    for label, planned, held, seconds, fallback in memory:
        shown = f"{planned / 2**20:11.2f} {planned / one_program:7.2f}x" if planned is not None else f"{'—':>11s} {'':>8s}"
        print(f"{label:24s} {shown} {held / 2**20:9.2f} {held / eager_bytes:7.2f}x {seconds * 1e3:8.2f}"
              + (f"  fell back: {fallback}" if fallback else ""))
    print(f"\n({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()

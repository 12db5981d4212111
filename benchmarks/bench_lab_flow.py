"""What GradientFlow adds to a training step, as ratios measured in one run.

    python benchmarks/bench_lab_flow.py

The examples' two models, each trained the way its example does (Adam, its batch size):
* the spiral MLP (examples/spiral_mlp.py: 2-64-64-2, ReLU, batch 32) — target < 1.15;
* the digits CNN (examples/digits_cnn.py: two 3×3 convolutions + pooling + Linear, batch 64) — target < 1.05.
Three candidates, interleaved so that machine noise hits them alike: the plain step; the step with
``flow.update()`` (``gradlab.lab.flow.Flow``: hooks, figures, a histogram every 20th step); and the
step with the ``GradientFlow`` widget (the same, plus its throttled pushes to the front end).
Three pairings of the same steps: medians of short interleaved rounds (benchmarks/_timing.py),
medians of single steps taken in turn, and the same in CPU time (``time.process_time``: on a shared
machine, the time spent waiting for a core is not the flow's).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

import statistics  # noqa: E402
import time  # noqa: E402

import gradlab as gl  # noqa: E402
import gradlab.nn as nn  # noqa: E402
from _timing import interleaved  # noqa: E402
from gradlab.data import load_digits, make_synthetic  # noqa: E402
from gradlab.lab.flow import Flow  # noqa: E402

import digits_cnn  # noqa: E402
import spiral_mlp  # noqa: E402


def training_step(build, x, y, lr, watch=None):
    """One Adam step of a fresh copy of the model (same seed), with ``watch(model)`` updating after it."""
    gl.manual_seed(0)
    model = build()
    optimizer = gl.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    flow = watch(model) if watch is not None else None

    def step():
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        if flow is not None:
            flow.update(loss)

    return step


def widget(model):
    from gradlab.lab.gradient_flow import GradientFlow

    return GradientFlow(model)


def alternating(candidates: dict, steps: int, clock=time.perf_counter) -> dict:
    """Median seconds per step with the candidates taking turns one step at a time: the fairest pairing
    on a shared machine, where the load changes from one second to the next. With
    ``clock=time.process_time`` it counts the CPU time this process spent, not time waiting for a core."""
    samples = {name: [] for name in candidates}
    for _ in range(steps):
        for name, fn in candidates.items():
            start = clock()
            fn()
            samples[name].append(clock() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def cases():
    X, y = make_synthetic("spiral", n=1000, seed=0)
    yield "spiral MLP step, batch 32", spiral_mlp.build_model, X[:32], y[:32], 0.01, 1.15, (41, 5)
    images, labels = load_digits()
    yield "digits CNN step, batch 64", digits_cnn.build_model, images[:64], labels[:64], 0.003, 1.05, (21, 2)


def main():
    try:
        import anywidget  # noqa: F401
        watchers = {"flow.update()": Flow, "GradientFlow": widget}
    except ImportError:
        print("anywidget is not installed: timing the figures (Flow) only, not the widget")
        watchers = {"flow.update()": Flow}
    for title, build, x, y, lr, target, (rounds, repeats) in cases():
        candidates = {"plain": training_step(build, x, y, lr)}
        candidates.update({name: training_step(build, x, y, lr, watch) for name, watch in watchers.items()})
        # many short rounds: on a shared machine the load drifts, and each round sees all three alike
        blocks = interleaved(candidates, rounds=rounds, repeats=repeats, warmup=3)
        turns = alternating(candidates, steps=rounds * repeats * 2)
        cpu = alternating(candidates, steps=rounds * repeats * 2, clock=time.process_time)
        print(f"\n{title}   (target < {target}x)")
        print(f"   {'':14s} {'rounds of ' + str(repeats) + ' steps':>24s}   {'one step each in turn':>24s}"
              f"   {'in turn, CPU time':>24s}")
        for name in candidates:
            cells = []
            for times in (blocks, turns, cpu):
                ratio = "" if name == "plain" else f" {times[name] / times['plain']:.3f}x"
                cells.append(f"{times[name] * 1e3:8.3f} ms{ratio:>8s}")
            print(f"   {name:14s} {cells[0]:>24s}   {cells[1]:>24s}   {cells[2]:>24s}")


if __name__ == "__main__":
    main()

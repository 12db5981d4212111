"""What GradientFlow adds to a training step, as ratios measured in one run.

    python benchmarks/bench_lab_flow.py

The examples' two models, each trained the way its example does (Adam, its batch size):
* the spiral MLP (examples/spiral_mlp.py: 2-64-64-2, ReLU, batch 32) — target < 1.15;
* the digits CNN (examples/digits_cnn.py: two 3×3 convolutions + pooling + Linear, batch 64) — target < 1.05.
Three candidates, interleaved so that machine noise hits them alike: the plain step; the step with
``flow.update()`` (``gradlab.lab.flow.Flow``: hooks, figures, a histogram every 20th step); and the
step with the ``GradientFlow`` widget (the same, plus its throttled pushes to the front end).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
sys.path.insert(0, HERE)

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


def cases():
    X, y = make_synthetic("spiral", n=1000, seed=0)
    yield "spiral MLP step, batch 32", spiral_mlp.build_model, X[:32], y[:32], 0.01, 1.15, 30
    images, labels = load_digits()
    yield "digits CNN step, batch 64", digits_cnn.build_model, images[:64], labels[:64], 0.003, 1.05, 10


def main():
    try:
        import anywidget  # noqa: F401
        watchers = {"flow.update()": Flow, "GradientFlow": widget}
    except ImportError:
        print("anywidget is not installed: timing the figures (Flow) only, not the widget")
        watchers = {"flow.update()": Flow}
    for title, build, x, y, lr, target, repeats in cases():
        candidates = {"plain": training_step(build, x, y, lr)}
        candidates.update({name: training_step(build, x, y, lr, watch) for name, watch in watchers.items()})
        times = interleaved(candidates, rounds=11, repeats=repeats, warmup=3)
        print(f"\n{title}")
        for name, seconds in times.items():
            ratio = "" if name == "plain" else f"   {seconds / times['plain']:.3f}x  (target < {target})"
            print(f"   {name:14s} {seconds * 1e3:7.3f} ms{ratio}")


if __name__ == "__main__":
    main()

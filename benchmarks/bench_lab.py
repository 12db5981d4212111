"""The lab's costs on the Python side: what recording adds to a forward, and drawing a big graph.

    python benchmarks/bench_lab.py

* capture overhead: a forward pass inside ``gl.lab.record()`` against the same forward without it
  (ratio; target < 1.2), for the spiral MLP and a pre-norm transformer block;
* a ~2,000-node recorded graph: capture + first layout + SVG (opens collapsed by module), the
  layout and SVG when everything is open, and opening one module afterwards.
Browser-side figures (restyle after a step, click round trip) come from the browser tests'
timing run: see docs/lab.md.
"""

from __future__ import annotations

import statistics
import time

import gradlab as gl
import gradlab.nn as nn
from _timing import interleaved
from gradlab.lab.scene import Scene
from gradlab.lab.svg import render


def mlp_forward():
    model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    x, y = gl.randn(32, 2), gl.randint(0, 2, (32,))
    loss_fn = nn.CrossEntropyLoss()
    return lambda: loss_fn(model(x), y)


def transformer_forward():
    block = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, norm_first=True, dropout=0.0)
    x = gl.randn(16, 8, 64)
    return lambda: block(x).sum()


def recorded(fn):
    def run():
        with gl.lab.record():
            return fn()
    return run


def deep_model(blocks: int):
    layers = []
    for _ in range(blocks):
        layers += [nn.Linear(16, 16), nn.LayerNorm(16), nn.GELU()]
    return nn.Sequential(*[nn.Sequential(*layers[i:i + 3]) for i in range(0, len(layers), 3)])


def seconds(fn, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    print("capture overhead (forward inside gl.lab.record() / plain forward):")
    for name, make in (("spiral MLP, batch 32", mlp_forward), ("pre-norm transformer block 16×8×64", transformer_forward)):
        fn = make()
        times = interleaved({"plain": fn, "recorded": recorded(fn)}, rounds=5, repeats=20)
        print(f"  {name:38s} {times['recorded'] / times['plain']:.2f}×  ({times['plain'] * 1e3:.2f} ms plain)")

    model = deep_model(290)
    x = gl.randn(4, 16)
    with gl.lab.record() as rec:
        loss = model(x).sum()
    graph = gl.lab.capture(rec)
    print(f"\na recorded graph of {len(graph.nodes)} nodes in {len(graph.groups)} module calls:")

    def first_view():
        scene = Scene(gl.lab.capture(rec))
        return render(scene)

    print(f"  capture + first layout + SVG (opens collapsed): {seconds(first_view):.3f} s")
    scene = Scene(graph)
    everything = frozenset(scene.members)
    print(f"  layout + SVG with every module open:            {seconds(lambda: render(Scene(graph), Scene(graph).placement(everything))):.3f} s")

    def open_one():
        s = Scene(graph)
        s.placement()
        closed = sorted(set(s.members) - s.expanded)
        target = closed[len(closed) // 2] if closed else next(iter(s.members))
        start = time.perf_counter()
        s.toggle(target)
        render(s)
        return time.perf_counter() - start

    print(f"  opening one module (layout + SVG):              {statistics.median(open_one() for _ in range(5)):.3f} s")
    del loss


if __name__ == "__main__":
    main()

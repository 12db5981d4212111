"""What ``with gl.lab.record():`` adds to a forward, as a ratio measured in one run (goal: under 1.3×).

    python benchmarks/bench_record_overhead.py
    python benchmarks/bench_record_overhead.py --runs 1000   # more runs (a noisy machine)

Each model's forward (and loss) runs plain and inside ``gl.lab.record()``, one after the other, many
times; the figure is the fastest recorded run over the fastest plain run (on a shared machine the
fastest is the one the other processes disturbed least). numpy's BLAS uses one thread here, so that
the big matmuls do not swing with the machine's load. The models: the playground's spiral MLP (2-16-16-1, tanh, a batch of 32: almost all
per-operation overhead), a GPT-2 small block (d_model 768, 12 heads, 8 tokens: tests/lab_big_models.py)
and a small pre-norm transformer block (d_model 64), where the per-op cost weighs more.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")  # (before numpy is imported)

import gradlab as gl  # noqa: E402
import gradlab.nn as nn  # noqa: E402
from gradlab.lab.playground_training import build_mlp  # noqa: E402
from tests.lab_big_models import gpt2_block  # noqa: E402

GOAL = 1.3


def spiral_mlp():
    model = build_mlp(depth=2, width=16, activation="tanh", seed=0)
    x, y = gl.randn(32, 2), (gl.randn(32, 1) > 0).float()
    return lambda: nn.functional.binary_cross_entropy_with_logits(model(x), y)


def gpt2_small_block():
    gl.manual_seed(0)
    block = gpt2_block(gl)
    x = gl.randn(1, 8, 768)
    return lambda: block(x).sum()


def small_transformer_block():
    gl.manual_seed(0)
    block = gpt2_block(gl, n_embd=64, n_head=4)
    x = gl.randn(4, 16, 64)
    return lambda: block(x).sum()


def recorded(fn):
    def run():
        with gl.lab.record():
            return fn()
    return run


def fastest(candidates: dict, runs: int) -> dict:
    """The fastest of ``runs`` runs of each candidate, run in turn (after a few runs to warm up)."""
    best = {name: float("inf") for name in candidates}
    for name, fn in candidates.items():
        for _ in range(5):
            fn()
    for _ in range(runs):
        for name, fn in candidates.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300, help="timed runs of each (default 300)")
    args = parser.parse_args()
    print(f"record() overhead: forward inside gl.lab.record() / plain forward (goal < {GOAL}×)")
    for name, make in (("spiral MLP 2-16-16-1, batch 32", spiral_mlp),
                       ("transformer block d 64, 4 heads, 4×16", small_transformer_block),
                       ("GPT-2 small block d 768, 12 heads, 1×8", gpt2_small_block)):
        fn = make()
        runs = args.runs if name.startswith("spiral") else max(args.runs // 10, 10)
        times = fastest({"plain": fn, "recorded": recorded(fn)}, runs)
        print(f"  {name:40s} {times['recorded'] / times['plain']:.2f}×   "
              f"({times['plain'] * 1e3:.3f} ms plain, {times['recorded'] * 1e3:.3f} ms recorded)")


if __name__ == "__main__":
    main()

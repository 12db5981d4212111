"""Where the time ``with gl.lab.record():`` adds to a tiny forward goes, piece by piece (one BLAS thread).

    python benchmarks/bench_record_pieces.py
    python benchmarks/bench_record_pieces.py --runs 5000   # more runs (a noisy machine)

The spiral MLP of bench_record_overhead.py (2-16-16-1, tanh, batch 32: 6 operations, 6 module calls) runs
plain, then with observers and module hooks that do nothing (what the engine pays to tell anyone at all),
then recorded. Each figure is the fastest of many runs; the differences are the pieces:

- entering and leaving ``record()`` with nothing inside it;
- the engine's machinery: ``observers.notify`` in ``Function.apply``, the global hooks in ``Module.__call__``;
- record's own bookkeeping (its observer and hooks): what is left.
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
from gradlab.autograd import observers  # noqa: E402
from gradlab.nn.modules import module as module_hooks  # noqa: E402
from benchmarks.bench_record_overhead import spiral_mlp  # noqa: E402


def fastest(fn, runs: int) -> float:
    """The fastest of ``runs`` runs of ``fn``, in microseconds (after a few to warm up)."""
    for _ in range(5):
        fn()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e6


def with_empty(fn, ops: bool, modules: bool):
    """``fn`` run while observers (``ops``) and global module hooks (``modules``) that do nothing listen."""
    def run():
        handles = []
        if ops:
            handles += [observers.subscribe(lambda record: None), observers.watch_writes(lambda target, source: None)]
        if modules:
            handles += [module_hooks.register_module_forward_pre_hook(lambda module, args: None),
                        module_hooks.register_module_forward_hook(lambda module, args, output: None, always_call=True)]
        try:
            return fn()
        finally:
            for handle in handles:
                handle.remove()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000, help="timed runs of each (default 2000)")
    args = parser.parse_args()
    forward = spiral_mlp()
    with gl.lab.record() as rec:
        forward()
    ops, calls = len(rec), len(rec.calls)

    def empty_record():
        with gl.lab.record():
            pass

    def recorded():
        with gl.lab.record():
            return forward()

    t = {name: fastest(fn, args.runs) for name, fn in (
        ("plain", forward), ("enter/exit", empty_record), ("empty observers", with_empty(forward, True, False)),
        ("empty module hooks", with_empty(forward, False, True)), ("both", with_empty(forward, True, True)),
        ("recorded", recorded))}
    print(f"spiral MLP: {ops} operations, {calls} module calls; fastest of {args.runs} runs each")
    print(f"  plain forward                          {t['plain']:7.1f} µs")
    print(f"  record() entered and left, empty       {t['enter/exit']:7.1f} µs")
    print(f"  engine machinery, ops (observers)      {t['empty observers'] - t['plain']:7.1f} µs")
    print(f"  engine machinery, module hooks         {t['empty module hooks'] - t['plain']:7.1f} µs")
    print(f"  record's bookkeeping                   {t['recorded'] - t['both'] - t['enter/exit']:7.1f} µs")
    print(f"  recorded forward                       {t['recorded']:7.1f} µs  ({t['recorded'] / t['plain']:.2f}×)")


if __name__ == "__main__":
    main()

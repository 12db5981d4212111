"""What profiling costs: ``gl.lab.profile`` against a plain forward + backward, as ratios in one run.

1. Lab 5's spiral MLP (2-32-32-2, ReLU, cross-entropy), batch 32: tiny ops, where the Python
   around each op is most of the time.
2. A digits CNN (8×8 images: Conv2d 1→8 and 8→16, 3×3 pad 1, ReLU, 2×2 max-pool after each,
   Linear to 10), batch 64.

For each: the plain forward + backward; the same under ``record()`` (the lab's everyday tool) now,
and as it was before it read the clock (the same class without the readings); and
``gl.lab.profile`` (forward recorded and synchronised, backward driven step by step and timed,
gradients restored). Target: profiling adds < 30 %. Run: python benchmarks/bench_lab_profile.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))

import gradlab as gl  # noqa: E402
import gradlab.lab  # noqa: E402  (its module record.py is shadowed by the function record)
import gradlab.nn as nn  # noqa: E402
from _timing import measure  # noqa: E402
from gradlab.data import make_synthetic  # noqa: E402

record_module = sys.modules["gradlab.lab.record"]


class RecordingBefore(record_module.Recording):
    """``Recording`` as it was before it read the clock: the observers note the event, no more."""

    def _on_op(self, record):
        where = record_module._where(nested_possible=record.node is None)
        if where is not None:
            self._ops.append((record, self._stack[-1] if self._stack else -1, where))

    def _on_enter(self, module, args):
        self._stack.append(len(self._calls))
        self._calls.append((module, self._stack[-2] if len(self._stack) > 1 else -1))

    def _on_exit(self, module, args, output):
        for i in range(len(self._stack) - 1, -1, -1):
            if self._calls[self._stack[i]][0] is module:
                del self._stack[i:]
                break

    def _restart_clock(self):
        pass


def spiral_mlp():
    gl.manual_seed(0)
    X, y = make_synthetic("spiral", n=600, seed=0)
    model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 2))
    return model, X[:32], y[:32]


def digits_cnn():
    gl.manual_seed(0)
    rng = np.random.default_rng(0)
    try:
        from gradlab.data import load_digits
        images, labels = load_digits()
        x, y = images[:64].reshape(64, 1, 8, 8), labels[:64]
    except ImportError:  # scikit-learn absent: the same shapes, random pixels
        x, y = gl.tensor(rng.random((64, 1, 8, 8), dtype=np.float32)), gl.tensor(rng.integers(0, 10, 64))
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 2 * 2, 10))
    return model, x, y


def cases(model, x, y):
    loss_fn = nn.CrossEntropyLoss()

    def forward():
        return loss_fn(model(x), y)

    def plain():
        model.zero_grad()
        forward().backward()

    def recorded(recording_class):
        def run():
            model.zero_grad()
            recorder = gl.lab.record()
            recorder.recording = recording_class()
            with recorder:
                loss = forward()
            loss.backward()
        return run

    def profiled():
        gl.lab.profile(forward)

    return {"plain": plain, "record (before)": recorded(RecordingBefore),
            "record (now)": recorded(record_module.Recording), "profile": profiled}


def least_disturbed(candidates: dict, samples: int = 40, inner: int = 10) -> dict:
    """Seconds per call of each candidate: the fastest of ``samples`` short runs of ``inner`` calls,
    the candidates taking turns run by run. On a shared machine the least disturbed run compares like
    with like; a median mixes in whatever the neighbours were doing at the time."""
    for fn in candidates.values():
        measure(fn, repeats=1, warmup=3, inner=1)
    best = dict.fromkeys(candidates, float("inf"))
    for _ in range(samples):
        for name, fn in candidates.items():
            best[name] = min(best[name], measure(fn, repeats=1, warmup=0, inner=inner)["median"])
    return best


def main():
    print(f"numpy {np.__version__}, {os.cpu_count()} cpus; the fastest of 40 interleaved runs of 10 calls")
    for title, build in (("spiral MLP 2-32-32-2, batch 32", spiral_mlp), ("digits CNN 8×8, batch 64", digits_cnn)):
        model, x, y = build()
        times = least_disturbed(cases(model, x, y))
        base = times["plain"]
        print(f"\n{title}: forward + backward")
        for name, seconds in times.items():
            print(f"   {name:16s} {seconds * 1e3:7.3f} ms   {seconds / base:5.2f}x plain")
        print(f"   record() now / before the clock = {times['record (now)'] / times['record (before)']:.3f}x")
        print(f"   profiling adds {100 * (times['profile'] / base - 1):.0f} % (target < 30 %)")


if __name__ == "__main__":
    main()

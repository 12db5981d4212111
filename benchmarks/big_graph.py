"""The lab on a graph of 20,000 operations: drawing it, saving it, stepping through its backward.

    python benchmarks/big_graph.py              # the 20,000-op chain and a 290-block model
    python benchmarks/big_graph.py --steps 20   # fewer steps timed per place (a slow stepper)

A long chain (``y = y * 1.0001 + 0.001``, 10,000 times, then ``.sum()``) recorded with
``gl.lab.record()``, and for comparison a realistic model (bench_lab's 290 blocks of Linear,
LayerNorm and GELU: 2,032 nodes). For each:

* the first drawing: ``GraphView(rec)`` (capture, layout, SVG, the state it sends) plus the
  notebook's mime bundle (the static picture beside the widget);
* the saved cell: that mime bundle and the widget's synced state as JSON, which is what nbformat
  stores (the output, and the widget state in the notebook's metadata);
* ``BackpropStepper.step()``: the median over a run of steps at the start, the middle and the end,
  each with the state it sends (the comm serialises every message, as a kernel would);
* ``step_back()`` at depths 10, the middle and 10 from the end.

Goals (issue 17): first drawing ≤ 1.5 s, step() ≤ 10 ms and step_back() ≤ 50 ms at any depth,
a saved cell ≤ 5 MB. Times are wall-clock medians on whatever machine runs this: a shared
machine's load moves them, so compare runs made side by side.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import gradlab as gl
import gradlab.nn as nn

GOALS = {"first drawing": 1.5, "step": 0.010, "step_back": 0.050, "saved cell": 5e6}


def chain(ops: int = 20_000):
    """A recorded chain of ``ops`` elementwise operations on a 4-vector, summed."""
    gl.manual_seed(0)
    x = gl.randn(4, requires_grad=True)
    with gl.lab.record() as rec:
        y = x
        for _ in range(ops // 2):
            y = y * 1.0001 + 0.001
        loss = y.sum()
    return rec, loss


def deep_model(blocks: int = 290):
    """bench_lab's model: Linear, LayerNorm, GELU per block, each block an nn.Sequential."""
    gl.manual_seed(0)
    layers = []
    for _ in range(blocks):
        layers += [nn.Sequential(nn.Linear(16, 16), nn.LayerNorm(16), nn.GELU())]
    model = nn.Sequential(*layers)
    x = gl.randn(4, 16)
    with gl.lab.record() as rec:
        loss = model(x).sum()
    return rec, loss


def listen(widget) -> list:
    """Serialise every message the widget sends, as the kernel's comm would; returns their sizes."""
    sizes = []

    def publish(msg_type, data=None, metadata=None, buffers=None, **keys):
        sizes.append(len(json.dumps(data, separators=(",", ":"))))

    widget.comm.publish_msg = publish
    return sizes


def saved_bytes(widget) -> tuple:
    """(mime bundle, widget state) as JSON bytes: what a saved notebook holds for this cell."""
    data, _ = widget._repr_mimebundle_()
    return len(json.dumps(data).encode()), len(json.dumps(widget.get_state()).encode())


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def first_drawing(rec) -> dict:
    seconds, view = timed(lambda: gl.lab.GraphView(rec))
    bundle_s, _ = timed(view._repr_mimebundle_)
    mime, state = saved_bytes(view)
    figures = {"nodes": len(view.graph.nodes), "view": seconds, "bundle": bundle_s, "first drawing": seconds + bundle_s,
               "mime": mime, "state": state, "saved cell": mime + state, "svg": len(view.svg)}
    view.close()
    return figures


def stepping(rec, steps: int) -> dict:
    """step() medians at the start, middle and end; step_back() at three depths; bytes sent per step."""
    stepper = gl.lab.BackpropStepper(rec)
    sizes = listen(stepper)
    total = stepper.total_steps
    stepper.run_to_end()
    order = [s["node"] for s in stepper.stepping.steps]
    stepper.reset()
    figures = {"total": total}

    def go(depth):  # be just after step `depth` (run_to: one redraw, not one per step)
        if depth == 0:
            stepper.reset()
        else:
            stepper.run_to(order[depth - 1])
        assert stepper.step_index == depth, (stepper.step_index, depth)

    for where, start in (("start", 0), ("middle", total // 2), ("end", total - steps)):
        go(start)
        times = []
        del sizes[:]
        for _ in range(steps):
            t, _ = timed(stepper.step)
            times.append(t)
        figures[f"step {where}"] = statistics.median(times)
        figures[f"sent {where}"] = statistics.median(sizes) if sizes else 0
    for depth in (10, total // 2, total - 10):
        go(depth)
        times = []
        for _ in range(3):
            t, _ = timed(stepper.step_back)
            times.append(t)
            stepper.step()
        figures[f"back {depth}"] = statistics.median(times)
    stepper.close()
    return figures


def report(name: str, drawing: dict, steps: dict) -> None:
    print(f"\n{name}: {drawing['nodes']:,} nodes, {steps['total']:,} backward steps")
    print(f"  GraphView(rec)                    {drawing['view']:8.3f} s")
    print(f"  + mime bundle (static picture)    {drawing['bundle']:8.3f} s")
    print(f"  first drawing                     {drawing['first drawing']:8.3f} s   goal ≤ {GOALS['first drawing']} s")
    print(f"  svg traitlet                      {drawing['svg'] / 1e6:8.2f} MB")
    print(f"  saved cell: mime bundle + state   {drawing['mime'] / 1e6:8.2f} + {drawing['state'] / 1e6:.2f} = "
          f"{drawing['saved cell'] / 1e6:.2f} MB   goal ≤ {GOALS['saved cell'] / 1e6:.0f} MB")
    for where in ("start", "middle", "end"):
        print(f"  step() at the {where:6s}               {steps[f'step {where}'] * 1e3:8.2f} ms   "
              f"({steps[f'sent {where}'] / 1e3:.1f} kB sent)   goal ≤ {GOALS['step'] * 1e3:.0f} ms")
    for key in (k for k in steps if k.startswith("back ")):
        print(f"  step_back() at depth {int(key[5:]):<6,d}       {steps[key] * 1e3:8.2f} ms   "
              f"goal ≤ {GOALS['step_back'] * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps timed at each place (default 200)")
    parser.add_argument("--ops", type=int, default=20_000, help="operations in the chain (default 20,000)")
    parser.add_argument("--skip-model", action="store_true", help="only the chain")
    args = parser.parse_args()
    rec, loss = chain(args.ops)
    report(f"chain of {args.ops:,} ops", first_drawing(rec), stepping(rec, args.steps))
    del rec, loss
    if not args.skip_model:
        rec, loss = deep_model()
        report("290 blocks of Linear + LayerNorm + GELU", first_drawing(rec), stepping(rec, args.steps))


if __name__ == "__main__":
    main()

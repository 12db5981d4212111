"""What one live redraw of the playground costs, for the default net (spirals, 2-8-8-1 tanh, Adam, batch 32).

    python benchmarks/bench_playground.py

A redraw is what the training thread does every ``interval`` (0.1 s) while it trains: the grid's
40 × 40 forward, the accuracy on the 400 points, the SVG text, and the traitlets set in one
``hold_sync`` (here with no kernel, so nothing goes over a socket: the state size says what would).
Measured after 0, 2,000 and 20,000 steps (the charts thin to 300 points, so the cost stops growing).
Target: under 50 ms. Also: steps per second while the thread trains and redraws.
"""

from __future__ import annotations

import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

import gradlab as gl  # noqa: E402
from _timing import measure  # noqa: E402
from gradlab.lab.playground_data import grid_centres  # noqa: E402
from gradlab.lab.playground_picture import playground_svg  # noqa: E402


def state_bytes(panel) -> int:
    """The JSON a redraw sends: the traitlets it sets."""
    return len(json.dumps({key: getattr(panel, key) for key in ("svg", "status", "step", "running")}))


def main() -> None:
    pg = gl.lab.Playground()
    print("default net:", pg.caption())
    for steps in (0, 2000, 18000):
        if steps:
            pg.step(steps)
        redraw = measure(pg._draw, repeats=30, warmup=3)
        picture = measure(lambda: playground_svg(pg.training, pg.caption()), repeats=30, warmup=3)
        grid = measure(lambda: pg.training.predict(grid_centres()), repeats=30, warmup=3)
        print(f"after {pg.training.step_count:>6} steps: one redraw {redraw['median'] * 1e3:5.1f} ms "
              f"(p90 {redraw['p90'] * 1e3:5.1f}; of it the SVG with its grid forward {picture['median'] * 1e3:5.1f} ms, "
              f"the grid forward alone {grid['median'] * 1e3:4.2f} ms) · state {state_bytes(pg.panel) / 1024:5.1f} KiB "
              f"(svg {len(pg.panel.svg) / 1024:5.1f} KiB, {pg.panel.svg.count('<rect')} rectangles)")
    pg.reset()
    pg.train()
    time.sleep(3.0)
    pg.pause()
    print(f"training in the thread, redrawing every {pg.interval:g} s: {pg.training.step_count / 3.0:.0f} steps/s")


if __name__ == "__main__":
    main()

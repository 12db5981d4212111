"""A ResNet-18 and a 12-block GPT-2 small in the lab: where the first drawing's time goes.

    python benchmarks/bench_big_graphs.py            # gradlab's models (and PyTorch's, where it is installed)
    python benchmarks/bench_big_graphs.py --repeat 5 # best of 5 per phase

Each model (tests/lab_big_models.py: the same code in ``gradlab.nn`` and ``torch.nn``) is run once
under ``gl.lab.record()``, then drawn as ``GraphView(rec)`` does it, phase by phase: capture (the
recording becomes a Graph), the scene (sizes, groups, which open), the layout, the SVG, the state
as JSON (what the comm sends), the static mime bundle; then one module opened (layout + SVG + the
details of the new boxes). Goals (issue 20): the first drawing under 1.5 s, a module opened under
200 ms. Times are the best of ``--repeat`` runs, wall clock, on whatever machine runs this.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gradlab as gl  # noqa: E402
from gradlab.lab.capture import capture  # noqa: E402
from gradlab.lab.scene import Scene  # noqa: E402
from gradlab.lab.svg import render  # noqa: E402
from tests.lab_big_models import gpt2, resnet18  # noqa: E402

GOALS = {"first drawing": 1.5, "open a module": 0.200}


def recorded(lib, name):
    """(recording, output, model) of one forward of the named model in ``lib`` (gradlab or torch)."""
    lib.manual_seed(0)
    if name == "ResNet-18":
        model, x = resnet18(lib), lib.randn(1, 3, 64, 64)
    else:
        model, x = gpt2(lib), lib.randint(0, 50257, (1, 8))
    with gl.lab.record() as rec:
        out = model(x).sum()
    return rec, out, model


def best(fn, repeat):
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def phases(obj, repeat, names=None) -> dict:
    """Each phase of drawing ``obj`` (a recording, or a tensor whose graph is drawn with ``names``)."""
    figures = {}
    figures["capture"], graph = best(lambda: capture(obj, names), repeat)
    figures["scene (sizes, groups, open)"], scene = best(lambda: Scene(graph), repeat)

    def lay_out_again():  # the layout alone, of the groups open at first, from an empty cache
        scene.layout._cache.clear()
        scene._placements.clear()
        return scene.placement()

    figures["layout"], placement = best(lay_out_again, repeat)
    figures["svg"], svg = best(lambda: render(scene), repeat)
    figures["GraphView(rec) in all"], view = best(lambda: gl.lab.GraphView(obj, names=names), repeat)
    state = view.get_state()
    figures["state as JSON"], text = best(lambda: json.dumps(state, separators=(",", ":")), repeat)
    figures["mime bundle"], _ = best(view._repr_mimebundle_, repeat)
    figures["first drawing"] = figures["GraphView(rec) in all"] + figures["state as JSON"] + figures["mime bundle"]
    closed = [g for g in view.scene.members if g not in view.scene.expanded
              and view.scene.placement().boxes.get(g) is not None]
    figures["boxes drawn"] = len(placement.boxes)
    figures["nodes"] = len(graph.nodes)
    figures["drawing px"] = (round(placement.width), round(placement.height))
    figures["svg MB"] = len(svg) / 1e6
    figures["state MB"] = len(text) / 1e6
    if closed:
        biggest = max(closed, key=lambda g: len(view.scene.members[g]))
        start = time.perf_counter()
        view.toggle(biggest)
        figures["open a module"] = time.perf_counter() - start
        figures["module opened"] = f"{biggest} ({len(view.scene.members[biggest])} nodes)"
    view.close()
    return figures


def report(title, figures) -> None:
    print(f"\n{title}: {figures['nodes']:,} nodes, {figures['boxes drawn']} boxes drawn at first, "
          f"{figures['drawing px'][0]:,} × {figures['drawing px'][1]:,} px")
    for key in ("capture", "scene (sizes, groups, open)", "layout", "svg", "GraphView(rec) in all",
                "state as JSON", "mime bundle"):
        print(f"  {key:34s} {figures[key]:7.3f} s")
    print(f"  {'first drawing (view + JSON + bundle)':34s} {figures['first drawing']:7.3f} s   "
          f"goal < {GOALS['first drawing']} s")
    print(f"  svg {figures['svg MB']:.2f} MB, state {figures['state MB']:.2f} MB")
    if "open a module" in figures:
        print(f"  {'open ' + figures['module opened']:34s} {figures['open a module'] * 1e3:7.1f} ms  "
              f"goal < {GOALS['open a module'] * 1e3:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per phase; the best is shown (default 3)")
    parser.add_argument("--only", choices=["gradlab", "torch"], help="one library's models only")
    args = parser.parse_args()
    libs = []
    if args.only != "torch":
        libs.append(("gradlab", gl))
    if args.only != "gradlab":
        try:
            import torch
            libs.append(("torch", torch))
        except ImportError:
            print("(PyTorch is not installed: its models are skipped; pip install torch)")
    for lib_name, lib in libs:
        for name in ("ResNet-18", "GPT-2 small, 12 blocks"):
            rec, out, model = recorded(lib, name)
            if len(rec):
                report(f"{name} in {lib_name}, recorded", phases(rec, args.repeat))
            else:  # record() does not watch PyTorch yet: its own backward graph, leaves named by the model
                report(f"{name} in {lib_name}: GraphView(loss, names=model), no modules",
                       phases(out, args.repeat, names=model))


if __name__ == "__main__":
    main()

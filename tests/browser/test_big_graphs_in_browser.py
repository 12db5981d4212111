"""Models the size researchers use, in JupyterLab: a ResNet-18 and a 12-block GPT-2 small (gradlab.nn) open
with their modules closed, wrapped into rows, read from the top left; one module opens on a click.

It prints what a person waits for: from running the cell to the graph painted (Python's share printed by
the cell), and from a click on a block to it drawn open. Figures, not assertions: timing is the
machine's. Screenshots in test-artifacts/browser/ (look at them).
"""

from __future__ import annotations

from pathlib import Path

from .conftest import open_and_run, require, run_cell, screenshot

NOTEBOOK = "big-graphs.ipynb"
TESTS = Path(__file__).resolve().parents[1]
CELLS = [f"""import sys, time
sys.path.insert(0, {str(TESTS)!r})
import gradlab as gl
from lab_big_models import gpt2, resnet18
gl.manual_seed(0)
resnet = resnet18(gl)
with gl.lab.record() as rec_resnet:
    resnet(gl.randn(1, 3, 64, 64)).sum()
gpt = gpt2(gl)
with gl.lab.record() as rec_gpt:
    gpt(gl.randint(0, 50257, (1, 8))).sum()
print(len(rec_resnet), len(rec_gpt))"""]

# Notes the time now; then, once one more graph's SVG is in the page, the time two frames later (painted).
WATCH_FOR_A_NEW_GRAPH_JS = """() => {
    const count = () => document.querySelectorAll('.gradlab-graphview svg.gl-graph').length;
    const before = count();
    window.__glStart = performance.now();
    window.__glPainted = null;
    const observer = new MutationObserver(() => {
        if (window.__glPainted !== null || count() <= before) return;
        window.__glPainted = -1;
        observer.disconnect();
        requestAnimationFrame(() => requestAnimationFrame(() => { window.__glPainted = performance.now(); }));
    });
    observer.observe(document.body, {childList: true, subtree: true});
}"""

# A box's corner in the drawing's coordinates, and the part of the drawing the canvas shows (its viewBox).
BOX_AND_VIEW_JS = """(view, id) => {
    const svg = view.querySelector('svg.gl-graph');
    const rect = svg.querySelector(`[data-id="${id}"] rect`);
    const box = svg.viewBox.baseVal;
    return {x: +rect.getAttribute('x'), y: +rect.getAttribute('y'),
            view: {x: box.x, y: box.y, w: box.width, h: box.height}};
}"""


def draw(page, variable: str, name: str):
    """Run ``view = GraphView(<recording>)``; returns the widget and (seconds to paint, Python's seconds)."""
    page.evaluate(WATCH_FOR_A_NEW_GRAPH_JS)
    out = run_cell(page, f"t = time.perf_counter(); {name} = gl.lab.GraphView({variable}); "
                         f"print(f'python {{time.perf_counter() - t:.3f}}'); {name}")
    page.wait_for_function("() => window.__glPainted > 0", timeout=60_000)
    painted = page.evaluate("() => (window.__glPainted - window.__glStart) / 1000")
    python = float(out.split("python ")[1].split()[0])
    widget = page.locator(".gradlab-graphview").last
    widget.scroll_into_view_if_needed()
    return widget, painted, python


def box_and_view(widget, item) -> dict:
    return widget.element_handle().evaluate(BOX_AND_VIEW_JS, item)


def open_by_click(page, widget, group: str) -> float:
    """Click a closed module; seconds until the widget shows it open."""
    page.evaluate("() => { window.__glClick = performance.now(); window.__glOpened = null; }")
    widget.locator(f'g.gl-group.gl-collapsed[data-id="{group}"] rect').dispatch_event("click")
    page.wait_for_function(
        """(id) => {
            if (document.querySelector(`.gradlab-graphview g.gl-group.gl-expanded[data-id="${id}"]`)) {
                window.__glOpened = window.__glOpened || performance.now();
                return true;
            }
            return false;
        }""", arg=group, timeout=30_000)
    return page.evaluate("() => (window.__glOpened - window.__glClick) / 1000")


def test_a_gpt2_and_a_resnet18_open_closed_in_rows_from_the_top_left(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    server.write_notebook(NOTEBOOK, CELLS)
    open_and_run(page, server, NOTEBOOK)

    widget, painted, python = draw(page, "rec_gpt", "gpt_view")
    blocks = [f"g:h.{i}" for i in range(12)]
    for block in blocks:  # every block drawn, closed
        widget.locator(f'g.gl-group.gl-collapsed[data-id="{block}"]').wait_for(state="attached")
    boxes = [box_and_view(widget, block) for block in blocks]
    row_ys = sorted({round(b["y"]) for b in boxes})
    assert len(row_ys) > 1  # wrapped: more than one row
    order = sorted(range(12), key=lambda i: (round(boxes[i]["y"]), boxes[i]["x"]))
    assert order == list(range(12))  # read left to right, then down
    first = boxes[0]
    view = first["view"]  # the first view shows the first block (the top left, where reading starts)
    assert view["x"] <= first["x"] <= view["x"] + view["w"] and view["y"] <= first["y"] <= view["y"] + view["h"]
    print(f"GPT-2 small, 12 blocks: cell run → graph painted {painted:.2f} s (Python {python:.2f} s, "
          f"the rest: the comm and the browser's drawing {painted - python:.2f} s)")
    screenshot(widget, "big-graphs-gpt2-wrapped")
    opened = open_by_click(page, widget, "g:h.0")
    print(f"GPT-2: click on h.0 → drawn open {opened * 1e3:.0f} ms")
    screenshot(widget, "big-graphs-gpt2-h0-opened")

    widget, painted, python = draw(page, "rec_resnet", "resnet_view")
    stages = [f"g:layer{i}" for i in range(1, 5)]
    frames = [widget.locator(f'[data-id="{stage}"]').count() for stage in stages]
    assert all(frames)  # every stage drawn (open, its blocks closed, or closed)
    print(f"ResNet-18: cell run → graph painted {painted:.2f} s (Python {python:.2f} s, "
          f"the rest: the comm and the browser's drawing {painted - python:.2f} s)")
    screenshot(widget, "big-graphs-resnet18-wrapped")
    block = widget.locator('g.gl-group.gl-collapsed[data-id^="g:layer2"]').first.get_attribute("data-id")
    opened = open_by_click(page, widget, block)
    print(f"ResNet-18: click on {block} → drawn open {opened * 1e3:.0f} ms")
    screenshot(widget, "big-graphs-resnet18-block-opened")

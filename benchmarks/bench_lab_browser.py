"""The lab's speed where the learner feels it: in JupyterLab, in headless Chromium.

    python benchmarks/bench_lab_browser.py      # needs the dev extra and Debian's chromium

Starts JupyterLab like the browser tests do (tests/browser/conftest.py), runs a notebook with a
~200-node stepper and a ~2,000-node GraphView, and reports (medians of several tries):
* restyle after a change, in the page (switching the colour mode restyles every box);
* click Step -> the highlighted node moves (the kernel round trip included);
* a 2,000-node graph: running its cell -> drawn (capture, layout, SVG, transfer, insertion);
* opening one module of it: click -> the new drawing in the page and painted.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.browser.conftest import (CHROMIUM, CHROMIUM_ARGS, open_notebook, run_command,  # noqa: E402
                                    start_server, wait_for_widgets)

CELLS = [
    """import gradlab as gl
import gradlab.nn as nn
gl.manual_seed(0)
small = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.Tanh()) for _ in range(48)])
with gl.lab.record() as rec:
    loss = small(gl.randn(4, 8)).pow(2).mean()
stepper = gl.lab.BackpropStepper(rec)
stepper.expand()  # every module open, so that each step moves the highlight
print(len(stepper.graph.nodes), "nodes")
stepper""",
    """big = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.GELU()) for _ in range(290)])
with gl.lab.record() as rec_big:
    out = big(gl.randn(4, 8)).sum()
view = gl.lab.GraphView(rec_big)
print(len(view.graph.nodes), "nodes")
view""",
]

RESTYLE_JS = """() => {
  const select = document.querySelector('.gradlab-stepper select.gl-color');
  const modes = ['value', 'kind', 'grad'];
  const times = [];
  for (let i = 0; i < 9; i++) {
    select.value = modes[i % 3];
    const t = performance.now();
    select.dispatchEvent(new Event('change'));
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[4];
}"""


# Click Step; time until the highlight has moved to another node and the page has painted it.
STEP_JS = """() => new Promise((resolve) => {
  const widget = document.querySelector('.gradlab-stepper');
  const before = widget.querySelector('g.gl-state-current');
  const t0 = performance.now();
  const poll = () => {
    const now = widget.querySelector('.gl-nodes > g.gl-state-current');
    if (now && now !== before && now.dataset.id !== (before && before.dataset.id))
      requestAnimationFrame(() => resolve((performance.now() - t0) / 1000));
    else requestAnimationFrame(poll);
  };
  widget.querySelector('button.gl-step').click();
  requestAnimationFrame(poll);
})"""

# Click the first closed module on screen; time until the new drawing is in the page and painted.
OPEN_JS = """() => new Promise((resolve) => {
  const canvas = document.querySelector('.gradlab-graphview .gl-canvas');
  const box = canvas.getBoundingClientRect();
  const onScreen = [...canvas.querySelectorAll('g.gl-group.gl-collapsed')].filter((g) => {
    const r = g.getBoundingClientRect();
    const x = (r.left + r.right) / 2, y = (r.top + r.bottom) / 2;
    return x > box.left && x < box.right && y > box.top && y < box.bottom; });
  if (!onScreen.length) { resolve(null); return; }  // none left in view
  const t0 = performance.now();
  const watch = new MutationObserver(() => {
    watch.disconnect();
    requestAnimationFrame(() => requestAnimationFrame(() => resolve((performance.now() - t0) / 1000)));
  });
  watch.observe(canvas, { childList: true });
  onScreen[0].dispatchEvent(new MouseEvent('click', { bubbles: true }));
})"""


def main() -> None:
    import nbformat
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        server = start_server("lab", Path(tmp))
        try:
            nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(CELLS[0])])
            nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
            nbformat.write(nb, server.root_dir / "bench.ipynb")
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 1000})
                page.set_default_timeout(120_000)
                open_notebook(page, server, "bench.ipynb")
                run_command(page, "notebook:run-all-cells")
                wait_for_widgets(page)
                stepper = page.locator(".gradlab-stepper")
                nodes = stepper.locator(".gl-nodes > g.gl-node").count()
                restyle = page.evaluate(RESTYLE_JS)

                trips = [page.evaluate(STEP_JS) for _ in range(9)]

                page.evaluate("""(source) => {
                    const notebook = window.jupyterapp.shell.currentWidget.content;
                    notebook.activeCellIndex = notebook.widgets.length - 1;
                    return window.jupyterapp.commands.execute('notebook:insert-cell-below').then(() => {
                        notebook.activeCell.model.sharedModel.setSource(source); }); }""", CELLS[1])
                start = time.perf_counter()
                run_command(page, "notebook:run-cell")
                page.wait_for_selector(".gradlab-graphview svg.gl-graph")
                first_draw = time.perf_counter() - start
                view = page.locator(".gradlab-graphview")
                drawn = view.locator(".gl-nodes > g").count()

                view.scroll_into_view_if_needed()
                page.wait_for_timeout(300)
                opens = [t for t in (page.evaluate(OPEN_JS) for _ in range(5)) if t is not None]
                browser.close()
        finally:
            server.stop()

    print(f"stepper graph: {nodes} boxes drawn")
    print(f"  restyle every box (colour mode switch, in the page): {restyle:.1f} ms")
    print(f"  click Step -> highlight moved and painted (kernel round trip): {statistics.median(trips) * 1e3:.0f} ms"
          f" (min {min(trips) * 1e3:.0f}, max {max(trips) * 1e3:.0f})")
    print(f"big graph: {drawn} boxes drawn (collapsed by module)")
    print(f"  run cell -> drawn (capture + layout + SVG + transfer): {first_draw:.2f} s")
    print(f"  open one module, click -> redrawn and painted: {statistics.median(opens) * 1e3:.0f} ms"
          f" (min {min(opens) * 1e3:.0f}, max {max(opens) * 1e3:.0f})")


if __name__ == "__main__":
    main()

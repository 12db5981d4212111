"""The browser harness itself works: a slider and an anywidget render, and a click reaches Python."""

from __future__ import annotations

import time

import pytest

from .conftest import open_and_run, require, run_cell, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROBE = '''\
import anywidget
import ipywidgets
import traitlets


class Probe(anywidget.AnyWidget):
    _esm = """
    export default { render({ model, el }) {
      const button = Object.assign(document.createElement("button"), { className: "probe" });
      const show = () => { button.textContent = `clicked ${model.get("count")} times`; };
      button.onclick = () => { model.set("count", model.get("count") + 1); model.save_changes(); };
      model.on("change:count", show); show(); el.appendChild(button);
    } };
    """
    count = traitlets.Int(0).tag(sync=True)


slider = ipywidgets.IntSlider(value=3, min=0, max=10, description="probe")
slider
'''
CELLS = [PROBE, "probe = Probe()\nprobe.add_class('gradlab-probe')\nprobe", "seen = []"]


def test_widgets_render_and_a_click_reaches_python(page, server):
    require("ipywidgets", "anywidget")

    server.write_notebook("harness-probe.ipynb", CELLS)
    open_and_run(page, server, "harness-probe.ipynb")

    slider = page.locator(".widget-slider")
    assert slider.count() == 1
    assert page.locator(".widget-readout").inner_text().strip() == "3"
    button = page.locator(".gradlab-probe button.probe")
    assert button.inner_text() == "clicked 0 times"

    button.click()
    button.click()
    page.wait_for_function("() => document.querySelector('button.probe').textContent === 'clicked 2 times'")
    # The page shows its own count at once; ipywidgets sends a change made while the last one is unanswered only
    # when the kernel is next idle, so a cell run now may still see 1. Python must see 2 within a few seconds.
    deadline, seen = time.monotonic() + 10, None
    while seen != "2" and time.monotonic() < deadline:
        seen = run_cell(page, "print(probe.count)").strip()
    assert seen == "2", f"two clicks in the page, but Python counted {seen}"

    shot = screenshot(page.locator(".jp-NotebookPanel .jp-Notebook"), f"harness-{server.kind}")
    assert shot.stat().st_size > 0

"""The browser harness itself works: a slider and an anywidget render, and a click reaches Python."""

from __future__ import annotations

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
    assert run_cell(page, "print(probe.count)").strip() == "2"

    shot = screenshot(page.locator(".jp-NotebookPanel .jp-Notebook"), f"harness-{server.kind}")
    assert shot.stat().st_size > 0

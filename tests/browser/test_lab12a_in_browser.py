"""Lab 12a in JupyterLab: each DeviceTimings chart draws a row per device, unavailable rows say why, and
"run again" re-times from the front end. Screenshots land in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

import json
import time

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "12a-performance-devices.ipynb"


def kernel_rows(page, name):
    """What the kernel holds for one widget's table: device, available, reason, timed."""
    text = run_cell(page, "import json\nprint(json.dumps([{'device': r.device, 'available': r.available, "
                          f"'reason': r.reason, 'timed': r.timed}} for r in {name}.table]))")
    return json.loads(text.strip().splitlines()[-1])


def drawn_rows(widget):
    return widget.evaluate("""(el) => [...el.querySelectorAll('svg g.gl-dt-row')].map((g) => ({
        device: g.dataset.device, kind: [...g.classList].find((c) => c.startsWith('gl-dt-') && c !== 'gl-dt-row'),
        text: g.textContent, bars: g.querySelectorAll('rect.gl-dt-bar').length }))""")


def test_lab12a_draws_every_device_and_runs_again(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    charts = page.locator(".gradlab-device-timings")
    assert charts.count() == 2  # the model forward and the training step
    for i in range(2):
        screenshot(charts.nth(i), f"lab-12a-devices-widget{i}")

    step = charts.nth(1)
    expected = kernel_rows(page, "step_timings")
    rows = drawn_rows(step)
    assert [r["device"] for r in rows] == [r["device"] for r in expected]
    for drawn, kernel in zip(rows, expected):
        if not kernel["available"]:
            assert drawn["kind"] == "gl-dt-unavailable" and drawn["bars"] == 0
            assert kernel["reason"][:40] in drawn["text"], "an unavailable row must show its reason"
        else:
            assert drawn["kind"] == "gl-dt-timed" and drawn["bars"] == 1, drawn
    assert any(r["available"] for r in expected) and "× numpy" in rows[0]["text"]
    assert "train_step(Sequential (85,002 parameters)" in step.locator("svg .gl-dt-measured").text_content()

    step.scroll_into_view_if_needed()
    assert step.locator("svg").get_attribute("data-run") == "1"
    started = time.perf_counter()
    step.locator("button.gl-dt-run").click()
    page.wait_for_function("""(el) => el.querySelector('button.gl-dt-run').disabled""", arg=step.element_handle())
    page.wait_for_function("""(el) => { const svg = el.querySelector('svg');
        return svg && svg.dataset.run === '2' && !el.querySelector('button.gl-dt-run').disabled; }""",
                           arg=step.element_handle(), timeout=60_000)
    print(f"run again: click → every device re-timed and drawn in {time.perf_counter() - started:.1f} s")
    assert "run 2" in step.locator(".gl-status").inner_text()
    assert [r["device"] for r in drawn_rows(step)] == [r["device"] for r in expected]
    assert run_cell(page, "print(step_timings.runs)").strip() == "2"
    screenshot(step, "lab-12a-devices-run-again")

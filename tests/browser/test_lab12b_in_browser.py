"""Lab 12b in JupyterLab: the tape's GraphView draws a box per op and leaf the kernel's tape has, with the fused
chain closed as one super-node that a click opens; the eager-vs-compiled DeviceTimings draws two bars per
device. Screenshots land in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

import json

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "12b-performance-compile.ipynb"

KERNEL_FACTS = """import json
fused_groups = [g for g in view.graph.groups.values() if g.label.startswith("fused")]
read = {v for op in tape.ops for v in op.refs() if tape.values[v].kind != "op"}
print(json.dumps({"ops": len(tape), "leaves": len(read), "fused": ["g:" + g.id for g in fused_groups],
                  "fused_ops": [len([n for n in view.graph.nodes.values() if n.group == g.id]) for g in fused_groups],
                  "devices": [r.device for r in timings.table if r.variant == "compiled"]}))"""


def drawn(view):
    return view.evaluate("""(el) => ({
        ops: el.querySelectorAll('svg g.gl-node.gl-kind-op').length,
        leaves: el.querySelectorAll('svg g.gl-node:not(.gl-kind-op)').length,
        closed: [...el.querySelectorAll('svg g.gl-group.gl-collapsed')].map((g) => g.dataset.id) })""")


def test_lab12b_tape_graph_opens_its_fused_node_and_times_eager_and_compiled(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    facts = json.loads(run_cell(page, KERNEL_FACTS).strip().splitlines()[-1])
    assert facts["fused"], "lab 12b draws at least one fused chain"

    views = page.locator(".gradlab-graphview")
    assert views.count() == 1
    view = views.first
    before = drawn(view)
    hidden = sum(facts["fused_ops"])
    assert before["ops"] == facts["ops"] - hidden and before["leaves"] == facts["leaves"], (before, facts)
    assert before["closed"] == facts["fused"]
    screenshot(view, "lab-12b-tape-graph")

    fused = view.locator(f'g.gl-group.gl-collapsed[data-id="{facts["fused"][0]}"]')
    assert fused.locator(".gl-label").text_content().startswith("▸ fused: ")
    fused.click()
    view.locator(f'g.gl-group.gl-expanded[data-id="{facts["fused"][0]}"]').wait_for()
    after = drawn(view)
    assert after["ops"] == facts["ops"] - sum(facts["fused_ops"][1:]) and after["closed"] == facts["fused"][1:]
    view.locator("svg g.gl-node.gl-kind-op").first.click()  # the inspector of a tape op
    inspector = view.locator(".gl-inspector")
    inspector.wait_for()
    assert "tape op 0" in inspector.inner_text()
    screenshot(view, "lab-12b-tape-graph-fused-open")

    charts = page.locator(".gradlab-device-timings")
    assert charts.count() == 1
    chart = charts.first
    bars = chart.evaluate("""(el) => ({
        eager: [...el.querySelectorAll('svg g.gl-dt-row.gl-dt-eager')].map((g) => g.dataset.device),
        compiled: [...el.querySelectorAll('svg g.gl-dt-row.gl-dt-compiled')].map((g) => g.dataset.device),
        eager_bars: el.querySelectorAll('svg rect.gl-dt-bar-eager').length,
        compiled_bars: el.querySelectorAll('svg rect.gl-dt-bar-compiled').length,
        text: el.querySelector('svg').textContent })""")
    assert bars["eager"] == bars["compiled"] == facts["devices"] and facts["devices"][0] == "cpu"
    assert bars["eager_bars"] == bars["compiled_bars"] == len(facts["devices"])
    assert "× eager" in bars["text"]
    n = len(facts["devices"])
    screenshot(chart, "lab-12b-eager-vs-compiled")  # (scrolls it into view: off-screen cells have no inner text)
    status = chart.locator(".gl-status").text_content()
    assert status == f"{n} device{'s' if n != 1 else ''} timed (eager and compiled) · run 1"

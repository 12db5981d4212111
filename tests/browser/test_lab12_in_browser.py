"""Lab 12 in JupyterLab: the training step's DeviceTimings draws a row per device (unavailable rows say why) and
"run again" re-times it from the front end; the profiled graph is coloured by saved memory, its table lists the
nodes that save, and the menu switches it to time; the tape's GraphView draws a box per op and leaf with the fused
chain closed as one super-node that a click opens; the compiled step's program draws its calls in forward, backward
and update boxes, its fused runs closed until clicked; the eager-vs-compiled chart draws two bars per device.
Screenshots land in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

import json
import time

import pytest

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "12-performance.ipynb"

KERNEL_FACTS = """import json
fused_groups = [g for g in view.graph.groups.values() if g.label.startswith("fused")]
read = {v for op in tape.ops for v in op.refs() if tape.values[v].kind != "op"}
print(json.dumps({"ops": len(tape), "leaves": len(read), "fused": ["g:" + g.id for g in fused_groups],
                  "fused_ops": [len([n for n in view.graph.nodes.values() if n.group == g.id]) for g in fused_groups],
                  "saving": len([r for r in prof.rows() if r["saved_bytes"]]),
                  "most_saved": prof.top(1, by="memory")[0]["id"],
                  "devices": [r.device for r in timings.table if r.variant == "compiled"]}))"""


@pytest.fixture(scope="module")
def lab_page(browser, jupyter_server):
    """Lab 12 run once for the tests below, which follow one another on it as a learner would."""
    require("ipywidgets", "anywidget")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    open_and_run(page, jupyter_server("lab"), LAB)
    page.facts = json.loads(run_cell(page, KERNEL_FACTS).strip().splitlines()[-1])
    yield page
    context.close()


def kernel_rows(page, name):
    """What the kernel holds for one widget's table: device, available, reason, timed."""
    text = run_cell(page, "import json\nprint(json.dumps([{'device': r.device, 'available': r.available, "
                          f"'reason': r.reason, 'timed': r.timed}} for r in {name}.table]))")
    return json.loads(text.strip().splitlines()[-1])


def drawn_rows(widget):
    return widget.evaluate("""(el) => [...el.querySelectorAll('svg g.gl-dt-row')].map((g) => ({
        device: g.dataset.device, kind: [...g.classList].find((c) => c.startsWith('gl-dt-') && c !== 'gl-dt-row'),
        text: g.textContent, bars: g.querySelectorAll('rect.gl-dt-bar').length }))""")


def drawn_tape(view):
    return view.evaluate("""(el) => ({
        ops: el.querySelectorAll('svg g.gl-node.gl-kind-op').length,
        leaves: el.querySelectorAll('svg g.gl-node:not(.gl-kind-op)').length,
        closed: [...el.querySelectorAll('svg g.gl-group.gl-collapsed')].map((g) => g.dataset.id) })""")


def test_lab12_step_on_every_device_draws_each_row_and_runs_again(lab_page):
    page = lab_page
    charts = page.locator(".gradlab-device-timings")
    assert charts.count() == 2  # the training step on every device; eager against compiled
    step = charts.nth(0)
    screenshot(step, "lab-12-step-on-every-device")
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
    screenshot(step, "lab-12-step-run-again")


def test_lab12_profile_is_coloured_by_memory_and_switches_to_time(lab_page):
    page, facts = lab_page, lab_page.facts
    views = page.locator(".gradlab-graphview")
    assert views.count() == 3  # the profiled step, the tape, the compiled step's program
    view = views.nth(0)
    view.scroll_into_view_if_needed()
    assert view.locator("select.gl-color").input_value() == "memory"
    assert "bytes saved for backward" in view.locator(".gl-legend").inner_text()
    assert "by memory" in view.locator(".gl-table-title").inner_text()
    rows = view.locator(".gl-top-table tbody tr")
    assert rows.count() == facts["saving"]  # the nine nodes that save; the leaves save nothing
    assert rows.first.get_attribute("data-id") == facts["most_saved"]
    screenshot(view, "lab-12-profile-by-memory")

    view.locator("select.gl-color").select_option("time")
    page.wait_for_function("""() => {
        const t = document.querySelectorAll('.gradlab-graphview')[0].querySelector('.gl-table-title');
        return t && t.textContent.includes('by time'); }""")
    assert "time (forward + backward), log scale" in view.locator(".gl-legend").inner_text()
    assert view.locator(".gl-top-table tbody tr").count() == 10
    screenshot(view, "lab-12-profile-by-time")


def test_lab12_tape_graph_opens_its_fused_node(lab_page):
    page, facts = lab_page, lab_page.facts
    assert facts["fused"], "lab 12 draws at least one fused chain"
    view = page.locator(".gradlab-graphview").nth(1)
    view.scroll_into_view_if_needed()
    before = drawn_tape(view)
    hidden = sum(facts["fused_ops"])
    assert before["ops"] == facts["ops"] - hidden and before["leaves"] == facts["leaves"], (before, facts)
    assert before["closed"] == facts["fused"]
    screenshot(view, "lab-12-tape-graph")

    fused = view.locator(f'g.gl-group.gl-collapsed[data-id="{facts["fused"][0]}"]')
    assert fused.locator(".gl-label").text_content() == "▸ fused: Mul · Sigmoid · Mul"
    fused.click()
    view.locator(f'g.gl-group.gl-expanded[data-id="{facts["fused"][0]}"]').wait_for()
    after = drawn_tape(view)
    assert after["ops"] == facts["ops"] - sum(facts["fused_ops"][1:]) and after["closed"] == facts["fused"][1:]
    view.locator("svg g.gl-node.gl-kind-op").first.click()  # the inspector of a tape op
    inspector = view.locator(".gl-inspector")
    inspector.wait_for()
    assert "tape op 0" in inspector.inner_text()
    tooltip = view.locator(".gl-tooltip")
    assert tooltip.is_visible() and tooltip.inner_text().startswith("Linear")
    assert "null" not in tooltip.inner_text(), "a node with no gradient: the tooltip leaves the line out"
    screenshot(view, "lab-12-tape-graph-fused-open")


def test_lab12_eager_against_compiled_draws_two_bars_per_device(lab_page):
    page, facts = lab_page, lab_page.facts
    chart = page.locator(".gradlab-device-timings").nth(1)
    screenshot(chart, "lab-12-eager-vs-compiled")  # (scrolls it into view: off-screen cells have no inner text)
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
    status = chart.locator(".gl-status").text_content()
    assert status == f"{n} device{'s' if n != 1 else ''} timed (eager and compiled) · run 1"


PROGRAM_FACTS = """import json
pg = program_view.graph
fused = sorted(g.id for g in pg.groups.values() if g.label.startswith("fused"))
def ancestors(gid):
    chain = []
    while pg.groups[gid].parent is not None:
        gid = pg.groups[gid].parent
        chain.append(gid)
    return chain[::-1]
print(json.dumps({"calls": len([n for n in pg.nodes.values() if n.kind == "op"]), "instructions": len(program),
                  "fused": fused, "around": ancestors(fused[0]) if fused else [],
                  "phases": [g for g in ("forward", "backward", "update") if g in pg.groups]}))"""


def drawn_groups(view):
    return view.evaluate("""(el) => ({
        calls: el.querySelectorAll('svg g.gl-node.gl-kind-op').length,
        closed: [...el.querySelectorAll('svg g.gl-group.gl-collapsed')].map((g) => g.dataset.id),
        open: [...el.querySelectorAll('svg g.gl-group.gl-expanded')].map((g) => g.dataset.id) })""")


def test_lab12_program_graph_draws_the_calls_the_step_makes(lab_page):
    page = lab_page
    facts = json.loads(run_cell(page, PROGRAM_FACTS).strip().splitlines()[-1])
    assert facts["phases"] == ["forward", "backward", "update"] and facts["fused"], facts
    assert facts["calls"] > facts["instructions"]  # a fused instruction is several calls, drawn inside it
    view = page.locator(".gradlab-graphview").nth(2)
    view.scroll_into_view_if_needed()
    before = drawn_groups(view)
    assert {"g:forward", "g:backward", "g:update"} <= set(before["open"]), before
    screenshot(view, "lab-12-program-graph")

    for gid in facts["around"]:  # open the boxes around the first fused run (a phase is open already)
        if f"g:{gid}" in drawn_groups(view)["closed"]:
            view.locator(f'g.gl-group.gl-collapsed[data-id="g:{gid}"]').click()
            view.locator(f'g.gl-group.gl-expanded[data-id="g:{gid}"]').wait_for()
    fused_id = "g:" + facts["fused"][0]
    assert fused_id in drawn_groups(view)["closed"]  # a fused run is drawn closed, as a super-node
    fused = view.locator(f'g.gl-group.gl-collapsed[data-id="{fused_id}"]')
    assert fused.locator(".gl-label").text_content().startswith("▸ fused: ")
    shown = drawn_groups(view)["calls"]
    fused.click()
    view.locator(f'g.gl-group.gl-expanded[data-id="{fused_id}"]').wait_for()
    assert drawn_groups(view)["calls"] > shown  # its calls are drawn now
    screenshot(view, "lab-12-program-graph-fused-open")
    view.locator("svg g.gl-node.gl-kind-op").first.click()  # the inspector of one call
    inspector = view.locator(".gl-inspector")
    inspector.wait_for()
    assert "program instruction" in inspector.inner_text()

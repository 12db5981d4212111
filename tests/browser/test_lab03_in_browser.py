"""Lab 3 in JupyterLab: its four graphs draw; the stepper walks to the broadcast Add and its panel sends b
a gradient of b's shape; the inspectors the lab opens show "changed in place" on the saved z and on W.
Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, screenshot

LAB = "03-tensors-broadcasting-and-views.ipynb"
# x @ W + b and its loss: W, b, Mm, Add, Pow, Mean (x needs no gradient), drawn, then stepped; then the two
# recordings of section 5: x (input), W (leaf), Matmul, Pow, Sum and the Add of add_ / of z + 1
NODE_COUNTS = [6, 6, 6, 6]


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-widget')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def test_lab03_draws_steps_to_the_broadcast_and_marks_the_in_place_changes(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    open_and_run(page, server, LAB)
    assert node_counts(page) == NODE_COUNTS
    widgets = page.locator(".gradlab-widget")
    screenshot(widgets.nth(0), "lab-03-broadcast-graph")

    # the first view: the broadcast Add's inspector says its inputs' shapes differ
    graph = page.locator(".gradlab-graphview").first
    graph.locator(".gl-nodes g.gl-node").filter(has_text="Add").click()
    facts = graph.locator(".gl-inspector .gl-fact").first
    facts.wait_for()
    assert "in 4×2, 2 → out 4×2" in facts.inner_text()
    screenshot(graph, "lab-03-broadcast-add-inspected")

    # the stepper: the lab ran it to the end; reset, then three steps reach Add
    stepper = page.locator(".gradlab-stepper")
    assert stepper.locator("g.gl-state-done").count() == 6
    stepper.locator("button.gl-reset").click()
    page.wait_for_function("() => !document.querySelector('.gradlab-stepper g.gl-state-done')")
    for done in (1, 2, 3):
        stepper.locator("button.gl-step").click()
        page.wait_for_function(f"() => document.querySelectorAll('.gradlab-stepper g.gl-state-done').length "
                               f"+ document.querySelectorAll('.gradlab-stepper g.gl-state-current').length >= {done}")
    title = stepper.locator(".gl-panel-title")
    page.wait_for_function("(el) => el.textContent.includes('step 3 of 6: Add')", arg=title.element_handle())
    sent = stepper.locator(".gl-sent")
    assert sent.count() == 2
    to_b = sent.filter(has_text="→ b")
    assert to_b.count() == 1
    values = to_b.locator(".gl-values").inner_text()
    assert values.startswith("[") and values.count(",") == 1  # b's gradient: 2 numbers, summed over the batch
    assert sent.filter(has_text="→ Mm").locator(".gl-values").inner_text().count(",") == 7  # 4×2 = 8 numbers
    screenshot(stepper, "lab-03-stepper-at-the-broadcast-add")

    # section 5: the inspectors the lab opened from Python say what changed in place
    saved = page.locator(".gradlab-graphview").nth(1)
    warning = saved.locator(".gl-saved .gl-changed")
    warning.wait_for()
    saved.scroll_into_view_if_needed()
    assert "changed in place since forward saved it (version 0 → 1)" in warning.text_content()
    assert saved.locator("g.gl-node.gl-selected").filter(has_text="Pow").count() == 1
    screenshot(saved, "lab-03-pow-saved-z-changed-in-place")
    used = page.locator(".gradlab-graphview").nth(2)
    note = used.locator(".gl-inspector .gl-changed").first
    note.wait_for()
    used.scroll_into_view_if_needed()
    assert "changed in place since the forward used it" in note.text_content()
    screenshot(used, "lab-03-w-changed-by-the-optimizer-step")

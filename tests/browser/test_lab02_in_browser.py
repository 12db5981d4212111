"""Lab 2 in JupyterLab: the network's graph and the stepper draw; stepped by clicks from the start, the stepper
shows the fan-out at Tanh (the shortcut's Sum sends contribution 1 of 2, the output Linear 2 of 2, then Tanh runs
on their sum), a leaf's AccumulateGrad step, and the unsolved exercises say "not done yet"; the chart of section 7
is drawn. Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, screenshot

LAB = "02-backprop-as-an-algorithm.ipynb"
# TinyNet: Linear, Tanh, Linear, Sum, Mul, Add, Sub, Pow, Mean + 4 parameters + x and target; drawn, then stepped
NODES = [15, 15]
STEPS = 13  # the nodes backward runs: 9 operations and the 4 parameters' AccumulateGrad


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-widget')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def step_to(page, stepper, index: int, label: str) -> None:
    """Press step until the panel says 'step INDEX of 13: LABEL'."""
    title = stepper.locator(".gl-panel-title")
    while f"step {index} of {STEPS}" not in title.inner_text():
        before = title.inner_text()
        stepper.locator("button.gl-step").click()
        page.wait_for_function(  # (the panel redraws its title element on every step: find it afresh)
            "(before) => document.querySelector('.gradlab-stepper .gl-panel-title').textContent !== before",
            arg=before)
    assert title.inner_text() == f"step {index} of {STEPS}: {label}"


def test_lab02_steps_through_the_fan_out_at_tanh(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    open_and_run(page, server, LAB)
    assert node_counts(page) == NODES
    screenshot(page.locator(".gradlab-graphview").first, "lab-02-tinynet-graph")

    stepper = page.locator(".gradlab-stepper")
    assert stepper.locator("g.gl-state-done").count() == STEPS  # the lab ran it to the end
    stepper.locator("button.gl-reset").click()
    page.wait_for_function("() => !document.querySelector('.gradlab-stepper g.gl-state-done')")

    step_to(page, stepper, 6, "Sum")  # the shortcut's Sum sends Tanh its first contribution
    first = stepper.locator(".gl-sent.gl-fanout")
    assert first.count() == 1 and "→ Tanh — contribution 1 of 2, summed (+=)" in first.inner_text()
    screenshot(stepper, "lab-02-stepper-sum-sends-tanh-1-of-2")

    step_to(page, stepper, 7, "Linear")  # the output Linear sends the second; its weight and bias get theirs
    second = stepper.locator(".gl-sent.gl-fanout")
    assert second.count() == 1 and "→ Tanh — contribution 2 of 2, summed (+=)" in second.inner_text()
    assert stepper.locator(".gl-sent").count() == 3
    screenshot(stepper, "lab-02-stepper-linear-sends-tanh-2-of-2")

    step_to(page, stepper, 8, "out.bias")  # a leaf: AccumulateGrad adds into .grad
    assert "out.bias.grad += g" in stepper.locator(".gl-leaf").inner_text()

    step_to(page, stepper, 10, "Tanh")  # both contributions in: Tanh runs on their sum
    current = stepper.locator("g.gl-state-current")
    assert current.count() == 1 and "Tanh" in current.text_content()
    assert stepper.locator("g.gl-state-done").count() == 9
    screenshot(stepper, "lab-02-stepper-tanh-runs-on-the-sum")

    stepper.locator("button.gl-run-end").click()
    page.wait_for_function(f"() => document.querySelectorAll('.gradlab-stepper g.gl-state-done').length === {STEPS}")

    # the unsolved exercises say "not done yet" in the page, and section 7's chart is an image
    texts = page.locator(".jp-OutputArea-output").all_inner_texts()
    assert sum(text.startswith("○ ") for text in texts) >= 4
    chart = page.locator(".jp-OutputArea-output img").last
    chart.wait_for()
    assert chart.evaluate("(img) => img.naturalWidth") > 400
    screenshot(chart, "lab-02-forward-vs-reverse-chart")

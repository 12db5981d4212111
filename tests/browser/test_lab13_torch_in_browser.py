"""Lab 13 in JupyterLab: its solution runs beside PyTorch and every view the course used opens on the torch model.
PyTorch's backward graph draws with its own node names, a click on AddmmBackward0 opens what it saved, the graph
after backward reads freed; the recording of the torch forward shows modules and this notebook's lines; the stepper
steps PyTorch's backward (reset, three steps to the last Addmm, back); the flow draws a line per layer; the device
timings have PyTorch's CPU row; compare_engines says same, then names the port's wrong weight; make_dot draws
torchviz's boxes; every check passes. Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

import pytest

from .conftest import open_and_run, require, screenshot

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

LAB = "13-graduating-to-pytorch.ipynb"
# Graph widgets in the order the lab shows them. PyTorch's graph of the MLP: 3 × (AccumulateGrad of the weight,
# TBackward0, AccumulateGrad of the bias, AddmmBackward0), 2 ReluBackward0, LogSoftmaxBackward0, NllLossBackward0
# (no node for the images: they need no gradient): 16. gradlab's of the same forward: the batch and its labels,
# Reshape (the Flatten), 3 × (weight, bias, Linear), 2 Relu, LogSoftmax, NllLoss: 16. PyTorch's again, freed: 16.
# The recording of PyTorch's forward: its 16 and the batch and the labels as inputs: 18. The stepper: 16. The
# profile (a recording): 18. compare_engines twice, gradlab's graph of the loss (7 operations + 6 parameters: 13)
# beside PyTorch's (16).
NODES = [16, 16, 16, 18, 16, 18, 13, 16, 13, 16]


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-graphview, .gradlab-stepper')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def texts(locator) -> list:
    return locator.evaluate_all("(nodes) => nodes.map((n) => n.textContent)")


def current_label(stepper) -> str:
    current = stepper.locator("g.gl-node.gl-state-current")
    return current.text_content() if current.count() else ""


def test_lab13_solution_opens_every_view_on_the_torch_model(page, jupyter_server):
    require("ipywidgets", "anywidget")
    assert torch.__version__
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    open_and_run(page, server, "solutions/" + LAB)

    assert page.locator(".gl-verdict-fail").count() == 0
    assert page.locator(".gl-verdict-pass").count() == 4
    assert node_counts(page) == NODES

    views = page.locator(".gradlab-graphview")
    first = views.nth(0)
    first.scroll_into_view_if_needed()
    labels = texts(first.locator(".gl-nodes g.gl-node"))
    assert sum("Addmm" in text for text in labels) == 3 and sum("Relu" in text for text in labels) == 2
    assert any("5.weight" in text for text in labels)             # the leaves carry the model's parameter names
    screenshot(first, "lab-13-torch-graph")
    first.locator(".gl-nodes g.gl-node").filter(has_text="Addmm").last.click()
    inspector = first.locator(".gl-inspector")
    inspector.wait_for()
    assert "AddmmBackward0" in inspector.locator(".gl-inspector-title").inner_text()
    saved = inspector.locator(".gl-saved").all_inner_texts()
    assert any(text.startswith("mat1") for text in saved) and any(text.startswith("mat2") for text in saved)
    screenshot(first, "lab-13-torch-addmm-inspected")
    screenshot(views.nth(1), "lab-13-gradlab-graph")

    freed = views.nth(2)
    freed.scroll_into_view_if_needed()
    freed.locator(".gl-nodes g.gl-node").filter(has_text="Relu").first.click()
    freed.locator(".gl-inspector").wait_for()
    assert "freed by backward()" in freed.locator(".gl-inspector").inner_text()
    screenshot(freed, "lab-13-torch-graph-freed")

    recorded = views.nth(3)
    recorded.scroll_into_view_if_needed()
    assert any("(Linear)" in text for text in texts(recorded.locator("g.gl-group .gl-group-title")))
    recorded.locator(".gl-nodes g.gl-node").filter(has_text="Relu").first.click()
    source = recorded.locator(".gl-inspector .gl-source")
    source.wait_for()
    assert "torch_model(tb)" in source.inner_text()                # the notebook's own line
    screenshot(recorded, "lab-13-torch-recorded")

    stepper = page.locator(".gradlab-stepper")
    stepper.scroll_into_view_if_needed()
    assert stepper.locator("g.gl-state-done").count() == 16         # the lab ran it to the end
    stepper.locator("button.gl-reset").click()
    page.wait_for_function("() => !document.querySelector('.gradlab-stepper g.gl-state-done')")
    for _ in range(3):
        stepper.locator("button.gl-step").click()
    page.wait_for_function("() => document.querySelectorAll('.gradlab-stepper g.gl-state-done').length === 2")
    assert "Addmm" in current_label(stepper)                        # NllLoss, LogSoftmax, then the last Addmm
    screenshot(stepper, "lab-13-torch-stepper-at-addmm")
    stepper.locator("button.gl-back").click()
    page.wait_for_function("() => document.querySelectorAll('.gradlab-stepper g.gl-state-done').length === 1")
    assert "LogSoftmax" in current_label(stepper)

    flow = page.locator(".gradlab-flow")
    flow.scroll_into_view_if_needed()
    assert "no layer flagged" in flow.inner_text()
    screenshot(flow, "lab-13-torch-flow")

    timings = page.locator(".gradlab-device-timings")
    timings.scroll_into_view_if_needed()
    assert "PyTorch cpu" in timings.inner_text() and "cpu (numpy)" in timings.inner_text()
    screenshot(timings, "lab-13-device-timings")

    comparisons = page.locator(".gl-compare")
    assert comparisons.count() == 2
    assert comparisons.nth(0).locator(".gl-compare-row").count() == 6
    assert comparisons.nth(0).locator(".gl-compare-row").filter(has_text="same").count() == 6
    suspect = comparisons.nth(1)
    assert "3.weight" in suspect.locator(".gl-compare-headline").inner_text()
    screenshot(page.locator(".gradlab-compare").nth(0), "lab-13-compare-same")
    screenshot(page.locator(".gradlab-compare").nth(1), "lab-13-compare-suspect")

    dot = page.locator(".jp-OutputArea-output svg.gl-graph:not(.gradlab-widget svg)")
    assert dot.count() == 1                                        # make_dot's picture (gradlab's, without dot)
    assert texts(dot.locator("text")).count("AddmmBackward0") == 3
    screenshot(dot, "lab-13-make-dot")

"""Lab 13 in JupyterLab: its solution runs beside PyTorch; PyTorch's backward graph of the digits MLP draws with
PyTorch's node names, a click on AddmmBackward0 opens what it saved, the graph after backward reads freed, gradlab's
graph of the same forward draws beside it, and every check passes. Screenshots in test-artifacts/browser/: look.
"""

from __future__ import annotations

import pytest

from .conftest import open_and_run, require, screenshot

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

LAB = "13-graduating-to-pytorch.ipynb"
# PyTorch's graph of the MLP: 3 × (AccumulateGrad of the weight, TBackward0, AccumulateGrad of the bias,
# AddmmBackward0), 2 ReluBackward0, LogSoftmaxBackward0, NllLossBackward0 (no node for the images: they need
# no gradient); gradlab's of the same forward: the batch and its labels, Reshape (the Flatten), 3 × (weight, bias,
# Linear), 2 Relu, LogSoftmax, NllLoss; then PyTorch's again, freed
NODES = [16, 16, 16]


def texts(locator) -> list:
    return locator.evaluate_all("(nodes) => nodes.map((n) => n.textContent)")


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-graphview')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def test_lab13_solution_draws_pytorchs_graph_and_passes_its_checks(page, jupyter_server):
    require("ipywidgets", "anywidget")
    assert torch.__version__
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    open_and_run(page, server, "solutions/" + LAB)

    assert page.locator(".gl-verdict-fail").count() == 0
    assert page.locator(".gl-verdict-pass").count() == 3
    assert node_counts(page) == NODES

    views = page.locator(".gradlab-graphview")
    first = views.nth(0)
    first.scroll_into_view_if_needed()
    labels = texts(first.locator(".gl-nodes g.gl-node"))
    assert sum("Addmm" in text for text in labels) == 3 and sum("Relu" in text for text in labels) == 2
    assert any("5.weight" in text for text in labels)             # the leaves carry the model's parameter names
    screenshot(first, "lab-13-torch-graph")

    addmm = first.locator(".gl-nodes g.gl-node").filter(has_text="Addmm").last
    addmm.click()
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

    dot = page.locator(".jp-OutputArea-output svg.gl-graph:not(.gradlab-widget svg)")
    assert dot.count() == 1                                        # make_dot's picture (gradlab's, without dot)
    assert texts(dot.locator("text")).count("AddmmBackward0") == 3
    screenshot(dot, "lab-13-make-dot")

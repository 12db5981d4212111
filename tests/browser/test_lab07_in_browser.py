"""Lab 7 in JupyterLab: the network's BatchNorm drawn opened into its primitives and closed as one box (and opened
again with a click), BatchNorm1d's single Normalize node, the solution's gradients colouring the opened graph
dark, and the learner's BatchNorm Function checked live as one node. The unsolved lab runs with every check
"not done yet" and the same graphs. Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, screenshot

LAB = "07-normalisation.ipynb"
# opened: input, layer1.weight, Linear; BatchNorm's Mean, Sub, Pow, Mean, Sub, Add, Sqrt, Div, norm.gamma, Mul,
# norm.beta, Add; Tanh, layer2.weight, layer2.bias, Linear, LogSoftmax, the targets, NllLoss (22);
# closed: the same less the norm module's 12 (10, and one closed box); the twin with BatchNorm1d: its
# Normalize, weight and bias, and the num_batches_tracked buffer with its Add (15); the opened view again,
# coloured by your gradients (22); the opened view with your BatchNormFunction in place of the 10 operations (13)
NODES = [22, 10, 15, 22, 13]
DARK, BRIGHT, GREY = "#440154", "#fde725", "#e6e6e6"  # the "yours" scale's ends (1e-16, 1) and "not checked"


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-widget')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def fill(view, label: str) -> str:
    box = view.locator(".gl-nodes g.gl-node").filter(has_text=label).first
    return box.locator("rect").first.get_attribute("fill").lower()


def test_lab07_solution_draws_the_norm_opened_and_closed_and_colours_your_gradients(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, "solutions/" + LAB)
    assert node_counts(page) == NODES
    # dγ, dβ; dx against the engine and numerically; your Function's node; the running mean and variance; eval
    # mode; LayerNorm's forward and backward (show_on's cell shows the view, not its verdicts)
    assert page.locator(".gl-verdict-pass").count() == 10 and page.locator(".gl-verdict-fail").count() == 0
    views = page.locator(".gradlab-graphview")
    opened, closed, one_op, yours, mine = (views.nth(i) for i in range(5))

    assert opened.locator('g.gl-group.gl-expanded[data-id="g:norm"]').count() == 1
    assert opened.locator(".gl-nodes g.gl-node").filter(has_text="Sqrt").count() == 1
    screenshot(opened, "lab-07-batchnorm-opened")
    opened.locator("button", has_text="fit").click()  # wider than the cell: the lab says to press fit
    screenshot(opened, "lab-07-batchnorm-opened-fit")

    box = closed.locator('g.gl-group.gl-collapsed[data-id="g:norm"]')
    assert box.count() == 1 and closed.locator(".gl-nodes g.gl-node").filter(has_text="Sqrt").count() == 0
    screenshot(closed, "lab-07-batchnorm-closed")
    box.click()  # the learner opens it again
    closed.locator('g.gl-group.gl-expanded[data-id="g:norm"]').wait_for()
    assert closed.locator(".gl-nodes g.gl-node").count() == 22

    assert one_op.locator(".gl-nodes g.gl-node").filter(has_text="Normalize").count() == 1
    assert one_op.locator(".gl-nodes g.gl-node").filter(has_text="Sqrt").count() == 0
    screenshot(one_op, "lab-07-batchnorm1d-one-node")

    assert yours.locator("select.gl-color").input_value() == "yours"
    for label in ("norm.gamma", "norm.beta", "Linear"):   # dγ, dβ and dx (the first Linear's output)
        colour = fill(yours, label)
        assert colour not in (BRIGHT, GREY) and int(colour[1:3], 16) < 0x50, (label, colour)  # dark: ~1e-14
    assert fill(yours, "Tanh") == GREY  # no exercise asks for it
    screenshot(yours, "lab-07-your-gradients")

    result = mine.locator(".gl-check-result.gl-ok")
    assert "agrees with finite differences" in result.inner_text()
    assert mine.locator(".gl-nodes g.gl-node").filter(has_text="BatchNormFunction").count() == 1
    screenshot(mine, "lab-07-your-batchnorm-function-checked")


def test_lab07_unsolved_runs_with_every_check_not_done_and_draws_every_graph(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    assert node_counts(page) == NODES
    assert page.locator(".gl-verdict-fail").count() == 0 and page.locator(".gl-verdict-pass").count() == 0
    yours = page.locator(".gradlab-graphview").nth(3)
    assert fill(yours, "norm.gamma") == GREY and "not checked or not done yet" in yours.inner_text()
    screenshot(yours, "lab-07-unsolved")

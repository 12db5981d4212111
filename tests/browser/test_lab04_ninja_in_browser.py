"""Lab 4 (backprop ninja) in JupyterLab: its graphs draw, the solution's gradients colour the graph (dark where
they agree with the engine, yellow below the slip), and "check this node" shows its verdict on the ReLU kink
and on the learner's SiLU. Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, screenshot

LAB = "04-backprop-ninja.ipynb"
# the network (input X, W1, Matmul, gamma, beta, Normalize, Tanh, W2, Matmul, b2, Add, LogSoftmax, y, NllLoss),
# the same view again coloured by your gradients, the slip's recording of it; ReLU's (z, Relu, w, Mul, Sum);
# the SiLU network (X, W1, Matmul, SiLU, W2, Matmul, b2, Add, LogSoftmax, y, NllLoss)
NODES = [14, 14, 14, 5, 11]
DARK, BRIGHT = "#440154", "#fde725"  # the ends of the fixed scale: relative error 1e-16 and 1


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-widget')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def fill(view, label: str) -> str:
    box = view.locator(".gl-nodes g.gl-node").filter(has_text=label).first
    return box.locator("rect").first.get_attribute("fill").lower()


def test_lab04_ninja_solution_colours_the_graph_by_your_gradients(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, "solutions/" + LAB)
    assert node_counts(page) == NODES
    views = page.locator(".gradlab-graphview")
    yours, slip, relu, silu = views.nth(1), views.nth(2), views.nth(3), views.nth(4)

    assert yours.locator("select.gl-color").input_value() == "yours"
    assert "relative error of your gradient (CS231n: < 1e-7 right, > 1e-2 wrong)" in yours.inner_text()
    tanh = fill(yours, "Tanh")
    assert tanh not in (BRIGHT, "#e6e6e6") and int(tanh[1:3], 16) < 0x50  # dark: agrees to ~1e-14
    assert fill(yours, "LogSoftmax") == "#e6e6e6"  # no exercise asks for it: unknown
    screenshot(yours, "lab-04-ninja-your-gradients")

    assert fill(slip, "Normalize") == BRIGHT and fill(slip, "Tanh") != BRIGHT  # bright from the slip down only
    screenshot(slip, "lab-04-ninja-a-slip")

    assert "is a kink of Relu" in relu.locator(".gl-check-result").inner_text()
    screenshot(relu, "lab-04-ninja-relu-kink")
    result = silu.locator(".gl-check-result.gl-ok")
    assert "agrees with finite differences" in result.inner_text()
    screenshot(silu, "lab-04-ninja-silu-checked")


def test_lab04_ninja_unsolved_runs_and_draws_every_graph_grey_where_not_done(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    assert node_counts(page) == NODES
    yours = page.locator(".gradlab-graphview").nth(1)
    assert fill(yours, "Tanh") == "#e6e6e6" and "not checked or not done yet" in yours.inner_text()
    screenshot(yours, "lab-04-ninja-unsolved")

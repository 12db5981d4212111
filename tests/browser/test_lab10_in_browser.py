"""Lab 10 in JupyterLab: its solution runs; the two graphs draw (every block's Add in the residual one, none in the
plain one), the stepper stands at the block's Add and steps on to x's second contribution, the gradient-by-depth
picture has its two lines, both gradient flows draw (the plain one flagged), and the four checks pass.
Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "10-deeper-networks-and-skip-connections.ipynb"


def node_labels(widget) -> list:
    return widget.evaluate("""(w) => [...w.querySelectorAll('svg.gl-graph g.gl-node')].map(
        (g) => g.textContent.trim())""")


def test_lab10_solution_draws_both_graphs_the_stepper_the_depth_picture_and_the_flows(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))  # a front-end failure shows in the log
    seconds = open_and_run(page, server, "solutions/" + LAB)

    # the checks: all four pass
    assert page.locator(".gl-verdict-pass").count() == 4 and page.locator(".gl-verdict-fail").count() == 0

    # the two graphs: plain and residual, block 1 opened in each; only the residual one has an Add
    views = page.locator(".gradlab-graphview")
    assert views.count() == 2
    plain, residual = views.nth(0), views.nth(1)
    plain_labels, residual_labels = node_labels(plain), node_labels(residual)
    adds = [[label for label in labels if "AddBackward0" in label] for labels in (plain_labels, residual_labels)]
    assert adds[0] == [] and len(adds[1]) == 3  # one skip's Add per residual block, none in the plain net
    assert sum("ReluBackward0 — blocks." in label for label in plain_labels) == 3  # each plain block ends in a ReLU
    for view, name in ((plain, "plain"), (residual, "residual")):
        assert "freed" not in view.locator(".gl-notice").inner_text()  # drawn before backward freed the graph
        screenshot(view, f"lab-10-{name}-graph-as-drawn")
        view.locator("button.gl-fit").click()
        page.wait_for_timeout(300)
        screenshot(view, f"lab-10-{name}-graph")

    # the stepper stands at the Add (step 3 of 11), which sends x its first of two contributions
    stepper = page.locator(".gradlab-stepper")
    assert stepper.count() == 1
    panel = stepper.locator(".gl-step-panel")
    assert "step 3 of 11" in stepper.locator(".gl-panel-title").inner_text()
    assert "1 of 2" in panel.inner_text()
    screenshot(stepper, "lab-10-stepper-at-the-add")
    for _ in range(5):  # Addmm, leaf, leaf, Relu, Addmm: the branch's first Linear sends x the second contribution
        before = stepper.locator(".gl-panel-title").inner_text()
        stepper.locator("button.gl-step").click()
        page.wait_for_function("([el, t]) => el.querySelector('.gl-panel-title').innerText !== t",
                               arg=[stepper.element_handle(), before])
    assert "step 8 of 11" in stepper.locator(".gl-panel-title").inner_text()
    assert "2 of 2" in panel.inner_text()
    screenshot(stepper, "lab-10-stepper-second-contribution")

    # the gradient at each block's input, plain and residual
    depth = page.locator(".gl-activation-stats > svg.gl-act-depth")
    assert depth.count() == 1 and depth.locator(".gl-act-line").count() == 2
    assert "block 8" in depth.text_content()
    screenshot(depth, "lab-10-gradient-by-depth")

    # the two flows: nine blocks of two Linear layers, inp and out: 20 layers each; the plain one flagged
    flows = page.locator(".gradlab-gradient-flow")
    assert flows.count() == 2
    plain_flow, residual_flow = flows.nth(0), flows.nth(1)
    for flow in (plain_flow, residual_flow):
        assert flow.locator(".gl-flow-lines .gl-flow-layer").count() == 20
        assert "144 updates" in flow.locator(".gl-status").text_content()
    assert plain_flow.locator(".gl-flow-flag").count() >= 6 and residual_flow.locator(".gl-flow-flag").count() == 0
    screenshot(plain_flow, "lab-10-plain-flow")
    screenshot(residual_flow, "lab-10-residual-flow")

    # in JupyterLab Dark the depth picture repaints: its plate takes the page's colour, its text a light ink
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_selector('body[data-jp-theme-light="false"]', state="attached", timeout=30_000)
    page.wait_for_timeout(500)
    plate, ink = depth.evaluate("""(svg) => [getComputedStyle(svg.querySelector('.gl-bg')).fill,
        getComputedStyle(svg.querySelector('.gl-ink-text')).fill]""")
    assert plate == "rgb(17, 17, 17)" and ink.startswith("rgba(255, 255, 255")
    screenshot(depth, "lab-10-dark-gradient-by-depth")
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_selector('body[data-jp-theme-light="true"]', state="attached", timeout=30_000)

    said = run_cell(page, "print(Block.__name__, round(plain_norms[0] / plain_norms[-1], 9) < 1e-4)")
    assert said.strip() == "ResidualBlock True"
    print(f"lab 10 solution: opened and ran in {seconds:.1f} s")


def test_lab10_unsolved_runs_and_says_not_done_for_each_exercise(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    assert page.locator(".gl-verdict-not-done").count() == 4 and page.locator(".gl-verdict-fail").count() == 0
    assert page.locator(".gradlab-graphview").count() == 2 and page.locator(".gradlab-gradient-flow").count() == 2
    said = run_cell(page, "print(Block.__name__)")
    assert said.strip() == "FinishedBlock"  # the lab borrows a finished block until the learner's passes
    screenshot(page.locator(".gl-verdict-not-done").first, "lab-10-unsolved-check")

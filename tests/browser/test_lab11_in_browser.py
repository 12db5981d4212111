"""Lab 11 in JupyterLab: its solution runs; the gradient per time step draws three lines, the unrolled RNN's five
steps are modules that close and open, the tiny GPT's graph opens with its blocks closed and opens one on a click,
the attention maps draw the lower triangle of every head, the stepper stands on an attention softmax and steps on,
and the four checks pass. Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "11-sequences-and-attention.ipynb"
T = 32  # the line of Sonnet XVIII the maps are drawn for: "Shall I compare thee to a summer"


def pictures(page):
    return page.locator(".gl-activation-stats > svg")


def graph_widgets(page):
    return page.locator(".gradlab-widget")


def drawn_nodes(widget) -> int:
    return widget.evaluate("(w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length")


def test_lab11_solution_draws_its_pictures_graphs_and_stepper(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    seconds = open_and_run(page, server, "solutions/" + LAB)

    assert page.locator(".gl-verdict-pass").count() == 4 and page.locator(".gl-verdict-fail").count() == 0

    # the two pictures: ‖∂L/∂h_t‖ for three scales of W, then 2 layers × 2 heads of attention weights
    assert pictures(page).count() == 2
    bptt, maps = pictures(page).nth(0), pictures(page).nth(1)
    assert "gl-act-bptt" in bptt.get_attribute("class") and "gl-act-attention" in maps.get_attribute("class")
    assert bptt.locator(".gl-act-line").count() == 3
    assert "W scale 0.5: 8.7e-12 at t = 1" in bptt.locator(".gl-act-key").first.text_content()
    assert maps.locator(".gl-attn-map").count() == 4
    assert maps.locator("rect.gl-attn-cell").count() == 4 * T * (T + 1) // 2  # the future is masked, left blank
    screenshot(bptt, "lab-11-gradient-per-time-step")
    screenshot(maps, "lab-11-attention-maps")

    # three graph widgets: the unrolled RNN, the GPT (blocks closed), the stepper
    assert graph_widgets(page).count() == 3
    rnn, gpt, stepper = (graph_widgets(page).nth(i) for i in range(3))
    assert rnn.locator("g.gl-group.gl-expanded").count() == 5  # RNNCell, RNNCell#2 ... RNNCell#5, all open
    screenshot(rnn, "lab-11-unrolled-rnn")
    rnn.locator('g.gl-group.gl-expanded[data-id="g:RNNCell#2"] .gl-group-title').click()
    rnn.locator('g.gl-group.gl-collapsed[data-id="g:RNNCell#2"]').wait_for()
    assert drawn_nodes(rnn) == 34 - 5  # the second step's five ops are inside its closed box
    screenshot(rnn, "lab-11-unrolled-rnn-step-2-closed")

    assert gpt.locator("g.gl-group.gl-collapsed").count() == 2  # blocks.0 and blocks.1
    assert "some modules open collapsed" in gpt.text_content()
    screenshot(gpt, "lab-11-gpt-closed-by-module")
    before = drawn_nodes(gpt)
    gpt.locator('g.gl-group.gl-collapsed[data-id="g:blocks.0"]').click()
    gpt.locator('g.gl-group.gl-expanded[data-id="g:blocks.0"]').wait_for()
    page.wait_for_function("([w, n]) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length > n",
                           arg=[gpt.element_handle(), before])
    assert gpt.locator('g.gl-group[data-id="g:blocks.0.attn"]').count() == 1
    screenshot(gpt, "lab-11-gpt-block-0-opened")

    # the stepper stands on the second block's AttentionWeights: the lab ran to it in the cell that shows it, before
    # any view was drawn (those steps once reached no view: widgets/backprop_stepper.js now keeps them per model)
    assert "AttentionWeights" in stepper.locator(".gl-panel-title").inner_text()
    current = stepper.locator("g.gl-state-current")
    assert current.count() == 1 and "AttentionWeights" in current.text_content()
    assert stepper.locator("g.gl-state-done").count() == 28 - 1  # 28 nodes run, the current one is not "done"
    screenshot(stepper, "lab-11-stepper-at-the-softmax")
    was = current.get_attribute("data-id")
    stepper.locator("button.gl-step").click()
    page.wait_for_function("([s, id]) => { const g = s.querySelector('g.gl-state-current'); "
                           "return g && g.dataset.id !== id; }", arg=[stepper.element_handle(), was])
    said = run_cell(page, "print(stepper.status)")
    assert said.strip() == "29 of 80 nodes run"
    screenshot(stepper, "lab-11-stepper-one-step-on")

    # in JupyterLab Dark the attention picture repaints its plate and its text
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_selector('body[data-jp-theme-light="false"]', state="attached", timeout=30_000)
    page.wait_for_timeout(500)
    plate, ink = maps.evaluate("""(svg) => [getComputedStyle(svg.querySelector('.gl-bg')).fill,
        getComputedStyle(svg.querySelector('.gl-ink-text')).fill]""")
    assert plate == "rgb(17, 17, 17)" and ink.startswith("rgba(255, 255, 255")
    screenshot(maps, "lab-11-dark-attention-maps")
    screenshot(bptt, "lab-11-dark-gradient-per-time-step")
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_selector('body[data-jp-theme-light="true"]', state="attached", timeout=30_000)
    print(f"lab 11 solution: opened and ran in JupyterLab in {seconds:.1f} s")


def test_lab11_unsolved_runs_and_says_not_done_for_each_exercise(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    assert page.locator(".gl-verdict-not-done").count() == 4 and page.locator(".gl-verdict-fail").count() == 0
    assert pictures(page).count() == 2 and graph_widgets(page).count() == 3
    screenshot(page.locator(".gl-verdict-not-done").first, "lab-11-unsolved-check")

"""The playground in JupyterLab: train, the loss falls while the kernel stays free, a control changes during
training, pause stops it, a shape change rebuilds, step, and a click on a layer opens its graph.
Screenshots in test-artifacts/browser/.
"""

from __future__ import annotations

import time

from .conftest import open_and_run, require, run_cell, screenshot

NOTEBOOK = "playground.ipynb"
CELLS = ["import gradlab as gl\npg = gl.lab.Playground()\npg"]
GRID_ROWS = 40  # the boundary has at least one rectangle per row of cells


def step_of(widget) -> int:
    return int(widget.locator(".gradlab-playground").get_attribute("data-step"))


def kernel_says(page, expression: str) -> str:
    """Run a cell while the playground may be training: the kernel's main thread answers it."""
    return run_cell(page, f"print({expression})").strip().splitlines()[-1]


def test_playground_trains_in_the_background_pauses_rebuilds_steps_and_opens_a_layer(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    server.write_notebook(NOTEBOOK, CELLS)
    open_and_run(page, server, NOTEBOOK)
    widget = page.locator(".gradlab-playground-box")
    widget.wait_for()
    picture = widget.locator(".gl-pg-picture-box svg")
    assert picture.locator(".gl-pg-boundary rect").count() >= GRID_ROWS
    assert picture.locator(".gl-pg-points circle").count() > 350  # the 400 points, but those noise put outside
    assert picture.locator(".gl-pg-key").count() == 3  # hidden1, hidden2, output
    assert "step 0" in widget.locator(".gl-pg-status").text_content()
    screenshot(widget, "playground-start")

    # train: the thread steps and redraws; the kernel still runs a cell meanwhile
    train = widget.locator("button.gl-pg-train")
    train.click()
    page.wait_for_function("(el) => Number(el.dataset.step) > 300", arg=widget.locator(".gradlab-playground")
                           .element_handle(), timeout=60_000)
    assert train.text_content() == "pause"
    assert kernel_says(page, "pg.running").startswith("True")
    first_loss = float(kernel_says(page, "pg.training.history.losses[:200].mean()"))
    deadline = time.monotonic() + 90
    while float(kernel_says(page, "pg.training.history.losses[-200:].mean()")) > first_loss - 0.05:
        assert time.monotonic() < deadline, "the loss did not fall in 90 s of training"
        page.wait_for_timeout(1000)
    screenshot(widget, "playground-training")

    # a control changed while it trains: taken at the next step, training goes on
    widget.locator("select.gl-pg-learning_rate").select_option("0.01")
    page.wait_for_timeout(500)
    assert kernel_says(page, "pg.training.optimizer.param_groups[0]['lr'], pg.running") == "0.01 True"

    # pause really stops: the button flips, the step count stands still, in the page and in the kernel
    train.click()
    page.wait_for_function("(el) => !el.classList.contains('gl-pg-running')",
                           arg=widget.locator(".gradlab-playground").element_handle())
    assert train.text_content() == "train"
    stopped = step_of(widget)
    page.wait_for_timeout(700)
    assert step_of(widget) == stopped
    assert kernel_says(page, "pg.running, pg.training.step_count") == f"False {stopped}"

    # a shape change rebuilds the net from its seed: step 0, three hidden layers
    depth = widget.locator("input.gl-pg-depth")
    depth.fill("3")
    depth.press("Tab")
    page.wait_for_function("(el) => el.querySelectorAll('.gl-pg-key').length === 4", arg=widget.element_handle())
    assert step_of(widget) == 0 and "2-8-8-8-1 tanh" in picture.text_content()

    # step: one step, the picture and status follow
    widget.locator("button.gl-pg-step").click()
    page.wait_for_function("(el) => el.dataset.step === '1'", arg=widget.locator(".gradlab-playground")
                           .element_handle())
    assert "step 1 · loss 0.6" in widget.locator(".gl-pg-status").text_content()

    # a click on a neuron opens its layer's graph below, that layer's Linear selected
    widget.locator('.gl-pg-layer[data-layer="hidden2"] circle[data-neuron="3"]').click()
    graph = widget.locator(".gradlab-playground-graph")
    graph.wait_for()
    page.wait_for_function("(el) => el.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length > 0",
                           arg=graph.element_handle())
    assert graph.locator("g.gl-node.gl-selected").count() == 1
    assert graph.locator("select.gl-color").input_value() == "grad"
    assert "neuron 3 of hidden2" in widget.locator(".gl-pg-notice").text_content()
    assert widget.locator('.gl-pg-layer.gl-pg-opened[data-layer="hidden2"]').count() == 1
    screenshot(widget, "playground-layer-opened")

    # and a click on a layer's key entry opens that one
    widget.locator('.gl-pg-key[data-layer="output"]').click()
    page.wait_for_function("(el) => el.querySelector('.gl-pg-key.gl-pg-opened')?.dataset.layer === 'output'",
                           arg=widget.element_handle())
    assert kernel_says(page, "pg.panel.opened, pg.view.graph.nodes[pg.view.selected].group") == "output output"

    # a data change while training stops it and starts again from the seed
    train.click()
    page.wait_for_function("(el) => Number(el.dataset.step) > 50", arg=widget.locator(".gradlab-playground")
                           .element_handle(), timeout=60_000)
    widget.locator("select.gl-pg-dataset").select_option("xor")
    page.wait_for_function("(el) => !el.classList.contains('gl-pg-running') && el.dataset.step === '0'",
                           arg=widget.locator(".gradlab-playground").element_handle())
    assert "xor (noise 0.1)" in picture.text_content()
    assert widget.locator(".gradlab-playground-graph").count() == 0  # the old net's graph is gone
    screenshot(widget, "playground-xor-rebuilt")
    print(f"playground: last redraw in the page {widget.locator('.gradlab-playground').get_attribute('data-render-ms')} ms")


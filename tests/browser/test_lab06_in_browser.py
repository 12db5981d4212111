"""Lab 6 in JupyterLab: the gradient-flow charts draw, live; the slider scrubs the histogram; a click on a
layer opens its graph coloured by the flow; the flags are shown. Screenshots in test-artifacts/browser/.
"""

from __future__ import annotations

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "06-the-health-of-a-deep-network.ipynb"


def flows(page):
    return page.locator(".gradlab-gradient-flow")


def render_times(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-flow')].map(
        (w) => [Number(w.dataset.renderMs), Number(w.dataset.renderMsMax), Number(w.dataset.renders),
                Number(w.dataset.firstRenderMs)])""")


def test_lab06_draws_the_flow_scrubs_opens_a_layer_and_flags(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))  # a front-end failure shows in the log
    open_and_run(page, server, LAB)
    assert flows(page).count() == 3
    sigmoid, relu, residual = (flows(page).nth(i) for i in range(3))

    # the charts: one line per layer, a legend entry per layer
    assert sigmoid.locator(".gl-flow-lines .gl-flow-layer").count() == 10
    assert sigmoid.locator(".gl-flow-lines polyline").count() == 10
    assert residual.locator(".gl-flow-key").count() == 18
    assert "144 updates" in sigmoid.locator(".gl-status").text_content()  # 12 epochs of 12 batches

    # the flags, with their threshold; none on the residual net
    flags = sigmoid.locator(".gl-flow-flag")
    assert flags.count() == 6 and "below 0.001" in flags.first.text_content()
    assert flags.first.get_attribute("data-layer") == "0"
    assert residual.locator(".gl-flow-flag").count() == 0
    assert "no layer flagged" in residual.locator(".gl-flow-flags").text_content()
    screenshot(sigmoid, "lab-06-sigmoid-flow")
    screenshot(residual, "lab-06-residual-flow")

    # the slider scrubs the histogram back to the first kept step
    histogram = sigmoid.locator(".gl-flow-hist-box")
    last_step, last_bars = histogram.get_attribute("data-step"), histogram.inner_html()
    assert last_step == "140"
    sigmoid.locator(".gl-flow-slider").press("Home")
    page.wait_for_function("(el) => el.dataset.step === '1'", arg=histogram.element_handle())
    assert histogram.inner_html() != last_bars
    assert "step 1 (1 of" in sigmoid.locator(".gl-flow-step").text_content()

    # the figure menu redraws the lines with another figure
    first_line = sigmoid.locator(".gl-flow-lines polyline").first
    before_points = first_line.get_attribute("points")
    sigmoid.locator("select.gl-flow-figure").select_option("update_ratio")
    page.wait_for_function("([el, p]) => el.querySelector('.gl-flow-lines polyline').getAttribute('points') !== p",
                           arg=[sigmoid.element_handle(), before_points])
    # what the browser shows is the kernel's own drawing, the saved notebook's picture (the menu's choice synced back)
    shown = first_line.get_attribute("points")
    saved = run_cell(page, "print(flow.chart.figure, flow.to_svg() == flow._repr_mimebundle_()[0]['image/svg+xml'], "
                           "flow.to_svg().split('points=\"')[1].split('\"')[0])").strip().splitlines()[-1]
    assert saved == f"update_ratio True {shown}"

    # a click on a layer opens the graph below, coloured by the flow's figure, that layer selected
    sigmoid.locator('.gl-flow-key[data-layer="4"]').click()
    graph = sigmoid.locator(".gradlab-flow-graph")
    graph.wait_for()
    page.wait_for_function("(el) => el.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length > 0",
                           arg=graph.element_handle())
    assert graph.locator("select.gl-color").input_value() == "flow"
    assert "‖ΔW‖ / ‖W‖ of its layer at step 1" in graph.locator(".gl-legend").text_content()
    assert graph.locator("g.gl-node.gl-selected").count() == 1
    fills = graph.evaluate("""(el) => new Set([...el.querySelectorAll('.gl-nodes > g > rect')]
        .map((r) => r.getAttribute('fill'))).size""")
    assert fills >= 5  # ten layers (open or closed boxes), orders of magnitude apart: many colours
    screenshot(sigmoid, "lab-06-sigmoid-layer-opened")
    screenshot(graph, "lab-06-sigmoid-graph-in-flow-colours")

    # live: train more in a new cell; the chart redraws while it runs, throttled
    before = render_times(page)[0][2]
    run_cell(page, "train(sigmoid_net, flow, epochs=6)")
    page.wait_for_function("(el) => el.querySelector('.gl-status').textContent.startsWith('216 updates')",
                           arg=sigmoid.element_handle())
    times = render_times(page)
    redraws = times[0][2] - before
    assert redraws >= 1
    print(f"lab 6: one redraw of the flow chart took {times[0][0]:.1f} ms (slowest of its redraws "
          f"{times[0][1]:.1f} ms, {redraws:.0f} during a 72-step cell; its first draw, while the page was built, "
          f"{times[0][3]:.1f} ms); the residual net's 18 layers: first draw {times[2][3]:.1f} ms")

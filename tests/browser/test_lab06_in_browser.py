"""Lab 6 in JupyterLab: its solution runs; the activation statistics draw (histograms, colour-dimension strips, lines
over the steps), the update ratios with their 1e-3 guide, the three gradient flows live (slider, menu, a layer
opened, flags), the four checks pass, and the closing playground trains after the learner switches it to ReLU.
Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "06-the-health-of-a-deep-network.ipynb"


def pictures(page):
    return page.locator(".gl-activation-stats > svg")


def kinds(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gl-activation-stats > svg')]
        .map((svg) => [...svg.classList].find((c) => c.startsWith('gl-act-') ))""")


def flows(page):
    return page.locator(".gradlab-gradient-flow")


def render_times(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-flow')].map(
        (w) => [Number(w.dataset.renderMs), Number(w.dataset.renderMsMax), Number(w.dataset.renders),
                Number(w.dataset.firstRenderMs)])""")


def test_lab06_solution_draws_its_statistics_flows_and_playground(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))  # a front-end failure shows in the log
    seconds = open_and_run(page, server, "solutions/" + LAB)

    # the checks: all four pass
    assert page.locator(".gl-verdict-pass").count() == 4 and page.locator(".gl-verdict-fail").count() == 0

    # the activation pictures, in the lab's order, drawn inline (so their parts can be counted)
    assert kinds(page) == ["gl-act-histograms", "gl-act-histograms", "gl-act-gradient-histograms", "gl-act-color-dim",
                           "gl-act-dead",
                           "gl-act-update-ratios", "gl-act-color-dim", "gl-act-update-ratios", "gl-act-update-ratios",
                           "gl-act-std"]
    saturated, healthy, gradients, hot, hot_dead, sigmoid_ratios, relu_strips, relu_ratios, calm_ratios, stream = \
        (pictures(page).nth(i) for i in range(10))
    assert saturated.locator("polyline.gl-act-hist").count() == 5  # five tanh layers
    assert "sat 76%" in saturated.locator(".gl-act-key").last.text_content()
    assert saturated.get_attribute("data-step") == "1" and healthy.get_attribute("data-step") == "2"
    assert gradients.locator("polyline.gl-act-hist").count() == 5
    assert hot.locator(".gl-act-strip").count() == 5 and relu_strips.locator(".gl-act-strip").count() == 9
    assert hot.locator(".gl-act-strip image").first.evaluate("(img) => img.getBBox().width") > 500
    assert hot_dead.locator(".gl-act-line polyline").count() == 5
    for ratios in (sigmoid_ratios, relu_ratios, calm_ratios):
        assert ratios.locator(".gl-act-line").count() == 10 and ratios.locator("line.gl-act-guide").count() == 1
    assert stream.locator(".gl-act-line").count() == 8  # the residual stream after each of the eight blocks
    screenshot(saturated, "lab-06-tanh-saturated-histograms")
    screenshot(healthy, "lab-06-tanh-healthy-histograms")
    screenshot(gradients, "lab-06-tanh-gradient-histograms")
    screenshot(hot, "lab-06-dead-relus-colour-dimension")
    screenshot(hot_dead, "lab-06-dead-relus-over-steps")
    screenshot(sigmoid_ratios, "lab-06-sigmoid-update-ratios")
    screenshot(calm_ratios, "lab-06-relu-lr-0.02-update-ratios")

    # the gradient flows: sigmoid (flagged), ReLU, residual (none flagged)
    assert flows(page).count() == 3
    sigmoid, relu, residual = (flows(page).nth(i) for i in range(3))
    assert sigmoid.locator(".gl-flow-lines .gl-flow-layer").count() == 10
    assert "144 updates" in sigmoid.locator(".gl-status").text_content()  # 12 epochs of 12 batches
    flags = sigmoid.locator(".gl-flow-flag")
    assert flags.count() == 6 and "below 0.001" in flags.first.text_content()
    assert relu.locator(".gl-flow-flag").count() == 0
    assert residual.locator(".gl-flow-key").count() == 18 and residual.locator(".gl-flow-flag").count() == 0
    screenshot(sigmoid, "lab-06-sigmoid-flow")
    screenshot(relu, "lab-06-relu-flow")

    # the slider scrubs the sigmoid net's histogram back to the first kept step
    histogram = sigmoid.locator(".gl-flow-hist-box")
    last_bars = histogram.inner_html()
    sigmoid.locator(".gl-flow-slider").press("Home")
    page.wait_for_function("(el) => el.dataset.step === '1'", arg=histogram.element_handle())
    assert histogram.inner_html() != last_bars

    # the menu's ‖ΔW‖ / ‖W‖ is the figure update_ratios drew: the same numbers from flow.history()
    sigmoid.locator("select.gl-flow-figure").select_option("update_ratio")
    said = run_cell(page, "print(flow.chart.figure, len(flow.history()['series']['update_ratio']['0']))")
    assert said.strip() == "update_ratio 144"

    # a click on a layer opens its graph below, coloured by the flow
    sigmoid.locator('.gl-flow-key[data-layer="4"]').click()
    graph = sigmoid.locator(".gradlab-flow-graph")
    graph.wait_for()
    page.wait_for_function("(el) => el.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length > 0",
                           arg=graph.element_handle())
    assert graph.locator("select.gl-color").input_value() == "flow"
    screenshot(graph, "lab-06-sigmoid-graph-in-flow-colours")

    # the playground: drawn at step 300 of its six sigmoid layers, not learning; the learner switches it to ReLU
    box = page.locator(".gradlab-playground-box")
    assert box.count() == 1
    assert box.locator(".gl-pg-picture-box svg .gl-pg-boundary rect").count() >= 40  # a rectangle a row at least
    assert box.locator(".gl-pg-key").count() == 7  # hidden1..hidden6, output
    assert "step 300 · loss 0.69" in box.locator(".gl-pg-status").text_content()
    screenshot(box, "lab-06-playground-sigmoid")
    box.locator("select.gl-pg-activation").select_option("relu")
    page.wait_for_function("(el) => el.dataset.step === '0'", arg=box.locator(".gradlab-playground").element_handle())
    box.locator("button.gl-pg-train").click()
    page.wait_for_function("(el) => Number(el.dataset.step) > 1000", arg=box.locator(".gradlab-playground")
                           .element_handle(), timeout=120_000)
    box.locator("button.gl-pg-train").click()  # pause
    page.wait_for_function("(el) => !el.classList.contains('gl-pg-running')",
                           arg=box.locator(".gradlab-playground").element_handle())
    said = run_cell(page, "print(pg.running, type(pg.training.model.act1).__name__, "
                          "float(pg.training.history.losses[-100:].mean()) < 0.3)")
    assert said.strip() == "False ReLU True"  # with ReLU the same net learns xor (its sigmoid twin stayed at 0.69)
    screenshot(box, "lab-06-playground-relu")

    # in JupyterLab Dark the pictures repaint: their plate takes the page's colour, their text a light ink
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Dark'})")
    page.wait_for_selector('body[data-jp-theme-light="false"]', state="attached", timeout=30_000)
    page.wait_for_timeout(500)
    plate, ink = saturated.evaluate("""(svg) => [getComputedStyle(svg.querySelector('.gl-bg')).fill,
        getComputedStyle(svg.querySelector('.gl-ink-text')).fill]""")
    page_colour = page.evaluate("() => getComputedStyle(document.body).getPropertyValue('--jp-layout-color0').trim()")
    print("lab 6 in JupyterLab Dark: the picture's plate", plate, "(the page's --jp-layout-color0", page_colour,
          "), its text", ink)
    assert plate == "rgb(17, 17, 17)" == {"#111": "rgb(17, 17, 17)"}.get(page_colour)
    assert ink.startswith("rgba(255, 255, 255")  # JupyterLab Dark's --jp-ui-font-color1
    screenshot(hot, "lab-06-dark-colour-dimension")
    screenshot(sigmoid_ratios, "lab-06-dark-update-ratios")
    page.evaluate("() => window.jupyterapp.commands.execute('apputils:change-theme', {theme: 'JupyterLab Light'})")
    page.wait_for_selector('body[data-jp-theme-light="true"]', state="attached", timeout=30_000)

    times = render_times(page)
    print(f"lab 6 solution: opened and ran in {seconds:.1f} s; the sigmoid flow's last redraw {times[0][0]:.1f} ms "
          f"(slowest {times[0][1]:.1f} ms); the residual net's first draw {times[2][3]:.1f} ms")


def test_lab06_unsolved_runs_and_says_not_done_for_each_exercise(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    assert page.locator(".gl-verdict-not-done").count() == 4 and page.locator(".gl-verdict-fail").count() == 0
    assert pictures(page).count() == 10 and flows(page).count() == 3
    screenshot(page.locator(".gl-verdict-not-done").first, "lab-06-unsolved-check")

"""Lab 9 in JupyterLab: its solution runs; the convolution's backward steps as a scatter-add (step, back, run to
the end, the kernel told the step shown), the CNN's graph and its profile draw, and the four checks pass.
Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "09-convolutions.ipynb"


def shown_step(scatter) -> int:
    return int(scatter.get_attribute("data-step"))


def windows(scatter) -> list:
    """The (x, y) of the outlined window in the input and in ∂L/∂X, and of the current output cell."""
    return scatter.evaluate("""(el) => [...el.querySelectorAll('.gl-conv-window')].map(
        (r) => [Number(r.getAttribute('x')), Number(r.getAttribute('y'))])""")


def test_lab09_solution_steps_the_scatter_and_draws_the_cnn(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    open_and_run(page, server, "solutions/" + LAB)

    assert page.locator(".gl-verdict-pass").count() == 4 and page.locator(".gl-verdict-fail").count() == 0

    scatter = page.locator(".gradlab-conv")
    assert scatter.count() == 1
    scatter.scroll_into_view_if_needed()
    picture = scatter.locator("svg.gl-conv-picture")
    # the lab's `scatter.show(6)` ran after the widget drew: it shows step 6 of 16
    assert shown_step(scatter) == 6 and scatter.locator(".gl-conv-status").inner_text() == "step 6 of 16"
    assert picture.locator(".gl-conv-x .gl-conv-cell").count() == 36
    assert picture.locator(".gl-conv-w .gl-conv-cell").count() == 9
    assert picture.locator(".gl-conv-dy .gl-conv-pending").count() == 10
    screenshot(scatter, "lab-09-conv-scatter-step-6")

    scatter.locator(".gl-conv-start").click()
    assert shown_step(scatter) == 0 and scatter.locator(".gl-conv-window").count() == 0
    assert scatter.locator(".gl-conv-back").is_disabled()
    scatter.locator(".gl-conv-step").click()
    first = windows(scatter)
    scatter.locator(".gl-conv-step").click()
    second = windows(scatter)
    assert shown_step(scatter) == 2 and len(first) == len(second) == 4
    assert second[0][0] > first[0][0] and second[0][1] == first[0][1]  # the window moved one column right
    assert "step 2 of 16: g = ∂L/∂Y[0, 1]" in picture.text_content()
    assert run_cell(page, "print(scatter.step)").strip() == "2"  # the kernel knows the step shown
    scatter.locator(".gl-conv-back").click()
    assert shown_step(scatter) == 1 and windows(scatter) == first

    scatter.locator(".gl-conv-run").click()
    page.wait_for_function("() => !document.querySelector('.gradlab-conv').classList.contains('gl-conv-running')",
                           timeout=20_000)
    assert shown_step(scatter) == 16 and scatter.locator(".gl-conv-step").is_disabled()
    assert "the engine's conv2d backward" in scatter.locator("svg.gl-conv-picture").text_content()
    assert scatter.locator(".gl-conv-dy .gl-conv-pending").count() == 0
    screenshot(scatter, "lab-09-conv-scatter-end")
    scatter.focus()
    page.keyboard.press("ArrowLeft")
    assert shown_step(scatter) == 15

    counts = page.evaluate("""() => [...document.querySelectorAll('.gradlab-graphview')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")
    assert counts == [18, 18, 18]  # the CNN's batch, then profiled by time and by memory
    views = page.locator(".gradlab-graphview")
    for i, name in enumerate(["cnn-graph", "profile-time", "profile-memory"]):
        screenshot(views.nth(i), f"lab-09-{name}")

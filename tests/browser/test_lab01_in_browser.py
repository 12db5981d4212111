"""Lab 1 in JupyterLab: a click on a Scalar op shows its local derivative beside a finite-difference probe;
the stepper steps the neuron's backward with the local derivative at each node; the solution's Cube checks.
Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, screenshot

LAB = "01-derivatives-and-your-first-graph.ipynb"
# the neuron tanh(x1*w1 + x2*w2 + b): 5 leaves, 2 products, 2 sums, tanh; drawn, then stepped; the same neuron
# with your Cube in place of tanh; the tensor neuron: Mul, Sum, Add, Tanh and the leaves w and bias
NODE_COUNTS = [10, 10, 10, 6]


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-widget')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def local_rows(widget) -> list:
    """The inspector's table of local derivatives: [(input, value, local derivative, finite difference)]."""
    table = widget.locator(".gl-inspector table.gl-local")
    table.wait_for()
    return [tuple(row.locator("td").all_inner_texts()) for row in table.locator("tr.gl-local-row").all()]


def wait_for_title(page, text: str) -> None:
    """Wait until the stepper's panel says ``text`` (the panel redraws whole: its title is a new element)."""
    page.wait_for_function("(text) => (document.querySelector('.gradlab-stepper .gl-panel-title') || {})"
                           ".textContent?.includes(text)", arg=text)


def test_lab01_a_click_shows_the_local_derivative_beside_a_probe_and_the_stepper_steps(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    assert node_counts(page) == NODE_COUNTS
    assert page.locator(".jp-OutputArea-output img").count() >= 1  # section 2's plot of the errors

    # the view opens on tanh (the lab selects it): ∂out/∂x = 1 − out² = 0.5, the probe 0.49999999996
    view = page.locator(".gradlab-graphview").first
    ((name, value, local, probe),) = local_rows(view)
    assert (name, value, local) == ("x (+ n)", "0.8814", "0.5")
    assert probe.startswith("0.4999999999") and probe != local
    assert "g · (1 − out²)" in view.locator(".gl-inspector .gl-math").inner_text()

    # click a product: each input's local derivative is the other input (x1 · w1: -3 for x1, 2 for w1)
    products = view.locator(".gl-nodes g.gl-node").filter(has_text="*")
    assert products.count() == 2
    seen = []
    for i in range(2):
        products.nth(i).click()
        view.locator(".gl-inspector-title").filter(has_text="*").wait_for()
        page.wait_for_timeout(200)  # (the inspector redraws on the selection's round trip)
        seen.append(local_rows(view))
    products_seen = {tuple((name, value, float(local)) for name, value, local, _ in rows): rows for rows in seen}
    assert set(products_seen) == {(("x (x1)", "2", -3.0), ("y (w1)", "-3", 2.0)),
                                  (("x (x2)", "0", 1.0), ("y (w2)", "1", 0.0))}, seen
    for rows in seen:  # the probe: the rule to about ten digits, not to the last (round-off, section 2)
        assert all(abs(float(probe) - float(local)) < 1e-8 for _, _, local, probe in rows), rows
    assert any(probe != local for rows in seen for _, _, local, probe in rows)
    # "check this node" on the tanh box: the check agrees
    view.locator(".gl-nodes g.gl-node").filter(has_text="tanh").click()
    view.locator(".gl-inspector-title").filter(has_text="tanh").wait_for()
    view.locator("button.gl-check").click()
    result = view.locator(".gl-check-result.gl-ok")
    result.wait_for()
    assert "tanh: backward agrees with finite differences" in result.inner_text()
    screenshot(view, "lab-01-neuron-tanh-local-derivative-and-probe")

    # the stepper: the lab ran it to the end; reset, step once (tanh), then once more (+ n)
    stepper = page.locator(".gradlab-stepper")
    assert stepper.locator("g.gl-state-done").count() == 10
    stepper.locator("button.gl-reset").click()
    page.wait_for_function("() => !document.querySelector('.gradlab-stepper g.gl-state-done')")
    stepper.locator("button.gl-step").click()
    wait_for_title(page, "step 1 of 10: tanh")
    panel = stepper.locator(".gl-step-panel")
    ((name, _, local, probe),) = [tuple(r.locator("td").all_inner_texts())
                                  for r in panel.locator("tr.gl-local-row").all()]
    assert (name, local) == ("x (+ n)", "0.5") and probe.startswith("0.4999999999")
    assert panel.locator(".gl-sent").filter(has_text="→ + n").locator(".gl-values").inner_text() == "[0.5]"
    screenshot(stepper, "lab-01-stepper-at-tanh")
    stepper.locator("button.gl-step").click()
    wait_for_title(page, "step 2 of 10: + n")
    assert [tuple(r.locator("td").all_inner_texts())[2] for r in panel.locator("tr.gl-local-row").all()] == ["1", "1"]
    assert panel.locator(".gl-sent").count() == 2  # the sum passes 0.5 to both of its inputs
    screenshot(stepper, "lab-01-stepper-at-the-sum")

    # the unsolved Cube draws, with no table yet (its backward returns ...)
    cube = page.locator(".gradlab-graphview").nth(1)
    assert cube.locator("select.gl-color").input_value() == "kind"  # no gradient has come through it
    assert cube.locator(".gl-inspector-title").filter(has_text="cube").count() == 1
    assert cube.locator("table.gl-local").count() == 0
    screenshot(cube, "lab-01-unsolved-cube")


def test_lab01_solution_cube_shows_its_local_derivative_and_passes_check_this_node(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, "solutions/" + LAB)
    assert node_counts(page) == NODE_COUNTS
    cube = page.locator(".gradlab-graphview").nth(1)
    assert cube.locator("select.gl-color").input_value() == "kind"
    ((name, value, local, probe),) = local_rows(cube)
    assert (name, value) == ("x (+)", "0.8814") and local.startswith("2.330") and probe.startswith("2.330")
    assert "g · 3x²" in cube.locator(".gl-inspector .gl-math").inner_text()
    result = cube.locator(".gl-check-result.gl-ok")
    result.wait_for()
    assert "cube: backward agrees with finite differences" in result.inner_text()
    screenshot(cube, "lab-01-solution-cube-checked")
    plot = page.locator(".jp-OutputArea-output img").first
    screenshot(plot, "lab-01-solution-step-size-plot")

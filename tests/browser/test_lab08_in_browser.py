"""Lab 8 in JupyterLab: its solution runs; the four loss-curve pictures draw (two, four, five and two lines, the
best epoch dashed), the two graphs of the small dropout net show its masks in train() and none in eval(), the
inspector the lab opens shows the saved mask, a click on the mask shows its values; the four checks pass.
Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "08-regularisation.ipynb"


def curves(page):
    return page.locator(".gl-activation-stats > svg.gl-act-loss-curves")


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-widget')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def labels(view) -> list:
    """The first line of each box of a graph view, as drawn."""
    return view.evaluate("""(w) => [...w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node')].map(
        (g) => g.querySelector('text').textContent)""")


def test_lab08_solution_draws_its_curves_and_the_dropout_graphs(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))  # a front-end failure shows in the log
    seconds = open_and_run(page, server, "solutions/" + LAB)
    assert page.locator(".gl-verdict-pass").count() == 4 and page.locator(".gl-verdict-fail").count() == 0

    # the curves: overfitting, dropout against none, the four optimizers against none, early stopping
    assert curves(page).count() == 4
    plain, dropout, decay, stopped = (curves(page).nth(i) for i in range(4))
    assert [c.locator(".gl-act-line").count() for c in (plain, dropout, decay, stopped)] == [2, 4, 5, 2]
    assert plain.locator("line.gl-act-mark").count() == 1 and stopped.locator("line.gl-act-mark").count() == 1
    assert dropout.locator("line.gl-act-mark").count() == 0
    assert "validation: 2.3 at the last epoch" in plain.locator(".gl-act-key").nth(1).text_content()
    assert "epoch 22" in stopped.text_content()  # the run stopped after epoch 22: its axis ends there
    for picture, name in ((plain, "overfitting"), (dropout, "dropout"), (decay, "weight-decay"),
                          (stopped, "early-stopping")):
        screenshot(picture, f"lab-08-curves-{name}")

    # the dropout net's two graphs: in train() each Dropout is a Mul by its mask; in eval() both are gone
    assert node_counts(page) == [19, 15]
    train_view, eval_view = (page.locator(".gradlab-graphview").nth(i) for i in range(2))
    drawn, drawn_eval = labels(train_view), labels(eval_view)
    print("train mode:", drawn, "\neval mode:", drawn_eval)
    assert drawn.count("constant") == 2 and drawn.count("Mul") == 2
    assert "constant" not in drawn_eval and "Mul" not in drawn_eval
    # the lab opened the inspector on the first Dropout's Mul: what it saved, b the mask, 0 to 2
    saved = train_view.locator(".gl-inspector .gl-saved").filter(has_text="b")
    saved.wait_for()
    assert "4×8 · min 0 · max 2" in saved.inner_text()
    screenshot(train_view, "lab-08-train-mode-graph-mul-inspected")
    screenshot(eval_view, "lab-08-eval-mode-graph")
    # the learner clicks the first mask: its words and its values
    train_view.locator("g.gl-node").filter(has_text="constant").first.click()
    tooltip = train_view.locator(".gl-tooltip")
    tooltip.wait_for()
    assert tooltip.inner_text().split("\n") == ["constant input", "out 4×8", "in 2"]  # no "null" for a missing grad
    inspector = train_view.locator(".gl-inspector")
    page.wait_for_function("(el) => el.textContent.includes('dropout mask')", arg=inspector.element_handle())
    screenshot(train_view, "lab-08-train-mode-mask-inspected")
    said = run_cell(page, "print(sorted(set(train_view.graph.nodes[train_view.selected].ref.numpy().ravel().tolist())))")
    assert said.strip() == "[0.0, 2.0]"  # what the inspector shows is the mask: 0, or 1/(1 − 0.5)

    print(f"lab 8 solution: opened and ran in {seconds:.1f} s")


def test_lab08_unsolved_runs_and_says_not_done_for_each_exercise(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    open_and_run(page, server, LAB)
    assert page.locator(".gl-verdict-not-done").count() == 4 and page.locator(".gl-verdict-fail").count() == 0
    assert curves(page).count() == 4 and node_counts(page) == [19, 15]
    screenshot(page.locator(".gl-verdict-not-done").first, "lab-08-unsolved-check")

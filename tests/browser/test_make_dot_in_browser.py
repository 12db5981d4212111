"""make_dot and GraphView.to_dot() in JupyterLab, where Graphviz's dot program is not installed (the harness
takes it off PATH): each cell shows a picture, gradlab's own drawing of the same graph, under a line that says
so and what to install, never graphviz's traceback. Screenshots in test-artifacts/browser/.
"""

from __future__ import annotations

from .conftest import open_and_run, require, screenshot

NOTEBOOK = "make-dot.ipynb"
CELLS = [
    "import gradlab as gl\n"
    "gl.manual_seed(0)\n"
    "model = gl.nn.Sequential(gl.nn.Linear(8, 16), gl.nn.Tanh(), gl.nn.Linear(16, 1))\n"
    "with gl.lab.record() as rec:\n"
    "    loss = model(gl.randn(4, 8)).mean()",
    "gl.lab.make_dot(loss, params=dict(model.named_parameters()))",
    "view = gl.lab.GraphView(rec)\n"
    "view.toggle('0')\n"
    "view.to_dot()",
]


def test_without_dot_each_cell_shows_gradlabs_drawing_and_says_so(page, jupyter_server):
    require("graphviz", "ipywidgets", "anywidget", chromium=True)
    server = jupyter_server("lab")
    server.write_notebook(NOTEBOOK, CELLS)
    open_and_run(page, server, NOTEBOOK)  # (fails on any traceback in the page)
    outputs = page.locator(".jp-Cell .jp-OutputArea")
    dot_cell, view_cell = outputs.nth(1), outputs.nth(2)
    for cell in (dot_cell, view_cell):
        note = cell.locator("p.gl-dot-note")
        assert "Graphviz's dot program is not installed, so this is gradlab's own drawing" in note.inner_text()
        assert "apt install graphviz" in note.inner_text()
        assert cell.locator("svg.gl-graph").count() == 1
    boxes = dot_cell.locator("svg.gl-graph g.gl-node")
    assert boxes.count() == 13  # 4 leaves, 4 AccumulateGrad, 2 Addmm, Tanh, Mean, the output
    assert dot_cell.locator("svg.gl-graph g.gl-node", has_text="0.weight").count() == 1
    assert view_cell.locator("svg.gl-graph g.gl-group.gl-collapsed", has_text="0 (Linear)").count() == 1
    screenshot(dot_cell, "make-dot-without-dot")
    screenshot(view_cell, "graphview-to-dot-without-dot")

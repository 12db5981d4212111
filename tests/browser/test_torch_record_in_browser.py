"""A recorded PyTorch forward in JupyterLab: ``GraphView(rec)`` of a tiny CNN, its modules and its nodes.

The cell records a torch CNN's forward; the view draws PyTorch's nodes inside the modules that made
them. A click closes a module and another opens it again; a click on the convolution's node opens its
inspector, with the cell line that made it and the tensors PyTorch saved for its backward; a backward
in the next cell colours the view by gradient. Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

import pytest

from .conftest import open_and_run, require, run_cell, screenshot

pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

NOTEBOOK = "torch-record.ipynb"
CELLS = ["""import torch
import gradlab as gl
torch.manual_seed(0)

class TinyCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.head = torch.nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        h = torch.relu(self.conv(x))
        h = torch.nn.functional.max_pool2d(h, 2)
        return self.head(h.flatten(1))

model, x, y = TinyCNN(), torch.randn(2, 1, 10, 10), torch.tensor([0, 2])
with gl.lab.record() as rec:
    loss = torch.nn.functional.cross_entropy(model(x), y)
view = gl.lab.GraphView(rec)
view"""]


def drawn_nodes(view) -> int:
    return view.evaluate("(w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length")


def test_a_recorded_torch_cnn_opens_its_modules_and_inspects_pytorchs_nodes(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    server.write_notebook(NOTEBOOK, CELLS)
    open_and_run(page, server, NOTEBOOK)
    view = page.locator(".gradlab-graphview").first
    view.wait_for()
    head = 'g.gl-group[data-id="g:head"]'
    view.locator(f"{head}.gl-expanded").wait_for()
    assert view.locator("g.gl-node").filter(has_text="Convolution").count() == 1
    screenshot(view, "torch-record-cnn")

    opened = drawn_nodes(view)
    view.locator(f"{head}.gl-expanded .gl-group-title").dispatch_event("click")  # close the head
    view.locator(f"{head}.gl-collapsed").wait_for()
    assert drawn_nodes(view) < opened
    assert view.locator("g.gl-node").filter(has_text="Addmm").count() == 0  # inside the closed head
    view.locator(f"{head}.gl-collapsed").click()  # and open it again, as a learner does
    view.locator(f"{head}.gl-expanded").wait_for()
    assert drawn_nodes(view) == opened
    assert view.locator("g.gl-node").filter(has_text="Addmm").count() == 1

    view.locator("g.gl-node").filter(has_text="Convolution").click()
    inspector = view.locator(".gl-inspector")
    inspector.wait_for()
    assert "ConvolutionBackward0" in inspector.locator(".gl-inspector-title").inner_text()
    source = inspector.locator(".gl-source").inner_text()
    assert "line 12" in source and "h = torch.relu(self.conv(x))" in source  # the cell's line 12
    saved = inspector.locator(".gl-saved").all_inner_texts()
    assert any(text.startswith("input") for text in saved) and any(text.startswith("weight") for text in saved)
    assert "module: conv" in inspector.inner_text()
    screenshot(view, "torch-record-cnn-inspector")

    run_cell(page, "loss.backward()")
    page.wait_for_function("""() => document.querySelector('.gradlab-graphview select.gl-color').value === 'grad'""")
    screenshot(view, "torch-record-cnn-gradients")

"""The stepper on a PyTorch MLP in JupyterLab: PyTorch's own node names drawn, stepped by clicks and by keys
(→ steps, ← steps back, End runs to the end, Home resets, Enter runs to the selected node); "check this node"
says what it can check on a PyTorch node; after the end the kernel says every .grad is loss.backward()'s bit
for bit. Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
from .conftest import open_and_run, require, run_cell, screenshot  # noqa: E402

NOTEBOOK = "torch-stepper.ipynb"
CELLS = [
    "import torch\nimport gradlab as gl\n"
    "torch.manual_seed(0)\n"
    "model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))\n"
    "x, y = torch.randn(8, 3), torch.randint(0, 2, (8,))\n"
    "loss = torch.nn.functional.cross_entropy(model(x), y)",
    "stepper = gl.lab.BackpropStepper(loss, names=model)\nstepper",
]


def title(stepper) -> str:
    return stepper.locator(".gl-panel-title").inner_text()


def act(page, stepper, do) -> None:
    """Click or press, then wait for the panel to redraw its title."""
    before = title(stepper)
    do()
    page.wait_for_function(
        "(before) => document.querySelector('.gradlab-stepper .gl-panel-title').textContent !== before", arg=before)


def test_a_torch_mlp_is_stepped_by_clicks_and_keys(page, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    page.on("pageerror", lambda e: print("error in the page:", e))
    server.write_notebook(NOTEBOOK, CELLS)
    open_and_run(page, server, NOTEBOOK)
    stepper = page.locator(".gradlab-stepper")
    stepper.wait_for()
    total = int(run_cell(page, "print(stepper.total_steps)").strip())
    labels = stepper.locator("svg.gl-graph .gl-nodes > g.gl-node").all_text_contents()
    assert any("Addmm" in text for text in labels) and any("0.weight" in text for text in labels)
    assert title(stepper) == "before the first step"

    act(page, stepper, lambda: stepper.locator("button.gl-step").click())
    assert title(stepper) == f"step 1 of {total}: NllLoss"
    assert "→ LogSoftmax" in stepper.locator(".gl-sent").first.inner_text()  # what it passed back, and to whom
    act(page, stepper, lambda: stepper.locator("button.gl-step").click())
    assert title(stepper) == f"step 2 of {total}: LogSoftmax"

    stepper.focus()
    act(page, stepper, lambda: page.keyboard.press("ArrowRight"))
    assert title(stepper) == f"step 3 of {total}: Addmm"
    act(page, stepper, lambda: page.keyboard.press("ArrowRight"))  # the bias's AccumulateGrad: its .grad
    assert title(stepper) == f"step 4 of {total}: 2.bias"
    assert "2.bias.grad += g" in stepper.locator(".gl-leaf").inner_text()
    assert stepper.locator("g.gl-state-current").count() == 1
    screenshot(stepper, "torch-stepper-bias-accumulates")

    act(page, stepper, lambda: page.keyboard.press("ArrowLeft"))
    assert title(stepper) == f"step 3 of {total}: Addmm"
    assert run_cell(page, "print(model[2].bias.grad)").strip() == "None"  # stepped back: nothing in .grad

    stepper.focus()  # (run_cell left the focus in the new cell)
    act(page, stepper, lambda: page.keyboard.press("End"))
    assert title(stepper) == "backward finished"
    page.wait_for_function(f"() => document.querySelectorAll('.gradlab-stepper g.gl-state-done').length === {total}")
    screenshot(stepper, "torch-stepper-finished")

    stepper.focus()
    act(page, stepper, lambda: page.keyboard.press("Home"))  # reset: the stepper's additions leave every .grad
    assert title(stepper) == "before the first step"
    assert run_cell(page, "print([p.grad for p in model.parameters()])").strip() == "[None, None, None, None]"
    stepper.locator(".gl-nodes g.gl-node").filter(has_text="2.weight").click()  # select it (and focus the stepper)
    act(page, stepper, lambda: page.keyboard.press("Enter"))  # run to the selected node
    assert title(stepper).endswith(": 2.weight") and title(stepper).startswith("step ")
    act(page, stepper, lambda: stepper.locator("button.gl-run-end").click())
    assert title(stepper) == "backward finished"
    # "check this node" on PyTorch's Tanh: from a tensor graph it says what it cannot check, and what it did
    stepper.locator(".gl-nodes g.gl-node").filter(has_text="Tanh").click()
    stepper.locator(".gl-inspector-title").filter(has_text="Tanh").wait_for()
    stepper.locator("button.gl-check").click()
    result = stepper.locator(".gl-check-result").filter(has_text="Tanh:")  # (found afresh: the inspector redraws)
    result.wait_for()
    assert "cannot compare it with finite differences" in result.inner_text()
    assert "linear in the gradient it receives" in result.inner_text()
    assert result.locator(".gl-check-row").count() == 0  # no finite difference is shown: none was taken
    screenshot(stepper, "torch-stepper-check-tanh")
    same = run_cell(page, "mine = [p.grad.clone() for p in model.parameters()]\n"
                          "stepper.close()\nmodel.zero_grad(set_to_none=True)\nloss.backward()\n"
                          "print(all(torch.equal(a, p.grad) for a, p in zip(mine, model.parameters())))")
    assert same.strip() == "True"

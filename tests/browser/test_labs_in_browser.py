"""The labs in a real browser: each widget draws the learner's graph, steps, inspects and opens modules.

Run in JupyterLab 4 and in Notebook 7 (the `server` fixture), with no Graphviz on the server's PATH.
The node counts are counted by hand from each lab's code (boxes = operations + leaves + data inputs).
Screenshots land in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

import time

import pytest

from .conftest import open_and_run, require, screenshot

# lab -> the node count of each graph widget, in the order the lab shows them
EXPECTED = {
    # tanh(x1*w1 + x2*w2 + b) on Scalars: 5 leaves + 2 mul + 2 add + tanh; then the stepper on the same
    # graph; the same neuron with the learner's Cube for tanh; then the tensor neuron: Mul, Sum, Add, Tanh and
    # the leaves w, bias (x needs no gradient)
    "01-derivatives-and-your-first-graph.ipynb": [10, 10, 10, 6],
    # Linear, Tanh, Linear, Sum, Mul, Add, Sub, Pow, Mean + 4 parameters + x and target (view, then stepper)
    "02-backprop-as-an-algorithm.ipynb": [15, 15],
    # Linear, ReLU, Linear, ReLU, Linear, then cross-entropy as PyTorch records it (LogSoftmax, NllLoss);
    # 3 weights + 3 biases; inputs and targets; then the same graph again, profiled ("where the time goes")
    "05-modules-losses-and-optimizers.ipynb": [15, 15],
    # BatchNorm from primitives opened (22) and closed (10), BatchNorm1d's Normalize (15), the opened view again, your Function (13)
    "07-normalisation.ipynb": [22, 10, 15, 22, 13],
    # Linear, ReLU, Dropout's Mul and its mask (a constant of the module), twice; Linear, LogSoftmax, NllLoss; 6
    # parameters, the batch and its targets: 19 in train mode; in eval mode the Muls and masks are gone: 15
    "08-regularisation.ipynb": [19, 15],
    # the CNN: ConvNd, Relu, MaxPoolNd twice, Reshape, Linear, LogSoftmax, NllLoss; 3 weights + 3 biases; images and
    # labels; then the same graph profiled, coloured by time and by memory (the ConvScatter is no graph widget)
    "09-convolutions.ipynb": [18, 18, 18],
    # plain and residual nets of three blocks, modules drawn as boxes (13 top nodes each); one residual block stepped
    # (x, 4 parameters, Addmm, Relu, Addmm, Add, Mul, Sum); the two gradient flows draw no graph until a layer is opened
    "10-deeper-networks-and-skip-connections.ipynb": [13, 13, 11, 0, 0],
    # the step's DeviceTimings (no graph); the profiled step: Linear, QuickGELU's Mul, Sigmoid, Mul, Linear, ReLU,
    # Linear, LogSoftmax, NllLoss + 3 weights + 3 biases + inputs and targets; the tape: the 4 ops outside the fused
    # chain (closed: a group, not a box) + the input and 6 parameters (1.702 is in its op); the compiled step's
    # program (GraphView(step): its calls' top boxes, inputs and parameters); then eager vs compiled
    "12-performance.ipynb": [0, 17, 11, 29, 0],
    # the RNN unrolled 5 steps: 5 × (2 Linear, 2 Add, Tanh) + the cell's 4 parameters + the inputs xs and h_0 +
    # GetItem (xs[:5]), Unbind (the loop over xs), Sum; the tiny GPT with its two blocks closed: the 19 nodes outside
    # them (2 inputs, the text and its targets: the four 31×31 masks are made inside the blocks, so they are drawn
    # there, as constants; GetItem ×2, 2 × (weight, EmbeddingLookup), Add, ln's 2 + Normalize, head's 2 + Linear,
    # Reshape ×2, LogSoftmax, NllLoss); the stepper on the GPT's loss (a tensor: no modules), 50 ops + 30 leaves
    "11-sequences-and-attention.ipynb": [34, 19, 80],
}


def graph_widgets(page):
    return page.locator(".gradlab-widget")


def node_counts(page) -> list:
    return page.evaluate("""() => [...document.querySelectorAll('.gradlab-widget')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")


def current_id(stepper) -> str | None:
    current = stepper.locator("g.gl-state-current")
    return current.get_attribute("data-id") if current.count() else None


def wait_current_change(page, stepper, before, timeout_ms=10_000) -> str | None:
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        now = current_id(stepper)
        if now != before:
            return now
        page.wait_for_timeout(5)
    raise AssertionError(f"the highlighted node stayed {before!r} for {timeout_ms} ms")


@pytest.mark.parametrize("lab", sorted(EXPECTED))
def test_lab_draws_its_graphs(page, server, lab):
    require("ipywidgets", "anywidget")
    open_and_run(page, server, lab)
    assert node_counts(page) == EXPECTED[lab]
    for i in range(graph_widgets(page).count()):
        screenshot(graph_widgets(page).nth(i), f"{server.kind}-{lab[:2]}-widget{i}")


def test_stepper_steps_back_and_inspects(page, server):
    """Lab 2: Step moves the highlight, back returns it, a click opens the inspector, keys step."""
    require("ipywidgets", "anywidget")
    open_and_run(page, server, "02-backprop-as-an-algorithm.ipynb")
    stepper = page.locator(".gradlab-stepper")
    assert stepper.count() == 1
    stepper.scroll_into_view_if_needed()

    assert stepper.locator("g.gl-state-done").count() == 13  # the lab ran it to the end
    stepper.locator("button.gl-reset").click()
    page.wait_for_function("() => !document.querySelector('.gradlab-stepper g.gl-state-done')")
    assert current_id(stepper) is None

    started = time.perf_counter()
    stepper.locator("button.gl-step").click()
    first = wait_current_change(page, stepper, None)
    round_trip_ms = (time.perf_counter() - started) * 1e3
    assert stepper.locator(".gl-nodes g[data-id]").filter(has_text="Mean").get_attribute("data-id") == first
    assert "step 1 of 13" in stepper.locator(".gl-panel-title").inner_text()

    stepper.locator("button.gl-step").click()
    second = wait_current_change(page, stepper, first)
    assert second != first
    assert stepper.locator("g.gl-state-done").count() == 1

    stepper.locator("button.gl-back").click()
    assert wait_current_change(page, stepper, second) == first

    stepper.press("ArrowRight")
    assert wait_current_change(page, stepper, first) == second
    print(f"{server.kind}: click → highlighted node {round_trip_ms:.0f} ms (kernel round trip)")

    tanh = stepper.locator(".gl-nodes g.gl-node").filter(has_text="Tanh")
    tanh.click()
    inspector = stepper.locator(".gl-inspector")
    inspector.wait_for()
    assert "Tanh" in inspector.locator(".gl-inspector-title").inner_text()
    assert "∂L/∂x" in inspector.locator(".gl-math").inner_text()
    assert inspector.locator(".gl-hist svg rect").count() > 0  # the value histogram is drawn

    stepper.locator("button.gl-run-to").click()
    page.wait_for_function("""(id) => {
        const g = document.querySelector('.gradlab-stepper g.gl-state-current');
        return g && g.dataset.id === id; }""", arg=tanh.get_attribute("data-id"))
    assert "Tanh" in stepper.locator(".gl-panel-title").inner_text()
    screenshot(stepper, f"{server.kind}-02-stepper-at-tanh")

    stepper.locator("button.gl-run-end").click()
    page.wait_for_function("() => document.querySelectorAll('.gradlab-stepper g.gl-state-done').length === 13")
    assert current_id(stepper) is None


def test_check_this_node_and_modules(page, server):
    """Lab 5's modules close and open (lab 2's "check this node" moved to lab 4, tested in its own file)."""
    require("ipywidgets", "anywidget")
    open_and_run(page, server, "05-modules-losses-and-optimizers.ipynb")
    view = page.locator(".gradlab-graphview").first  # (the second is the profile's)
    view.scroll_into_view_if_needed()
    before = view.locator(".gl-nodes g.gl-node").count()
    started = time.perf_counter()
    view.locator('g.gl-group.gl-expanded[data-id="g:0"] .gl-group-title').click()
    view.locator('g.gl-group.gl-collapsed[data-id="g:0"]').wait_for()
    close_ms = (time.perf_counter() - started) * 1e3
    assert view.locator(".gl-nodes g.gl-node").count() == before - 3  # 0.weight, 0.bias and the Linear
    screenshot(view, f"{server.kind}-05-module-closed")
    view.locator('g.gl-group.gl-collapsed[data-id="g:0"]').click()
    view.locator('g.gl-group.gl-expanded[data-id="g:0"]').wait_for()
    assert view.locator(".gl-nodes g.gl-node").count() == before
    print(f"{server.kind}: closing a module, click → redrawn {close_ms:.0f} ms")

    # the graph was recoloured by backward's gradients when the cell after it ran
    assert view.locator("select.gl-color").input_value() == "grad"
    legend = view.locator(".gl-legend").inner_text()
    assert "log scale" in legend

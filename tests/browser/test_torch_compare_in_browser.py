"""compare_engines, GradientFlow and DeviceTimings on a PyTorch MLP, in a real browser (JupyterLab).

One notebook, as a learner graduating to PyTorch writes it: the same MLP in both engines (its weights
copied across), compared after both backwards; a torch model that is not the same model; the torch MLP
trained under a GradientFlow; the step timed in both engines. Screenshots land in test-artifacts/browser/:
look at them.
"""

from __future__ import annotations

import pytest

from .conftest import open_and_run, require, run_cell, screenshot

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

NOTEBOOK = "torch-compare-probe.ipynb"
CELLS = [
    """import numpy as np, torch, gradlab as gl
gl.manual_seed(0)
model = gl.nn.Sequential(gl.nn.Linear(2, 16), gl.nn.Tanh(), gl.nn.Linear(16, 16), gl.nn.Tanh(), gl.nn.Linear(16, 2))
torch_model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                  torch.nn.Linear(16, 2))
torch_model.load_state_dict({k: torch.tensor(v.numpy()) for k, v in model.state_dict().items()})
X = np.random.default_rng(0).standard_normal((64, 2)).astype(np.float32)
Y = (X[:, 0] * X[:, 1] > 0).astype(np.int64)""",
    """loss = gl.nn.functional.cross_entropy(model(gl.tensor(X)), gl.tensor(Y))
loss.backward()
torch_loss = torch.nn.functional.cross_entropy(torch_model(torch.tensor(X)), torch.tensor(Y))
torch_loss.backward()
comparison = gl.lab.compare_engines(loss, torch_loss, model, torch_model)
comparison""",
    """narrower = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8), torch.nn.Tanh(),
                                torch.nn.Linear(8, 2))
narrow_loss = torch.nn.functional.cross_entropy(narrower(torch.tensor(X)), torch.tensor(Y))
narrow_loss.backward()
gl.lab.compare_engines(loss, narrow_loss, model, narrower)""",
    """import copy
trained = copy.deepcopy(torch_model)  # (the comparison above keeps showing torch_model's gradients)
flow = gl.lab.GradientFlow(trained)
optimizer = torch.optim.SGD(trained.parameters(), lr=0.1, momentum=0.9)
tx, ty = torch.tensor(X), torch.tensor(Y)
for _ in range(40):
    optimizer.zero_grad()
    step_loss = torch.nn.functional.cross_entropy(trained(tx), ty)
    step_loss.backward()
    optimizer.step()
    flow.update(step_loss)
flow""",
    """def step(model, x, y):
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return loss

timings = gl.lab.DeviceTimings(step, model, gl.tensor(X), gl.randn(64, 2), devices=["cpu"], repeats=5, budget_s=0.5,
                               torch=(step, torch_model, tx, torch.randn(64, 2)))
timings""",
]


@pytest.fixture(scope="module")
def probe(browser, jupyter_server):
    require("ipywidgets", "anywidget")
    server = jupyter_server("lab")
    server.write_notebook(NOTEBOOK, CELLS)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    open_and_run(page, server, NOTEBOOK)
    yield page
    context.close()


def node_named(view, label: str):
    return view.locator(".gl-nodes > g.gl-node").filter(has=view.page.locator(f'text.gl-label:text-is("{label}")'))


def test_the_same_mlp_in_both_engines_side_by_side_with_linked_parameters(probe):
    page = probe
    compare = page.locator(".gradlab-compare").first
    compare.wait_for()
    headline = compare.locator(".gl-compare-headline").inner_text()
    assert headline.startswith("The same model in both engines (6 parameters in 3 modules), and the same gradients")
    assert compare.locator(".gl-compare-row").count() == 6 and compare.locator(".gl-compare-same").count() == 6
    assert "PyTorch's alone: TBackward0 ×3" in compare.locator(".gl-compare-graphs").inner_text()
    views = compare.locator(".gradlab-graphview")
    assert views.count() == 2
    gradlab_view, torch_view = views.nth(0), views.nth(1)
    for view in (gradlab_view, torch_view):
        page.wait_for_function("(el) => el.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length > 0",
                               arg=view.element_handle())
        assert view.locator("select.gl-color").input_value() == "difference"
    assert gradlab_view.locator(".gl-nodes > g.gl-node").count() == 6 + 7  # 6 parameters; 3 Addmm, 2 Tanh, the loss's 2
    screenshot(compare, "torch-compare-same-mlp")

    # a click on a parameter in gradlab's graph selects the same parameter in PyTorch's
    node_named(gradlab_view, "2.weight").click()
    torch_view.locator(".gl-nodes > g.gl-node.gl-selected").wait_for()
    page.wait_for_function(
        "(el) => [...el.querySelectorAll('.gl-nodes > g.gl-node.gl-selected text.gl-label')]"
        ".some((t) => t.textContent === '2.weight')", arg=torch_view.element_handle(), timeout=10_000)
    said = run_cell(page, "print([v.graph.nodes[v.selected].label for v in comparison.views])")
    assert said.strip() == "['2.weight', '2.weight']"
    for view in (gradlab_view, torch_view):  # each engine's inspector, side by side, on the same parameter
        view.locator(".gl-inspector").filter(has_text="2.weight").wait_for()
    shown = [view.locator(".gl-inspector").inner_text() for view in (gradlab_view, torch_view)]
    norms = [float(text.split("GRADIENT (.GRAD)")[1].split("norm")[1].split()[3]) for text in shown]
    assert norms[0] == pytest.approx(norms[1], rel=1e-3)  # the same gradient, as each inspector prints it
    screenshot(compare, "torch-compare-linked-selection")


def test_a_torch_model_that_is_not_the_same_model_is_said_not_to_be(probe):
    page = probe
    compare = page.locator(".gradlab-compare").nth(1)
    compare.wait_for()
    headline = compare.locator(".gl-compare-headline").inner_text()
    assert headline.startswith("These are not the same model: 3 shapes differ (2.weight: [16, 16] vs [8, 16], "
                               "2.bias: [16] vs [8], 4.weight: [2, 16] vs [2, 8]); different weights in 0.weight, "
                               "0.bias, 4.bias (copy them across first: torch_model.load_state_dict(")
    assert compare.locator(".gl-compare-mismatch").count() == 6
    screenshot(compare, "torch-compare-not-the-same-model")


def test_gradient_flow_draws_the_torch_mlps_layers_and_opens_one(probe):
    page = probe
    flow = page.locator(".gradlab-gradient-flow")
    flow.wait_for()
    assert flow.locator(".gl-flow-key").count() == 3  # the three Linear layers: 0, 2, 4
    assert "40 updates" in flow.inner_text()
    screenshot(flow, "torch-gradient-flow")
    flow.locator('.gl-flow-key[data-layer="2"]').click()
    graph = flow.locator(".gradlab-flow-graph")
    graph.wait_for()
    page.wait_for_function("(el) => el.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length > 0",
                           arg=graph.element_handle())
    assert graph.locator("select.gl-color").input_value() == "flow"
    screenshot(flow, "torch-gradient-flow-layer-opened")


def test_device_timings_has_pytorchs_rows_beside_gradlabs(probe):
    page = probe
    chart = page.locator(".gradlab-widget svg.gl-dt").last
    chart.wait_for()
    assert chart.locator('.gl-dt-row[data-device="cpu"] .gl-dt-bar').count() == 1
    assert chart.locator('.gl-dt-row[data-device="torch:cpu"] .gl-dt-bar').count() == 1
    cuda = chart.locator('.gl-dt-row[data-device="torch:cuda"]')
    if not torch.cuda.is_available():
        assert "gl-dt-unavailable" in cuda.get_attribute("class") and "CUDA" in cuda.text_content()
    assert "torch.get_num_threads()" in chart.text_content()
    screenshot(chart, "torch-device-timings")

"""GradientFlow on a torch model: the same figures as on gradlab's, checked by hand and against gradlab itself.

The figures come from flow.py whatever the engine; only the tensor work goes through a reader
(flow_reader.py for gradlab, pytorch/flow.py for PyTorch). That a gradlab flow never loads torch is
tested in test_lab_flow.py, without torch.
"""

from __future__ import annotations

import math
import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.lab.flow import FIGURES, Flow, FlowError

NO_TORCH = "PyTorch is not installed (pip install torch==2.13.0)"


torch = pytest.importorskip("torch", reason=NO_TORCH)


def torch_net(depth=2, width=4, act=torch.nn.Tanh):
    torch.manual_seed(0)
    layers, size = [], 3
    for _ in range(depth - 1):
        layers += [torch.nn.Linear(size, width), act()]
        size = width
    return torch.nn.Sequential(*layers, torch.nn.Linear(size, 2))


def gradlab_twin(model):
    """The gradlab model with the torch model's very weights (same module names, same layout)."""
    layers = [nn.Linear(m.in_features, m.out_features) if isinstance(m, torch.nn.Linear) else
              getattr(nn, type(m).__name__)() for m in model]
    twin = nn.Sequential(*layers)
    twin.load_state_dict({k: gl.tensor(v.detach().numpy().copy()) for k, v in model.state_dict().items()})
    return twin


def torch_step(model, optimizer, x, target, flow=None):
    optimizer.zero_grad()
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    optimizer.step()
    if flow is not None:
        flow.update(loss)
    return loss


def norm(*arrays) -> float:
    return math.sqrt(sum(float((np.asarray(a, dtype=np.float64) ** 2).sum()) for a in arrays))


def test_the_figures_of_a_torch_mlp_match_numpy_by_hand():
    model = torch_net()
    flow = Flow(model)
    x, target = torch.randn(5, 3), torch.randn(5, 2)
    before = {k: v.detach().numpy().astype(np.float64).copy() for k, v in model.named_parameters()}
    loss = torch_step(model, torch.optim.SGD(model.parameters(), lr=0.1), x, target, flow)
    after = {k: v.detach().numpy().astype(np.float64) for k, v in model.named_parameters()}
    grads = {k: v.grad.numpy() for k, v in model.named_parameters()}
    for layer in ("0", "2"):
        w, b = f"{layer}.weight", f"{layer}.bias"
        assert flow.series["grad_norm"][layer][-1] == pytest.approx(norm(grads[w], grads[b]), rel=1e-5)
        assert flow.series["weight_norm"][layer][-1] == pytest.approx(norm(before[w], before[b]), rel=1e-5)
        moved = norm(after[w] - before[w], after[b] - before[b]) / norm(before[w], before[b])
        assert flow.series["update_ratio"][layer][-1] == pytest.approx(moved, rel=1e-4)
    assert flow.loss == [pytest.approx(loss.item())]
    # ∂L/∂output by hand: L = mean((out - t)²), out = W2 tanh(a) + b2, a = W1 x + b1
    xs, ts = x.numpy().astype(np.float64), target.numpy().astype(np.float64)
    a = xs @ before["0.weight"].T + before["0.bias"]
    out = np.tanh(a) @ before["2.weight"].T + before["2.bias"]
    d_out = 2 * (out - ts) / out.size
    d_a = (d_out @ before["2.weight"]) * (1 - np.tanh(a) ** 2)
    assert flow.series["out_grad_norm"]["2"][-1] == pytest.approx(norm(d_out), rel=1e-5)
    assert flow.series["out_grad_norm"]["0"][-1] == pytest.approx(norm(d_a), rel=1e-5)


def test_the_same_model_in_both_engines_draws_the_same_figures():
    model = torch_net(depth=4, act=torch.nn.Sigmoid)
    twin = gradlab_twin(model)
    torch_flow, gradlab_flow = Flow(model), Flow(twin)
    t_opt = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    g_opt = gl.optim.SGD(twin.parameters(), lr=0.5, momentum=0.9)
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, target = rng.standard_normal((8, 3), dtype=np.float32), rng.standard_normal((8, 2), dtype=np.float32)
        torch_step(model, t_opt, torch.from_numpy(x), torch.from_numpy(target), torch_flow)
        g_opt.zero_grad()
        loss = ((twin(gl.tensor(x)) - gl.tensor(target)) ** 2).mean()
        loss.backward()
        g_opt.step()
        gradlab_flow.update(loss)
    assert torch_flow.layer_names == gradlab_flow.layer_names == ["0", "2", "4", "6"]
    for figure in FIGURES:
        for layer in torch_flow.layer_names:
            assert torch_flow.series[figure][layer] == pytest.approx(gradlab_flow.series[figure][layer], rel=1e-4)
    assert torch_flow.loss == pytest.approx(gradlab_flow.loss, rel=1e-5)
    assert [f["layer"] for f in torch_flow.flags()] == [f["layer"] for f in gradlab_flow.flags()]


def test_a_histogram_counts_every_gradient_value_of_a_torch_layer():
    model = torch_net()
    flow = Flow(model)
    torch_step(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.randn(5, 3), torch.randn(5, 2), flow)
    [hist] = flow.histograms["0"]
    assert sum(hist["counts"]) == 3 * 4 + 4
    values = torch.cat([model[0].weight.grad.reshape(-1), model[0].bias.grad.reshape(-1)])
    assert hist["low"] == pytest.approx(float(values.min())) and hist["high"] == pytest.approx(float(values.max()))


def test_the_vanishing_flag_fires_on_a_deep_torch_sigmoid_net():
    model = torch_net(depth=8, width=16, act=torch.nn.Sigmoid)
    flow = Flow(model, vanishing=1e-2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    for _ in range(3):
        torch_step(model, optimizer, torch.randn(32, 3), torch.randn(32, 2), flow)
    flagged = {f["layer"]: f["kind"] for f in flow.flags()}
    assert flagged and set(flagged.values()) == {"vanishing"} and "0" in flagged
    assert "14" not in flagged  # the last layer: its gradient is the largest


def test_a_detached_torch_layer_is_flagged_as_getting_no_gradient():
    class Cut(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.first, self.second = torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.second(self.first(x).detach())

    torch.manual_seed(0)
    model = Cut()
    flow = Flow(model)
    torch_step(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.randn(5, 3), torch.randn(5, 2), flow)
    assert [(f["layer"], f["kind"]) for f in flow.flags()] == [("first", "no_gradient")]


def test_an_evaluation_under_torch_no_grad_does_not_replace_the_last_training_batch():
    model = torch_net()
    flow = Flow(model)
    x = torch.randn(5, 3)
    torch_step(model, torch.optim.SGD(model.parameters(), lr=0.1), x, torch.randn(5, 2), flow)
    with torch.no_grad():
        model(torch.randn(7, 3))
    assert flow.last_input[0] is x


def test_remove_detaches_every_hook_from_the_torch_model():
    model = torch_net()
    flow = Flow(model)
    flow.remove()
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())


def test_torch_inputs_that_cannot_be_figures_are_clear_errors():
    model = torch_net()
    flow = Flow(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(FlowError, match=r"no backward has reached the model yet"):
        flow.update()
    loss = torch_step(model, optimizer, torch.randn(5, 3), torch.randn(5, 2))
    with pytest.raises(FlowError, match=r"loss is the one number the step minimised, got a torch tensor of shape "
                                        r"\[3\]"):
        flow.update(torch.ones(3))
    flow.update(loss)
    with pytest.raises(FlowError, match=r"got the class Linear, not a model; make one first: "
                                        r"GradientFlow\(nn.Linear\(...\)\)"):
        Flow(torch.nn.Linear)
    with pytest.raises(FlowError, match=r"ReLU has no trainable parameters"):
        Flow(torch.nn.ReLU())


def test_a_frozen_torch_layer_is_no_layer():
    model = torch_net(depth=3)
    model[0].requires_grad_(False)
    assert Flow(model).layer_names == ["2", "4"]


# --- the widget and the pictures ----------------------------------------------------------------------

@pytest.fixture
def widgets():
    pytest.importorskip("anywidget", reason="the widget needs anywidget: pip install 'gradlab[lab]'")
    from gradlab.lab.gradient_flow import GradientFlow

    return GradientFlow


def test_the_widget_and_update_ratios_draw_a_torch_models_flow(widgets):
    model = torch_net(depth=3)
    flow = widgets(model, interval=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(4):
        torch_step(model, optimizer, torch.randn(8, 3), torch.randn(8, 2), flow)
    flow.flush()
    assert flow.layers == ["0", "2", "4"] and flow.chart.status == "4 updates · 4 kept"
    chart = flow.chart.charts["update_ratio"]
    assert chart.count('class="gl-flow-layer"') == 3 and chart == flow.to_svg("update_ratio")
    picture = gl.lab.update_ratios(flow)
    assert "dashed: the 0.001 guide" in picture and picture.count("<polyline") == 3  # one line per layer
    assert repr(flow).startswith("<gradlab.lab.GradientFlow: 3 layers, 4 updates")


def test_opening_a_torch_layer_draws_its_graph_with_the_layers_parameters_coloured(widgets):
    model = torch_net(depth=3)
    flow = widgets(model)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(3):
        torch_step(model, optimizer, torch.randn(8, 3), torch.randn(8, 2), flow)
    view = flow.open("2")
    assert flow.widget.children == (flow.chart, view) and view.graph.source == "torch"
    sizes = view._added_modes["flow"][0]
    params = {n.label: n.id for n in view.graph.nodes.values() if n.kind == "param"}
    assert set(params) == {"0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"}
    latest = flow.latest("grad_norm")
    for name, node_id in params.items():
        assert sizes[node_id] == latest[name.split(".")[0]]
    assert {n.group for n in view.graph.nodes.values() if n.kind == "op"} >= {"0", "2", "4"}  # module boxes
    for node in view.graph.nodes.values():  # each op coloured by the layer it ran in; data by none
        if node.kind == "op" and node.group in ("0", "2", "4"):
            assert sizes[node.id] == latest[node.group]
        elif node.kind == "input":
            assert sizes[node.id] is None
    selected = view.graph.nodes[view.selected]
    assert selected.group == "2" and selected.kind == "op" and "g:2" in view.scene.expanded  # opened
    assert model.training  # back in training mode after the forward drawn in eval mode


@pytest.mark.parametrize("dtype_name", ["float64", "bfloat16"])
def test_the_figures_of_a_float64_or_bfloat16_torch_model_match_numpy(dtype_name):
    """float64 is read through numpy on the tensors' memory; bfloat16, which numpy has not, through torch
    itself (the path a GPU's tensors take), summed in float32."""
    dtype = getattr(torch, dtype_name)
    model = torch_net().to(dtype)
    flow = Flow(model)
    before = {k: v.detach().double().numpy().copy() for k, v in model.named_parameters()}
    torch_step(model, torch.optim.SGD(model.parameters(), lr=0.1), torch.randn(5, 3, dtype=dtype),
               torch.randn(5, 2, dtype=dtype), flow)
    after = {k: v.detach().double().numpy() for k, v in model.named_parameters()}
    grads = {k: v.grad.double().numpy() for k, v in model.named_parameters()}
    rel = 1e-12 if dtype_name == "float64" else 1e-5
    for layer in ("0", "2"):
        w, b = f"{layer}.weight", f"{layer}.bias"
        assert flow.series["grad_norm"][layer][-1] == pytest.approx(norm(grads[w], grads[b]), rel=rel)
        moved = norm(after[w] - before[w], after[b] - before[b]) / norm(before[w], before[b])
        assert flow.series["update_ratio"][layer][-1] == pytest.approx(moved, rel=max(rel, 1e-4))
    assert sum(flow.histograms["0"][0]["counts"]) == 16

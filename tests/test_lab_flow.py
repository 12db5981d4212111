"""GradientFlow: per-layer gradient figures over training, checked against numpy on the same tensors.

The figures (flow.py) need no widget; the widget tests (gradient_flow.py) skip without anywidget.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.data import DataLoader, TensorDataset, make_synthetic
from gradlab.lab.colors import decades, layer_color
from gradlab.lab.flow import FIGURES, Flow, FlowError
from gradlab.lab.flow_picture import flow_svg
from gradlab.training import fit


def small_net():
    gl.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def one_step(model, x, target, lr=0.1, flow=None):
    optimizer = gl.optim.SGD(model.parameters(), lr=lr)
    optimizer.zero_grad()
    loss = ((model(x) - target) ** 2).mean()
    loss.backward()
    optimizer.step()
    if flow is not None:
        flow.update(loss)
    return loss


def numpy_of(model):
    return {name: p.detach().numpy().astype(np.float64).copy() for name, p in model.named_parameters()}


def norm(*arrays) -> float:
    return math.sqrt(sum(float((a.astype(np.float64) ** 2).sum()) for a in arrays))


def deep_sigmoid(depth=8, width=16):
    gl.manual_seed(0)
    layers = [nn.Linear(2, width), nn.Sigmoid()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), nn.Sigmoid()]
    return nn.Sequential(*layers, nn.Linear(width, 2))


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc = nn.Linear(width, width)

    def forward(self, x):
        return x + gl.relu(self.fc(self.norm(x)))


class Residual(nn.Module):
    def __init__(self, depth=8, width=16):
        super().__init__()
        self.inp = nn.Linear(2, width)
        self.blocks = nn.ModuleList([Block(width) for _ in range(depth - 2)])
        self.out = nn.Linear(width, 2)

    def forward(self, x):
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


def train_on_spiral(model, flow, steps=20):
    X, y = make_synthetic("spiral", n=200, seed=0)
    optimizer = gl.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model(X), y)
        loss.backward()
        optimizer.step()
        flow.update(loss)


# --- the figures against hand computation -----------------------------------------------------------

def test_the_figures_match_numpy_on_the_parameters_grads_and_a_copy_of_the_weights():
    model = small_net()
    x, target = gl.randn(5, 3), gl.randn(5, 2)
    flow = Flow(model)
    before = numpy_of(model)
    loss = one_step(model, x, target, flow=flow)
    after = numpy_of(model)
    grads = {name: p.grad.numpy().astype(np.float64) for name, p in model.named_parameters()}

    for layer in ("0", "2"):
        w, b = f"{layer}.weight", f"{layer}.bias"
        assert flow.series["grad_norm"][layer][-1] == pytest.approx(norm(grads[w], grads[b]), rel=1e-5)
        # ‖W‖ of the weights that computed this gradient, before the step moved them
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


def test_layers_are_the_modules_that_own_parameters_named_by_their_path():
    assert Flow(small_net()).layer_names == ["0", "2"]
    assert Flow(Residual(depth=4)).layer_names == ["inp", "blocks.0.norm", "blocks.0.fc", "blocks.1.norm",
                                                   "blocks.1.fc", "out"]
    assert Flow(nn.Linear(2, 2)).layer_names == ["Linear"]  # the model itself is the layer


def test_a_histogram_counts_every_gradient_value_of_the_layer():
    model = small_net()
    flow = Flow(model, histogram_every=1)
    one_step(model, gl.randn(5, 3), gl.randn(5, 2), flow=flow)
    hist = flow.histograms["0"][-1]
    values = np.concatenate([model[0].weight.grad.numpy().ravel(), model[0].bias.grad.numpy().ravel()])
    assert sum(hist["counts"]) == values.size == 16
    assert len(hist["counts"]) == 16
    assert hist["low"] == pytest.approx(values.min()) and hist["high"] == pytest.approx(values.max())


def test_histograms_are_kept_every_kth_step_and_the_first():
    model = small_net()
    flow = Flow(model, histogram_every=3)
    x, t = gl.randn(5, 3), gl.randn(5, 2)
    for _ in range(7):
        one_step(model, x, t, flow=flow)
    assert flow.histogram_steps == [1, 3, 6]
    assert len(flow.histograms["2"]) == 3


def test_a_long_history_thins_its_older_half_and_keeps_the_recent_steps():
    model = small_net()
    flow = Flow(model, max_points=8, histogram_every=1, max_histograms=4)
    x, t = gl.randn(5, 3), gl.randn(5, 2)
    for _ in range(40):
        one_step(model, x, t, flow=flow)
    assert len(flow.steps) <= 8 and flow.steps[0] == 1 and flow.steps[-1] == 40
    assert flow.steps[-4:] == [37, 38, 39, 40]  # recent points stay dense
    assert flow.steps == sorted(flow.steps)
    assert all(len(values) == len(flow.steps) for per in flow.series.values() for values in per.values())
    assert len(flow.histogram_steps) <= 4 and flow.histogram_steps[-1] == 40
    assert len(flow.histograms["0"]) == len(flow.histogram_steps)


# --- flags ----------------------------------------------------------------------------------------

def test_flags_fire_on_the_vanishing_sigmoid_net():
    model = deep_sigmoid()
    flow = Flow(model)
    train_on_spiral(model, flow)
    flags = flow.flags()
    assert [f["layer"] for f in flags][:2] == ["0", "2"]  # the layers nearest the input
    assert all(f["kind"] == "vanishing" and f["threshold"] == 1e-3 and f["figure"] < 1e-3 for f in flags)
    assert "mean of the last 10 updates, below 0.001" in flags[0]["rule"]
    # the figure is the mean of the last 10 ratios to the largest layer
    grads = {name: values[-10:] for name, values in flow.series["grad_norm"].items()}
    ratios = [grads["0"][k] / max(v[k] for v in grads.values()) for k in range(10)]
    assert flags[0]["figure"] == pytest.approx(sum(ratios) / 10)


def test_flags_stay_quiet_on_the_residual_layernorm_net():
    gl.manual_seed(0)
    model = Residual()
    flow = Flow(model)
    train_on_spiral(model, flow)
    assert flow.flags() == []


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_exploding_fires_above_the_threshold_and_on_non_finite_gradients():
    model = small_net()
    flow = Flow(model, exploding=10.0)
    optimizer = gl.optim.SGD(model.parameters(), lr=0.0)
    optimizer.zero_grad()
    (model(gl.randn(5, 3)) * 1e4).sum().backward()
    optimizer.step()
    flow.update()
    flagged = {f["layer"]: f for f in flow.flags()}
    assert flagged["2"]["kind"] == "exploding" and flagged["2"]["threshold"] == 10.0
    assert flagged["2"]["figure"] > 10.0

    optimizer.zero_grad()
    (model(gl.tensor([[float("inf"), 0.0, 0.0]])) * 0 + model(gl.randn(1, 3))).sum().backward()
    optimizer.step()
    flow.update()
    assert "not finite" in {f["layer"]: f for f in flow.flags()}["0"]["rule"]
    assert flow.history()["series"]["grad_norm"]["0"][-1] == "nan"  # JSON has no nan: a string


def test_thresholds_are_constructor_arguments():
    model = deep_sigmoid(depth=4)
    flow = Flow(model, vanishing=0.9)
    train_on_spiral(model, flow, steps=3)
    assert {f["threshold"] for f in flow.flags()} == {0.9}


# --- bad input --------------------------------------------------------------------------------------

def test_a_model_with_no_parameters_is_a_clear_error():
    with pytest.raises(FlowError, match=r"GradientFlow\(model\): Sequential has no trainable parameters"):
        Flow(nn.Sequential(nn.ReLU(), nn.Tanh()))
    with pytest.raises(FlowError, match=r"model must be a gradlab.nn.Module or a torch.nn.Module, got Tensor"):
        Flow(gl.randn(3))


def test_update_before_any_backward_is_a_clear_error():
    model = small_net()
    flow = Flow(model)
    model(gl.randn(2, 3))  # a forward alone is not enough
    with pytest.raises(FlowError, match=r"update\(\): no backward has reached the model yet; call it after "
                                        r"loss.backward\(\) and optimizer.step\(\)"):
        flow.update()
    one_step(model, gl.randn(2, 3), gl.randn(2, 2), flow=flow)
    with pytest.raises(FlowError, match=r"no backward reached the model since the last update\(\)"):
        flow.update()


def test_bad_options_are_clear_errors():
    with pytest.raises(FlowError, match=r"vanishing is a number in \(0, 1\), got 2"):
        Flow(small_net(), vanishing=2)
    with pytest.raises(FlowError, match=r"window is an integer ≥ 1, got 0"):
        Flow(small_net(), window=0)
    with pytest.raises(FlowError, match=r"no layer 'fc'; the layers are 0, 2"):
        Flow(small_net()).layer("fc")
    with pytest.raises(FlowError, match=r"no figure 'speed'; the figures are grad_norm"):
        Flow(small_net()).latest("speed")


def test_remove_detaches_every_hook():
    model = small_net()
    flow = Flow(model)
    flow.remove()
    one_step(model, gl.randn(2, 3), gl.randn(2, 2))
    assert not flow._reached and flow.last_input is None
    assert all(not layer.module._forward_hooks for layer in flow.layers) and not model._forward_pre_hooks


def test_an_evaluation_under_no_grad_does_not_replace_the_last_training_batch():
    model = small_net()
    flow = Flow(model)
    x = gl.randn(2, 3)
    one_step(model, x, gl.randn(2, 2), flow=flow)
    with gl.no_grad():
        model(gl.randn(7, 3))
    assert flow.last_input[0] is x


def test_fit_with_the_flow_as_a_callback_updates_after_every_step():
    model = small_net()
    flow = Flow(model)
    X, y = gl.randn(12, 3), gl.randn(12, 2)
    loader = DataLoader(TensorDataset(X, y), batch_size=4)
    history = fit(model, loader, nn.MSELoss(), gl.optim.SGD(model.parameters(), lr=0.1), epochs=2,
                  metrics=None, progress=False, callbacks=[flow])
    assert flow.count == 6 and flow.steps == [1, 2, 3, 4, 5, 6]
    assert np.mean(flow.loss[3:]) == pytest.approx(history["train_loss"][1], rel=1e-6)


# --- pictures -------------------------------------------------------------------------------------

def test_the_static_picture_draws_a_line_per_layer_and_lists_the_flags():
    model = deep_sigmoid(depth=4)
    flow = Flow(model, vanishing=0.9)
    train_on_spiral(model, flow, steps=3)
    svg = flow.to_svg()
    assert svg.startswith("<svg") and svg.count("<polyline") == 4
    assert "layer 0 vanishing" in svg and "below 0.9" in svg


def hand_made_history(layers: int, values: list) -> dict:
    """A flow's history as Flow.history() gives it, every layer with the same figures (None: missing)."""
    names = [f"blocks.{i}.fc" for i in range(layers)]
    return {"layers": names, "steps": list(range(1, len(values) + 1)), "count": len(values), "flags": [],
            "series": {"grad_norm": {name: list(values) for name in names}},
            "figures": {"grad_norm": ["‖∂L/∂W‖", "gradient norm"]},
            "thresholds": {"vanishing": 1e-3, "exploding": 1e2, "window": 10}}


def test_the_picture_keys_every_layer_however_many_there_are():
    svg = flow_svg(hand_made_history(40, [1e-3, 2e-3]))
    assert svg.count('class="gl-flow-key"') == 40 and 'data-layer="blocks.39.fc"' in svg
    assert svg.count('class="gl-flow-layer"') == 40


def test_the_picture_leaves_a_gap_where_a_figure_is_missing():
    # a layer backward did not reach at step 3 has no ‖∂L/∂output‖ there: two pieces of line, not one
    svg = flow_svg(hand_made_history(1, [1e-3, 2e-3, None, 1e-3, "nan", 3e-3]))
    assert svg.count("<polyline") == 1 and svg.count("<circle") == 2  # steps 1-2, then 4 and 6 alone


def test_the_picture_takes_its_colours_and_its_decades_from_colors_py():
    svg = flow_svg(hand_made_history(12, [3e-7, 4e-2]))
    strokes = [m.group(1) for m in re.finditer(r'<polyline[^>]* stroke="(#\w+)"', svg)]
    assert strokes == [layer_color(i) for i in range(12)] and layer_color(10) == layer_color(0)
    assert decades([3e-7, 4e-2]) == (-7, -1) and decades([0.5, 0.7]) == (-1, 0)
    assert decades([1.0, 1.0]) == (-1, 1) and decades([None, 0, "nan"], empty=(-4, -3)) == (-4, -3)
    assert [int(e) for e in re.findall(r">1e(-?\d+)</text>", svg)] == list(range(-7, 0))  # the grid, a line a decade


def test_plot_is_a_matplotlib_figure_on_a_log_scale():
    pytest.importorskip("matplotlib", reason='plot() needs matplotlib: pip install "gradlab[lab]"')
    model = small_net()
    flow = Flow(model)
    one_step(model, gl.randn(5, 3), gl.randn(5, 2), flow=flow)
    one_step(model, gl.randn(5, 3), gl.randn(5, 2), flow=flow)
    figure = flow.plot("update_ratio")
    axes = figure.axes[0]
    assert axes.get_yscale() == "log" and [line.get_label() for line in axes.lines] == ["0", "2"]


# --- the widget -------------------------------------------------------------------------------------

@pytest.fixture
def widgets():
    pytest.importorskip("anywidget", reason="the widget needs anywidget: pip install 'gradlab[lab]'")
    from gradlab.lab.gradient_flow import GradientFlow

    return GradientFlow


def test_the_widget_sends_its_history_throttled_and_flushes_on_demand(widgets):
    model = small_net()
    flow = widgets(model, interval=3600)
    x, t = gl.randn(5, 3), gl.randn(5, 2)
    for _ in range(3):
        one_step(model, x, t, flow=flow)
    assert flow.chart.status.startswith("0 updates")  # inside the interval: nothing sent yet
    assert flow.chart.charts["grad_norm"].count("<polyline") == 0
    flow.flush()
    assert flow.chart.status == "3 updates · 3 kept" and "step 3</text>" in flow.chart.charts["grad_norm"]

    live = widgets(model, interval=0)
    one_step(model, x, t, flow=live)
    assert live.chart.status.startswith("1 update ")  # no interval: every update is drawn


def test_the_live_chart_and_the_saved_picture_are_one_drawing(widgets):
    model = deep_sigmoid(depth=4)
    flow = widgets(model, vanishing=0.9, interval=0)
    train_on_spiral(model, flow, steps=3)
    flow.flush()
    for figure in FIGURES:
        flow.chart.figure = figure  # what the front end's menu sets
        data, _ = flow._repr_mimebundle_()
        assert data["image/svg+xml"] == flow.chart.charts[figure] == flow.to_svg()
    chart = flow.chart.charts["grad_norm"]
    assert chart.count('class="gl-flow-layer"') == 4 and chart.count('class="gl-flow-key"') == 4
    assert 'class="gl-flow-flag gl-flow-vanishing" data-layer="0"' in chart  # a flag is a target to click too


def test_a_push_in_the_loop_redraws_the_menus_figure_and_one_other_in_turn(widgets):
    model = small_net()
    flow = widgets(model, interval=3600)
    x, t = gl.randn(5, 3), gl.randn(5, 2)
    flow.chart.figure = "weight_norm"
    redrawn = []
    for _ in range(3):
        one_step(model, x, t, flow=flow)
        before = dict(flow.chart.charts)
        flow._push(every_figure=False)  # what update() does once the interval has passed
        redrawn.append({figure for figure, svg in flow.chart.charts.items() if svg != before[figure]})
    assert all(len(figures) == 2 and "weight_norm" in figures for figures in redrawn)
    assert set.union(*redrawn) == set(FIGURES)  # in three pushes, every other figure once
    one_step(model, x, t, flow=flow)
    before = dict(flow.chart.charts)
    flow.flush()  # (and the end of every cell): all four, so the saved state is whole
    assert all(flow.chart.charts[figure] != before[figure] for figure in FIGURES)
    with pytest.raises(Exception, match=r"figure.*'grad_norm', 'update_ratio'"):
        flow.chart.figure = "loss"


def test_the_histograms_travel_only_when_one_was_taken(widgets):
    model = small_net()
    flow = widgets(model, interval=0, histogram_every=3)
    sent = []
    flow.chart.observe(lambda change: sent.append(change["new"]["steps"]), "histograms")
    x, t = gl.randn(5, 3), gl.randn(5, 2)
    for _ in range(7):
        one_step(model, x, t, flow=flow)
        flow.flush()
    assert sent == [[1], [1, 3], [1, 3, 6]]  # the first update and every third: not at every push
    assert len(flow.chart.histograms["layers"]["0"]) == 3 and flow.chart.histograms["layers"]["0"][0]["counts"]


def test_the_widget_has_the_flows_python_face(widgets):
    model = deep_sigmoid(depth=4)
    flow = widgets(model, vanishing=0.9)
    train_on_spiral(model, flow, steps=3)
    assert flow.layers == ["0", "2", "4", "6"]
    assert flow.flags() == flow.figures.flags() and flow.flags()
    assert flow.latest()["0"] == flow.figures.series["grad_norm"]["0"][-1]
    data, _ = flow._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data and data["image/svg+xml"].startswith("<svg")
    assert "gradlab-gradient-flow" in flow.widget._dom_classes


def test_opening_a_layer_draws_its_graph_coloured_by_its_layers_figure(widgets):
    model = deep_sigmoid(depth=4)
    flow = widgets(model)
    train_on_spiral(model, flow, steps=4)
    view = flow.open("2")
    assert flow.widget.children == (flow.chart, view) and flow.chart.opened == "2"
    assert view.color_mode == "flow" and "flow" in view.color_labels
    sizes = view._added_modes["flow"][0]
    latest = flow.latest("grad_norm")
    in_layer = [n for n in view.graph.nodes.values() if n.group == "2"]
    assert in_layer and all(sizes[n.id] == latest["2"] for n in in_layer)
    outside = [n for n in view.graph.nodes.values() if n.group is None or n.group == "Sequential"]
    assert all(sizes[n.id] is None for n in outside)  # the loss, the data: in no layer
    assert view.graph.nodes[view.selected].group == "2" and "g:2" in view.scene.expanded
    # nodes of different layers get different colours
    colors = view.colors["flow"]
    first = next(n for n in view.graph.nodes.values() if n.group == "0")
    assert colors[first.id] != colors[in_layer[0].id]


def test_opening_at_an_earlier_step_and_by_another_figure(widgets):
    model = deep_sigmoid(depth=4)
    flow = widgets(model)
    train_on_spiral(model, flow, steps=4)
    view = flow.open("0", step=2, figure="update_ratio")
    node = next(n for n in view.graph.nodes.values() if n.group == "0")
    assert view._added_modes["flow"][0][node.id] == flow.figures.series["update_ratio"]["0"][1]
    assert "step 2" in view.legends["flow"]["title"]


def test_opening_a_nested_layer_opens_its_parents(widgets):
    gl.manual_seed(0)
    model = Residual(depth=4)
    flow = widgets(model)
    train_on_spiral(model, flow, steps=2)
    view = flow.open("blocks.1.fc")
    assert {"g:blocks.1", "g:blocks.1.fc"} <= view.scene.expanded
    assert view.graph.nodes[view.selected].group == "blocks.1.fc"


def test_opening_bad_layers_and_untrained_models_are_clear_errors(widgets):
    model = small_net()
    flow = widgets(model)
    with pytest.raises(FlowError, match=r"the model has not trained yet; run a training step and flow.update"):
        flow.open("0")
    one_step(model, gl.randn(2, 3), gl.randn(2, 2), flow=flow)
    with pytest.raises(FlowError, match=r"no layer 'fc1'; the layers are 0, 2"):
        flow.open("fc1")
    flow._on_front_end_message(None, {"type": "open", "layer": "fc1"})
    assert "no layer 'fc1'" in flow.chart.notice  # a click's error is shown in the widget


def test_the_widget_redraws_when_a_notebook_cell_ends(widgets, notebook_shell):
    Shell = notebook_shell
    model = small_net()
    flow = widgets(model, interval=3600)
    [cell_ended] = Shell.events.callbacks["post_execute"]
    one_step(model, gl.randn(5, 3), gl.randn(5, 2), flow=flow)
    assert flow.chart.status.startswith("0 updates")
    cell_ended()  # what IPython does after each cell
    assert flow.chart.status.startswith("1 update ")


# --- the engine's reader -------------------------------------------------------------------------

def test_a_gradlab_flow_never_loads_torch():
    code = ("import sys, gradlab as gl, gradlab.nn as nn\n"
            "from gradlab.lab.flow import Flow\n"
            "from gradlab.lab.ratio_picture import update_ratios\n"
            "m = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))\n"
            "flow = Flow(m); opt = gl.optim.SGD(m.parameters(), lr=0.1)\n"
            "loss = ((m(gl.randn(5, 3)) - gl.randn(5, 2)) ** 2).mean(); loss.backward(); opt.step()\n"
            "flow.update(loss); update_ratios(flow)\n"
            "assert flow.series['grad_norm']['0'][0] > 0\n"
            "print('torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"

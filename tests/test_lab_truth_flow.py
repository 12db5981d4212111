"""GradientFlow and the profiler tell the truth: a figure the chart has no place for is drawn and flagged,
a layer backward never reaches is flagged, a layer replaced during training is followed, and a mistake
in what they are given is named where it is made."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.lab.flow import Flow, FlowError, FlowWarning
from gradlab.lab.flow_picture import flow_svg


def small_net():
    gl.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def one_step(model, flow, scale=1.0, lr=0.1, set_to_none=True):
    optimizer = gl.optim.SGD(model.parameters(), lr=lr)
    optimizer.zero_grad(set_to_none=set_to_none)
    x, target = gl.randn(5, 3), gl.randn(5, 2)
    loss = ((model(x) - target) ** 2).mean() * scale
    loss.backward()
    optimizer.step()
    flow.update(loss)
    return loss


def grad_norm(module) -> float:
    return math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum()) for p in module.parameters()))


def strict(value):
    """``value`` as JSON a browser's JSON.parse accepts: no NaN, no Infinity, also inside JSON text."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    text = json.dumps(value, allow_nan=False)
    if isinstance(value, str) and value.startswith(("[", "{")):
        json.loads(value, parse_constant=refuse)  # a traitlet sent as one JSON string (AS_JSON_TEXT)
    return text


def widget():
    pytest.importorskip("anywidget", reason="the widget needs anywidget: pip install 'gradlab[lab]'")
    from gradlab.lab.gradient_flow import GradientFlow

    return GradientFlow


# --- a figure that is not finite is drawn as such, and flagged ----------------------------------------------

@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_a_nan_figure_is_drawn_as_an_alarm_mark_at_its_step_not_left_as_a_silent_gap():
    model = small_net()
    flow = Flow(model)
    for _ in range(3):
        one_step(model, flow)
    one_step(model, flow, scale=float("nan"))
    svg = flow.to_svg()
    assert svg.count('class="gl-flow-unplaced gl-flow-nan"') == 2  # one per layer
    assert "<title>layer 0: nan at step 4 — not a number, so it has no place on the log scale</title>" in svg
    assert ("✕ nan above the plot: not finite from step 4, so not on the log scale — layer 0 (nan), 2 (nan)"
            in svg)
    assert "layer 0 not finite: nan — ‖∂L/∂W‖" in svg


def test_inf_is_marked_along_the_top_edge_and_zero_along_the_bottom_with_the_steps_they_hold():
    history = {"layers": ["fc"], "steps": [1, 2, 3, 4, 5], "count": 5, "flags": [],
               "series": {"grad_norm": {"fc": [1e-3, "inf", "inf", 0.0, 2e-3]}},
               "figures": {"grad_norm": ["‖∂L/∂W‖", "gradient norm"]},
               "thresholds": {"vanishing": 1e-3, "exploding": 1e2, "window": 10}}
    svg = flow_svg(history)
    assert "<title>layer fc: inf at steps 2–3 (2 kept points) — infinite, so it has no place on the log" in svg
    assert "<title>layer fc: 0 at step 4 — exactly 0, so it has no place on the log scale</title>" in svg
    assert "▲ inf above the plot: not finite from step 2" in svg
    assert "a mark under the plot: exactly 0, which a log scale cannot show — layer fc" in svg


def test_a_weight_gone_infinite_is_flagged_not_finite_though_its_gradient_is_finite():
    model = small_net()
    flow = Flow(model)
    one_step(model, flow)
    model[0].weight.data = gl.full((4, 3), float("inf"))
    optimizer = gl.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    with np.errstate(invalid="ignore"):
        (model(gl.rand(5, 3)) * 0).sum().backward()  # tanh(inf) = 1: the gradient is 0, the weights inf
        optimizer.step()
        flow.update()
    assert math.isfinite(flow.latest("grad_norm")["0"]) and flow.latest("weight_norm")["0"] == math.inf
    [flag] = flow.flags()
    assert flag["layer"] == "0" and flag["kind"] == "not_finite"
    assert flag["rule"] == ("‖ΔW‖ / ‖W‖, ‖W‖ not finite (nan or inf) in 1 of the last 2 updates, "
                            "first at step 2")


@pytest.mark.filterwarnings("ignore:invalid value encountered", "ignore:overflow encountered")
def test_the_history_and_every_synced_state_stay_strict_json_when_loss_gradients_and_weights_go_non_finite():
    GradientFlow = widget()
    model = small_net()
    flow = GradientFlow(model, interval=0, histogram_every=1)
    one_step(model, flow)
    loss = one_step(model, flow, scale=float("nan"))  # every gradient nan, then every weight
    assert math.isnan(loss.item())
    model[2].weight.data = gl.full((2, 4), float("inf"))
    one_step(model, flow)
    flow.flush()
    view = flow.open("2")
    history = flow.history()
    strict(history)
    assert history["loss"][1] == "nan"  # shown as what it is, not dropped
    note = history["histograms"]["0"][1]
    assert note["counts"] == [] and note["note"] == "all 16 gradient values are not finite (16 nan): nothing to count"
    for shown in (flow.chart, view):
        for name, value in shown.get_state().items():
            try:
                strict(value)
            except ValueError as error:
                pytest.fail(f"{type(shown).__name__}.{name} is not strict JSON: {error}")


# --- a layer backward never reaches -------------------------------------------------------------------------

class TwoPaths(nn.Module):
    """``side`` is cut off from the loss by .detach(); ``tiny``'s gradient is 1e-9 of the others'."""

    def __init__(self):
        super().__init__()
        self.main, self.tiny, self.side = nn.Linear(3, 2), nn.Linear(3, 2), nn.Linear(3, 2)

    def forward(self, x):
        return self.main(x) + self.tiny(x) * 1e-9 + self.side(x).detach()


@pytest.mark.parametrize("set_to_none", [True, False])
def test_a_layer_cut_off_by_detach_is_flagged_no_gradient_as_a_tiny_gradient_is_flagged_vanishing(set_to_none):
    gl.manual_seed(0)
    model = TwoPaths()
    flow = Flow(model)
    for _ in range(3):
        one_step(model, flow, set_to_none=set_to_none)  # zero_grad(set_to_none=False): its .grad stays zeros
    flags = {flag["layer"]: flag for flag in flow.flags()}
    assert {name: flag["kind"] for name, flag in flags.items()} == {"tiny": "vanishing", "side": "no_gradient"}
    assert flags["side"]["rule"].startswith("backward did not reach this layer in the last 3 updates, so its "
                                            "parameters got no gradient and do not learn: a .detach() or a no_grad()")
    assert "layer side no gradient — backward did not reach this layer" in " ".join(flow.to_svg().split())


# --- the model changing under the flow ----------------------------------------------------------------------

def test_a_layer_replaced_during_training_reports_the_new_modules_figures_from_the_step_it_was_replaced():
    GradientFlow = widget()
    model = small_net()
    flow = GradientFlow(model, interval=0)
    for _ in range(3):
        one_step(model, flow)
    model[0] = nn.Linear(3, 4)
    with pytest.warns(FlowWarning, match=r"layer 0 was replaced at step 4: a new Linear \(was a Linear\); its line "
                                         r"before step 4 is the old one's"):
        one_step(model, flow)
    assert flow.figures.layer("0").module is model[0]
    assert flow.latest("grad_norm")["0"] == pytest.approx(grad_norm(model[0]), rel=1e-5)
    one_step(model, flow)
    assert flow.latest("update_ratio")["0"] is not None  # hooked: a whole set of figures from the next step
    assert [(c["step"], c["layer"], c["change"]) for c in flow.figures.changes] == [(4, "0", "replaced")]
    flow.flush()
    chart = flow.chart.charts["grad_norm"]
    assert 'class="gl-flow-change" data-layer="0"' in chart and "⇢ layer 0 was replaced at step 4" in chart
    assert flow.chart.notice.startswith("layer 0 was replaced at step 4")


def test_an_attribute_layer_replaced_is_followed_even_when_it_was_the_only_hooked_layer():
    gl.manual_seed(0)

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(3, 2)

        def forward(self, x):
            return self.fc(x)

    model = Net()
    flow = Flow(model)
    one_step(model, flow)
    model.fc = nn.Linear(3, 2)  # no hook hears this backward: update() must not say none happened
    with pytest.warns(FlowWarning, match="layer fc was replaced at step 2"):
        one_step(model, flow)
    assert flow.latest("grad_norm")["fc"] == pytest.approx(grad_norm(model.fc), rel=1e-5)


def test_layers_added_and_removed_during_training_are_noted_with_the_steps_they_could_have_happened():
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4), nn.Linear(4, 2))
    flow = Flow(model, histogram_every=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlowWarning)
        for _ in range(2):
            one_step(model, flow)
        model.append(nn.Linear(2, 2))  # found at the next look at the model: step 5 (every 5 updates)
        for _ in range(3):
            one_step(model, flow)
        model[2] = nn.Identity()  # its old module misses the next backward: found there, at step 6
        model[0] = nn.Sequential(nn.Linear(3, 4))
        one_step(model, flow)
    assert [(c["step"], c["layer"], c["change"]) for c in flow.changes] == [
        (5, "4", "added"), (6, "0", "removed"), (6, "2", "removed"), (6, "0.0", "added")]
    assert flow.changes[0]["text"] == ("layer 4 (Linear) was added to the model between steps 1 and 5: it has no "
                                       "figures before step 5")
    assert flow.changes[2]["text"] == "layer 2 was removed from the model at step 6: its line ends there"
    assert flow.series["grad_norm"]["4"][:4] == [None] * 4 and flow.series["grad_norm"]["4"][4] is not None
    assert flow.series["grad_norm"]["2"][-1] is None and not [f for f in flow.flags() if f["layer"] == "2"]
    assert flow.layer_names == ["0", "2", "3", "4", "0.0"]
    assert len(flow.histograms["4"]) == len(flow.histogram_steps)


# --- mistakes named where they are made -------------------------------------------------------------------

def test_gradient_flow_of_a_class_says_to_make_a_model_first():
    with pytest.raises(FlowError, match=r"GradientFlow\(model\): got the class Linear, not a model; make one first: "
                                        r"GradientFlow\(nn.Linear\(...\)\)"):
        Flow(nn.Linear)
    with pytest.raises(FlowError, match=r"exploding is a positive number, got True"):
        Flow(small_net(), exploding=True)


def test_update_names_a_loss_that_is_not_one_number():
    model = small_net()
    flow = Flow(model)
    one_step(model, flow)
    model(gl.randn(2, 3)).sum().backward()
    with pytest.raises(TypeError, match=r"GradientFlow.update\(loss=...\): loss is a number or a one-element tensor "
                                        r"\(the step's loss\), or leave it out; got str 'abc'"):
        flow.update(loss="abc")
    with pytest.raises(FlowError, match=r"update\(loss=...\): loss is the one number the step minimised, got a "
                                        r"tensor of shape \[5, 2\]; pass the scalar loss"):
        flow.update(loss=gl.randn(5, 2))
    flow.update(loss=np.float32(0.5))
    assert flow.loss[-1] == 0.5


def test_latest_layer_and_open_name_a_step_or_a_layer_of_the_wrong_type():
    model = small_net()
    flow = Flow(model)
    one_step(model, flow)
    with pytest.raises(TypeError, match=r"latest\(figure, step=...\): step is an update count \(an int\), or None "
                                        r"for the latest; got str '3'"):
        flow.latest("grad_norm", step="3")
    with pytest.raises(FlowError, match=r"a layer is named by its path in the model, a string: write '0', not 0"):
        flow.layer(0)


def test_profile_top_and_table_refuse_a_count_that_would_slice_from_the_end():
    w = gl.randn(3, 3, requires_grad=True)
    profile = gl.lab.profile(lambda: (w * 2).sum())
    for call in (lambda: profile.top(-1), lambda: profile.table(-1), lambda: profile.top(2.5)):
        with pytest.raises(ValueError, match=r"profile\.(top|table)\(n\): n is how many nodes to list, a whole number "
                                             r"≥ 0 .*For every node: profile.rows\(\)"):
            call()
    assert len(profile.top(0)) == 0 and len(profile.top(1)) == 1


def test_profile_of_a_loss_made_before_it_ran_says_to_put_the_forward_inside_fn():
    model = nn.Linear(3, 1)
    x = gl.randn(4, 3)
    loss = model(x).sum()
    with pytest.raises(gl.lab.CaptureError, match=r"profile: fn returned a tensor computed before profile ran it "
                                                  r"\(no operation ran inside fn\), so there is nothing to time; put "
                                                  r"the forward inside fn: gl.lab.profile\(lambda: loss_fn\(model"):
        gl.lab.profile(lambda: loss)
    with pytest.raises(gl.lab.CaptureError, match=r"\(1 operation ran inside fn, none of them made it\)"):
        gl.lab.profile(lambda: (model(x), loss)[1])  # a forward ran, but not the one returned
    with pytest.raises(TypeError, match=r"profile: keep_grads is True or False"):
        gl.lab.profile(lambda: model(x).sum(), keep_grads="yes")


def test_compare_devices_checks_on_update_before_it_runs_anything():
    calls = []
    with pytest.raises(TypeError, match=r"compare_devices: on_update is a function it calls with the table as each "
                                        r"device finishes \(on_update\(table\)\), or None; got 42"):
        gl.lab.compare_devices(lambda: calls.append(1), on_update=42, devices="cpu")
    assert calls == []
    with pytest.raises(TypeError, match=r"compare_compiled: on_update is a function"):
        gl.lab.compare_compiled(nn.Linear(3, 1), None, gl.randn(2, 3), on_update="print", devices="cpu")


def test_compare_compiled_of_a_class_says_to_make_one_first():
    x, y = gl.randn(4, 3), gl.randn(4, 1)
    with pytest.raises(TypeError, match=r"compare_compiled: the first argument \(the model\) is the class Linear, not "
                                        r"one of its objects; make one first"):
        gl.lab.compare_compiled(nn.Linear, nn.MSELoss(), x, y, devices="cpu")
    with pytest.raises(TypeError, match=r"compare_compiled: loss_fn is the class MSELoss, not one of its objects; make "
                                        r"one first: MSELoss\(...\), e.g. nn.MSELoss\(\)"):
        gl.lab.compare_compiled(nn.Linear(3, 1), nn.MSELoss, x, y, devices="cpu")

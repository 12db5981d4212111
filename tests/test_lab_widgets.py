"""GraphView and BackpropStepper: their traitlets, front-end messages, saved pictures, and lazy imports."""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from lab_models import batch, mlp, recorded_mlp_and_twin, recorded_net

pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")

import gradlab as gl  # noqa: E402
import gradlab.nn as nn  # noqa: E402
import gradlab.nn.functional as F  # noqa: E402
from gradlab import Scalar  # noqa: E402
from gradlab.lab.scene import MAX_VISIBLE  # noqa: E402

NODE_BOX = re.compile(r'class="gl-node gl-kind-[a-z]+[^"]*" data-id="([^"]+)"')
COLLAPSED = re.compile(r'class="gl-group gl-collapsed" data-id="([^"]+)"')


def drawn(svg):
    return NODE_BOX.findall(svg)


def views():
    """A GraphView of each kind of thing it draws."""
    model = mlp()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    _, rec, _ = recorded_net(F.cross_entropy)
    a, b = Scalar(0.5, "a"), Scalar(-1.5, "b")
    return {
        "tensor": gl.lab.GraphView(loss, names=dict(model.named_parameters())),
        "recording": gl.lab.GraphView(rec),
        "scalar": gl.lab.GraphView((a * b + a).tanh()),
    }


# --- GraphView: what it sends to the front end ------------------------------------------------------

@pytest.mark.parametrize("kind", ["tensor", "recording", "scalar"])
def test_graph_view_draws_one_box_per_node(kind):
    view = views()[kind]
    assert sorted(drawn(view.svg)) == sorted(view.graph.nodes)


# a recording knows each op's forward time, a tensor's graph what each node saved, a Scalar neither
PROFILE_MODES = {"tensor": {"memory"}, "recording": {"time", "memory"}, "scalar": set()}


@pytest.mark.parametrize("kind", ["tensor", "recording", "scalar"])
def test_graph_view_sends_every_node_with_colors_for_each_mode(kind):
    view = views()[kind]
    assert set(view.nodes) == set(view.graph.nodes)
    assert set(view.colors) == {"grad", "value", "kind"} | PROFILE_MODES[kind]
    for mode in ("grad", "value", "kind"):
        assert set(view.graph.nodes) <= set(view.colors[mode]), mode
    json.dumps(view.nodes, allow_nan=False)


def test_graph_view_of_a_tensor_labels_the_named_parameters():
    view = views()["tensor"]
    assert sorted(n["label"] for n in view.nodes.values() if n["kind"] == "param") == [
        "0.bias", "0.weight", "2.bias", "2.weight"]


def test_graph_view_refuses_what_it_cannot_draw():
    with pytest.raises(gl.lab.CaptureError, match="cannot draw an object of type str"):
        gl.lab.GraphView("loss")


# --- opening and closing modules -----------------------------------------------------------------------

def test_toggle_closes_a_module_and_hides_its_members():
    _, rec, _ = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    members = view.scene.members["g:encoder"]
    assert view.toggle("encoder") is False
    assert not set(members) & set(drawn(view.svg))
    assert "g:encoder" in COLLAPSED.findall(view.svg)


def test_toggle_opens_a_closed_module_again():
    _, rec, _ = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    before = sorted(drawn(view.svg))
    view.toggle("encoder")
    closed_svg = view.svg
    assert view.toggle("g:encoder") is True
    assert view.svg != closed_svg
    assert sorted(drawn(view.svg)) == before and "g:encoder" not in COLLAPSED.findall(view.svg)


def _inside(placement, group, members):
    """Where each member sits relative to its group's frame."""
    frame = placement.boxes[group]
    return {m: (placement.boxes[m].x - frame.x, placement.boxes[m].y - frame.y) for m in members}


def test_toggle_keeps_the_layout_inside_modules_off_the_ancestor_chain():
    _, rec, _ = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    untouched = {g: view.scene.members[g] for g in ("g:head", "g:encoder.1")}  # not encoder.0, encoder or Net
    before = {g: _inside(view.scene.placement(), g, m) for g, m in untouched.items()}
    view.toggle("encoder.0")
    after = {g: _inside(view.scene.placement(), g, m) for g, m in untouched.items()}
    for group, places in before.items():  # the cached layout of the group, composed at a new origin
        assert after[group] == {m: pytest.approx(xy, abs=1e-9) for m, xy in places.items()}, group
    assert "g:encoder.0" in COLLAPSED.findall(view.svg)


def test_toggle_of_an_unknown_module_is_a_key_error():
    _, rec, _ = recorded_net(F.cross_entropy)
    with pytest.raises(KeyError, match="decoder"):
        gl.lab.GraphView(rec).toggle("decoder")


def test_a_graph_of_more_than_300_nodes_opens_collapsed_with_a_notice():
    layers = []
    for _ in range(120):
        layers += [nn.Linear(4, 4), nn.ReLU()]
    model = nn.Sequential(*layers)
    with gl.lab.record() as rec:
        model(gl.randn(2, 4)).sum()
    view = gl.lab.GraphView(rec)
    assert len(view.graph.nodes) > 300
    assert "collapsed" in view.notice
    boxes = len(drawn(view.svg)) + len(COLLAPSED.findall(view.svg))
    assert COLLAPSED.findall(view.svg) and len(drawn(view.svg)) < 300 and boxes <= MAX_VISIBLE


# --- messages from the front end ---------------------------------------------------------------------

def test_a_toggle_message_toggles_the_module():
    _, rec, _ = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    view._on_front_end_message(None, {"type": "toggle", "id": "g:head"})
    assert "g:head" in COLLAPSED.findall(view.svg) and view.notice == ""


def test_a_check_message_sets_check_result():
    _, rec, _ = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    linear = next(n.id for n in view.graph.nodes.values() if n.op == "AddmmBackward0")
    view._on_front_end_message(None, {"type": "check", "id": linear})
    assert view.check_result["id"] == linear and view.check_result["ok"] is True
    assert [row["name"] for row in view.check_result["inputs"]] == ["x", "w", "b"]


def test_check_on_a_tensor_graph_explains_instead_of_raising():
    view = views()["tensor"]
    result = view.check(view.graph.outputs[0])
    assert result["ok"] is None and "gl.lab.record()" in result["message"]
    assert view.check_result == result


def test_an_unknown_message_sets_the_notice_instead_of_raising():
    _, rec, _ = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    view._on_front_end_message(None, {"type": "explode"})
    assert "explode" in view.notice


def test_a_message_about_a_missing_node_sets_the_notice():
    _, rec, _ = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    view._on_front_end_message(None, {"type": "check", "id": "n999"})
    assert "n999" in view.notice


# --- gradients that arrive later ------------------------------------------------------------------------

def test_refresh_after_backward_shows_gradients_and_colours_by_them():
    net, rec, loss = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    assert view.color_mode == "kind"
    assert all(n["grad"] is None for n in view.nodes.values())
    loss.backward()
    view.refresh()
    assert view.color_mode == "grad"
    for node in view.graph.nodes.values():
        if node.kind == "op":
            assert view.nodes[node.id]["grad"] is not None, node.label
    for name, p in net.named_parameters():
        norm = view.nodes[view.graph.node_for(p).id]["grad"]["norm"]
        assert norm == pytest.approx(float(np.linalg.norm(p.grad.numpy().astype(np.float64))))


def test_refresh_keeps_every_colour_mode():
    net, rec, loss = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    loss.backward()
    view.refresh()
    every = {"grad", "value", "kind"} | PROFILE_MODES["recording"] | {"forward", "backward"}  # backward was timed
    assert set(view.colors) == every and set(view.legends) == every
    assert set(view.graph.nodes) <= set(view.colors["grad"])


def test_an_added_colour_mode_colours_by_its_figures_and_survives_a_refresh():
    net, rec, loss = recorded_net(F.cross_entropy)
    view = gl.lab.GraphView(rec)
    ops = [n.id for n in view.graph.nodes.values() if n.kind == "op"]
    large = next(n.id for n in view.graph.nodes.values() if n.kind == "op" and n.group)
    small = next(i for i in ops if i != large)
    view.add_color_mode("time", {small: 1e-6, large: 1e-3}, "time, log scale", label="time", missing="not timed")
    assert view.color_labels["time"] == "time" and set(view.color_labels) == {"grad", "value", "kind", "memory", "time"}
    colors = view.colors["time"]
    assert set(view.graph.nodes) <= set(colors)
    assert colors[small][0] == "#440154" and colors[large][0] == "#fde725"  # the two ends of the scale
    untimed = next(n for n in view.graph.nodes if n not in (small, large))
    assert colors[untimed][0] == "#e6e6e6" and view.legends["time"]["missing_text"] == "not timed"
    group = "g:" + view.graph.nodes[large].group
    assert colors[group][0] == "#fde725"  # a module takes its largest member's colour
    loss.backward()
    view.refresh()
    view._refresh_values()
    assert view.colors["time"][large][0] == "#fde725"
    with pytest.raises(KeyError, match="no node 'n999' in this graph"):
        view.add_color_mode("flow", {"n999": 1.0}, "flow")


def test_a_view_drawn_after_backward_colours_by_gradient():
    model = mlp()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    loss.backward(retain_graph=True)
    view = gl.lab.GraphView(loss, names=dict(model.named_parameters()))
    assert view.color_mode == "grad"


def test_a_view_drawn_after_backward_freed_the_graph_says_so():
    model = mlp()
    x, y = batch()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    assert "retain_graph=True" in gl.lab.GraphView(loss).notice


# --- pictures --------------------------------------------------------------------------------------------

def test_the_widget_sends_its_front_end_module():
    view = views()["recording"]
    assert "// ---- widgets/graph_view.js" in view.get_state()["_esm"]


def test_the_widget_sends_its_stylesheet():
    view = views()["recording"]
    assert ".gradlab-widget" in view.get_state().get("_css", "")


def test_repr_mimebundle_carries_the_widget_and_a_static_svg():
    data, _ = views()["recording"]._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["image/svg+xml"].startswith("<svg")


def key_entries(svg: str) -> list:
    """The colour key's swatches and words, in order (positions aside: a key wraps to the width it is given)."""
    key = svg[svg.index('class="gl-key"'):]
    return [fill or text for fill, text in re.findall(r'class="gl-swatch"[^>]* fill="(#\w+)"|>([^<>]+)</text>', key)]


def test_the_colour_key_is_one_drawing_for_the_widget_and_the_saved_picture():
    view = views()["recording"]
    for mode in view.color_labels:  # grad, value, kind, time
        view.color_mode = mode  # what the front end's menu sets
        live, saved = key_entries(view.color_keys[mode]), key_entries(view.to_svg())
        assert live == saved and live[0] == view.legends[mode]["title"] + ":"
    swatches = [entry for entry in key_entries(view.color_keys["grad"]) if entry.startswith("#")]
    assert swatches == [color for _, color in view.legends["grad"]["stops"]] + ["#e6e6e6", "#b9b9c8"]  # missing, zero


def test_save_svg_writes_the_drawing(tmp_path):
    view = views()["recording"]
    view.save_svg(tmp_path / "graph.svg")
    svg = (tmp_path / "graph.svg").read_text(encoding="utf-8")
    assert svg.startswith("<svg") and sorted(drawn(svg)) == sorted(view.graph.nodes)


def test_save_html_is_one_self_contained_page(tmp_path):
    view = views()["recording"]
    view.save_html(tmp_path / "graph.html")
    html = (tmp_path / "graph.html").read_text(encoding="utf-8")
    for name in ("graph_view.js", "graph_canvas.js", "inspector.js", "dom.js"):
        assert f"// ---- widgets/{name}" in html, name  # the bundled front end, inlined
    assert not re.search(r"^\s*import\s", html, re.M)  # no import of a neighbouring file left
    assert 'from "./' not in html and "<script src" not in html and "<link" not in html
    urls = set(re.findall(r"https?://[^\s\"'<>\\)]+", html))
    assert urls <= {"http://www.w3.org/2000/svg"}  # an XML namespace, never fetched: no CDN


def test_save_html_carries_the_widget_state(tmp_path):
    view = views()["recording"]
    view.save_html(tmp_path / "graph.html")
    html = (tmp_path / "graph.html").read_text(encoding="utf-8")
    state = json.loads(re.search(r"const state = (\{.*?\});\n", html, re.S).group(1))
    assert set(state["nodes"]) == set(view.graph.nodes) and state["svg"] == view.svg


# --- BackpropStepper --------------------------------------------------------------------------------------

def stepper_on_mlp():
    rec, model, twin = recorded_mlp_and_twin()
    return gl.lab.BackpropStepper(rec), model, twin


def states_count(stepper, state):
    return sum(1 for s in stepper.states.values() if s == state)


def test_stepper_before_the_first_step_has_no_current_node():
    stepper, _, _ = stepper_on_mlp()
    assert stepper.step_index == 0 and stepper.current_id == "" and stepper.current is None
    assert states_count(stepper, "current") == 0 and states_count(stepper, "done") == 0
    assert stepper.total_steps == 9  # nll_loss, log_softmax, linear, tanh, linear, four AccumulateGrads


def test_each_step_marks_exactly_one_current_node():
    stepper, _, _ = stepper_on_mlp()
    for k in range(1, stepper.total_steps + 1):
        stepper.step()
        assert states_count(stepper, "current") == 1
        assert stepper.states[stepper.current_id] == "current"
        assert stepper.step_index == k
        assert states_count(stepper, "done") == k - 1  # the steps before the current one
        assert stepper.panel["node"] == stepper.current_id


def test_the_first_step_is_the_loss():
    stepper, _, _ = stepper_on_mlp()
    stepper.step()
    assert stepper.current_id in stepper.graph.outputs
    assert stepper.panel["grads_in"][0]["values"] == [1.0]  # backward starts from ∂L/∂L = 1


def test_data_inputs_are_never_reached():
    stepper, _, _ = stepper_on_mlp()
    stepper.run_to_end()
    inputs = [n.id for n in stepper.graph.nodes.values() if n.kind == "input"]
    assert len(inputs) == 2 and all(stepper.states[i] == "unreached" for i in inputs)
    assert states_count(stepper, "done") == stepper.total_steps


def test_step_message_steps():
    stepper, _, _ = stepper_on_mlp()
    stepper._on_front_end_message(None, {"type": "step"})
    stepper._on_front_end_message(None, {"type": "step"})
    assert stepper.step_index == 2 and stepper.notice == ""


def test_back_message_steps_back():
    stepper, _, _ = stepper_on_mlp()
    stepper.step()
    first = stepper.current_id
    stepper.step()
    stepper._on_front_end_message(None, {"type": "back"})
    assert (stepper.step_index, stepper.current_id) == (1, first)


def test_end_message_runs_to_the_end_with_backwards_gradients_bit_for_bit():
    stepper, model, twin = stepper_on_mlp()
    stepper._on_front_end_message(None, {"type": "end"})
    assert stepper.current_id == "" and stepper.step_index == stepper.total_steps
    for (name, p), (_, q) in zip(model.named_parameters(), twin.named_parameters()):
        assert np.array_equal(p.grad.numpy(), q.grad.numpy()), name


def test_reset_message_goes_back_to_before_the_first_step():
    stepper, model, _ = stepper_on_mlp()
    stepper.run_to_end()
    stepper._on_front_end_message(None, {"type": "reset"})
    assert stepper.step_index == 0 and stepper.current_id == ""
    assert all(p.grad is None for p in model.parameters())
    assert set(stepper.states.values()) == {"pending", "unreached"}


def test_run_to_message_steps_until_that_node_has_run():
    stepper, model, _ = stepper_on_mlp()
    weight = stepper.graph.node_for(model[0].weight).id
    stepper._on_front_end_message(None, {"type": "run_to", "id": weight})
    assert stepper.current_id == weight
    assert model[0].weight.grad is not None


def test_run_to_a_tensor_an_op_made_runs_to_that_op():
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    hidden = model[1](model[0](gl.randn(5, 3)))
    stepper = gl.lab.BackpropStepper((model[2](hidden) ** 2).mean())
    stepper.run_to(hidden)
    assert stepper.current.op == "TanhBackward0"
    assert stepper.current_id == stepper._node_id(hidden.grad_fn, "run_to")


def test_run_to_a_node_already_passed_steps_back_to_it():
    stepper, model, _ = stepper_on_mlp()
    tanh = next(n.id for n in stepper.graph.nodes.values() if n.op == "TanhBackward0")
    stepper.run_to(tanh)
    at_tanh = stepper.step_index
    stepper.run_to_end()
    stepper._on_front_end_message(None, {"type": "run_to", "id": tanh})
    assert (stepper.current_id, stepper.step_index) == (tanh, at_tanh)
    assert model[0].weight.grad is None  # the first layer's leaves come after Tanh


def test_run_to_an_unreached_node_stays_where_it_is():
    stepper, _, _ = stepper_on_mlp()
    stepper.step()
    data = next(n.id for n in stepper.graph.nodes.values() if n.kind == "input")
    stepper.run_to(data)
    assert "never reached" in stepper.notice
    assert stepper.step_index == 1


def test_stepping_past_the_end_says_backward_has_finished():
    stepper, _, _ = stepper_on_mlp()
    stepper.run_to_end()
    stepper.step()
    assert "finished" in stepper.notice and stepper.step_index == stepper.total_steps


def test_the_panel_never_says_before_the_first_step_once_stepping_began():
    model = nn.Linear(3, 2)
    x, _ = batch()
    h = model(x)  # outside the recording: its Linear and parameters are not drawn
    with gl.lab.record() as rec:
        (h * 2).sum()
    stepper = gl.lab.BackpropStepper(rec)
    for _ in range(stepper.total_steps):
        stepper.step()
        assert stepper.panel["title"] != "before the first step", stepper.step_index


def test_stepper_on_a_scalar_reaches_every_node():
    a, b = Scalar(3.0, "a"), Scalar(-2.0, "b")
    stepper = gl.lab.BackpropStepper(a * a + a * b)
    stepper.run_to_end()
    assert set(stepper.states.values()) == {"done"}
    assert (a.grad, b.grad) == (4.0, 3.0)  # 2a + b and a


def test_stepper_on_a_scalar_shows_values_and_grads_in_the_boxes():
    a = Scalar(3.0, "a")
    stepper = gl.lab.BackpropStepper(a * a)
    stepper.run_to_end()
    assert stepper.texts[stepper.graph.node_for(a).id] == "3 · grad 6"


# --- lazy imports --------------------------------------------------------------------------------------------

def run_python(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()


def test_import_gradlab_does_not_import_the_widget_libraries():
    assert run_python("import gradlab, sys; print('anywidget' in sys.modules, 'ipywidgets' in sys.modules)") == \
        "False False"


def test_record_works_without_loading_the_widget_libraries():
    code = ("import sys, gradlab as gl\n"
            "w = gl.randn(3, requires_grad=True)\n"
            "with gl.lab.record() as rec:\n"
            "    (w * 2).sum()\n"
            "print(len(gl.lab.capture(rec).nodes), 'anywidget' in sys.modules, 'ipywidgets' in sys.modules)")
    assert run_python(code) == "3 False False"


def test_graph_view_loads_the_widget_libraries():
    code = "import sys, gradlab as gl\ngl.lab.GraphView\nprint('anywidget' in sys.modules)"
    assert run_python(code) == "True"


def test_a_closed_module_shows_the_step_inside_it():
    """Stepping through a closed module highlights the module's box, and positions do not move."""
    model = nn.Sequential(nn.Sequential(nn.Linear(2, 3), nn.Tanh()), nn.Linear(3, 1))
    with gl.lab.record() as rec:
        model(gl.randn(4, 2)).sum()
    stepper = gl.lab.BackpropStepper(rec)
    stepper.toggle("0")  # close the first block
    svg = stepper.svg
    tanh = stepper.find("Tanh")[0]
    stepper.run_to(tanh)
    assert stepper.states[tanh] == "current"
    assert stepper.group_states["g:0"] == "current"
    assert stepper.group_states["g:1"] == "done"
    assert stepper.svg == svg
    stepper.run_to_end()
    assert set(stepper.group_states.values()) == {"done"}
    assert 'class="gl-group gl-collapsed gl-state-done" data-id="g:0"' in stepper.to_svg()

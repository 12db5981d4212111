"""The playground: its datasets, its steps against a hand-run step, its thread, and a picture that tells the truth.

``Training`` (the steps) and the picture need no widget; the Playground tests skip without anywidget.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.lab.colors import class_tint
from gradlab.lab.playground_data import EXTENT, GRID_CELLS, grid_centres, make_dataset
from gradlab.lab.playground_picture import CELL, cell_level, playground_svg
from gradlab.lab.playground_training import DEFAULTS, PlaygroundError, Training, build_mlp

ROOT = Path(__file__).resolve().parent.parent


def weights_of(model) -> dict:
    return {name: p.detach().numpy().copy() for name, p in model.named_parameters()}


def wait_until(condition, seconds=20.0):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting for the training thread"
        time.sleep(0.01)


# --- the datasets -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["blobs", "circles", "xor", "spirals"])
def test_each_dataset_is_400_balanced_points_the_same_for_the_same_seed(name):
    X, y = make_dataset(name, 400, noise=0.1, seed=3)
    assert X.shape == (400, 2) and y.shape == (400, 1)
    assert X.dtype == gl.float32 and y.dtype == gl.float32
    assert sorted(set(y.numpy().ravel().tolist())) == [0.0, 1.0] and y.numpy().sum() == 200
    again, _ = make_dataset(name, 400, noise=0.1, seed=3)
    other, _ = make_dataset(name, 400, noise=0.1, seed=4)
    clean, _ = make_dataset(name, 400, noise=0.0, seed=3)
    assert np.array_equal(X.numpy(), again.numpy())
    assert not np.array_equal(X.numpy(), other.numpy()) and not np.array_equal(X.numpy(), clean.numpy())


def test_the_spiral_is_two_arms_and_the_circle_a_disc_in_a_ring():
    X, y = make_dataset("circles", 400, noise=0.0)
    radius, label = np.linalg.norm(X.numpy(), axis=1), y.numpy().ravel()
    assert radius[label == 1].max() <= 0.5 < 0.7 <= radius[label == 0].min()
    X, y = make_dataset("xor", 400, noise=0.0)
    assert np.array_equal((X.numpy().prod(axis=1) > 0), y.numpy().ravel() == 1)


def test_an_unknown_dataset_names_the_four():
    with pytest.raises(ValueError, match=r"no dataset 'moons'; choose one of 'blobs', 'circles', 'xor', 'spirals'"):
        make_dataset("moons")


def test_the_grid_runs_row_by_row_from_the_top_left():
    centres = grid_centres().numpy()
    half = EXTENT / GRID_CELLS
    assert centres.shape == (GRID_CELLS ** 2, 2)
    assert np.allclose(centres[0], [-EXTENT + half, EXTENT - half])
    assert np.allclose(centres[1] - centres[0], [2 * half, 0])
    assert np.allclose(centres[GRID_CELLS] - centres[0], [0, -2 * half])


# --- a step is a real step ------------------------------------------------------------------------

def test_a_step_moves_the_weights_as_a_hand_run_sgd_step_with_the_same_settings():
    training = Training(seed=5, optimizer="sgd", learning_rate=0.1, regularization="L2", reg_rate=0.01,
                        batch_size=16, depth=2, width=6)
    loss = training.step()
    x, y = training.last_batch
    assert x.shape == (16, 2)

    by_hand = build_mlp(2, 6, "tanh", seed=5)  # the seed's initial weights, built again
    weights = [by_hand.hidden1.weight, by_hand.hidden2.weight, by_hand.output.weight]
    hand_loss = F.binary_cross_entropy_with_logits(by_hand(x), y) + 0.01 * sum((w * w).sum() for w in weights) / 2
    hand_loss.backward()
    expected = {name: p.detach().numpy() - 0.1 * p.grad.numpy() for name, p in by_hand.named_parameters()}

    assert loss == pytest.approx(hand_loss.item(), rel=1e-6)
    assert training.history.losses.tolist() == [loss]  # the loss curve is the real loss of each step
    for name, value in weights_of(training.model).items():
        np.testing.assert_allclose(value, expected[name], rtol=1e-5, atol=1e-7, err_msg=name)


def test_l1_and_adam_are_what_they_say():
    training = Training(seed=1, optimizer="adam", learning_rate=0.01, regularization="L1", reg_rate=0.1)
    before = weights_of(training.model)
    training.step()
    moved = {name: np.abs(value - before[name]).max() for name, value in weights_of(training.model).items()}
    assert all(m == pytest.approx(0.01, rel=1e-3) for m in moved.values())  # Adam's first step is lr per element
    x, y = training.last_batch
    data_loss = F.binary_cross_entropy_with_logits(build_mlp(2, 8, "tanh", 1)(x), y).item()
    penalty = sum(np.abs(before[f"{n}.weight"]).sum() for n in training.layers)
    assert training.history.losses[0] == pytest.approx(data_loss + 0.1 * penalty, rel=1e-5)


def test_the_gradient_norms_are_the_norms_of_each_layers_grad():
    training = Training(seed=2, optimizer="sgd")
    for _ in range(3):
        training.step()
    norms = training.history.grad_norms
    assert list(norms) == ["hidden1", "hidden2", "output"]
    for name in training.layers:
        layer = getattr(training.model, name)
        by_numpy = math.sqrt(sum(float((p.grad.numpy().astype(np.float64) ** 2).sum()) for p in layer.parameters()))
        assert norms[name][-1] == pytest.approx(by_numpy, rel=1e-6)


def test_the_batches_are_seeded_and_cover_every_point_in_an_epoch():
    a, b = Training(seed=0, batch_size=40), Training(seed=0, batch_size=40)
    seen = []
    for _ in range(10):
        a.step()
        b.step()
        assert np.array_equal(a.last_batch[0].numpy(), b.last_batch[0].numpy())
        seen.append(a.last_batch[0].numpy())
    assert len({tuple(row) for row in np.concatenate(seen).tolist()}) == len({tuple(r) for r in a.X.numpy().tolist()})


@pytest.mark.parametrize("controls, message", [
    (dict(depth=9), r"Playground\(depth=...\): depth is the number of hidden layers, an integer from 0 to 6; got 9"),
    (dict(width=2.5), r"width is the neurons in each hidden layer, an integer from 1 to 16; got 2.5"),
    (dict(learning_rate=0), r"learning_rate is a number > 0 \(the menu offers 0.0001 to 3\); got 0"),
    (dict(noise=1.0), r"noise is the standard deviation of the points' jitter, from 0 to 0.5; got 1.0"),
    (dict(activation="gelu"), r"no activation 'gelu'; choose one of 'tanh', 'relu', 'sigmoid', 'linear'"),
    (dict(optimizer="lbfgs"), r"no optimizer 'lbfgs'; choose one of 'sgd', 'momentum', 'rmsprop', 'adam'"),
    (dict(batch_size=0), r"batch_size is the points in each step's batch, an integer from 1 to 400; got 0"),
    (dict(regularization="L3"), r"no regularization 'L3'; choose one of 'none', 'L1', 'L2'"),
])
def test_bad_controls_say_what_is_allowed(controls, message):
    with pytest.raises(PlaygroundError, match=message):
        Training(**controls)


# --- the picture is the model's -------------------------------------------------------------------

def cell_fill(svg: str, row: int, col: int) -> str:
    """The fill of the boundary rectangle that covers grid cell (row, col)."""
    box = re.search(r'class="gl-pg-boundary" data-left="([\d.]+)" data-top="([\d.]+)"', svg)
    left, top = float(box[1]), float(box[2])
    x, y = left + (col + 0.5) * CELL, top + (row + 0.5) * CELL
    for rx, ry, w, h, fill in re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="(\d+)" height="(\d+)" '
                                         r'fill="(#[0-9a-f]{6})"/>', svg.split('class="gl-pg-boundary"')[1]):
        if float(rx) <= x < float(rx) + int(w) and float(ry) <= y < float(ry) + int(h):
            return fill
    raise AssertionError(f"no rectangle covers cell {row}, {col}")


def test_every_boundary_cell_is_coloured_by_the_models_prediction_at_its_centre():
    training = Training(dataset="xor", seed=0)
    for _ in range(300):
        training.step()
    svg = playground_svg(training)
    half = EXTENT / GRID_CELLS
    for row in range(0, GRID_CELLS, 3):
        for col in range(0, GRID_CELLS, 3):
            centre = gl.tensor([[-EXTENT + (2 * col + 1) * half, EXTENT - (2 * row + 1) * half]])
            p = 1 / (1 + math.exp(-training.model(centre).item()))  # the model, asked at that one point
            assert cell_fill(svg, row, col) == class_tint(cell_level(p)), (row, col, p)
    # the learnt xor: blue (label 1) top right, where x1·x2 > 0; orange bottom right, where it is < 0
    blue, orange = ({class_tint(level / 20) for level in levels} for levels in (range(11, 21), range(0, 10)))
    assert cell_fill(svg, 5, 34) in blue and cell_fill(svg, 34, 34) in orange
    assert training.accuracy() > 0.9


def test_the_loss_curve_reads_back_as_the_losses_and_the_key_names_each_layer():
    training = Training(seed=0)
    for _ in range(12):
        training.step()
    svg = playground_svg(training)
    chart = re.search(r'class="gl-pg-chart gl-pg-loss" data-decades="(-?\d+) (-?\d+)" data-steps="(\d+) (\d+)" '
                      r'data-box="([\d.]+) ([\d.]+) ([\d.]+) ([\d.]+)"', svg)
    low, high, first, last = (int(v) for v in chart.groups()[:4])
    x0, top, width, height = (float(v) for v in chart.groups()[4:])
    points = re.search(r'gl-pg-loss".*?<polyline [^>]*points="([^"]+)"', svg)[1].split()
    assert (first, last, len(points)) == (1, 12, 12)
    read = [10 ** (high - (float(p.split(",")[1]) - top) / height * (high - low)) for p in points]
    np.testing.assert_allclose(read, training.history.losses, rtol=0.02)  # one decimal place of a pixel
    keys = re.findall(r'class="gl-pg-key" data-layer="(\w+)"', svg)
    assert keys == ["hidden1", "hidden2", "output"]
    assert re.findall(r'class="gl-pg-layer" data-layer="(\w+)"', svg) == keys
    assert len(re.findall(r'data-layer="hidden2" data-neuron=', svg)) == 0  # neurons sit inside their layer's group
    assert svg.count('class="gl-pg-neuron" data-neuron=') == 8 + 8 + 1


def test_the_picture_takes_its_colours_from_colors_py():
    picture = (ROOT / "gradlab" / "lab" / "playground_picture.py").read_text(encoding="utf-8")
    assert re.findall(r"#[0-9a-fA-F]{6}\b", picture) == []


# --- the widget and its thread ------------------------------------------------------------------

anywidget = pytest.importorskip("anywidget", reason="the lab widgets need anywidget: pip install 'gradlab[lab]'")


@pytest.fixture
def playground():
    pg = gl.lab.Playground(interval=0.02)
    yield pg
    pg.pause()


def test_pause_really_stops_the_thread(playground):
    playground.train()
    assert playground.panel.running
    wait_until(lambda: playground.training.step_count > 20)
    playground.pause()
    stopped_at = playground.training.step_count
    assert not playground.running and not playground.panel.running
    time.sleep(0.2)
    assert playground.training.step_count == stopped_at
    assert playground.panel.step == stopped_at and playground.panel.status.startswith(f"step {stopped_at} · loss ")


def test_the_thread_redraws_while_it_trains(playground):
    first = playground.panel.svg
    playground.train(steps=400)
    playground.wait(30)
    assert playground.panel.svg != first and playground.panel.step == 400 and not playground.panel.running
    assert playground.to_svg() == playground._repr_mimebundle_()[0]["image/svg+xml"] == playground.panel.svg


def test_reset_gives_back_the_seeds_initial_weights(playground):
    initial = weights_of(playground.training.model)
    playground.step(25)
    assert any(not np.array_equal(v, initial[k]) for k, v in weights_of(playground.training.model).items())
    playground.reset()
    after = weights_of(playground.training.model)
    assert all(np.array_equal(after[k], initial[k]) for k in initial)
    assert playground.training.step_count == 0 and playground.training.history.count == 0
    assert weights_of(build_mlp(2, 8, "tanh", seed=0)).keys() == after.keys()


def test_a_change_of_shape_stops_training_and_rebuilds_the_model(playground):
    playground.train()
    wait_until(lambda: playground.training.step_count > 5)
    playground.set(depth=3, width=5, activation="relu")
    assert not playground.running and playground.training.step_count == 0
    model = playground.training.model
    assert [type(m).__name__ for m in model.children()] == ["Linear", "ReLU"] * 3 + ["Linear"]
    assert [tuple(getattr(model, n).weight.shape) for n in playground.training.layers] == [(5, 2), (5, 5), (5, 5),
                                                                                           (1, 5)]
    assert "2-5-5-5-1 relu" in playground.caption() and "2-5-5-5-1 relu" in playground.panel.svg


def test_a_learning_rate_change_applies_at_the_next_step_without_stopping(playground):
    playground.train()
    wait_until(lambda: playground.training.step_count > 5)
    playground.set(learning_rate=0.3, batch_size=8)
    wait_until(lambda: playground.training.optimizer.param_groups[0]["lr"] == 0.3)
    assert playground.running
    playground.pause()
    assert playground.training.last_batch[0].shape == (8, 2)


def test_bad_values_from_python_are_refused_with_the_rule(playground):
    with pytest.raises(PlaygroundError, match=r"depth is the number of hidden layers, an integer from 0 to 6; got 7"):
        playground.set(depth=7)
    with pytest.raises(PlaygroundError, match=r"no control 'layers'; the controls are dataset, noise, depth"):
        playground.set(layers=3)
    with pytest.raises(PlaygroundError, match=r"no control 'lr'"):
        gl.lab.Playground(lr=0.1)
    with pytest.raises(PlaygroundError, match=r"train\(steps=...\): steps is a positive integer or None, got 0"):
        playground.train(steps=0)
    assert playground.panel.depth == DEFAULTS["depth"]


def test_an_exception_in_the_thread_stops_it_and_shows_in_the_notice(playground):
    def broken(x):
        raise RuntimeError("the forward broke")
    playground.step(3)
    playground.training.model.forward = broken
    playground.train()
    playground.wait(10)
    assert not playground.running and not playground.panel.running
    assert isinstance(playground.error, RuntimeError)
    assert playground.panel.notice == "training stopped at step 4: RuntimeError: the forward broke"


def test_the_front_ends_messages(playground):
    send = lambda **content: playground._on_front_end_message(None, content)  # noqa: E731
    send(type="step")
    assert playground.training.step_count == 1
    send(type="train")
    wait_until(lambda: playground.training.step_count > 3)
    send(type="pause")
    assert not playground.running and not playground.panel.running
    send(type="open", layer="hidden2", neuron=3)
    assert playground.panel.opened == "hidden2" and playground.widget.children[1] is playground.view
    assert playground.panel.notice.startswith("neuron 3 of hidden2 is row 3 of hidden2.weight")
    send(type="open", layer="nope")
    assert playground.panel.notice.startswith("PlaygroundError: Playground.open('nope'): no such layer; the layers "
                                              "are hidden1, hidden2, output")
    send(type="reset")
    assert playground.training.step_count == 0 and playground.view is None and playground.panel.opened == ""
    send(type="fly")
    assert playground.panel.notice == "ValueError: unknown request from the front end: 'fly'"


def test_open_shows_the_layers_graph_at_the_current_step_with_its_gradients(playground):
    with pytest.raises(PlaygroundError, match=r"no step taken yet, so no batch to draw; press step"):
        playground.open("hidden1")
    playground.train()
    wait_until(lambda: playground.training.step_count > 10)
    view = playground.open("hidden1")
    assert not playground.running  # paused first: the model is the main thread's again
    node = view.graph.nodes[view.selected]
    assert node.group == "hidden1" and node.kind == "op"
    assert view.color_mode == "grad" and node.grad is not None
    x, _ = playground.training.last_batch
    recorded_input = [n for n in view.graph.nodes.values() if n.kind == "input"][0]
    assert recorded_input.value["shape"] == list(x.shape)


def test_docs_name_every_traitlet_and_message_of_the_playground():
    from gradlab.lab.playground import PlaygroundPanel

    doc = (ROOT / "docs" / "lab.md").read_text(encoding="utf-8")
    section = doc.split("**Playground**")[1]
    script = (ROOT / "widgets" / "playground.js").read_text(encoding="utf-8")
    sent = set(re.findall(r'\bsend\(\{\s*type: "(\w+)"', script)) | set(re.findall(r'send\("(\w+)"\)', script))
    assert sent == {"train", "pause", "step", "reset", "open"}
    assert sorted(name for name in PlaygroundPanel.class_own_traits(sync=True) if f"`{name}`" not in section) == []
    assert sorted(name for name in sent if f"`{name}`" not in section) == []

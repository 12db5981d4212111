"""gl.lab.OptimizerRace: each path is the real optimizer's, step for step (bit for bit against a loop written
by hand), the state it records is ``optimizer.state``'s, the picture carries what the front end moves, and
bad input is refused with a message that says what to give."""

import json

import numpy as np
import pytest

import gradlab as gl
from gradlab import lab
from gradlab.lab.race import RaceError, SURFACES, grid_losses, run_race, surface_of
from gradlab.lab.race_picture import BANDS, race_svg

pytest.importorskip("anywidget")

OPTIMIZERS = {
    "SGD": lambda params: gl.optim.SGD(params, lr=1e-3),
    "momentum": lambda params: gl.optim.SGD(params, lr=1e-3, momentum=0.9),
    "RMSprop": lambda params: gl.optim.RMSprop(params, lr=1e-2),
    "Adam": lambda params: gl.optim.Adam(params, lr=0.05),
}
STEPS = 40


def hand_loop(make, loss, start, steps):
    """The training loop as a learner writes it: positions after each step, and the state after each step."""
    p = gl.nn.Parameter(gl.tensor(list(start), dtype=gl.float64))
    optimizer = make([p])
    positions, states = [p.detach().numpy().copy()], []
    for _ in range(steps):
        optimizer.zero_grad()
        loss(p).backward()
        optimizer.step()
        positions.append(p.detach().numpy().copy())
        states.append({k: v.numpy().copy() for k, v in optimizer.state[p].items() if tuple(v.shape) == (2,)})
    return np.array(positions), states


@pytest.fixture(scope="module")
def race():
    return lab.OptimizerRace("rosenbrock", OPTIMIZERS, steps=STEPS)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_each_path_is_the_hand_written_loop_bit_for_bit(race, name):
    surface = SURFACES["rosenbrock"]
    positions, states = hand_loop(OPTIMIZERS[name], surface.loss, surface.start, STEPS)
    run = race.run(name)
    assert np.array_equal(run.positions, positions)  # bit for bit: the same operations in the same order
    assert np.array_equal(run.moves, np.diff(positions, axis=0))
    for key in states[0]:
        assert np.array_equal(run.states[key], np.array([s[key] for s in states]))


def test_the_state_recorded_is_what_the_optimizer_keeps(race):
    assert set(race.run("SGD").states) == set()
    assert set(race.run("momentum").states) == {"momentum_buffer"}
    assert set(race.run("RMSprop").states) == {"square_avg"}
    assert set(race.run("Adam").states) == {"exp_avg", "exp_avg_sq"}
    adam = race.run("Adam")
    for key in ("exp_avg", "exp_avg_sq"):  # the last row is the optimizer's state now
        assert np.array_equal(adam.states[key][-1], adam.optimizer.state[adam.parameter][key].numpy())
    assert adam.optimizer.state[adam.parameter]["step"].item() == STEPS
    assert np.array_equal(adam.positions[-1], adam.parameter.detach().numpy())


def test_losses_and_gradients_are_those_at_each_position(race):
    run = race.run("momentum")
    assert run.losses.shape == (STEPS + 1,) and run.grads.shape == (STEPS, 2)
    x, y = run.positions[7]
    assert run.losses[7] == pytest.approx((1 - x) ** 2 + 100 * (y - x * x) ** 2, rel=1e-12)
    assert run.grads[7] == pytest.approx([-2 * (1 - x) - 400 * x * (y - x * x), 200 * (y - x * x)], rel=1e-12)


def test_momentum_goes_further_than_plain_sgd_down_the_valley():
    # the lab's claim about this race: with the same learning rate, in 300 steps the momentum run ends far lower
    race = lab.OptimizerRace("rosenbrock", OPTIMIZERS, steps=300)
    assert race.run("momentum").losses[-1] < race.run("SGD").losses[-1] / 10


@pytest.mark.filterwarnings("ignore:overflow encountered")  # (numpy says so, on the way to inf: the point of it)
def test_a_run_that_diverges_stops_and_says_so():
    race = lab.OptimizerRace("rosenbrock", {"too fast": lambda ps: gl.optim.SGD(ps, lr=0.05)}, steps=30)
    run = race.runs[0]
    assert run.stopped.startswith("stopped at step") and "no longer finite" in run.stopped
    assert run.steps < 30 and len(run.positions) == run.steps + 1 == len(run.losses)
    assert "it diverged" in race.to_svg()


def test_the_picture_holds_the_surface_the_paths_the_key_and_one_chart_row_per_run(race):
    svg = race.to_svg()
    assert svg.startswith("<svg") and svg.count('class="gl-race-run"') == 4
    assert svg.count('class="gl-race-marker"') == 4 and svg.count('class="gl-race-key"') == 4
    assert svg.count('class="gl-race-row"') == 4 and svg.count('class="gl-race-cursor"') == 2 + 3 + 3 + 4
    assert svg.count("no first moment kept") == 2 and svg.count("no second moment kept") == 2
    assert 'data-key="exp_avg_sq"' in svg and 'data-key="momentum_buffer"' in svg
    assert svg.count("<rect") > 4 * 64  # the bands: at least a rectangle per row of cells, in four runs' worth


def test_each_picture_clips_its_paths_by_a_clip_path_of_its_own(race):
    # two races on one page: with one id, the second picture's paths were cut by the first one's map
    pictures = (race.to_svg(), race.to_svg(step=3))
    ids = [svg.split('<clipPath id="')[1].split('"')[0] for svg in pictures]
    assert ids[0] != ids[1] and all(f'clip-path="url(#{i})"' in svg for i, svg in zip(ids, pictures))


def test_the_bands_hold_equally_many_cells():
    losses = grid_losses(SURFACES["ravine"], 64)
    edges = np.quantile(losses, np.linspace(0, 1, BANDS + 1))
    counts = np.histogram(losses, edges)[0]
    assert counts.sum() == 64 * 64 and counts.max() - counts.min() <= 64 * 64 // BANDS // 4


def test_the_frames_are_each_runs_marker_at_every_step(race):
    frames = json.loads(race.panel.frames)
    assert [f["name"] for f in frames] == list(OPTIMIZERS)
    assert all(len(f["points"]) == STEPS + 1 and len(f["losses"]) == STEPS + 1 for f in frames)
    svg_at_0, frames_again = race_svg(race.surface, race.runs, step=0)
    assert [[round(v, 1) for v in p] for p in frames_again[0]] == frames[0]["points"]
    first = frames[0]["points"][0]
    assert f'cx="{first[0]}" cy="{first[1]}"' in svg_at_0  # the static picture at step 0 puts it at the start
    assert frames[3]["losses"][-1] == pytest.approx(race.run("Adam").losses[-1])


def test_the_notebook_gets_the_widget_and_a_static_picture(race):
    data, _ = race._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in data
    assert data["image/svg+xml"] == race.to_svg() and data["image/svg+xml"].startswith("<svg")


def test_show_moves_the_step_and_refuses_one_outside_the_race(race):
    race.show(12)
    assert race.panel.step == 12
    with pytest.raises(RaceError, match=r"show\(step\): step is a whole number from 0 to 40, got 41"):
        race.show(41)


def test_a_loss_function_of_your_own_with_its_extent():
    bowl = lambda p: (p * p).sum()  # noqa: E731 - not written element by element: drawn point by point
    race = lab.OptimizerRace(bowl, {"SGD": lambda ps: gl.optim.SGD(ps, lr=0.1)}, steps=5, start=(1.0, -2.0),
                             extent=((-3, 3), (-3, 3)))
    assert race.run("SGD").positions[-1] == pytest.approx([0.8 ** 5, -2 * 0.8 ** 5])
    assert grid_losses(race.surface, 4)[0, 0] == pytest.approx(2 * 2.25 ** 2)
    assert race.surface.name == "your loss" and race.to_svg().count("your loss: the loss in bands") == 1


def test_a_loss_that_is_not_one_number_is_refused():
    with pytest.raises(RaceError, match=r"the loss should be one number .*it returned shape \(2,\)\. Sum or average"):
        lab.OptimizerRace(lambda p: p ** 2, OPTIMIZERS, extent=((-1, 1), (-1, 1)))


def test_a_start_that_is_not_a_point_of_the_plane_is_refused():
    with pytest.raises(RaceError, match=r"start is a point of the plane, two finite numbers \(x, y\); got "
                                        r"\(1\.0, 2\.0, 3\.0\) \(shape \(3,\)\)"):
        lab.OptimizerRace("ravine", OPTIMIZERS, start=(1.0, 2.0, 3.0))
    with pytest.raises(RaceError, match=r"start is a point of the plane"):
        lab.OptimizerRace("ravine", OPTIMIZERS, start=gl.zeros(2, 2))


def test_other_bad_input_is_refused_with_what_to_give():
    with pytest.raises(RaceError, match=r"no surface named 'bowl'; the named ones are 'rosenbrock', 'ravine', 'saddle'"):
        surface_of("bowl")
    with pytest.raises(RaceError, match=r"give extent=\(\(x_low, x_high\), \(y_low, y_high\)\)"):
        surface_of(lambda p: p[0] ** 2)
    with pytest.raises(RaceError, match=r"the entry 'Adam' should build an optimizer .* it gave a int"):
        lab.OptimizerRace("ravine", {"Adam": lambda params: 3})
    with pytest.raises(RaceError, match=r"steps is a whole number from 1 to 10000, got 0"):
        run_race(SURFACES["ravine"], OPTIMIZERS, 0)
    with pytest.raises(RaceError, match=r"should return a gradlab tensor .* it returned a float"):
        lab.OptimizerRace(lambda p: 1.0, OPTIMIZERS, extent=((-1, 1), (-1, 1)))
    with pytest.raises(RaceError, match=r"each range goes from low to high"):
        surface_of("ravine", extent=((1, -1), (0, 1)))

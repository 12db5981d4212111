"""Lab 5 in JupyterLab: its two graphs still draw, and both optimizer races play, step and pause in the page —
each marker moves along its own path, the charts' cursor with it, and the kernel learns the step shown.
Screenshots in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

from .conftest import open_and_run, require, run_cell, screenshot

LAB = "05-modules-losses-and-optimizers.ipynb"
RUNS = ["SGD", "momentum", "RMSprop", "Adam"]


def markers(race) -> list:
    """Each run's marker centre, in the picture's coordinates."""
    return race.evaluate("""(el) => [...el.querySelectorAll('.gl-race-marker')].map(
        (m) => [Number(m.getAttribute('cx')), Number(m.getAttribute('cy'))])""")


def step_of(race) -> int:
    return int(race.get_attribute("data-step"))


def test_lab05_races_play_step_and_move_every_marker(page, jupyter_server):
    require("ipywidgets", "anywidget")
    open_and_run(page, jupyter_server("lab"), LAB)
    counts = page.evaluate("""() => [...document.querySelectorAll('.gradlab-graphview')].map(
        (w) => w.querySelectorAll('svg.gl-graph .gl-nodes > g.gl-node').length)""")
    assert counts == [15, 15]  # the model's one step, then the same graph profiled

    races = page.locator(".gradlab-race")
    assert races.count() == 2
    ravine = races.first
    ravine.scroll_into_view_if_needed()
    picture = ravine.locator("svg.gl-race-picture")
    assert picture.locator(".gl-race-run").count() == 4
    assert picture.locator(".gl-race-key .gl-race-label").all_text_contents() == RUNS
    assert picture.locator(".gl-race-surface rect").count() >= 64  # at least one band's run per row of cells
    assert picture.locator(".gl-race-row").count() == 4 and picture.locator(".gl-race-cursor").count() == 12
    assert step_of(ravine) == 0 and ravine.locator(".gl-race-status").inner_text() == "step 0 of 100"
    start = markers(ravine)
    assert len({tuple(m) for m in start}) == 1  # all four at the start
    screenshot(ravine, "lab-05-race-ravine-start")

    ravine.locator(".gl-race-step").click()
    ravine.locator(".gl-race-step").click()
    assert step_of(ravine) == 2
    after_two = markers(ravine)
    assert all(a != s for a, s in zip(after_two, start))  # every optimizer moved
    assert len({tuple(m) for m in after_two}) == 4  # each its own way
    assert run_cell(page, "print(race.panel.step)").strip() == "2"  # the kernel knows the step shown

    cursor = picture.locator(".gl-race-cursor").first
    x_at_2 = float(cursor.get_attribute("x1"))
    ravine.locator(".gl-race-play").click()
    page.wait_for_function("() => Number(document.querySelector('.gradlab-race').dataset.step) >= 40")
    assert "gl-race-playing" in ravine.get_attribute("class")
    screenshot(ravine, "lab-05-race-ravine-playing")
    page.wait_for_function("() => !document.querySelector('.gradlab-race').classList.contains('gl-race-playing')")
    assert step_of(ravine) == 100 and ravine.locator(".gl-race-play").inner_text() == "▶ play"  # ran to the end
    assert float(cursor.get_attribute("x1")) > x_at_2
    end = markers(ravine)
    trail = ravine.evaluate("(el) => el.querySelector('.gl-race-trail').getAttribute('points').split(' ').length")
    assert trail == 101  # the trail has every position, start included
    losses = [float(t) for t in picture.locator(".gl-race-loss").all_text_contents()]
    assert min(losses) == losses[1]  # momentum ends lowest in the ravine, as the lab says
    screenshot(ravine, "lab-05-race-ravine-end")

    ravine.locator(".gl-race-back").click()
    assert step_of(ravine) == 99 and markers(ravine) != end
    slider = ravine.locator(".gl-race-slider")
    slider.fill("30")
    assert step_of(ravine) == 30 and ravine.locator(".gl-race-status").inner_text() == "step 30 of 100"

    rosenbrock = races.nth(1)
    rosenbrock.scroll_into_view_if_needed()
    rosenbrock.locator(".gl-race-slider").fill("300")
    assert step_of(rosenbrock) == 300 and step_of(ravine) == 30  # each widget its own
    ids = page.evaluate("() => [...document.querySelectorAll('.gradlab-race clipPath')].map((c) => c.id)")
    assert len(ids) == len(set(ids)) == 2  # one id each: a shared one cut the second map's paths by the first's
    momentum = rosenbrock.locator('.gl-race-run[data-run="1"] .gl-race-marker')
    box = momentum.bounding_box()
    hit = page.evaluate("([x, y]) => document.elementFromPoint(x, y).getAttribute('class')",
                        [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
    assert hit == "gl-race-marker"  # momentum's marker is drawn at the end of the valley, not clipped away
    screenshot(rosenbrock, "lab-05-race-rosenbrock-end")

"""Big graphs: a long level is drawn as runs that open like modules, the picture stays the size of
what is shown, and a step sends only the states it changed."""

import re

import pytest

import gradlab as gl
from gradlab.lab.scene import MAX_VISIBLE, RUN

pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")

NODE_BOX = re.compile(r'class="gl-node gl-kind-[a-z]+[^"]*" data-id="([^"]+)"')
CLOSED = re.compile(r'class="gl-group gl-collapsed[^"]*" data-id="([^"]+)"')


def chain(ops):
    gl.manual_seed(0)
    x = gl.randn(4, requires_grad=True)
    with gl.lab.record() as rec:
        y = x
        for _ in range(ops // 2):
            y = y * 1.0001 + 0.001
        y.sum()
    return rec


def test_a_long_chain_is_drawn_as_runs_and_its_picture_says_what_each_holds():
    view = gl.lab.GraphView(chain(3000))
    picture = view._repr_mimebundle_()[0]["image/svg+xml"]
    drawn, closed = NODE_BOX.findall(picture), CLOSED.findall(picture)
    assert len(drawn) + len(closed) <= MAX_VISIBLE and len(picture) < 200_000
    assert sum(len(view.scene.members[g]) for g in closed) + len(drawn) == len(view.graph.nodes)  # nothing lost
    assert "101–200 of 3,002" in picture and f"{RUN} ops" in picture  # each closed run says what it holds
    assert set(view.nodes) == set(drawn)  # details of the drawn nodes only
    view.toggle(closed[-1])
    assert set(NODE_BOX.findall(view.svg)) <= set(view.nodes)  # an opened run's nodes are sent when drawn


def expected_states(stepper):
    """A full rebuild of every state from the steps taken (what the widget sent before deltas)."""
    stepping, reached = stepper.stepping, stepper.stepping.reached_ids()
    done = {s["node"] for s in stepping.steps}
    current = stepping.current
    states = {n: "current" if n == current else "done" if n in done else "pending" if n in reached else "unreached"
              for n in stepper.graph.nodes}
    groups = {}
    for group, members in stepper.scene.members.items():
        inside = [states[m] for m in members if states[m] != "unreached"]
        groups[group] = ("unreached" if not inside else "current" if "current" in inside else
                         "done" if all(s == "done" for s in inside) else "pending")
    return states, groups


def test_state_updates_applied_in_order_give_the_states_of_a_full_rebuild():
    stepper = gl.lab.BackpropStepper(chain(700))
    stepper.stepping.spacing = 50
    front = {"states": dict(stepper.states), "group_states": dict(stepper.group_states)}  # what the front end got
    updates = []
    stepper.observe(lambda change: updates.append(change["new"]), "state_updates")

    def check():
        for update in updates:
            front["states"].update(update["states"])
            front["group_states"].update(update["group_states"])
        del updates[:]
        assert (front["states"], front["group_states"]) == expected_states(stepper)

    check()
    for action in [stepper.step] * 3 + [stepper.step_back, stepper.step, lambda: stepper.run_to("n400"),
                                        stepper.step_back, stepper.run_to_end, stepper.step_back,
                                        lambda: stepper.run_to("n650"), stepper.reset, stepper.step]:
        action()
        check()
        assert len(updates) == 0

"""``BackpropStepper``: walk the engine's real backward through your graph, one node at a time.

Each Step runs one node of ``gl.autograd.backward_steps`` (never a replay; for a PyTorch loss, one of
PyTorch's own ``grad_fn`` nodes, in its engine's order): the panel shows the gradient that reached it, its local rule with the numbers it produced for each input, and where
a gradient adds into one that fanned out. Step back restores the gradients exactly. When a step
fails, or someone else changes a ``.grad`` while it steps, the panel says so and stops claiming
that ``.grad`` holds what ``loss.backward()`` gives.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager

import traitlets

from ..autograd.broadcasting import summed_dims
from .frontend import bundle
from .graph_view import GraphWidget
from .arguments import STEPPABLE, check_drawable, check_view_options, checked_names
from .capture import capture
from .cells import after_each_cell
from .stepping import BackwardStepError, Stepping
from .summary import shape_text


class BackpropStepper(GraphWidget):
    """``stepper = gl.lab.BackpropStepper(loss)`` (a loss tensor, gradlab's or PyTorch's, a recording, or a Scalar).

    ``step()``, ``step_back()``, ``run_to(node)``, ``run_to_end()``, ``reset()``; ``current`` is
    the node whose turn it is. In the widget: → or Space steps, ← steps back, End runs to the end,
    Home resets, Enter runs to the selected node. ``close()`` takes its hooks off the graph (so does
    collecting it).
    """

    states = traitlets.Dict({}).tag(sync=True)  # node id -> pending / current / done / unreached
    group_states = traitlets.Dict({}).tag(sync=True)  # the same for each module, as a closed box shows it
    state_updates = traitlets.Dict({}).tag(sync=True)  # {states, group_states}: what the last action changed
    current_id = traitlets.Unicode("").tag(sync=True)
    step_index = traitlets.Int(0).tag(sync=True)
    total_steps = traitlets.Int(0).tag(sync=True)
    panel = traitlets.Dict({}).tag(sync=True)

    _entry = "backprop_stepper.js"
    _esm = bundle(_entry)
    _watches_backward = False

    def __init__(self, loss, *, names=None, height=460):
        check_drawable("BackpropStepper", loss, STEPPABLE)  # what was given, checked before anything is stepped
        check_view_options("BackpropStepper", height=height)
        names = checked_names("BackpropStepper", loss, names)
        stepping = Stepping(loss, None)
        if names and stepping.graph.source in ("tensor", "torch"):
            stepping.close()
            stepping = Stepping(loss, capture(loss, names))
        self.stepping = stepping
        self._said = ""  # what the last action has to say; the warnings about others' changes follow it
        super().__init__(loss, graph=stepping.graph, color="grad", height=height)
        self._said = self.notice  # what the drawing had to say (modules opened collapsed), until the first action
        self.total_steps = stepping.total
        self._reached = stepping.reached_ids()
        self._reached_in = {}  # module or run -> how many of its nodes backward reaches
        for node_id in self._reached:
            for group in self.scene.ancestors(node_id):
                self._reached_in[group] = self._reached_in.get(group, 0) + 1
        self._counted, self._done, self._done_in = [], {}, {}  # the steps counted into: node / group -> steps done
        self._current, self._sequence = None, 0
        self._redraw_after_each_cell()
        self._show()

    def close(self) -> None:
        """Take this stepper's hooks off the graph and close the widget (what it added to .grad stays)."""
        stepping = getattr(self, "stepping", None)  # (None when its __init__ failed)
        if stepping is not None:
            stepping.close()
        super().close()

    @property
    def status(self) -> str:
        """Where the stepper is, in one line, with whatever it cannot vouch for."""
        stepping = self.stepping
        if stepping.failure is not None:
            where = f"step {stepping.failure['index'] + 1} of {stepping.total} failed"
        elif stepping.finished:
            where = "backward finished"
        else:
            where = f"{len(stepping.steps)} of {stepping.total} nodes run"
        return " · ".join([where, *stepping.warnings()])

    # --- the Python face --------------------------------------------------------------------------

    @property
    def current(self):
        """The GraphNode whose turn it is (None before the first step and after the last)."""
        node_id = self.stepping.current
        return self.graph.nodes[node_id] if node_id is not None else None

    @property
    def steps(self) -> list:
        """The steps taken so far, as the panel shows them (node id, gradients in, what each input got)."""
        return [self._panel(step) for step in self.stepping.steps]

    def step(self):
        """Run the next node of backward; past the end it does nothing and says so. A step whose
        backward fails raises ``BackwardStepError``, and the panel says where and what to do."""
        with self._acting():
            if self.stepping.step() is None:
                self._said = ("backward has finished: every gradient is in .grad. Reset to walk it again"
                              if not self.stepping.changed_by_others else "backward has finished")
        return self.current

    def step_back(self):
        """Undo the last step, restoring every gradient to what it was before it."""
        with self._acting():
            if not self.stepping.step_back():
                self._said = "nothing to undo: backward has not started"
        return self.current

    def run_to(self, node):
        """Step until ``node`` (an id, a GraphNode, an engine node, a tensor or a Scalar) has run."""
        target = self._node_id(node, "run_to")
        with self._acting():
            if target not in self._reached:
                self._said = f"{self.graph.nodes[target].label} is never reached by backward: it needs no gradient"
                return self.current
            done = [s["node"] for s in self.stepping.steps]
            if target in done:
                self.stepping.go_to(len(done) - done[::-1].index(target))
            else:
                while self.stepping.step() is not None:
                    if self.stepping.steps[-1]["node"] == target:
                        break
                else:
                    self._said = f"{self.graph.nodes[target].label} is never reached by backward"
        return self.current

    def run_to_end(self):
        """Run every remaining node: afterwards each leaf's .grad is what loss.backward() gives (the panel
        says so only when nobody else changed a .grad meanwhile)."""
        with self._acting():
            while self.stepping.step() is not None:
                pass
        return self.current

    def reset(self):
        """Back to before the first step: this stepper's additions leave every .grad; what your own
        backward (or another stepper) added meanwhile stays."""
        with self._acting():
            others = self.stepping.warnings()
            self.stepping.reset()
            if others:
                self._said = ("reset: this stepper's steps are out of .grad; the rest stays (" + "; ".join(others) +
                              "). Stepping again adds one more backward on top of it")
        return self.current

    @contextmanager
    def _acting(self):
        """Every action: clear what the last one said, do it, then redraw, even when a step fails."""
        self._said = ""
        try:
            yield
        except BackwardStepError as error:
            self._said = str(error)
            raise
        finally:
            self._show()

    def _redraw_after_each_cell(self) -> None:
        """When someone else changed a .grad during a cell (your own loss.backward()), say so when it ends."""
        me = weakref.ref(self)

        def flush(*_):
            live = me()
            if live is None or not live.stepping.is_open:  # the stepper is gone: stop listening
                listener.remove()
            elif live.stepping.told or live.stepping.show_leaf_grads():  # (a .grad changed by someone else)
                live.stepping.sync()
                live._show()
        listener = after_each_cell(flush)

    # --- what the widget shows ------------------------------------------------------------------

    def _on_other_message(self, kind, target) -> None:
        actions = {"step": self.step, "back": self.step_back, "end": self.run_to_end, "reset": self.reset}
        if kind == "run_to":
            self.run_to(target)
        elif kind in actions:
            actions[kind]()
        else:
            super()._on_other_message(kind, target)

    def _show(self) -> None:
        """Restyle for the new position: node states, colours, the panel. Positions never change."""
        with self.hold_sync():
            self._send_position()

    def _send_position(self) -> None:
        """The new position: the states, details and colours of only the nodes (and modules) it changed."""
        stepping = self.stepping
        stepping.told = False
        self.notice = " · ".join(filter(None, [self._said, *stepping.warnings()]))
        steps, before = stepping.steps, self._counted
        # the steps still taken as before: a prefix (stepping only appends, and a step back keeps the records
        # of the steps it keeps), found by halving
        low, high = 0, min(len(before), len(steps))
        while low < high:
            middle = (low + high + 1) // 2
            low, high = (middle, high) if before[middle - 1] is steps[middle - 1] else (low, middle - 1)
        same = low
        current = stepping.current
        changed = {node_id for node_id in (self._current, current) if node_id is not None}
        for sign, moved in ((-1, before[same:]), (1, steps[same:])):
            for step in moved:
                node_id = step["node"]
                if node_id is not None:
                    changed.add(node_id)
                    self._done[node_id] = self._done.get(node_id, 0) + sign
                    for group in self.scene.ancestors(node_id):
                        self._done_in[group] = self._done_in.get(group, 0) + sign
        self._counted, self._current = list(steps), current
        self.current_id = current or ""
        self.step_index = len(steps)
        shown = steps[-1] if steps and not stepping.finished and stepping.failure is None else None
        self.panel = self._panel(shown)
        self._send_states(changed)
        self._show_scalar_values()
        leaves_changed = stepping.show_leaf_grads()
        everything = leaves_changed or stepping.changed_by_others or self.graph.source == "scalar" or not steps
        self._refresh_values(only_gradients=True, changed=None if everything else changed)

    def _send_states(self, changed) -> None:
        """Every node's and module's state, sent whole once; afterwards only those that changed
        (``state_updates``: the front end adds them to its copy; the kernel keeps ``states`` current)."""
        if not self.states:  # the first time: everything
            self.states = {node_id: self._state_of(node_id) for node_id in self.graph.nodes}
            self.group_states = {group: self._group_state_of(group) for group in self.scene.members}
            return
        states, groups = {}, {}
        for node_id in changed:
            state = self._state_of(node_id)
            if self.states.get(node_id) != state:
                states[node_id] = self.states[node_id] = state  # in place, unsent: see state_updates
        for group in {g for node_id in changed for g in self.scene.ancestors(node_id)}:
            state = self._group_state_of(group)
            if self.group_states.get(group) != state:
                groups[group] = self.group_states[group] = state
        if states or groups:
            self._sequence += 1
            self.state_updates = {"states": states, "group_states": groups, "sequence": self._sequence}

    def _state_of(self, node_id: str) -> str:
        if node_id == self._current:
            return "current"
        if self._done.get(node_id):
            return "done"
        return "pending" if node_id in self._reached else "unreached"

    def _group_state_of(self, group: str) -> str:
        """A closed module shows what happens inside it: current while one of its nodes is, done
        when all its reached nodes are, unreached when backward never enters it."""
        reached = self._reached_in.get(group, 0)
        if not reached:
            return "unreached"
        if self._current is not None and group in self.scene.ancestors(self._current):
            return "current"
        return "done" if self._done_in.get(group, 0) >= reached else "pending"

    def _states_drawn(self) -> dict:
        return {**self.states, **self.group_states}

    def _panel(self, step) -> dict:
        stepping = self.stepping
        warnings = stepping.warnings()
        warning = ("; ".join(warnings) + ". So .grad is not what one loss.backward() gives; reset() takes this "
                   "stepper's steps out and keeps the rest") if warnings else ""
        if step is None:
            failure = stepping.failure
            if failure is not None:
                return {"title": f"step {failure['index'] + 1} of {stepping.total} failed: {failure['label']}",
                        "warning": " ".join(filter(None, [f"{failure['error']}. {failure['advice']}", warning])),
                        "text": ""}
            if stepping.finished:
                return {"title": "backward finished", "warning": warning,
                        "text": ("every step has run" if warnings else
                                 "every leaf's .grad now holds what loss.backward() gives")}
            return {"title": "before the first step", "warning": warning,
                    "text": "Step runs the first node: the output, which receives the gradient 1"}
        node = self.graph.nodes.get(step["node"]) if step["node"] is not None else None
        rows = []
        arrived = step["grads_in"][0] if step["grads_in"] else None
        for sent in step["sent"]:
            to = self.graph.nodes.get(sent["to"]) if sent["to"] else None
            label = to.label if to is not None else "(not drawn)"
            rows.append({**sent, "to_label": label, "summed": _broadcast_note(arrived, sent["grad"], label)})
        shown = node.label if node is not None else "a node computed outside the recording"
        return {"title": f"step {step['index'] + 1} of {self.stepping.total}: {shown}",
                "node": step["node"], "op": node.op if node else "", "words": node.words if node else "",
                "math": node.math if node else "", "grads_in": step["grads_in"], "sent": rows, "leaf": step["leaf"],
                "warning": warning}


def _broadcast_note(arrived: dict | None, sent: dict | None, label: str) -> str:
    """Where an input was broadcast in the forward, its gradient is the incoming one summed back over the
    broadcast dims: say which ("summed over dim 0: b was broadcast from (2,) to (4, 2))."""
    if not arrived or not sent or arrived["shape"] == sent["shape"]:
        return ""
    out, shape = tuple(arrived["shape"]), tuple(sent["shape"])
    dims = summed_dims(out, shape)
    dims = [d for d in dims or () if out[d] > 1]
    if not dims:
        return ""
    which = "dim" if len(dims) == 1 else "dims"
    return (f"summed over {which} {', '.join(map(str, dims))}: {label} was broadcast from {shape_text(shape)} to "
            f"{shape_text(out)} in the forward, so each of its elements receives the sum of the gradients it fed")

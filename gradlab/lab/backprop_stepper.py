"""``BackpropStepper``: walk the engine's real backward through your graph, one node at a time.

Each Step runs one node of ``gl.autograd.backward_steps`` (never a replay): the panel shows the
gradient that reached it, its local rule with the numbers it produced for each input, and where
a gradient adds into one that fanned out. Step back restores the gradients exactly.
"""

from __future__ import annotations

import traitlets

from .frontend import bundle
from .graph_view import GraphWidget
from .capture import capture
from .stepping import Stepping


class BackpropStepper(GraphWidget):
    """``stepper = gl.lab.BackpropStepper(loss)`` (a loss tensor, a recording, or a Scalar).

    ``step()``, ``step_back()``, ``run_to(node)``, ``run_to_end()``, ``reset()``; ``current`` is
    the node whose turn it is. In the widget: → or Space steps, ← steps back, End runs to the end,
    Home resets, Enter runs to the selected node.
    """

    states = traitlets.Dict({}).tag(sync=True)  # node id -> pending / current / done / unreached
    group_states = traitlets.Dict({}).tag(sync=True)  # the same for each module, as a closed box shows it
    current_id = traitlets.Unicode("").tag(sync=True)
    step_index = traitlets.Int(0).tag(sync=True)
    total_steps = traitlets.Int(0).tag(sync=True)
    panel = traitlets.Dict({}).tag(sync=True)

    _entry = "backprop_stepper.js"
    _esm = bundle(_entry)
    _watches_backward = False

    def __init__(self, loss, *, names=None, height=460):
        stepping = Stepping(loss, None)
        if names and not stepping.is_scalar and stepping.graph.source == "tensor":
            stepping = Stepping(loss, capture(loss, names))
        self.stepping = stepping
        super().__init__(loss, graph=stepping.graph, color="grad", height=height)
        self.total_steps = stepping.total
        self._reached = stepping.reached_ids()
        self._show()

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
        """Run the next node of backward; past the end it does nothing and says so."""
        self.notice = ""
        if self.stepping.step() is None:
            self.notice = "backward has finished: every gradient is in .grad. Reset to walk it again"
        self._show()
        return self.current

    def step_back(self):
        """Undo the last step, restoring every gradient to what it was before it."""
        self.notice = ""
        if not self.stepping.step_back():
            self.notice = "nothing to undo: backward has not started"
        self._show()
        return self.current

    def run_to(self, node):
        """Step until ``node`` (an id, a GraphNode, an engine node, a tensor or a Scalar) has run."""
        target = self._node_id(node)
        self.notice = ""
        if target not in self._reached:
            self.notice = f"{self.graph.nodes[target].label} is never reached by backward: it needs no gradient"
            self._show()
            return self.current
        done = [s["node"] for s in self.stepping.steps]
        if target in done:
            self.stepping.go_to(len(done) - done[::-1].index(target))
        else:
            while self.stepping.step() is not None:
                if self.stepping.steps[-1]["node"] == target:
                    break
            else:
                self.notice = f"{self.graph.nodes[target].label} is never reached by backward"
        self._show()
        return self.current

    def run_to_end(self):
        """Run every remaining node: afterwards each leaf's .grad is what loss.backward() gives."""
        self.notice = ""
        while self.stepping.step() is not None:
            pass
        self._show()
        return self.current

    def reset(self):
        """Back to before the first step, every gradient as it was when the stepper was made."""
        self.notice = ""
        self.stepping.reset()
        self._show()
        return self.current

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
        stepping = self.stepping
        states = {node_id: "pending" if node_id in self._reached else "unreached" for node_id in self.graph.nodes}
        for step in stepping.steps:
            if step["node"] is not None:
                states[step["node"]] = "done"
        current = stepping.current
        if current is not None:
            states[current] = "current"
        self.group_states = self._group_states(states)
        self.current_id = current or ""
        self.step_index = len(stepping.steps)
        self.panel = self._panel(stepping.steps[-1] if stepping.steps and not stepping.finished else None)
        self.states = states
        self._show_scalar_values()
        self._refresh_values(only_gradients=True)

    def _group_states(self, states: dict) -> dict:
        """A closed module shows what happens inside it: current while one of its nodes is, done
        when all its reached nodes are, unreached when backward never enters it."""
        result = {}
        for group, members in self.scene.members.items():
            inside = [states[m] for m in members if states[m] != "unreached"]
            if not inside:
                result[group] = "unreached"
            elif "current" in inside:
                result[group] = "current"
            else:
                result[group] = "done" if all(state == "done" for state in inside) else "pending"
        return result

    def _states_drawn(self) -> dict:
        return {**self.states, **self.group_states}

    def _panel(self, step) -> dict:
        if step is None:
            finished = self.stepping.finished
            return {"title": "backward finished" if finished else "before the first step",
                    "text": ("every leaf's .grad now holds what loss.backward() gives" if finished else
                             "Step runs the first node: the output, which receives the gradient 1")}
        node = self.graph.nodes.get(step["node"]) if step["node"] is not None else None
        rows = []
        for sent in step["sent"]:
            to = self.graph.nodes.get(sent["to"]) if sent["to"] else None
            rows.append({**sent, "to_label": to.label if to is not None else "(not drawn)"})
        shown = node.label if node is not None else "a node computed outside the recording"
        return {"title": f"step {step['index'] + 1} of {self.stepping.total}: {shown}",
                "node": step["node"], "op": node.op if node else "", "words": node.words if node else "",
                "math": node.math if node else "", "grads_in": step["grads_in"], "sent": rows, "leaf": step["leaf"]}

"""A thousand random cases: recordings, steppers, views, a flow and profiles on one model, in random orders.

Each case (its seed is its index: ``pytest "tests/test_lab_truth_random.py::test_random_case[17]"`` runs one
alone) draws a tiny float64 model (Linear, ReLU(inplace=True), an in-place add, Tanh, LayerNorm, a module that
catches its child's error), records its forward (an in-place op on the output, an exception caught, another
thread running the same model meanwhile), then takes random actions: views of the recording and of the loss,
steppers moved forward, back and to random nodes, your own backward, zero_grad, profiles, optimizer steps,
GradientFlow updates, closes. After every action each thing shown is checked against the truth, worked out
here without the lab: every value against a numpy forward from the weights as they were, every gradient
against a numpy backward (itself checked against ``gl.autograd.grad`` of the same graph), every ``.grad``
against what the actions added and took out, GradientFlow's figures against numpy norms.

Issue 17. The focused tests at the end are the bugs these cases found, each shrunk to its smallest form.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")

import gradlab as gl  # noqa: E402
import gradlab.nn as nn  # noqa: E402
from gradlab.lab.flow import FlowError  # noqa: E402
from gradlab.lab.ownership import lab_pass  # noqa: E402
from gradlab.lab.stepping import BackwardStepError  # noqa: E402

CASES = 1000
EPS = 1e-5  # LayerNorm's


def close(a, b) -> bool:
    return np.allclose(a, b, rtol=1e-9, atol=1e-12)


# --- the model's pieces ----------------------------------------------------------------------------------

class AddInPlace(nn.Module):
    """x.add_(c): an in-place op inside the model."""

    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x.add_(self.c)


class Raiser(nn.Module):
    """Computes 2x, then raises: an op recorded in a module whose forward fails."""

    def forward(self, x):
        x * 2.0
        raise ValueError("Raiser always raises")


class Guarded(nn.Module):
    """Calls a child that raises, catches the error and passes x on."""

    def __init__(self):
        super().__init__()
        self.child = Raiser()

    def forward(self, x):
        try:
            self.child(x)
        except ValueError:
            pass
        return x


@dataclass
class Stage:
    """One recorded op as the numpy twin computes it: label and module group as the graph draws them,
    what it does forward and backward, and whether the loss depends on it."""

    label: str
    group: str | None
    kind: str
    module: object = None
    const: float = 0.0
    on_path: bool = True


def draw_case(rng: random.Random):
    """A random model (its Sequential and its stages) and what the recorded forward does around it."""
    d = rng.randint(2, 5)
    d_in = d
    modules, stages = [], []

    def add(module, *new_stages):
        modules.append(module)
        stages.extend(new_stages)

    for _ in range(rng.randint(1, 3)):
        out = rng.randint(2, 5)
        lin = nn.Linear(d, out)
        add(lin, Stage("Linear", str(len(modules)), "linear", lin))
        d = out
        after_linear = rng.choice(["relu_", "add_", None, None])
        if after_linear == "relu_":
            add(nn.ReLU(inplace=True), Stage("Relu", str(len(modules)), "relu"))
        elif after_linear == "add_":
            c = rng.choice([0.5, -0.25, 1.5])
            add(AddInPlace(c), Stage("Add", str(len(modules)), "add", const=c))
        then = rng.choice(["tanh", "relu", "ln", "guard", None])
        if then == "tanh":
            add(nn.Tanh(), Stage("Tanh", str(len(modules)), "tanh"))
        elif then == "relu":
            add(nn.ReLU(), Stage("Relu", str(len(modules)), "relu"))
        elif then == "ln":
            ln = nn.LayerNorm(d, elementwise_affine=rng.random() < 0.7)
            add(ln, Stage("Normalize", str(len(modules)), "ln", ln))
        elif then == "guard":
            add(Guarded(), Stage("Mul", f"{len(modules)}.child", "double", on_path=False))
    last = nn.Linear(d, rng.randint(1, 3))
    add(last, Stage("Linear", str(len(modules)), "linear", last))
    model = nn.Sequential(*modules).double()
    for module in modules:  # random affine LayerNorm weights, not ones and zeros
        if isinstance(module, nn.LayerNorm) and module.weight is not None:
            with gl.no_grad():
                module.weight.add_(gl.randn(*module.weight.shape, dtype=gl.float64) * 0.3)
                module.bias.add_(gl.randn(*module.bias.shape, dtype=gl.float64) * 0.3)
    top = []  # what the recorded forward does after the model, at top level
    if rng.random() < 0.2:
        top.append(Stage("Mul", "Raiser", "double", on_path=False))
    post = rng.choice([None, None, "add_", "mul_", "relu_"])
    if post == "add_":
        top.append(Stage("Add", None, "add", const=rng.choice([0.3, -0.7])))
    elif post == "mul_":
        top.append(Stage("Mul", None, "scale", const=rng.choice([2.0, -0.5])))
    elif post == "relu_":
        top.append(Stage("Relu", None, "relu"))
    loss_kind = rng.choice(["sumsq", "weighted"])
    return model, stages + top, loss_kind, d_in


# --- the numpy twin ----------------------------------------------------------------------------------------

class Twin:
    """The forward and backward of one recorded run in numpy, from the weights as they were then."""

    def __init__(self, stages, loss_kind, x, weights, target=None):
        self.stages, self.loss_kind, self.x, self.target = stages, loss_kind, x, target
        self.w = weights  # id(param) -> array
        self.values, self.grads, self.param_grads = self._run()

    def _p(self, param):
        return self.w[id(param)]

    def _run(self):
        values, h = [], self.x
        saved = []  # what each stage's backward needs
        for s in self.stages:
            if not s.on_path:
                values.append(h * 2.0)
                saved.append(None)
                continue
            if s.kind == "linear":
                out = h @ self._p(s.module.weight).T + self._p(s.module.bias)
                saved.append(h)
            elif s.kind == "relu":
                out = np.maximum(h, 0.0)
                saved.append(h > 0)
            elif s.kind == "add":
                out = h + s.const
                saved.append(None)
            elif s.kind == "scale":
                out = h * s.const
                saved.append(None)
            elif s.kind == "tanh":
                out = np.tanh(h)
                saved.append(out)
            elif s.kind == "ln":
                mean = h.mean(-1, keepdims=True)
                rstd = 1.0 / np.sqrt(((h - mean) ** 2).mean(-1, keepdims=True) + EPS)
                xhat = (h - mean) * rstd
                out = xhat
                if s.module.weight is not None:
                    out = xhat * self._p(s.module.weight) + self._p(s.module.bias)
                saved.append((xhat, rstd))
            values.append(out)
            h = out
        self.output = h
        if self.loss_kind == "sumsq":
            values += [h * h, np.array((h * h).sum())]
            g = 2.0 * h
        else:
            values += [h * self.target, np.array((h * self.target).sum())]
            g = self.target.copy()
        grads = [None] * len(self.stages) + [np.ones_like(h), np.array(1.0)]
        param_grads = {}
        for i in range(len(self.stages) - 1, -1, -1):
            s = self.stages[i]
            if not s.on_path:
                continue
            grads[i] = g
            if s.kind == "linear":
                inp = saved[i]
                param_grads[id(s.module.weight)] = g.T @ inp
                param_grads[id(s.module.bias)] = g.sum(0)
                g = g @ self._p(s.module.weight)
            elif s.kind == "relu":
                g = g * saved[i]
            elif s.kind == "scale":
                g = g * s.const
            elif s.kind == "tanh":
                g = g * (1.0 - saved[i] ** 2)
            elif s.kind == "ln":
                xhat, rstd = saved[i]
                dxhat = g
                if s.module.weight is not None:
                    param_grads[id(s.module.weight)] = (g * xhat).sum(0)
                    param_grads[id(s.module.bias)] = g.sum(0)
                    dxhat = g * self._p(s.module.weight)
                n = xhat.shape[-1]
                g = rstd / n * (n * dxhat - dxhat.sum(-1, keepdims=True) - xhat * (dxhat * xhat).sum(-1, keepdims=True))
        return values, grads, param_grads

    @property
    def loss(self) -> float:
        return float(self.values[-1])


def run_forward(model, stages, loss_kind, x, target, meanwhile=None):
    """The forward the case records (and profiles): the model, then the top-level stages, then the loss."""
    h = model(x)
    if meanwhile is not None:
        meanwhile()
    for s in top_stages(stages):
        if not s.on_path:
            try:
                Raiser()(h)
            except ValueError:
                pass
        elif s.kind == "add":
            h.add_(s.const)
        elif s.kind == "scale":
            h.mul_(s.const)
        elif s.kind == "relu":
            h.relu_()
    return (h * h).sum() if loss_kind == "sumsq" else (h * target).sum()


def top_stages(stages):
    return [s for s in stages if s.group is None or s.group == "Raiser"]


def assert_shows(shown, array, what: str) -> None:
    """A summary (summary.summarize) shows ``array``; None shows nothing (a gradient not reached yet)."""
    problem = mismatch(shown, array)
    assert not problem, f"{what}: {problem}"


def mismatch(shown, array) -> str:
    """'' if a summary shows ``array`` (None: nothing), else what differs."""
    if array is None:
        return "" if shown is None else f"shows {shown and shown.get('values', shown.get('norm'))}, expected nothing"
    if shown is None:
        return "shows nothing"
    array = np.asarray(array, dtype=np.float64)
    if shown["shape"] != list(array.shape):
        return f"shape {shown['shape']} != {list(array.shape)}"
    for key, want in (("min", array.min()), ("max", array.max()), ("mean", array.mean()),
                      ("norm", np.linalg.norm(array.ravel()))):
        if not close(shown[key], want):
            return f"{key} {shown[key]!r} != {want!r}"
    if "values" in shown and not close(shown["values"], array.ravel()):
        return f"values {shown['values']} != {array.ravel().tolist()}"
    return ""


# --- one case --------------------------------------------------------------------------------------------

@dataclass
class Round:
    """One recorded forward: its recording, loss, twin, the graph's state."""

    rec: object
    loss: object
    twin: Twin
    stage_of: dict  # id(engine node) -> stage index
    versions: dict  # id(param) -> its version when the forward ran
    weights: dict
    freed: bool = False
    stale: bool = False  # an optimizer step changed what the graph saved


@dataclass
class Watched:
    """A stepper the case drives, and what the truth says it added and has shown."""

    widget: object
    round: Round
    furthest: int = 0  # steps attempted at least once: past them, a step is a training pass for the watchers


class Case:
    def __init__(self, seed: int, shell):
        self.seed, self.shell = seed, shell
        self.rng = random.Random(seed)
        gl.manual_seed(seed)
        self.model, self.stages, self.loss_kind, self.d_in = draw_case(self.rng)
        self.params = list(self.model.parameters())
        self.optimizer = gl.optim.SGD(self.params, lr=0.1)
        self.batch = self.rng.randint(2, 3)
        self.base = {id(p): None for p in self.params}  # what .grad holds that no stepper can take out
        self.entries = {id(p): [] for p in self.params}  # [(stepper, gradient)] a stepper can take out again
        self.flow = gl.lab.GradientFlow(self.model) if self.rng.random() < 0.7 else None
        self.layers = {}  # stage index -> flow layer name
        self.out_sq = {}  # flow layer -> Σ ‖∂L/∂output‖² the counted passes since the last update
        self.before = {}  # flow layer -> the weights when a counted pass first reached it since the last update
        self.steppers: list[Watched] = []
        self.views: list = []  # (GraphView, Round, counted stage indices, from a recording?)
        self.rounds: list[Round] = []
        self.log: list[str] = []

    # --- the truth's bookkeeping -------------------------------------------------------------------

    def expected_grad(self, pid):
        parts = [g for _, g in self.entries[pid]]
        base = self.base[pid]
        if base is None and not parts:
            return None
        total = np.zeros_like(parts[0]) if base is None else base.copy()
        for g in parts:
            total = total + g
        return total

    def outside_change(self, pid, value) -> None:
        self.base[pid] = value
        self.entries[pid] = []

    def weights_now(self) -> dict:
        return {id(p): p.detach().numpy().copy() for p in self.params}

    def count_pass(self, rnd: Round, stage_indices) -> None:
        """A training pass (yours, or a stepper's first) reached these stages: the flow's and views' hooks count it."""
        for i in stage_indices:
            layer = self.layers.get((id(rnd), i))
            if layer is not None:
                self.out_sq[layer] = self.out_sq.get(layer, 0.0) + float(np.sum(rnd.twin.grads[i] ** 2))
                if layer not in self.before:
                    self.before[layer] = self.weights_now()
        for view, view_round, counted, _ in self.views:
            if view_round is rnd:
                counted.update(stage_indices)

    # --- the actions ----------------------------------------------------------------------------------

    def forward(self) -> None:
        x = np.random.default_rng(self.seed * 7 + len(self.rounds)).standard_normal((self.batch, self.d_in))
        target = np.random.default_rng(self.seed * 11 + len(self.rounds)).standard_normal(
            (self.batch, self.stages_out()))
        xt, tt = gl.tensor(x, dtype=gl.float64), gl.tensor(target, dtype=gl.float64)
        weights = self.weights_now()
        meanwhile = self.other_thread(xt) if self.rng.random() < 0.15 else None
        with gl.lab.record() as rec:
            loss = run_forward(self.model, self.stages, self.loss_kind, xt, tt, meanwhile)
        twin = Twin(self.stages, self.loss_kind, x, weights, target)
        ops = rec.ops
        labels = [(op.record.function.__name__, op.group) for op in ops]
        expected = [(s.label, s.group) for s in self.stages] + [("Mul", None), ("Sum", None)]
        assert labels == expected, f"the recording holds {labels}, the forward ran {expected}"
        calls = {"Sequential", *(s.group for s in self.stages if s.group is not None)}
        calls |= {g.split(".")[0] for g in calls if "." in g}
        assert set(rec.calls) == calls, f"module calls {sorted(rec.calls)}, expected {sorted(calls)}"
        stage_of = {id(op.record.node): i for i, op in enumerate(ops) if op.record.node is not None}
        rnd = Round(rec, loss, twin, stage_of, {id(p): p.version for p in self.params}, weights)
        self.rounds.append(rnd)
        assert close(loss.item(), twin.loss)
        if self.flow is not None:
            names = {id(layer.module): layer.name for layer in self.flow.figures.layers}
            for i, s in enumerate(self.stages):
                if s.module is not None and id(s.module) in names:
                    self.layers[(id(rnd), i)] = names[id(s.module)]
        self.check_against_the_engine(rnd)

    def stages_out(self) -> int:
        return self.stages[[i for i, s in enumerate(self.stages) if s.kind == "linear"][-1]].module.out_features

    def other_thread(self, x):
        """Run the same model on another thread, while the forward is being recorded."""
        go, done = threading.Event(), threading.Event()
        model = self.model

        def work():
            go.wait(10)
            (model(x.detach().clone()) * 3).sum().tanh()
            done.set()
        thread = threading.Thread(target=work, daemon=True)
        thread.start()

        def meanwhile():
            go.set()
            assert done.wait(10)
            thread.join(10)
        self.log.append("another thread ran the model during the recording")
        return meanwhile

    def check_against_the_engine(self, rnd: Round) -> None:
        """The numpy twin's gradients are the engine's own (``gl.autograd.grad`` of the same graph)."""
        ops = rnd.rec.ops
        kept = [(i, op.record.outputs[0]) for i, op in enumerate(ops[:len(self.stages)])
                if self.stages[i].on_path and op.record.outputs[0].version == op.versions[1][0]]
        with lab_pass(counts=False):  # the test's own look at the truth is no training step for the watchers
            got = gl.autograd.grad(rnd.loss, self.params + [t for _, t in kept], retain_graph=True)
        for p, g in zip(self.params, got):
            assert close(g.numpy(), rnd.twin.param_grads[id(p)]), "numpy's backward differs from the engine's"
        for (i, _), g in zip(kept, got[len(self.params):]):
            assert close(g.numpy(), rnd.twin.grads[i]), f"numpy's gradient at stage {i} differs from the engine's"

    def own_backward(self, rnd: Round, retain: bool) -> None:
        rnd.loss.backward(retain_graph=retain)
        rnd.freed = rnd.freed or not retain
        for p in self.params:
            g = rnd.twin.param_grads[id(p)]
            pid = id(p)
            self.base[pid] = g.copy() if self.base[pid] is None else self.base[pid] + g
        self.count_pass(rnd, [i for i, s in enumerate(self.stages) if s.on_path])

    def new_stepper(self, rnd: Round) -> None:
        source = rnd.rec if self.rng.random() < 0.6 else rnd.loss
        if rnd.freed:
            with pytest.raises(gl.lab.CaptureError, match="freed what forward saved"):
                gl.lab.BackpropStepper(source)
            return
        self.steppers.append(Watched(gl.lab.BackpropStepper(source), rnd))

    def move(self, watched: Watched) -> str:
        stepper = watched.widget
        stepping = stepper.stepping
        total = stepping.total
        move = self.rng.choice(["step", "step", "step", "back", "run_to", "end", "reset", "go_to"])
        old_steps, old_len = stepping.steps, len(stepping.steps)
        failed = None
        try:
            if move == "step":
                stepper.step()
            elif move == "back":
                stepper.step_back()
            elif move == "run_to":
                stepper.run_to(self.rng.choice(list(stepper.graph.nodes)))
            elif move == "end":
                stepper.run_to_end()
            elif move == "reset":
                stepper.reset()
            else:
                try:
                    stepping.go_to(self.rng.randint(0, total))
                finally:
                    stepper._show()  # (the widget's own moves redraw, failed or not; go_to is the stepping's)
        except BackwardStepError as error:
            failed = error
        rnd = watched.round
        if failed is not None:
            assert rnd.freed or rnd.stale, f"{move}: a step failed on an intact graph: {failed}"
            kind = stepping.failure["kind"]
            assert kind == ("freed" if rnd.freed else "version"), f"{move}: failure {kind}: {failed}"
        steps = stepping.steps
        rewound = steps is not old_steps
        run_from = 0 if rewound else old_len
        if rewound:
            for pid in self.entries:
                self.entries[pid] = [(owner, g) for owner, g in self.entries[pid] if owner is not watched]
        graph = stepper.graph
        for step in steps[run_from:]:
            if step["leaf"] is not None:
                pid = id(graph.nodes[step["node"]].ref)
                self.entries[pid].append((watched, rnd.twin.param_grads[pid]))
        attempted = len(steps) + (1 if failed is not None else 0)
        first_time = range(max(run_from, watched.furthest), attempted)
        reached = []
        for index in first_time:
            node_id = steps[index]["node"] if index < len(steps) else stepping.failure["node"]
            node = graph.nodes.get(node_id) if node_id is not None else None
            if node is not None and node.kind == "op":
                reached.append(rnd.stage_of[id(node.ref)])
        watched.furthest = max(watched.furthest, attempted)
        self.count_pass(rnd, reached)
        return f"{move}{' (failed)' if failed else ''} -> {len(steps)} of {total}"

    def profile(self, keep: bool) -> None:
        rnd_weights = self.weights_now()
        before = [p.grad for p in self.params]
        before_values = [None if g is None else g.numpy().copy() for g in before]
        x = gl.tensor(self.rounds[-1].twin.x, dtype=gl.float64)
        target = gl.tensor(self.rounds[-1].twin.target, dtype=gl.float64)
        prof = gl.lab.profile(lambda: run_forward(self.model, self.stages, self.loss_kind, x, target), keep_grads=keep)
        twin = Twin(self.stages, self.loss_kind, self.rounds[-1].twin.x, rnd_weights, self.rounds[-1].twin.target)
        if keep:
            for p in self.params:
                self.outside_change(id(p), twin.param_grads[id(p)])
            fake = Round(prof.recording, prof.output, twin, {}, {}, rnd_weights)
            for i, s in enumerate(self.stages):  # the flow hooked the profile's forward too
                layer = self.layers.get((id(self.rounds[-1]), i))
                if layer is not None:
                    self.layers[(id(fake), i)] = layer
            self.count_pass(fake, [i for i, s in enumerate(self.stages) if s.on_path])
        else:
            for p, g, values in zip(self.params, before, before_values):
                assert p.grad is g, "the profile replaced a .grad"
                assert (g is None) == (values is None) and (g is None or np.array_equal(g.numpy(), values)), \
                    "the profile changed a .grad"
        ops = [n for n in prof.graph.nodes.values() if n.kind == "op"]
        wanted = list(range(len(self.stages))) + [len(self.stages), len(self.stages) + 1]
        assert len(ops) == len(wanted)
        for node, i in zip(ops, wanted):
            assert_shows(node.value, twin.values[i], f"profile: {node.label} ({node.id}) value")
            assert_shows(node.grad, twin.grads[i], f"profile: {node.label} ({node.id}) grad")
        for node in prof.graph.nodes.values():
            if node.kind in ("param", "leaf"):
                assert_shows(node.grad, twin.param_grads[id(node.ref)], f"profile: {node.label} grad")

    def new_view(self, rnd: Round) -> None:
        from_recording = self.rng.random() < 0.6
        if not from_recording and rnd.loss.grad_fn is None:
            return
        view = gl.lab.GraphView(rnd.rec if from_recording else rnd.loss)
        self.views.append((view, rnd, set(), from_recording))
        self.check_values(view, rnd, from_recording)

    def check_values(self, view, rnd: Round, from_recording: bool) -> None:
        """Every value the view shows is the numpy forward's (a weight an optimizer step changed: its value now)."""
        stages = len(self.stages)
        for node_id, shown in view.nodes.items():
            node = view.graph.nodes[node_id]
            if node.kind == "op":
                i = self.stage_index(rnd, node)
                want = rnd.twin.values[i] if (from_recording or i == stages + 1) else None
                assert_shows(shown["value"], want, f"{node.label} ({node_id}) value")
                assert not (shown["value"] or {}).get("changed"), f"{node.label}: {shown['value']['changed']}"
            elif node.kind in ("param", "leaf"):
                pid = id(node.ref)
                changed = node.ref.version != rnd.versions[pid]
                want = node.ref.detach().numpy() if changed or not from_recording else rnd.weights[pid]
                assert_shows(shown["value"], want, f"{node.label} value")
                if from_recording:
                    assert bool(shown["value"].get("changed")) == changed, f"{node.label}: changed? {changed}"

    def stage_index(self, rnd: Round, node) -> int:
        if node.ref is None or id(node.ref) not in rnd.stage_of:
            raise AssertionError(f"{node.label} ({node.id}) is no op of the forward")
        return rnd.stage_of[id(node.ref)]

    def zero_grad(self) -> None:
        self.model.zero_grad()
        for p in self.params:
            self.outside_change(id(p), None)

    def optimizer_step(self) -> None:
        self.optimizer.step()
        for rnd in self.rounds:
            rnd.stale = True

    def flow_update(self) -> None:
        if not self.out_sq:
            with pytest.raises(FlowError, match="no backward"):
                self.flow.update()
            return
        self.flow.update()
        figures = {f: self.flow.latest(f) for f in ("grad_norm", "weight_norm", "update_ratio", "out_grad_norm")}
        for layer in self.flow.figures.layers:
            name = layer.name
            grads = [self.expected_grad(id(p)) for p in layer.params]
            known = [g for g in grads if g is not None]
            want_grad = np.sqrt(sum(float(np.sum(g ** 2)) for g in known)) if known else None
            now = [p.detach().numpy() for p in layer.params]
            before = [self.before[name][id(p)] for p in layer.params] if name in self.before else None
            weight = np.sqrt(sum(float(np.sum(w ** 2)) for w in (before or now)))
            moved = (np.sqrt(sum(float(np.sum((a - b) ** 2)) for a, b in zip(now, before))) / weight
                     if before is not None else None)
            out = np.sqrt(self.out_sq[name]) if name in self.out_sq else None
            for figure, want in (("grad_norm", want_grad), ("weight_norm", weight), ("update_ratio", moved),
                                 ("out_grad_norm", out)):
                got = figures[figure][name]
                assert (got is None) == (want is None) and (want is None or close(got, want)), \
                    f"GradientFlow's {figure} of layer {name}: {got}, expected {want}"
        self.out_sq, self.before = {}, {}

    def close_one(self) -> None:
        things = [("stepper", w) for w in self.steppers] + [("view", v) for v in self.views]
        if not things:
            return
        kind, thing = self.rng.choice(things)
        if kind == "stepper":
            thing.widget.close()
            self.steppers.remove(thing)
            for pid in self.entries:  # what it added stays, as yours
                self.entries[pid] = [("closed" if owner is thing else owner, g) for owner, g in self.entries[pid]]
        else:
            thing[0].close()
            self.views.remove(thing)

    # --- the truth, after every action ------------------------------------------------------------------

    def check(self, cell_ended: bool, moved=None) -> None:
        """.grad always; a stepper after its own move; every widget when the cell ends (they redraw then)."""
        for p in self.params:
            want = self.expected_grad(id(p))
            got = None if p.grad is None else p.grad.numpy()
            assert (got is None) == (want is None) and (want is None or close(got, want)), \
                f".grad of a parameter of shape {list(p.shape)} is {got}, expected {want}"
        if moved is not None:
            self.check_stepper(moved)
        if cell_ended:
            for callback in list(self.shell.events.callbacks.get("post_execute", [])):
                callback()  # what IPython does when a cell ends
            for watched in self.steppers:
                self.check_stepper(watched)
            for view, rnd, counted, _ in self.views:
                self.check_view(view, rnd, counted)

    def check_stepper(self, watched: Watched) -> None:
        """Each box: a node backward has run shows the gradient that reached it, one still to run shows none,
        a leaf its .grad now; the panel's numbers are the step's."""
        stepper, rnd = watched.widget, watched.round
        done = {s["node"] for s in stepper.stepping.steps}
        for node_id, shown in stepper.nodes.items():
            node = stepper.graph.nodes[node_id]
            state = stepper.states[node_id]
            if node.kind == "op":
                i = self.stage_index(rnd, node)
                want = rnd.twin.grads[i] if node_id in done else None
                assert (state == "unreached") == (not self.stages_on_path(i)), f"{node.label} is drawn {state}"
            elif node.kind in ("param", "leaf"):
                want = self.expected_grad(id(node.ref))  # a leaf shows its .grad as it is now
            else:
                continue
            assert_shows(shown["grad"], want, f"stepper ({stepper.status}): {node.label} ({node_id}, {state}) grad")
        panel = stepper.panel
        if panel.get("node"):
            assert panel["node"] == stepper.current_id == stepper.stepping.steps[-1]["node"]
            assert_shows(panel["grads_in"][0], self.gradient_at(rnd, stepper.graph.nodes[panel["node"]]),
                         f"the panel of {panel['title']}: the gradient in")
            for row in panel["sent"]:
                if row["to"] and row["of"] == 1:  # the only gradient its input gets: all of it
                    assert_shows(row["grad"], self.gradient_at(rnd, stepper.graph.nodes[row["to"]]),
                                 f"the panel of {panel['title']}: sent to {row['to_label']}")

    def gradient_at(self, rnd: Round, node):
        """∂loss/∂(the node's output) in the numpy twin; a leaf's: ∂loss/∂leaf."""
        if node.kind == "op":
            return rnd.twin.grads[self.stage_index(rnd, node)]
        return rnd.twin.param_grads[id(node.ref)]

    def stages_on_path(self, i: int) -> bool:
        return i >= len(self.stages) or self.stages[i].on_path

    def check_view(self, view, rnd: Round, counted: set) -> None:
        for node_id, shown in view.nodes.items():
            node = view.graph.nodes[node_id]
            if node.kind == "op":
                i = self.stage_index(rnd, node)
                if shown["grad"] is not None or i in counted:
                    assert_shows(shown["grad"], rnd.twin.grads[i], f"view: {node.label} ({node_id}) grad")
            elif node.kind in ("param", "leaf"):
                assert_shows(shown["grad"], self.expected_grad(id(node.ref)), f"view: {node.label} ({node_id}) grad")

    # --- the whole case ---------------------------------------------------------------------------------

    def run(self) -> None:
        for _ in range(self.rng.choice([1, 1, 2])):
            self.forward()
            rnd = self.rounds[-1]
            self.log.append(f"forward {len(self.rounds)}: {[(s.label, s.group) for s in self.stages]}, "
                            f"loss {self.loss_kind}")
            for _ in range(self.rng.randint(4, 14)):
                self.act(rnd)
            if self.rng.random() < 0.5:
                self.optimizer_step()
                self.log.append("optimizer.step()")
                if self.flow is not None:
                    self.flow_update()
                    self.log.append("flow.update()")
                self.check(cell_ended=True)
            for _ in range(self.rng.randint(0, 3)):  # a stepper or a view left open into the next round
                self.close_one()
        for watched in list(self.steppers):
            watched.widget.close()
        for view, *_ in self.views:
            view.close()
        if self.flow is not None:
            self.flow.remove()

    def act(self, rnd: Round) -> None:
        moved = None
        choices = ["stepper", "move", "move", "move", "move", "view", "backward", "zero_grad", "profile",
                   "cell", "close", "flow"]
        action = self.rng.choice(choices)
        intact = not (rnd.freed or rnd.stale)
        if action == "stepper" and len(self.steppers) < 3:
            self.new_stepper(rnd)
            said = "new stepper"
        elif action == "move" and self.steppers:
            moved = self.rng.choice(self.steppers)
            said = f"stepper {self.steppers.index(moved)}: " + self.move(moved)
        elif action == "view" and len(self.views) < 3:
            self.new_view(rnd)
            said = "new view"
        elif action == "backward" and intact:
            retain = self.rng.random() < 0.85
            self.own_backward(rnd, retain)
            said = f"loss.backward(retain_graph={retain})"
        elif action == "zero_grad":
            self.zero_grad()
            said = "zero_grad()"
        elif action == "profile":
            keep = self.rng.random() < 0.2
            self.profile(keep)
            said = f"profile(keep_grads={keep})"
        elif action == "close":
            self.close_one()
            said = "close one"
        elif action == "flow" and self.flow is not None:
            if self.rng.random() < 0.5:
                self.optimizer_step()
            self.flow_update()
            said = "flow.update()"
        else:
            said = "a cell ends"
        self.log.append(said)
        cell_ended = action == "cell" or self.rng.random() < 0.4
        if cell_ended:
            self.log.append("(the cell ends)")
        self.check(cell_ended, moved)


@pytest.fixture
def shell(notebook_shell):
    """The notebook's shell of conftest, which also names the code a recording saw (a file here, not a cell)."""
    notebook_shell.compile = SimpleNamespace(format_code_name=lambda filename: None)
    return notebook_shell


@pytest.mark.parametrize("seed", range(CASES))
def test_random_case(seed, shell):
    case = Case(seed, shell)
    try:
        case.run()
    except AssertionError as error:
        raise AssertionError(f"case {seed} failed after: " + " · ".join(case.log) + f"\n{error}") from error


# --- the bugs these cases found, each at its smallest ------------------------------------------------------

def mlp_and_loss():
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2)).double()
    x = gl.randn(5, 3, dtype=gl.float64)
    return model, x, (model(x) ** 2).sum()


def leaf_grads_shown(widget) -> dict:
    """What each leaf box of a view or stepper shows as its gradient: {label: norm or None}."""
    return {node["label"] + node["id"]: node["grad"] and node["grad"]["norm"] for node in widget.nodes.values()
            if node["kind"] in ("param", "leaf")}


def leaf_grads_now(widget) -> dict:
    """{label: the norm of its .grad now, or None}, as leaf_grads_shown names them."""
    return {node.label + node.id: None if node.ref.grad is None else float(np.linalg.norm(node.ref.grad.numpy()))
            for node in widget.graph.nodes.values() if node.kind in ("param", "leaf")}


def cells(shell):
    """End a notebook cell: run what the widgets asked to run then."""
    for callback in list(shell.events.callbacks.get("post_execute", [])):
        callback()


def test_a_steppers_leaf_boxes_show_the_grad_your_own_backward_left(shell):
    _, _, loss = mlp_and_loss()
    stepper = gl.lab.BackpropStepper(loss)
    loss.backward(retain_graph=True)  # your backward, before the stepper's first step
    cells(shell)
    assert leaf_grads_shown(stepper) == pytest.approx(leaf_grads_now(stepper))
    stepper.step()  # (and still after a step that reached none of them)
    assert leaf_grads_shown(stepper) == pytest.approx(leaf_grads_now(stepper))
    stepper.close()


def test_a_steppers_leaf_boxes_show_a_grad_zeroed_while_it_steps():
    model, _, loss = mlp_and_loss()
    loss.backward(retain_graph=True)
    stepper = gl.lab.BackpropStepper(loss)
    model.zero_grad()
    stepper.step()
    assert all(grad is None for grad in leaf_grads_shown(stepper).values())
    stepper.close()


def test_a_views_leaf_boxes_follow_a_backward_through_another_graph_and_zero_grad(shell):
    model, x, _ = mlp_and_loss()
    with gl.lab.record() as rec:
        (model(x) ** 2).sum()
    view = gl.lab.GraphView(rec)
    (model(x) ** 2).sum().backward()  # the next training step's forward and backward: not this graph
    cells(shell)
    assert all(grad is not None for grad in leaf_grads_shown(view).values())
    assert leaf_grads_shown(view) == pytest.approx(leaf_grads_now(view))
    model.zero_grad()
    cells(shell)
    assert all(grad is None for grad in leaf_grads_shown(view).values())
    view.close()


class FailsOnce(gl.autograd.Function):
    """x · w, whose backward raises the first time it runs (then works)."""

    failures = 0

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, grad):
        if FailsOnce.failures:
            FailsOnce.failures -= 1
            raise ValueError("FailsOnce failed")
        x, w = ctx.saved_tensors
        return grad * w, (grad * x).sum(0)


class Scale(nn.Module):
    """A layer with a weight of its own: out = x · w, through FailsOnce."""

    def __init__(self, n):
        super().__init__()
        self.w = nn.Parameter(gl.ones(n, dtype=gl.float64) * 1.5)

    def forward(self, x):
        return FailsOnce.apply(x, self.w)


def test_a_failed_step_tried_again_counts_once_for_gradient_flow():
    from gradlab.lab.flow import Flow
    from gradlab.lab.stepping import Stepping
    gl.manual_seed(0)
    x = gl.randn(4, 3, dtype=gl.float64)
    model = nn.Sequential(nn.Linear(3, 2), Scale(2)).double()
    twin = nn.Sequential(nn.Linear(3, 2), Scale(2)).double()
    twin.load_state_dict(model.state_dict())
    flow, twin_flow = Flow(model), Flow(twin)
    FailsOnce.failures = 0
    (twin(x) ** 2).sum().backward()
    twin_flow.update()
    stepping = Stepping((model(x) ** 2).sum())
    FailsOnce.failures = 1
    stepping.step()
    stepping.step()
    with pytest.raises(BackwardStepError, match="FailsOnce failed"):
        stepping.step()  # the layer's output hook saw its gradient, then the layer's backward failed
    while stepping.step() is not None:  # tried again, it works
        pass
    flow.update()
    assert flow.latest("out_grad_norm") == pytest.approx(twin_flow.latest("out_grad_norm"), rel=1e-12)
    assert flow.latest("grad_norm") == pytest.approx(twin_flow.latest("grad_norm"), rel=1e-12)


def test_a_stepper_that_could_not_be_made_leaves_no_error_behind():
    import gc
    import sys
    _, _, loss = mlp_and_loss()
    loss.backward()  # frees the graph: no stepper can walk it
    ignored = []
    hook, sys.unraisablehook = sys.unraisablehook, ignored.append
    try:
        with pytest.raises(gl.lab.CaptureError, match="freed what forward saved"):
            gl.lab.BackpropStepper(loss)
        gc.collect()  # the half-made widget goes: closing it must not fail
    finally:
        sys.unraisablehook = hook
    assert [f"{u.exc_type.__name__}: {u.exc_value}" for u in ignored] == []

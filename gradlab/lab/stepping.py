"""Backward, one node at a time, with a way back: the logic behind ``BackpropStepper``.

``Stepping`` drives the engine's own generator (``gl.autograd.backward_steps``, or
``Scalar.backward_steps``) and turns each step into what the lab shows: which node ran, the
gradient that reached it, what it passed to each input and where that adds up. Going back takes
this stepper's additions out of every ``.grad`` from the last checkpoint of the run before the
target on (the engine's ``BackwardRun.checkpoint()``, one every ``spacing`` steps) and resumes the
run from there: the engine is deterministic, so the gradients are restored exactly, and a step
back costs at most ``spacing`` steps of the engine, however deep the stepper is.

It never claims more than it knows. Each leaf's ledger (``grad_ledger``) tells it when someone
else changed a ``.grad`` it adds into (your own ``loss.backward()``, a second stepper, a
``zero_grad()``), and a step whose backward fails says which node failed, why, and what to do.
"""

from __future__ import annotations

import weakref

from ..autograd import backward_steps
from ..autograd.function import AccumulateGrad, TrackedTensor
from ..scalar import Scalar
from .capture import CaptureError, capture, reachable
from .grad_ledger import forget, ledger_for
from .graph import Graph
from .leaf_grads import LeafGrads
from .ownership import lab_pass
from .record import Recording
from .summary import summarize


class BackwardStepError(RuntimeError):
    """A step of backward failed: the error names the step, the node and what to do (``stepping.failure``)."""


class Stepping:
    """The state of one backward pass being walked: steps taken so far, and the graph they walk."""

    def __init__(self, target, graph: Graph | None = None):
        if isinstance(target, Recording):
            graph = graph or capture(target)
            target = target.output
            if target is None:
                raise CaptureError("BackpropStepper: the recording produced no tensor to start backward from")
        if isinstance(target, TrackedTensor):
            if target.grad_fn is None:
                raise CaptureError(
                    "BackpropStepper: this tensor has no graph: it is a leaf or does not require grad. Give it the "
                    "output of a computation on tensors with requires_grad=True (usually the loss)")
            if target.numel() != 1:
                raise CaptureError(
                    f"BackpropStepper: backward starts from one number, but this tensor has shape {list(target.shape)}; "
                    "step from a scalar such as the loss, or from out.sum()")
        elif not isinstance(target, Scalar):
            raise CaptureError(f"BackpropStepper: cannot step a {type(target).__name__}; give it a loss tensor, a "
                               "recording (with gl.lab.record() as rec: ...) or a gradlab.Scalar")
        self.target = target
        self.graph = graph or capture(target)
        self.is_scalar = isinstance(target, Scalar)
        if not self.is_scalar:
            freed = self.graph.freed or any(n.freed for n in reachable(target.grad_fn))
            if freed:
                raise CaptureError(
                    "BackpropStepper: backward already ran through this graph and freed what forward saved. Run the "
                    "forward again, or call loss.backward(retain_graph=True) if you want to step after a backward")
        self.total = len(reachable(target.grad_fn)) if not self.is_scalar else len(target.topological_order())
        self.steps: list[dict] = []
        self.finished = False
        self.failure: dict | None = None  # the last step that failed: index, node, error, advice
        self.told = False  # set when someone else changed a .grad; the widget redraws after the cell
        self._generator = None
        self._resume = False  # a failed step left no generator: drive a fresh one back to where the steps are
        self._ran: list = []  # the engine node of each step taken
        self._furthest = 0  # steps tried at least once: re-taking one is a replay, which watching hooks ignore
        self._arrived: dict = {}  # node id -> gradients it has received so far in this run (until it runs)
        self._checkpoints: dict = {}  # steps taken -> (the engine's checkpoint there, _arrived there)
        self.spacing = max(32, self.total // 64)  # steps between checkpoints: at most ~64 of them are kept
        self._outside: dict = {}  # (who, what) -> names of the leaves it touched, since the stepper began
        self._consumers = self._count_consumers()
        self._initial_summaries = {n.id: n.grad for n in self.graph.nodes.values()}
        self._leaf_grads = LeafGrads(self.graph)
        self._me = weakref.ref(self)
        if self.is_scalar:
            self.leaves = target.topological_order()  # a Scalar keeps a gradient on every node
            self._ledgers = []
            self._initial = {node: node.grad for node in self.leaves}
            self._left = dict(self._initial)  # what this stepper last left in each .grad
        else:
            accumulators = [n for n in reachable(target.grad_fn) if n.__class__ is AccumulateGrad]
            self.leaves = [n.variable for n in accumulators]
            self._ledgers = [ledger_for(n.variable, n) for n in accumulators]
            for ledger in self._ledgers:
                ledger.sync()
                ledger.watch(self._me)
        self._finalizer = weakref.finalize(self, forget, self._me, self._ledgers)

    # --- what the stepper does --------------------------------------------------------------------

    def step(self) -> dict | None:
        """Run the next node; returns its step, or None when backward has finished.

        A step whose backward fails raises ``BackwardStepError`` (an interrupt is raised as it is):
        the steps before it stand, whatever the failed step added is taken out again, and the next
        ``step()`` tries it again."""
        self._check_open()
        self.sync()
        if self.finished:
            return None
        if self._resume:
            self._resume = False
            self.go_to(len(self.steps))
        if self._generator is None:
            self._generator = self._start()
        index = len(self.steps)
        raw = self._next(index)
        if raw is None:
            self.finished = True
            self._generator = None
            return None
        self._furthest = max(self._furthest, index + 1)
        self.failure = None
        step = self._describe(raw, index)
        self.steps.append(step)
        self._ran.append(raw.node)
        if self.is_scalar:
            self._left = {node: node.grad for node in self.leaves}
        elif len(self.steps) % self.spacing == 0 and len(self.steps) not in self._checkpoints:
            self._checkpoints[len(self.steps)] = (self._generator.checkpoint(), dict(self._arrived))
        return step

    def reset(self) -> None:
        """Back to before the first step: this stepper's additions leave every .grad, and nothing else does.

        What others added meanwhile (your own backward, another stepper) stays; from here on the
        stepper measures from the gradients as they are now."""
        self._check_open()
        self.sync()
        self._rewind()
        self._checkpoints = {}  # a new walk: from the gradients and hooks as they are now
        if self._outside:  # the leaves do not hold what they held when the stepper began: show what they hold
            for node in self.graph.nodes.values():
                if node.kind in ("param", "leaf") and node.ref is not None:
                    node.grad = summarize(node.ref.grad)
        if self.is_scalar:
            self._initial = {node: node.grad for node in self.leaves}
            self._left = dict(self._initial)
        for ledger in self._ledgers:
            if not ledger.awake:  # from here on, any change to .grad counts against this stepper's claim again
                ledger.wake()
        self._initial_summaries = {n.id: n.grad for n in self.graph.nodes.values()}
        self._outside = {}
        self.told = False

    def step_back(self) -> bool:
        """Undo the last step (gradients restored exactly); False if there is nothing to undo."""
        if not self.steps and not self.finished:
            return False
        self.go_to(len(self.steps) - (0 if self.finished else 1))
        return True

    def go_to(self, count: int) -> None:
        """Be just after step ``count``: back to the last checkpoint at or before it (or to the start),
        then on: the steps already described are replayed without describing them again."""
        self._check_open()
        self.sync()
        known = self.steps
        marks = [at for at in self._checkpoints if at <= min(count, len(known))]
        if not marks:
            self._rewind()
            for _ in range(count):
                if self.step() is None:
                    break
            return
        at = max(marks)
        checkpoint, arrived = self._checkpoints[at]
        self._back_to(at)
        self._generator, self._arrived = checkpoint.resume(), dict(arrived)
        for index in range(at, min(count, len(known))):  # the same steps again: their records stand
            raw = self._next(index)
            step = known[index]
            self.steps.append(step)
            self._ran.append(raw.node)
            self._arrived.pop(step["node"], None)
            for row in step["sent"]:
                self._arrived[row["to"]] = row["contribution"]
        for _ in range(count - len(self.steps)):
            if self.step() is None:
                break

    def _back_to(self, count: int) -> None:
        """Undo every step from step ``count`` on: their additions leave .grad, their nodes look as before."""
        if self._generator is not None:
            self._generator.close()
        self._generator = None
        me = self._me
        for ledger in self._ledgers:  # (go_to has just synced every ledger: only those with steps to undo)
            if any(entry.owner is me and entry.step is not None and entry.step >= count for entry in ledger.entries):
                ledger.take_out(me, from_step=count)
        for step in self.steps[count:]:
            if step["node"] is not None:
                self.graph.nodes[step["node"]].grad = self._initial_summaries[step["node"]]
        self.steps, self._ran = self.steps[:count], self._ran[:count]
        self.finished, self._resume, self.failure = False, False, None

    def close(self) -> None:
        """Stop: no hook of this stepper stays on the graph; what it added to .grad stays, as yours."""
        if self._generator is not None:
            self._generator.close()
            self._generator = None
        self._finalizer()

    @property
    def is_open(self) -> bool:
        return self._finalizer.alive

    def _check_open(self) -> None:
        if not self._finalizer.alive:
            raise CaptureError("BackpropStepper: this stepper was closed (its hooks are off the graph); make a new "
                               "one to step again")

    # --- what others did ----------------------------------------------------------------------------

    def sync(self) -> None:
        """Look for changes to the .grads made outside any backward since the last step."""
        if self.is_scalar:
            for node in self.leaves:
                if not _same_float(node.grad, self._left[node]):
                    self._note(None, "changed", node)
                    self._initial[node] = self._left[node] = node.grad  # it cannot be taken apart: it is the start
            return
        for ledger in self._ledgers:
            ledger.sync()

    def show_leaf_grads(self) -> bool:
        """Each leaf's box shows its .grad as it is now, whoever changed it; True if one had changed."""
        return False if self.is_scalar else self._leaf_grads.update()

    def changed_outside(self, leaf, actor, what: str) -> None:
        """A leaf's ledger says: someone else (``actor``: None for you, else another stepper) changed its .grad."""
        self._note(actor, what, leaf)

    def _note(self, actor, what, leaf) -> None:
        who = "you" if actor is None else "stepper"
        node = self.graph.node_for(leaf)
        if node is None:
            name = "a leaf"
        elif node.label == "leaf" and not self.is_scalar:
            name = f"the leaf of shape {list(leaf.shape)}"
        else:
            name = node.label
        self._outside.setdefault((who, what), []).append(name)
        self.told = True

    @property
    def changed_by_others(self) -> bool:
        """Whether someone else changed a .grad this stepper adds into, since it began (or was reset)."""
        return bool(self._outside)

    def warnings(self) -> list:
        """What others did to the .grads since the stepper began, one sentence each."""
        sentences = {
            ("you", "added"): "a backward of your own (not this stepper's) added into the .grad of {}",
            ("stepper", "added"): "another stepper on this graph added its steps into the .grad of {}",
            ("stepper", "removed"): "another stepper's reset took its steps out of the .grad of {}",
            ("you", "changed"): "the .grad of {} was changed outside backward (assigned, zeroed or edited in place)",
        }
        return [sentences[key].format(_names(names)) for key, names in self._outside.items()]

    # --- plumbing -------------------------------------------------------------------------------

    def _start(self):
        if self.is_scalar:
            return self.target.backward_steps()
        return backward_steps(self.target, retain_graph=True)

    def _next(self, index: int):
        """One turn of the engine, as this stepper's (a replay when the step was taken before)."""
        try:
            with lab_pass(self._me, step=index, counts=index >= self._furthest):
                return next(self._generator, None)
        except Exception as error:
            raise self._failed(index, error) from error
        except BaseException as error:  # an interrupt: recorded, and raised as it is
            self._failed(index, error)
            raise

    def _failed(self, index: int, error: BaseException) -> BackwardStepError:
        """A step failed: take out whatever it added, say where and why, and be ready to try it again."""
        self._generator = None
        self._resume = True
        self._furthest = max(self._furthest, index + 1)  # its hooks ran: trying it again is a replay for the watchers
        node = self._in_turn()
        if self.is_scalar:
            for scalar in self.leaves:
                scalar.grad = self._left[scalar]
        else:
            for ledger in self._ledgers:
                ledger.take_out(self._me, from_step=index)
        drawn = self.graph.node_for(node) if node is not None else None
        if drawn is None and node is not None and node.__class__ is AccumulateGrad:
            drawn = self.graph.node_for(node.variable)
        where = drawn.label if drawn is not None else (node.name() if hasattr(node, "name") else "a node")
        kind, advice = _what_to_do(error, node, ("you", "added") in self._outside)
        text = (str(error).strip().splitlines() or [""])[0].rstrip(".")
        error_text = f"{type(error).__name__}: {text}" if text else type(error).__name__
        self.failure = {"index": index, "node": drawn.id if drawn is not None else None, "label": where,
                        "kind": kind, "error": error_text, "advice": advice}
        before = {0: "no step had run before it", 1: "the step before it stands"}.get(
            index, f"the {index} steps before it stand")
        return BackwardStepError(f"BackpropStepper: step {index + 1} of {self.total} failed, in the backward of "
                                 f"{where}: {error_text}. {advice} ({before}; nothing of this step was kept)")

    def _in_turn(self):
        """The node whose turn it was after the steps taken: the engine runs the newest one whose consumers
        have all run (for a Scalar, the next in reverse topological order)."""
        if self.is_scalar:
            order = self.target.topological_order()[::-1]
            return order[len(self._ran)] if len(self._ran) < len(order) else None
        done = set(self._ran)
        nodes = [n for n in reachable(self.target.grad_fn) if n not in done]
        waiting: dict = {}
        for node in nodes:
            for child, _ in node.next_functions:
                if child is not None:
                    waiting[child] = waiting.get(child, 0) + 1
        ready = [n for n in nodes if not waiting.get(n)]
        return max(ready, key=lambda n: n.sequence_nr, default=None)

    def _rewind(self) -> None:
        """Back to before the first step: close the generator and take this stepper's additions out."""
        if self._generator is not None:
            self._generator.close()
        self._generator = None
        if self.is_scalar:
            for node in self.leaves:
                node.grad = self._initial[node]
            self._left = dict(self._initial)
        else:
            for ledger in self._ledgers:
                ledger.take_out(self._me)
        for node_id, summary in self._initial_summaries.items():
            self.graph.nodes[node_id].grad = summary
        self.steps, self._ran, self._arrived = [], [], {}
        self.finished, self._resume, self.failure = False, False, None

    @property
    def current(self) -> str | None:
        """The graph node id of the step just taken (None before the first and after the end)."""
        return self.steps[-1]["node"] if self.steps and not self.finished else None

    # --- plumbing -------------------------------------------------------------------------------

    def _count_consumers(self) -> dict:
        """How many uses each node's output has: that many gradients arrive at it and are summed."""
        reached = self.reached_ids()
        counts: dict = {}
        for source, target in self.graph.edges:
            if target in reached:  # a consumer that backward never runs (argmax, no_grad) sends nothing back
                counts[source] = counts.get(source, 0) + 1
        return counts

    def reached_ids(self) -> set:
        """The drawn nodes backward will visit; the rest (data, no-grad operations) are never reached."""
        if self.is_scalar:
            return set(self.graph.nodes)
        return {self.node_id(n) for n in reachable(self.target.grad_fn)} - {None}

    def node_id(self, ref) -> str | None:
        node = self.graph.node_for(ref)
        if node is None and ref.__class__ is AccumulateGrad:
            node = self.graph.node_for(ref.variable)
        return node.id if node is not None else None

    def _describe(self, raw, index: int) -> dict:
        """A step as the panel shows it: the gradient in, and what went to each input."""
        if self.is_scalar:
            node_id = self.node_id(raw.node)
            grads_in = [summarize(raw.grads_in[0])]
            sent = [(self.node_id(parent), g) for parent, g in zip(raw.node.parents, raw.grads_out)]
            leaf = raw.leaf
        else:
            node_id = self.node_id(raw.node)
            grads_in = [summarize(g) for g in raw.grads_in]
            sent = [(self.node_id(child) if child is not None else None, g)
                    for (child, _), g in zip(raw.node.next_functions, raw.grads_out)]
            leaf = raw.leaf
        arrived = self._arrived  # node id -> gradients it has received so far in this run
        arrived.pop(node_id, None)  # it has run: nothing arrives at it again (a checkpoint copies only the rest)
        sent_rows = []
        for to, g in sent:
            if to is None and g is None:
                continue
            n = arrived.get(to, 0) + 1
            arrived[to] = n
            sent_rows.append({"to": to, "grad": summarize(g), "contribution": n, "of": self._consumers.get(to, 1)})
        node = self.graph.nodes.get(node_id)
        accumulated = None
        if leaf is not None:
            accumulated = {"name": node.label if node is not None else "leaf", "grad": summarize(leaf.grad)}
        if node is not None:  # what the picture shows from now on: the gradient w.r.t. this node's output
            node.grad = summarize(raw.node.grad) if self.is_scalar else (
                accumulated["grad"] if accumulated else grads_in[0])
        return {"index": index, "node": node_id, "grads_in": grads_in, "sent": sent_rows, "leaf": accumulated}


def _same_float(a: float, b: float) -> bool:
    return a == b or (a != a and b != b)  # NaN is the same NaN


def _names(names: list) -> str:
    unique = list(dict.fromkeys(names))
    return ", ".join(unique[:4]) + (f" and {len(unique) - 4} more" if len(unique) > 4 else "")


def _what_to_do(error: BaseException, node, your_backward: bool) -> tuple[str, str]:
    """(the kind of failure, what the learner can do about it)."""
    if not isinstance(error, Exception):
        return "interrupted", "It was interrupted; step() runs it again."
    if node is not None and getattr(node, "freed", False):
        who = ("Your own loss.backward(), run while stepping," if your_backward
               else "A backward without retain_graph=True")
        return "freed", (f"{who} freed what forward saved for this node. Run the forward again and make a new "
                         "stepper (or call loss.backward(retain_graph=True) to keep the graph); reset() first puts "
                         "every .grad back as it was without this stepper.")
    if "modified by an inplace operation" in str(error):
        return "version", ("A tensor this node saved for backward was changed in place after the forward (its version "
                           "counter moved on), so its gradient cannot be computed. Run the forward again and make a "
                           "new stepper, and change no saved tensor in place between forward and backward.")
    return "raised", ("loss.backward() would raise it too: fix this node's backward (or its inputs), then run the "
                      "forward again and make a new stepper; step_back() and reset() go back.")

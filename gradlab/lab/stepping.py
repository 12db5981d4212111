"""Backward, one node at a time, with a way back: the logic behind ``BackpropStepper``.

``Stepping`` drives an engine's own backward through its source (``step_source``: gradlab's
``backward_steps``, ``Scalar.backward_steps`` or PyTorch's nodes) and turns each step into what
the lab shows: which node ran, the gradient that reached it, what it passed to each input and
where that adds up. Going back takes this stepper's additions out of every ``.grad`` from the last
checkpoint of the run before the target on (one every ``spacing`` steps) and resumes the run from
there: the engine is deterministic, so the gradients are restored exactly, and a step back costs
at most ``spacing`` steps of the engine, however deep the stepper is.

It never claims more than it knows. Each leaf's ledger (``grad_ledger``) tells it when someone
else changed a ``.grad`` it adds into (your own ``loss.backward()``, a second stepper, a
``zero_grad()``), and a step whose backward fails says which node failed, why, and what to do.
"""

from __future__ import annotations

import weakref

from .capture import CaptureError
from .graph import Graph
from .ownership import lab_pass
from .step_sources import source_for
from .summary import summarize


class BackwardStepError(RuntimeError):
    """A step of backward failed: the error names the step, the node and what to do (``stepping.failure``)."""


class Stepping:
    """The state of one backward pass being walked: steps taken so far, and the graph they walk."""

    def __init__(self, target, graph: Graph | None = None):
        self.source = source = source_for(target, graph)  # which engine: gradlab's tensors, the Scalar twin, PyTorch
        self.target, self.graph = source.target, source.graph
        self.total = source.total
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
        self._me = weakref.ref(self)
        source.watch(self._me)
        self.leaves = source.leaves
        self._finalizer = weakref.finalize(self, source.forget, self._me)

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
        self.source.after_step()
        if self.source.checkpoints and len(self.steps) % self.spacing == 0 and len(self.steps) not in self._checkpoints:
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
        self.source.restart()
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
        self.source.take_out(self._me, from_step=count)  # (go_to has just synced every ledger)
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
        self.source.sync()

    def show_leaf_grads(self) -> bool:
        """Each leaf's box shows its .grad as it is now, whoever changed it; True if one had changed."""
        return self.source.show_leaf_grads()

    def changed_outside(self, leaf, actor, what: str) -> None:
        """A leaf's ledger says: someone else (``actor``: None for you, else another stepper) changed its .grad."""
        self._note(actor, what, leaf)

    def _note(self, actor, what, leaf) -> None:
        who = "you" if actor is None else "stepper"
        self._outside.setdefault((who, what), []).append(self.source.leaf_name(leaf))
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
        return self.source.start()

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
        node = self.source.in_turn(self._ran)
        self.source.take_out(self._me, from_step=index)
        node_id = self.source.node_id(node) if node is not None else None
        drawn = self.graph.nodes[node_id] if node_id is not None else None
        where = drawn.label if drawn is not None else (node.name() if hasattr(node, "name") else "a node")
        freed = node is not None and self.source.failed_freed(node)
        kind, advice = _what_to_do(error, freed, ("you", "added") in self._outside)
        text = (str(error).strip().splitlines() or [""])[0].rstrip(".")
        error_text = f"{type(error).__name__}: {text}" if text else type(error).__name__
        self.failure = {"index": index, "node": drawn.id if drawn is not None else None, "label": where,
                        "kind": kind, "error": error_text, "advice": advice}
        before = {0: "no step had run before it", 1: "the step before it stands"}.get(
            index, f"the {index} steps before it stand")
        return BackwardStepError(f"BackpropStepper: step {index + 1} of {self.total} failed, in the backward of "
                                 f"{where}: {error_text}. {advice} ({before}; nothing of this step was kept)")

    def _rewind(self) -> None:
        """Back to before the first step: close the generator and take this stepper's additions out."""
        if self._generator is not None:
            self._generator.close()
        self._generator = None
        self.source.take_out(self._me)
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
        return self.source.reached_ids()

    def node_id(self, ref) -> str | None:
        return self.source.node_id(ref)

    def _describe(self, raw, index: int) -> dict:
        """A step as the panel shows it: the gradient in, and what went to each input."""
        node_id = self.node_id(raw.node)
        grads_in = [summarize(g) for g in raw.grads_in]
        sent = [(self.node_id(to) if to is not None else None, g) for to, g in zip(raw.targets, raw.grads_out)]
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
            holder = self.source.grad_holder(raw)
            node.grad = summarize(holder.grad) if holder is not None else grads_in[0]
        return {"index": index, "node": node_id, "grads_in": grads_in, "sent": sent_rows, "leaf": accumulated}


def _names(names: list) -> str:
    unique = list(dict.fromkeys(names))
    return ", ".join(unique[:4]) + (f" and {len(unique) - 4} more" if len(unique) > 4 else "")


def _what_to_do(error: BaseException, freed: bool, your_backward: bool) -> tuple[str, str]:
    """(the kind of failure, what the learner can do about it)."""
    if not isinstance(error, Exception):
        return "interrupted", "It was interrupted; step() runs it again."
    if freed:
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

"""``gl.lab.profile(fn, *args)``: where the time and the memory of one forward + backward go, node by node.

The forward is timed by ``record()`` (it reads the clock at every operation the engine's one recording
point reports), the backward by driving the engine's own ``backward_steps`` and reading the clock
around each step. The memory is what each node's forward kept for backward (saved tensors, and arrays kept
on the node such as im2col columns). No second mechanism:
the profile is the lab's two windows into the engine, with a clock.
"""

from __future__ import annotations

import functools
import statistics
import time
from html import escape

from ..autograd import backward_steps
from ..autograd.function import AccumulateGrad, Node, TrackedTensor
from .capture import CaptureError, capture, reachable
from .ownership import lab_pass
from .pytorch import is_torch_tensor
from .record import Recording, record
from .summary import summarize

_clock = time.perf_counter

# what each figure of a node is called, in the tables, the inspector and the colour menu
FIGURES = ("forward_s", "backward_s", "saved_bytes", "saved_for_backward_bytes")
SORTS = {"time": "total_s", "forward": "forward_s", "backward": "backward_s", "memory": "saved_bytes"}


def profile(fn, *args, repeats: int = 1, keep_grads: bool = False) -> "Profile":
    """Run ``out = fn(*args)`` and backward from ``out`` (a scalar, such as the loss), timing every node.

    Backward starts from empty ``.grad``s (as after ``optimizer.zero_grad()``) and each leaf's own
    ``.grad`` is put back afterwards, so profiling does not change your training state
    (``keep_grads=True`` keeps the gradients this backward computed instead). With ``repeats`` > 1,
    ``fn`` runs that many times (its side effects too) and each figure is the median.
    """
    if not callable(fn) or isinstance(fn, type):
        got = f"the class {fn.__name__}" if isinstance(fn, type) else f"a {type(fn).__name__}"
        raise TypeError(f"gl.lab.profile: the first argument is the function to profile, got {got}; "
                        "write gl.lab.profile(lambda: loss_fn(model(x), y))")
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"gl.lab.profile: repeats is how many times to run fn (1 or more), got {repeats!r}")
    if not isinstance(keep_grads, bool):
        raise TypeError(f"gl.lab.profile: keep_grads is True or False (keep the gradients this backward computes), "
                        f"got {keep_grads!r}")
    runs = [_run_once(fn, args, keep_grads=keep_grads and i == repeats - 1) for i in range(repeats)]
    first = runs[0]
    for i, run in enumerate(runs[1:], start=2):
        if len(run.recording) != len(first.recording):
            raise RuntimeError(f"gl.lab.profile: fn ran {len(first.recording)} operations the first time and "
                               f"{len(run.recording)} on repeat {i}; profile a function that does the same work each time")
    return Profile(first, runs)


class _Run:
    """One profiled forward + backward, as measured: the recording, and each backward step's node and
    seconds. What they mean per drawn node is worked out afterwards (``times``), off the clock."""

    def __init__(self, recording, output, steps, forward_wall, backward_wall, kept):  # steps: (node, seconds, grads in)
        self.recording, self.output, self.steps = recording, output, steps
        self.forward_wall, self.backward_wall = forward_wall, backward_wall
        self.kept = kept  # {id(node): {id(array): bytes}} kept on each node, as forward left it (backward may drop some)

    def times(self) -> tuple[list, dict]:
        """([forward seconds of each op, in the order of the recording], {backward key: seconds}), with
        the keys ("op", index), ("leaf", id(tensor)) and "outside" (nodes made before the recording)."""
        op_index = {id(r.node): i for i, r in enumerate(self.recording.op_records()) if r.node is not None}
        backward: dict = {}
        for node, seconds, _ in self.steps:
            if node.__class__ is AccumulateGrad:
                key = ("leaf", id(node.variable))
            else:
                index = op_index.get(id(node))
                key = ("op", index) if index is not None else "outside"
            backward[key] = backward.get(key, 0.0) + seconds
        return self.recording.forward_seconds, backward


def _run_once(fn, args, keep_grads: bool) -> _Run:
    with record(synchronize=True) as rec:
        started = _clock()
        out = fn(*args)
        forward_wall = _clock() - started
    if is_torch_tensor(out):  # a PyTorch forward: its backward is timed by hooks on PyTorch's nodes
        from .pytorch.profile import torch_run
        return torch_run(rec, out, forward_wall, keep_grads)
    _check_output(out, rec)
    kept = {id(r.node): kept_bytes(r.node) for r in rec.op_records() if r.node is not None}
    synchronize = out.device.backend.synchronize
    leaves = [node.variable for node in reachable(out.grad_fn) if node.__class__ is AccumulateGrad]
    before = [(leaf, leaf.grad) for leaf in leaves]
    for leaf in leaves:  # backward starts from empty .grads, as after optimizer.zero_grad(), and leaves yours be
        leaf.grad = None
    timed = []  # (node, seconds, gradients in) of each step: kept short, the clock is running
    steps = backward_steps(out, retain_graph=True)  # kept: the graph can still be drawn and inspected
    # a backward whose gradients are put back afterwards is no training step: watching hooks (GradientFlow's,
    # a stepper's ledger) ignore it; with keep_grads it is one, as loss.backward() would be
    try:
        with lab_pass(counts=keep_grads, keeps_grads=keep_grads):
            started = _clock()
            while True:
                ready = _clock()
                step = next(steps, None)
                if step is None:
                    break
                synchronize()
                timed.append((step.node, _clock() - ready, step.grads_in))
            backward_wall = _clock() - started
    finally:
        if not keep_grads:
            for leaf, grad in before:
                leaf.grad = grad  # the leaf's own gradient tensor, untouched
    return _Run(rec, out, timed, forward_wall, backward_wall, kept)


def _check_output(out, rec: Recording) -> None:
    if not isinstance(out, TrackedTensor):
        raise CaptureError(f"gl.lab.profile: fn returned a {type(out).__name__}, not a tensor; return the loss "
                           "(or another scalar tensor) that backward should start from")
    if out.grad_fn is None:
        raise CaptureError(
            f"gl.lab.profile: fn returned a tensor with no graph ({len(rec)} operations recorded, none leading to it): "
            "nothing in it requires grad. Profile a computation on parameters or tensors with requires_grad=True")
    if not any(r.node is out.grad_fn for r in rec.op_records()):
        raise CaptureError(
            f"gl.lab.profile: fn returned a tensor computed before profile ran it ({_ran(len(rec))}), so there is "
            "nothing to time; put the forward inside fn: gl.lab.profile(lambda: loss_fn(model(x), y))")
    if out.numel() != 1:
        raise CaptureError(f"gl.lab.profile: backward starts from one number, but fn returned a tensor of shape "
                           f"{list(out.shape)}; return a scalar such as the loss, or out.sum()")


def _ran(count: int) -> str:
    if not count:
        return "no operation ran inside fn"
    return f"{count} operation{'' if count == 1 else 's'} ran inside fn, none of them made it"


# --- memory: what forward saved for backward ---------------------------------------------------------

def saved_memory(node, given=None, kept=None) -> tuple[int, int]:
    """(bytes a node's forward saved, the part held only for backward).

    A saved tensor the forward was given (a parameter, the input data: ids in ``given``) is held
    anyway; anything made during the forward is kept alive by the graph alone. Without ``given``, a
    saved tensor with no history of its own counts as given. Each array is counted once per node.
    """
    arrays = saved_arrays(node, given, kept)
    return sum(size for size, _ in arrays.values()), sum(size for size, only in arrays.values() if only)


def saved_arrays(node, given=None, kept=None) -> dict:
    """{id(array): (bytes, held only for backward)} of what a node's forward saved: the tensors given to
    ``save_for_backward`` and the arrays it kept on the node itself (a convolution's im2col columns,
    max-pooling's winners), which the graph holds just the same. ``kept``: those as forward left them
    ({id: bytes}, from ``kept_bytes``), where a backward has since let some go."""
    arrays = {}
    for t, output in node.inspect_saved() or ():
        if t is not None and id(t.array) not in arrays:
            held_anyway = id(t) in given if given is not None else t.grad_fn is None
            # a saved output is held for backward alone (it is kept without its history, so grad_fn is None)
            arrays[id(t.array)] = (t.nbytes, output is not None or not held_anyway)
    for key, size in (kept_bytes(node) if kept is None else kept).items():
        arrays.setdefault(key, (size, True))
    return arrays


def kept_bytes(node) -> dict:
    """{id(array): bytes} of the arrays a node holds on itself, outside ``save_for_backward``."""
    return {id(a): int(a.nbytes) for a in _kept_on(vars(node).values() if hasattr(node, "__dict__") else ())}


def _kept_on(values, depth: int = 3):
    """The arrays among ``values``, in the lists, tuples and plain objects they hold too (a few levels)."""
    for value in values:
        if isinstance(value, TrackedTensor):
            yield value.array
        elif hasattr(value, "nbytes") and hasattr(value, "shape") and hasattr(value, "dtype"):
            yield value
        elif depth and isinstance(value, (list, tuple)):
            yield from _kept_on(value, depth - 1)
        elif depth and hasattr(value, "__dict__") and not isinstance(value, (type, Node)) \
                and not callable(value) and type(value).__module__.startswith("gradlab."):
            yield from _kept_on(vars(value).values(), depth - 1)


def _given_ids(rec: Recording) -> set:
    """Tensors the recorded forward used but did not make: parameters, inputs, data."""
    made, used = set(), set()
    for record_ in rec.op_records():
        used.update(id(x) for x in record_.inputs if isinstance(x, TrackedTensor) and id(x) not in made)
        made.update(id(x) for x in record_.outputs if isinstance(x, TrackedTensor))
    return used


# --- figures per drawn node ----------------------------------------------------------------------------

def node_figures(obj, graph) -> dict:
    """{graph node id: {forward_s, backward_s, saved_bytes, saved_for_backward_bytes}} for what is known
    of ``obj``: a Profile (all four), a Recording (forward time and memory) or a tensor (memory)."""
    if isinstance(obj, Profile):
        return obj.figures
    figures: dict = {}
    if isinstance(obj, Recording) and graph.source == "torch":
        from .pytorch.profile import recording_figures
        return recording_figures(obj, graph)
    if isinstance(obj, Recording):
        given = _given_ids(obj)
        for node_id, record_, seconds in zip(_op_ids(graph), obj.op_records(), obj.forward_seconds):
            memory = saved_memory(record_.node, given) if record_.node is not None else (0, 0)
            figures[node_id] = _figures(seconds, None, *memory)
        return figures
    for node in graph.nodes.values():
        if node.kind == "op" and isinstance(node.ref, Node):
            figures[node.id] = _figures(None, None, *saved_memory(node.ref))
    return figures


def _figures(forward_s, backward_s, saved_bytes, saved_for_backward_bytes) -> dict:
    return dict(zip(FIGURES, (forward_s, backward_s, saved_bytes, saved_for_backward_bytes)))


def _op_ids(graph) -> list:
    """The ids of the op nodes, in the order the recording saw them (capture draws each op once, in order)."""
    return [node.id for node in graph.nodes.values() if node.kind == "op"]


def total_seconds(figures: dict) -> float | None:
    known = [figures.get(k) for k in ("forward_s", "backward_s") if figures.get(k) is not None]
    return sum(known) if known else None


# --- the result ---------------------------------------------------------------------------------------

class Profile:
    """Per-node forward and backward seconds and saved memory of one forward + backward.

    ``top(10)`` lists the slowest nodes (``by="memory"`` the biggest savers), ``totals`` the sums,
    ``gl.lab.GraphView(prof, color="time")`` colours the graph by them. The profile keeps the
    forward's tensors (and its graph) alive, as a recording does: drop it to free them.
    """

    def __init__(self, first: _Run, runs: list):
        self.recording, self.output, self.repeats = first.recording, first.output, len(runs)
        self._runs = runs
        self._torch = getattr(first, "torch", False)  # PyTorch's runs: their figures come from pytorch/profile.py
        self.forward_wall_s = statistics.median(run.forward_wall for run in runs)
        self.backward_wall_s = statistics.median(run.backward_wall for run in runs)

    @functools.cached_property
    def _times(self) -> tuple[list, dict]:
        """The medians over the runs: forward seconds per op, backward seconds per key (see _Run.times)."""
        if self._torch:
            from .pytorch.profile import times
            return times(self._runs)
        runs = [run.times() for run in self._runs]
        if len(runs) == 1:
            return runs[0]
        forward = [statistics.median(f[i] for f, _ in runs) for i in range(len(runs[0][0]))]
        keys = set().union(*(b for _, b in runs))
        return forward, {key: statistics.median(b.get(key, 0.0) for _, b in runs) for key in keys}

    @functools.cached_property
    def graph(self):
        """The recorded forward as the lab draws it (made when first asked for), with the gradient
        that reached each node in the profiled backward."""
        if self._torch:
            from .pytorch.profile import profiled_graph
            return profiled_graph(self.recording, self.output, self._runs[0])
        graph = capture(self.recording)
        for engine_node, _, grads_in in self._runs[0].steps:
            ref = engine_node.variable if engine_node.__class__ is AccumulateGrad else engine_node
            node = graph.node_for(ref)
            if node is not None and grads_in and grads_in[0] is not None:
                node.grad = summarize(grads_in[0])
        return graph

    @functools.cached_property
    def figures(self) -> dict:
        """{graph node id: {forward_s, backward_s, saved_bytes, saved_for_backward_bytes}}; None = not run."""
        if self._torch:
            from .pytorch.profile import figures
            return figures(self.graph, self.output, self._runs[0], self._times)
        forward, backward = self._times
        given = _given_ids(self.recording)  # (the graph was kept: what forward saved is still there)
        figures = {}
        kept = self._runs[0].kept
        for i, (node_id, r) in enumerate(zip(_op_ids(self.graph), self.recording.op_records())):
            memory = saved_memory(r.node, given, kept.get(id(r.node))) if r.node is not None else (0, 0)
            figures[node_id] = _figures(forward[i], backward.get(("op", i)), *memory)
        for node in self.graph.nodes.values():
            if node.kind in ("param", "leaf") and ("leaf", id(node.ref)) in backward:
                figures[node.id] = _figures(None, backward[("leaf", id(node.ref))], 0, 0)
        return figures

    def rows(self) -> list:
        """One dict per node with a figure: id, label, op, module, the four figures and total_s."""
        return figure_rows(self.figures, self.graph)

    def top(self, n: int = 10, by: str = "time") -> list:
        """The ``n`` nodes that took longest (forward + backward), or by "forward", "backward", "memory"."""
        _check_count("top", n)
        return top_rows(self.rows(), n, by)

    @property
    def totals(self) -> dict:
        """Sums over the nodes, and the wall time of the whole forward and backward."""
        rows = self.rows()
        if self._torch:
            from .pytorch.profile import totals
            return {**totals(rows, self.graph, self.output, self._runs[0], self._times),
                    "forward_wall_s": self.forward_wall_s, "backward_wall_s": self.backward_wall_s,
                    "nodes": len(rows), "repeats": self.repeats}
        unique = {}  # an array two nodes saved is counted once
        given = _given_ids(self.recording)
        for r in self.recording.op_records():
            if r.node is not None:
                unique.update(saved_arrays(r.node, given, self._runs[0].kept.get(id(r.node))))
        return {
            "forward_s": sum(r["forward_s"] or 0.0 for r in rows),
            "backward_s": sum(r["backward_s"] or 0.0 for r in rows) + self._times[1].get("outside", 0.0),
            "forward_wall_s": self.forward_wall_s, "backward_wall_s": self.backward_wall_s,
            "saved_bytes": sum(size for size, _ in unique.values()),
            "saved_for_backward_bytes": sum(size for size, only in unique.values() if only),
            "nodes": len(rows), "repeats": self.repeats,
        }

    def __repr__(self):
        t = self.totals
        return (f"<gradlab.lab.Profile: {t['nodes']} nodes, forward {seconds_text(t['forward_s'])}, backward "
                f"{seconds_text(t['backward_s'])}, saved {bytes_text(t['saved_bytes'])}>")

    def __str__(self):
        return self.table(10)

    def table(self, n: int = 10, by: str = "time") -> str:
        """The top ``n`` nodes as a plain-text table, with the totals under it."""
        _check_count("table", n)
        title, columns, rows = table_cells(self.top(n, by), by)
        widths = [max(len(c), *(len(row[1][i]) for row in rows)) if rows else len(c) for i, c in enumerate(columns)]
        line = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
        return "\n".join([title, line(columns), *(line(cells) for _, cells in rows), self._totals_text()])

    def _repr_html_(self):
        title, columns, rows = table_cells(self.top(10), "time")
        head = "".join(f"<th>{escape(c)}</th>" for c in columns)
        body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in cells) + "</tr>" for _, cells in rows)
        return (f"<div><b>{escape(title)}</b><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                f"<div>{escape(self._totals_text())}</div></div>")

    def _totals_text(self) -> str:
        t = self.totals
        repeats = f", medians of {t['repeats']} runs" if t["repeats"] > 1 else ""
        return (f"total: forward {seconds_text(t['forward_s'])} in ops (wall {seconds_text(t['forward_wall_s'])}), "
                f"backward {seconds_text(t['backward_s'])} (wall {seconds_text(t['backward_wall_s'])}), saved for backward "
                f"{bytes_text(t['saved_bytes'])} ({bytes_text(t['saved_for_backward_bytes'])} held only for backward)"
                f"{repeats}")


def _check_count(method: str, n) -> None:
    """A count of rows is a whole number ≥ 0: a negative one would slice from the end (all rows but one)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"profile.{method}(n): n is how many nodes to list, a whole number ≥ 0 (the n slowest, or "
                         f"biggest with by='memory'); got {n!r}. For every node: profile.rows()")


def figure_rows(figures: dict, graph) -> list:
    """One dict per node with a figure: id, label, op, module, the four figures and total_s."""
    rows = []
    for node_id, figures_ in figures.items():
        node = graph.nodes[node_id]
        rows.append({"id": node_id, "label": node.label, "op": node.op, "module": node.group or "",
                     **figures_, "total_s": total_seconds(figures_)})
    return rows


# --- what GraphView shows: colour modes and the top-10 tables ---------------------------------------------

MODE_NAMES = {"time": "time (forward + backward)", "forward": "forward time", "backward": "backward time",
              "memory": "memory saved for backward"}


def _modes_known(figures: dict) -> list:
    """The profile's colour modes that these figures can fill: time, forward and backward, memory."""
    has = {k: any(f.get(k) is not None for f in figures.values()) for k in FIGURES}
    modes = ["time"] if has["forward_s"] or has["backward_s"] else []
    if has["forward_s"] and has["backward_s"]:
        modes += ["forward", "backward"]
    return modes + (["memory"] if has["saved_bytes"] else [])


def figure_modes(figures: dict) -> list:
    """[(mode, {id: size}, legend title, menu label, missing text, text of a figure)]: GraphWidget's colour modes."""
    modes = []
    only_forward = not any(f.get("backward_s") is not None for f in figures.values())
    for mode in _modes_known(figures):
        if mode == "memory":
            sizes = {k: f["saved_bytes"] or None for k, f in figures.items()}
            modes.append((mode, sizes, "bytes saved for backward, log scale", "memory (saved)", "saves nothing",
                          bytes_text))
            continue
        key = SORTS[mode]
        sizes = {k: (total_seconds(f) if key == "total_s" else f.get(key)) for k, f in figures.items()}
        title = "forward time (backward not timed: gl.lab.profile times both), log scale" if only_forward else \
            f"{MODE_NAMES[mode]}, log scale"
        modes.append((mode, sizes, title, "forward time" if only_forward else MODE_NAMES[mode], "not timed",
                      seconds_text))
    return modes


def figure_tables(figures: dict, graph, n: int = 10) -> dict:
    """{mode: {title, columns, rows: [{id, cells}]}}: the side panel's top-n table in each colour mode."""
    rows = figure_rows(figures, graph)
    only_forward = not any(f.get("backward_s") is not None for f in figures.values())
    tables = {}
    for mode in _modes_known(figures):
        by = "forward" if only_forward and mode == "time" else mode
        title, columns, cells = table_cells(top_rows(rows, n, by), by)
        tables[mode] = {"title": title, "columns": columns, "rows": [{"id": i, "cells": c} for i, c in cells]}
    return tables


def top_rows(rows: list, n: int = 10, by: str = "time") -> list:
    """The ``n`` rows with the largest figure ``by`` ("time", "forward", "backward" or "memory")."""
    if by not in SORTS:
        raise ValueError(f"gl.lab.profile: top(by={by!r}) sorts by one of {', '.join(map(repr, SORTS))}")
    key = SORTS[by]
    known = [row for row in rows if row.get(key)]
    return sorted(known, key=lambda row: row[key], reverse=True)[:n]


def table_cells(rows: list, by: str) -> tuple[str, list, list]:
    """(title, column names, [(node id, cells as text)]) of a top-n table, for text, HTML and the widget."""
    if by == "memory":
        columns = ["node", "module", "saved", "only for backward"]
        cells = [(r["id"], [r["label"], r["module"], bytes_text(r["saved_bytes"]),
                            bytes_text(r["saved_for_backward_bytes"])]) for r in rows]
        return f"top {len(rows)} nodes by memory saved for backward", columns, cells
    columns = ["node", "module", "forward", "backward", "total"]
    cells = [(r["id"], [r["label"], r["module"], seconds_text(r["forward_s"]), seconds_text(r["backward_s"]),
                        seconds_text(r["total_s"])]) for r in rows]
    what = {"time": "time (forward + backward)", "forward": "forward time", "backward": "backward time"}[by]
    return f"top {len(rows)} nodes by {what}", columns, cells


def seconds_text(seconds) -> str:
    if seconds is None:
        return "—"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def bytes_text(size) -> str:
    if size is None:
        return "—"
    size = round(size)
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if size >= scale:
            return f"{size / scale:.3g} {unit}"
    return f"{size} B"

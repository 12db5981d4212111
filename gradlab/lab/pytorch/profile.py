"""``gl.lab.profile(fn)`` on PyTorch: each backward node's forward and backward time, and what it saved.

The forward is timed by the recording (the clock around each torch call); the backward by hooks
PyTorch runs around each node of ``loss.backward()``: a pre-hook when its gradients have arrived,
a hook when it has computed its inputs' gradients. The memory of a node is the bytes of the tensors
it saved for backward (``_saved_*``), each storage counted once: a saved view of a big tensor holds
all of that tensor's storage. What was given to the forward (parameters, data) is held anyway; the
rest is held only for backward. ``profiling.Profile`` asks the functions below for a torch run's figures.
"""

from __future__ import annotations

import statistics
import time

import torch

from ..capture_basics import CaptureError
from ..ownership import lab_pass
from ..summary import summarize
from .graph import _saved_attributes, is_accumulator, reachable
from .recorded import check_not_mixed, from_torch_recording

_clock = time.perf_counter


class TorchRun:
    """One profiled forward + backward of a torch computation, as measured."""

    torch = True

    def __init__(self, recording, output, forward_wall, backward_wall, backward, grads, saved):
        self.recording, self.output = recording, output
        self.forward_wall, self.backward_wall = forward_wall, backward_wall
        self.backward = backward  # {key: seconds}: ("op", rank) for an op node, ("leaf", id(tensor)) for a leaf
        self.grads = grads  # {key: the gradient that reached it}
        self.saved = saved  # {key: {storage: (bytes, held only for backward)}}

    def forward(self) -> list:
        return [event.seconds for event in self.recording.torch.events]


def torch_run(rec, out, forward_wall: float, keep_grads: bool) -> TorchRun:
    """Time ``out.backward()`` node by node (hooks around each node), after the recorded forward."""
    _check_output(out, rec)
    nodes = reachable(out.grad_fn)
    keys = node_keys(nodes)
    given = _given_storages(rec)
    saved = {keys[id(node)]: saved_storages(node, given) for node in nodes if not is_accumulator(node)}
    started, backward, grads, handles = {}, {}, {}, []
    for node in nodes:
        key = keys[id(node)]

        def start(grad_outputs, key=key):
            grads[key] = grad_outputs[0] if grad_outputs else None
            started[key] = _clock()

        def stop(grad_inputs, grad_outputs, key=key):
            backward[key] = backward.get(key, 0.0) + _clock() - started.pop(key)

        handles += [node.register_prehook(start), node.register_hook(stop)]
    leaves = [node.variable for node in nodes if is_accumulator(node)]
    before = [(leaf, leaf.grad) for leaf in leaves]
    for leaf in leaves:  # from empty .grads, as after optimizer.zero_grad(); yours are put back afterwards
        leaf.grad = None
    try:
        with lab_pass(counts=keep_grads, keeps_grads=keep_grads):
            started_all = _clock()
            out.backward(retain_graph=True)  # kept: the graph can still be drawn and inspected
            if out.is_cuda:
                torch.cuda.synchronize()
            backward_wall = _clock() - started_all
    finally:
        for handle in handles:
            handle.remove()
        if not keep_grads:
            for leaf, grad in before:
                leaf.grad = grad
    return TorchRun(rec, out, forward_wall, backward_wall, backward, grads, saved)


def _check_output(out, rec) -> None:
    if rec.torch is None:
        raise CaptureError("gl.lab.profile: fn returned a torch tensor, but torch was imported only inside fn, so the "
                           "recording did not watch it; import torch before calling gl.lab.profile")
    if out.grad_fn is None:
        raise CaptureError(
            f"gl.lab.profile: fn returned a torch tensor with no graph (shape {list(out.shape)}): nothing in it "
            "requires grad. Profile a computation on parameters or tensors with requires_grad=True")
    if not any(fn is out.grad_fn for event in rec.torch.events for fn, _ in event.made):
        raise CaptureError(
            f"gl.lab.profile: fn returned a torch tensor computed before profile ran it ({len(rec.torch.events)} "
            "torch calls ran inside fn, none of them made it), so there is nothing to time; put the forward "
            "inside fn: gl.lab.profile(lambda: loss_fn(model(x), y))")
    if out.numel() != 1:
        raise CaptureError(f"gl.lab.profile: backward starts from one number, but fn returned a torch tensor of "
                           f"shape {list(out.shape)}; return a scalar such as the loss, or out.sum()")


def node_keys(nodes) -> dict:
    """id(node) -> a key that names the same node in another run of the same computation: a leaf by its
    tensor, an op by its place in the order forward made the ops (PyTorch's sequence numbers)."""
    ops = sorted((n for n in nodes if not is_accumulator(n)), key=lambda n: n._sequence_nr())
    keys = {id(n): ("op", rank) for rank, n in enumerate(ops)}
    keys.update((id(n), ("leaf", id(n.variable))) for n in nodes if is_accumulator(n))
    return keys


def saved_storages(node, given=frozenset()) -> dict:
    """{storage pointer: (bytes, held only for backward)} of the tensors ``node`` saved for backward;
    a tensor whose storage was given to the forward (a parameter, the data) is held anyway."""
    storages = {}
    try:
        for _, value in _saved_attributes(node):
            for t in (value if isinstance(value, (tuple, list)) else (value,)):
                if isinstance(t, torch.Tensor) and t.device.type != "meta":
                    storage = t.untyped_storage()
                    pointer = storage.data_ptr()
                    storages.setdefault(pointer, (storage.nbytes(), pointer not in given))
    except RuntimeError:  # backward already freed them
        return {}
    return storages


def _given_storages(rec) -> frozenset:
    """The storages of the tensors the recorded calls were given but did not make."""
    made, given = set(), set()
    for event in rec.torch.events:
        for t in event.inputs:
            if id(t) not in made:
                given.add(t.untyped_storage().data_ptr())
        made.update(id(t) for t in event.outputs)
    return frozenset(given)


def recording_figures(rec, graph) -> dict:
    """{graph node id: figures} of a torch recording: each call's time on the node of what it returned,
    each node's saved bytes."""
    figures = {}
    given = _given_storages(rec)
    for event, (ids, returned) in zip(rec.torch.events, graph.made_by):
        for node_id in ids:
            figures[node_id] = _figures(None, None, *_bytes(saved_storages(graph.nodes[node_id].ref, given)))
        if returned is not None:
            figures[returned]["forward_s"] = event.seconds
    return figures


def _bytes(storages: dict) -> tuple:
    return sum(size for size, _ in storages.values()), sum(size for size, only in storages.values() if only)


# --- what a Profile of a torch run reads (profiling.Profile asks for these when its runs are torch's) -----

def times(runs) -> tuple[list, dict]:
    """([forward seconds of each call], {key: backward seconds}): the medians over the runs."""
    forwards = [run.forward() for run in runs]
    forward = [statistics.median(f[i] for f in forwards) for i in range(len(forwards[0]))]
    keys = set().union(*(run.backward for run in runs))
    return forward, {key: statistics.median(run.backward.get(key, 0.0) for run in runs) for key in keys}


def profiled_graph(recording, output, first: TorchRun):
    """The recorded forward as drawn, with the gradient that reached each node in the profiled backward."""
    graph = _capture(recording)
    for node_id, key in node_keys_of(graph, output).items():
        if first.grads.get(key) is not None:
            graph.nodes[node_id].grad = summarize(first.grads[key])
    return graph


def figures(graph, output, first: TorchRun, times_) -> dict:
    """{graph node id: figures}: a call's forward time on the node of what it returned (a call that made several
    nodes, such as F.cross_entropy, is timed as one), each node's own backward time and saved bytes."""
    forward, backward = times_
    keys = node_keys_of(graph, output)
    found = {}
    for i, (ids, returned) in enumerate(graph.made_by):
        for node_id in ids:
            key = keys.get(node_id)
            found[node_id] = _figures(None, backward.get(key), *_bytes(first.saved.get(key, {})))
        if returned is not None:
            found[returned]["forward_s"] = forward[i]
    for node_id, key in keys.items():
        if key[0] == "leaf" and key in backward:
            found[node_id] = _figures(None, backward[key], 0, 0)
    return found


def totals(rows: list, graph, output, first: TorchRun, times_) -> dict:
    """The sums over the nodes (a storage two nodes saved counted once), and what backward spent on nodes
    made before the recording."""
    unique = {}
    for storages in first.saved.values():
        unique.update(storages)
    drawn = set(node_keys_of(graph, output).values())
    outside = sum(seconds for key, seconds in times_[1].items() if key not in drawn)
    return {
        "forward_s": sum(r["forward_s"] or 0.0 for r in rows),
        "backward_s": sum(r["backward_s"] or 0.0 for r in rows) + outside,
        "saved_bytes": sum(size for size, _ in unique.values()),
        "saved_for_backward_bytes": sum(size for size, only in unique.values() if only),
    }


def _figures(forward_s, backward_s, saved_bytes, saved_for_backward_bytes) -> dict:
    """A node's figures, with the names profiling.FIGURES gives them."""
    return {"forward_s": forward_s, "backward_s": backward_s, "saved_bytes": saved_bytes,
            "saved_for_backward_bytes": saved_for_backward_bytes}


def node_keys_of(graph, output) -> dict:
    """graph node id -> key, for the nodes of ``graph`` that ``output``'s backward reaches."""
    nodes = reachable(output.grad_fn)
    keys = node_keys(nodes)
    found = {}
    for node in nodes:
        box = graph.node_for(node.variable if is_accumulator(node) else node)
        if box is not None:
            found[box.id] = keys[id(node)]
    return found


def _capture(rec):
    check_not_mixed(rec)
    return from_torch_recording(rec)

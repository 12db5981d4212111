"""``gl.lab.profile(fn)`` on PyTorch: each backward node's forward and backward time, and what it saved.

The forward is timed by the recording (the clock around each torch call); the backward by hooks
PyTorch runs around each node of ``loss.backward()``: a pre-hook when its gradients have arrived,
a hook when it has computed its inputs' gradients. The memory of a node is the bytes of the tensors
it saved for backward (``_saved_*``), each storage counted once: a saved view of a big tensor holds
all of that tensor's storage. What was given to the forward (parameters, data) is held anyway; the
rest is held only for backward.
"""

from __future__ import annotations

import functools
import statistics
import time

import torch

from ..capture_basics import CaptureError
from ..ownership import lab_pass
from ..profiling import Profile, _figures
from ..summary import summarize
from .graph import _saved_attributes, is_accumulator, reachable

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
    for event, ids in zip(rec.torch.events, graph.made_by):
        for node_id in ids:
            figures[node_id] = _figures(None, None, *_bytes(saved_storages(graph.nodes[node_id].ref, given)))
        if ids:
            figures[ids[-1]]["forward_s"] = (figures[ids[-1]]["forward_s"] or 0.0) + event.seconds
    return figures


def _bytes(storages: dict) -> tuple:
    return sum(size for size, _ in storages.values()), sum(size for size, only in storages.values() if only)


class TorchProfile(Profile):
    """A ``Profile`` of a torch forward + backward: the same tables, colours and totals as gradlab's.

    A call that made several nodes (``F.cross_entropy``) is timed as one: its time is on the node of what it
    returned. Each node's backward time is its own, from hooks PyTorch runs around it."""

    @functools.cached_property
    def _times(self) -> tuple:
        forwards = [run.forward() for run in self._runs]
        forward = [statistics.median(f[i] for f in forwards) for i in range(len(forwards[0]))]
        keys = set().union(*(run.backward for run in self._runs))
        backward = {key: statistics.median(run.backward.get(key, 0.0) for run in self._runs) for key in keys}
        return forward, backward

    @functools.cached_property
    def _keys(self) -> dict:
        return node_keys_of(self.graph, self.output)

    @functools.cached_property
    def graph(self):
        graph = _capture(self.recording)
        grads = self._runs[0].grads
        for node_id, key in node_keys_of(graph, self.output).items():
            if grads.get(key) is not None:
                graph.nodes[node_id].grad = summarize(grads[key])
        return graph

    @functools.cached_property
    def figures(self) -> dict:
        forward, backward = self._times
        saved = self._runs[0].saved
        figures = {}
        keys = self._keys
        for i, ids in enumerate(self.graph.made_by):
            for node_id in ids:
                key = keys.get(node_id)
                figures[node_id] = _figures(None, backward.get(key), *_bytes(saved.get(key, {})))
            if ids:
                figures[ids[-1]]["forward_s"] = forward[i]
        for node_id, key in keys.items():
            if key[0] == "leaf" and key in backward:
                figures[node_id] = _figures(None, backward[key], 0, 0)
        return figures

    @property
    def totals(self) -> dict:
        rows = self.rows()
        unique = {}
        for storages in self._runs[0].saved.values():
            unique.update(storages)
        drawn = set(self._keys.values())
        outside = sum(seconds for key, seconds in self._times[1].items() if key not in drawn)
        return {
            "forward_s": sum(r["forward_s"] or 0.0 for r in rows),
            "backward_s": sum(r["backward_s"] or 0.0 for r in rows) + outside,
            "forward_wall_s": self.forward_wall_s, "backward_wall_s": self.backward_wall_s,
            "saved_bytes": sum(size for size, _ in unique.values()),
            "saved_for_backward_bytes": sum(size for size, only in unique.values() if only),
            "nodes": len(rows), "repeats": self.repeats,
        }


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
    from .recorded import check_not_mixed, from_torch_recording
    check_not_mixed(rec)
    return from_torch_recording(rec)

"""The backward engine, written as a generator of steps.

``backward_steps`` walks the graph from the outputs towards the leaves in reverse topological
order and yields one ``BackwardStep`` per node it runs. ``Tensor.backward()`` runs the same
generator to the end (only without building the step records); the lab drives it one step at a
time, so what it shows is what the engine does.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from .anomaly import anomaly_state, checked_backward
from .broadcasting import fit_to_input, summed_dims
from .function import _FREED, AccumulateGrad, TrackedTensor, _edge
from .grad_mode import set_enabled, thread_mode


@dataclass(slots=True)
class BackwardStep:
    """One node's turn in backward: the one record every engine the lab steps yields.

    ``node`` is what ran (a Node here; a Scalar in the Scalar twin; a ``grad_fn`` in PyTorch);
    ``grads_in`` are the gradients flowing into it (one per output of its forward, after hooks);
    ``grads_out`` are the gradients it produced, and ``targets`` the node each one goes to (None
    where that input needs no gradient); ``leaf`` is the tensor whose ``.grad`` this step updated.
    """

    index: int
    node: Any
    grads_in: tuple
    grads_out: tuple
    leaf: Any = None
    targets: tuple = ()


class _Pass:
    """What one backward pass was asked to do, fixed when it starts (PyTorch calls it a GraphTask).

    ``targets`` (nodes, or None for every leaf) limits the pass to the nodes on a path to them
    (``needed``); ``captured`` maps the (node, output index) edges whose incoming gradient it records.
    """

    __slots__ = ("keep_graph", "create_graph", "accumulate", "steps", "targets", "captured", "needed")

    def __init__(self, keep_graph, create_graph, accumulate, steps, targets=None, captured=None):
        self.keep_graph = bool(keep_graph)  # keep what forward saved, to run backward again (retain_graph)
        self.create_graph = bool(create_graph)  # record the backward formulas, to differentiate them again
        self.accumulate = accumulate  # add into .grad (backward), or only capture (autograd.grad)
        self.steps = steps  # yield a BackwardStep after each node (the lab), or just run to the end
        self.targets = targets
        self.captured = captured
        self.needed = None


def _roots(tensors, grad_tensors, for_what: str):
    """Check the outputs and their starting gradients, as PyTorch does, and return their edges."""
    if isinstance(tensors, TrackedTensor):
        tensors = (tensors,)
    tensors = tuple(tensors)
    if grad_tensors is None or isinstance(grad_tensors, TrackedTensor):
        grad_tensors = (grad_tensors,) * len(tensors) if grad_tensors is None else (grad_tensors,)
    grad_tensors = tuple(grad_tensors)
    if len(grad_tensors) != len(tensors):
        raise RuntimeError(f"{for_what}: got {len(tensors)} outputs but {len(grad_tensors)} gradients; give one gradient per output")
    edges, grads = [], []
    for i, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not isinstance(t, TrackedTensor):
            raise TypeError(f"{for_what}: expected tensors as outputs, but element {i} is a {type(t).__name__}")
        if not t.requires_grad:
            raise RuntimeError(
                f"{for_what}: element {i} of tensors does not require grad and does not have a grad_fn. "
                "Set requires_grad=True on the leaf tensors you want gradients for, before computing the output."
            )
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(
                    f"{for_what}: grad can be implicitly created only for scalar outputs, but output {i} has shape "
                    f"{tuple(t.shape)}. Call .sum() first, or pass a gradient of that shape: out.backward(gradient)."
                )
            g = t.new_ones(t.shape)
        elif not isinstance(g, TrackedTensor):
            g = t.new_tensor(g)
        if tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(
                f"{for_what}: Mismatch in shape: grad_output[{i}] has a shape of {tuple(g.shape)} and "
                f"output[{i}] has a shape of {tuple(t.shape)}."
            )
        edges.append(_edge(t))
        grads.append(g)
    return edges, grads


def _check_inputs(inputs, for_what: str) -> tuple:
    inputs = (inputs,) if isinstance(inputs, TrackedTensor) else tuple(inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, TrackedTensor) or not t.requires_grad:
            raise RuntimeError(
                f"{for_what}: one of the differentiated Tensors (input {i}) does not require grad; "
                "call .requires_grad_() on it before computing the outputs"
            )
    return inputs


def backward_steps(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Run backward from ``tensors`` one node at a time: a ``BackwardRun`` that yields a BackwardStep after each.

    Gradients accumulate into the ``.grad`` of leaves (only into ``inputs`` when given, which
    may also be non-leaf tensors), exactly as ``Tensor.backward`` does: that method runs this
    same engine to the end, only without building the step records.
    """
    return BackwardRun(*_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, steps=True))


class BackwardRun:
    """The steps of one backward pass, one per ``next()``; ``checkpoint()`` notes where it stands.

    A checkpoint holds the engine's bookkeeping between two steps — which nodes wait for how many
    gradients, and the gradients waiting for them (references, not copies: from a checkpoint on,
    the engine adds no gradient into a waiting one in place). ``checkpoint.resume()`` is a new run
    that carries on from there as this one did, step for step and bit for bit, as often as asked.
    It does not rewind the leaves' ``.grad``: what the steps after it added is the caller's to take
    out. Resuming runs the nodes after the checkpoint again, so it needs ``retain_graph=True``.
    """

    __slots__ = ("_steps", "_state", "_taken")

    def __init__(self, steps, state, taken: int = 0):
        self._steps = steps  # the engine's generator (_run), which keeps its bookkeeping in ``state``
        self._state = state
        self._taken = taken  # steps yielded so far, counting those before a resumed checkpoint

    def __iter__(self):
        return self

    def __next__(self) -> BackwardStep:
        step = next(self._steps)
        self._taken += 1
        return step

    def close(self) -> None:
        self._steps.close()

    @property
    def steps_taken(self) -> int:
        return self._taken

    def checkpoint(self) -> "BackwardCheckpoint":
        """Where the run stands now, between two steps: resume it later, as many times as needed."""
        state = self._state
        if state.finished:
            raise RuntimeError("BackwardRun.checkpoint: the run has finished; take checkpoints between its steps")
        state.owned.clear()  # no waiting gradient is added into in place from here on: the checkpoint holds them
        waiting = {node: list(buffer) for node, buffer in state.buffers.items()}
        counts = {node: state.deps[node] for node in waiting}
        return BackwardCheckpoint(self._taken, state, waiting, counts, list(state.ready), dict(state.captured or {}))


class BackwardCheckpoint:
    """A backward run between two steps (``BackwardRun.checkpoint()``): ``index`` steps had run."""

    __slots__ = ("index", "_origin", "_waiting", "_counts", "_ready", "_captured")

    def __init__(self, index, origin, waiting, counts, ready, captured):
        self.index = index
        self._origin, self._waiting, self._counts, self._ready, self._captured = origin, waiting, counts, ready, captured

    def resume(self) -> BackwardRun:
        """A new run from this checkpoint: its first step is step ``index`` of the original run."""
        origin = self._origin
        deps = dict(origin.initial_deps)
        deps.update(self._counts)
        captured = dict(self._captured) if origin.captured is not None else None
        run = origin.run
        if captured is not None:
            run = _Pass(run.keep_graph, run.create_graph, run.accumulate, run.steps, run.targets, captured)
            run.needed = origin.run.needed
        state = _RunState(run, deps, {node: list(b) for node, b in self._waiting.items()}, list(self._ready),
                          self.index, origin.initial_deps)
        state.non_leaves = origin.non_leaves
        steps = _run(run, state)
        if origin.non_leaves:  # backward(inputs=[non-leaf]): their .grad is set once the run ends
            steps = _then_accumulate(steps, origin.non_leaves, captured, run.create_graph)
        return BackwardRun(steps, state, self.index)


class _RunState:
    """The engine's bookkeeping of one run, kept where a checkpoint can read it (the lab's runs only)."""

    __slots__ = ("run", "deps", "buffers", "owned", "ready", "captured", "index", "initial_deps", "finished",
                 "non_leaves")

    def __init__(self, run, deps, buffers, ready, index=0, initial_deps=None):
        self.run, self.deps, self.buffers, self.owned, self.ready = run, deps, buffers, {}, ready
        self.captured, self.index, self.initial_deps = run.captured, index, initial_deps
        self.finished, self.non_leaves = False, None


def _start(edges, root_grads, run: _Pass) -> _RunState:
    """A run's bookkeeping before its first step: dependency counts, the roots' gradients, the ready nodes."""
    roots = {node for node, _ in edges}
    deps = _dependencies(roots)
    if run.targets is not None:
        run.needed = _needed(roots, run.targets)
    buffers: dict = {}
    for (node, nr), g in zip(edges, root_grads):
        _add_to_buffer(buffers, node, nr, g, run.create_graph)
    ready = [(-node._seq, node) for node in buffers if not deps[node]]  # sequence numbers are unique
    heapq.heapify(ready)
    # a stepped run (the lab) keeps the counts as they started, for its checkpoints to resume from
    return _RunState(run, deps, buffers, ready, 0, dict(deps) if run.steps else None)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """``gradlab.autograd.backward``: backward from one or several outputs, all the way through."""
    for _ in _backward(tensors, grad_tensors, retain_graph, create_graph, inputs, steps=False)[0]:
        pass


def _backward(tensors, grad_tensors, retain_graph, create_graph, inputs, steps):
    """(the engine's generator, its bookkeeping) for backward from ``tensors``."""
    edges, grads = _roots(tensors, grad_tensors, "backward")
    keep = create_graph if retain_graph is None else retain_graph
    if inputs is None:
        state = _start(edges, grads, _Pass(keep, create_graph, accumulate=True, steps=steps))
        return _run(state.run, state), state
    inputs = _check_inputs(inputs, "backward")
    if not inputs:
        raise RuntimeError("backward: the `inputs` argument cannot be empty; pass the tensors to accumulate into, or None")
    non_leaves = {_edge(t): t for t in inputs if t.grad_fn is not None}
    captured = dict.fromkeys(non_leaves)
    targets = {_edge(t)[0] for t in inputs}
    state = _start(edges, grads, _Pass(keep, create_graph, accumulate=True, steps=steps, targets=targets,
                                       captured=captured or None))
    run = _run(state.run, state)
    if not non_leaves:
        return run, state
    state.non_leaves = non_leaves
    return _then_accumulate(run, non_leaves, captured, create_graph), state


def _then_accumulate(steps, non_leaves, captured, create_graph):
    """backward(inputs=[non-leaf, ...]): after the run, add the captured gradients into their ``.grad``."""
    yield from steps
    for key, t in non_leaves.items():
        if captured[key] is not None:
            _accumulate(t, captured[key], create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned instead of stored in ``.grad``."""
    if materialize_grads and allow_unused is False:
        raise ValueError("autograd.grad: Expected allow_unused to be True or not passed when materialize_grads=True, "
                         "but got: allow_unused=False.")
    inputs = _check_inputs(inputs, "autograd.grad")
    edges, grads = _roots(outputs, grad_outputs, "autograd.grad")
    keep = create_graph if retain_graph is None else retain_graph
    input_edges = [_edge(t) for t in inputs]
    captured = dict.fromkeys(input_edges)
    targets = {node for node, _ in input_edges}
    run = _Pass(keep, create_graph, accumulate=False, steps=False, targets=targets, captured=captured)
    for _ in _run(run, _start(edges, grads, run)):
        pass
    results = []
    for i, (t, key) in enumerate(zip(inputs, input_edges)):
        g = captured[key]
        if g is not None and g.dtype is not t.dtype:
            g = g.to(t.dtype)
        if g is None:
            if materialize_grads:
                g = t.new_zeros(t.shape)
            elif not allow_unused:
                raise RuntimeError(
                    f"autograd.grad: The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
        results.append(g)
    return tuple(results)


def _dependencies(root_nodes) -> dict:
    """Count, for every node reachable from the roots, how many edges lead into it."""
    deps = dict.fromkeys(root_nodes, 0)
    stack = list(deps)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                if child in deps:
                    deps[child] += 1
                else:
                    deps[child] = 1
                    stack.append(child)
    return deps


def _needed(root_nodes, targets) -> set:
    """The nodes that lie on a path to a target (depth-first, each node once): only they need to run."""
    on_path: dict = {}
    stack = [(node, False) for node in root_nodes]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            on_path[node] = node in targets or any(on_path.get(child, False) for child, _ in node.next_functions)
        elif node not in on_path:
            on_path[node] = False
            stack.append((node, True))
            stack.extend((child, False) for child, _ in node.next_functions if child is not None and child not in on_path)
    return {node for node, flag in on_path.items() if flag}


def _run(run: _Pass, state: _RunState):
    """The engine: Kahn's algorithm over the graph, newest node first among the ready ones.

    Each turn runs one ready node and passes its gradients on to the nodes it leads to; with
    ``run.steps`` it yields a BackwardStep after each (the caller's grad mode is back on while it
    holds one). Backward formulas run with this thread's recording off unless ``create_graph``.
    ``state`` (from ``_start``, or a checkpoint) holds the counts, buffers and ready nodes it works on.
    """
    deps, buffers, ready, index = state.deps, state.buffers, state.ready, state.index
    # A gradient arriving where one already waits is added to it. The first sum is a new tensor; later ones
    # are added into it in place (as PyTorch's InputBuffer does), which is safe while it waits in the buffer:
    # no step, hook or other node has seen it yet. ``owned`` holds, per node, the one such sum of its buffer
    # (a checkpoint empties it: it keeps the waiting gradients as they are).
    owned = state.owned
    mode = thread_mode()
    user_mode = mode.enabled
    set_enabled(mode, run.create_graph)  # backward formulas are recorded only to differentiate them again
    heappop, heappush, steps = heapq.heappop, heapq.heappush, run.steps
    needed, create_graph = run.needed, run.create_graph
    plain, keep_graph = run.targets is None, run.keep_graph  # plain: no targets to capture or prune for
    try:
        while ready:
            node = heappop(ready)[1]
            grads_in = buffers.pop(node)
            if owned:
                owned.pop(node, None)  # its sum goes on to backward, hooks and steps: no longer to add into
            leaf = None
            if node.__class__ is AccumulateGrad:
                leaf, grads_out = _run_accumulate(node, grads_in, run), ()
            elif (plain and not node._hooked and len(grads_in) == 1 and grads_in[0] is not None
                  and not anomaly_state.enabled):  # the usual node: _run_node's core, written out (1% of the chain)
                grads_out = node.function.backward(node, *grads_in)
                if not keep_graph and node._saved:
                    node._saved = _FREED  # release what forward saved
                if grads_out.__class__ is not tuple or len(grads_out) != len(node.next_functions):
                    grads_out = _one_per_input(node, grads_out)
            else:
                grads_out = _run_node(node, grads_in, run)
            if steps:  # the step shows the gradients in the inputs' shapes (else each is fitted as it is sent)
                grads_out = _fit_to_inputs(node, grads_out)
            # Pass the gradients on along the node's edges (into each child's buffer, as _add_to_buffer does),
            # each in its input's shape (see _fit_gradient); a child whose last edge has reported becomes ready.
            # Written out here: as a function call per node it made the chain's backward ~7% slower.
            for (child, nr), g in zip(node.next_functions, grads_out):
                if child is None or (needed is not None and child not in needed):
                    continue
                buffer = buffers.get(child)
                if buffer is None:
                    buffer = buffers[child] = [None] * len(child._output_shapes)
                if g is not None:
                    if not isinstance(g, TrackedTensor) or ((array := g.array).shape != child._output_shapes[nr]
                                                             or array.dtype is not child._output_dtypes[nr]):
                        g = _fit_gradient(node, child, nr, g)  # (numpy dtypes are singletons: `is` suffices)
                    old = buffer[nr]
                    if old is None:
                        buffer[nr] = g
                    elif old is owned.get(child) and not create_graph:  # a sum made here, that no one else holds
                        old.device.backend.iadd(old.array, g.array)
                    else:
                        buffer[nr] = _sum(old, g, create_graph)
                        owned[child] = buffer[nr]
                remaining = deps[child] = deps[child] - 1
                if not remaining:
                    heappush(ready, (-child._seq, child))
            if steps:
                set_enabled(mode, user_mode)
                yield BackwardStep(index, node, tuple(grads_in), grads_out, leaf,
                                   tuple(child for child, _ in node.next_functions))
                mode = thread_mode()  # the caller may resume the steps from another thread
                user_mode = mode.enabled
                set_enabled(mode, run.create_graph)
                index += 1
        state.finished = True
    finally:
        set_enabled(mode, user_mode)


def _add_to_buffer(buffers, node, nr, g, create_graph) -> None:
    """Gather gradient g for output nr of node; a second one for the same output is added to the first."""
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * len(node._output_shapes)
    old = buffer[nr]
    buffer[nr] = g if old is None else _sum(old, g, create_graph)


def _run_node(node, grads_in, run: _Pass) -> tuple:
    """One node's turn: its backward, with the hooks around it; returns the gradients for its inputs."""
    n_inputs = len(node.next_functions)
    hooked = node._hooked  # (one flag for the three kinds of hook: most nodes have none)
    if hooked and node._tensor_hooks:
        _run_tensor_hooks(node._tensor_hooks, grads_in)
    if run.targets is not None:  # (None in a plain backward, which then skips both checks)
        if run.captured is not None:
            _capture(node, grads_in, run.captured)
        if not any(child in run.needed for child, _ in node.next_functions):
            return (None,) * n_inputs  # only passed through to capture a gradient: keeps what it saved
    if len(grads_in) != 1 or grads_in[0] is None:  # some outputs got no gradient
        if not _fill_missing(node, grads_in):
            if not run.keep_graph:
                node._saved = _FREED
            return (None,) * n_inputs
    if hooked and node._pre_hooks:
        _run_pre_hooks(node._pre_hooks, grads_in)
    grads_out = checked_backward(node, grads_in) if anomaly_state.enabled else node.function.backward(node, *grads_in)
    if not run.keep_graph and node._saved:
        node._saved = _FREED  # release what forward saved
    if grads_out.__class__ is not tuple or len(grads_out) != n_inputs:
        grads_out = _one_per_input(node, grads_out)
    if hooked and node._post_hooks:  # the hooks see the gradients in the inputs' shapes, as PyTorch's do
        grads_out = _run_post_hooks(node._post_hooks, _fit_to_inputs(node, grads_out), grads_in)
    return grads_out


def _capture(node, grads_in, captured) -> None:
    """autograd.grad and backward(inputs=...): record the gradient reaching a wanted edge."""
    for nr, g in enumerate(grads_in):
        if (node, nr) in captured:
            captured[node, nr] = g


def _fill_missing(node, grads_in) -> bool:
    """Outputs nobody used get zeros (or stay None, after set_materialize_grads(False)); False if none got any."""
    present = next((g for g in grads_in if g is not None), None)
    if present is None:
        return False
    if node._materialize_grads:
        for i, g in enumerate(grads_in):
            if g is None and node._output_shapes[i] is not None:
                grads_in[i] = present.new_zeros(node._output_shapes[i])
    return True


def _one_per_input(node, grads_out) -> tuple:
    """backward's result as a tuple of one gradient per forward input (extra trailing Nones dropped)."""
    if grads_out.__class__ is not tuple:
        grads_out = tuple(grads_out) if isinstance(grads_out, list) else (grads_out,)
    n_inputs = len(node.next_functions)
    if len(grads_out) != n_inputs:
        if len(grads_out) > n_inputs and all(g is None for g in grads_out[n_inputs:]):
            return grads_out[:n_inputs]
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected {n_inputs}, "
            f"got {len(grads_out)}): backward must return one gradient per input of forward (None for non-tensors)"
        )
    return grads_out


def _fit_to_inputs(node, grads_out) -> tuple:
    """Each gradient in its input's shape: one in a shape the input was broadcast to is summed back."""
    fitted = None
    for i, ((child, nr), g) in enumerate(zip(node.next_functions, grads_out)):
        if g is not None and child is not None and (
                not isinstance(g, TrackedTensor) or g.array.shape != child._output_shapes[nr]):
            if fitted is None:
                fitted = list(grads_out)
            fitted[i] = _fit_gradient(node, child, nr, g)
    return grads_out if fitted is None else tuple(fitted)


def _run_accumulate(node, grads_in, run: _Pass):
    """A leaf's turn: its hooks, then (for backward) ``leaf.grad += grad`` or (for grad) the capture.

    Returns the leaf if its ``.grad`` changed."""
    leaf = node.variable
    if grads_in[0] is None:
        return None
    hooks = getattr(leaf, "_hooks", None)
    if hooks:
        for hook in tuple(hooks):
            result = hook(grads_in[0])
            if result is not None:
                grads_in[0] = result
    if node._pre_hooks:
        _run_pre_hooks(node._pre_hooks, grads_in)
    targets = run.targets
    if targets is not None and run.captured is not None and (node, 0) in run.captured:
        run.captured[node, 0] = grads_in[0]
    updated = None
    if run.accumulate and (targets is None or node in targets):
        _accumulate(leaf, grads_in[0], run.create_graph)
        updated = leaf
    if node._post_hooks:
        for hook in tuple(node._post_hooks):
            hook((), tuple(grads_in))
    return updated


def _run_post_hooks(post_hooks, grads_out, grads_in) -> tuple:
    """Node.register_hook hooks: each sees the gradients out and in, and may return new gradients out."""
    for hook in tuple(post_hooks):
        result = hook(grads_out, tuple(grads_in))
        if result is not None:
            grads_out = tuple(result)
    return grads_out


def _run_pre_hooks(pre_hooks, grads_in) -> None:
    """Node.register_prehook hooks: each sees all incoming gradients and may return replacements."""
    for hook in tuple(pre_hooks):
        result = hook(tuple(grads_in))
        if result is not None:
            grads_in[:] = list(result)


def _run_tensor_hooks(tensor_hooks, grads_in) -> None:
    """Hooks registered on non-leaf tensors: each may replace the gradient of its output."""
    for nr, hooks in tensor_hooks.items():
        for hook in tuple(hooks):
            if grads_in[nr] is not None:
                result = hook(grads_in[nr])
                if result is not None:
                    grads_in[nr] = result


def _fit_gradient(node, child, nr, g):
    """Check a gradient against its input: a tensor of the input's shape, or of a shape the input
    was broadcast to — then it is summed back over the broadcast dims — and in the input's dtype
    (cast if not), as PyTorch's engine does."""
    if not isinstance(g, TrackedTensor):
        raise TypeError(
            f"Function {node.name()} returned an invalid gradient at index {nr}: expected a Tensor or None, "
            f"got {type(g).__name__}. Wrap arrays with grad.new_tensor(...) inside backward."
        )
    expected = child._output_shapes[nr]
    if expected is None:
        return g
    shape = tuple(g.array.shape)
    if shape != expected and summed_dims(shape, expected) is None:
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {nr} - got {list(shape)} but "
            f"expected shape compatible with {list(expected)}. A backward must return a gradient shaped like its input."
        )
    return fit_to_input(g, expected, child._output_dtypes[nr])


def _sum(a, b, create_graph):
    """Two gradients for the same place: a differentiable sum under create_graph, else a plain one."""
    if create_graph:
        return a + b
    return a._wrap(a.device.backend.add(a.array, b.array))


def _accumulate(leaf, g, create_graph) -> None:
    """Add a gradient into ``leaf.grad``; the first one is copied, since the engine may share it."""
    if g.dtype is not leaf.dtype:  # a mixed-dtype op sent back its promoted dtype: .grad matches the tensor
        g = g.to(leaf.dtype)
    grad = leaf._grad
    if grad is None:
        leaf.grad = g if create_graph else g._wrap(g.device.backend.copy(g.array))
    elif create_graph or grad.requires_grad:
        leaf.grad = grad + g
    else:
        grad.add_(g)

"""The backward engine, written as a generator of steps.

``backward_steps`` walks the graph from the outputs towards the leaves in reverse topological
order and yields one ``BackwardStep`` per node it runs. ``Tensor.backward()`` simply exhausts it;
the lab drives the same generator one step at a time, so what it shows is what the engine does.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Any

from .anomaly import anomaly_state, check_gradients
from .function import AccumulateGrad, TrackedTensor, accumulator
from .grad_mode import grad_state


@dataclass
class BackwardStep:
    """One node's turn in backward.

    ``grads_in`` are the gradients flowing into the node (one per output of its forward);
    ``grads_out`` are the gradients it produced, one per edge in ``node.next_functions``;
    ``leaf`` is the tensor whose ``.grad`` this step updated (AccumulateGrad steps only).
    """

    index: int
    node: Any
    grads_in: tuple
    grads_out: tuple
    leaf: Any = None


def _edge(t):
    """Where a tensor's gradient enters the graph: its grad_fn's output, or its leaf accumulator."""
    return (t.grad_fn, t._output_nr) if t.grad_fn is not None else (accumulator(t), 0)


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


def backward_steps(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Run backward from ``tensors`` one node at a time, yielding a BackwardStep after each.

    Gradients accumulate into the ``.grad`` of leaves (only into ``inputs`` when given), exactly
    as ``Tensor.backward`` does: that method is ``for _ in backward_steps(...): pass``.
    """
    edges, grads = _roots(tensors, grad_tensors, "backward")
    keep = create_graph if retain_graph is None else retain_graph
    targets = None
    if inputs is not None:
        inputs = (inputs,) if isinstance(inputs, TrackedTensor) else tuple(inputs)
        targets = {_edge(t)[0]: None for t in inputs}
    return _run(edges, grads, keep, create_graph, targets, accumulate=True)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, allow_unused=None,
         materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned instead of stored in ``.grad``."""
    single_input = isinstance(inputs, TrackedTensor)
    inputs = (inputs,) if single_input else tuple(inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, TrackedTensor) or not t.requires_grad:
            raise RuntimeError(f"autograd.grad: input {i} does not require grad; call .requires_grad_() on it first")
    edges, grads = _roots(outputs, grad_outputs, "autograd.grad")
    keep = create_graph if retain_graph is None else retain_graph
    captured: dict = {}
    targets = {_edge(t)[0]: captured for t in inputs}
    for _ in _run(edges, grads, keep, create_graph, targets, accumulate=False):
        pass
    results = []
    for i, t in enumerate(inputs):
        node, nr = _edge(t)
        g = captured.get((node, nr))
        if g is None:
            if materialize_grads:
                g = t.new_zeros(t.shape)
            elif not allow_unused:
                raise RuntimeError(
                    f"autograd.grad: one of the differentiated tensors (input {i}) appears to not have been used "
                    "in the graph. Set allow_unused=True if this is the desired behavior."
                )
        results.append(g)
    return tuple(results)


def _dependencies(root_nodes):
    """Count, for every node reachable from the roots, how many edges lead into it."""
    deps: dict = {}
    stack = list(root_nodes)
    seen = set(stack)
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is None:
                continue
            deps[child] = deps.get(child, 0) + 1
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return deps, seen


def _needed(nodes, targets):
    """The nodes that lie on a path to a target: the rest need not run when only targets matter."""
    needed = set(targets)
    changed = True
    order = list(nodes)
    while changed:  # a fixed point; graphs are shallow enough that this settles in a few passes
        changed = False
        for node in order:
            if node not in needed and any(child in needed for child, _ in node.next_functions):
                needed.add(node)
                changed = True
    return needed


def _run(edges, root_grads, keep_graph, create_graph, targets, accumulate):
    """The engine: Kahn's algorithm over the graph, newest node first among the ready ones."""
    deps, reachable = _dependencies({node for node, _ in edges})
    needed = _needed(reachable, targets) if targets is not None else None
    buffers: dict = {}
    for (node, nr), g in zip(edges, root_grads):
        _add_to_buffer(buffers, node, nr, g)
    tiebreak = itertools.count()
    ready = [(-node._seq, next(tiebreak), node) for node in buffers if deps.get(node, 0) == 0]
    heapq.heapify(ready)
    user_mode = grad_state.enabled
    index = 0
    try:
        while ready:
            node = heapq.heappop(ready)[2]
            grads_in = buffers.pop(node)
            grad_state.enabled = create_graph
            grads_out, leaf = _run_node(node, grads_in, targets, accumulate, create_graph, needed)
            for (child, nr), g in zip(node.next_functions, grads_out):
                if child is None or (needed is not None and child not in needed):
                    continue
                if g is not None:
                    _check_shape(node, child, nr, g)
                    _add_to_buffer(buffers, child, nr, g)
                elif child not in buffers:
                    buffers[child] = [None] * len(child._output_shapes)
                deps[child] -= 1
                if deps[child] == 0:
                    heapq.heappush(ready, (-child._seq, next(tiebreak), child))
            if not keep_graph:
                node._release()
            grad_state.enabled = user_mode
            yield BackwardStep(index, node, tuple(grads_in), grads_out, leaf)
            index += 1
    finally:
        grad_state.enabled = user_mode


def _run_node(node, grads_in, targets, accumulate, create_graph, needed):
    """Hooks, then the node's backward (or the leaf accumulation); returns its gradients."""
    if node._tensor_hooks:
        for nr, hooks in node._tensor_hooks.items():
            for hook in tuple(hooks):
                if grads_in[nr] is not None:
                    result = hook(grads_in[nr])
                    if result is not None:
                        grads_in[nr] = result
    if targets is not None and node in targets and targets[node] is not None:
        for nr, g in enumerate(grads_in):
            if g is not None:
                targets[node][(node, nr)] = g
    if isinstance(node, AccumulateGrad):
        leaf = node.variable
        g = grads_in[0]
        if g is None:
            return (), None
        for hook in tuple(leaf._hooks or ()) if getattr(leaf, "_hooks", None) else ():
            result = hook(g)
            if result is not None:
                g = grads_in[0] = result
        if accumulate and (targets is None or node in targets):
            _accumulate(leaf, g, create_graph)
            return (), leaf
        return (), None
    if needed is not None and not any(child in needed for child, _ in node.next_functions):
        return (None,) * len(node.next_functions), None
    if all(g is None for g in grads_in):
        return (None,) * len(node.next_functions), None
    if node._materialize_grads:
        present = next(g for g in grads_in if g is not None)
        for i, g in enumerate(grads_in):
            if g is None and node._output_shapes[i] is not None:
                grads_in[i] = present.new_zeros(node._output_shapes[i])
    if node._pre_hooks:
        for hook in tuple(node._pre_hooks):
            result = hook(tuple(grads_in))
            if result is not None:
                grads_in[:] = list(result)
    grads_out = node.function.backward(node, *grads_in)
    if not isinstance(grads_out, tuple):
        grads_out = (grads_out,)
    n_inputs = len(node.next_functions)
    if len(grads_out) != n_inputs:
        if len(grads_out) > n_inputs and all(g is None for g in grads_out[n_inputs:]):
            grads_out = grads_out[:n_inputs]
        else:
            raise RuntimeError(
                f"function {node.name()} returned an incorrect number of gradients (expected {n_inputs}, "
                f"got {len(grads_out)}): backward must return one gradient per input of forward (None for non-tensors)"
            )
    if node._post_hooks:
        for hook in tuple(node._post_hooks):
            result = hook(grads_out, tuple(grads_in))
            if result is not None:
                grads_out = tuple(result)
    if anomaly_state.enabled:
        check_gradients(node, grads_out)
    return grads_out, None


def _check_shape(node, child, nr, g) -> None:
    expected = child._output_shapes[nr]
    if expected is not None and tuple(g.shape) != tuple(expected):
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {nr} - got {list(g.shape)} but "
            f"expected shape compatible with {list(expected)}. A backward must return a gradient shaped like its input."
        )


def _add_to_buffer(buffers, node, nr, g) -> None:
    buffer = buffers.get(node)
    if buffer is None:
        buffer = buffers[node] = [None] * len(node._output_shapes)
    buffer[nr] = g if buffer[nr] is None else buffer[nr] + g


def _accumulate(leaf, g, create_graph) -> None:
    """Add a gradient into ``leaf.grad``; the first one is copied, since the engine may share it."""
    if leaf.grad is None:
        leaf.grad = g if create_graph else g.detach().clone()
    elif create_graph or leaf.grad.requires_grad:
        leaf.grad = leaf.grad + g
    else:
        leaf.grad.add_(g)

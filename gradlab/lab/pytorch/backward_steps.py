"""PyTorch's backward, one node at a time: its own nodes, called in the order its engine runs them.

PyTorch's engine (``torch/csrc/autograd/engine.cpp``) keeps, for each node, a buffer of the
gradients that reached it and a count of the edges still to report. A node whose count reaches 0
joins a ready queue, and the engine runs the ready node with the highest sequence number (an
``AccumulateGrad``'s is the highest there is, so a leaf's gradient is added as soon as it is
complete). Each result is checked against the input it goes to — summed back where that input was
broadcast, cast to its dtype — and added into that input's buffer. Here the same is done with
PyTorch's own pieces: each ``grad_fn`` is called on its buffer; nothing is freed (retain_graph).
"""

from __future__ import annotations

import torch

from ...autograd.engine import BackwardStep
from .graph import is_accumulator, reachable


def schedule(root) -> list:
    """The order PyTorch's engine runs the nodes reachable from ``root``: its ready queue replayed.

    The order depends only on the graph (a node joins the queue when its last consumer has run,
    whatever gradients it sent), so it is found once, before any node runs. The queue is a C++
    ``std::priority_queue`` on the sequence number; ``_Queue`` is libstdc++'s heap, step for step,
    so that nodes with the same number (several ready AccumulateGrads) leave it as they do there."""
    waiting: dict = {}
    for node in reachable(root):
        for child, _ in node.next_functions:
            if child is not None:
                waiting[child] = waiting.get(child, 0) + 1
    queue, order = _Queue(), []
    queue.push(root)
    while queue:
        node = queue.pop()
        order.append(node)
        for child, _ in node.next_functions:  # pushed in edge order, as evaluate_function does
            if child is not None:
                waiting[child] -= 1
                if not waiting[child]:
                    queue.push(child)
    return order


class _Queue:
    """``std::priority_queue<NodeTask, vector, CompareNodeTaskTime>`` as libstdc++ builds it: a max-heap on
    ``_sequence_nr()`` with ``std::push_heap`` / ``std::pop_heap``'s exact moves."""

    def __init__(self):
        self.heap: list = []  # (sequence number, node)

    def __bool__(self) -> bool:
        return bool(self.heap)

    def push(self, node) -> None:
        self.heap.append((node._sequence_nr(), node))
        self._sift_up(len(self.heap) - 1, 0, self.heap[-1])

    def pop(self):
        heap = self.heap
        top = heap[0]
        if len(heap) > 1:
            value = heap[-1]
            heap[-1] = heap[0]
            self._adjust(0, len(heap) - 1, value)
        heap.pop()
        return top[1]

    def _sift_up(self, hole: int, top: int, value) -> None:  # std::__push_heap
        heap = self.heap
        parent = (hole - 1) // 2
        while hole > top and heap[parent][0] < value[0]:
            heap[hole] = heap[parent]
            hole = parent
            parent = (hole - 1) // 2
        heap[hole] = value

    def _adjust(self, hole: int, length: int, value) -> None:  # std::__adjust_heap
        heap, top, child = self.heap, hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if heap[child][0] < heap[child - 1][0]:
                child -= 1
            heap[hole] = heap[child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            heap[hole] = heap[child - 1]
            hole = child - 1
        self._sift_up(hole, top, value)


class TorchRun:
    """The steps of one backward through PyTorch's nodes, one per ``next()``; ``checkpoint()`` notes where
    it stands (the gradients waiting in each buffer: references, never added into in place)."""

    def __init__(self, order: list, buffers: dict, index: int = 0, accumulate=None):
        self._order, self._buffers, self._index = order, buffers, index
        self._accumulate = accumulate or _accumulate_unwatched  # how an AccumulateGrad step adds into .grad
        self._closed = False

    @classmethod
    def start(cls, loss, order: list, accumulate=None) -> "TorchRun":
        root = loss.grad_fn
        buffer = [None] * len(root._input_metadata)
        buffer[loss.output_nr] = torch.ones_like(loss, memory_format=torch.preserve_format)  # as backward() seeds it
        return cls(order, {root: buffer}, 0, accumulate)

    def __iter__(self):
        return self

    def __next__(self) -> BackwardStep:
        if self._closed or self._index >= len(self._order):
            raise StopIteration
        index, node = self._index, self._order[self._index]
        grads_in = self._buffers.get(node) or [None] * max(1, len(node._input_metadata))
        with torch.no_grad():  # backward formulas run unrecorded, as in backward() without create_graph
            if is_accumulator(node):
                leaf, grads_in = self._accumulate(node, list(grads_in))
                step = BackwardStep(index, node, tuple(grads_in), (), leaf, ())
            else:
                grads_out = node_vjp(node, grads_in)
                targets = tuple(child for child, _ in node.next_functions)
                step = BackwardStep(index, node, tuple(grads_in), grads_out, None, targets)
                for (child, nr), g in zip(node.next_functions, grads_out):
                    if child is not None and g is not None:
                        buffer = self._buffers.setdefault(child, [None] * len(child._input_metadata))
                        buffer[nr] = g if buffer[nr] is None else buffer[nr] + g  # InputBuffer::accumulate
        self._buffers.pop(node, None)
        self._index += 1
        return step

    def close(self) -> None:
        self._closed = True

    @property
    def steps_taken(self) -> int:
        return self._index

    def checkpoint(self) -> "TorchCheckpoint":
        return TorchCheckpoint(self._index, self._order, {n: list(b) for n, b in self._buffers.items()},
                               self._accumulate)


class TorchCheckpoint:
    """A PyTorch run between two steps: ``resume()`` carries on from there, bit for bit, as often as asked."""

    def __init__(self, index, order, buffers, accumulate):
        self.index, self._order, self._buffers, self._accumulate = index, order, buffers, accumulate

    def resume(self) -> TorchRun:
        return TorchRun(self._order, {n: list(b) for n, b in self._buffers.items()}, self.index, self._accumulate)


def node_vjp(node, grads_in) -> tuple:
    """Call one PyTorch node on the gradients that reached it; one gradient per edge, each in the shape and
    dtype of the input it goes to (None where the edge leads nowhere or no gradient came back)."""
    if getattr(node, "_forward_cls", None) is not None:
        grads_out = _custom_vjp(node, grads_in)
    else:
        grads_out = node(*grads_in)
        grads_out = grads_out if isinstance(grads_out, tuple) else tuple(grads_out) if isinstance(grads_out, list) \
            else (grads_out,)
    if len(grads_out) != len(node.next_functions):
        raise RuntimeError(f"{node.name()} returned {len(grads_out)} gradients for its {len(node.next_functions)} "
                           "inputs: a backward returns one gradient per input")
    return tuple(_fitted(node, i, child, nr, g) for i, ((child, nr), g) in enumerate(zip(node.next_functions,
                                                                                           grads_out)))


def _custom_vjp(node, grads_in) -> tuple:
    """A custom ``torch.autograd.Function``'s node, reached through its ``apply`` (what PyTorch's PyNode calls):
    missing gradients become zeros first, and of its results — one per forward input — those for the inputs
    that require grad go to the node's edges, in order. (PyTorch does not let Python read
    ``ctx.set_materialize_grads(False)``: such a Function gets zeros here where PyTorch would give it None.)"""
    grads_in = [torch.zeros(m.shape, dtype=m.dtype, device=m.device) if g is None else g
                for g, m in zip(grads_in, node._input_metadata)]
    results = node.apply(*grads_in)
    results = results if isinstance(results, tuple) else (results,)
    needs = node.needs_input_grad
    if len(results) < len(needs) or any(r is not None for r in results[len(needs):]):
        raise RuntimeError(f"function {node.name()} returned an incorrect number of gradients (expected "
                           f"{len(needs)}, got {len(results)}): backward returns one gradient per input of "
                           "forward (None for those that need none)")
    wanted = iter(r for r, need in zip(results, needs) if need)  # in order, one per edge that leads somewhere
    return tuple(next(wanted) if child is not None else None for child, _ in node.next_functions)


def _fitted(node, i, child, nr, g):
    """validate_outputs: a gradient summed back to its input's shape (where the input was broadcast) and cast
    to its dtype, as PyTorch's engine does before passing it on."""
    if child is None or g is None:
        return None
    if not isinstance(g, torch.Tensor):
        raise TypeError(f"{node.name()} returned a {type(g).__name__} as the gradient of input {i}; a backward "
                        "returns tensors (or None)")
    metadata = child._input_metadata[nr]
    shape = tuple(metadata.shape)
    if tuple(g.shape) != shape:
        try:
            g = g.sum_to_size(shape)
        except RuntimeError:
            raise RuntimeError(f"Function {node.name()} returned an invalid gradient at index {i} - got "
                               f"{list(g.shape)} but expected shape compatible with {list(shape)}. A backward must "
                               "return a gradient shaped like its input") from None
    if g.dtype != metadata.dtype:
        g = g.to(metadata.dtype)
    return g


def accumulate(node, grads_in, watcher=None):
    """An AccumulateGrad step, as PyTorch's engine takes it: the leaf's tensor hooks, the node's pre-hooks,
    the node itself (it adds into .grad and runs the post-accumulate hooks), the node's post-hooks. Python
    cannot reach a node's hooks, so those run are ``watcher``'s (a stepper's ledger, which put them there)."""
    leaf = node.variable
    if grads_in[0] is None:
        return None, grads_in
    grads_in[0] = run_tensor_hooks(leaf, grads_in[0])
    if watcher is not None:
        watcher.before_accumulate(tuple(grads_in))
    node(grads_in[0])
    if leaf.grad is not None and leaf.grad.data_ptr() == grads_in[0].data_ptr():
        # AccumulateGrad may keep the gradient it is given as the new .grad; the step records and checkpoints
        # hold that one, and later steps add into .grad in place, so .grad gets its own
        leaf.grad = leaf.grad.clone()
    if watcher is not None:
        watcher.after_accumulate((), tuple(grads_in))
    return leaf, grads_in


def _accumulate_unwatched(node, grads_in):
    return accumulate(node, grads_in)


def run_tensor_hooks(leaf, grad):
    """The hooks of ``leaf.register_hook``, in order, each seeing (and perhaps replacing) the gradient, as
    PyTorch runs them before AccumulateGrad adds it (its post-accumulate hooks run inside the node itself)."""
    for hook in tuple((leaf._backward_hooks or {}).values()):
        result = hook(grad)
        if result is not None:
            grad = result
    return grad

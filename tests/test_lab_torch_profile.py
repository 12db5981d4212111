"""``gl.lab.profile(fn)`` on PyTorch: every node timed forward and backward, its saved bytes measured.

The nodes expected, and the bytes each saved, are read here from PyTorch itself (``next_functions``,
``_saved_*`` and their storages); no figure is compared with a time (times vary), only with being there.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
import gradlab as gl  # noqa: E402
from gradlab.lab.capture import CaptureError  # noqa: E402

F = torch.nn.functional


def mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    return model, torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])


def backward_nodes(root):
    seen, stack = {}, [root]
    while stack:
        node = stack.pop()
        if node is not None and id(node) not in seen:
            seen[id(node)] = node
            stack.extend(child for child, _ in node.next_functions)
    return list(seen.values())


def saved_storages(node):
    """{data pointer: bytes} of the storages of the tensors PyTorch says this node saved."""
    storages = {}
    for attribute in dir(node):
        if attribute.startswith("_saved_"):
            value = getattr(node, attribute)
            if isinstance(value, torch.Tensor):
                storages[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
    return storages


def test_every_node_backward_ran_has_its_backward_time_and_each_call_its_forward_time():
    model, x, y = mlp()
    prof = gl.lab.profile(lambda: F.cross_entropy(model(x), y))
    graph = prof.graph
    assert graph.source == "torch"
    ran = backward_nodes(prof.output.grad_fn)
    timed = {node_id for node_id, f in prof.figures.items() if f["backward_s"] is not None}
    assert timed == {graph.by_ref[id(node)] for node in ran}  # ops and AccumulateGrads alike
    assert all(prof.figures[i]["backward_s"] > 0 for i in timed)
    forward = {graph.nodes[i].op for i, f in prof.figures.items() if f["forward_s"] is not None}
    # one per call: linear, relu, linear, cross_entropy (its time on NllLoss, the node of what it returned)
    assert forward == {"AddmmBackward0", "ReluBackward0", "NllLossBackward0"}
    assert sum(1 for f in prof.figures.values() if f["forward_s"] is not None) == 4
    assert prof.figures[graph.by_ref[id(prof.output.grad_fn.next_functions[0][0])]]["forward_s"] is None


def test_the_memory_of_each_node_is_the_storage_it_saved_counted_once():
    model, x, y = mlp()
    prof = gl.lab.profile(lambda: F.cross_entropy(model(x), y))
    graph, unique = prof.graph, {}
    for node in backward_nodes(prof.output.grad_fn):
        if type(node).__name__ == "AccumulateGrad":
            continue
        storages = saved_storages(node)
        unique.update(storages)
        assert prof.figures[graph.by_ref[id(node)]]["saved_bytes"] == sum(storages.values()), node.name()
    relu = next(n for n in graph.nodes.values() if n.op == "ReluBackward0")
    assert prof.figures[relu.id]["saved_bytes"] == 5 * 8 * 4  # its float32 output
    assert prof.figures[relu.id]["saved_for_backward_bytes"] == 5 * 8 * 4  # made by the forward: held for backward
    fc1 = next(n for n in graph.nodes.values() if n.op == "AddmmBackward0" and n.group == "0")
    assert fc1.ref._saved_mat1 is x and prof.figures[fc1.id]["saved_for_backward_bytes"] == 0  # the data: held anyway
    assert prof.totals["saved_bytes"] == sum(unique.values())  # relu's output, saved twice, counted once
    assert prof.totals["saved_bytes"] < sum(prof.figures[i]["saved_bytes"] for i in prof.figures)


def test_profiling_leaves_the_gradients_as_they_were_or_keeps_backwards_own():
    model, x, y = mlp()
    model[0].weight.grad = mine = torch.ones_like(model[0].weight)
    prof = gl.lab.profile(lambda: F.cross_entropy(model(x), y))
    assert model[0].weight.grad is mine and model[2].weight.grad is None
    reference, _, _ = mlp()
    F.cross_entropy(reference(x), y).backward()
    model[0].weight.grad = None
    gl.lab.profile(lambda: F.cross_entropy(model(x), y), keep_grads=True)
    for (name, p), q in zip(model.named_parameters(), reference.parameters()):
        assert torch.equal(p.grad, q.grad), name
    first = next(n for n in prof.graph.nodes.values() if n.op == "NllLossBackward0")
    assert first.grad["mean"] == 1.0  # the gradient that reached the loss's node


def test_repeats_the_table_and_both_colour_modes_of_the_view():
    model, x, y = mlp()
    prof = gl.lab.profile(lambda: F.cross_entropy(model(x), y), repeats=3)
    assert prof.repeats == 3
    table = prof.table()
    assert "top 10 nodes by time (forward + backward)" in table and "NllLoss" in table and "Addmm" in table
    assert "medians of 3 runs" in table
    memory = prof.table(by="memory")
    assert memory.splitlines()[1].split() == ["node", "module", "saved", "only", "for", "backward"]
    assert "Relu" in memory
    view = gl.lab.GraphView(prof, color="time")
    assert view.color_mode == "time" and view.tables["time"]["rows"]
    assert {"time", "forward", "backward", "memory"} <= set(view.color_labels)
    by_memory = gl.lab.GraphView(prof, color="memory")
    rows = by_memory.tables["memory"]["rows"]
    assert [r["cells"][0] for r in rows][0] == "Addmm"  # fc2's Addmm saved the most: relu's output and fc2's weight
    view.close(), by_memory.close()


def test_a_recordings_view_times_the_forward_and_then_the_backward_you_run():
    model, x, y = mlp()
    with gl.lab.record() as rec:
        loss = F.cross_entropy(model(x), y)
    view = gl.lab.GraphView(rec, color="time")
    assert all(row["cells"][3] == "—" for row in view.tables["time"]["rows"])  # no backward yet
    loss.backward()
    view.refresh()
    relu = next(n for n in view.graph.nodes.values() if n.op == "ReluBackward0")
    assert view._figures[relu.id]["forward_s"] > 0 and view._figures[relu.id]["backward_s"] > 0
    view.close()


def test_what_cannot_be_profiled_is_said():
    model, x, y = mlp()
    with pytest.raises(CaptureError, match=r"backward starts from one number, but fn returned a torch tensor of "
                                           r"shape \[5, 3\]"):
        gl.lab.profile(lambda: model(x))
    loss = F.cross_entropy(model(x), y)
    with pytest.raises(CaptureError, match="computed before profile ran it"):
        gl.lab.profile(lambda: loss)
    with pytest.raises(CaptureError, match="no graph"):
        gl.lab.profile(lambda: x.sum())

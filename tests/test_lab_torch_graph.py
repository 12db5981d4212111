"""The lab draws PyTorch's own backward graph: ``gl.lab.GraphView(torch_loss)``.

Node names, edges and shapes are PyTorch's (read here again from ``grad_fn`` by the test itself);
leaves are named by the model; what each node saved is shown, and said to be freed after backward.
(tests/test_lab_without_torch.py: nothing else in gradlab imports torch.)
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
import gradlab as gl  # noqa: E402


class Cube(torch.autograd.Function):
    """x³: the local derivative is 3x²."""

    derivative = "∂L/∂x = 3x²·g"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


def _mlp_loss():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 2))
    loss = Cube.apply(model(torch.randn(5, 3))).relu().mean()
    return model, loss


def _pytorch_edges(root):
    """(child name, parent name) for each edge PyTorch holds, read straight from grad_fn."""
    edges, seen, stack = [], {root}, [root]
    while stack:
        node = stack.pop()
        for child, _ in node.next_functions:
            if child is not None:
                edges.append((child.name(), node.name()))
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    return sorted(edges)


def test_the_graph_is_pytorchs_own_with_its_node_names():
    model, loss = _mlp_loss()
    graph = gl.lab.capture(loss, names=model)
    assert graph.source == "torch"
    named = {n.id: (n.op if n.kind == "op" else "torch::autograd::AccumulateGrad") for n in graph.nodes.values()}
    drawn = sorted((named[a], named[b]) for a, b in graph.edges)
    assert drawn == _pytorch_edges(loss.grad_fn)
    ops = [n.op for n in graph.nodes.values() if n.kind == "op"]
    assert ops == ["TBackward0", "AddmmBackward0", "TanhBackward0", "TBackward0", "AddmmBackward0", "CubeBackward",
                   "ReluBackward0", "MeanBackward0"]  # the order forward ran them in
    assert graph.nodes[graph.outputs[0]].op == "MeanBackward0"
    assert graph.nodes[graph.outputs[0]].value["values"] == [pytest.approx(loss.item())]


def test_leaves_are_named_by_the_model_or_by_names():
    model, loss = _mlp_loss()
    by_model = {n.label for n in gl.lab.capture(loss, names=model).nodes.values() if n.kind == "param"}
    assert by_model == {"0.weight", "0.bias", "2.weight", "2.bias"}
    by_dict = gl.lab.capture(loss, names={"W1": model[0].weight})
    assert {n.label for n in by_dict.nodes.values() if n.kind != "op"} == {"W1", "leaf"}
    unnamed = gl.lab.capture(loss)
    assert {n.kind for n in unnamed.nodes.values() if n.kind != "op"} == {"leaf"}


def test_shapes_dtype_and_what_each_node_saved():
    model, loss = _mlp_loss()
    graph = gl.lab.capture(loss, names=model)
    tanh = next(n for n in graph.nodes.values() if n.op == "TanhBackward0")
    assert (tanh.input_shapes, tanh.output_shape, tanh.dtype, tanh.device) == ([[5, 4]], [5, 4], "float32", "cpu")
    (result,) = tanh.saved
    assert result["name"] == "result" and result["shape"] == [5, 4]
    assert result["max"] == pytest.approx(tanh.ref._saved_result.max().item())
    addmm = next(n for n in graph.nodes.values() if n.op == "AddmmBackward0" and n.input_shapes[1] == [5, 4])
    saved = {entry["name"]: entry for entry in addmm.saved}
    assert saved["alpha"]["text"] == "1" and saved["mat1"]["shape"] == [5, 4]
    cube = next(n for n in graph.nodes.values() if n.op == "CubeBackward")
    assert cube.label == "Cube" and cube.saved[0]["name"] == "saved_tensors[0]"
    assert cube.words == "x³: the local derivative is 3x²." and cube.math == "∂L/∂x = 3x²·g"
    assert "1 − out²" in tanh.math and tanh.category == "elementwise"


def test_after_backward_the_saved_values_are_said_to_be_freed():
    model, loss = _mlp_loss()
    loss.backward()
    graph = gl.lab.capture(loss, names=model)
    assert graph.freed
    tanh = next(n for n in graph.nodes.values() if n.op == "TanhBackward0")
    assert tanh.saved == [{"name": "freed", "freed": True}]
    weight = next(n for n in graph.nodes.values() if n.label == "2.weight")
    assert weight.grad["norm"] == pytest.approx(model[2].weight.grad.norm().item())


def test_graph_view_draws_it_and_colours_the_gradients_a_later_backward_brings():
    model, loss = _mlp_loss()
    view = gl.lab.GraphView(loss, names=model)
    assert "Addmm" in view.svg and "0.weight" in view.svg
    assert view.color_mode == "kind"
    loss.backward()
    view.refresh()
    assert view.color_mode == "grad"
    tanh = next(n for n in view.graph.nodes.values() if n.op == "TanhBackward0")
    assert tanh.grad is not None and tanh.grad["shape"] == [5, 4]
    bias = next(n for n in view.graph.nodes.values() if n.label == "0.bias")
    assert bias.grad["norm"] == pytest.approx(model[0].bias.grad.norm().item())


def test_bfloat16_values_are_summarised():
    x = torch.randn(3, 2, requires_grad=True)
    loss = (x.to(torch.bfloat16) * 2).sum()
    graph = gl.lab.capture(loss)
    mul = next(n for n in graph.nodes.values() if n.op == "MulBackward0")
    assert mul.dtype == "bfloat16"
    assert graph.nodes[graph.outputs[0]].value["dtype"] == "bfloat16"


def test_bad_input_is_named():
    leaf = torch.randn(3, requires_grad=True)
    with pytest.raises(gl.lab.CaptureError, match=r"this torch tensor \(shape \[3\]\) has no graph to draw: it is a leaf"):
        gl.lab.GraphView(leaf)
    with pytest.raises(TypeError, match=r"got a model \(Linear\), not what it computed"):
        gl.lab.GraphView(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match=r"names= takes .*its entry 0 pairs"):
        gl.lab.GraphView((leaf * 2).sum(), names={"w": 3})


def test_a_node_whose_saved_numbers_outlive_backward_is_still_said_to_be_freed():
    from gradlab.lab.pytorch.graph import is_freed
    model, loss = _mlp_loss()
    addmm = next(n for n in gl.lab.capture(loss).nodes.values() if n.op == "AddmmBackward0").ref
    assert not is_freed(addmm)
    loss.backward()
    assert addmm._saved_alpha == 1  # a number it saved is still there ...
    assert is_freed(addmm)  # ... but its tensors are gone


def test_a_big_leaf_is_summarised_when_first_read_and_says_if_it_changed_by_then():
    torch.manual_seed(0)
    weight = torch.randn(64, 64, requires_grad=True)  # 4,096 values: summarised when first read
    loss = (torch.randn(3, 64) @ weight).sum()
    graph = gl.lab.capture(loss, names={"W": weight})
    node = next(n for n in graph.nodes.values() if n.label == "W")
    assert node.norm("value") == pytest.approx(weight.norm().item(), rel=1e-6)  # (the colours need it at once)
    with torch.no_grad():
        weight.mul_(2)
    value = node.value
    assert value["max"] == pytest.approx(weight.max().item())  # its values now ...
    assert "changed in place since drawn (version 0 → 1)" in value["changed"]  # ... said to be so

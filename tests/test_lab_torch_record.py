"""``with gl.lab.record() as rec:`` around PyTorch code: PyTorch's nodes, in modules, with your lines.

What the graph should say is read here straight from PyTorch (``grad_fn``, ``next_functions``,
``named_modules``, ``_saved_*``) and from this file's own text, never from the code under test.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
import gradlab as gl  # noqa: E402
from gradlab.lab.capture import CaptureError  # noqa: E402
from gradlab.lab.pytorch.rules import RULES  # noqa: E402

F = torch.nn.functional
THIS_FILE = Path(__file__).read_text().splitlines()


def line_of(code: str) -> str:
    """'test_lab_torch_record.py, line N' of the one line of this file that holds ``code``."""
    numbers = [i + 1 for i, line in enumerate(THIS_FILE) if code in line]
    assert len(numbers) == 1, f"{code!r} is on lines {numbers} of this file"
    return f"{Path(__file__).name}, line {numbers[0]}"


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.act = torch.nn.ReLU(inplace=True)  # overwrites fc1's output: the graph must show it as computed
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        h = self.act(self.fc1(x))  # line: MLP hidden
        return self.fc2(h)  # line: MLP out


def recorded_mlp():
    torch.manual_seed(0)
    model, x, y = MLP(), torch.randn(5, 4), torch.tensor([0, 1, 2, 0, 1])
    computed = {}
    model.fc1.register_forward_hook(lambda m, a, out: computed.update(fc1=out.detach().clone()))  # (returns None)
    with gl.lab.record() as rec:
        loss = F.cross_entropy(model(x), y)  # line: the loss
    return model, x, y, loss, rec, computed


def pytorch_nodes_in_order(root):
    """Every non-leaf node backward runs from ``root``, in the order forward made them (sequence numbers)."""
    seen, stack = {}, [root]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or type(node).__name__ == "AccumulateGrad":
            continue
        seen[id(node)] = node
        stack.extend(child for child, _ in node.next_functions)
    return sorted(seen.values(), key=lambda n: n._sequence_nr())


def ops(graph):
    return [n for n in graph.nodes.values() if n.kind == "op"]


def test_every_node_backward_runs_is_drawn_in_forward_order_with_pytorchs_names_and_refs():
    _, _, _, loss, rec, _ = recorded_mlp()
    graph = gl.lab.capture(rec)
    assert graph.source == "torch"
    expected = pytorch_nodes_in_order(loss.grad_fn)
    assert [n.op for n in ops(graph)] == [node.name() for node in expected]
    assert [n.op for n in ops(graph)][-2:] == ["LogSoftmaxBackward0", "NllLossBackward0"]  # cross_entropy's two
    for box, node in zip(ops(graph), expected):
        assert box.ref is node and graph.by_ref[id(node)] == box.id
    assert graph.outputs == [graph.by_ref[id(loss.grad_fn)]]


def test_edges_are_pytorchs_next_functions_plus_the_data_each_call_took():
    model, x, y, loss, rec, _ = recorded_mlp()
    graph = gl.lab.capture(rec)
    expected = set()
    for node in pytorch_nodes_in_order(loss.grad_fn):
        for child, _ in node.next_functions:
            if child is not None:
                expected.add((graph.by_ref[id(child)], graph.by_ref[id(node)]))
    fc1 = next(n for n in ops(graph) if n.op == "AddmmBackward0" and n.group == "fc1")
    data = {(graph.by_ref[id(x)], fc1.id), (graph.by_ref[id(y)], graph.by_ref[id(loss.grad_fn)])}  # targets: NllLoss
    assert set(graph.edges) == expected | data


def test_module_groups_are_pytorchs_module_names_and_leaves_are_named_by_module_path():
    model, x, _, loss, rec, _ = recorded_mlp()
    graph = gl.lab.capture(rec)
    children = [name for name, _ in model.named_modules() if name]
    assert list(graph.groups) == ["MLP", *children]
    assert {g.parent for gid, g in graph.groups.items() if gid != "MLP"} == {"MLP"}
    assert [n.group for n in ops(graph)] == ["fc1", "fc1", "act", "fc2", "fc2", None, None]  # T, Addmm, Relu, ...
    leaves = {n.label: n for n in graph.nodes.values() if n.kind == "param"}
    assert set(leaves) == {name for name, _ in model.named_parameters()}
    for name, param in model.named_parameters():
        assert leaves[name].ref is param and leaves[name].group == name.split(".")[0]
        assert graph.by_ref[id(param)] == leaves[name].id
    assert graph.nodes[graph.by_ref[id(x)]].kind == "input" and graph.nodes[graph.by_ref[id(x)]].label == "input"


def test_each_op_has_the_line_of_this_file_that_made_it():
    _, _, _, _, rec, _ = recorded_mlp()
    graph = gl.lab.capture(rec)
    hidden, out, the_loss = (line_of("# line: " + what) for what in ("MLP hidden", "MLP out", "the loss"))
    assert [n.source for n in ops(graph)] == [hidden, hidden, hidden, out, out, the_loss, the_loss]
    assert ops(graph)[0].code == "h = self.act(self.fc1(x))  # line: " + "MLP hidden"


def test_values_are_as_forward_computed_them_though_an_in_place_relu_overwrote_one():
    _, _, _, loss, rec, computed = recorded_mlp()
    graph = gl.lab.capture(rec)
    fc1 = next(n for n in ops(graph) if n.op == "AddmmBackward0" and n.group == "fc1")
    before_relu = computed["fc1"]
    assert before_relu.min() < 0  # (so a value read after ReLU wrote over it would differ)
    assert fc1.value["min"] == pytest.approx(before_relu.min().item())
    assert fc1.value["mean"] == pytest.approx(before_relu.double().mean().item())
    relu = next(n for n in ops(graph) if n.op == "ReluBackward0")
    assert relu.value["min"] == 0.0 and relu.value["max"] == pytest.approx(before_relu.max().item())
    assert graph.nodes[graph.outputs[0]].value["mean"] == pytest.approx(loss.item())


def test_what_each_node_saved_and_its_rule_in_words_are_pytorchs():
    _, x, _, _, rec, _ = recorded_mlp()
    graph = gl.lab.capture(rec)
    for box in ops(graph):
        names = sorted(a[len("_saved_"):] for a in dir(box.ref) if a.startswith("_saved_"))
        assert sorted(s["name"] for s in box.saved) == names
        assert box.words == RULES[box.label][1]
    fc1 = next(n for n in ops(graph) if n.op == "AddmmBackward0" and n.group == "fc1")
    mat1 = next(s for s in fc1.saved if s["name"] == "mat1")
    assert fc1.ref._saved_mat1 is x and mat1["shape"] == [5, 4] and mat1["mean"] == pytest.approx(x.double().mean().item())


def test_a_later_backward_colours_the_view_with_pytorchs_gradients():
    model, _, _, loss, rec, _ = recorded_mlp()
    view = gl.lab.GraphView(rec)
    assert all(n.grad is None for n in ops(view.graph))
    loss.backward()
    view.refresh()
    out = view.graph.nodes[view.graph.outputs[0]]
    assert out.grad["mean"] == 1.0  # d loss / d loss
    for name, param in model.named_parameters():
        leaf = view.graph.nodes[view.graph.by_ref[id(param)]]
        assert leaf.grad["norm"] == pytest.approx(param.grad.double().norm().item())
    assert view.color_mode == "grad"
    view.close()


def test_a_second_call_of_a_module_is_its_own_group_and_the_module_list_names_its_blocks():
    class Shared(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)])

        def forward(self, x):
            for layer in self.layers:
                x = torch.tanh(layer(x))
            return self.layers[0](x)

    model = Shared()
    with gl.lab.record() as rec:
        out = model(torch.randn(2, 3)).sum()
    graph = gl.lab.capture(rec)
    assert list(graph.groups) == ["Shared", "layers.0", "layers.1", "layers.0#2"]
    assert [n.group for n in ops(graph)].count("layers.0#2") == 2  # its T and Addmm
    weight = [n for n in graph.nodes.values() if n.kind == "param" and n.ref is model.layers[0].weight]
    assert len(weight) == 1 and weight[0].label == "layers.0.weight"  # one leaf, used by both calls
    assert [n.op for n in ops(graph)] == [node.name() for node in pytorch_nodes_in_order(out.grad_fn)]


def test_a_cnn_with_batch_norm_names_its_buffers_and_its_data():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 2, 3), torch.nn.BatchNorm2d(2), torch.nn.ReLU(),
                                torch.nn.Flatten(), torch.nn.Linear(2 * 4 * 4, 3))
    x = torch.randn(2, 1, 6, 6)
    with gl.lab.record() as rec:
        loss = model(x).logsumexp(dim=1).mean()
    graph = gl.lab.capture(rec)
    assert [n.op for n in ops(graph)] == [node.name() for node in pytorch_nodes_in_order(loss.grad_fn)]
    inputs = {n.label: n for n in graph.nodes.values() if n.kind == "input"}
    assert {"input", "1.running_mean", "1.running_var"} <= set(inputs)
    assert inputs["1.running_mean"].ref is model[1].running_mean and inputs["1.running_mean"].group == "1"
    assert {n.label for n in graph.nodes.values() if n.kind == "param"} == {n for n, _ in model.named_parameters()}


class Cube(torch.autograd.Function):
    """x³: the local derivative is 3x²."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * x * x * g


def test_in_place_writes_and_a_custom_function_are_drawn_as_pytorch_holds_them():
    w = torch.randn(3, requires_grad=True)
    with gl.lab.record() as rec:
        c = Cube.apply(w * 2)
        b = c.clone()
        cloned = b.detach().clone()  # (no grad_fn: not drawn)
        b.add_(1)
        b[0] = 5.0  # line: a setitem
        loss = b.sum()
    graph = gl.lab.capture(rec)
    assert [n.op for n in ops(graph)] == [node.name() for node in pytorch_nodes_in_order(loss.grad_fn)]
    by_op = {n.op: n for n in ops(graph)}
    assert "custom autograd.Function" in by_op["CubeBackward"].words and by_op["CubeBackward"].source == ""
    assert by_op["CubeBackward"].value["mean"] == pytest.approx(c.detach().double().mean().item())
    assert by_op["CloneBackward0"].value["mean"] == pytest.approx(cloned.double().mean().item())  # before add_
    assert by_op["AddBackward0"].value["mean"] == pytest.approx((cloned + 1).double().mean().item())  # before b[0]=
    assert by_op["torch::autograd::CopySlices"].source == line_of("# line: a " + "setitem")


def test_a_recording_of_both_engines_says_it_cannot_draw_them_as_one_graph():
    with gl.lab.record() as rec:
        torch.randn(2, requires_grad=True).mul(2)
        gl.tensor([1.0, 2.0], requires_grad=True).mul(2)
    with pytest.raises(CaptureError, match="1 gradlab operations and 1 PyTorch calls; the two engines' graphs "
                                           "do not connect"):
        gl.lab.capture(rec)
    assert len(rec) == 2 and "2 operations" in repr(rec)


def test_another_threads_torch_calls_are_not_recorded():
    w = torch.randn(3, requires_grad=True)
    done = []
    with gl.lab.record() as rec:
        mine = w * 2
        thread = threading.Thread(target=lambda: done.append(w.exp()))
        thread.start()
        thread.join()
    assert [e.name for e in rec.torch.events] == ["mul"]
    assert done and [n.op for n in ops(gl.lab.capture(rec))] == ["MulBackward0"]
    assert mine.grad_fn is rec.torch.output.grad_fn


def test_a_recording_made_without_torch_imported_does_not_load_it():
    code = ("import sys, gradlab as gl\nwith gl.lab.record() as rec:\n    gl.tensor([1.0], requires_grad=True).mul(2)\n"
            "gl.lab.capture(rec)\nassert 'torch' not in sys.modules, 'torch was loaded'\nprint(rec.torch)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "None"


def test_what_was_computed_before_the_recording_is_one_box_that_says_so():
    w = torch.randn(3, requires_grad=True)
    h = (w * 2).exp()  # before the recording: its history is not drawn
    with gl.lab.record() as rec:
        loss = (h * 3).sum()
    graph = gl.lab.capture(rec)
    assert [n.op for n in ops(graph)] == ["MulBackward0", "SumBackward0"]
    before = graph.nodes[graph.by_ref[id(h)]]
    assert before.label == "computed before recording" and before.op == "ExpBackward0"
    assert before.ref is h.grad_fn and "computed before the recording started" in before.words
    assert before.value["mean"] == pytest.approx(h.detach().double().mean().item())
    assert all(n.ref is not w for n in graph.nodes.values())


def test_an_input_that_needs_no_gradient_still_has_its_shape_in_the_box():
    conv, x = torch.nn.Conv2d(1, 2, 3), torch.randn(2, 1, 5, 5)
    with gl.lab.record() as rec:
        conv(x).sum()
    box = next(n for n in ops(gl.lab.capture(rec)) if n.op == "ConvolutionBackward0")
    assert box.ref.next_functions[0][0] is None  # PyTorch keeps no node for the data
    assert box.input_shapes == [[2, 1, 5, 5], [2, 1, 3, 3], [2]]


def test_the_recordings_output_is_the_last_torch_tensor_with_a_graph():
    m = torch.nn.Linear(3, 2)
    with gl.lab.record() as rec:
        loss = m(torch.randn(4, 3)).tanh().sum()
        loss.detach()
    assert rec.output is loss and len(rec) == 3
    assert "3 operations in 1 module calls" in repr(rec)


def test_a_transformer_layer_draws_the_nodes_multi_head_attention_makes_inside_one_call():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=16, nhead=2, dim_feedforward=32, norm_first=True,
                                             batch_first=True)
    lstm = torch.nn.LSTM(16, 8, batch_first=True)
    with gl.lab.record() as rec:
        out, (h, c) = lstm(layer(torch.randn(3, 5, 16)))  # line: the layer
        loss = out.pow(2).mean()
    graph = gl.lab.capture(rec)
    reached = {id(node) for node in pytorch_nodes_in_order(loss.grad_fn)}
    drawn = [n for n in ops(graph) if id(n.ref) in reached]
    assert [n.op for n in drawn] == [node.name() for node in pytorch_nodes_in_order(loss.grad_fn)]
    unreached = [n.ref for n in ops(graph) if id(n.ref) not in reached]  # the LSTM's h and c: made, not in the loss
    assert {id(node) for node in unreached} == {id(h.grad_fn), id(c.grad_fn)}
    attention = [n for n in ops(graph) if n.group == "self_attn"]
    assert len(attention) > 20 and {"BmmBackward0", "AddBackward0"} <= {n.op for n in attention}  # one call, many nodes
    assert {n.source for n in attention} == {line_of("# line: " + "the layer")}
    names = {name for name, _ in layer.named_modules() if name} - {"self_attn.out_proj"}  # (F.linear'd, not called)
    assert set(graph.groups) == names | {"TransformerEncoderLayer", "LSTM"}


def test_a_saved_tensor_changed_in_place_since_is_said_to_make_backward_fail():
    w = torch.randn(3, requires_grad=True)
    with gl.lab.record() as rec:
        y = w.exp()  # exp saves its result...
        y.add_(1)  # ...which this changes: PyTorch's backward will refuse it
        loss = y.sum()
    graph = gl.lab.capture(rec)
    exp = next(n for n in ops(graph) if n.op == "ExpBackward0")
    assert [s["name"] for s in exp.saved] == ["result"]
    assert "backward will raise an error" in exp.saved[0]["changed"]
    assert exp.value["mean"] == pytest.approx((y.detach() - 1).double().mean().item(), rel=1e-6)  # as exp made it
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()
    assert "backward will raise" in gl.lab.capture(y).nodes[gl.lab.capture(y).by_ref[id(exp.ref)]].saved[0]["changed"]


def test_names_label_the_leaves_and_data_no_module_owns():
    w, x = torch.randn(3, requires_grad=True), torch.randn(3)
    with gl.lab.record() as rec:
        loss = (w * x).sum()
    graph = gl.lab.capture(rec, names={"w": w, "x": x})
    assert graph.nodes[graph.by_ref[id(w)]].label == "w" and graph.nodes[graph.by_ref[id(w)]].kind == "param"
    assert graph.nodes[graph.by_ref[id(x)]].label == "x" and graph.nodes[graph.by_ref[id(x)]].kind == "input"
    unnamed = gl.lab.capture(rec)
    assert unnamed.nodes[unnamed.by_ref[id(w)]].label == "leaf"


def test_each_call_of_a_library_module_has_the_line_that_called_it():
    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Tanh())

        def forward(self, x):
            a = self.seq(x)  # line: seq once
            return self.seq(a)  # line: seq twice

    with gl.lab.record() as rec:
        Twice()(torch.randn(2, 3)).sum()
    graph = gl.lab.capture(rec)
    once, twice = (line_of("# line: seq " + which) for which in ("once", "twice"))
    assert [n.source for n in ops(graph)][:-1] == [once] * 3 + [twice] * 3  # T, Addmm, Tanh each time

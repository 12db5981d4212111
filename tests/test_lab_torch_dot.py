"""``gl.lab.make_dot`` on PyTorch draws what torchviz's ``make_dot`` draws.

torchviz is not a dependency, so the expected picture comes from torchviz's rules applied by the test
itself, straight to ``grad_fn`` (as torchviz/dot.py walks it): a grey box per node named by its class,
a light blue box per ``AccumulateGrad.variable`` named by ``params`` and its size, the output green,
with ``show_saved`` an orange box per ``_saved_*`` tensor, with ``show_attrs`` the ``_saved_*`` table.
"""

from __future__ import annotations

from collections import Counter

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
pytest.importorskip("graphviz", reason="the graphviz package is not installed (pip install 'gradlab[lab]')")
import gradlab as gl  # noqa: E402
from dot_text import boxes, labelled_edges, parse  # noqa: E402

SAVED = "_saved_"


def torchviz_picture(var, params=None, show_attrs=False, show_saved=False, max_attr_chars=50):
    """(boxes, edges) as Counters of (label, fill) and (tail label, head label, dir): torchviz's rules."""
    names = {id(v): k for k, v in (params or {}).items()}
    nodes, edges, seen, kept = {}, [], set(), []

    def tensor_label(t, name=None):
        return "%s\n %s" % (name or names.get(id(t), ""), "(" + ", ".join("%d" % n for n in t.size()) + ")")

    def saved(fn):
        found = []
        for attr in dir(fn):
            if attr.startswith(SAVED):
                found.append((attr[len(SAVED):], getattr(fn, attr)))
                kept.append(found[-1][1])  # (alive, so that no id is reused)
        return found

    def fn_label(fn):
        name = type(fn).__name__
        attrs = {}
        for attr, value in saved(fn) if show_attrs else ():
            if torch.is_tensor(value):
                attrs[attr] = "[saved tensor]"
            elif isinstance(value, tuple) and any(torch.is_tensor(t) for t in value):
                attrs[attr] = "[saved tensors]"
            else:
                attrs[attr] = str(value)
        if not attrs:
            return name
        width = max(len(k) for k in attrs)
        value_width = min(max(len(v) for v in attrs.values()), max(max_attr_chars, 3))
        rows = ["%-*s: %*s" % (width, k, value_width, v if len(v) <= value_width else v[:value_width - 3] + "...")
                for k, v in attrs.items()]
        return "\n".join([name, "-" * max(width + value_width + 2, len(name)), *rows])

    def add(fn):
        if fn in seen:
            return
        seen.add(fn)
        for attr, value in saved(fn) if show_saved else ():
            if torch.is_tensor(value):
                edges.append((id(fn), id(value), "none"))
                nodes[id(value)] = (tensor_label(value, attr), "orange")
        if hasattr(fn, "variable"):
            nodes[id(fn.variable)] = (tensor_label(fn.variable), "lightblue")
            edges.append((id(fn.variable), id(fn), None))
        nodes[id(fn)] = (fn_label(fn), "lightgrey")
        for child, _ in fn.next_functions:
            if child is not None:
                edges.append((id(child), id(fn), None))
                add(child)

    for out in var if isinstance(var, tuple) else (var,):
        nodes[id(out)] = (tensor_label(out), "darkolivegreen1")
        add(out.grad_fn)
        edges.append((id(out.grad_fn), id(out), None))
    return (Counter(nodes.values()), Counter((nodes[t][0], nodes[h][0], d) for t, h, d in edges))


def _mlp():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    return model, model(torch.randn(1, 8)).mean()


def _cnn():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3), torch.nn.ReLU(), torch.nn.MaxPool2d(2), torch.nn.Flatten(),
                                torch.nn.Linear(36, 3))
    logits = model(torch.randn(2, 1, 8, 8))
    return model, torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2]))


class Tied(torch.nn.Module):
    """One weight used twice: one AccumulateGrad, two uses."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        return torch.tanh(x @ self.w) @ self.w


def test_an_mlp_is_drawn_as_torchviz_draws_it():
    model, loss = _mlp()
    params = dict(model.named_parameters())
    dot = gl.lab.make_dot(loss, params=params)
    assert (boxes(dot), labelled_edges(dot)) == torchviz_picture(loss, params)
    # the names a PyTorch user knows: Linear is addmm(bias, x, weightᵀ)
    assert {"AddmmBackward0", "TBackward0", "AccumulateGrad", "TanhBackward0", "MeanBackward0"} == \
        {label for label, fill in boxes(dot) if fill == "lightgrey"}
    assert labelled_edges(dot)[("AccumulateGrad", "TBackward0", None)] == 2
    assert ("0.weight\n (16, 8)", "lightblue") in boxes(dot)


def test_an_mlp_with_show_attrs_and_show_saved_is_drawn_as_torchviz_draws_it():
    model, loss = _mlp()
    params = dict(model.named_parameters())
    for options in (dict(show_attrs=True), dict(show_saved=True),
                    dict(show_attrs=True, show_saved=True, max_attr_chars=8)):
        dot = gl.lab.make_dot(loss, params=params, **options)
        assert (boxes(dot), labelled_edges(dot)) == torchviz_picture(loss, params, **options), options
    tables = [label for label, _ in boxes(gl.lab.make_dot(loss, show_attrs=True))]
    assert any(label.startswith("AddmmBackward0\n") and "\nmat1            : [saved tensor]\n" in label
               for label in tables)


def test_a_cnn_and_a_shared_weight_are_drawn_as_torchviz_draws_them():
    for model, loss in (_cnn(), (Tied(), None)):
        if loss is None:
            loss = model(torch.randn(3, 4)).sum()
        params = dict(model.named_parameters())
        dot = gl.lab.make_dot(loss, params=params, show_attrs=True)
        assert (boxes(dot), labelled_edges(dot)) == torchviz_picture(loss, params, show_attrs=True), type(model)
    tied = boxes(gl.lab.make_dot(loss, params=model))
    assert tied[("w\n (4, 4)", "lightblue")] == 1 and tied[("AccumulateGrad", "lightgrey")] == 1


def test_a_tuple_of_outputs_is_drawn_as_torchviz_draws_it():
    model, loss = _mlp()
    hidden = model[1](model[0](torch.randn(2, 8)))
    outputs = (loss, hidden.sum(), model[2](hidden).max())
    params = dict(model.named_parameters())
    dot = gl.lab.make_dot(outputs, params=params)
    assert (boxes(dot), labelled_edges(dot)) == torchviz_picture(outputs, params)
    assert boxes(dot)[("\n ()", "darkolivegreen1")] == 3


def test_a_custom_function_is_drawn_by_its_node_name():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

    x = torch.randn(3, requires_grad=True)
    dot = gl.lab.make_dot(Cube.apply(x).sum(), params={"x": x}, show_saved=True)
    edges = labelled_edges(dot)
    assert edges[("AccumulateGrad", "CubeBackward", None)] == 1 and edges[("CubeBackward", "SumBackward0", None)] == 1
    assert edges[("CubeBackward", "saved_tensors[0]\n (3)", "none")] == 1  # what its ctx saved


def test_a_torch_model_as_params_names_its_parameters():
    model, loss = _mlp()
    named = dict(model.named_parameters())
    assert boxes(gl.lab.make_dot(loss, params=model)) == boxes(gl.lab.make_dot(loss, params=named))


def test_graphview_to_dot_draws_pytorchs_graph_as_the_view_does():
    model, loss = _mlp()
    view = gl.lab.GraphView(loss, names=model)
    found = parse(view.to_dot().source)
    labels = sorted(a["label"] for a in found["nodes"].values())
    assert "Addmm\n1×16" in labels and "0.weight\n16×8" in labels and labels.count("T\n8×16") == 1
    assert len(found["nodes"]) == len(view.graph.nodes) and len(found["edges"]) == len(view.graph.edges)

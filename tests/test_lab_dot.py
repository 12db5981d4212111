"""``gl.lab.make_dot``: a gradlab graph as Graphviz's DOT, box for box as torchviz draws PyTorch's.

The DOT text is what is checked (labels, fills, edges), never a rendering: Graphviz's ``dot`` program
is not assumed. Without it, rendering says what to install and a notebook shows gradlab's own drawing;
without the graphviz package, the error says pip install 'gradlab[lab]'.
(tests/test_lab_torch_dot.py: the same on PyTorch, against torchviz's rules.)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter

import pytest

pytest.importorskip("graphviz", reason="the graphviz package is not installed (pip install 'gradlab[lab]')")
import graphviz  # noqa: E402

import gradlab as gl  # noqa: E402
from dot_text import boxes, labelled_edges, parse  # noqa: E402

GREY, BLUE, ORANGE, GREEN = "lightgrey", "lightblue", "orange", "darkolivegreen1"


def _mlp():
    gl.manual_seed(0)
    return gl.nn.Sequential(gl.nn.Linear(8, 16), gl.nn.Tanh(), gl.nn.Linear(16, 1))


def _recorded_mlp():
    model = _mlp()
    with gl.lab.record() as rec:
        loss = ((model(gl.randn(4, 8)) - gl.randn(4, 1)) ** 2).mean()
    return rec, loss


class Scale(gl.autograd.Function):
    """y = factor · x."""

    @staticmethod
    def forward(ctx, x, factor):
        ctx.factor = factor
        ctx.note = "a note that is far longer than the limit"
        ctx.save_for_backward(x)
        return x * factor

    @staticmethod
    def backward(ctx, g):
        return g * ctx.factor, None


# --- torchviz's picture -----------------------------------------------------------------------------------

def test_an_mlp_is_drawn_box_for_box_as_torchviz_draws_it():
    model = _mlp()
    dot = gl.lab.make_dot(model(gl.randn(1, 8)).mean(), params=dict(model.named_parameters()))
    assert isinstance(dot, graphviz.Digraph)
    assert boxes(dot) == Counter({
        ("0.weight\n (16, 8)", BLUE): 1, ("0.bias\n (16)", BLUE): 1, ("2.weight\n (1, 16)", BLUE): 1,
        ("2.bias\n (1)", BLUE): 1, ("AccumulateGrad", GREY): 4, ("AddmmBackward0", GREY): 2,
        ("TanhBackward0", GREY): 1, ("MeanBackward0", GREY): 1, ("\n ()", GREEN): 1})
    assert labelled_edges(dot) == Counter({
        ("0.weight\n (16, 8)", "AccumulateGrad", None): 1, ("0.bias\n (16)", "AccumulateGrad", None): 1,
        ("2.weight\n (1, 16)", "AccumulateGrad", None): 1, ("2.bias\n (1)", "AccumulateGrad", None): 1,
        ("AccumulateGrad", "AddmmBackward0", None): 4, ("AddmmBackward0", "TanhBackward0", None): 1,
        ("TanhBackward0", "AddmmBackward0", None): 1, ("AddmmBackward0", "MeanBackward0", None): 1,
        ("MeanBackward0", "\n ()", None): 1})
    found = parse(dot.source)
    assert found["node"] == {"style": "filled", "shape": "box", "align": "left", "fontsize": "10",
                             "ranksep": "0.1", "height": "0.2", "fontname": "monospace"}
    assert found["graph"] == {"size": "12,12"}


def test_each_leaf_feeds_the_node_that_used_it():
    model = _mlp()
    dot = gl.lab.make_dot(model(gl.randn(1, 8)).mean(), params=dict(model.named_parameters()))
    found = parse(dot.source)
    label = {i: a["label"] for i, a in found["nodes"].items()}
    into = {}
    for tail, head, _ in found["edges"]:
        into.setdefault(head, []).append(tail)
    leaves_of = {}  # each Addmm: the names of the leaves behind its AccumulateGrad inputs
    for node_id, text in label.items():
        if text == "AddmmBackward0":
            leaves_of[node_id] = sorted(label[leaf].split("\n")[0] for acc in into[node_id]
                                        if label[acc] == "AccumulateGrad" for leaf in into[acc])
    first, second = sorted(leaves_of, key=lambda i: "TanhBackward0" in [label[t] for t in into[i]])
    assert leaves_of[first] == ["0.bias", "0.weight"]
    assert leaves_of[second] == ["2.bias", "2.weight"]


def test_a_leaf_without_a_name_shows_its_shape_and_data_is_not_drawn():
    x, w = gl.randn(2, 3), gl.randn(3, 4, requires_grad=True)
    dot = gl.lab.make_dot((x @ w).sum())
    assert ("\n (3, 4)", BLUE) in boxes(dot)
    assert not any("(2, 3)" in label for label, _ in boxes(dot))  # x needs no gradient: backward never sees it


def test_params_may_be_the_model_or_its_named_parameters():
    model = _mlp()
    y = model(gl.randn(1, 8)).sum()
    assert boxes(gl.lab.make_dot(y, params=model)) == boxes(gl.lab.make_dot(y, params=model.named_parameters()))
    assert ("0.weight\n (16, 8)", BLUE) in boxes(gl.lab.make_dot(y, params=model))


def test_a_recording_draws_the_backward_graph_without_the_data():
    rec, _ = _recorded_mlp()
    dot = gl.lab.make_dot(rec)
    labels = Counter(label for label, _ in boxes(dot).elements())
    assert labels["AccumulateGrad"] == 4 and labels["AddmmBackward0"] == 2
    assert {"0.weight\n (16, 8)", "TanhBackward0", "SubBackward0", "PowBackward0", "MeanBackward0"} <= set(labels)
    assert not any(label.startswith("input") for label in labels)
    assert ("MeanBackward0", "\n ()", None) in labelled_edges(dot)


def test_show_saved_draws_what_each_node_saved_in_orange_beside_it():
    rec, _ = _recorded_mlp()
    assert not any(fill == ORANGE for _, fill in boxes(gl.lab.make_dot(rec)))
    dot = gl.lab.make_dot(rec, show_saved=True)
    saved = labelled_edges(dot)
    assert saved[("AddmmBackward0", "x\n (4, 8)", "none")] == 1
    assert saved[("AddmmBackward0", "w\n (16, 8)", "none")] == 1
    assert saved[("TanhBackward0", "out\n (4, 16)", "none")] == 1
    assert {("x\n (4, 8)", ORANGE), ("w\n (16, 8)", ORANGE), ("out\n (4, 16)", ORANGE)} <= set(boxes(dot))


def test_show_attrs_lists_what_forward_kept_as_torchviz_does():
    with gl.lab.record() as rec:
        Scale.apply(gl.randn(3, requires_grad=True), 2.5).sum()
    labels = [label for label, _ in boxes(gl.lab.make_dot(rec, show_attrs=True, max_attr_chars=12))]
    # torchviz's table: sorted names, values right-aligned in a column cut to 12 characters ("..." at the end)
    assert ("ScaleBackward\n"
            "--------------------\n"
            "factor:          2.5\n"
            "note  : a note th...\n"
            "x     : [saved te...") in labels
    assert "ScaleBackward" in [label for label, _ in boxes(gl.lab.make_dot(rec))]


def test_after_backward_the_attributes_say_what_was_freed():
    loss = _mlp()(gl.randn(1, 8)).tanh().sum()  # (a recording keeps what forward saved; the tensor's graph does not)
    loss.backward()
    labels = [label for label, _ in boxes(gl.lab.make_dot(loss, show_attrs=True, show_saved=True))]
    assert any(label.startswith("TanhBackward0\n") and re.search(r"\nsaved *: \[freed by backward\]", label)
               for label in labels)
    assert not any(label.startswith("out\n") for label in labels)  # nothing saved is left to draw


def test_several_outputs_share_the_nodes_they_have_in_common():
    w = gl.ones(2, requires_grad=True)
    h = (w * 2).tanh()
    dot = gl.lab.make_dot((h.sum(), h.mean()))
    assert boxes(dot) == Counter({("\n (2)", BLUE): 1, ("AccumulateGrad", GREY): 1, ("MulBackward0", GREY): 1,
                                  ("TanhBackward0", GREY): 1, ("SumBackward0", GREY): 1, ("MeanBackward0", GREY): 1,
                                  ("\n ()", GREEN): 2})
    assert labelled_edges(dot) == Counter({
        ("\n (2)", "AccumulateGrad", None): 1, ("AccumulateGrad", "MulBackward0", None): 1,
        ("MulBackward0", "TanhBackward0", None): 1, ("TanhBackward0", "SumBackward0", None): 1,
        ("TanhBackward0", "MeanBackward0", None): 1, ("SumBackward0", "\n ()", None): 1, ("MeanBackward0", "\n ()", None): 1})


def test_a_scalar_expression_draws_its_values_as_leaves():
    a, b = gl.Scalar(2.0, label="a"), gl.Scalar(-3.0, label="b")
    dot = gl.lab.make_dot((a * b + a).tanh())
    assert boxes(dot) == Counter({("a\n ()", BLUE): 1, ("b\n ()", BLUE): 1, ("Mul", GREY): 1, ("Add", GREY): 1,
                                  ("Tanh", GREY): 1, ("\n ()", GREEN): 1})
    assert labelled_edges(dot)[("a\n ()", "Add", None)] == 1


# --- what it is given ------------------------------------------------------------------------------------

@pytest.mark.parametrize("params, words", [
    ("weights", "params= takes {name: tensor}, such as dict(model.named_parameters()), or the model itself; got str"),
    ([gl.ones(2)], "its entry 0 is Tensor tensor([1., 1.]), not a (name, tensor) pair"),
    ({"w": 3.0}, "its entry 0 is tuple ('w', 3.0), not a (name, tensor) pair"),
])
def test_params_that_are_not_names_of_tensors_are_refused(params, words):
    w = gl.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match="make_dot") as error:
        gl.lab.make_dot((w * 2).sum(), params=params)
    assert words in str(error.value)


def test_what_cannot_be_drawn_is_named():
    model, w = _mlp(), gl.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match=r"make_dot: got a model \(Sequential\), not what it computed"):
        gl.lab.make_dot(model)
    with pytest.raises(TypeError, match=r"make_dot: a tuple of outputs holds tensors only .*; got tuple \(\)"):
        gl.lab.make_dot(())
    with pytest.raises(TypeError, match=r"make_dot: a list of outputs holds tensors only"):
        gl.lab.make_dot([w.sum(), 3.0])
    with pytest.raises(TypeError, match=r"make_dot: show_attrs= is True or False; got str 'yes'"):
        gl.lab.make_dot(w.sum(), show_attrs="yes")
    with pytest.raises(TypeError, match=r"make_dot: max_attr_chars= is a whole number of characters"):
        gl.lab.make_dot(w.sum(), max_attr_chars=2.5)
    with pytest.raises(gl.lab.CaptureError, match="it is a leaf"):
        gl.lab.make_dot(w)


# --- without graphviz's dot program, or without the package --------------------------------------------------

@pytest.fixture
def no_dot_program(tmp_path, monkeypatch):
    """A PATH on which Graphviz's dot cannot be found, whether or not this machine has it."""
    monkeypatch.setenv("PATH", str(tmp_path))


def test_rendering_without_dot_says_what_to_install(no_dot_program, tmp_path):
    model = _mlp()
    dot = gl.lab.make_dot(model(gl.randn(1, 8)).sum(), params=model)
    for render in (lambda: dot.render(tmp_path / "graph", format="png"), lambda: dot.pipe(format="svg")):
        with pytest.raises(graphviz.ExecutableNotFound) as error:  # (code that catches graphviz's error still does)
            render()
        message = str(error.value)
        assert "needs Graphviz's dot program, which is not installed" in message
        assert "apt install graphviz" in message and "brew install graphviz" in message
        assert "conda install -c conda-forge graphviz" in message and "print(dot.source)" in message
    assert "AddmmBackward0" in dot.source  # the DOT text needs no dot


def test_a_notebook_without_dot_shows_gradlabs_drawing_of_the_same_boxes(no_dot_program):
    model = _mlp()
    dot = gl.lab.make_dot(model(gl.randn(1, 8)).sum(), params=model)
    shown = dot._repr_mimebundle_()
    assert "gradlab's own drawing of the same graph" in shown["text/plain"]
    assert "apt install graphviz" in shown["text/html"] and "<svg" in shown["text/html"]
    svg = shown["image/svg+xml"]
    assert svg.startswith("<svg") and svg.count('class="gl-node gl-kind') == len(parse(dot.source)["nodes"])
    assert "0.weight" in svg and "AccumulateGrad" in svg
    assert 'fill="#add8e6"' in svg and 'fill="#d3d3d3"' in svg and 'fill="#caff70"' in svg


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed here")
def test_with_dot_installed_it_renders_as_graphviz():
    w = gl.ones(2, requires_grad=True)
    svg = gl.lab.make_dot((w * 2).sum(), params={"w": w}).pipe(format="svg", encoding="utf-8")
    assert "<svg" in svg and "MulBackward0" in svg and ">w<" in svg


def test_without_the_graphviz_package_the_error_says_pip_install(monkeypatch):
    w = gl.ones(2, requires_grad=True)
    view = gl.lab.GraphView((w * 2).sum())
    monkeypatch.setitem(sys.modules, "graphviz", None)  # import graphviz now fails
    for call, draw in (("make_dot", lambda: gl.lab.make_dot((w * 2).sum())), ("GraphView.to_dot", view.to_dot)):
        with pytest.raises(ImportError) as error:
            draw()
        assert str(error.value) == (f"gl.lab.{call} needs the Python package graphviz, which is not installed: "
                                    "pip install 'gradlab[lab]' (or pip install graphviz)")


def test_importing_the_lab_loads_graphviz_only_at_the_first_make_dot_and_never_torch():
    code = ("import sys, gradlab as gl, gradlab.lab\n"
            "print('graphviz' in sys.modules)\n"
            "w = gl.ones(2, requires_grad=True)\n"
            "gl.lab.make_dot((w * 2).sum(), show_attrs=True, show_saved=True)\n"
            "print('graphviz' in sys.modules, 'torch' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "False"]


# --- GraphView.to_dot(): what the view draws now -------------------------------------------------------------

def _view_of_the_mlp():
    rec, _ = _recorded_mlp()
    view = gl.lab.GraphView(rec, color="kind")
    view.expand()
    return view


def test_to_dot_draws_open_modules_as_clusters_with_the_views_fills():
    view = _view_of_the_mlp()
    found = parse(view.to_dot().source)
    first = found["clusters"]["cluster_0"]
    assert first["attrs"]["label"] == "▾ 0 (Linear)" and first["parent"] == "cluster_Sequential"
    assert sorted(found["nodes"][i]["label"] for i in first["members"]) == ["0.bias\n16", "0.weight\n16×8",
                                                                            "Linear\n4×16"]
    weight = next(a for a in found["nodes"].values() if a["label"] == "0.weight\n16×8")
    assert weight["fillcolor"] == "#ffe9a8"  # a parameter, coloured by kind
    assert found["graph"] == {"rankdir": "LR"}
    assert len(found["edges"]) == len(view.scene.placement().edges)


def test_to_dot_draws_a_closed_module_as_one_box():
    view = _view_of_the_mlp()
    view.toggle("0")
    found = parse(view.to_dot().source)
    assert "cluster_0" not in found["clusters"]
    assert found["nodes"]["g_0"]["label"] == "▸ 0 (Linear)\n1 op"
    tanh = next(i for i, a in found["nodes"].items() if a["label"].startswith("Tanh"))
    assert ("g_0", tanh) in [(t, h) for t, h, _ in found["edges"]]
    assert not any(a["label"].startswith("0.weight") for a in found["nodes"].values())


def test_to_dot_follows_the_colour_mode():
    rec, loss = _recorded_mlp()
    view = gl.lab.GraphView(rec, color="kind")
    view.expand()
    loss.backward()
    view.refresh()
    view.color_mode = "grad"
    fills = {i: a["fillcolor"] for i, a in parse(view.to_dot().source)["nodes"].items()}
    assert fills == {i: view.colors["grad"][i][0] for i in fills}
    by_kind = parse(gl.lab.GraphView(rec, color="kind").to_dot().source)["nodes"]
    assert fills != {i: a["fillcolor"] for i, a in by_kind.items()}


def test_to_dot_counts_merged_edges_as_the_view_does(no_dot_program):
    x = gl.randn(3, requires_grad=True)
    view = gl.lab.GraphView((x * x).sum())
    dot = view.to_dot()
    found = parse(dot.source)
    mul = next(i for i, a in found["nodes"].items() if a["label"].startswith("Mul"))
    assert [a.get("label") for t, h, a in found["edges"] if h == mul] == ["×2"]
    assert 'class="gl-graph"' in dot._repr_mimebundle_()["image/svg+xml"]  # without dot: the view's own picture

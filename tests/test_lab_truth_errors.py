"""The lab names a learner's mistake, its summaries cost a bounded share of memory, and a tensor's graph says
when a leaf changed since the forward used it.

Issue 17: ``check_node(view)`` failed with "missing 1 required positional argument", ``GraphView(rec,
names=42)`` was accepted without a word, a summary of a 256 MiB tensor allocated eight times its size, and
``GraphView(loss)`` after ``optimizer.step()`` showed the new weights as if the forward had used them.
"""

import gc
import sys
import tracemalloc

import numpy as np
import pytest

pytest.importorskip("anywidget", reason="the lab widgets need anywidget and ipywidgets: pip install -e '.[lab]'")

import gradlab as gl  # noqa: E402
import gradlab.nn as nn  # noqa: E402
from gradlab.lab.summary import summarize  # noqa: E402


@pytest.fixture
def drawn():
    """A recording of a small forward, its loss, and a view of it."""
    w = gl.randn(3, 3, requires_grad=True)
    x = gl.randn(4, 3)
    with gl.lab.record() as rec:
        loss = (x @ w).relu().sum()
    view = gl.lab.GraphView(rec)
    yield rec, loss, view
    view.close()


# --- check_node names what was wrong with the call ------------------------------------------------------------

def test_check_node_of_none_says_it_takes_a_graph_and_shows_the_call():
    with pytest.raises(TypeError, match=r"check_node: takes a graph .* check_node\(view, 'n3'\) or "
                                        r"view\.check\('n3'\); got None"):
        gl.lab.check_node(None)


def test_check_node_of_a_view_alone_asks_for_the_node_and_lists_some(drawn):
    _, _, view = drawn
    with pytest.raises(TypeError) as error:
        gl.lab.check_node(view)
    message = str(error.value)
    assert message.startswith("check_node: got no node to work on (None); give its id, as check_node(view, 'n3') "
                              "or view.check('n3')")
    assert "operations: n2 (Matmul), n3 (Relu), n4 (Sum)" in message


def test_check_node_takes_a_view_and_a_node_id(drawn):
    _, _, view = drawn
    assert gl.lab.check_node(view, "n3")["ok"] is True


def test_check_node_of_an_unknown_id_lists_the_ids_it_has(drawn):
    _, _, view = drawn
    with pytest.raises(KeyError, match=r"check_node: no node 'n99' in this graph; its nodes are n0 \.\.\. n4; "
                                       r"operations: n2 \(Matmul\)"):
        gl.lab.check_node(view, "n99")


def test_check_node_of_a_number_for_an_id_names_what_it_got(drawn):
    _, _, view = drawn
    with pytest.raises(KeyError, match="check_node: int 3 is not a node of this graph; give a node id"):
        gl.lab.check_node(view.graph, 3)


def test_check_node_of_a_recording_says_to_draw_it_first(drawn):
    rec, _, _ = drawn
    with pytest.raises(TypeError, match=r"check_node: got a Recording; it takes a drawn graph"):
        gl.lab.check_node(rec, "n2")


def test_check_node_with_a_seed_that_is_not_a_number_says_so(drawn):
    _, _, view = drawn
    with pytest.raises(TypeError, match="check_node: seed= takes a whole number .*; got str 'a'"):
        gl.lab.check_node(view, "n3", seed="a")


# --- GraphView and BackpropStepper check what they are given ----------------------------------------------------

def test_graphview_of_a_recording_with_names_that_are_not_a_mapping_names_what_it_got(drawn):
    rec, _, _ = drawn  # (a recording takes names= for the leaves no module owns: lab 4's W1, gamma, ...)
    with pytest.raises(TypeError, match=r"GraphView: names= takes \{name: tensor\}.*; got int 42"):
        gl.lab.GraphView(rec, names=42)


def test_graphview_of_a_scalar_with_names_says_its_graph_takes_none():
    with pytest.raises(ValueError, match="GraphView: names= labels the leaves of a tensor's graph or a recording; "
                                         "a Scalar's graph takes no names"):
        gl.lab.GraphView(gl.Scalar(2.0) * gl.Scalar(3.0), names={"a": gl.tensor([1.0])})


def test_graphview_with_names_that_are_not_a_mapping_names_what_it_got(drawn):
    _, loss, _ = drawn
    with pytest.raises(TypeError, match=r"GraphView: names= takes \{name: tensor\}, such as "
                                        r"dict\(model.named_parameters\(\)\), or the model itself; got int 42"):
        gl.lab.GraphView(loss, names=42)
    with pytest.raises(TypeError, match="its entry 0 is int 1, not a"):
        gl.lab.GraphView(loss, names=[1, 2])
    with pytest.raises(TypeError, match="its entry 0 pairs str 'w' with int 3, not a name with a tensor"):
        gl.lab.GraphView(loss, names={"w": 3})
    model = nn.Linear(3, 2)
    by_model = gl.lab.GraphView(model(gl.randn(4, 3)).sum(), names=model)  # the model: its parameters' names
    assert {n.label for n in by_model.graph.nodes.values() if n.kind == "param"} == {"weight", "bias"}
    view = gl.lab.GraphView(model(gl.randn(4, 3)).sum(), names=model.named_parameters())  # a generator: read once
    assert sorted(n["label"] for n in view.nodes.values() if n["kind"] == "param") == ["bias", "weight"]
    view.close()


def test_graphview_checks_height_and_color_before_drawing(drawn):
    rec, _, _ = drawn
    with pytest.raises(TypeError, match="GraphView: height= takes a whole number of pixels, such as 460; got str"):
        gl.lab.GraphView(rec, height="big")
    with pytest.raises(ValueError, match="GraphView: height= is the view's height in pixels, from 100 to 10000; "
                                         "got -5"):
        gl.lab.GraphView(rec, height=-5)
    with pytest.raises(TypeError, match="GraphView: color= takes the name of a colour mode, such as 'grad', "
                                        "'value' or 'kind'; got int 3"):
        gl.lab.GraphView(rec, color=3)


def test_graphview_of_a_class_says_it_wants_one_of_its_objects():
    with pytest.raises(TypeError, match="GraphView: got the class Recording itself, not one of its objects; "
                                        "give it a loss tensor"):
        gl.lab.GraphView(gl.lab.Recording)


def test_graphview_of_the_recorder_says_to_draw_what_it_recorded():
    with pytest.raises(TypeError, match=r"GraphView: got the recorder gl.lab.record\(\), not what it recorded: "
                                        r"write `with gl.lab.record\(\) as rec: loss = \.\.\.`, then GraphView\(rec\)"):
        gl.lab.GraphView(gl.lab.record())


def test_graphview_of_a_model_says_to_record_its_forward():
    with pytest.raises(TypeError, match=r"GraphView: got a model \(Linear\), not what it computed: record its "
                                        r"forward"):
        gl.lab.GraphView(nn.Linear(2, 2))


def test_graphview_of_a_view_says_it_is_drawn_already(drawn):
    _, _, view = drawn
    with pytest.raises(TypeError, match="GraphView: got a GraphView, which is drawn already"):
        gl.lab.GraphView(view)


def test_backprop_stepper_names_a_bad_argument_and_leaves_no_error_behind(drawn):
    rec, loss, _ = drawn
    with pytest.raises(TypeError, match="BackpropStepper: got the class Recording itself, not one of its objects; "
                                        "give it a loss tensor"):
        gl.lab.BackpropStepper(gl.lab.Recording)
    with pytest.raises(TypeError, match="BackpropStepper: height= takes a whole number of pixels"):
        gl.lab.BackpropStepper(rec, height="x")
    with pytest.raises(TypeError, match=r"BackpropStepper: names= takes \{name: tensor\}.*got int 42"):
        gl.lab.BackpropStepper(loss, names=42)
    unraisable = []
    hook, sys.unraisablehook = sys.unraisablehook, unraisable.append
    try:
        with pytest.raises(TypeError):
            gl.lab.BackpropStepper(None)
        gc.collect()  # the half-made stepper is collected: its close() must not fail
    finally:
        sys.unraisablehook = hook
    assert not unraisable, [str(u.exc_value) for u in unraisable]


# --- the view's methods name a wrong argument ---------------------------------------------------------------------

def test_view_methods_given_the_wrong_type_say_what_they_take(drawn):
    _, _, view = drawn
    with pytest.raises(TypeError, match=r"GraphView.expand takes each module's path as text, such as "
                                        r"'encoder.layers.0' \(one per argument\); got int 3"):
        view.expand(3)
    with pytest.raises(TypeError, match="GraphView.toggle takes the module's id as text, such as 'layers.0'; "
                                        "got None"):
        view.toggle(None)
    with pytest.raises(TypeError, match="GraphView.find takes what to find as text, such as 'Relu'; got None"):
        view.find(None)
    with pytest.raises(TypeError, match=r"GraphView.check: got no node to work on \(None\); give its id, as "
                                        r"view.check\('n3'\)"):
        view.check(None)
    with pytest.raises(TypeError, match=r"GraphView.reveal: got no node to work on \(None\); give its id, as "
                                        r"view.reveal\('n3'\)"):
        view.reveal(None)


def test_add_color_mode_checks_its_figures_and_texts(drawn):
    _, _, view = drawn
    with pytest.raises(TypeError, match=r"add_color_mode\('m'\): sizes takes \{node id: figure\}.*got list \[1\]"):
        view.add_color_mode("m", [1], "t")
    with pytest.raises(TypeError, match=r"add_color_mode\('m'\): sizes\['n0'\] is str 'x'; each figure is a number"):
        view.add_color_mode("m", {"n0": "x"}, "t")
    with pytest.raises(ValueError, match=r"add_color_mode\('m'\): sizes\['n0'\] is -1; .* 0 or more"):
        view.add_color_mode("m", {"n0": -1}, "t")
    with pytest.raises(TypeError, match="add_color_mode takes the mode's name as text, such as 'time'; got int 3"):
        view.add_color_mode(3, {}, "t")
    with pytest.raises(TypeError, match="add_color_mode takes title= as text, such as 'forward time'; got None"):
        view.add_color_mode("m", {"n0": 1.0}, None)
    with pytest.raises(TypeError, match=r"add_color_mode\('m'\): text takes a function .*; got int 3"):
        view.add_color_mode("m", {"n0": 1.0}, "t", text=3)
    assert "m" not in view.color_labels


def test_record_with_a_synchronize_that_is_not_true_or_false_says_so():
    with pytest.raises(TypeError, match=r"gl.lab.record\(synchronize=\.\.\.\) takes True or False .*; got str 'yes'"):
        gl.lab.record(synchronize="yes")


# --- a summary costs a bounded share of the tensor ----------------------------------------------------------------

MiB = 2 ** 20


def extra_memory_of(fn) -> int:
    """The most memory ``fn()`` held at once beyond what was there before (numpy tells tracemalloc)."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def reference_figures(t) -> dict:
    """What a summary must say, worked out on a float64 copy of the whole tensor."""
    flat = np.asarray(t.numpy(), dtype=np.float64).ravel()
    finite = flat[np.isfinite(flat)]
    bins = ((finite - finite.min()) * (16 / (finite.max() - finite.min()))).astype(np.intp)
    return {"numel": flat.size, "nan": int(np.isnan(flat).sum()), "inf": int(np.isinf(flat).sum()),
            "min": finite.min(), "max": finite.max(), "mean": finite.mean(), "norm": np.sqrt(finite @ finite),
            "counts": np.bincount(np.minimum(bins, 15), minlength=16).tolist()}


def test_a_summary_of_a_64_mib_tensor_costs_under_a_quarter_of_it_and_says_what_numpy_says():
    t = gl.randn(16 * MiB)  # float32: 64 MiB
    t[3], t[5] = float("nan"), float("inf")
    expected = reference_figures(t)
    summary = {}
    extra = extra_memory_of(lambda: summary.update(summarize(t)))
    assert extra < t.numel() * 4 / 4, f"a summary of 64 MiB held {extra / MiB:.1f} MiB more"
    for key in ("numel", "nan", "inf", "min", "max"):
        assert summary[key] == expected[key], key
    assert summary["mean"] == pytest.approx(expected["mean"], rel=1e-9, abs=1e-12)
    assert summary["norm"] == pytest.approx(expected["norm"], rel=1e-12)
    assert summary["hist"]["counts"] == expected["counts"]


@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "bfloat16", "float32", "float64", "strided"])
def test_a_summary_of_each_dtype_costs_under_a_quarter_of_the_tensor(dtype):
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes", reason="bfloat16 tensors need ml_dtypes: pip install 'gradlab[bfloat16]'")
    if dtype == "strided":  # a transposed view: read in place, not copied to be made contiguous
        t = gl.randn(2048, 2048).t()
    else:
        itemsize = {"bool": 1, "int32": 4, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[dtype]
        n = 16 * MiB // itemsize
        t = gl.randn(n) > 0 if dtype == "bool" else (gl.randn(n) * 100).to(dtype=getattr(gl, dtype))
    size = t.numel() * t.element_size()
    expected = reference_figures(t)
    summary = {}
    extra = extra_memory_of(lambda: summary.update(summarize(t)))
    assert extra < size / 4, f"a summary of a {size / MiB:.0f} MiB {dtype} tensor held {extra / MiB:.1f} MiB more"
    assert (summary["numel"], summary["min"], summary["max"]) == (expected["numel"], expected["min"], expected["max"])
    assert summary["hist"]["counts"] == expected["counts"]


# --- a tensor's graph says when a leaf changed since the forward used it ------------------------------------------

def nodes_labelled(view) -> dict:
    return {node["label"]: node for node in view.nodes.values()}


def test_the_engine_tells_the_version_each_saved_tensor_had_when_saved():
    w = gl.randn(3, requires_grad=True)
    y = w * w
    with gl.no_grad():
        w.add_(1)
    (saved, output), _ = y.grad_fn.inspect_saved()  # (it unpacks as tensor, output)
    assert saved is w and output is None
    assert [s.version for s in y.grad_fn.inspect_saved()] == [0, 0] and w.version == 1


def test_a_view_of_a_loss_after_optimizer_step_marks_the_changed_weight_as_a_recording_does():
    from gradlab.lab.as_used import CHANGED

    model = nn.Linear(3, 2)
    x = gl.randn(4, 3)
    loss = model(x).sum()
    weight_then = model.weight.version
    loss.backward(retain_graph=True)
    gl.optim.SGD(model.parameters(), lr=0.1).step()
    view = gl.lab.GraphView(loss, names=dict(model.named_parameters()))
    nodes = nodes_labelled(view)
    changed = nodes["weight"]["value"]["changed"]
    assert changed.startswith(CHANGED["used"].format(then=weight_then, now=weight_then + 1))
    assert changed.endswith("and no copy was kept: these are its values now, not the ones the forward used")
    (matmul,) = [node for node in view.nodes.values() if node["kind"] == "op" and node["saved"]]
    x_saved, weight_saved = matmul["saved"]  # as Addmm saved them: x, then the weight
    assert weight_saved["changed"].startswith("changed in place since forward saved it (version 1 → 2): backward "
                                              "will raise an error")
    assert not x_saved.get("changed")  # x did not change
    assert not nodes["Sum"]["value"].get("changed")
    view.close()


def test_a_leaf_no_operation_saved_says_whether_it_changed_is_not_known():
    w = gl.randn(3, requires_grad=True)
    b = gl.randn(3, requires_grad=True)
    unchanged = gl.randn(3, requires_grad=True)
    loss = (w * 2 + b + unchanged).sum()  # (w * 2 saves no tensor: nothing notes w's version)
    with gl.no_grad():
        b.add_(1)
    view = gl.lab.GraphView(loss, names={"w": w, "b": b, "unchanged": unchanged})
    nodes = nodes_labelled(view)
    assert nodes["b"]["value"]["not_known"] == (
        "changed in place since it was made (version 1), and no operation saved it (only they note a version), so "
        "whether that was before or after the forward used it is not known: these are its values now, perhaps not "
        "the ones the forward used")
    assert "changed" not in nodes["b"]["value"]  # not said to have changed since the forward: no one knows
    assert "not_known" not in nodes["unchanged"]["value"] and "not_known" not in nodes["w"]["value"]
    view.close()


def test_a_leaf_after_backward_freed_the_graph_says_its_versions_went_with_it():
    model = nn.Linear(3, 2)
    loss = model(gl.randn(4, 3)).sum()
    loss.backward()
    gl.optim.SGD(model.parameters(), lr=0.1).step()
    view = gl.lab.GraphView(loss, names=dict(model.named_parameters()))
    assert ("backward freed what the operations saved, and the versions with it"
            in nodes_labelled(view)["weight"]["value"]["not_known"])
    view.close()


def test_the_inspector_shows_a_note_where_it_is_not_known():
    import pathlib

    source = (pathlib.Path(__file__).resolve().parent.parent / "widgets" / "inspector.js").read_text()
    assert 'if (summary.not_known) rows.push(h("div", { class: "gl-hint gl-not-known" }, summary.not_known));' in source

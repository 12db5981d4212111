"""Checked exercises: the right answer passes, each plausible wrong one fails with a hint that names the
mistake and never the answer, and an unsolved exercise says "not done yet" instead of raising."""

import numpy as np
import pytest

import gradlab as gl
from gradlab import lab


@pytest.fixture
def layer():
    """A tanh layer and a mean-of-squares loss, backward run: the engine's gradients are the truth."""
    gl.manual_seed(0)
    x = gl.randn(4, 3, dtype=gl.float64, requires_grad=True)
    W = gl.randn(3, 2, dtype=gl.float64, requires_grad=True)
    b = gl.randn(2, dtype=gl.float64, requires_grad=True)
    y = (x @ W + b).tanh()
    (y ** 2).mean().backward()
    dz = (2 * y.detach() / y.numel()) * (1 - y.detach() ** 2)  # by hand, as a learner would
    return {"x": x, "W": W, "b": b, "dz": dz, "dW": x.detach().T @ dz, "db": dz.sum(0), "dx": dz @ W.detach().T}


def test_the_right_gradients_pass_and_say_exact_or_approximately(layer):
    for name in ("dW", "db", "dx"):
        verdict = lab.check_gradient(name, layer[name], layer[name[1:]])
        assert verdict.passed and verdict and verdict.status == "pass"
        assert verdict.message == "exact" or verdict.message.startswith("approximately")
    close = lab.check_gradient("dW", layer["dW"].numpy() * (1 + 1e-9), layer["W"])
    assert close.passed and "largest relative error 5.0e-10" in close.message  # CS231n: |a − b| / (|a| + |b|)


def test_a_transposed_gradient_names_the_expected_shape_and_the_matmul(layer):
    verdict = lab.check_gradient("dW", layer["dW"].T, layer["W"])
    assert not verdict and verdict.status == "fail"
    assert "the answer has shape (3, 2), yours has (2, 3)" in verdict.message and "matmul" in verdict.message


def test_a_bias_gradient_not_summed_over_the_batch_says_where_it_was_broadcast(layer):
    verdict = lab.check_gradient("db", layer["dz"], layer["b"])
    assert not verdict.passed
    assert "shape (2,), yours has (4, 2)" in verdict.message and "broadcast over dimension 0" in verdict.message


def test_a_kept_dimension_and_a_dimension_summed_away_are_named(layer):
    kept = lab.check_gradient("db", layer["dz"].sum(0, keepdim=True), layer["b"])
    assert "dimension of size 1 more or fewer" in kept.message
    too_far = lab.check_gradient("dW", layer["dW"].sum(), layer["W"])
    assert "a dimension too few" in too_far.message


def test_a_forgotten_mean_and_a_flipped_sign_are_recognised_without_the_factor(layer):
    times_n = lab.check_gradient("dW", layer["dW"] * 8, layer["W"])
    assert not times_n and "off by the same factor" in times_n.message and "8" not in times_n.message
    flipped = lab.check_gradient("dW", -layer["dW"], layer["W"])
    assert not flipped and "wrong sign" in flipped.message


def test_one_wrong_element_is_located_by_index_and_error_never_by_value(layer):
    wrong = layer["dx"].numpy().copy()
    wrong[1, 2] *= 1.5
    verdict = lab.check_gradient("dx", wrong, layer["x"])
    assert "1 of 12 elements is off; the worst at index (1, 2)" in verdict.message
    assert f"{layer['x'].grad.numpy()[1, 2]:.3g}" not in verdict.message  # the right value is not given away
    assert verdict.error == pytest.approx(0.2)  # |1.5a − a| / (|1.5a| + |a|)


def test_nan_zeros_and_a_square_transpose_each_get_their_hint():
    truth = np.array([[1.0, 2.0], [3.0, 4.0]])
    assert "nan or inf" in lab.check("g", np.array([[1.0, np.nan], [3.0, 4.0]]), truth).message
    assert "all zeros" in lab.check("g", np.zeros((2, 2)), truth).message
    assert "transpose of the answer" in lab.check("g", truth.T, truth).message


def test_an_unsolved_exercise_is_not_done_yet_and_does_not_raise(layer):
    for verdict in (lab.check_gradient("dW", ..., layer["W"]), lab.check("v", None, 3.0),
                    lab.check_function("f", ..., np.sin, 1.0), lab.check_function("f", lambda x: ..., np.sin, 1.0)):
        assert verdict.status == "not done" and not verdict
        assert "not done yet" in repr(verdict) and "not done yet" in verdict._repr_html_()


def test_an_answer_that_is_not_numbers_fails_with_its_type(layer):
    assert "got a str" in lab.check_gradient("dW", "dW", layer["W"]).message
    assert "got a dict" in lab.check("v", {"a": 1}, 1.0).message


def test_float32_answers_are_judged_at_float32_precision(layer):
    assert lab.check_gradient("dx", layer["dx"].float(), layer["x"]).passed
    assert not lab.check_gradient("dx", layer["dx"].float() * 1.01, layer["x"]).passed
    assert not lab.check_gradient("dx", layer["dx"] * (1 + 1e-4), layer["x"]).passed  # float64: 1e-6


def test_a_truth_without_grad_says_to_retain_it_or_run_backward():
    x = gl.randn(3, requires_grad=True)
    hidden = x * 2
    (hidden.sum()).backward()
    with pytest.raises(ValueError, match=r"check_gradient\('dh'\): .*retain_grad\(\)"):
        lab.check_gradient("dh", np.ones(3), hidden)
    with pytest.raises(ValueError, match="run loss.backward\\(\\) first"):
        lab.check_gradient("dw", np.ones(3), gl.randn(3, requires_grad=True))


def test_the_name_comes_first_and_a_wrong_call_says_so(layer):
    with pytest.raises(TypeError, match=r"check_gradient: the first argument is the exercise's name"):
        lab.check_gradient(layer["dW"], layer["W"], "dW")
    with pytest.raises(TypeError, match="check_gradients: give a dict"):
        lab.check_gradients([layer["dW"]])
    with pytest.raises(TypeError, match="should be a pair"):
        lab.check_gradients({"dW": layer["dW"]})


def test_scalars_are_checked_like_tensors():
    a = gl.Scalar(2.0)
    (a * a).backward()
    assert lab.check_gradient("da", 4.0, a).passed
    wrong = lab.check_gradient("da", 2.0, a)
    assert not wrong and "relative error" in wrong.message and "factor" not in wrong.message
    assert "wrong sign" in lab.check_gradient("da", -4.0, a).message


def test_several_gradients_read_as_one_table(layer):
    verdicts = lab.check_gradients({"dW": (layer["dW"], layer["W"]), "db": (layer["dz"], layer["b"])})
    assert [v.status for v in verdicts] == ["pass", "fail"] and not verdicts
    assert repr(verdicts).splitlines()[0] == "✓ dW: exact" and repr(verdicts).splitlines()[1].startswith("✗ db:")
    assert verdicts._repr_html_().count('class="gl-verdict ') == 2


def test_a_function_is_checked_on_its_values_and_its_gradients():
    x = gl.randn(3, 4, dtype=gl.float64, requires_grad=True)
    right = lab.check_function("softmax", lambda t: t.exp() / t.exp().sum(1, keepdim=True), lambda t: t.softmax(1),
                               x, gradients=True)
    assert right.passed and "so are the gradients" in right.message
    numpy_inside = lab.check_function(
        "softmax", lambda t: gl.tensor(np.exp(t.detach().numpy()) / np.exp(t.detach().numpy()).sum(1, keepdims=True)),
        lambda t: t.softmax(1), x, gradients=True)
    assert not numpy_inside and "no graph" in numpy_inside.message
    wrong_axis = lab.check_function("softmax", lambda t: t.exp() / t.exp().sum(0, keepdim=True),
                                    lambda t: t.softmax(1), x)
    assert not wrong_axis and "elements are off" in wrong_axis.message
    raising = lab.check_function("softmax", lambda t: t.nonexistent(), lambda t: t.softmax(1), x)
    assert not raising and raising.message.startswith("your function raised AttributeError")
    assert "expected a function, got a int" in lab.check_function("f", 3, np.sin, 1.0).message


def test_a_gradient_that_is_right_in_value_but_detached_names_the_input():
    x = gl.randn(3, dtype=gl.float64, requires_grad=True)
    y = gl.randn(3, dtype=gl.float64, requires_grad=True)
    verdict = lab.check_function("product", lambda a, b: a * b.detach(), lambda a, b: a * b, x, y, gradients=True)
    assert not verdict and "no gradient reaches input 1" in verdict.message


# --- against finite differences, and on the graph --------------------------------------------------------

def _mlp():
    """A recorded tanh layer and a square loss, backward run, and the right gradients by hand."""
    gl.manual_seed(1)
    x = gl.randn(5, 3, dtype=gl.float64)
    W = gl.randn(3, 4, dtype=gl.float64, requires_grad=True)
    b = gl.randn(4, dtype=gl.float64, requires_grad=True)
    with lab.record() as rec:
        hidden = (x @ W + b).tanh()
        loss = (hidden ** 2).mean()
    hidden.retain_grad()
    loss.backward()
    dhidden = 2 * hidden.detach() / hidden.numel()
    dz = dhidden * (1 - hidden.detach() ** 2)
    return {"rec": rec, "x": x, "W": W, "b": b, "hidden": hidden, "dhidden": dhidden, "dW": x.T @ dz,
            "db": dz.sum(0), "loss_of_W": lambda w: (((x @ w + b).tanh()) ** 2).mean()}


def test_a_finite_difference_check_names_cs231n_band_of_its_error():
    net = _mlp()
    right = lab.check_numerically("dW", net["dW"], net["loss_of_W"], net["W"])
    assert right.passed and right.band == lab.cs231n_band(right.error) and right.band.startswith("right")
    assert right.error < 1e-7 and "at 6 coordinates" in right.message
    uneasy = lab.check_numerically("dW", net["dW"] * 1.002, net["loss_of_W"], net["W"])
    assert not uneasy and uneasy.band.startswith("uncomfortable") and uneasy.error == pytest.approx(1e-3, rel=1e-3)
    wrong = lab.check_numerically("dW", net["dW"] * 3, net["loss_of_W"], net["W"])
    assert not wrong and wrong.band.startswith("wrong") and "above 1e-2" in wrong.message
    assert lab.check_numerically("dW", ..., net["loss_of_W"], net["W"]).status == "not done"
    assert "the answer has shape (3, 4)" in lab.check_numerically("dW", net["dW"].T, net["loss_of_W"], net["W"]).message
    assert [lab.cs231n_band(e).split(" ")[0] for e in (1e-9, 1e-5, 1e-3, 0.5)] == \
        ["right", "probably", "uncomfortable:", "wrong"]


def test_a_kink_makes_a_right_gradient_look_wrong_to_finite_differences():
    z = gl.tensor([1.0, 0.0, -2.0], dtype=gl.float64, requires_grad=True)
    (z.relu() * 3).sum().backward()
    at_kink = lab.check_numerically("dz", z.grad, lambda t: (t.relu() * 3).sum(), z)
    assert not at_kink and "(at index (1,))" in at_kink.message and at_kink.error == pytest.approx(1.0)


def test_show_on_colours_each_checked_node_by_the_error_of_your_gradient():
    pytest.importorskip("anywidget")
    net = _mlp()
    view = lab.GraphView(net["rec"])
    verdicts = lab.check_gradients({"dhidden": (net["dhidden"], net["hidden"]), "dW": (net["dW"] * 1.01, net["W"]),
                                    "db": (..., net["b"])})
    assert verdicts.show_on(view) is view and view.color_mode == "yours"
    assert view.color_labels["yours"] == "your gradients"
    sizes = view._added_modes["yours"][0]
    tanh, W, b = view.find("Tanh")[0], view.graph.node_for(net["W"]).id, view.graph.node_for(net["b"]).id
    assert sizes[W] == verdicts[1].error and verdicts[1].error == pytest.approx(0.01 / 2.01)
    assert sizes[tanh] == max(verdicts[0].error, 1e-16)  # exact: the bottom of the scale
    assert sizes[b] is None and view.colors["yours"][b][0] == "#e6e6e6"  # not done yet: unknown
    legend = view.legends["yours"]
    assert legend["title"] == "relative error of your gradient (CS231n: < 1e-7 right, > 1e-2 wrong)"
    assert [stop[0] for stop in legend["stops"]] == ["1e-16", "1e-12", "1e-08", "1e-04", "1e+00"]  # a fixed scale
    assert 'relative error of your gradient' in view.to_svg()


def test_show_on_draws_a_wrong_shape_as_wrong_and_names_what_it_cannot_find():
    pytest.importorskip("anywidget")
    net = _mlp()
    view = lab.GraphView(net["rec"])
    verdicts = lab.check_gradients({"db": (net["db"].unsqueeze(0).expand(5, 4), net["b"])})
    verdicts.show_on(view)
    assert view._added_modes["yours"][0][view.graph.node_for(net["b"]).id] == 1.0
    with pytest.raises(KeyError, match="no verdict is named 'dx'"):
        verdicts.show_on(view, {"dx": net["x"]})
    elsewhere = gl.randn(4, dtype=gl.float64, requires_grad=True)
    (elsewhere * 2).sum().backward()
    with pytest.raises(KeyError, match="'de' was checked against is not drawn in this view"):
        lab.check_gradients({"de": (elsewhere.grad, elsewhere)}).show_on(view)


def test_a_fixed_scale_keeps_a_colour_for_a_size_whatever_else_is_drawn():
    from gradlab.lab.colors import log_colors
    alone, _ = log_colors({"a": 1e-8}, "t", limits=(1e-16, 1.0))
    with_others, _ = log_colors({"a": 1e-8, "b": 1e-3, "c": 1e-20}, "t", limits=(1e-16, 1.0))
    assert alone["a"] == with_others["a"] and with_others["c"] == log_colors({"c": 1e-16}, "t", limits=(1e-16, 1))[0]["c"]


class _Square(gl.autograd.Function):
    """x², with a backward the test swaps."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x


@pytest.fixture
def square(monkeypatch):
    return monkeypatch, gl.randn(3, 2, dtype=gl.float64, requires_grad=True)


def test_a_function_whose_backward_is_not_written_is_not_done_yet(square):
    monkeypatch, x = square
    assert lab.check_function("square", _Square.apply, lambda t: t * t, x, gradients=True).passed
    monkeypatch.setattr(_Square, "backward", staticmethod(lambda ctx, grad: ...))
    assert lab.check_function("square", _Square.apply, lambda t: t * t, x, gradients=True).status == "not done"
    monkeypatch.setattr(_Square, "backward", staticmethod(lambda ctx, grad: "two x"))
    raised = lab.check_function("square", _Square.apply, lambda t: t * t, x, gradients=True)
    assert not raised and "your backward raised TypeError" in raised.message


def test_check_this_node_is_a_verdict_of_check_this_node(square):
    pytest.importorskip("anywidget")
    monkeypatch, x = square
    with lab.record() as rec:
        _Square.apply(x * 1.5).sum()
    view = lab.GraphView(rec)
    (node,) = view.find("_Square")
    right = lab.check_this_node("square", view, node)
    assert right.passed and "agrees with finite differences" in right.message and right.band.startswith("right")
    assert view.check_result["id"] == node  # the inspector shows it too
    monkeypatch.setattr(_Square, "backward", staticmethod(lambda ctx, grad: grad * ctx.saved_tensors[0]))
    wrong = lab.check_this_node("square", view, node)
    assert not wrong and "DISAGREES" in wrong.message and wrong.band.startswith("wrong")
    monkeypatch.setattr(_Square, "backward", staticmethod(lambda ctx, grad: ...))
    assert lab.check_this_node("square", view, node).status == "not done"


def test_a_recording_labels_the_leaves_you_name_so_that_coloured_nodes_can_be_told_apart():
    pytest.importorskip("anywidget")
    net = _mlp()
    view = lab.GraphView(net["rec"], names={"W": net["W"], "b": net["b"], "x": net["x"]})
    W, x = view.graph.node_for(net["W"]), view.graph.node_for(net["x"])
    assert (W.label, W.kind, x.label, x.kind) == ("W", "param", "x", "input")
    assert view.graph.node_for(net["b"]).label == "b"


def test_no_module_of_the_lab_shadows_a_public_name_once_imported():
    # importing gradlab.lab.X sets the attribute X on the package, hiding a lazy name X for good
    import pkgutil
    modules = {m.name for m in pkgutil.iter_modules(lab.__path__)}
    assert not modules & set(lab._LAZY), f"rename the module(s) {sorted(modules & set(lab._LAZY))}"
    import gradlab.lab.node_check  # noqa: F401 - the module behind check_node, imported first on purpose
    assert callable(lab.check) and lab.check("v", 1.0, 1.0).passed

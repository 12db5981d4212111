"""Lab 13's checks: each exercise's right answer passes, and the slips a port makes fail with a hint naming them.

The wrong answers are the ones a learner coming from gradlab writes: a fused Addmm expected where ``@`` and
``+`` make two nodes, a short name, the data counted as a leaf; a Function ported with ``gl.where`` left in or
without the slope's ``None``; a weight kept in gradlab's (in, out) layout.
"""

import copy

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import gradlab as gl  # noqa: E402
from gradlab.lab.pytorch.exercises import (  # noqa: E402
    check_ported_weights,
    check_torch_function,
    check_torch_node_names,
    check_wrong_parameter,
)

RIGHT_NAMES = ["MeanBackward0", "TanhBackward0", "AddBackward0", "MmBackward0", "AccumulateGrad", "AccumulateGrad"]


def lab_line():
    """Exercise 1's line: (x @ W + b).tanh().mean() with x data and W, b parameters."""
    x = torch.randn(5, 3)
    W = torch.randn(3, 4, requires_grad=True)
    b = torch.randn(4, requires_grad=True)
    return (x @ W + b).tanh().mean()


# --- exercise 1: the node names -------------------------------------------------------------------------

def test_the_node_names_pass_in_any_order():
    verdict = check_torch_node_names("names", list(reversed(RIGHT_NAMES)), lab_line())
    assert verdict.passed, verdict.message
    assert "6 nodes" in verdict.message


def test_accumulate_grad_may_be_named_as_pytorch_prints_it():
    names = RIGHT_NAMES[:4] + ["torch::autograd::AccumulateGrad"] * 2
    assert check_torch_node_names("names", names, lab_line()).passed


def test_a_fused_addmm_where_at_and_plus_make_two_nodes_is_named():
    names = ["MeanBackward0", "TanhBackward0", "AddmmBackward0", "AccumulateGrad", "AccumulateGrad"]
    verdict = check_torch_node_names("names", names, lab_line())
    assert verdict.status == "fail"
    assert "no AddmmBackward0" in verdict.message and "two operations" in verdict.message


def test_a_short_name_is_told_the_full_form():
    names = ["Mean", "TanhBackward0", "AddBackward0", "MmBackward0", "AccumulateGrad", "AccumulateGrad"]
    verdict = check_torch_node_names("names", names, lab_line())
    assert "'Mean' is not a node's full name" in verdict.message
    assert "MeanBackward0" not in verdict.message  # the hint gives the pattern, not the answer


def test_the_data_counted_as_a_leaf_is_told_which_leaves_count():
    verdict = check_torch_node_names("names", RIGHT_NAMES + ["AccumulateGrad"], lab_line())
    assert verdict.status == "fail"
    assert "AccumulateGrad 3 times, backward runs 2" in verdict.message and "requires grad" in verdict.message


def test_a_missing_node_is_counted_not_named():
    verdict = check_torch_node_names("names", RIGHT_NAMES[1:], lab_line())
    assert verdict.status == "fail" and "a node is missing" in verdict.message
    assert "Mean" not in verdict.message


def test_the_unsolved_names_are_not_done_and_a_string_is_not_a_list():
    assert check_torch_node_names("names", ..., lab_line()).status == "not done"
    assert "a list of node names" in check_torch_node_names("names", "MeanBackward0", lab_line()).message


# --- exercise 2: a Function ported ----------------------------------------------------------------------

def leaky(backward_rule, where=torch.where):
    """A leaky-ReLU Function whose backward is ``backward_rule(x, slope, grad)``."""
    class TorchLeakyReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, slope):
            ctx.save_for_backward(x)
            ctx.slope = slope
            return where(x > 0, x, slope * x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return backward_rule(x, ctx.slope, grad)
    return TorchLeakyReLU


def check_leaky(fn):
    probe = torch.tensor([[-1.5, 0.3, 2.0], [0.7, -0.2, -3.0]])
    return check_torch_function("TorchLeakyReLU", fn, lambda x, s: torch.nn.functional.leaky_relu(x, s), probe, 0.1)


def test_the_ported_function_passes_with_gradcheck():
    verdict = check_leaky(leaky(lambda x, s, g: (torch.where(x > 0, g, s * g), None)))
    assert verdict.passed, verdict.message
    assert "gradcheck agrees" in verdict.message


def test_gl_where_left_in_the_port_is_named():
    verdict = check_leaky(leaky(lambda x, s, g: (torch.where(x > 0, g, s * g), None), where=gl.where))
    assert verdict.status == "fail"
    assert "a gradlab function met a torch tensor" in verdict.message and "torch's functions" in verdict.message


def test_a_backward_without_the_slopes_none_gets_torchs_own_words():
    verdict = check_leaky(leaky(lambda x, s, g: torch.where(x > 0, g, s * g)))
    assert verdict.status == "fail"
    assert "your backward raised RuntimeError" in verdict.message and "incorrect number of gradients" in verdict.message


def test_a_backward_that_forgets_the_slope_fails_on_the_gradient():
    verdict = check_leaky(leaky(lambda x, s, g: (g.clone(), None)))
    assert verdict.status == "fail" and "the gradient is not" in verdict.message


def test_the_unsolved_function_is_not_done():
    class TorchLeakyReLU(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, slope):
            ...

        @staticmethod
        def backward(ctx, grad):
            ...
    assert check_leaky(TorchLeakyReLU).status == "not done"
    assert check_leaky(...).status == "not done"


# --- exercise 3: the wrong parameter of a port ----------------------------------------------------------

def make_pair():
    gl.manual_seed(0)
    gl_model = gl.nn.Sequential(gl.nn.Flatten(), gl.nn.Linear(64, 32), gl.nn.ReLU(), gl.nn.Linear(32, 32),
                                gl.nn.ReLU(), gl.nn.Linear(32, 10))
    torch_model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
                                      torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    state = {name: torch.from_numpy(value.numpy()) for name, value in gl_model.state_dict().items()}
    state["3.bias"] = state["1.bias"]            # the slip: an index off by one layer
    torch_model.load_state_dict(state)
    return gl_model, torch_model


def test_the_wrong_parameter_is_found():
    verdict = check_wrong_parameter("wrong", "3.bias", *make_pair())
    assert verdict.passed, verdict.message


def test_a_right_parameter_is_told_why_its_gradient_differs_too():
    verdict = check_wrong_parameter("wrong", "5.weight", *make_pair())
    assert verdict.status == "fail"
    assert "holds gradlab's numbers" in verdict.message and "first module" in verdict.message


def test_the_right_module_asks_for_its_parameter():
    verdict = check_wrong_parameter("wrong", "3", *make_pair())
    assert verdict.status == "fail" and "which of its parameters" in verdict.message


def test_an_unknown_name_lists_the_parameters():
    verdict = check_wrong_parameter("wrong", "fc2.bias", *make_pair())
    assert "no parameter 'fc2.bias'" in verdict.message and "3.bias" in verdict.message
    assert check_wrong_parameter("wrong", ..., *make_pair()).status == "not done"


# --- exercise 4: weights written by hand, ported --------------------------------------------------------

@pytest.fixture
def hand_written():
    gl.manual_seed(1)
    W1, b1 = gl.randn(64, 32) / 8, 0.1 * gl.randn(32)
    W2, b2 = gl.randn(32, 32) / 32 ** 0.5, 0.1 * gl.randn(32)
    W3, b3 = gl.randn(32, 10) / 32 ** 0.5, 0.1 * gl.randn(10)

    def loss(X, y):
        h = (X.flatten(1) @ W1 + b1).relu()
        h = (h @ W2 + b2).relu()
        return gl.nn.functional.cross_entropy(h @ W3 + b3, y)

    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
                              torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    x, y = gl.rand(16, 1, 8, 8), gl.randint(0, 10, (16,))
    weights = [W1, b1, W2, b2, W3, b3]

    def check_state(transpose=(True, True, True), convert=lambda t: torch.from_numpy(t.numpy())):
        state = {}
        for (index, W, b), flip in zip(((1, W1, b1), (3, W2, b2), (5, W3, b3)), transpose):
            state[f"{index}.weight"] = convert(W).T if flip else convert(W)
            state[f"{index}.bias"] = convert(b)
        return check_ported_weights("state", state, net, loss, weights, x, y)
    check_state.net = net
    return check_state


def test_the_transposed_weights_give_the_same_loss(hand_written):
    verdict = hand_written()
    assert verdict.passed, verdict.message
    assert "the same loss in both engines" in verdict.message


def test_a_square_weight_left_in_gradlabs_layout_is_named(hand_written):
    verdict = hand_written(transpose=(True, False, True))
    assert verdict.status == "fail"
    assert "'3.weight'" in verdict.message and "(in, out)" in verdict.message and "x @ weight.T" in verdict.message


def test_a_rectangular_weight_untransposed_is_told_linears_layout(hand_written):
    verdict = hand_written(transpose=(False, True, True))
    assert "'1.weight' has shape (64, 32)" in verdict.message and "(out_features, in_features)" in verdict.message


def test_gradlab_tensors_are_told_to_become_torch_tensors(hand_written):
    verdict = hand_written(convert=lambda t: t)
    assert verdict.status == "fail" and "torch.from_numpy(t.numpy())" in verdict.message


def test_a_missing_key_is_refused_by_name():
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(64, 32))
    refused = check_ported_weights("state", {"1.weight": torch.zeros(32, 64)}, model, lambda x, y: gl.tensor(0.0),
                                   [], gl.rand(2, 64), gl.randint(0, 10, (2,)))
    assert refused.status == "fail" and "load_state_dict refused it" in refused.message and "1.bias" in refused.message
    assert check_ported_weights("state", ..., model, None, [], None, None).status == "not done"


def test_the_check_loads_a_copy_not_the_learners_model(hand_written):
    before = {k: v.clone() for k, v in hand_written.net.state_dict().items()}
    assert hand_written().passed
    assert all(torch.equal(before[k], v) for k, v in hand_written.net.state_dict().items())

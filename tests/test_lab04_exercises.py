"""Lab 4's exercises (labs/04-backprop-ninja.ipynb): each one's setup rebuilt as the lab builds it; the right
answer passes its check, and each plausible wrong answer fails with the hint that points at its mistake."""

import math

import pytest

import gradlab as gl
import gradlab.nn.functional as F
from gradlab import lab


@pytest.fixture(scope="module")
def net():
    """The lab's network (section 1), backward run, and every right answer as the solution writes it."""
    gl.manual_seed(4)
    N, D, H, C = 32, 10, 16, 5
    X = gl.randn(N, D, dtype=gl.float64)
    y = gl.randint(0, C, (N,))
    W1 = (gl.randn(D, H, dtype=gl.float64) / D ** 0.5).requires_grad_()
    gamma = (1 + 0.1 * gl.randn(H, dtype=gl.float64)).requires_grad_()
    beta = (0.1 * gl.randn(H, dtype=gl.float64)).requires_grad_()
    W2 = (gl.randn(H, C, dtype=gl.float64) / H ** 0.5).requires_grad_()
    b2 = (0.1 * gl.randn(C, dtype=gl.float64)).requires_grad_()

    def forward(W1=W1):
        hprebn = X @ W1
        hpre = F.batch_norm(hprebn, None, None, gamma, beta, training=True)
        h = hpre.tanh()
        logits = h @ W2 + b2
        return hprebn, hpre, h, logits, F.cross_entropy(logits, y)

    with lab.record() as rec:
        hprebn, hpre, h, logits, loss = forward()
    for t in (hprebn, hpre, h, logits):
        t.retain_grad()
    loss.backward()
    mean = hprebn.mean(0)
    inv_std = (((hprebn - mean) ** 2).mean(0) + 1e-5) ** -0.5
    xhat = (hprebn - mean) * inv_std
    dlogits = (F.softmax(logits, dim=1) - F.one_hot(y, C)) / N
    dh = dlogits @ W2.T
    dhpre = (1 - h ** 2) * dh
    dhprebn = gamma * inv_std / N * (N * dhpre - dhpre.sum(0) - xhat * (dhpre * xhat).sum(0))
    return dict(N=N, C=C, X=X, y=y, W1=W1, gamma=gamma, beta=beta, W2=W2, b2=b2, forward=forward, rec=rec,
                hprebn=hprebn, hpre=hpre, h=h, logits=logits, loss=loss, inv_std=inv_std, xhat=xhat,
                dlogits=dlogits, dh=dh, dW2=h.T @ dlogits, db2=dlogits.sum(0), dhpre=dhpre,
                dgamma=(dhpre * xhat).sum(0), dbeta=dhpre.sum(0), dhprebn=dhprebn, dW1=X.T @ dhprebn)


def test_the_loss_at_initialisation_is_near_ln_c_as_the_lab_says(net):
    assert abs(net["loss"].item() - math.log(net["C"])) < 0.2


def test_exercise_1_dlogits(net):
    assert lab.check_gradient("dlogits", net["dlogits"], net["logits"]).passed
    P, Y = F.softmax(net["logits"], dim=1), F.one_hot(net["y"], net["C"])
    assert "off by the same factor" in lab.check_gradient("dlogits", P - Y, net["logits"]).message  # forgot 1/N
    assert "wrong sign" in lab.check_gradient("dlogits", (Y - P) / net["N"], net["logits"]).message
    no_softmax = lab.check_gradient("dlogits", (net["logits"] - Y) / net["N"], net["logits"])
    assert not no_softmax and "elements are off" in no_softmax.message


def test_exercise_2_layer_2(net):
    dlogits, h, W2 = net["dlogits"], net["h"], net["W2"]
    assert lab.check_gradients({"dh": (net["dh"], h), "dW2": (net["dW2"], W2), "db2": (net["db2"], net["b2"])})
    factors_swapped = lab.check_gradient("dh", W2 @ dlogits.T, h)
    assert "the answer has shape (32, 16), yours has (16, 32)" in factors_swapped.message and "matmul" in \
        factors_swapped.message
    transposed = lab.check_gradient("dW2", dlogits.T @ h, W2)
    assert "the answer has shape (16, 5), yours has (5, 16)" in transposed.message and ".T" in transposed.message
    unsummed = lab.check_gradient("db2", dlogits, net["b2"])
    assert "broadcast over dimension 0" in unsummed.message
    kept = lab.check_gradient("db2", dlogits.sum(0, keepdim=True), net["b2"])
    assert "dimension of size 1 more or fewer" in kept.message


def test_exercise_3_through_tanh(net):
    dh, h, hpre = net["dh"], net["h"], net["hpre"]
    assert lab.check_gradient("dhpre", net["dhpre"], hpre).passed
    assert "elements are off" in lab.check_gradient("dhpre", dh, hpre).message  # tanh's slope forgotten
    slip = lab.check_gradient("dhpre", (1 - h) * dh, hpre)  # the lab's slip, section 7
    assert not slip and "elements are off" in slip.message
    matmul = lab.check_gradient("dhpre", (1 - h ** 2) @ dh.T, hpre)  # @ for ⊙
    assert "the answer has shape (32, 16), yours has (32, 32)" in matmul.message


def test_exercise_4_batchnorm(net):
    dhpre, xhat, inv_std, gamma, N = net["dhpre"], net["xhat"], net["inv_std"], net["gamma"], net["N"]
    assert lab.check_gradients({"dgamma": (net["dgamma"], gamma), "dbeta": (net["dbeta"], net["beta"]),
                                "dhprebn": (net["dhprebn"], net["hprebn"])})
    assert "broadcast over dimension 0" in lab.check_gradient("dgamma", dhpre * xhat, gamma).message
    assert "broadcast over dimension 0" in lab.check_gradient("dbeta", dhpre, net["beta"]).message
    mean_term_forgotten = gamma * inv_std / N * (N * dhpre - xhat * (dhpre * xhat).sum(0))
    verdict = lab.check_gradient("dhprebn", mean_term_forgotten, net["hprebn"])
    assert not verdict and "elements are off" in verdict.message
    both_forgotten = gamma * inv_std * dhpre  # the mean and the variance taken as constants
    assert "elements are off" in lab.check_gradient("dhprebn", both_forgotten, net["hprebn"]).message
    no_gamma = inv_std / N * (N * dhpre - dhpre.sum(0) - xhat * (dhpre * xhat).sum(0))
    assert not lab.check_gradient("dhprebn", no_gamma, net["hprebn"])
    no_n = gamma * inv_std * (N * dhpre - dhpre.sum(0) - xhat * (dhpre * xhat).sum(0))
    assert "off by the same factor" in lab.check_gradient("dhprebn", no_n, net["hprebn"]).message


def test_exercise_5_layer_1_against_the_engine_and_finite_differences(net):
    X, W1, dhprebn = net["X"], net["W1"], net["dhprebn"]
    loss_at = lambda W: net["forward"](W)[-1]  # noqa: E731 (as the lab writes it)
    assert lab.check_gradient("dW1", net["dW1"], W1).passed
    numerically = lab.check_numerically("dW1", net["dW1"], loss_at, W1)
    assert numerically.passed and numerically.band.startswith("right")
    transposed = lab.check_gradient("dW1", dhprebn.T @ X, W1)
    assert "the answer has shape (10, 16), yours has (16, 10)" in transposed.message
    skipped_batchnorm = X.T @ net["dhpre"]  # the BatchNorm's backward left out
    assert not lab.check_numerically("dW1", skipped_batchnorm, loss_at, W1)
    assert "wrong sign" in lab.check_gradient("dW1", -net["dW1"], W1).message


def test_exercise_6_relu(net):
    z = gl.tensor([[-1.5, 0.0, 0.7], [2.0, -0.3, 0.0]], dtype=gl.float64, requires_grad=True)
    w = gl.tensor([[0.5, -1.0, 2.0], [1.0, 3.0, -2.0]], dtype=gl.float64)
    (z.relu() * w).sum().backward()
    assert lab.check_gradient("dz", w * (z > 0), z).passed
    mask_forgotten = lab.check_gradient("dz", w, z)
    assert not mask_forgotten and "elements are off" in mask_forgotten.message
    the_other_side = lab.check_gradient("dz", w * (z >= 0), z)  # right, but not the engine's choice at 0
    assert "2 of 6 elements are off; the worst at index (0, 1)" in the_other_side.message
    kink = lab.check_numerically("dz", z.grad, lambda t: (t.relu() * w).sum(), z)
    assert not kink and "(at index (0, 1))" in kink.message and kink.band.startswith("wrong")


class SiLU(gl.autograd.Function):
    """x · sigmoid(x), as the lab writes it; the tests swap its backward."""

    @staticmethod
    def forward(ctx, x):
        s = x.sigmoid()
        ctx.save_for_backward(x, s)
        return x * s

    @staticmethod
    def backward(ctx, grad):
        x, s = ctx.saved_tensors
        return grad * s * (1 + x * (1 - s))


@pytest.mark.parametrize("wrong, hint", [
    (lambda ctx, grad: grad * ctx.saved_tensors[1], "elements are off"),  # the product rule's second term
    (lambda ctx, grad: grad * ctx.saved_tensors[1] * (1 - ctx.saved_tensors[1]), "elements are off"),  # σ' only
    (lambda ctx, grad: -grad * ctx.saved_tensors[1] * (1 + ctx.saved_tensors[0] * (1 - ctx.saved_tensors[1])),
     "wrong sign"),
])
def test_exercise_7_a_function_of_your_own(net, monkeypatch, wrong, hint):
    pytest.importorskip("anywidget")
    probe = gl.randn(4, 3, dtype=gl.float64, requires_grad=True)
    with lab.record() as rec:
        F.cross_entropy(SiLU.apply(net["X"] @ net["W1"]) @ net["W2"] + net["b2"], net["y"])
    view = lab.GraphView(rec)
    (node,) = view.find("SiLU")
    assert lab.check_function("SiLU", SiLU.apply, F.silu, probe, gradients=True).passed
    assert lab.check_this_node("SiLU backward", view, node).passed
    monkeypatch.setattr(SiLU, "backward", staticmethod(wrong))
    against_engine = lab.check_function("SiLU", SiLU.apply, F.silu, probe, gradients=True)
    assert not against_engine and "the gradient of input 0 is not" in against_engine.message and hint in \
        against_engine.message
    against_slopes = lab.check_this_node("SiLU backward", view, node)
    assert not against_slopes and "DISAGREES with finite differences" in against_slopes.message


def test_the_lab_graph_coloured_by_a_slip_is_bright_only_below_it(net):
    """Section 7: a wrong tanh slope makes Normalize and everything backward reaches after it wrong."""
    pytest.importorskip("anywidget")
    view = lab.GraphView(net["rec"])
    names = {"dlogits": "logits", "dh": "h", "dW2": "W2", "db2": "b2", "dhpre": "hpre", "dgamma": "gamma",
             "dbeta": "beta", "dhprebn": "hprebn", "dW1": "W1"}
    answers = {name: (net[name], net[tensor]) for name, tensor in names.items()}
    answers["dhpre"] = ((1 - net["h"]) * net["dh"], net["hpre"])
    lab.check_gradients(answers).show_on(view)
    sizes = view._added_modes["yours"][0]
    assert sizes[view.graph.node_for(net["h"].grad_fn).id] < 1e-7
    assert sizes[view.graph.node_for(net["hpre"].grad_fn).id] > 1e-2

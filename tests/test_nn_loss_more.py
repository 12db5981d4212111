"""The margin, triplet and likelihood losses: functional forms and layers against PyTorch, gradchecks, errors."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck

REDUCTIONS = ["mean", "sum", "none"]
RNG = np.random.default_rng(0)
X, Y, Z = randn(4, 5), randn(4, 5, seed=1), randn(4, 5, seed=2)
SIGNS = np.where(RNG.random((4, 5)) > 0.5, 1.0, -1.0)
LABELS = RNG.integers(0, 5, 4)
MULTI_LABELS = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0], [2, 2, -1, 0, 0]])
VAR = np.abs(randn(4, 5, seed=3)) + np.eye(4, 5) * 1e-9  # one variance below eps: clamped
COUNTS = RNG.integers(0, 5, (4, 5)).astype(np.float64)


def leaf(array):
    return gl.tensor(array, requires_grad=True)


# (gradlab layer, torch layer, inputs): each with every reduction
LAYERS = [
    (lambda r: nn.HingeEmbeddingLoss(margin=0.5, reduction=r), lambda r: torch.nn.HingeEmbeddingLoss(0.5, reduction=r),
     (X, SIGNS)),
    (lambda r: nn.SoftMarginLoss(reduction=r), lambda r: torch.nn.SoftMarginLoss(reduction=r), (X, SIGNS), (1,)),
    (lambda r: nn.MultiLabelSoftMarginLoss(reduction=r), lambda r: torch.nn.MultiLabelSoftMarginLoss(reduction=r),
     (X, (SIGNS > 0).astype(np.float64))),
    (lambda r: nn.MultiMarginLoss(reduction=r), lambda r: torch.nn.MultiMarginLoss(reduction=r), (X, LABELS)),
    (lambda r: nn.MultiMarginLoss(p=2, margin=0.7, weight=gl.tensor(np.arange(1.0, 6.0)), reduction=r),
     lambda r: torch.nn.MultiMarginLoss(p=2, margin=0.7, weight=torch.arange(1.0, 6.0, dtype=torch.float64),
                                        reduction=r), (X, LABELS)),
    (lambda r: nn.MultiLabelMarginLoss(reduction=r), lambda r: torch.nn.MultiLabelMarginLoss(reduction=r),
     (X, MULTI_LABELS)),
    (lambda r: nn.TripletMarginLoss(margin=2.0, p=3, swap=True, reduction=r),
     lambda r: torch.nn.TripletMarginLoss(margin=2.0, p=3, swap=True, reduction=r), (X, Y, Z)),
    (lambda r: nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True, reduction=r),
     lambda r: torch.nn.TripletMarginWithDistanceLoss(margin=2.0, swap=True, reduction=r), (X, Y, Z)),
    (lambda r: nn.TripletMarginWithDistanceLoss(distance_function=nn.CosineSimilarity(), reduction=r),
     lambda r: torch.nn.TripletMarginWithDistanceLoss(distance_function=torch.nn.CosineSimilarity(), reduction=r),
     (X, Y, Z)),
    (lambda r: nn.GaussianNLLLoss(full=True, reduction=r), lambda r: torch.nn.GaussianNLLLoss(full=True, reduction=r),
     (X, Y, VAR)),
    (lambda r: nn.GaussianNLLLoss(reduction=r), lambda r: torch.nn.GaussianNLLLoss(reduction=r), (X, Y, VAR[:, 0])),
    (lambda r: nn.GaussianNLLLoss(reduction=r), lambda r: torch.nn.GaussianNLLLoss(reduction=r), (X, Y, VAR[:, :1])),
    (lambda r: nn.PoissonNLLLoss(reduction=r), lambda r: torch.nn.PoissonNLLLoss(reduction=r), (X, COUNTS)),
    (lambda r: nn.PoissonNLLLoss(log_input=False, full=True, reduction=r),
     lambda r: torch.nn.PoissonNLLLoss(log_input=False, full=True, reduction=r), (np.abs(X) + 0.1, COUNTS + 2)),
]


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", range(len(LAYERS)))
def test_loss_layers_match_torch(case, reduction):
    make, make_torch, inputs, *frozen = LAYERS[case]
    compare_modules(make(reduction), make_torch(reduction), *inputs, frozen=frozen[0] if frozen else ())


@requires_torch
def test_unbatched_margin_losses_match_torch():
    compare_modules(nn.MultiMarginLoss(), torch.nn.MultiMarginLoss(), X[0], np.array(2))
    compare_modules(nn.MultiLabelMarginLoss(), torch.nn.MultiLabelMarginLoss(), X[0], MULTI_LABELS[0])
    compare_modules(nn.TripletMarginLoss(), torch.nn.TripletMarginLoss(), X[0], Y[0], Z[0])
    compare_modules(nn.MultiLabelSoftMarginLoss(weight=gl.tensor(np.arange(5.0))),
                    torch.nn.MultiLabelSoftMarginLoss(weight=torch.arange(5.0, dtype=torch.float64)),
                    X, (SIGNS > 0).astype(np.float64))


@requires_torch
def test_gaussian_nll_accepts_a_float_variance_and_poisson_the_legacy_flags():
    assert_close(F.gaussian_nll_loss(gl.tensor(X), gl.tensor(Y), 0.5),
                 torch.nn.functional.gaussian_nll_loss(torch.tensor(X), torch.tensor(Y), 0.5))
    with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
        out = F.poisson_nll_loss(gl.tensor(X), gl.tensor(COUNTS), reduce=False)
    assert out.shape == (4, 5)


FUNCTIONS = [
    (lambda x, y: F.hinge_embedding_loss(x, gl.tensor(SIGNS[:2, :3])), (X[:2, :3], Y[:2, :3])),
    (lambda x, y: F.soft_margin_loss(x, gl.tensor(SIGNS[:2, :3])), (X[:2, :3], Y[:2, :3])),
    (lambda x, y: F.multilabel_soft_margin_loss(x, y.sigmoid()), (X[:2, :3], Y[:2, :3])),
    (lambda x, y: F.multi_margin_loss(x * 0.3, gl.tensor([0, 2]), p=2), (X[:2, :3], Y[:2, :3])),
    (lambda x, y: F.multilabel_margin_loss(x * 0.3, gl.tensor([[1, -1, 0], [2, 0, 1]])), (X[:2, :3], Y[:2, :3])),
    (lambda x, y: F.triplet_margin_loss(x, y, x * 2, margin=3.0), (X[:2, :3], Y[:2, :3])),
    (lambda x, y: F.gaussian_nll_loss(x, y, x * x + 0.5, full=True), (X[:2, :3], Y[:2, :3])),
    (lambda x, y: F.poisson_nll_loss(x, y * y, full=True), (X[:2, :3], Y[:2, :3] + 2)),
]


@pytest.mark.parametrize("case", range(len(FUNCTIONS)))
def test_loss_functions_gradcheck(case):
    fn, inputs = FUNCTIONS[case]
    assert gradcheck(fn, tuple(leaf(a) for a in inputs))


def test_loss_errors_as_pytorch():
    x = gl.tensor(X)
    with pytest.raises(ValueError, match="only p == 1 and p == 2 supported"):
        F.multi_margin_loss(x, gl.tensor(LABELS), p=3)
    with pytest.raises(IndexError, match=r"multi_margin_loss: target out of range: got class 7 for 5 classes"):
        F.multi_margin_loss(x, gl.tensor([0, 1, 2, 7]))
    with pytest.raises(RuntimeError, match="multi_margin_loss: expected target of dtype int64"):
        F.multi_margin_loss(x, gl.tensor(LABELS).float())
    with pytest.raises(RuntimeError, match="multilabel_margin_loss: inconsistent target size"):
        F.multilabel_margin_loss(x, gl.tensor(MULTI_LABELS[:, :3]))
    with pytest.raises(RuntimeError, match="The anchor, positive, and negative tensors are expected to have the same "
                                           "number of dimensions, but got: anchor 2D, positive 1D, and negative 2D"):
        F.triplet_margin_loss(x, x[0], x)
    with pytest.raises(ValueError, match="margin must be greater than 0, got -1"):
        F.triplet_margin_with_distance_loss(x, x, x, margin=-1)
    with pytest.raises(ValueError, match="var has negative entry/entries"):
        F.gaussian_nll_loss(x, x, -gl.ones(4, 5))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        F.gaussian_nll_loss(x, x, gl.ones(3))
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.poisson_nll_loss(x, x, reduction="bad")
    with pytest.raises(ValueError, match="bad is not a valid value for reduction"):
        F.hinge_embedding_loss(x, x, reduction="bad")


@requires_torch
def test_nll_loss2d_is_the_deprecated_nll_loss():
    logp = np.ascontiguousarray(np.log(np.random.default_rng(0).dirichlet(np.ones(3), (2, 4, 5))).transpose(0, 3, 1, 2))
    target = np.random.default_rng(1).integers(0, 3, (2, 4, 5))
    with pytest.warns(FutureWarning, match="`NLLLoss2d` has been deprecated"):
        layer = nn.NLLLoss2d(ignore_index=1)
    with pytest.warns(FutureWarning):
        t_layer = torch.nn.NLLLoss2d(ignore_index=1)
    compare_modules(layer, t_layer, logp, target)
    assert isinstance(layer, nn.NLLLoss)


# --- CTC ------------------------------------------------------------------------------------------

CTC_LOGITS = randn(12, 3, 5, seed=7)
CTC_TARGETS = np.array([[1, 3, 3, 2], [4, 4, 1, 1], [2, 1, 3, 1]])  # repeated labels need a blank between
CTC_INPUT_LENGTHS, CTC_TARGET_LENGTHS = np.array([12, 10, 7]), np.array([4, 2, 3])


def ctc_pair(logits, *args, **kwargs):
    """ctc_loss on log_softmax(logits) in gradlab and torch: values and gradients with respect to the logits."""
    g, t = gl.tensor(logits, requires_grad=True), torch.tensor(logits, requires_grad=True)
    dim = logits.ndim - 1
    as_gl = [gl.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    as_torch = [torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
    out = F.ctc_loss(F.log_softmax(g, dim), *as_gl, **kwargs)
    t_out = torch.nn.functional.ctc_loss(torch.nn.functional.log_softmax(t, dim), *as_torch, **kwargs)
    assert_close(out, t_out)
    out.sum().backward()
    t_out.sum().backward()
    assert_close(g.grad, t.grad)


@requires_torch
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_loss_matches_torch(reduction):
    for zero_infinity in (False, True):
        ctc_pair(CTC_LOGITS, CTC_TARGETS, CTC_INPUT_LENGTHS, CTC_TARGET_LENGTHS, reduction=reduction,
                 zero_infinity=zero_infinity)
    layer, t_layer = nn.CTCLoss(blank=0, reduction=reduction), torch.nn.CTCLoss(blank=0, reduction=reduction)
    assert repr(layer) == repr(t_layer)
    log_probs = np.log(np.random.default_rng(0).dirichlet(np.ones(5), (12, 3)))
    # values only: PyTorch's gradient with respect to log_probs carries an extra exp(log_probs) (see ctc_pair)
    compare_modules(layer, t_layer, log_probs, CTC_TARGETS, CTC_INPUT_LENGTHS, CTC_TARGET_LENGTHS, frozen=(0,))


@requires_torch
def test_ctc_loss_concatenated_targets_other_blank_unbatched_and_empty():
    ctc_pair(CTC_LOGITS, np.array([1, 1, 1, 1, 3, 4, 0]), (5, 2, 3), (4, 1, 2), blank=2, reduction="none",
             zero_infinity=True)  # the first sample cannot be aligned: loss and gradient 0
    ctc_pair(CTC_LOGITS[:, 0].copy(), CTC_TARGETS[0], np.array(12), np.array(4))
    ctc_pair(CTC_LOGITS, CTC_TARGETS, CTC_INPUT_LENGTHS, np.array([0, 2, 3]), reduction="none")


def test_ctc_loss_is_infinite_for_an_impossible_alignment():
    lp = F.log_softmax(gl.tensor(CTC_LOGITS), 2)
    loss = F.ctc_loss(lp, gl.tensor([[1, 1, 1]] * 3), (3, 5, 5), (3, 3, 3), reduction="none")
    assert loss.numpy()[0] == np.inf and np.isfinite(loss.numpy()[1:]).all()  # 1 _ 1 _ 1 needs 5 steps


def test_ctc_loss_gradcheck():
    lp = gl.tensor(np.log(np.random.default_rng(0).dirichlet(np.ones(3), (4, 2))), requires_grad=True)
    assert gradcheck(lambda x: F.ctc_loss(x, gl.tensor([[1, 2], [1, 1]]), (4, 3), (2, 1)), (lp,))


def test_ctc_loss_errors():
    lp = gl.tensor(CTC_LOGITS)
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 12, but got value 13"):
        F.ctc_loss(lp, gl.tensor(CTC_TARGETS), (13, 1, 1), (1, 1, 1))
    with pytest.raises(RuntimeError, match="blank must be in label range"):
        F.ctc_loss(lp, gl.tensor(CTC_TARGETS), (12, 1, 1), (1, 1, 1), blank=5)
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 5 at dimension 1"):
        F.ctc_loss(lp, gl.tensor(CTC_TARGETS), (12, 1, 1), (5, 1, 1))
    with pytest.raises(RuntimeError, match="expected target_lengths to hold 3 lengths"):
        F.ctc_loss(lp, gl.tensor(CTC_TARGETS), (12, 1, 1), (5, 1))

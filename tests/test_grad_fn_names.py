"""grad_fn names are PyTorch's where the operation is PyTorch's, so what a tutorial prints, gradlab prints.

Each case builds one op in gradlab (and, where PyTorch is installed, the same op in torch) and
compares the class name of its grad_fn with the name PyTorch records — written here for the runs
without torch, and checked against torch itself where it is installed.
"""

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd import Function
from gradlab.lab.capture import short_name
from helpers import requires_torch, torch

X = np.arange(12.0).reshape(3, 4) / 10 - 0.55


def _t(L, data):
    return L.tensor(data)


# name -> (the op, built from the library L, its functional module F and a (3, 4) float64 leaf x; PyTorch's name)
OPS = {
    "x + y": (lambda L, F, x: x + x, "AddBackward0"),
    "x + 1": (lambda L, F, x: x + 1, "AddBackward0"),
    "add alpha": (lambda L, F, x: L.add(x, x, alpha=2), "AddBackward0"),
    "x - y": (lambda L, F, x: x - x, "SubBackward0"),
    "1 - x": (lambda L, F, x: 1 - x, "RsubBackward1"),
    "x * y": (lambda L, F, x: x * x, "MulBackward0"),
    "x * 2": (lambda L, F, x: x * 2, "MulBackward0"),
    "x / y": (lambda L, F, x: x / (x + 1), "DivBackward0"),
    "-x": (lambda L, F, x: -x, "NegBackward0"),
    "x ** 2": (lambda L, F, x: x ** 2, "PowBackward0"),
    "x ** y": (lambda L, F, x: x.abs() ** x, "PowBackward1"),
    "2 ** x": (lambda L, F, x: 2 ** x, "PowBackward2"),
    "x % 2": (lambda L, F, x: x % 2, "RemainderBackward0"),
    "square": (lambda L, F, x: x.square(), "PowBackward0"),
    "exp": (lambda L, F, x: x.exp(), "ExpBackward0"),
    "log": (lambda L, F, x: x.abs().log(), "LogBackward0"),
    "log1p": (lambda L, F, x: x.abs().log1p(), "Log1PBackward0"),
    "sqrt": (lambda L, F, x: x.abs().sqrt(), "SqrtBackward0"),
    "tanh": (lambda L, F, x: x.tanh(), "TanhBackward0"),
    "sigmoid": (lambda L, F, x: x.sigmoid(), "SigmoidBackward0"),
    "relu": (lambda L, F, x: x.relu(), "ReluBackward0"),
    "F.relu": (lambda L, F, x: F.relu(x), "ReluBackward0"),
    "abs": (lambda L, F, x: x.abs(), "AbsBackward0"),
    "sin": (lambda L, F, x: x.sin(), "SinBackward0"),
    "clamp": (lambda L, F, x: x.clamp(-0.2, 0.2), "ClampBackward1"),
    "clamp by tensors": (lambda L, F, x: x.clamp(min=x * 0), "ClampBackward0"),
    "deg2rad": (lambda L, F, x: x.deg2rad(), "Deg2RadBackward0"),
    "gelu": (lambda L, F, x: F.gelu(x), "GeluBackward0"),
    "silu": (lambda L, F, x: F.silu(x), "SiluBackward0"),
    "leaky_relu": (lambda L, F, x: F.leaky_relu(x), "LeakyReluBackward0"),
    "logsigmoid": (lambda L, F, x: F.logsigmoid(x), "LogSigmoidBackward0"),
    "softplus": (lambda L, F, x: F.softplus(x), "SoftplusBackward0"),
    "where": (lambda L, F, x: L.where(x > 0, x, x * 2), "WhereBackward0"),
    "maximum": (lambda L, F, x: L.maximum(x, x * 2), "MaximumBackward0"),
    "atan2": (lambda L, F, x: L.atan2(x, x + 1), "Atan2Backward0"),
    "sum": (lambda L, F, x: x.sum(), "SumBackward0"),
    "sum(dim)": (lambda L, F, x: x.sum(1), "SumBackward1"),
    "sum(dim, keepdim)": (lambda L, F, x: x.sum(1, keepdim=True), "SumBackward1"),
    "mean": (lambda L, F, x: x.mean(), "MeanBackward0"),
    "mean(dim)": (lambda L, F, x: x.mean(0), "MeanBackward1"),
    "prod": (lambda L, F, x: x.prod(), "ProdBackward0"),
    "prod(dim)": (lambda L, F, x: x.prod(1), "ProdBackward1"),
    "max": (lambda L, F, x: x.max(), "MaxBackward1"),
    "max(dim)": (lambda L, F, x: x.max(1)[0], "MaxBackward0"),
    "min": (lambda L, F, x: x.min(), "MinBackward1"),
    "min(dim)": (lambda L, F, x: x.min(1).values, "MinBackward0"),
    "amax": (lambda L, F, x: x.amax(1), "AmaxBackward0"),
    "std": (lambda L, F, x: x.std(), "StdBackward0"),
    "var(dim)": (lambda L, F, x: x.var(1), "VarBackward0"),
    "norm": (lambda L, F, x: x.norm(), "LinalgVectorNormBackward0"),
    "logsumexp": (lambda L, F, x: x.logsumexp(1), "LogsumexpBackward0"),
    "cumsum": (lambda L, F, x: x.cumsum(1), "CumsumBackward0"),
    "logcumsumexp": (lambda L, F, x: x.logcumsumexp(1), "LogcumsumexpBackward0"),
    "x.t()": (lambda L, F, x: x.t(), "TBackward0"),
    "x.T": (lambda L, F, x: x.T, "PermuteBackward0"),
    "x.mT": (lambda L, F, x: x.mT, "TransposeBackward0"),
    "transpose": (lambda L, F, x: x.transpose(0, 1), "TransposeBackward0"),
    "permute": (lambda L, F, x: x.permute(1, 0), "PermuteBackward0"),
    "view": (lambda L, F, x: x.view(-1), "ViewBackward0"),
    "reshape (a view)": (lambda L, F, x: x.reshape(4, 3), "ViewBackward0"),
    "flatten": (lambda L, F, x: x.flatten(), "ViewBackward0"),
    "unsqueeze": (lambda L, F, x: x.unsqueeze(0), "UnsqueezeBackward0"),
    "squeeze()": (lambda L, F, x: x[None].squeeze(), "SqueezeBackward0"),
    "squeeze(dim)": (lambda L, F, x: x[None].squeeze(0), "SqueezeBackward1"),
    "squeeze(dims)": (lambda L, F, x: x[None, None].squeeze((0, 1)), "SqueezeBackward2"),
    "expand": (lambda L, F, x: x[:1].expand(3, 4), "ExpandBackward0"),
    "x[0]": (lambda L, F, x: x[0], "SelectBackward0"),
    "x[-1]": (lambda L, F, x: x[-1], "SelectBackward0"),
    "x[..., 0]": (lambda L, F, x: x[..., 0], "SelectBackward0"),
    "x[1:]": (lambda L, F, x: x[1:], "SliceBackward0"),
    "x[:, 1:]": (lambda L, F, x: x[:, 1:], "SliceBackward0"),
    "x[0, 1:]": (lambda L, F, x: x[0, 1:], "SliceBackward0"),
    "x[1:, 0]": (lambda L, F, x: x[1:, 0], "SelectBackward0"),
    "x[:]": (lambda L, F, x: x[:], "SliceBackward0"),
    "x[...]": (lambda L, F, x: x[...], "AliasBackward0"),
    "x[None]": (lambda L, F, x: x[None], "UnsqueezeBackward0"),
    "x[0, None]": (lambda L, F, x: x[0, None], "UnsqueezeBackward0"),
    "x[tensor]": (lambda L, F, x: x[L.tensor([0, 2])], "IndexBackward0"),
    "x[mask]": (lambda L, F, x: x[x > 0], "IndexBackward0"),
    "x[list]": (lambda L, F, x: x[[0, 1]], "IndexBackward0"),
    "gather": (lambda L, F, x: x.gather(1, L.tensor([[0], [1], [2]])), "GatherBackward0"),
    "take_along_dim": (lambda L, F, x: L.take_along_dim(x, L.tensor([[0], [1], [2]]), 1), "GatherBackward0"),
    "index_select": (lambda L, F, x: x.index_select(0, L.tensor([0, 2])), "IndexSelectBackward0"),
    "narrow": (lambda L, F, x: x.narrow(0, 0, 2), "SliceBackward0"),
    "masked_fill": (lambda L, F, x: x.masked_fill(x > 0, 0.0), "MaskedFillBackward0"),
    "a @ b (matrices)": (lambda L, F, x: x @ x.t(), "MmBackward0"),
    "mm": (lambda L, F, x: L.mm(x, x.t()), "MmBackward0"),
    "matrix @ vector": (lambda L, F, x: x @ x[0], "MvBackward0"),
    "vector @ vector": (lambda L, F, x: x[0] @ x[1], "DotBackward0"),
    "bmm": (lambda L, F, x: L.bmm(x[None], x.t()[None]), "BmmBackward0"),
    "cat": (lambda L, F, x: L.cat([x, x]), "CatBackward0"),
    "stack": (lambda L, F, x: L.stack([x, x]), "StackBackward0"),
    "split": (lambda L, F, x: x.split(2)[0], "SplitBackward0"),
    "chunk": (lambda L, F, x: x.chunk(2)[0], "SplitBackward0"),
    "unbind": (lambda L, F, x: x.unbind(0)[0], "UnbindBackward0"),
    "softmax": (lambda L, F, x: x.softmax(1), "SoftmaxBackward0"),
    "log_softmax": (lambda L, F, x: F.log_softmax(x, dim=1), "LogSoftmaxBackward0"),
    "clone": (lambda L, F, x: x.clone(), "CloneBackward0"),
    "x.double()": (lambda L, F, x: x.float(), "ToCopyBackward0"),
    "flip": (lambda L, F, x: x.flip(0), "FlipBackward0"),
    "roll": (lambda L, F, x: x.roll(1, 0), "RollBackward0"),
    "repeat": (lambda L, F, x: x.repeat(2, 1), "RepeatBackward0"),
    "tril": (lambda L, F, x: x.tril(), "TrilBackward0"),
    "diagonal": (lambda L, F, x: x.diagonal(), "DiagonalBackward0"),
    "pad": (lambda L, F, x: F.pad(x, (1, 1)), "ConstantPadNdBackward0"),
    "linear with bias": (lambda L, F, x: F.linear(x, x[:3, :], x[0, :3]), "AddmmBackward0"),
    "linear without bias": (lambda L, F, x: F.linear(x, x[:3, :]), "MmBackward0"),
    "embedding": (lambda L, F, x: F.embedding(L.tensor([0, 2]), x), "EmbeddingBackward0"),
    "conv1d": (lambda L, F, x: F.conv1d(x[None], x[None, :, :2]), "ConvolutionBackward0"),
    "conv2d": (lambda L, F, x: F.conv2d(x[None, None], x[None, None, :2, :2]), "ConvolutionBackward0"),
    "conv_transpose2d": (lambda L, F, x: F.conv_transpose2d(x[None, None], x[None, None, :2, :2]),
                         "ConvolutionBackward0"),
    "max_pool2d": (lambda L, F, x: F.max_pool2d(x[None, None], 2), "MaxPool2DWithIndicesBackward0"),
    "max_pool3d": (lambda L, F, x: F.max_pool3d(x[None, None, None], (1, 2, 2)), "MaxPool3DWithIndicesBackward0"),
    "layer_norm": (lambda L, F, x: F.layer_norm(x, (4,)), "NativeLayerNormBackward0"),
    "batch_norm": (lambda L, F, x: F.batch_norm(x, None, None, training=True), "NativeBatchNormBackward0"),
    "unfold (im2col)": (lambda L, F, x: F.unfold(x[None, None], 2), "Im2ColBackward0"),
    "mse_loss": (lambda L, F, x: F.mse_loss(x, x.detach() * 2), "MseLossBackward0"),
    "mse_loss sum": (lambda L, F, x: F.mse_loss(x, x.detach() * 2, reduction="sum"), "MseLossBackward0"),
    "mse_loss none": (lambda L, F, x: F.mse_loss(x, x.detach() * 2, reduction="none"), "MseLossBackward0"),
    "huber_loss": (lambda L, F, x: F.huber_loss(x, x.detach() * 2), "HuberLossBackward0"),
    "smooth_l1_loss": (lambda L, F, x: F.smooth_l1_loss(x, x.detach() * 2), "SmoothL1LossBackward0"),
    "l1_loss": (lambda L, F, x: F.l1_loss(x, x.detach() * 2), "MeanBackward0"),
    "cross_entropy": (lambda L, F, x: F.cross_entropy(x, L.tensor([0, 1, 3])), "NllLossBackward0"),
    "cross_entropy (N, C, d)": (lambda L, F, x: F.cross_entropy(x[None].transpose(1, 2), L.tensor([[0, 1, 2]])),
                                "NllLoss2DBackward0"),
    "nll_loss": (lambda L, F, x: F.nll_loss(x, L.tensor([0, 1, 3])), "NllLossBackward0"),
    "binary_cross_entropy": (lambda L, F, x: F.binary_cross_entropy(x.sigmoid(), x.detach().sigmoid()),
                             "BinaryCrossEntropyBackward0"),
    "binary_cross_entropy_with_logits": (
        lambda L, F, x: F.binary_cross_entropy_with_logits(x, x.detach().sigmoid()),
        "BinaryCrossEntropyWithLogitsBackward0"),
    "bce with logits, weights": (
        lambda L, F, x: F.binary_cross_entropy_with_logits(x, x.detach().sigmoid(), weight=x.detach().abs(),
                                                           pos_weight=x.detach()[0].abs()),
        "BinaryCrossEntropyWithLogitsBackward0"),
}

# Where PyTorch records a chain of nodes for what gradlab's one node does, the node takes the name of
# PyTorch's node that does the work, and PyTorch's outer node is a reshape: (op, our name, PyTorch's outer name).
CHAINS = {
    "batched matmul": (lambda L, F, x: x[None] @ x.t()[None], "BmmBackward0", "UnsafeViewBackward0"),
    "linear on 3-D input": (lambda L, F, x: F.linear(x[None], x[:3, :], x[0, :3]), "AddmmBackward0", "ViewBackward0"),
    "linear on 1-D input": (lambda L, F, x: F.linear(x[0], x[:3, :], x[0, :3]), "AddmmBackward0", "ViewBackward0"),
    "reshape (a copy)": (lambda L, F, x: x.t().reshape(-1), "UnsafeViewBackward0", "UnsafeViewBackward0"),
}


def _leaf(L):
    return L.tensor(X, dtype=L.float64, requires_grad=True)


def _name(L, build):
    F = L.nn.functional
    return type(build(L, F, _leaf(L)).grad_fn).__name__


@pytest.mark.parametrize("case", list(OPS))
def test_grad_fn_is_named_as_pytorch_names_it(case):
    build, expected = OPS[case]
    y = build(gl, gl.nn.functional, _leaf(gl))
    assert type(y.grad_fn).__name__ == y.grad_fn.name() == expected
    assert repr(y.grad_fn).startswith(f"<{expected} object at 0x")


@requires_torch
@pytest.mark.parametrize("case", list(OPS))
def test_the_names_are_torchs(case):
    build, expected = OPS[case]
    assert _name(torch, build) == expected == _name(gl, build)


@pytest.mark.parametrize("case", list(CHAINS))
def test_one_node_for_a_chain_takes_the_name_of_the_node_doing_the_work(case):
    build, ours, _ = CHAINS[case]
    assert _name(gl, build) == ours


@requires_torch
@pytest.mark.parametrize("case", list(CHAINS))
def test_the_working_node_is_in_torchs_chain(case):
    build, ours, outer = CHAINS[case]
    node = build(torch, torch.nn.functional, _leaf(torch)).grad_fn
    assert type(node).__name__ == outer
    names = []
    while node is not None and len(names) < 3:
        names.append(type(node).__name__)
        node = next((n for n, _ in node.next_functions if n is not None), None)
    assert ours in names


def _chain(y, depth=4):
    """The grad_fn names from y back along each node's first input, to the leaf."""
    names, node = [], y.grad_fn
    while node is not None and len(names) < depth:
        names.append(type(node).__name__)
        node = next((n for n, _ in node.next_functions if n is not None), None)
    return names


LOSS_CHAINS = {
    "mse_loss": (lambda L, F, x: F.mse_loss(x, x.detach() * 2), ["MseLossBackward0", "AccumulateGrad"]),
    "huber_loss": (lambda L, F, x: F.huber_loss(x, x.detach() * 2), ["HuberLossBackward0", "AccumulateGrad"]),
    "huber_loss, weighted": (lambda L, F, x: F.huber_loss(x, x.detach() * 2, weight=x.detach().abs()),
                             ["MeanBackward0", "MulBackward0", "HuberLossBackward0", "AccumulateGrad"]),
    "mse_loss, weighted": (lambda L, F, x: F.mse_loss(x, x.detach() * 2, weight=x.detach().abs()),
                           ["DivBackward0", "SumBackward0", "MulBackward0", "PowBackward0"]),
    "l1_loss": (lambda L, F, x: F.l1_loss(x, x.detach() * 2),
                ["MeanBackward0", "AbsBackward0", "SubBackward0", "AccumulateGrad"]),
    "l1_loss sum": (lambda L, F, x: F.l1_loss(x, x.detach() * 2, reduction="sum"),
                    ["SumBackward0", "AbsBackward0", "SubBackward0", "AccumulateGrad"]),
    "smooth_l1_loss beta=0": (lambda L, F, x: F.smooth_l1_loss(x, x.detach() * 2, beta=0.0),
                              ["MeanBackward0", "AbsBackward0", "SubBackward0", "AccumulateGrad"]),
    "cross_entropy": (lambda L, F, x: F.cross_entropy(x, L.tensor([0, 1, 3])),
                      ["NllLossBackward0", "LogSoftmaxBackward0", "AccumulateGrad"]),
    "cross_entropy weighted": (lambda L, F, x: F.cross_entropy(x, L.tensor([0, 1, 3]), weight=L.ones(4,
                                                                                                     dtype=L.float64)),
                               ["NllLossBackward0", "LogSoftmaxBackward0", "AccumulateGrad"]),
    "cross_entropy smoothed": (lambda L, F, x: F.cross_entropy(x, L.tensor([0, 1, 3]), label_smoothing=0.1),
                               ["AddBackward0", "MulBackward0", "NllLossBackward0", "LogSoftmaxBackward0"]),
    "nll_loss": (lambda L, F, x: F.nll_loss(x, L.tensor([0, 1, 3])), ["NllLossBackward0", "AccumulateGrad"]),
    "binary_cross_entropy": (lambda L, F, x: F.binary_cross_entropy(x.sigmoid(), x.detach().sigmoid()),
                             ["BinaryCrossEntropyBackward0", "SigmoidBackward0", "AccumulateGrad"]),
    "binary_cross_entropy_with_logits": (
        lambda L, F, x: F.binary_cross_entropy_with_logits(x, x.detach().sigmoid(), reduction="sum"),
        ["BinaryCrossEntropyWithLogitsBackward0", "AccumulateGrad"]),
    "kl_div batchmean": (lambda L, F, x: F.kl_div(x.log_softmax(1), x.detach().softmax(1), reduction="batchmean"),
                         ["DivBackward0", "SumBackward0"]),
}
# (PyTorch's (1 - ε) · nll is a MulBackward1, its Scalar overload; from Python a product is MulBackward0)
TORCH_ONLY_SPELLING = {"MulBackward1": "MulBackward0"}


@pytest.mark.parametrize("case", list(LOSS_CHAINS))
def test_a_loss_records_the_nodes_pytorch_records(case):
    build, expected = LOSS_CHAINS[case]
    assert _chain(build(gl, gl.nn.functional, _leaf(gl)), len(expected)) == expected


@requires_torch
@pytest.mark.parametrize("case", list(LOSS_CHAINS))
def test_the_loss_chains_are_torchs(case):
    build, expected = LOSS_CHAINS[case]
    theirs = _chain(build(torch, torch.nn.functional, _leaf(torch)), len(expected))
    assert [TORCH_ONLY_SPELLING.get(n, n) for n in theirs] == expected


def test_a_users_function_is_named_as_torch_autograd_function_names_it():
    """PyTorch's built-in nodes end in a number; a custom Function's node is '<Name>Backward'."""
    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x * x

    y = Cube.apply(_leaf(gl))
    assert type(y.grad_fn).__name__ == "CubeBackward" and y.grad_fn.function is Cube


@requires_torch
def test_torch_names_a_users_function_the_same_way():
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x ** 3

        @staticmethod
        def backward(ctx, grad):
            return grad

    assert type(Cube.apply(_leaf(torch)).grad_fn).__name__ == "CubeBackward"


def test_a_tensor_prints_its_grad_fn_as_torch_does():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr(x.sum()) == "tensor(3., grad_fn=<SumBackward0>)"


def test_variants_keep_their_function():
    """SumBackward0 and SumBackward1 are two names of one Function's node: the tape and the rules see Sum."""
    x = _leaf(gl)
    whole, along = x.sum().grad_fn, x.sum(1).grad_fn
    assert whole.function is along.function is gl.ops.reductions.Sum
    assert type(whole) is not type(along) and type(whole).__name__ == "SumBackward0"


def test_the_lab_boxes_keep_short_labels():
    assert [short_name(n) for n in ("AddBackward0", "SumBackward1", "NllLoss2DBackward0", "CubeBackward",
                                    "AccumulateGrad", "CopySlices", "BackwardHookFunctionBackward")] == [
        "Add", "Sum", "NllLoss2D", "Cube", "AccumulateGrad", "CopySlices", "BackwardHookFunction"]


def test_a_tape_of_the_renamed_ops_saves_and_loads(tmp_path):
    """Tapes name Functions (module:class), not nodes: the ops that gained a class to carry PyTorch's node
    name (1 - x, x.t(), squeeze(dim), the losses) write down and come back."""
    import warnings

    F = gl.nn.functional
    gl.manual_seed(0)
    w = gl.randn(4, 3, requires_grad=True)

    def f(x):
        h = (1 - x @ w).t().squeeze(0).t()
        return (F.cross_entropy(h, gl.tensor([0, 1])) + F.binary_cross_entropy_with_logits(h, h.detach().sigmoid())
                + F.mse_loss(h, h.detach() * 2))

    x = gl.randn(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tape = gl.jit.trace(f, x)
    tape.save(tmp_path / "tape.npz")
    again = gl.jit.load(tmp_path / "tape.npz")
    assert again.count_ops() == tape.count_ops() and {"Rsub", "MatrixTranspose", "SqueezeDim", "LogSoftmax", "NllLoss",
                                                      "BinaryCrossEntropyWithLogits", "MseLoss"} <= set(tape.count_ops())
    assert again.replay(x).item() == f(x).item()

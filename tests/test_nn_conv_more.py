"""Conv3d / ConvTranspose3d (F.conv3d, F.conv_transpose3d) and the Fold / Unfold layers."""

import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def leaf(*shape, seed=0):
    return gl.tensor(randn(*shape, seed=seed), requires_grad=True)


@requires_torch
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1, groups=2),
                                    dict(kernel_size=(1, 2, 3), padding="same", padding_mode="reflect"),
                                    dict(kernel_size=3, padding=1, padding_mode="circular", dilation=(1, 1, 2)),
                                    dict(kernel_size=2, bias=False, padding_mode="replicate", padding=1)],
                         ids=["plain", "strided-grouped", "same-reflect", "circular-dilated", "replicate-nobias"])
def test_conv3d_matches_torch(kwargs):
    torch.manual_seed(0)
    x = randn(2, 4, 5, 4, 6)
    compare_modules(nn.Conv3d(4, 6, **kwargs), torch.nn.Conv3d(4, 6, **kwargs), x)
    compare_modules(nn.Conv3d(4, 6, **kwargs), torch.nn.Conv3d(4, 6, **kwargs), x[0])  # unbatched


@requires_torch
@pytest.mark.parametrize("kwargs", [dict(kernel_size=2, stride=2), dict(kernel_size=3, stride=2, padding=1,
                                                                        output_padding=1, groups=2),
                                    dict(kernel_size=(1, 2, 3), dilation=2)], ids=["plain", "padded", "dilated"])
def test_conv_transpose3d_matches_torch(kwargs):
    compare_modules(nn.ConvTranspose3d(4, 6, **kwargs), torch.nn.ConvTranspose3d(4, 6, **kwargs),
                    randn(2, 4, 3, 2, 4))


def test_conv3d_functional_gradcheck():
    assert gradcheck(lambda x, w, b: F.conv3d(x, w, b, padding=1, stride=(1, 2, 1)),
                     (leaf(1, 2, 3, 3, 2), leaf(3, 2, 2, 2, 2, seed=1), leaf(3, seed=2)))
    assert gradcheck(lambda x, w: F.conv_transpose3d(x, w, stride=2), (leaf(1, 2, 2, 2, 1), leaf(2, 1, 2, 2, 2,
                                                                                                  seed=1)))
    assert gradgradcheck(lambda x, w: F.conv3d(x, w), (leaf(1, 1, 3, 2, 2), leaf(1, 1, 2, 1, 2, seed=1)))


def test_conv3d_errors_name_the_layer():
    with pytest.raises(RuntimeError, match=r"Conv3d\(2→3, 2×2×2\): expected a 5-D input \(N, C, D, H, W\) or 4-D "
                                           r"\(C, D, H, W\), got 3-D input"):
        nn.Conv3d(2, 3, 2)(gl.ones(2, 4, 4))


@requires_torch
def test_fold_and_unfold_layers_match_torch():
    compare_modules(nn.Fold((4, 5), 2), torch.nn.Fold((4, 5), 2), randn(2, 12, 12))
    compare_modules(nn.Fold(output_size=(5, 5), kernel_size=3, padding=1, stride=2),
                    torch.nn.Fold(output_size=(5, 5), kernel_size=3, padding=1, stride=2), randn(2, 9, 9))
    compare_modules(nn.Unfold((2, 3), dilation=2, padding=1), torch.nn.Unfold((2, 3), dilation=2, padding=1),
                    randn(2, 3, 4, 5))
    folded = nn.Fold((3, 3), 2)(nn.Unfold(2)(gl.ones(1, 1, 3, 3)))
    assert_close(folded, [[[[1, 2, 1], [2, 4, 2], [1, 2, 1]]]])  # each pixel counted once per window covering it


GRAD_CASES = [(1, (2, 4, 9), (6, 2, 3), dict(stride=2, padding=1, groups=2)),
              (2, (2, 3, 7, 8), (4, 3, 3, 2), dict(stride=(2, 3), padding=(1, 0), dilation=(1, 2))),
              (3, (1, 2, 5, 4, 6), (3, 2, 2, 2, 3), dict(stride=2))]


@requires_torch
@pytest.mark.parametrize("nd, input_size, weight_size, kwargs", GRAD_CASES, ids=["1d", "2d", "3d"])
def test_nn_grad_matches_torch(nd, input_size, weight_size, kwargs):
    x, w = randn(*input_size), randn(*weight_size, seed=1)
    y = getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **kwargs)
    g = randn(*y.shape, seed=2)
    assert_close(getattr(nn.grad, f"conv{nd}d_input")(input_size, gl.tensor(w), gl.tensor(g), **kwargs),
                 getattr(torch.nn.grad, f"conv{nd}d_input")(input_size, torch.tensor(w), torch.tensor(g), **kwargs))
    assert_close(getattr(nn.grad, f"conv{nd}d_weight")(gl.tensor(x), weight_size, gl.tensor(g), **kwargs),
                 getattr(torch.nn.grad, f"conv{nd}d_weight")(torch.tensor(x), weight_size, torch.tensor(g), **kwargs))


def test_nn_grad_is_the_gradient_of_the_convolution():
    x, w = leaf(1, 2, 5, 4), leaf(3, 2, 2, 3, seed=1)
    out = F.conv2d(x, w, stride=2, padding=1)
    g = gl.tensor(randn(*out.shape, seed=2))
    out.backward(g)
    assert_close(nn.grad.conv2d_input(x.shape, w.detach(), g, stride=2, padding=1), x.grad)
    assert_close(nn.grad.conv2d_weight(x.detach(), w.shape, g, stride=2, padding=1), w.grad)
    with pytest.raises(ValueError, match="conv2d_input: input_size must hold 4 sizes"):
        nn.grad.conv2d_input((5,), w, g)


@requires_torch
@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_matches_torch(pad):
    x, w, b = randn(7, 2, 3), randn(3, 3, 4, seed=1), randn(4, seed=2)
    pairs = [(gl.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)) for a in (x, w, b)]
    out = F.conv_tbc(*[p[0] for p in pairs], pad)
    t_out = torch.conv_tbc(*[p[1] for p in pairs], pad)
    assert_close(out, t_out)
    out.sum().backward()
    t_out.sum().backward()
    for g, t in pairs:
        assert_close(g.grad, t.grad)
    with pytest.raises(RuntimeError, match="conv_tbc: Input dim 2 \\(input channels\\) is not == dim 1"):
        F.conv_tbc(gl.ones(7, 2, 5), gl.ones(3, 3, 4), gl.ones(4))

"""F.pad, F.interpolate / Upsample, pixel_shuffle / pixel_unshuffle, channel_shuffle and the padding layers."""

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch
from nn_parity import compare_modules

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck


def leaf(*shape, seed=0):
    return gl.tensor(randn(*shape, seed=seed), requires_grad=True)


# --- pad ----------------------------------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_matches_torch_in_every_mode(mode):
    for shape, widths in [((2, 3, 5), (1, 2)), ((2, 3, 5, 4), (2, 1, 1, 3)), ((3, 5, 4), (-1, 2, 0, 1)),
                          ((1, 2, 3, 4, 3), (1, 1, 2, 0, 1, 2))]:
        if mode == "reflect" and min(widths) < 0:
            continue
        x = randn(*shape)
        out = F.pad(gl.tensor(x), widths, mode=mode)
        assert_close(out, torch.nn.functional.pad(torch.tensor(x), widths, mode=mode))
    assert gradcheck(lambda t: F.pad(t, (1, 2, 2, 1), mode=mode), (leaf(1, 2, 4, 3),))


def test_pad_constant_value_and_errors():
    out = F.pad(gl.tensor(np.ones((2, 2))), (1, 0), value=7.0).numpy()
    np.testing.assert_array_equal(out, [[7, 1, 1], [7, 1, 1]])
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(gl.ones(2, 2), (1,))
    with pytest.raises(RuntimeError, match="Padding size should be less than the corresponding input dimension"):
        F.pad(gl.ones(1, 2, 3), (3, 0), mode="reflect")


# --- padding layers -----------------------------------------------------------------------------

PAD_LAYERS = [(kind, nd) for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular") for nd in (1, 2, 3)]


@requires_torch
@pytest.mark.parametrize("kind, nd", PAD_LAYERS, ids=[f"{k}Pad{n}d" for k, n in PAD_LAYERS])
def test_padding_layers_match_torch(kind, nd):
    args = (1,) if kind != "Constant" else (1, 2.5)
    layer, t_layer = getattr(nn, f"{kind}Pad{nd}d")(*args), getattr(torch.nn, f"{kind}Pad{nd}d")(*args)
    compare_modules(layer, t_layer, randn(2, 2, *([3] * nd)))
    asymmetric = tuple(range(1, 2 * nd + 1))
    if kind != "Constant":
        compare_modules(getattr(nn, f"{kind}Pad{nd}d")(asymmetric), getattr(torch.nn, f"{kind}Pad{nd}d")(asymmetric),
                        randn(2, *([7] * nd)))  # unbatched


def test_padding_layers_name_themselves_on_a_wrong_rank():
    with pytest.raises(ValueError, match=r"ReflectionPad2d: expected 3D or 4D input \(C, H, W\) or \(N, C, H, W\) "
                                         r"\(got 2D input of shape \(3, 3\)\)"):
        nn.ReflectionPad2d(1)(gl.ones(3, 3))
    with pytest.raises(RuntimeError, match="ZeroPad2d: expected padding to be a single integer value or a list of 4"):
        nn.ZeroPad2d((1, 2, 3))


# --- interpolate --------------------------------------------------------------------------------

INTERPOLATIONS = [
    ("nearest", None, 3), ("nearest-exact", None, 3), ("linear", False, 3), ("linear", True, 3),
    ("nearest", None, 4), ("nearest-exact", None, 4), ("bilinear", False, 4), ("bilinear", True, 4),
    ("bicubic", False, 4), ("bicubic", True, 4), ("area", None, 4), ("nearest", None, 5), ("trilinear", False, 5),
    ("trilinear", True, 5), ("area", None, 5),
]
SIZES = {3: [dict(size=7), dict(scale_factor=1.5), dict(size=3)],
         4: [dict(size=(7, 3)), dict(scale_factor=(1.7, 0.6)), dict(scale_factor=2)],
         5: [dict(size=(3, 5, 2)), dict(scale_factor=1.4)]}


@requires_torch
@pytest.mark.parametrize("mode, align_corners, ndim", INTERPOLATIONS, ids=lambda v: str(v))
def test_interpolate_matches_torch(mode, align_corners, ndim):
    shape = {3: (2, 2, 5), 4: (2, 2, 5, 4), 5: (1, 2, 3, 4, 3)}[ndim]
    x = randn(*shape)
    for kwargs in SIZES[ndim]:
        g, t = gl.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        out = F.interpolate(g, mode=mode, align_corners=align_corners, **kwargs)
        t_out = torch.nn.functional.interpolate(t, mode=mode, align_corners=align_corners, **kwargs)
        assert_close(out, t_out, rtol=1e-12, atol=1e-12)
        seed = randn(*out.shape, seed=3)
        out.backward(gl.tensor(seed))
        t_out.backward(torch.tensor(seed))
        assert_close(g.grad, t.grad, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["nearest", "bilinear", "bicubic", "area"])
def test_interpolate_gradcheck(mode):
    kwargs = {} if mode in ("nearest", "area") else {"align_corners": False}
    fn = lambda t: F.interpolate(t, size=(5, 3), mode=mode, **kwargs)  # noqa: E731
    assert gradcheck(fn, (leaf(1, 2, 3, 4),))
    assert gradgradcheck(fn, (leaf(1, 1, 3, 2),))


def test_interpolate_nearest_upsampling_repeats_pixels():
    out = F.interpolate(gl.tensor([[[[1.0, 2.0], [3.0, 4.0]]]]), scale_factor=2).numpy()
    np.testing.assert_array_equal(out[0, 0], [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])


def test_interpolate_errors_as_pytorch():
    x = gl.ones(1, 1, 4, 4)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, size=2, scale_factor=2)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, size=2, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but trilinear mode needs 5D input"):
        F.interpolate(x, size=2, mode="trilinear")
    with pytest.raises(ValueError, match="Input and output must have the same number of spatial dimensions"):
        F.interpolate(x, size=(2, 2, 2))
    with pytest.raises(NotImplementedError, match=r"Only 3D, 4D and 5D input Tensors supported \(got 2D\)"):
        F.interpolate(gl.ones(2, 2), size=2)


@requires_torch
def test_upsample_layers_match_torch():
    x = randn(2, 3, 4, 5)
    compare_modules(nn.Upsample(scale_factor=2), torch.nn.Upsample(scale_factor=2), x)
    compare_modules(nn.Upsample(size=(3, 7), mode="bilinear", align_corners=True),
                    torch.nn.Upsample(size=(3, 7), mode="bilinear", align_corners=True), x)
    compare_modules(nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3), x)
    compare_modules(nn.UpsamplingBilinear2d(size=6), torch.nn.UpsamplingBilinear2d(size=6), x)
    with pytest.warns(UserWarning, match="upsample` is deprecated"):
        assert_close(F.upsample(gl.tensor(x), scale_factor=2),
                     torch.nn.functional.interpolate(torch.tensor(x), scale_factor=2))


# --- rearranging pixels and channels ------------------------------------------------------------

@requires_torch
def test_pixel_shuffle_and_unshuffle_match_torch():
    x = randn(2, 8, 3, 2)
    compare_modules(nn.PixelShuffle(2), torch.nn.PixelShuffle(2), x)
    compare_modules(nn.PixelUnshuffle(3), torch.nn.PixelUnshuffle(3), randn(3, 2, 6, 9))
    back = F.pixel_unshuffle(F.pixel_shuffle(gl.tensor(x), 2), 2)
    assert_close(back, x)
    assert gradcheck(lambda t: F.pixel_shuffle(t, 2), (leaf(1, 4, 2, 3),))
    assert gradcheck(lambda t: F.pixel_unshuffle(t, 2), (leaf(1, 1, 2, 4),))


def test_pixel_shuffle_errors():
    with pytest.raises(RuntimeError, match=r"input.size\(-3\)=6 is not divisible by 4"):
        F.pixel_shuffle(gl.ones(1, 6, 2, 2), 2)
    with pytest.raises(RuntimeError, match=r"pixel_unshuffle expects width to be divisible by downscale_factor, but "
                                           r"input.size\(-1\)=3 is not divisible by 2"):
        F.pixel_unshuffle(gl.ones(1, 1, 2, 3), 2)
    with pytest.raises(RuntimeError, match="at least 3 dimensions"):
        F.pixel_shuffle(gl.ones(4, 4), 2)


@requires_torch
def test_channel_shuffle_matches_torch():
    x = randn(2, 6, 3)
    compare_modules(nn.ChannelShuffle(3), torch.nn.ChannelShuffle(3), x)
    assert_close(F.native_channel_shuffle(gl.tensor(x), 2), torch.nn.functional.native_channel_shuffle(
        torch.tensor(x), 2))
    assert gradcheck(lambda t: F.channel_shuffle(t, 2), (leaf(1, 4, 2),))
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 6 channels and 4"):
        F.channel_shuffle(gl.ones(1, 6, 2), 4)


# --- affine_grid and grid_sample ----------------------------------------------------------------

@requires_torch
@pytest.mark.parametrize("align_corners", [False, True])
def test_affine_grid_matches_torch(align_corners):
    for theta, size in [(randn(2, 2, 3) * 0.5 + np.eye(2, 3), (2, 3, 4, 5)), (randn(1, 3, 4), (1, 2, 3, 4, 2))]:
        g, t = gl.tensor(theta, requires_grad=True), torch.tensor(theta, requires_grad=True)
        out = F.affine_grid(g, size, align_corners=align_corners)
        t_out = torch.nn.functional.affine_grid(t, size, align_corners=align_corners)
        assert_close(out, t_out)
        out.sum().backward()
        t_out.sum().backward()
        assert_close(g.grad, t.grad)
    assert gradcheck(lambda t: F.affine_grid(t, (1, 1, 3, 2), align_corners=align_corners), (leaf(1, 2, 3),))


GRID_CASES = [(mode, padding, corners) for mode in ("bilinear", "nearest", "bicubic")
              for padding in ("zeros", "border", "reflection") for corners in (False, True)]


@requires_torch
@pytest.mark.parametrize("mode, padding_mode, align_corners", GRID_CASES, ids=lambda v: str(v))
def test_grid_sample_matches_torch_in_input_and_grid(mode, padding_mode, align_corners):
    x = randn(2, 3, 4, 5)
    grid = np.random.default_rng(1).uniform(-1.3, 1.3, (2, 3, 6, 2))  # some points outside the image
    volumes = [(x, grid)]
    if mode != "bicubic":
        volumes.append((randn(1, 2, 3, 4, 5), np.random.default_rng(2).uniform(-1.2, 1.2, (1, 2, 3, 4, 3))))
    for data, where in volumes:
        gx, tx = gl.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
        gg, tg = gl.tensor(where, requires_grad=True), torch.tensor(where, requires_grad=True)
        kwargs = dict(mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        out, t_out = F.grid_sample(gx, gg, **kwargs), torch.nn.functional.grid_sample(tx, tg, **kwargs)
        assert_close(out, t_out, rtol=1e-10, atol=1e-12)
        seed = randn(*out.shape, seed=4)
        out.backward(gl.tensor(seed))
        t_out.backward(torch.tensor(seed))
        assert_close(gx.grad, tx.grad, rtol=1e-10, atol=1e-12)
        assert_close(gg.grad, tg.grad, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_gradcheck(mode):
    grid = gl.tensor(np.random.default_rng(0).uniform(-0.9, 0.9, (1, 2, 3, 2)), requires_grad=True)
    assert gradcheck(lambda x, g: F.grid_sample(x, g, mode=mode, align_corners=False), (leaf(1, 2, 3, 4), grid))


def test_grid_sample_with_the_identity_grid_returns_the_input():
    x = gl.tensor(randn(1, 2, 4, 5))
    grid = F.affine_grid(gl.tensor(np.eye(2, 3)[None]), (1, 2, 4, 5), align_corners=False)
    assert_close(F.grid_sample(x, grid, align_corners=False), x, atol=1e-12)


def test_grid_sample_errors():
    x, grid = gl.ones(1, 1, 3, 3), gl.zeros(1, 2, 2, 2)
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic', but got: 'area'"):
        F.grid_sample(x, grid, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection'"):
        F.grid_sample(x, grid, padding_mode="wrap", align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(gl.ones(1, 1, 2, 2, 2), gl.zeros(1, 1, 1, 1, 3), mode="bicubic", align_corners=False)
    with pytest.raises(RuntimeError, match=r"grid_sample: expected input \(N, C, H, W\) with grid \(N, H_out, W_out, "
                                           r"2\)"):
        F.grid_sample(x, gl.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.warns(UserWarning, match="Default grid_sample behavior has changed to align_corners=False"):
        F.grid_sample(x, grid)
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3 for size"):
        F.affine_grid(gl.zeros(1, 3, 3), (1, 1, 2, 2), align_corners=False)

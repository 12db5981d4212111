"""gl.lab.ConvScatter: a convolution's backward stepped as a scatter-add ends where the engine's conv2d backward is,
one output position per step; its pictures are themed; bad input is refused with the fix."""

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn.functional as F

pytest.importorskip("anywidget")
from gradlab.lab.colors import AXIS_INK, FRAME, INK_CLASSES, TEXT_INK, TITLE_INK, diverging_color  # noqa: E402
from gradlab.lab.conv_scatter import ConvScatter, ConvScatterError  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def engine(x, w, dy, stride, padding):
    xt, wt = x.clone().requires_grad_(), w.clone().requires_grad_()
    F.conv2d(xt[None, None], wt[None, None], stride=stride, padding=padding).backward(dy[None, None])
    return xt.grad.numpy(), wt.grad.numpy()


@pytest.mark.parametrize("stride, padding", [(1, 0), (1, 1), (2, 1), (2, 0), (3, 2)])
def test_after_the_last_step_the_sums_are_the_engines_backward(stride, padding):
    gl.manual_seed(stride * 10 + padding)
    x, w = gl.randn(6, 6, dtype=gl.float64), gl.randn(3, 3, dtype=gl.float64)
    side = (6 + 2 * padding - 3) // stride + 1
    dy = gl.randn(side, side, dtype=gl.float64)
    scatter = ConvScatter(x, w, dy, stride=stride, padding=padding)
    assert scatter.steps == side * side
    dx, dw = engine(x, w, dy, stride, padding)
    np.testing.assert_allclose(scatter.dx(), dx, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(scatter.dw(), dw, rtol=1e-12, atol=1e-13)
    assert scatter.dx().shape == (6, 6) and scatter.dw().shape == (3, 3)


def test_each_step_adds_one_outputs_gradient_times_the_kernel_into_its_window():
    gl.manual_seed(1)
    x, w = gl.randn(6, 6, dtype=gl.float64), gl.randn(3, 3, dtype=gl.float64)
    dy = gl.randn(4, 4, dtype=gl.float64)
    scatter = ConvScatter(x, w, dy)
    assert not scatter.dx(0).any() and not scatter.dw(0).any()
    # step 6 is output (1, 1): its window is rows 1:4, columns 1:4
    assert scatter.positions[5] == (1, 1) and scatter.window(6) == (1, 1)
    added = scatter.dx(6) - scatter.dx(5)
    g = dy[1, 1].item()
    np.testing.assert_allclose(added[1:4, 1:4], g * w.numpy(), rtol=1e-14)
    added[1:4, 1:4] = 0
    assert not added.any()
    np.testing.assert_allclose(scatter.dw(6) - scatter.dw(5), g * x.numpy()[1:4, 1:4], rtol=1e-12)


def test_a_one_hot_output_gradient_scatters_the_kernel_once():
    x, w = gl.arange(36, dtype=gl.float64).reshape(6, 6), gl.arange(9, dtype=gl.float64).reshape(3, 3)
    dy = gl.zeros(4, 4, dtype=gl.float64)
    dy[2, 1] = 1.0
    scatter = ConvScatter(x, w, dy)
    expected = np.zeros((6, 6))
    expected[2:5, 1:4] = w.numpy()  # by hand: the kernel, as it is, in the window of output (2, 1)
    assert (scatter.dx() == expected).all()
    assert (scatter.dw() == x.numpy()[2:5, 1:4]).all()


def test_the_widget_has_one_picture_per_step_and_shows_the_step_asked_for():
    gl.manual_seed(2)
    scatter = ConvScatter(gl.randn(1, 1, 5, 5), gl.randn(1, 1, 2, 2), stride=1)
    frames = json.loads(scatter.panel.frames)
    assert scatter.steps == 16 and len(frames) == 17 and scatter.panel.steps == 16
    scatter.show(3)
    assert scatter.step == 3 and scatter.panel.step == 3
    root = ET.fromstring(frames[3])
    assert root.get("data-step") == "3"
    windows = [e for e in root.iter(SVG + "rect") if "gl-conv-window" in (e.get("class") or "")]
    assert len(windows) == 4  # x, ∂L/∂Y's cell, ∂L/∂X, ∂L/∂W
    pending = [e for e in root.iter(SVG + "g") if "gl-conv-pending" in (e.get("class") or "")]
    assert len(pending) == 13  # the outputs not scattered yet, faded
    assert "step 3 of 16" in frames[3] and "the engine's conv2d backward" in frames[16]
    bundle = scatter._repr_mimebundle_()[0]
    assert bundle["image/svg+xml"] == frames[16] and "application/vnd.jupyter.widget-view+json" in bundle


def test_the_picture_is_themed_and_coloured_on_a_diverging_scale():
    gl.manual_seed(3)
    scatter = ConvScatter(gl.randn(4, 4), gl.randn(3, 3), padding=1)
    root = ET.fromstring(scatter.to_svg(2))
    drawn = [e for e in root if e.tag != SVG + "style"]
    assert drawn[0].get("class") == "gl-bg" and drawn[0].get("fill") == "#fff"
    for e in root.iter():
        classes = set((e.get("class") or "").split())
        for attribute in ("fill", "stroke"):
            colour = e.get(attribute)
            if colour in (TITLE_INK, TEXT_INK, AXIS_INK) and "gl-conv-value" not in classes:
                assert INK_CLASSES[colour] in classes, ET.tostring(e)[:120]
            if colour == FRAME:
                assert "gl-frame" in classes
    assert diverging_color(-1, 1) == "#2166ac" and diverging_color(0, 1) == "#f7f7f7"
    assert diverging_color(1, 1) == "#b2182b" and diverging_color(5, 1) == "#b2182b"


def test_bad_input_is_refused_with_the_fix():
    x, w = gl.randn(6, 6), gl.randn(3, 3)
    with pytest.raises(ConvScatterError, match=r"grad_output has the shape of the output, 4×4 .*got 3×3"):
        ConvScatter(x, w, gl.randn(3, 3))
    with pytest.raises(ConvScatterError, match=r"x is one channel of numbers, shape \(H, W\) or \(1, 1, H, W\), "
                                               r"got shape \(2, 6, 6\)"):
        ConvScatter(gl.randn(2, 6, 6), w)
    with pytest.raises(ConvScatterError, match=r"a 3×3 kernel does not fit in an input of shape \(2, 2\)"):
        ConvScatter(gl.randn(2, 2), w)
    with pytest.raises(ConvScatterError, match="the kernel is square here, got weight of shape"):
        ConvScatter(x, gl.randn(3, 2))
    with pytest.raises(ConvScatterError, match=r"stride is a whole number ≥ 1, got 0"):
        ConvScatter(x, w, stride=0)
    with pytest.raises(ConvScatterError, match=r"padding is a whole number ≥ 0, got -1"):
        ConvScatter(x, w, padding=-1)
    with pytest.raises(ConvScatterError, match="900 output positions is too many to step"):
        ConvScatter(gl.randn(32, 32), w)
    scatter = ConvScatter(x, w)
    with pytest.raises(ConvScatterError, match="step is a whole number from 0 to 16, got 17"):
        scatter.show(17)

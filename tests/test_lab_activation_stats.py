"""gl.lab.ActivationStats: per-layer activation statistics from forward hooks, checked against the outputs caught
by hooks of our own and computed with numpy; dead and saturated units on constructed ones; hooks let go;
bad input named; the pictures drawn from exactly the figures kept."""

import base64
import re
import struct
import zlib

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab.lab.activation_stats import ActivationStatsError
from gradlab.lab.colors import SCALE


def known_net():
    """Linear-Tanh-Linear-ReLU-Linear-Sigmoid with fixed weights, big enough that some tanh outputs saturate."""
    gl.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 4), nn.Sigmoid())
    with gl.no_grad():
        net[0].weight.mul_(6.0)
        net[4].weight.mul_(8.0)
    return net


def caught_outputs(net, x):
    """The outputs of the activation modules, caught by hooks of the test's own (not ActivationStats')."""
    caught = {}
    handles = [net[i].register_forward_hook(lambda m, a, out, i=i: caught.__setitem__(str(i), out.detach().numpy()))
               for i in (1, 3, 5)]
    net(x)
    for handle in handles:
        handle.remove()
    return caught


def test_the_figures_are_those_computed_by_hand_from_the_outputs():
    net = known_net()
    x = gl.randn(64, 3)
    truth = caught_outputs(net, x)
    stats = gl.lab.ActivationStats(net, bins=10, limit=2.0)
    assert stats.layers == ["1", "3", "5"] and [stats.kind(n) for n in stats.layers] == ["tanh", "relu", "sigmoid"]
    net(x).sum().backward()
    latest = stats.latest()
    for name, out in truth.items():
        out = out.astype(np.float64)
        assert latest[name]["mean"] == pytest.approx(out.mean(), rel=1e-12)
        assert latest[name]["std"] == pytest.approx(out.std(), rel=1e-12)
    tanh, relu, sig = truth["1"], truth["3"], truth["5"]
    assert latest["1"]["saturated"] == pytest.approx(np.mean(np.abs(tanh) > 0.97))
    assert 0.05 < latest["1"]["saturated"] < 0.95  # the net was made to have some, not all
    assert latest["3"]["saturated"] == pytest.approx(np.mean(relu == 0))
    assert latest["5"]["saturated"] == pytest.approx(np.mean((sig < 0.015) | (sig > 0.985)))
    assert latest["3"]["dead"] == pytest.approx(np.mean([np.all(relu[:, j] == 0) for j in range(relu.shape[1])]))
    # the histograms: counted by hand, bin by bin, over the fixed ranges (a ReLU's zeros left out)
    for name, values, low, high in (("1", tanh, -1, 1), ("3", relu[relu > 0], 0, 2.0), ("5", sig, 0, 1)):
        edges = np.linspace(low, high, 11)
        clipped = np.clip(values.astype(np.float64), low, high)
        by_hand = [int(np.sum((clipped >= a) & ((clipped < b) if k < 9 else (clipped <= b))))
                   for k, (a, b) in enumerate(zip(edges[:-1], edges[1:]))]
        got = stats.histogram(name)
        assert got["counts"] == by_hand and (got["low"], got["high"]) == (low, high) and got["step"] == 1
    assert np.array_equal(stats.output("3").numpy(), relu)


def test_the_gradient_reaching_each_output_is_the_one_backward_sent_there():
    net = known_net()
    stats = gl.lab.ActivationStats(net)
    outputs = {}
    handles = [net[i].register_forward_hook(lambda m, a, out, i=i: outputs.update({str(i): out})) for i in (1, 3, 5)]
    x = gl.randn(32, 3)
    out = net(x)
    for t in outputs.values():
        t.retain_grad()
    assert all(r["grad_std"] is None for r in stats.latest().values())  # not before backward
    with pytest.raises(ActivationStatsError, match="no backward has reached the watched layers yet"):
        stats.gradient_histograms()
    (out ** 2).sum().backward()
    for handle in handles:
        handle.remove()
    for name, t in outputs.items():
        assert stats.latest("grad_std")[name] == pytest.approx(t.grad.numpy().astype(np.float64).std(), rel=1e-12)
    assert "; gradient std" in stats.table()
    picture = stats.gradient_histograms()
    assert picture.count('class="gl-act-hist ') == 3 and "1 Tanh · std" in picture


def test_a_constructed_dead_relu_unit_is_counted_dead_and_a_sometimes_zero_one_is_not():
    layer, relu = nn.Linear(2, 4), nn.ReLU()
    net = nn.Sequential(layer, relu)
    with gl.no_grad():
        layer.weight.copy_(gl.tensor([[1.0, 0.0], [0.0, 0.0], [0.5, 0.5], [0.0, 0.0]]))
        layer.bias.copy_(gl.tensor([0.0, -100.0, 100.0, 0.0]))  # unit 1: always negative; unit 3: always exactly 0
    x = gl.tensor([[1.0, 2.0], [-1.0, 3.0], [2.0, -1.0]], requires_grad=True)  # unit 0: 0 for the second example only
    stats = gl.lab.ActivationStats(net)
    net(x).sum().backward()
    assert stats.latest("dead") == {"1": 0.5}  # units 1 and 3, of 4
    assert stats.latest("saturated")["1"] == pytest.approx(7 / 12)  # unit 0 once, units 1 and 3 three times each


def test_a_tanh_unit_saturated_for_the_whole_batch_is_dead():
    layer = nn.Linear(2, 3)
    net = nn.Sequential(layer, nn.Tanh())
    with gl.no_grad():
        layer.weight.zero_()
        layer.bias.copy_(gl.tensor([50.0, 0.0, -50.0]))
    stats = gl.lab.ActivationStats(net)
    net(gl.randn(5, 2, requires_grad=True)).sum().backward()
    assert stats.latest("dead") == {"1": pytest.approx(2 / 3)}
    assert stats.latest("saturated") == {"1": pytest.approx(2 / 3)}


def test_only_training_forwards_count_each_forward_is_a_step_and_the_history_lines_up():
    net = known_net()
    stats = gl.lab.ActivationStats(net)
    for _ in range(3):
        net(gl.randn(8, 3))
    kept = stats.latest()
    with gl.no_grad():
        net(gl.randn(8, 3))  # an evaluation: not a step
    net.eval()
    net(gl.randn(8, 3))  # in eval mode (GradientFlow.open records so): not a step either
    net.train()
    net[1](gl.randn(8, 8))  # a watched layer run alone, outside the model's forward: not recorded
    assert stats.count == 3 and stats.steps == [1, 2, 3] and stats.latest() == kept
    assert all(len(v) == 3 for v in stats.history("std").values())


def test_past_max_steps_every_other_record_is_dropped_and_the_newest_kept():
    net = known_net()
    stats = gl.lab.ActivationStats(net, max_steps=8)
    for _ in range(20):
        net(gl.randn(4, 3))
    assert len(stats.steps) <= 8 and stats.steps[-1] == 20 and stats.steps == sorted(stats.steps)
    assert all(len(v) == len(stats.steps) for v in stats.history("mean").values())


def test_named_modules_are_watched_and_other_kinds_have_no_slope_figures():
    net = nn.Sequential(nn.Linear(2, 4), nn.LayerNorm(4), nn.Linear(4, 1))
    stats = gl.lab.ActivationStats(net, layers=["1"])
    seen = {}
    handle = net[1].register_forward_hook(lambda m, a, out: seen.update({"1": out.detach().numpy()}))  # returns None
    net(gl.randn(16, 2))
    handle.remove()
    latest = stats.latest()["1"]
    assert stats.kind("1") == "other" and stats.histogram("1")["low"] == -4.0
    assert latest["std"] == pytest.approx(seen["1"].astype(np.float64).std(), rel=1e-12)
    assert latest["saturated"] is None and latest["dead"] is None


def test_remove_and_the_context_manager_let_go_of_every_hook():
    net = known_net()
    stats = gl.lab.ActivationStats(net)
    assert net[1]._forward_hooks and net._forward_pre_hooks and net._forward_hooks
    stats.remove()
    assert all(not m._forward_hooks for m in net.modules()) and not net._forward_pre_hooks
    net(gl.randn(4, 3))
    assert stats.count == 0
    with gl.lab.ActivationStats(net) as watching:
        net(gl.randn(4, 3))
    assert watching.count == 1 and all(not m._forward_hooks for m in net.modules()) and not net._forward_pre_hooks


def test_bad_input_is_named():
    with pytest.raises(ActivationStatsError, match="got the class Sequential, not a model"):
        gl.lab.ActivationStats(nn.Sequential)
    with pytest.raises(ActivationStatsError, match="model must be a gradlab.nn.Module"):
        gl.lab.ActivationStats([nn.Tanh()])
    with pytest.raises(ActivationStatsError, match=r"has no activation modules .* name the modules to watch.*'0'"):
        gl.lab.ActivationStats(nn.Sequential(nn.Linear(2, 2)))
    net = known_net()
    with pytest.raises(ActivationStatsError, match="has no module 'fc'; its modules are '0', '1'"):
        gl.lab.ActivationStats(net, layers=["fc"])
    with pytest.raises(ActivationStatsError, match="layers is a list of module names"):
        gl.lab.ActivationStats(net, layers="1")
    with pytest.raises(ActivationStatsError, match=r"bins is an integer ≥ 2, got 1"):
        gl.lab.ActivationStats(net, bins=1)
    with pytest.raises(ActivationStatsError, match="limit is the histograms' largest value"):
        gl.lab.ActivationStats(net, limit=0)
    stats = gl.lab.ActivationStats(net)
    with pytest.raises(ActivationStatsError, match=r"latest\(\): nothing recorded yet; run the model on a batch"):
        stats.latest()
    with pytest.raises(ActivationStatsError, match="no training forward has reached that layer yet"):
        stats.output("1")
    net(gl.randn(4, 3))
    with pytest.raises(ActivationStatsError, match="no statistic 'variance'; they are mean, std, saturated, dead, grad_std"):
        stats.history("variance")
    with pytest.raises(ActivationStatsError, match="no layer '0' is watched; the layers are '1', '3', '5'"):
        stats.histogram("0")
    with pytest.raises(TypeError, match="step is a forward count"):
        stats.histograms(step="last")


def _png_pixels(uri: str) -> np.ndarray:
    """Decode the 8-bit RGB PNG our picture embeds (no filters: every row starts with filter byte 0)."""
    png = base64.b64decode(uri.split(",", 1)[1])
    width, height = struct.unpack(">II", png[16:24])
    data = zlib.decompress(png[png.index(b"IDAT") + 4:png.index(b"IEND") - 8])
    rows = np.frombuffer(data, dtype=np.uint8).reshape(height, 1 + 3 * width)
    assert (rows[:, 0] == 0).all()
    return rows[:, 1:].reshape(height, width, 3)


def test_the_colour_dimension_strip_is_the_counts_bins_up_steps_across():
    net = known_net()
    stats = gl.lab.ActivationStats(net, bins=12)
    for _ in range(5):
        net(gl.randn(32, 3))
    svg = stats.color_dim()
    uris = re.findall(r'href="(data:image/png;base64,[^"]+)"', svg)
    assert len(uris) == 3 and svg.count('class="gl-act-strip"') == 3
    pixels = _png_pixels(uris[0])  # layer "1", the tanh
    assert pixels.shape == (12, 5, 3)  # one row per bin, one column per kept step
    counts = np.array([stats.histogram("1", step)["counts"] for step in stats.steps]).T[::-1]
    brightest = tuple(int(SCALE[-1][i:i + 2], 16) for i in (1, 3, 5))
    assert (pixels[counts == counts.max()] == brightest).all()
    darkest = tuple(int(SCALE[0][i:i + 2], 16) for i in (1, 3, 5))
    assert (pixels[counts == 0] == darkest).all()


def test_the_pictures_have_a_line_or_strip_per_layer_and_use_jupyterlab_inks():
    net = known_net()
    stats = gl.lab.ActivationStats(net)
    for _ in range(4):
        net(gl.randn(16, 3))
    hist = stats.histograms()
    assert hist.count('class="gl-act-hist ') == 3 and 'data-step="4"' in hist
    lines = stats.over_steps("dead")
    assert lines.count('class="gl-act-line"') == 3
    assert "var(--jp-ui-font-color1," in lines and "var(--jp-layout-color0,#fff)" in lines
    bundle, _ = stats._repr_mimebundle_()
    assert bundle["image/svg+xml"].startswith("<svg") and 'class="gl-activation-stats"' in bundle["text/html"]
    assert "layer 1 (Tanh): mean" in bundle["text/plain"]
    empty = gl.lab.ActivationStats(known_net()).to_svg()
    assert "no training forward yet" in empty


def test_update_ratios_draws_the_flow_figure_with_the_guide_where_the_scale_puts_1e_3():
    gl.manual_seed(0)
    net = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 2))
    flow = gl.lab.GradientFlow(net)
    opt = gl.optim.SGD(net.parameters(), lr=0.01)
    for _ in range(6):
        opt.zero_grad()
        nn.CrossEntropyLoss()(net(gl.randn(16, 2)), gl.randint(0, 2, (16,))).backward()
        opt.step()
        flow.update()
    svg = gl.lab.update_ratios(flow)
    assert svg.count('class="gl-act-line"') == 2 and 'class="gl-act-guide gl-ink-axis"' in svg
    ticks = {int(e): float(y) for y, e in re.findall(r'y1="([\d.]+)" y2="[\d.]+"/><text class="gl-ink-axis" [^>]*'
                                                     r'text-anchor="end">1e(-?\d+)<', svg)}
    guide_y = float(re.search(r'class="gl-act-guide[^"]*"[^>]* y1="([\d.]+)"', svg).group(1))
    assert guide_y == pytest.approx(ticks[-3], abs=0.11)
    with pytest.raises(TypeError, match="flow is a gl.lab.GradientFlow"):
        gl.lab.update_ratios(net)
    with pytest.raises(ValueError, match="guide is a positive ratio"):
        gl.lab.update_ratios(flow, guide=0)


SVG = "{http://www.w3.org/2000/svg}"


def test_every_picture_follows_the_themes_convention_a_white_plate_first_and_every_inked_piece_classed():
    """docs/lab.md, "Themes": the light inks stay as attributes (GitHub), and each inked, gridded, framed or
    layer-coloured piece carries the class a theme redraws it by; the picture's own style is scoped to it."""
    import xml.etree.ElementTree as ET
    from gradlab.lab.colors import AXIS_INK, FRAME, GRID, INK_CLASSES, LAYER_COLORS, TEXT_INK, TITLE_INK
    net = known_net()
    stats = gl.lab.ActivationStats(net)
    for _ in range(3):
        (net(gl.randn(16, 3)) ** 2).sum().backward()
    flow_net = nn.Sequential(nn.Linear(2, 4), nn.ReLU(), nn.Linear(4, 2))
    flow = gl.lab.GradientFlow(flow_net)
    for _ in range(3):
        flow_net(gl.randn(8, 2)).sum().backward()
        flow.update()
    pictures = [stats.histograms(), stats.gradient_histograms(), stats.color_dim(), stats.over_steps("std"),
                stats.to_svg(), gl.lab.update_ratios(flow)]
    for svg in pictures:
        root = ET.fromstring(svg)
        style = root.find(SVG + "style").text
        dark = 'body[data-jp-theme-light="false"] '  # the layer colours a dark page lightens (colors.DARK_SERIES)
        assert all(rule.removeprefix(dark).startswith(".gl-act ") for rule in style.split("}") if rule)  # scoped
        first = [e for e in root if e.tag != SVG + "style"][0]
        assert first.get("class") == "gl-bg" and first.get("fill") == "#fff"
        for e in root.iter():
            classes = set((e.get("class") or "").split())
            for attribute in ("fill", "stroke"):
                colour = e.get(attribute)
                if colour in (TITLE_INK, TEXT_INK, AXIS_INK):
                    assert INK_CLASSES[colour] in classes, ET.tostring(e)[:80]
                elif colour == GRID:
                    assert "gl-grid" in classes
                elif colour == FRAME:
                    assert "gl-frame" in classes
                elif colour in LAYER_COLORS:
                    assert f"gl-series-{LAYER_COLORS.index(colour)}" in classes

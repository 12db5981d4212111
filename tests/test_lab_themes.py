"""The lab in the learner's theme: the stylesheets colour only through variables that follow JupyterLab's light
and dark themes, their dark inks are readable on JupyterLab's dark page, and the SVG Python draws carries the
classes by which a widget restyles it (its saved picture keeps its own inks on a white plate).

The browser half (tests/browser/test_theme_in_browser.py) measures the contrast on the page itself.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

import gradlab as gl
from gradlab.lab import timing_chart
from gradlab.lab.colors import (ALARM_INK, AXIS_INK, FRAME, GRID, INK_CLASSES, LAYER_COLORS, PASS_INK, TEXT_INK,
                                TITLE_INK, WARNING_INK, layer_color)
from gradlab.lab.flow_picture import flow_svg
from gradlab.lab.frontend import widgets_dir
from gradlab.lab.playground_picture import playground_svg
from gradlab.lab.playground_training import Training

# JupyterLab 4's themes (@jupyterlab/theme-light-extension, theme-dark-extension): the widget's box
# (--jp-layout-color1) and the page under an output (--jp-layout-color0).
LIGHT_PAGES, DARK_PAGES = ("#ffffff",), ("#212121", "#111111")
TEXT_CONTRAST, MARK_CONTRAST = 4.5, 3.0  # WCAG AA: body text; lines and marks

COLOUR_PROPERTY = re.compile(r"^(color|background(-color)?|border(-[a-z]+)*|outline(-color)?|box-shadow|fill|stroke|"
                             r"text-decoration-color|caret-color)$")
LITERAL = re.compile(r"#[0-9a-fA-F]{3,8}\b|\b(rgba?|hsla?)\(|\b(white|black|red|green|blue|gray|grey|orange|yellow|"
                     r"purple|pink|silver|navy)\b")


# --- the stylesheets -------------------------------------------------------------------------------------

def declarations(css: str):
    """(selector, property, value) of every declaration in a stylesheet, comments dropped."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", css):
        for item in body.split(";"):
            if ":" in item:
                prop, value = item.split(":", 1)
                yield " ".join(selector.split()), prop.strip(), value.strip()


def without_vars(value: str) -> str:
    """The value with every var(...) taken out (their fallbacks are the light theme's colours)."""
    while "var(" in value:
        start = value.index("var(")
        depth, end = 0, start
        for end in range(start + 3, len(value)):
            depth += {"(": 1, ")": -1}.get(value[end], 0)
            if depth == 0:
                break
        value = value[:start] + value[end + 1:]
    return value


def stylesheets() -> dict:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(widgets_dir().glob("*.css"))}


DARK_THEME = 'body[data-jp-theme-light="false"]'


def palette(dark: bool) -> dict:
    """{--gl-name: value} set in theme.css on the widgets' roots (.gradlab-widget, ...), or on them under
    JupyterLab's dark theme."""
    found = {}
    for rule, prop, value in declarations(stylesheets()["theme.css"]):
        roots = [part.strip() for part in rule.split(",")]
        if dark:
            roots = [part.removeprefix(DARK_THEME + " ") for part in roots if part.startswith(DARK_THEME + " ")] \
                if all(part.startswith(DARK_THEME + " ") for part in roots) else []
        if roots and all(re.fullmatch(r"\.gradlab-[\w-]+", part) for part in roots) and prop.startswith("--gl-"):
            found[prop] = value
    return found


LIGHT = palette(dark=False)
DARK = palette(dark=True)


def test_every_colour_in_the_stylesheets_is_a_theme_variable():
    fixed = [f"{name}: {selector} {{ {prop}: {value} }}" for name, css in stylesheets().items()
             for selector, prop, value in declarations(css)
             if COLOUR_PROPERTY.match(prop) and LITERAL.search(without_vars(value))]
    assert not fixed, "colours fixed to the light theme (use a --gl-* variable of widgets/theme.css):\n" + \
        "\n".join(fixed)


def test_every_variable_the_stylesheets_use_is_set_by_the_palette():
    used = {name for css in stylesheets().values() for name in re.findall(r"var\((--gl-[\w-]+)\)", css)}
    assert used, "no stylesheet uses the palette"
    assert not used - set(LIGHT), f"used but never set in widgets/theme.css: {sorted(used - set(LIGHT))}"


def test_the_palette_follows_jupyterlab_or_sets_a_dark_ink_for_each_light_one():
    assert LIGHT and DARK
    assert not set(DARK) - set(LIGHT), f"set only for the dark theme: {sorted(set(DARK) - set(LIGHT))}"
    for name, value in LIGHT.items():
        if value.startswith("var("):
            assert re.fullmatch(r"var\(--jp-[\w-]+, #[0-9a-f]{3,6}\)", value), f"{name}: {value}"
        elif name.startswith("--gl-data-"):  # a data colour means the same in both themes
            assert name not in DARK, f"{name} is a data colour: it keeps its colour in the dark theme"
        else:
            assert name in DARK, f"{name} ({value}) has no colour for JupyterLab's dark theme"
            assert DARK[name] != value


def luminance(hex_colour: str) -> float:
    channels = [int(hex_colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


TEXT_INKS = ("--gl-warn", "--gl-alarm", "--gl-pass", "--gl-accent", "--gl-math", "--gl-compiled-ink", "--gl-select")
MARKS = ("--gl-series-3", "--gl-series-8", "--gl-whisker", "--gl-match")


@pytest.mark.parametrize("theme, pages", [(LIGHT, LIGHT_PAGES), (DARK, DARK_PAGES)], ids=["light", "dark"])
def test_the_palettes_own_inks_are_readable_on_their_themes_page(theme, pages):
    weak = [f"{name} {theme[name]} on {page}: {contrast(theme[name], page):.2f}" for page in pages
            for names, least in ((TEXT_INKS, TEXT_CONTRAST), (MARKS, MARK_CONTRAST)) for name in names
            if contrast(theme[name], page) < least]
    weak += [f"--gl-ink-soft on --gl-plate: {contrast(theme['--gl-ink-soft'], theme['--gl-plate']):.2f}"] \
        if contrast(theme["--gl-ink-soft"], theme["--gl-plate"]) < TEXT_CONTRAST else []
    assert not weak, "\n".join(weak)


def test_the_light_series_are_the_layer_colours_and_the_dark_ones_keep_their_hue():
    for n in (3, 8):
        assert LIGHT[f"--gl-series-{n}"] == LAYER_COLORS[n]
        light_rgb = [int(LIGHT[f"--gl-series-{n}"][i:i + 2], 16) for i in (1, 3, 5)]
        dark_rgb = [int(DARK[f"--gl-series-{n}"][i:i + 2], 16) for i in (1, 3, 5)]
        # the same ordering of red, green and blue: a lighter tint of the hue, not another colour
        assert sorted(range(3), key=light_rgb.__getitem__) == sorted(range(3), key=dark_rgb.__getitem__)
        assert luminance(DARK[f"--gl-series-{n}"]) > luminance(LIGHT[f"--gl-series-{n}"])


# --- the SVG pieces --------------------------------------------------------------------------------------

SVG = "{http://www.w3.org/2000/svg}"
INKS = {TITLE_INK, TEXT_INK, AXIS_INK, WARNING_INK, ALARM_INK}
RESTYLED_BY_OWN_CLASS = {"gl-pg-neuron", "gl-ink-line",  # theme.css restyles these pieces by their own class
                         "gl-label", "gl-sub"}  # a node's text: its ink is picked for its box's fill (colors.ink)


def elements(svg: str):
    root = ET.fromstring(svg)
    return root, list(root.iter())


def classes(element) -> set:
    return set((element.get("class") or "").split())


def assert_themed(svg: str) -> None:
    """The saved picture's white plate comes first and is classed; every inked, gridded or framed piece carries
    the class theme.css redraws it by."""
    root, pieces = elements(svg)
    drawn = [e for e in root if e.tag not in (SVG + "style", SVG + "defs")]
    assert drawn[0].tag == SVG + "rect" and classes(drawn[0]) == {"gl-bg"} and drawn[0].get("fill") == "#fff"
    assert drawn[0].get("width") == "100%" and drawn[0].get("height") == "100%"
    unclassed = []
    for e in pieces:
        for attribute in ("fill", "stroke"):
            colour = e.get(attribute)
            wanted = {INK_CLASSES.get(colour), *RESTYLED_BY_OWN_CLASS} if colour in INKS else \
                {"gl-grid"} if colour == GRID else {"gl-frame"} if colour == FRAME else None
            if wanted and not classes(e) & wanted:
                unclassed.append(f"<{e.tag.removeprefix(SVG)} {attribute}={colour} class={e.get('class')}>")
    assert not unclassed, "pieces a theme cannot restyle:\n" + "\n".join(unclassed[:20])


def assert_series_classed(pieces, colour_of) -> None:
    """Each layer's line, mark and key swatch carries gl-series-N, N its layer's colour's index."""
    seen = 0
    for e in pieces:
        colour = colour_of(e)
        if colour in LAYER_COLORS:
            n = LAYER_COLORS.index(colour)
            assert f"gl-series-{n}" in classes(e), f"<{e.tag} {colour}> has no gl-series-{n}"
            seen += 1
    assert seen


def test_the_gradient_flow_picture_is_themed_including_its_alarms_and_every_layers_line():
    values = [1e-3, 2e-3, "nan", 1e-3, 0.0, 3e-3]
    names = [f"blocks.{i}.fc" for i in range(11)]
    history = {"layers": names, "steps": list(range(1, len(values) + 1)), "count": len(values),
               "series": {"grad_norm": {name: list(values) for name in names}},
               "figures": {"grad_norm": ["‖∂L/∂W‖", "gradient norm"]},
               "thresholds": {"vanishing": 1e-3, "exploding": 1e2, "window": 10},
               "flags": [{"layer": "blocks.0.fc", "kind": "not_finite", "figure": "nan", "rule": "a nan"},
                         {"layer": "blocks.1.fc", "kind": "vanishing", "figure": 1e-9, "rule": "tiny"}]}
    svg = flow_svg(history)
    assert_themed(svg)
    _, pieces = elements(svg)
    assert {"gl-ink-alarm", "gl-ink-warn", "gl-ink-title", "gl-ink-text", "gl-ink-axis"} <= \
        {c for e in pieces for c in classes(e)}
    assert_series_classed(pieces, lambda e: e.get("stroke") or e.get("fill"))
    assert "gl-series-10" not in svg and layer_color(10) == layer_color(0)  # the eleventh layer repeats the first


def test_the_playground_picture_is_themed():
    training = Training(seed=0, depth=2, width=4)
    for _ in range(3):
        training.step()
    svg = playground_svg(training, caption="a caption")
    assert_themed(svg)
    _, pieces = elements(svg)
    charted = [e for e in pieces if e.tag in (SVG + "polyline", SVG + "line") and "gl-pg-edges" not in classes(e)]
    assert_series_classed([e for e in charted if e.get("stroke") != TITLE_INK], lambda e: e.get("stroke"))


def test_the_device_timings_chart_is_themed():
    table = gl.lab.compare_devices(lambda a: a + 1, gl.ones(3), devices=["cpu", "mlx"], repeats=2)
    assert_themed(timing_chart.to_svg(table))


def test_the_graph_is_themed_and_its_key_too():
    pytest.importorskip("anywidget")
    x = gl.tensor([1.0, -2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    view = gl.lab.GraphView(loss)
    assert_themed(view.to_svg())
    for key in (view.color_keys or {}).values():
        root, pieces = elements(key)
        texts = [e for e in pieces if e.tag == SVG + "text"]
        assert texts and all("gl-ink-text" in classes(e) for e in texts)


def test_theme_css_restyles_every_class_the_pictures_carry():
    css = re.sub(r"/\*.*?\*/", "", stylesheets()["theme.css"], flags=re.S)
    for name in ["gl-bg", *INK_CLASSES.values(), "gl-ink-line", "gl-grid", "gl-frame", "gl-series-3", "gl-series-8"]:
        assert re.search(rf"\.gradlab-widget [^{{]*\.{name}\b[^{{]*\{{", css), f".{name} has no rule in theme.css"


def test_a_nodes_ink_reads_on_every_fill_the_graph_can_give_it():
    from gradlab.lab.colors import KIND_COLORS, MISSING, ZERO, ink, scale_color
    fills = [scale_color(i / 1000) for i in range(1001)] + [*KIND_COLORS.values(), MISSING, ZERO]
    weak = sorted({(round(contrast(ink(f), f), 2), f, ink(f)) for f in fills if contrast(ink(f), f) < TEXT_CONTRAST})
    assert not weak, f"{len(weak)} fills whose ink is under {TEXT_CONTRAST}:1, e.g. {weak[:5]}"


def test_a_verdicts_inks_follow_jupyterlabs_theme_with_the_light_ink_as_fallback():
    for status, variable, light in (("pass", "--jp-success-color0", PASS_INK), ("fail", "--jp-error-color1", ALARM_INK),
                                    ("not done", "--jp-ui-font-color2", AXIS_INK)):
        html = gl.lab.Verdict("an exercise", status, "a message")._repr_html_()
        assert f"color:var({variable}, {light})" in html and f"solid var({variable}, {light})" in html


def test_pictures_outside_a_widget_lighten_the_same_layer_colours_as_the_widgets():
    from gradlab.lab.activation_picture import STYLE
    from gradlab.lab.colors import DARK_SERIES, LAYER_COLORS

    in_widgets = {int(name.rsplit("-", 1)[1]): value for name, value in DARK.items() if name.startswith("--gl-series-")}
    assert in_widgets == DARK_SERIES, "widgets/theme.css and colors.DARK_SERIES lighten different layer colours"
    for index, ink in DARK_SERIES.items():
        assert ink != LAYER_COLORS[index]
        assert f'{DARK_THEME} .gl-act .gl-series-{index}{{stroke:{ink}}}' in STYLE

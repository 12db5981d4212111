"""Every colour the lab draws with, and its one log scale: the graph's fills, the charts' lines and inks.

Gradients span many orders of magnitude (that is the whole story of vanishing gradients), so
sizes are coloured on a log scale: the norm's log10 picks a colour between the smallest and the
largest norm in the graph, on a perceptually even scale (dark purple = small, yellow = large).
Charts put their figures on a log axis of whole decades (``decades``). Only Python draws with
these (docs/lab.md, "Who draws"): the front end places the SVG made here and never picks a colour.
"""

from __future__ import annotations

import math

# Viridis, sampled at nine even steps: dark = small, bright = large.
SCALE = ("#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725")
MISSING = "#e6e6e6"  # no gradient known (yet), or no value
ZERO = "#b9b9c8"  # a gradient that is exactly zero: nothing flows

KIND_COLORS = {
    "input": "#f2f2f2",
    "param": "#ffe9a8",
    "leaf": "#ffe9a8",
    "arithmetic": "#d6e6ff",
    "elementwise": "#d5f2dc",
    "matmul": "#c9d8ff",
    "reduction": "#ffe0c2",
    "shape": "#ececec",
    "normalization": "#e8dcff",
    "loss": "#ffd0d0",
    "other": "#dff3f7",
    "group": "#f4effa",
}

# make_dot's fills, as torchviz draws PyTorch's graph (Graphviz's X11 names), each with its hex for gradlab's own
# drawing of the same picture where Graphviz's dot program is missing: backward nodes grey, the leaves that get a
# .grad light blue, what a node saved orange, the output green.
DOT_FILLS = {"op": ("lightgrey", "#d3d3d3"), "leaf": ("lightblue", "#add8e6"), "saved": ("orange", "#ffa500"),
             "output": ("darkolivegreen1", "#caff70")}
MODULE_FRAME, CLOSED_MODULE_BORDER = "#c4b5fd", "#7c3aed"  # GraphView.to_dot's modules, as svg.py's STYLE draws them

# One colour per layer of a gradient-flow chart, first layer (nearest the input) first; repeats past ten.
LAYER_COLORS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
                "#4b5563", "#65a30d")

# The inks of the charts (gradient flow, device timings): grid lines, frames, axis figures, text, titles,
# and the two alarms (a vanishing gradient warns, an exploding one or a failed device alarms).
GRID, FRAME, AXIS_INK, TEXT_INK, TITLE_INK = "#eef0f3", "#d1d5db", "#6b7280", "#374151", "#111827"
WARNING_INK, ALARM_INK = "#92400e", "#b91c1c"
PASS_INK = "#15803d"  # a checked exercise that passed

# The class each ink's SVG piece carries, so that a widget's stylesheet (widgets/theme.css) can redraw it in the
# learner's JupyterLab theme; the saved picture keeps the ink itself, on its own white plate (class gl-bg).
INK_CLASSES = {TITLE_INK: "gl-ink-title", TEXT_INK: "gl-ink-text", AXIS_INK: "gl-ink-axis",
               WARNING_INK: "gl-ink-warn", ALARM_INK: "gl-ink-alarm", PASS_INK: "gl-ink-pass"}


# An ink in a plain HTML output (no widget, so no stylesheet of ours): JupyterLab's variable that reads in its
# light and dark themes alike, with the ink itself where there is no JupyterLab (GitHub, nbviewer).
HTML_INKS = {PASS_INK: f"var(--jp-success-color0, {PASS_INK})", ALARM_INK: f"var(--jp-error-color1, {ALARM_INK})",
             AXIS_INK: f"var(--jp-ui-font-color2, {AXIS_INK})", TEXT_INK: f"var(--jp-ui-font-color1, {TEXT_INK})"}


def html_ink(ink: str) -> str:
    """The CSS colour of ``ink`` in an HTML output: it follows the learner's JupyterLab theme."""
    return HTML_INKS.get(ink, ink)


def ink_class(ink: str) -> str:
    """The class of a piece drawn in ``ink`` (one of the inks above); '' for a data colour."""
    return INK_CLASSES.get(ink, "")


# The same two layer colours lightened for a dark page (widgets/theme.css sets them inside a widget; a picture
# shown outside one carries them in its own scoped style). The hue stays, so a legend still matches its line.
DARK_SERIES = {3: "#c084fc", 8: "#9ca3af"}


def series_class(index: int) -> str:
    """``gl-series-N``: the class of layer ``index``'s line and key, by which a dark theme lightens the two
    layer colours too dark to see on a dark page (3, purple, and 8, grey; same hues)."""
    return f"gl-series-{index % len(LAYER_COLORS)}"

# The playground's two classes (TensorFlow Playground's orange for label 0, blue for label 1), and the pale
# middle its boundary fades through where the model is unsure (p = 0.5). Weights: blue > 0, orange < 0.
CLASS_COLORS, UNSURE = ("#f59322", "#0877bd"), "#f4f4f4"


def class_tint(p: float) -> str:
    """The boundary's colour where the model says P(label 1) = p: orange at 0, pale at 0.5, blue at 1
    (three quarters of the way to the class colour, so the points drawn on top in full colour stand out)."""
    side = _rgb(CLASS_COLORS[1] if p >= 0.5 else CLASS_COLORS[0])
    f = 0.75 * min(1.0, abs(p - 0.5) * 2)
    return "#" + "".join(f"{round(u + (c - u) * f):02x}" for u, c in zip(_rgb(UNSURE), side))

# A diverging scale for signed values (ColorBrewer's RdBu): blue below zero, near-white at zero, red above.
DIVERGING = ("#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d", "#b2182b")


def diverging_color(value: float, limit: float) -> str:
    """The colour of a signed ``value`` on a scale from -limit (blue) through 0 (pale) to +limit (red)."""
    t = 0.5 if limit <= 0 else 0.5 + 0.5 * max(-1.0, min(1.0, value / limit))
    t *= len(DIVERGING) - 1
    i = min(int(t), len(DIVERGING) - 2)
    a, b, f = _rgb(DIVERGING[i]), _rgb(DIVERGING[i + 1]), t - i
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))

_CATEGORY_OF_MODULE = {
    "arithmetic": "arithmetic", "elementwise": "elementwise", "activations": "elementwise",
    "activation": "elementwise", "reductions": "reduction", "shape": "shape", "indexing": "shape",
    "conversion": "shape", "repeat": "shape", "linalg": "matmul", "linear": "matmul", "conv": "matmul",
    "attention": "matmul", "pooling": "reduction", "normalization": "normalization", "loss": "loss",
    "dropout": "elementwise", "sparse": "shape", "scalar": "arithmetic", "pointwise": "elementwise",
    "trigonometric": "elementwise", "special": "elementwise", "bitwise": "elementwise",
    "comparison": "elementwise",
}


def category(function) -> str:
    """The family of an operation, from the file its Function lives in (ops/reductions.py -> reduction)."""
    module = getattr(function, "__module__", "") or ""
    return _CATEGORY_OF_MODULE.get(module.rsplit(".", 1)[-1], "other")


def kind_color(node) -> str:
    return KIND_COLORS.get(node.kind if node.kind != "op" else node.category, KIND_COLORS["other"])


def layer_color(index: int) -> str:
    return LAYER_COLORS[index % len(LAYER_COLORS)]


def decades(values, empty: tuple = (-1, 1)) -> tuple:
    """The powers of ten that enclose every positive, finite figure: (low exponent, high exponent).

    A log axis is drawn in whole decades; figures all in one power of ten get one decade either side
    (so a flat line sits mid-chart), and no figure at all gets ``empty``."""
    logs = [math.log10(v) for v in values if isinstance(v, (int, float)) and 0 < v < math.inf]
    if not logs:
        return empty
    low, high = math.floor(min(logs)), math.ceil(max(logs))
    return (low, high) if high > low else (low - 1, high + 1)


def scale_color(t: float) -> str:
    """The colour at position t in [0, 1] of the scale, interpolated between its samples."""
    t = min(1.0, max(0.0, t)) * (len(SCALE) - 1)
    i = min(int(t), len(SCALE) - 2)
    a, b, f = _rgb(SCALE[i]), _rgb(SCALE[i + 1]), t - i
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


def _rgb(hex_color: str) -> tuple:
    return tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))


def log_colors(sizes: dict, title: str, text=None, only=None, limits=None) -> tuple[dict, dict]:
    """Colour each id by log10 of its size; returns (colours, legend). None -> MISSING, 0 -> ZERO.

    ``text(size)`` writes the key's figures (``1.0e-04`` when not given); ``only`` (ids) colours just
    those, on the scale of every size (what a big graph's drawing shows). ``limits=(low, high)`` fixes the
    scale's ends, so that a colour means the same size in every picture; sizes outside take the end's colour."""
    text = text or _scientific
    logs = {k: math.log10(v) for k, v in sizes.items() if v is not None and v > 0}
    shown = sizes if only is None else {k: sizes[k] for k in only if k in sizes}
    colors = {k: (MISSING if v is None else ZERO) for k, v in shown.items() if k not in logs}
    if limits is not None:
        low, high = math.log10(limits[0]), math.log10(limits[1])
        logs = {k: min(high, max(low, v)) for k, v in logs.items()}
    elif not logs:
        return colors, {"title": title, "stops": [], "missing": MISSING, "zero": ZERO}
    else:
        low, high = min(logs.values()), max(logs.values())
    span = high - low
    for k in shown:
        v = logs.get(k)
        if v is not None:
            colors[k] = scale_color((v - low) / span if span > 0 else 1.0)
    stops = [[text(10 ** (low + span * i / 4)), scale_color(i / 4)] for i in range(5)] if span > 0 else \
        [[text(10 ** high), scale_color(1.0)]]
    return colors, {"title": title, "stops": stops, "missing": MISSING, "zero": ZERO}


def _scientific(size: float) -> str:
    return f"{size:.1e}"


MODES = ("grad", "value", "kind")


def ink(fill: str) -> str:
    """Dark text on light fills, white text on dark ones: whichever contrasts more with the fill (WCAG's ratio
    of relative luminances). On the few mid fills where neither reaches 4.5:1 (text's least), black does."""
    best = max(("#111827", "#ffffff"), key=lambda text: contrast(text, fill))
    return best if contrast(best, fill) >= 4.5 else "#000000"


def luminance(color: str) -> float:
    """WCAG's relative luminance of a #rrggbb colour: 0 for black, 1 for white."""
    r, g, b = (c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in (v / 255 for v in _rgb(color)))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: str, b: str) -> float:
    """WCAG's contrast ratio of two colours, 1 (the same) to 21 (black on white)."""
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


MODE_LABELS = {"grad": "gradient", "value": "value", "kind": "kind of op"}  # what the colour menu says


def size_colors(sizes: dict, group_members: dict, title: str, missing: str = "not known yet",
                text=None, only=None, limits=None) -> tuple[dict, dict]:
    """{id: [fill, ink]} by log10 of each id's size (a group takes its largest member's), and the legend.

    ``missing`` is what the key calls a node with no figure (None); ``text`` writes its figures;
    ``only`` (ids) colours just those (a group's largest member lies within the nodes' scale); ``limits``
    fixes the scale's ends (``log_colors``)."""
    sizes = dict(sizes)
    for group, members in group_members.items():
        if only is not None and group not in only:
            continue
        known = [sizes[m] for m in members if sizes.get(m) is not None]
        sizes[group] = max(known) if known else None
    fills, legend = log_colors(sizes, title, text, only, limits)
    legend["missing_text"] = missing
    return {k: [fill, ink(fill)] for k, fill in fills.items()}, legend


def color_modes(graph, group_members: dict, modes=MODES, only=None) -> tuple[dict, dict]:
    """{mode: {id: [fill, ink]}} for nodes and groups (or ``only`` those ids), and {mode: legend}; a group
    takes its largest member."""
    nodes = graph.nodes.values()
    colors, legends = {}, {}
    for mode, title in (("grad", "‖∂L/∂output‖, log scale"), ("value", "‖output‖, log scale")):
        if mode in modes:
            sizes = {n.id: n.norm(mode) for n in nodes}
            colors[mode], legends[mode] = size_colors(sizes, group_members, title,
                                                      "no gradient yet" if mode == "grad" else "not kept", only=only)
    if "kind" in modes:
        shown = nodes if only is None else [graph.nodes[k] for k in only if k in graph.nodes]
        fills = {n.id: kind_color(n) for n in shown}
        fills.update({group: KIND_COLORS["group"] for group in group_members if only is None or group in only})
        colors["kind"] = {k: [fill, ink(fill)] for k, fill in fills.items()}
        used = sorted({n.kind if n.kind != "op" else n.category for n in nodes})
        legends["kind"] = {"title": "kind of operation", "items": [[name, KIND_COLORS[name]] for name in used]}
    return colors, legends

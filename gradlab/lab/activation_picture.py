"""Pictures of activation statistics, drawn in Python as SVG: histograms per layer, the colour dimension, lines.

Karpathy (makemore, part 3) overlays each layer's histogram of outputs at one step: a tanh layer piled
up at ±1 is saturated. fast.ai (part 2) stacks a layer's histogram at every step side by side as one
column of colour each, the "colourful dimension": a healthy layer is a smooth band, a collapsing one a
bright line along the bottom. Inks are CSS variables of JupyterLab with a light fallback (gl-act classes);
the data's colours come from colors.py.
"""

from __future__ import annotations

import base64
import math
import re
import struct
import zlib
from html import escape

import numpy as np

from .binning import histogram_counts
from .colors import AXIS_INK, DARK_SERIES, FRAME, GRID, SCALE, TEXT_INK, TITLE_INK, ink_class, layer_color, series_class

WIDTH, LEFT, RIGHT, TOP = 760, 56, 12, 28
PLOT_H, KEY_W, KEY_ROW = 200, 230, 15
STRIP_H, STRIP_GAP, LABEL_W = 42, 10, 150
# Outside a widget no stylesheet of ours is on the page: the picture carries its own, scoped to it, that redraws
# its classed pieces (docs/lab.md, "Themes") in JupyterLab's theme; where there is no JupyterLab (GitHub, nbviewer)
# the variables are unset and the light inks of the attributes, and the white plate, stay.
STYLE = (f".gl-act .gl-bg{{fill:var(--jp-layout-color0,#fff)}}"
         f".gl-act .gl-ink-title{{fill:var(--jp-ui-font-color0,{TITLE_INK})}}"
         f".gl-act .gl-ink-text{{fill:var(--jp-ui-font-color1,{TEXT_INK})}}"
         f".gl-act .gl-ink-axis{{fill:var(--jp-ui-font-color2,{AXIS_INK})}}"
         f".gl-act line.gl-ink-axis{{stroke:var(--jp-ui-font-color2,{AXIS_INK})}}"
         f".gl-act .gl-grid{{stroke:var(--jp-border-color2,{GRID})}}"
         f".gl-act .gl-frame{{stroke:var(--jp-border-color1,{FRAME})}}"
         + "".join(f'body[data-jp-theme-light="false"] .gl-act .gl-series-{i}{{stroke:{ink}}}'
                   for i, ink in DARK_SERIES.items()))
INKS = {"gl-act-title": TITLE_INK, "gl-act-text": TEXT_INK, "gl-act-axis": AXIS_INK}
GRID_LINE = f'class="gl-grid" stroke="{GRID}"'
FRAME_BOX = f'class="gl-frame" fill="none" stroke="{FRAME}"'


class Picture(str):
    """SVG text that a notebook shows as the picture (inline HTML in JupyterLab, an image on GitHub)."""

    def _repr_mimebundle_(self, **kwargs):
        kind = re.search(r'class="gl-act (gl-act-[\w-]+)"', self)
        return {"text/plain": f"<SVG picture {kind.group(1) if kind else ''}: {len(self)} characters>",
                "image/svg+xml": str(self), "text/html": f'<div class="gl-activation-stats">{self}</div>'}, {}


def _open(kind: str, width: float, height: float, extra: str = "") -> list:
    return [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-act gl-act-{kind}" width="{width:.0f}" '
            f'height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" font-family="Helvetica, Arial, sans-serif" '
            f'font-size="11"{extra}><style>{STYLE}</style>',
            '<rect class="gl-bg" width="100%" height="100%" fill="#fff"/>']


def _text(x, y, text, ink="gl-act-text", anchor="start", size=None) -> str:
    """Text in one of the inks (title, text, axis), classed so that the theme can redraw it."""
    size_attr = f' font-size="{size}"' if size else ""
    colour = INKS[ink]
    return (f'<text class="{ink_class(colour)}" fill="{colour}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"'
            f'{size_attr}>{escape(str(text))}</text>')


def nice_ticks(low: float, high: float, count: int = 5) -> list:
    """Round numbers (1, 2 or 5 times a power of ten apart) between low and high, about ``count`` of them."""
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for step in (10 * power, 5 * power, 2 * power, power, power / 2):  # the widest step that gives enough ticks
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        if last - first + 1 >= max(3, count - 2):
            break
    return [round(k * step, 12) for k in range(first, last + 1)]


def _percent(value) -> str:
    return "—" if value is None else f"{value:.0%}" if value >= 0.1 or value == 0 else f"{value:.1%}"


def _label(stats, layer, record) -> str:
    module = type(layer.module).__name__
    if record["std"] is None:
        return f"{layer.name} {module}: not reached"
    text = f"{layer.name} {module} · std {record['std']:.2f}"
    if record["saturated"] is not None:
        word = "zero" if layer.kind == "relu" else "sat"
        text += f" · {word} {_percent(record['saturated'])} · dead {_percent(record['dead'])}"
    return text


# --- Karpathy's histograms ------------------------------------------------------------------------------------

def histograms_svg(stats, index: int) -> Picture:
    """Each layer's histogram of outputs at one kept step, as a line of density, overlaid; the key has its figures."""
    return Picture("".join(_histograms(stats, index, 0, standalone=True)))


def _histograms(stats, index: int, top: float, standalone: bool) -> list:
    plot_w = WIDTH - LEFT - KEY_W - RIGHT
    low = min(layer.low for layer in stats.watched)
    high = max(layer.high for layer in stats.watched)
    curves = []
    for layer in stats.watched:
        counts = np.asarray(layer.hists[index] if index < len(layer.hists) else np.zeros(stats.bins), dtype=np.float64)
        width = (layer.high - layer.low) / stats.bins
        density = counts / max(counts.sum(), 1) / width
        centres = layer.low + width * (np.arange(stats.bins) + 0.5)
        curves.append((layer, centres, density))
    peak = max((float(d.max()) for _, _, d in curves), default=1.0) or 1.0
    rows = max(len(stats.watched), 1)
    plot_h = max(PLOT_H, rows * KEY_ROW + 8)
    height = top + TOP + plot_h + 26
    out = _open("histograms", WIDTH, height, f' data-step="{stats.steps[index]}"') if standalone else []
    y0 = top + TOP

    def px(v):
        return LEFT + (v - low) / (high - low) * plot_w

    def py(d):
        return y0 + plot_h - d / peak * (plot_h - 6)

    out.append(_text(LEFT, top + 16, f"outputs of each layer at step {stats.steps[index]}: histogram "
                                     f"(density; values beyond the ends count in the end bins)", "gl-act-title", size=12))
    for tick in nice_ticks(low, high, 6):
        out.append(f'<line {GRID_LINE} x1="{px(tick):.1f}" x2="{px(tick):.1f}" y1="{y0}" y2="{y0 + plot_h}"/>')
        out.append(_text(px(tick), y0 + plot_h + 14, f"{tick:g}", "gl-act-axis", "middle"))
    out.append(f'<rect {FRAME_BOX} x="{LEFT}" y="{y0}" width="{plot_w}" height="{plot_h}"/>')
    for i, (layer, centres, density) in enumerate(curves):
        points = " ".join(f"{px(c):.1f},{py(d):.1f}" for c, d in zip(centres, density))
        out.append(f'<polyline class="gl-act-hist {series_class(i)}" data-layer="{escape(layer.name)}" '
                   f'fill="none" stroke="{layer_color(i)}" stroke-width="1.6" points="{points}"/>')
    kx = LEFT + plot_w + 12
    for i, layer in enumerate(stats.watched):
        record = layer.records[index] if index < len(layer.records) else {"std": None}
        ky = y0 + 4 + KEY_ROW * i
        out.append(f'<g class="gl-act-key" data-layer="{escape(layer.name)}"><line class="{series_class(i)}" '
                   f'x1="{kx}" x2="{kx + 14}" y1="{ky + 6}" y2="{ky + 6}" stroke="{layer_color(i)}" stroke-width="2"/>'
                   f'{_text(kx + 18, ky + 10, _label(stats, layer, record), size=10)}</g>')
    if standalone:
        out.append("</svg>")
    return out


def gradient_histograms_svg(stats) -> Picture:
    """Each layer's histogram of the gradient that reached its outputs at the last backward, overlaid on one
    symmetric range (four times the largest layer's std: a wider tail counts in the end bins)."""
    plot_w = WIDTH - LEFT - KEY_W - RIGHT
    grads = [(i, layer, layer.last_grad) for i, layer in enumerate(stats.watched) if layer.last_grad is not None]
    spread = max((float(g.std()) for _, _, g in grads), default=0.0)
    half = 4 * spread or max((float(np.abs(g).max()) for _, _, g in grads), default=0.0) or 1.0
    width = 2 * half / stats.bins
    centres = -half + width * (np.arange(stats.bins) + 0.5)
    curves = [(i, layer, histogram_counts(g, -half, half, stats.bins) / max(g.size, 1) / width)
              for i, layer, g in grads]
    peak = max(float(d.max()) for _, _, d in curves) or 1.0
    plot_h = max(PLOT_H, len(stats.watched) * KEY_ROW + 8)
    out = _open("gradient-histograms", WIDTH, TOP + plot_h + 26)
    out.append(_text(LEFT, 16, "gradient reaching each layer's outputs at the last backward: histogram (density)",
                     "gl-act-title", size=12))

    def px(v):
        return LEFT + (v + half) / (2 * half) * plot_w

    for tick in nice_ticks(-half, half, 5):
        out.append(f'<line {GRID_LINE} x1="{px(tick):.1f}" x2="{px(tick):.1f}" y1="{TOP}" y2="{TOP + plot_h}"/>')
        out.append(_text(px(tick), TOP + plot_h + 14, f"{tick:g}", "gl-act-axis", "middle"))
    out.append(f'<rect {FRAME_BOX} x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>')
    for i, layer, density in curves:
        points = " ".join(f"{px(c):.1f},{TOP + plot_h - d / peak * (plot_h - 6):.1f}" for c, d in zip(centres, density))
        out.append(f'<polyline class="gl-act-hist {series_class(i)}" data-layer="{escape(layer.name)}" '
                   f'fill="none" stroke="{layer_color(i)}" stroke-width="1.6" points="{points}"/>')
        ky = TOP + 4 + KEY_ROW * i
        kx = LEFT + plot_w + 12
        out.append(f'<g class="gl-act-key" data-layer="{escape(layer.name)}"><line class="{series_class(i)}" '
                   f'x1="{kx}" x2="{kx + 14}" y1="{ky + 6}" y2="{ky + 6}" stroke="{layer_color(i)}" stroke-width="2"/>'
                   + _text(kx + 18, ky + 10, f"{layer.name} {type(layer.module).__name__} · std "
                           f"{layer.last_grad.std():.1e}", size=10) + '</g>')
    out.append("</svg>")
    return Picture("".join(out))


# --- fast.ai's colourful dimension -----------------------------------------------------------------------------

def color_dim_svg(stats) -> Picture:
    """Per layer a strip: one column per kept step, its histogram bottom (low) to top (high), log of the counts."""
    return Picture("".join(_color_dim(stats, 0, standalone=True)))


def _color_dim(stats, top: float, standalone: bool) -> list:
    plot_w = WIDTH - LEFT - LABEL_W - RIGHT
    height = top + TOP + len(stats.watched) * (STRIP_H + STRIP_GAP) + 18
    out = _open("color-dim", WIDTH, height) if standalone else []
    first, last = stats.steps[0], stats.steps[-1]
    out.append(_text(LEFT, top + 16, f"each layer's histogram at every step, side by side (steps {first}–{last}; "
                                     "bright: many outputs there, log scale)", "gl-act-title", size=12))
    for i, layer in enumerate(stats.watched):
        y = top + TOP + i * (STRIP_H + STRIP_GAP)
        counts = np.array([np.asarray(h) for h in layer.hists], dtype=np.float64).reshape(-1, stats.bins)
        shade = np.log1p(counts)
        shade = shade / shade.max() if shade.size and shade.max() > 0 else shade
        image = _viridis(shade.T[::-1])  # rows: bins, high at the top; columns: steps
        out.append(f'<g class="gl-act-strip" data-layer="{escape(layer.name)}" data-steps="{counts.shape[0]}">'
                   f'<image x="{LEFT}" y="{y}" width="{plot_w}" height="{STRIP_H}" preserveAspectRatio="none" '
                   f'style="image-rendering:pixelated" href="{_png_uri(image)}"/>'
                   f'<rect {FRAME_BOX} x="{LEFT}" y="{y}" width="{plot_w}" height="{STRIP_H}"/>'
                   f'{_text(LEFT - 4, y + 9, f"{layer.high:g}", "gl-act-axis", "end", 9)}'
                   f'{_text(LEFT - 4, y + STRIP_H, f"{layer.low:g}", "gl-act-axis", "end", 9)}'
                   f'{_text(LEFT + plot_w + 8, y + 16, f"{layer.name} {type(layer.module).__name__}")}'
                   f'{_text(LEFT + plot_w + 8, y + 30, _dead_text(layer), "gl-act-axis", size=10)}</g>')
    y = top + TOP + len(stats.watched) * (STRIP_H + STRIP_GAP) + 4
    out.append(_text(LEFT, y + 8, f"step {first}", "gl-act-axis"))
    out.append(_text(LEFT + plot_w, y + 8, f"step {last}", "gl-act-axis", "end"))
    if standalone:
        out.append("</svg>")
    return out


def _dead_text(layer) -> str:
    record = layer.records[-1] if layer.records else {"dead": None, "saturated": None}
    if record["saturated"] is None:
        return f"std {record['std']:.2f}" if record.get("std") is not None else ""
    word = "zero" if layer.kind == "relu" else "saturated"
    return f"{word} {_percent(record['saturated'])}, dead {_percent(record['dead'])}"


def _viridis(t: np.ndarray) -> np.ndarray:
    """The colour scale at each value in [0, 1], as an (h, w, 3) uint8 image."""
    stops = np.array([[int(c[i:i + 2], 16) for i in (1, 3, 5)] for c in SCALE], dtype=np.float64)
    at = np.clip(t, 0, 1) * (len(SCALE) - 1)
    i = np.minimum(at.astype(int), len(SCALE) - 2)
    f = (at - i)[..., None]
    return np.round(stops[i] + (stops[i + 1] - stops[i]) * f).astype(np.uint8)


def _png_uri(rgb: np.ndarray) -> str:
    """A PNG of an (h, w, 3) uint8 image as a data URI: the strips are images, not thousands of rectangles."""
    h, w = rgb.shape[:2]
    raw = b"".join(b"\x00" + row.tobytes() for row in np.ascontiguousarray(rgb))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# --- lines over the steps ---------------------------------------------------------------------------------------

SHORT = {"mean": "mean of the outputs", "std": "standard deviation of the outputs",
         "saturated": "fraction of outputs whose slope is ≈ 0", "dead": "fraction of units whose slope is ≈ 0 "
                                                                        "for the whole batch"}


def over_steps_svg(stats, stat: str) -> Picture:
    """``stat`` per layer over the kept steps; saturated and dead as percentages from 0."""
    series = stats.history(stat)
    fraction = stat in ("saturated", "dead")
    return lines_svg(f"{stat} per layer over the steps — {SHORT[stat]}", stats.steps,
                     [(name, series[name]) for name in stats.layers], log=False, fraction=fraction, kind=stat)


def lines_svg(title: str, steps: list, series: list, *, log: bool, fraction: bool = False, guide=None,
              kind: str = "lines", x_name: str = "step", key_end: str = "at the last step") -> Picture:
    """One line per (name, values) over ``steps``; log y in whole decades or linear; ``guide`` a dashed level."""
    plot_w = WIDTH - LEFT - KEY_W - RIGHT
    rows = max(len(series), 1)
    plot_h = max(PLOT_H, rows * KEY_ROW + 8)
    height = TOP + plot_h + 30
    finite = [v for _, values in series for v in values
              if isinstance(v, (int, float)) and math.isfinite(v) and (v > 0 or not log)]
    if log:
        logs = [math.log10(v) for v in finite] + ([math.log10(guide)] if guide else [])
        low, high = (math.floor(min(logs)), math.ceil(max(logs))) if logs else (-1, 1)
        high = high if high > low else low + 1
        to = math.log10
    else:
        low, high = (0.0, 1.0) if fraction or not finite else (min(finite), max(finite))
        if not fraction:
            pad = (high - low) * 0.08 or 0.5
            low, high = low - pad, high + pad
        to = float
    first, last = (steps[0], steps[-1]) if steps else (0, 1)
    span = max(last - first, 1)

    def px(step):
        return LEFT + (step - first) / span * plot_w

    def py(value):
        return TOP + (high - to(value)) / (high - low) * plot_h

    out = _open(kind, WIDTH, height)
    out.append(_text(LEFT, 16, title, "gl-act-title", size=12))
    ticks = range(int(low), int(high) + 1) if log else nice_ticks(low, high)
    for tick in ticks:
        ty = TOP + (high - tick) / (high - low) * plot_h
        label = f"1e{tick}" if log else f"{tick:.0%}" if fraction else f"{tick:.2g}"
        out.append(f'<line {GRID_LINE} x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}"/>'
                   + _text(LEFT - 6, ty + 4, label, "gl-act-axis", "end"))
    out.append(f'<rect {FRAME_BOX} x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}"/>')
    out.append(_text(LEFT, TOP + plot_h + 16, f"{x_name} {first}", "gl-act-axis"))
    out.append(_text(LEFT + plot_w, TOP + plot_h + 16, f"{x_name} {last}", "gl-act-axis", "end"))
    if guide is not None:
        gy = py(guide)
        out.append(f'<g class="gl-act-guide-line"><line class="gl-act-guide gl-ink-axis" stroke="{AXIS_INK}" '
                   f'x1="{LEFT}" x2="{LEFT + plot_w}" '
                   f'y1="{gy:.1f}" y2="{gy:.1f}" stroke-dasharray="6 4" stroke-width="1.5"/>'
                   f'{_text(LEFT + plot_w - 4, gy - 4, f"{guide:g}: the guide", "gl-act-axis", "end")}</g>')
    for i, (name, values) in enumerate(series):
        runs, run = [], []
        for step, v in zip(steps, values):
            if isinstance(v, (int, float)) and math.isfinite(v) and (v > 0 or not log):
                run.append(f"{px(step):.1f},{py(v):.1f}")
            elif run:
                runs.append(run)
                run = []
        runs += [run] if run else []
        out.append(f'<g class="gl-act-line" data-layer="{escape(name)}">'
                   + "".join(f'<polyline class="{series_class(i)}" fill="none" stroke="{layer_color(i)}" '
                             f'stroke-width="1.5" '
                             f'points="{" ".join(r)}"/>' for r in runs) + "</g>")
        kx, ky = LEFT + plot_w + 12, TOP + 4 + KEY_ROW * i
        latest = next((v for v in reversed(values) if isinstance(v, (int, float)) and math.isfinite(v)), None)
        shown = "—" if latest is None else f"{latest:.0%}" if fraction else f"{latest:.2g}"
        out.append(f'<g class="gl-act-key" data-layer="{escape(name)}"><line class="{series_class(i)}" '
                   f'x1="{kx}" x2="{kx + 14}" y1="{ky + 6}" y2="{ky + 6}" stroke="{layer_color(i)}" stroke-width="2"/>'
                   f'{_text(kx + 18, ky + 10, f"{name}: {shown} {key_end}", size=10)}</g>')
    out.append("</svg>")
    return Picture("".join(out))


def summary_svg(stats) -> str:
    """The histograms at the newest step above the colour-dimension strips (a note when nothing is recorded)."""
    if not stats.steps:
        out = _open("summary", WIDTH, 40)
        out.append(_text(LEFT, 24, f"{len(stats.watched)} layers watched ({', '.join(stats.layers[:6])}"
                                   f"{', ...' if len(stats.layers) > 6 else ''}): no training forward yet",
                         "gl-act-axis"))
        return "".join(out) + "</svg>"
    top = _histograms(stats, len(stats.steps) - 1, 0, standalone=False)
    top_h = TOP + max(PLOT_H, len(stats.watched) * KEY_ROW + 8) + 26
    strips = _color_dim(stats, top_h, standalone=False)
    height = top_h + TOP + len(stats.watched) * (STRIP_H + STRIP_GAP) + 18
    return "".join(_open("summary", WIDTH, height) + top + strips) + "</svg>"

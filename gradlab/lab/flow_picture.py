"""Pictures of a gradient flow's history: one SVG (the live widget's chart and the saved notebook's), or matplotlib.

Both draw one line per layer over the training steps on a log scale, because the figures of a deep
network's layers differ by orders of magnitude: that spread is exactly what a vanishing gradient is.
The SVG is the only drawing of the chart: the widget shows it as it is and marks the layer a click
opened (``data-layer`` on each line, key and flag says which layer it belongs to).
"""

from __future__ import annotations

import math
import textwrap
from html import escape

from .colors import ALARM_INK, AXIS_INK, FRAME, GRID, TEXT_INK, TITLE_INK, WARNING_INK, decades, layer_color

WIDTH, LEFT, TOP, BELOW, RIGHT = 760, 56, 24, 30, 10  # the plot's margins: axis figures left, step figures below
PLOT_H, KEY_W, KEY_ROW, KEY_ROWS_MAX, FLAG_LINE = 230, 150, 15, 24, 15
CHAR_W = 6.2  # the width of one character at the chart's 11 px, to wrap and clip text


def flow_svg(history: dict, figure: str = "grad_norm", width: int = WIDTH) -> str:
    """``figure`` per layer over the steps, log y, a key of the layers beside it and the flags below."""
    series, steps, layers = history["series"][figure], history["steps"], history["layers"]
    symbol, meaning = history["figures"][figure]
    rows = max((PLOT_H - 8) // KEY_ROW, min(len(layers), KEY_ROWS_MAX))  # the key grows the chart, then wraps
    columns = max(1, math.ceil(len(layers) / rows))
    plot_h = max(PLOT_H, rows * KEY_ROW + 8)
    width = max(width, LEFT + 300 + columns * KEY_W + RIGHT)
    plot_w = width - LEFT - columns * KEY_W - RIGHT
    low, high = decades(v for values in series.values() for v in values)
    first, last = (steps[0], steps[-1]) if steps else (0, 1)
    span = max(last - first, 1)

    def x(step):
        return LEFT + (step - first) / span * plot_w

    def y(value):
        return TOP + (high - math.log10(value)) / (high - low) * plot_h

    flag_lines = _flag_lines(history, (width - LEFT - RIGHT) / CHAR_W)
    height = TOP + plot_h + BELOW + FLAG_LINE * sum(len(lines) for _, lines in flag_lines) + 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-flow-lines" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11" '
           f'data-figure="{escape(figure)}">',
           f'<rect width="100%" height="100%" fill="#fff"/>',
           f'<text x="{LEFT}" y="14" font-size="12" fill="{TITLE_INK}">{escape(symbol)} per layer over the steps '
           f'(log scale) — {escape(meaning)}</text>']
    for exponent in range(low, high + 1):
        ty = TOP + (high - exponent) / (high - low) * plot_h
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="{GRID}"/>'
                   f'<text x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="{AXIS_INK}">1e{exponent}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="{FRAME}"/>'
               f'<text x="{LEFT}" y="{TOP + plot_h + 16}" fill="{AXIS_INK}">step {first}</text>'
               f'<text x="{LEFT + plot_w}" y="{TOP + plot_h + 16}" text-anchor="end" '
               f'fill="{AXIS_INK}">step {last}</text>')
    xs = [x(step) for step in steps]
    for index, name in enumerate(layers):
        values = series[name]
        latest = _figure_text(values[-1] if values else None)
        tip = f"layer {name}: {latest} at step {last} — click to open it in the graph"
        out.append(f'<g class="gl-flow-layer" data-layer="{escape(name)}"><title>{escape(tip)}</title>')
        out.extend(_line(run, layer_color(index)) for run in _runs(xs, values, y))
        out.append("</g>")
    out.append(_key(layers, LEFT + plot_w + 10, rows))
    if not steps:
        out.append(f'<text x="{LEFT + 12}" y="{TOP + plot_h / 2}" fill="{AXIS_INK}">no updates yet: call '
                   f'flow.update() after each optimizer.step()</text>')
    out.append(_flags(flag_lines, TOP + plot_h + BELOW + 8, width))
    out.append("</svg>")
    return "".join(out)


def _runs(xs: list, values: list, y) -> list:
    """The points of a layer's line, split where a figure is missing (None, nan, inf, 0): a gap shows there."""
    runs, run = [], []
    for px, value in zip(xs, values):
        if isinstance(value, (int, float)) and 0 < value < math.inf:
            run.append(f"{px:.1f},{y(value):.1f}")
        elif run:
            runs.append(run)
            run = []
    return runs + [run] if run else runs


def _line(run: list, color: str) -> str:
    if len(run) == 1:
        px, py = run[0].split(",")
        return f'<circle cx="{px}" cy="{py}" r="2.5" fill="{color}"/>'
    return f'<polyline class="gl-flow-line" fill="none" stroke="{color}" stroke-width="1.6" points="{" ".join(run)}"/>'


def _key(layers: list, left: float, rows: int) -> str:
    """A swatch and the name of each layer, in columns of ``rows``; each entry is a target to click."""
    parts = ['<g class="gl-flow-keys">']
    for index, name in enumerate(layers):
        kx, ky = left + KEY_W * (index // rows), TOP + 4 + KEY_ROW * (index % rows)
        shown = name if len(name) <= 20 else name[:19] + "…"
        parts.append(f'<g class="gl-flow-key" data-layer="{escape(name)}"><title>layer {escape(name)} — click to open '
                     f'it in the graph</title><rect class="gl-flow-hit" x="{kx - 3}" y="{ky - 2}" width="{KEY_W - 6}" '
                     f'height="{KEY_ROW - 1}" rx="3" fill="#fff" fill-opacity="0"/>'
                     f'<line x1="{kx}" x2="{kx + 16}" y1="{ky + 6}" y2="{ky + 6}" stroke="{layer_color(index)}" '
                     f'stroke-width="2"/><text x="{kx + 20}" y="{ky + 10}" fill="{TEXT_INK}">'
                     f'{escape(shown)}</text></g>')
    parts.append("</g>")
    return "".join(parts)


def _flag_lines(history: dict, chars: float) -> list:
    """Each flag (or the one line that says none is flagged) as (flag or None, its wrapped lines)."""
    flags = history.get("flags", [])
    if flags:
        return [(flag, textwrap.wrap("⚑ " + flag_text(flag), int(chars))) for flag in flags]
    if history.get("count"):
        limits = history["thresholds"]
        return [(None, textwrap.wrap(f"no layer flagged (vanishing below {limits['vanishing']:g} of the largest "
                                     f"‖∂L/∂W‖, exploding above {limits['exploding']:g}, over the last "
                                     f"{limits['window']} updates)", int(chars)))]
    return []


def _flags(flag_lines: list, top: float, width: int) -> str:
    parts, y = ['<g class="gl-flow-flags">'], top
    for flag, lines in flag_lines:
        spans = "".join(f'<tspan x="{LEFT}" y="{y + FLAG_LINE * i + 4:.0f}">{escape(line)}</tspan>'
                        for i, line in enumerate(lines))
        if flag is None:
            parts.append(f'<text class="gl-flow-none" fill="{AXIS_INK}">{spans}</text>')
        else:
            ink = ALARM_INK if flag["kind"] == "exploding" else WARNING_INK
            parts.append(f'<g class="gl-flow-flag gl-flow-{flag["kind"]}" data-layer="{escape(flag["layer"])}">'
                         f'<rect class="gl-flow-hit" x="{LEFT - 4}" y="{y - 8}" width="{width - LEFT - RIGHT + 4}" '
                         f'height="{FLAG_LINE * len(lines)}" rx="3" fill="#fff" fill-opacity="0"/>'
                         f'<text fill="{ink}">{spans}</text></g>')
        y += FLAG_LINE * len(lines)
    parts.append("</g>")
    return "".join(parts)


def _figure_text(value) -> str:
    return value if isinstance(value, str) else "—" if value is None else f"{value:.3g}"


def flag_text(flag: dict) -> str:
    """'layer 0 vanishing: 3.1e-07 — rule ...' — what the widget and pictures say."""
    return f"layer {flag['layer']} {flag['kind']}: {_figure_text(flag['figure'])} — {flag['rule']}"


def flow_figure(history: dict, figure: str = "grad_norm"):
    """A matplotlib Figure: one line per layer over the steps, log y."""
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError('GradientFlow.plot() needs matplotlib: pip install "gradlab[lab]"') from None
    symbol, meaning = history["figures"][figure]
    fig, ax = plt.subplots(figsize=(7, 3.6))
    for index, name in enumerate(history["layers"]):
        points = [(s, v) for s, v in zip(history["steps"], history["series"][figure][name])
                  if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
        if points:
            ax.plot(*zip(*points), color=layer_color(index), label=name, linewidth=1.4)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel(symbol)
    ax.set_title(f"{symbol} per layer — {meaning}", fontsize=10)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5), frameon=False)
    fig.tight_layout()
    plt.close(fig)  # returned, not left to pyplot: a notebook shows it once, as the cell's value
    return fig

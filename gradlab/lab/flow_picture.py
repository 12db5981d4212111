"""Pictures of a gradient flow's history: one SVG (the live widget's chart and the saved notebook's), or matplotlib.

Both draw one line per layer over the training steps on a log scale, because the figures of a deep
network's layers differ by orders of magnitude: that spread is exactly what a vanishing gradient is.
The SVG is the only drawing of the chart: the widget shows it as it is and marks the layer a click
opened (``data-layer`` on each line, key and flag says which layer it belongs to). A figure the log
scale has no place for is still drawn: nan and inf as alarm marks above the plot, 0 under it; a layer replaced, added or removed during training is marked at the step it happened.
"""

from __future__ import annotations

import math
import textwrap
from html import escape

from .colors import (ALARM_INK, AXIS_INK, FRAME, GRID, TEXT_INK, TITLE_INK, WARNING_INK, decades, ink_class,
                     layer_color, series_class)

WIDTH, LEFT, TOP, BELOW, RIGHT = 760, 56, 24, 30, 10  # the plot's margins: axis figures left, step figures below
PLOT_H, KEY_W, KEY_ROW, KEY_ROWS_MAX, FLAG_LINE = 230, 150, 15, 24, 15
LANE = 12  # the strip above the plot where nan and inf are marked, when there are any
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

    chars = (width - LEFT - RIGHT) / CHAR_W
    unplaced = {name: _unplaced(steps, series[name]) for name in layers}
    top = TOP + (LANE if any(run[0] in GLYPHS for runs in unplaced.values() for run in runs) else 0)

    def y(value):
        return top + (high - math.log10(value)) / (high - low) * plot_h

    flag_lines = _note_lines(history, unplaced, chars) + _flag_lines(history, chars)
    height = top + plot_h + BELOW + FLAG_LINE * sum(len(lines) for _, lines in flag_lines) + 8
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-flow-lines" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11" '
           f'data-figure="{escape(figure)}">',
           '<rect class="gl-bg" width="100%" height="100%" fill="#fff"/>',
           f'<text x="{LEFT}" y="14" font-size="12" class="gl-ink-title" fill="{TITLE_INK}">{escape(symbol)} per layer over the steps '
           f'(log scale) — {escape(meaning)}</text>']
    for exponent in range(low, high + 1):
        ty = top + (high - exponent) / (high - low) * plot_h
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" class="gl-grid" stroke="{GRID}"/>'
                   f'<text x="{LEFT - 6}" y="{ty + 4:.1f}" text-anchor="end" class="gl-ink-axis" fill="{AXIS_INK}">1e{exponent}</text>')
    out.append(f'<rect x="{LEFT}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" class="gl-frame" stroke="{FRAME}"/>'
               f'<text x="{LEFT}" y="{top + plot_h + 16}" class="gl-ink-axis" fill="{AXIS_INK}">step {first}</text>'
               f'<text x="{LEFT + plot_w}" y="{top + plot_h + 16}" text-anchor="end" '
               f'class="gl-ink-axis" fill="{AXIS_INK}">step {last}</text>')
    xs = [x(step) for step in steps]
    for index, name in enumerate(layers):
        values = series[name]
        latest = _figure_text(values[-1] if values else None)
        tip = f"layer {name}: {latest} at step {last} — click to open it in the graph"
        out.append(f'<g class="gl-flow-layer" data-layer="{escape(name)}"><title>{escape(tip)}</title>')
        out.extend(_line(run, layer_color(index), series_class(index)) for run in _runs(xs, values, y))
        out.append("</g>")
    for index, name in enumerate(layers):  # over every line: a mark that says "no place on this scale" must show
        out.extend(_unplaced_mark(name, run, x, top, top + plot_h, layer_color(index), series_class(index))
                   for run in unplaced[name])
    for change in history.get("changes", []):
        if first <= change["step"] <= last and steps:
            cx = x(change["step"] - 0.5) if change["step"] > first else x(first)
            out.append(f'<g class="gl-flow-change" data-layer="{escape(change["layer"])}"><title>'
                       f'{escape(change["text"])}</title><line x1="{cx:.1f}" x2="{cx:.1f}" y1="{top}" '
                       f'y2="{top + plot_h}" class="gl-ink-axis" stroke="{AXIS_INK}" stroke-dasharray="4 3"/>'
                       f'<text x="{cx + 3:.1f}" y="{top + plot_h - 4}" class="gl-ink-axis" fill="{AXIS_INK}">{escape(change["layer"])} '
                       f'{escape(change["change"])}</text></g>')
    out.append(_key(layers, LEFT + plot_w + 10, rows))
    if not steps:
        out.append(f'<text x="{LEFT + 12}" y="{top + plot_h / 2}" class="gl-ink-axis" fill="{AXIS_INK}">no updates yet: call '
                   f'flow.update() after each optimizer.step()</text>')
    out.append(_flags(flag_lines, top + plot_h + BELOW + 8, width))
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


NON_FINITE = ("nan", "inf", "-inf")  # how history() spells the figures JSON has no number for
GLYPHS = {"nan": "✕", "inf": "▲"}  # under the alarm mark along the top edge


def _unplaced(steps: list, values: list) -> list:
    """The runs of consecutive kept points where a figure is nan, ±inf or 0: [(what, first, last step, points)]."""
    runs, previous = [], None  # previous: the index of the last such point
    for index, (step, value) in enumerate(zip(steps, values)):
        what = _unplaced_kind(value)
        if what is None:
            continue
        if runs and runs[-1][0] == what and previous == index - 1:
            runs[-1] = (what, runs[-1][1], step, runs[-1][3] + 1)
        else:
            runs.append((what, step, step, 1))
        previous = index
    return runs


def _unplaced_kind(value) -> str | None:
    if isinstance(value, str):
        return value if value in NON_FINITE else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        if value == 0:
            return "0"
    return None


def _unplaced_mark(name: str, run: tuple, x, top: float, bottom: float, color: str, series: str = "") -> str:
    """nan and inf in the strip above the plot in the alarm ink, 0 (and -inf) under it in the layer's colour."""
    what, start, end, points = run
    at_top = what in GLYPHS
    py = top - LANE / 2 if at_top else bottom + 4
    ink = ALARM_INK if at_top else color
    steps = f"step {start}" if start == end else f"steps {start}–{end} ({points} kept points)"
    why = "not a number" if what == "nan" else "infinite" if "inf" in what else "exactly 0"
    tip = f"layer {name}: {what} at {steps} — {why}, so it has no place on the log scale"
    x0, x1 = x(start), x(end)
    glyph = GLYPHS.get(what, "")
    label = (f'<text x="{x0 - 5:.1f}" y="{py + 3.5:.1f}" text-anchor="end" font-size="10" class="{ink_class(ink)}" fill="{ink}">{glyph}</text>'
             if glyph else "")
    kind = "zero" if what == "0" else what.strip("-")
    return (f'<g class="gl-flow-unplaced gl-flow-{kind}" data-layer="{escape(name)}">'
            f'<title>{escape(tip)}</title><line x1="{x0:.1f}" x2="{x1:.1f}" y1="{py:.1f}" y2="{py:.1f}" class="{ink_class(ink) or series}" stroke="{ink}" '
            f'stroke-width="4" stroke-linecap="round"/>{label}</g>')


def _line(run: list, color: str, series: str) -> str:
    if len(run) == 1:
        px, py = run[0].split(",")
        return f'<circle class="{series}" cx="{px}" cy="{py}" r="2.5" fill="{color}"/>'
    return f'<polyline class="gl-flow-line {series}" fill="none" stroke="{color}" stroke-width="1.6" points="{" ".join(run)}"/>'


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
                     f'class="{series_class(index)}" stroke-width="2"/><text x="{kx + 20}" y="{ky + 10}" '
                     f'class="gl-ink-text" fill="{TEXT_INK}">'
                     f'{escape(shown)}</text></g>')
    parts.append("</g>")
    return "".join(parts)


def _note_lines(history: dict, unplaced: dict, chars: float) -> list:
    """The lines under the plot that say what the plot cannot, each as (ink, its wrapped lines): figures with
    no place on it, layers replaced, added or removed."""
    notes = []
    broken = {name: sorted({run[0] for run in runs if run[0] in ("nan", "inf")}, reverse=True)
              for name, runs in unplaced.items()}
    broken = {name: kinds for name, kinds in broken.items() if kinds}
    if broken:
        first = min(run[1] for runs in unplaced.values() for run in runs if run[0] in ("nan", "inf"))
        kinds = sorted({kind for found in broken.values() for kind in found}, reverse=True)
        marks = " ".join(f"{GLYPHS[kind]} {kind}" for kind in kinds)
        names = ", ".join(f"{name} ({' and '.join(found)})" for name, found in broken.items())
        notes.append((ALARM_INK, textwrap.wrap(f"{marks} above the plot: not finite from step {first}, so "
                                               f"not on the log scale — layer {names}", int(chars))))
    zero = [name for name, runs in unplaced.items() if any(run[0] in ("0", "-inf") for run in runs)]
    if zero:
        notes.append((AXIS_INK, textwrap.wrap(f"a mark under the plot: exactly 0, which a log scale cannot show "
                                          f"— layer {', '.join(zero)}", int(chars))))
    for change in history.get("changes", []):
        notes.append((TEXT_INK, textwrap.wrap(f"⇢ {change['text']}", int(chars))))
    return notes


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
        if isinstance(flag, str):  # a note about the plot, in its ink
            parts.append(f'<text class="gl-flow-note {ink_class(flag)}" fill="{flag}">{spans}</text>')
        elif flag is None:
            parts.append(f'<text class="gl-flow-none gl-ink-axis" fill="{AXIS_INK}">{spans}</text>')
        else:
            ink = ALARM_INK if flag["kind"] in ALARMS else WARNING_INK
            parts.append(f'<g class="gl-flow-flag gl-flow-{flag["kind"]}" data-layer="{escape(flag["layer"])}">'
                         f'<rect class="gl-flow-hit" x="{LEFT - 4}" y="{y - 8}" width="{width - LEFT - RIGHT + 4}" '
                         f'height="{FLAG_LINE * len(lines)}" rx="3" fill="#fff" fill-opacity="0"/>'
                         f'<text class="{ink_class(ink)}" fill="{ink}">{spans}</text></g>')
        y += FLAG_LINE * len(lines)
    parts.append("</g>")
    return "".join(parts)


ALARMS = ("exploding", "not_finite")  # flags drawn in the alarm ink; vanishing and no_gradient in the warning ink


def _figure_text(value) -> str:
    return value if isinstance(value, str) else "—" if value is None else f"{value:.3g}"


def flag_text(flag: dict) -> str:
    """'layer 0 vanishing: 3.1e-07 — rule ...' — what the widget and pictures say."""
    figure = "" if flag["figure"] is None else f": {_figure_text(flag['figure'])}"
    return f"layer {flag['layer']} {flag['kind'].replace('_', ' ')}{figure} — {flag['rule']}"


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

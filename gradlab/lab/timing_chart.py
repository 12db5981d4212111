"""Draw compare_devices' table: one SVG (the widget's drawing and the saved notebook's picture), or matplotlib.

A row per device: a bar for the median on a log scale (device times differ by orders of magnitude),
a whisker over the interquartile range, the speedup against numpy; the first call's extra time
(compile or cache load) drawn apart, hatched, in its own column; unavailable devices greyed with why.
"""

from __future__ import annotations

import itertools
import math
import textwrap
from html import escape

from .colors import ALARM_INK, AXIS_INK, GRID, decades
from .timing import DeviceTimes, _ms, _ratio

WIDTH, LABEL_W, BARS_W, COMPILE_W = 760, 120, 450, 170
SPAN_W = 300  # the log axis; the rest of the bar column holds each bar's figures
ROW_H, LINE_H, TOP, GAP = 32, 13, 44, 6
BAR, COMPILE_INK, GREY, RED = "#6366f1", "#d97706", "#9ca3af", ALARM_INK
COMPILED_BAR = "#0d9488"  # compare_compiled: the compiled row's bar (eager keeps BAR)
_ids = itertools.count()

STYLE = f"""
.gl-dt {{ font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; font-size: 11.5px; fill: #1f2937; }}
.gl-dt-label {{ font-weight: 600; }}
.gl-dt-unavailable .gl-dt-label, .gl-dt-unavailable .gl-dt-why {{ fill: {AXIS_INK}; }}
.gl-dt-failed .gl-dt-why {{ fill: {ALARM_INK}; }}
.gl-dt-pending .gl-dt-why {{ fill: {AXIS_INK}; font-style: italic; }}
.gl-dt-figure {{ font-size: 11px; }}
.gl-dt-axis {{ font-size: 10px; fill: {AXIS_INK}; }}
.gl-dt-grid {{ stroke: {GRID}; }}
.gl-dt-note {{ font-size: 10.5px; fill: #4b5563; }}
.gl-dt-variant {{ font-size: 10.5px; font-weight: 600; }}
.gl-dt-compiled .gl-dt-variant {{ fill: #0f766e; }}
.gl-dt-fallback {{ font-size: 10.5px; fill: {ALARM_INK}; }}
"""


NOTES = ("bar: median (log scale) · whisker: interquartile range · × numpy: numpy's median / this one",
         "hatched: the first call's extra time (numba compiles or loads its kernels there)")


VARIANT_NOTES = ("bar: median (log scale) · whisker: interquartile range · × eager: this device's eager median / "
                 "the compiled one (above 1: compiled is faster)",
                 "hatched: the first call's extra time (the compiled step traces and plans there; numba compiles)")


def to_svg(table: DeviceTimes, pending: frozenset = frozenset(), run: int = 0) -> str:
    """The chart as standalone SVG text; rows whose device is in ``pending`` say they are being timed."""
    timed = [r for r in table if r.timed]
    hatch = f"gl-dt-hatch-{next(_ids)}"  # unique: several charts share one page
    low, high = _span([t for r in timed for t in (r.median_s, *r.quartiles)])
    x_of = _log_axis(low, high)
    top_compile = max((r.compile_s for r in timed if r.compile_s), default=0.0)
    measured = textwrap.wrap(table.measured, 120) or [""]
    head_y = TOP + LINE_H * (len(measured) - 1)  # where the first row starts
    y, rows_out = head_y, []
    for row in table:
        lines, kind = _row_text(row, (row.device, row.variant) in pending or (not row.variant and row.device in pending))
        height = max(ROW_H, LINE_H * len(lines) + 10) + (LINE_H if kind == "timed" and row.fallback else 0)
        rows_out.append(_row(row, kind, lines, y, height, x_of, top_compile, hatch))
        y += height + GAP
    axis_y = y + 2
    grid = "".join(f'<line class="gl-dt-grid" x1="{x_of(t):.1f}" x2="{x_of(t):.1f}" y1="{head_y - 8}" y2="{axis_y}"/>'
                   f'<text class="gl-dt-axis" x="{x_of(t):.1f}" y="{axis_y + 12}" text-anchor="middle">{_ms(t)}</text>'
                   for t in _ticks(low, high)) if timed else ""
    notes = [*(VARIANT_NOTES if table.has_variants else NOTES),
             *(line for note in table.notes() for line in textwrap.wrap(note, 125))]
    height = axis_y + 22 + LINE_H * len(notes) + 6
    head = "".join(f'<tspan x="8" dy="{0 if i == 0 else LINE_H}">{escape(line)}</tspan>'
                   for i, line in enumerate(measured))
    columns = (f'<text class="gl-dt-axis" x="{LABEL_W}" y="{head_y - 14}">median per call</text>'
               f'<text class="gl-dt-axis" x="{LABEL_W + BARS_W + 10}" y="{head_y - 14}">first call − median</text>')
    foot = "".join(f'<text class="gl-dt-note" x="8" y="{axis_y + 30 + LINE_H * i}">{escape(note)}</text>'
                   for i, note in enumerate(notes))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-dt" width="{WIDTH}" height="{height:.0f}" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" data-rows="{len(table)}" data-run="{run}">'
            f'<style>{STYLE}</style><rect class="gl-bg" width="100%" height="100%" fill="#fff"/>'
            f'{_hatch(hatch)}<text class="gl-dt-measured" x="8" y="16">{head}</text>'
            f'{columns}{grid}{"".join(rows_out)}{foot}</svg>')


def _row_text(row, pending) -> tuple:
    """The row's kind (timed, unavailable, failed, pending) and its lines of explanation."""
    if not row.available:
        return textwrap.wrap(row.reason, 92)[:4], "unavailable"
    if row.error:
        return textwrap.wrap(row.error, 92)[:4], "failed"
    if pending or not row.timed:
        return ["timing…" if pending else "not timed yet"], "pending"
    return [""], "timed"


def _row(row, kind, lines, y, height, x_of, top_compile, hatch) -> str:
    mid = y + (height - LINE_H if kind == "timed" and row.fallback else height) / 2
    variant = f' gl-dt-{row.variant}" data-variant="{row.variant}' if row.variant else ""
    parts = [f'<g class="gl-dt-row gl-dt-{kind}{variant}" data-device="{escape(row.device)}">']
    if kind == "unavailable":
        parts.append(f'<rect x="2" y="{y}" width="{WIDTH - 4}" height="{height}" rx="4" fill="#f3f4f6"/>')
    label_y = mid - 2 if kind == "timed" else mid + 4
    parts.append(f'<text class="gl-dt-label" x="8" y="{label_y:.1f}">{escape(row.label)}</text>')
    if kind != "timed":
        first = mid - LINE_H * (len(lines) - 1) / 2 + 4
        spans = "".join(f'<tspan x="{LABEL_W}" y="{first + LINE_H * i:.1f}">{escape(line)}</tspan>'
                        for i, line in enumerate(lines))
        parts.append(f'<text class="gl-dt-why">{spans}</text></g>')
        return "".join(parts)
    x0, x1 = x_of.left, x_of(row.median_s)
    q1, q3 = (x_of(q) for q in row.quartiles)
    if row.variant == "compiled":
        label = _ms(row.median_s) + (f" · {_ratio(row.vs_eager)} eager" if row.vs_eager is not None else "")
    elif row.variant == "eager":
        label = _ms(row.median_s) + (f" · {_ratio(row.speedup)} numpy" if row.speedup is not None
                                     and row.device != "cpu" else "")
    else:
        label = _ms(row.median_s) + (f" · {_ratio(row.speedup)} numpy" if row.speedup is not None else "")
    if row.fallback:
        label += " · ran eagerly"
    fill = COMPILED_BAR if row.variant == "compiled" else BAR
    bar_class = "gl-dt-bar" + (f" gl-dt-bar-{row.variant}" if row.variant else "")
    parts += [f'<rect class="{bar_class}" x="{x0:.1f}" y="{mid - 8:.1f}" width="{max(x1 - x0, 1.5):.1f}" height="16" '
              f'rx="2" fill="{fill}"><title>{escape(row.status)}</title></rect>',
              f'<path class="gl-dt-whisker" d="M{q1:.1f},{mid:.1f}H{q3:.1f}M{q1:.1f},{mid - 5:.1f}V{mid + 5:.1f}'
              f'M{q3:.1f},{mid - 5:.1f}V{mid + 5:.1f}" stroke="#1e1b4b" stroke-width="1.3" fill="none"/>']
    parts.append(f'<text class="gl-dt-figure" x="{max(x1, q3) + 6:.1f}" y="{mid + 4:.1f}">{escape(label)}</text>')
    cx = LABEL_W + BARS_W + 10
    if row.compile_s:
        w = max(2.0, (COMPILE_W - 64) * row.compile_s / top_compile) if top_compile else 2.0
        parts.append(f'<rect class="gl-dt-compile" x="{cx}" y="{mid - 7:.1f}" width="{w:.1f}" height="14" '
                     f'fill="url(#{hatch})" stroke="{COMPILE_INK}" stroke-width="1"/>')
        parts.append(f'<text class="gl-dt-figure" x="{cx + w + 4:.1f}" y="{mid + 4:.1f}">+{_ms(row.compile_s)}</text>')
    runs = f"{row.repeats} repeats" if row.repeats == row.asked else f"{row.repeats} of {row.asked} repeats"
    if row.variant:
        parts.append(f'<text class="gl-dt-variant" x="8" y="{mid + 10:.1f}">{row.variant}'
                     f'<tspan class="gl-dt-axis" font-weight="normal"> · {runs}</tspan></text>')
    else:
        parts.append(f'<text class="gl-dt-axis" x="8" y="{mid + 10:.1f}">{runs}</text>')
    if row.fallback:
        why = textwrap.shorten(f"not compiled, ran eagerly: {row.fallback}", 110, placeholder="…")
        parts.append(f'<text class="gl-dt-fallback" x="{LABEL_W}" y="{mid + 8 + LINE_H + 2:.1f}">{escape(why)}'
                     f'<title>{escape(row.fallback)}</title></text>')
    parts.append('</g>')
    return "".join(parts)


def _hatch(hatch) -> str:
    return (f'<defs><pattern id="{hatch}" width="6" height="6" patternUnits="userSpaceOnUse" '
            f'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fef3c7"/>'
            f'<line x1="0" y1="0" x2="0" y2="6" stroke="{COMPILE_INK}" stroke-width="2"/></pattern></defs>')


def _span(times) -> tuple:
    """The decades that hold every time, in seconds (0.1 ms to 1 ms when there is nothing yet)."""
    low, high = decades(times, empty=(-4, -3))
    return 10.0 ** low, 10.0 ** high


def _log_axis(low, high):
    """Seconds -> x on a log scale from low to high across the bar column."""
    left, span = LABEL_W, SPAN_W
    scale = math.log10(high / low) or 1.0

    def x_of(seconds):
        return left + span * (math.log10(max(seconds, low) / low)) / scale

    x_of.left = left
    return x_of


def _ticks(low, high) -> list:
    ticks, t = [], low
    while t <= high * 1.0001:
        ticks.append(t)
        t *= 10
    return ticks


# --- matplotlib, on demand ---------------------------------------------------------------------------

def plot(table: DeviceTimes):
    """The same chart as a matplotlib Figure: medians with interquartile whiskers, and compile apart."""
    try:
        import matplotlib.figure
    except ImportError:
        raise ImportError('DeviceTimings.plot() needs matplotlib: pip install "gradlab[lab]"') from None
    figure = matplotlib.figure.Figure(figsize=(9, 0.6 * len(table) + 1.6), layout="constrained")
    bars, compile_ax = figure.subplots(1, 2, sharey=True, width_ratios=(3, 1))
    positions = list(range(len(table)))[::-1]
    for y, row in zip(positions, table):
        if row.timed:
            q1, q3 = row.quartiles
            bars.barh(y, row.median_s, color=COMPILED_BAR if row.variant == "compiled" else BAR, xerr=[[row.median_s - q1], [q3 - row.median_s]], capsize=4)
            text = _ms(row.median_s) + (f"  {_ratio(row.vs_eager)} eager" if row.vs_eager is not None else
                                        f"  {_ratio(row.speedup)} numpy" if row.speedup is not None else "")
            text += "  (ran eagerly: not compiled)" if row.fallback else ""
            bars.annotate(text, (max(q3, row.median_s), y), xytext=(6, 0), textcoords="offset points", va="center")
            if row.compile_s:
                compile_ax.barh(y, row.compile_s, color="#fef3c7", edgecolor=COMPILE_INK, hatch="//")
        else:
            why = row.reason if not row.available else row.error or "not timed"
            bars.annotate(textwrap.shorten(why, 90), (0.01, y), xycoords=("axes fraction", "data"), va="center",
                          color=GREY if not row.available else RED, fontsize=8)
    bars.set_xscale("log")
    bars.set_yticks(positions, [row.label + (f" · {row.variant}" if row.variant else "") for row in table])
    bars.set_xlabel("median seconds per call (log scale); whisker: interquartile range")
    compile_ax.set_xlabel("first call − median (s)")
    figure.suptitle(textwrap.fill(table.measured, 110), fontsize=9)
    return figure

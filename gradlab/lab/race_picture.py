"""The optimizer race as one SVG: the loss surface in bands of equal loss, each optimizer's path, and its state.

The surface is the loss at the centre of each of 64 × 64 cells, cut into ``BANDS`` bands holding
equally many cells (so a steep surface and a flat one both show their shape), each row's run of one
band drawn as one rectangle. Each run's path is a line in its own colour, with a marker at the
step shown; under the map, one row of small charts per optimizer: its gradient, the state it
keeps (the momentum buffer or ``exp_avg``; ``square_avg`` or ``exp_avg_sq``) and the step it took,
x solid and y dashed. The front end moves the markers, the trails and the charts' cursor; ``frames``
gives it every step's marker position, in the picture's own coordinates.
"""

from __future__ import annotations

import itertools
import math
from html import escape

import numpy as np

from .colors import AXIS_INK, FRAME, GRID, TEXT_INK, TITLE_INK, layer_color, scale_color
from .heatmap import row_runs
from .race import grid_losses

CELLS, BANDS = 64, 14  # the surface's grid, and how many bands of loss it is drawn in
MAP_W, LEGEND_W, PAD, TOP = 420, 300, 44, 24  # the map's width, the key's beside it, the space for axis figures
CHART_W, CHART_H, CHART_GAP, ROW_H = 170, 62, 46, 112
# the chart columns: (title, the state keys shown there, first found); the gradient and the step are every run's
COLUMNS = (("gradient ∂L/∂p", None), ("first moment", ("momentum_buffer", "exp_avg")),
           ("second moment", ("square_avg", "exp_avg_sq")), ("step taken Δp", None))
_ids = itertools.count()  # a page shows several pictures: each clip path needs an id of its own
PALE = 0.45  # how far each band's colour is mixed towards white, so that the paths stand out on it


def race_svg(surface, runs: list, step: int | None = None) -> tuple[str, list]:
    """The picture with each marker at ``step`` (the last step when None), and the frames: for each run,
    its marker's [x, y] in the picture at every step."""
    (x0, x1), (y0, y1) = surface.extent
    map_h = int(min(MAP_W, max(240, MAP_W * (y1 - y0) / (x1 - x0))))
    left, top = PAD, TOP

    def at(point):
        px, py = point
        return (left + (px - x0) / (x1 - x0) * MAP_W, top + (y1 - py) / (y1 - y0) * map_h)

    steps = max((run.steps for run in runs), default=0)
    step = steps if step is None else max(0, min(step, steps))
    frames = [[[round(v, 1) for v in _clamped(at(p), left, top, map_h)] for p in run.positions] for run in runs]
    clip = f"gl-race-clip-{next(_ids)}"
    charts_top = top + map_h + 44
    width = max(left + MAP_W + LEGEND_W, left + len(COLUMNS) * (CHART_W + CHART_GAP))
    height = charts_top + ROW_H * len(runs) + 6
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-race-picture" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11" '
           f'data-steps="{steps}">',
           f'<rect class="gl-race-background" width="100%" height="100%" fill="#fff"/>',
           f'<text class="gl-race-title" x="{left}" y="{top - 8}" font-size="12" fill="{TITLE_INK}">'
           f'{escape(surface.name)}: the loss in bands of equal area (dark = low), and each optimizer\'s path</text>',
           _surface(surface, left, top, map_h, len(runs)),
           _axes(surface, left, top, map_h),
           f'<clipPath id="{clip}"><rect x="{left}" y="{top}" width="{MAP_W}" height="{map_h}"/></clipPath>',
           f'<g class="gl-race-paths" clip-path="url(#{clip})">']
    for m in surface.minima:
        mx, my = at(m)
        out.append(f'<path class="gl-race-minimum" d="M{mx - 5:.1f},{my - 5:.1f}L{mx + 5:.1f},{my + 5:.1f}'
                   f'M{mx - 5:.1f},{my + 5:.1f}L{mx + 5:.1f},{my - 5:.1f}" stroke="#fff" stroke-width="2.5"/>'
                   f'<title>a minimum</title>')
    for index, (run, frame) in enumerate(zip(runs, frames)):
        color = layer_color(index)
        points = " ".join(f"{x},{y}" for x, y in frame)
        shown = " ".join(f"{x},{y}" for x, y in frame[:_frame_at(frame, step) + 1])
        mx, my = frame[_frame_at(frame, step)]
        out.append(f'<g class="gl-race-run" data-run="{index}" data-name="{escape(run.name)}">'
                   f'<polyline class="gl-race-path" fill="none" stroke="{color}" stroke-width="1.2" '
                   f'stroke-opacity="0.45" points="{points}"/>'
                   f'<polyline class="gl-race-trail" fill="none" stroke="{color}" stroke-width="2.2" '
                   f'points="{shown}"/>'
                   f'<circle class="gl-race-marker" cx="{mx}" cy="{my}" r="5.5" fill="{color}" stroke="#fff" '
                   f'stroke-width="1.5"><title>{escape(run.name)}</title></circle></g>')
    sx, sy = at(surface.start)
    out.append(f'<circle class="gl-race-start" cx="{sx:.1f}" cy="{sy:.1f}" r="4" fill="#fff" stroke="{TITLE_INK}" '
               f'stroke-width="1.5"><title>the start, {surface.start}</title></circle></g>')
    out.append(_legend(runs, step, left + MAP_W + 24, top))
    out.append(chart_key(left + MAP_W + 24, charts_top - 30))
    for index, run in enumerate(runs):
        out.append(_chart_row(run, index, steps, step, left - 30, charts_top + ROW_H * index))
    out.append("</svg>")
    return "".join(out), frames


def band_edges(losses: np.ndarray) -> np.ndarray:
    """The ``BANDS + 1`` losses that cut the grid's cells into bands of (nearly) equal count."""
    edges = np.quantile(losses, np.linspace(0, 1, BANDS + 1))
    return np.maximum.accumulate(edges)


def band_color(band: int) -> str:
    """Band 0 (the lowest loss) darkest, the highest brightest, paled towards white."""
    rgb = scale_color(band / max(BANDS - 1, 1))
    return "#" + "".join(f"{round(int(rgb[i:i + 2], 16) + (255 - int(rgb[i:i + 2], 16)) * PALE):02x}"
                         for i in (1, 3, 5))


def _surface(surface, left: float, top: float, map_h: int, runs: int) -> str:
    losses = grid_losses(surface, CELLS)
    edges = band_edges(losses)
    bands = np.clip(np.searchsorted(edges[1:-1], losses, side="right"), 0, BANDS - 1)
    cw, ch = MAP_W / CELLS, map_h / CELLS
    out = [f'<g class="gl-race-surface" shape-rendering="crispEdges" data-bands="{BANDS}" '
           f'data-box="{left} {top} {MAP_W} {map_h}">']
    for row, start, stop, band in row_runs(bands):
        out.append(f'<rect x="{left + start * cw:.1f}" y="{top + row * ch:.1f}" width="{(stop - start) * cw + 0.4:.1f}" '
                   f'height="{ch + 0.4:.1f}" fill="{band_color(int(band))}"/>')
    out.append("</g>")
    keys = [f'<g class="gl-race-bands" transform="translate({left + MAP_W + 24},{top + 44 + 20 * runs})">'
            f'<text class="gl-race-label" x="0" y="-6" fill="{TEXT_INK}">loss of each band (low to high)</text>']
    width = (LEGEND_W - 40) / BANDS
    for band in range(BANDS):
        keys.append(f'<rect x="{band * width:.1f}" y="0" width="{width:.1f}" height="12" fill="{band_color(band)}">'
                    f'<title>{_text(edges[band])} to {_text(edges[band + 1])}</title></rect>')
    keys.append(f'<text class="gl-race-axis" x="0" y="26" fill="{AXIS_INK}">{_text(edges[0])}</text>'
                f'<text class="gl-race-axis" x="{BANDS * width:.1f}" y="26" text-anchor="end" fill="{AXIS_INK}">'
                f'{_text(edges[-1])}</text></g>')
    return "".join(out) + "".join(keys)


def _axes(surface, left: float, top: float, map_h: int) -> str:
    (x0, x1), (y0, y1) = surface.extent
    return (f'<rect class="gl-race-frame" x="{left}" y="{top}" width="{MAP_W}" height="{map_h}" fill="none" '
            f'stroke="{FRAME}"/>'
            f'<g class="gl-race-axis" fill="{AXIS_INK}">'
            f'<text x="{left}" y="{top + map_h + 14}">{x0:g}</text>'
            f'<text x="{left + MAP_W / 2}" y="{top + map_h + 14}" text-anchor="middle">x = p[0]</text>'
            f'<text x="{left + MAP_W}" y="{top + map_h + 14}" text-anchor="end">{x1:g}</text>'
            f'<text x="{left - 5}" y="{top + map_h}" text-anchor="end">{y0:g}</text>'
            f'<text x="{left - 5}" y="{top + map_h / 2 + 4}" text-anchor="end">y</text>'
            f'<text x="{left - 5}" y="{top + 9}" text-anchor="end">{y1:g}</text></g>')


def _legend(runs: list, step: int, left: float, top: float) -> str:
    out = [f'<g class="gl-race-legend" transform="translate({left},{top})">'
           f'<text class="gl-race-label" x="0" y="4" fill="{TEXT_INK}" font-weight="600">optimizer</text>'
           f'<text class="gl-race-label" x="{LEGEND_W - 40}" y="4" text-anchor="end" fill="{TEXT_INK}" '
           f'font-weight="600">loss at this step</text>']
    for index, run in enumerate(runs):
        y = 24 + 20 * index
        loss = _loss_at(run, step)
        out.append(f'<g class="gl-race-key" data-run="{index}">'
                   f'<line x1="0" x2="18" y1="{y - 4}" y2="{y - 4}" stroke="{layer_color(index)}" stroke-width="3"/>'
                   f'<text class="gl-race-label" x="24" y="{y}" fill="{TEXT_INK}">{escape(run.name)}</text>'
                   f'<text class="gl-race-loss" x="{LEGEND_W - 40}" y="{y}" text-anchor="end" fill="{TEXT_INK}">'
                   f'{_text(loss)}</text></g>')
        if run.stopped:
            out.append(f'<text class="gl-race-stopped" x="24" y="{y + 11}" font-size="9.5" fill="{AXIS_INK}">'
                       f'{escape(run.stopped.split(":")[0])}: it diverged</text>')
    out.append("</g>")
    return "".join(out)


def _chart_row(run, index: int, steps: int, step: int, left: float, top: float) -> str:
    color = layer_color(index)
    out = [f'<g class="gl-race-row" data-run="{index}"><line x1="{left}" x2="{left + 18}" y1="{top}" y2="{top}" '
           f'stroke="{color}" stroke-width="3"/><text class="gl-race-title" x="{left + 24}" y="{top + 4}" '
           f'fill="{TITLE_INK}" font-weight="600">{escape(run.name)}</text>']
    for column, (title, keys) in enumerate(COLUMNS):
        x = left + 30 + column * (CHART_W + CHART_GAP)
        if keys is None:
            values = run.grads if column == 0 else run.moves
            name = "grad" if column == 0 else "step"
        else:
            name = next((k for k in keys if k in run.states), None)
            values = run.states.get(name)
        if values is None:
            out.append(f'<text class="gl-race-axis gl-race-no-state" x="{x}" y="{top + 24 + CHART_H / 2}" '
                       f'fill="{AXIS_INK}" font-style="italic">no {title} kept</text>')
            continue
        label = title if keys is None else f"{title}: {name}"
        out.append(_chart(label, name, values, steps, step, x, top + 28, color, offset=0 if column == 0 else 1))
    out.append("</g>")
    return "".join(out)


def _chart(title: str, key: str, values: np.ndarray, steps: int, step: int, left: float, top: float,
           color: str, offset: int) -> str:
    """x (solid) and y (dashed) of a per-step quantity on a linear axis through 0; ``values`` is (steps, 2), its
    row t drawn at step t + ``offset`` (a gradient is seen before its step, a state is kept after it)."""
    finite = values[np.isfinite(values)]
    low, high = (min(0.0, float(finite.min())), max(0.0, float(finite.max()))) if finite.size else (0.0, 1.0)
    if high - low == 0:
        low, high = low - 1, high + 1
    span = max(steps, 1)

    def y_of(v):
        return top + (high - v) / (high - low) * CHART_H

    out = [f'<g class="gl-race-chart" data-key="{escape(key)}" data-box="{left} {top} {CHART_W} {CHART_H}">'
           f'<text class="gl-race-label" x="{left}" y="{top - 5}" fill="{TEXT_INK}">{escape(title)}</text>'
           f'<rect class="gl-race-frame" x="{left}" y="{top}" width="{CHART_W}" height="{CHART_H}" fill="none" '
           f'stroke="{FRAME}"/>'
           f'<line class="gl-race-grid" x1="{left}" x2="{left + CHART_W}" y1="{y_of(0):.1f}" y2="{y_of(0):.1f}" '
           f'stroke="{GRID}" stroke-width="1.5"/>'
           f'<text class="gl-race-axis" x="{left + CHART_W + 3}" y="{top + 8}" font-size="9" fill="{AXIS_INK}">'
           f'{_text(high)}</text>'
           f'<text class="gl-race-axis" x="{left + CHART_W + 3}" y="{top + CHART_H}" font-size="9" '
           f'fill="{AXIS_INK}">{_text(low)}</text>']
    for axis, dash in ((0, ""), (1, ' stroke-dasharray="4 2"')):
        points = [f"{left + (t + offset) / span * CHART_W:.1f},{y_of(v):.1f}"
                  for t, v in enumerate(values[:, axis].tolist()) if math.isfinite(v)]
        out.append(f'<polyline class="gl-race-series" data-axis="{"xy"[axis]}" fill="none" stroke="{color}" '
                   f'stroke-width="1.3"{dash} points="{" ".join(points)}"/>')
    cx = left + step / span * CHART_W
    out.append(f'<line class="gl-race-cursor" data-x0="{left}" data-w="{CHART_W}" x1="{cx:.1f}" x2="{cx:.1f}" '
               f'y1="{top}" y2="{top + CHART_H}" stroke="{TITLE_INK}" stroke-opacity="0.5"/></g>')
    return "".join(out)


def chart_key(left: float, top: float) -> str:
    """The one line that says which dash is which parameter."""
    return (f'<g class="gl-race-dashes" transform="translate({left},{top})"><line x1="0" x2="18" y1="-4" y2="-4" '
            f'stroke="{TEXT_INK}"/><text class="gl-race-label" x="22" y="0" fill="{TEXT_INK}">x = p[0]</text>'
            f'<line x1="80" x2="98" y1="-4" y2="-4" stroke="{TEXT_INK}" stroke-dasharray="4 2"/>'
            f'<text class="gl-race-label" x="102" y="0" fill="{TEXT_INK}">y = p[1]</text></g>')


def _loss_at(run, step: int) -> float:
    """The loss at the marker's position at ``step`` (a run that stopped early stays at its last)."""
    return float(run.losses[min(step, len(run.losses) - 1)])


def _frame_at(frame: list, step: int) -> int:
    return min(step, len(frame) - 1)


def _clamped(point, left, top, map_h):
    x, y = point
    if not (math.isfinite(x) and math.isfinite(y)):
        return (left, top)
    return (min(max(x, left - 20), left + MAP_W + 20), min(max(y, top - 20), top + map_h + 20))


def _text(v: float) -> str:
    if v is None or not math.isfinite(v):
        return "—"
    if v == 0:
        return "0"
    return f"{v:.2e}" if abs(v) >= 1e4 or abs(v) < 1e-3 else f"{v:.4g}"


"""The playground as one SVG: the network, the decision boundary with the data on top, the loss and ‖∂L/∂W‖.

The boundary is the model's own prediction: P(label 1) at the centre of each of 40 × 40 cells,
rounded to one of ``LEVELS`` tints, and each row's cells of the same tint drawn as one rectangle
(a few hundred rectangles, not 1,600). The same drawing is the live widget's and the saved
notebook's; every layer's column, neuron, line and key entry carries ``data-layer`` for a click.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from .colors import (AXIS_INK, CLASS_COLORS, FRAME, GRID, TEXT_INK, TITLE_INK, class_tint, decades, layer_color,
                     series_class)
from .heatmap import row_runs
from .playground_data import EXTENT, GRID_CELLS, grid_centres

LEVELS = 20  # P(label 1) is shown in steps of 1/20
NET_W, MAP, CHART_W, GAP, TOP = 250, 320, 380, 16, 22  # the three panels' widths (the map is square), their top
CELL = MAP // GRID_CELLS
LOSS_H, NORM_H, KEY_W = 130, 150, 92
MAX_POINTS = 300  # a chart draws at most this many points: past it, each point is the mean of its steps


def playground_svg(training, caption: str = "") -> str:
    """The whole picture of ``training`` (a ``playground_training.Training``) now."""
    height = TOP + MAP + 40
    width = NET_W + MAP + CHART_W + 2 * GAP
    map_x, chart_x = NET_W + GAP, NET_W + MAP + 2 * GAP
    history = training.history
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-pg-picture" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="Helvetica, Arial, sans-serif" font-size="11">',
           '<rect class="gl-bg" width="100%" height="100%" fill="#fff"/>',
           network_svg(training, 0, TOP),
           boundary_svg(training.predict(grid_centres()), training.X.numpy(), training.y.numpy().ravel(),
                        map_x, TOP),
           line_chart("loss", "training loss (each batch's, log scale)", history.steps,
                      [("loss", "loss", TITLE_INK, history.losses, "gl-ink-line")], chart_x, TOP, CHART_W, LOSS_H),
           line_chart("grad-norms", "‖∂L/∂W‖ per layer (log scale)", history.steps,
                      [(name, name, layer_color(i), values, series_class(i)) for i, (name, values)
                       in enumerate(history.grad_norms.items())],
                      chart_x, TOP + LOSS_H + 40, CHART_W, NORM_H, key=True)]
    if caption:
        out.append(f'<text x="4" y="{height - 8}" class="gl-ink-text" fill="{TEXT_INK}">{escape(caption)}</text>')
    out.append("</svg>")
    return "".join(out)


# --- the network: a column of neurons per layer, an edge per weight ------------------------------------

def network_svg(training, left: float, top: float) -> str:
    """Inputs, each hidden layer and the output as columns of circles; each weight a line, blue if > 0,
    orange if < 0, as thick as its size relative to the largest weight."""
    weights = training.weights()
    sizes = [2] + [w.shape[0] for w in weights]
    names = [""] + training.layers
    xs = [left + 24 + i * (NET_W - 48) / max(len(sizes) - 1, 1) for i in range(len(sizes))]

    def ys(count):
        step = min(28.0, (MAP - 30) / max(count, 1))
        return [top + 20 + (MAP - 20) / 2 + (j - (count - 1) / 2) * step for j in range(count)]

    largest = max((float(np.abs(w).max()) for w in weights if w.size), default=1.0) or 1.0
    out = [f'<g class="gl-pg-network"><text x="{left + 4}" y="{top - 8}" font-size="12" class="gl-ink-title" fill="{TITLE_INK}">'
           f'the network (click a layer or a neuron)</text>']
    for i, w in enumerate(weights):  # layer i+1's weights: from column i to column i+1
        out.append(f'<g class="gl-pg-edges" data-layer="{escape(names[i + 1])}">')
        for (j, y_in) in enumerate(ys(sizes[i])):
            for (k, y_out) in enumerate(ys(sizes[i + 1])):
                value = float(w[k, j])
                out.append(f'<line x1="{xs[i]:.0f}" y1="{y_in:.1f}" x2="{xs[i + 1]:.0f}" y2="{y_out:.1f}" '
                           f'stroke="{CLASS_COLORS[value > 0]}" stroke-width="{0.4 + 3 * abs(value) / largest:.2f}" '
                           f'stroke-opacity="0.75"/>')
        out.append("</g>")
    crowded = len(xs) > 1 and xs[1] - xs[0] < 48  # "hidden1" no longer fits between two columns
    for i, count in enumerate(sizes):
        name = names[i]
        label = "input" if i == 0 else name
        if crowded:
            label = {"input": "in", "output": "out"}.get(label, label.replace("hidden", "h"))
        attrs = f' class="gl-pg-layer" data-layer="{escape(name)}"' if name else ' class="gl-pg-inputs"'
        out.append(f'<g{attrs}><text x="{xs[i]:.0f}" y="{top + 8}" text-anchor="middle" class="gl-ink-axis" fill="{AXIS_INK}">'
                   f'{escape(label)}</text>')
        for j, y in enumerate(ys(count)):
            neuron = f' data-neuron="{j}"' if name else ""
            tip = f"{name}, neuron {j}: click for its layer's graph" if name else f"input x{j + 1}"
            out.append(f'<circle class="gl-pg-neuron"{neuron} cx="{xs[i]:.0f}" cy="{y:.1f}" r="7" fill="#fff" '
                       f'stroke="{TEXT_INK}"><title>{escape(tip)}</title></circle>')
        out.append("</g>")
    out.append("</g>")
    return "".join(out)


# --- the decision boundary --------------------------------------------------------------------------

def cell_level(p: float) -> float:
    """P(label 1) rounded to the nearest of the picture's tints."""
    return round(p * LEVELS) / LEVELS


def boundary_svg(probabilities, X, labels, left: float, top: float) -> str:
    """P(label 1) per grid cell (row by row from the top, as ``grid_centres``), as runs of equal tint, then
    the points: orange for label 0, blue for label 1."""
    levels = np.round(np.asarray(probabilities).reshape(GRID_CELLS, GRID_CELLS) * LEVELS).astype(int)
    out = [f'<g class="gl-pg-boundary" data-left="{left}" data-top="{top}" data-cell="{CELL}" '
           f'shape-rendering="crispEdges">'
           f'<text x="{left}" y="{top - 8}" font-size="12" class="gl-ink-title" fill="{TITLE_INK}">the model\'s P(label 1), '
           f'and the points</text>']
    for row, start, stop, level in row_runs(levels):
        out.append(f'<rect x="{left + start * CELL}" y="{top + row * CELL}" width="{(stop - start) * CELL}" '
                   f'height="{CELL}" fill="{class_tint(level / LEVELS)}"/>')
    out.append("</g>")
    scale = MAP / (2 * EXTENT)
    for label in (0, 1):
        chosen = X[labels == label]
        out.append(f'<g class="gl-pg-points" data-label="{label}" fill="{CLASS_COLORS[label]}" stroke="#fff" '
                   f'stroke-width="0.7">')
        out.extend(f'<circle cx="{left + (px + EXTENT) * scale:.1f}" cy="{top + (EXTENT - py) * scale:.1f}" r="2.8"/>'
                   for px, py in chosen if abs(px) < EXTENT and abs(py) < EXTENT)
        out.append("</g>")
    out.append(f'<rect x="{left}" y="{top}" width="{MAP}" height="{MAP}" fill="none" class="gl-frame" stroke="{FRAME}"/>'
               f'<text x="{left}" y="{top + MAP + 13}" class="gl-ink-axis" fill="{AXIS_INK}">−{EXTENT:g}</text>'
               f'<text x="{left + MAP}" y="{top + MAP + 13}" text-anchor="end" class="gl-ink-axis" fill="{AXIS_INK}">{EXTENT:g}</text>')
    return "".join(out)


# --- the charts ---------------------------------------------------------------------------------------

def thinned(steps, values, most: int = MAX_POINTS):
    """At most ``most`` points: past that, each is the mean of an equal run of steps, at its last step."""
    steps, values = np.asarray(steps), np.asarray(values, dtype=np.float64)
    if len(steps) <= most:
        return steps, values
    edges = np.linspace(0, len(steps), most + 1).astype(int)
    return steps[edges[1:] - 1], np.add.reduceat(values, edges[:-1]) / np.diff(edges)


def line_chart(kind: str, title: str, steps, series: list, left: float, top: float, width: float, height: float,
               key: bool = False) -> str:
    """Lines over the steps on a log axis of whole decades; ``series`` is [(layer, label, colour, values)],
    each with an optional fifth item: the class of its line and key (``colors.series_class``).
    ``data-decades`` and ``data-steps`` give the axes, so a reader (or a test) can read a point back."""
    drawn = [(name, label, color, *thinned(steps, values), piece[0] if piece else "")
             for name, label, color, values, *piece in series]
    low, high = decades(v for *_, values, _piece in drawn for v in values.tolist())
    plot_w = width - 44 - (KEY_W if key else 0)
    x0 = left + 40
    first, last = (int(steps[0]), int(steps[-1])) if len(steps) else (0, 1)
    span = max(last - first, 1)
    out = [f'<g class="gl-pg-chart gl-pg-{kind}" data-decades="{low} {high}" data-steps="{first} {last}" '
           f'data-box="{x0} {top} {plot_w} {height}">'
           f'<text x="{left}" y="{top - 8}" font-size="12" class="gl-ink-title" fill="{TITLE_INK}">{escape(title)}</text>']
    for exponent in range(low, high + 1):
        ty = top + (high - exponent) / (high - low) * height
        out.append(f'<line x1="{x0}" x2="{x0 + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" class="gl-grid" stroke="{GRID}"/>'
                   f'<text x="{x0 - 4}" y="{ty + 4:.1f}" text-anchor="end" class="gl-ink-axis" fill="{AXIS_INK}">1e{exponent}</text>')
    out.append(f'<rect x="{x0}" y="{top}" width="{plot_w}" height="{height}" fill="none" class="gl-frame" stroke="{FRAME}"/>'
               f'<text x="{x0}" y="{top + height + 13}" class="gl-ink-axis" fill="{AXIS_INK}">step {first}</text>'
               f'<text x="{x0 + plot_w}" y="{top + height + 13}" text-anchor="end" class="gl-ink-axis" fill="{AXIS_INK}">step {last}</text>')
    for index, (name, label, color, xs, values, piece) in enumerate(drawn):
        points = [f"{x0 + (s - first) / span * plot_w:.1f},{top + (high - math.log10(v)) / (high - low) * height:.1f}"
                  if 0 < v < math.inf else None for s, v in zip(xs.tolist(), values.tolist())]
        out.append(f'<g class="gl-pg-line" data-layer="{escape(name)}">')
        out.extend(_polyline(run, color, piece) for run in _runs(points))
        out.append("</g>")
        if key:
            ky = top + 6 + 16 * index
            out.append(f'<g class="gl-pg-key" data-layer="{escape(name)}"><title>{escape(label)}: click for its '
                       f'graph</title><rect class="gl-pg-hit" x="{x0 + plot_w + 6}" y="{ky - 4}" width="{KEY_W - 8}" '
                       f'height="15" rx="3" fill="#fff" fill-opacity="0"/><line x1="{x0 + plot_w + 10}" '
                       f'x2="{x0 + plot_w + 24}" y1="{ky + 4}" y2="{ky + 4}" class="{piece}" stroke="{color}" stroke-width="2"/>'
                       f'<text x="{x0 + plot_w + 28}" y="{ky + 8}" class="gl-ink-text" fill="{TEXT_INK}">{escape(label)}</text></g>')
    if not len(steps):
        out.append(f'<text x="{x0 + 10}" y="{top + height / 2}" class="gl-ink-axis" fill="{AXIS_INK}">no steps yet: press train '
                   f'or step</text>')
    out.append("</g>")
    return "".join(out)


def _runs(points: list) -> list:
    """Split a line where a figure is missing (nan, inf, 0: no log): a gap shows there."""
    runs, run = [], []
    for point in points:
        if point is not None:
            run.append(point)
        elif run:
            runs.append(run)
            run = []
    return runs + [run] if run else runs


def _polyline(run: list, color: str, piece: str = "") -> str:
    if len(run) == 1:
        px, py = run[0].split(",")
        return f'<circle class="{piece}" cx="{px}" cy="{py}" r="2.5" fill="{color}"/>'
    return f'<polyline class="{piece}" fill="none" stroke="{color}" stroke-width="1.5" points="{" ".join(run)}"/>'

"""The picture of one step of a ``ConvScatter``: the input, the kernel and ∂L/∂Y above, ∂L/∂X and ∂L/∂W below.

Every grid is a table of cells coloured by their value on a diverging scale (blue < 0 < red), each grid on
the scale of its own largest value (for the two sums: their final value, so a colour means the same size at
every step). The window the step reads and writes is outlined, in the input and in ∂L/∂X alike.
"""

from __future__ import annotations

from html import escape

import numpy as np

from .colors import AXIS_INK, FRAME, MISSING, TEXT_INK, TITLE_INK, diverging_color, ink, ink_class

CELL, GAP, MARGIN, TITLE_H = 34, 44, 14, 22
CAPTION_W = 370  # the caption's longest line, at 12 px
WINDOW_INK = "#ea580c"  # the step's window and its output cell (the stepper's "current" orange)
FONT = "-apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"


def scatter_svg(scatter, step: int) -> str:
    """The SVG of ``scatter`` after ``step`` output positions have been scattered back (0: none yet)."""
    k, p = scatter.kernel, scatter.padding
    xp = scatter.x_padded
    rows = xp.shape[0]
    top_y = MARGIN + TITLE_H
    bottom_y = top_y + rows * CELL + GAP + TITLE_H
    x_left = MARGIN
    w_left = x_left + xp.shape[1] * CELL + GAP
    dy_left = w_left + k * CELL + GAP
    width = dy_left + max(scatter.grad_output.shape[1] * CELL, CAPTION_W) + MARGIN
    height = bottom_y + rows * CELL + MARGIN
    r0, c0 = scatter.window(step)
    current = scatter.positions[step - 1] if step else None
    pad_mask = np.ones_like(xp, dtype=bool)
    pad_mask[p:xp.shape[0] - p, p:xp.shape[1] - p] = False
    dx_final, dw_final = scatter.dx_padded(), scatter.dw()
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-conv-picture" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="{FONT}" data-step="{step}" data-steps="{scatter.steps}">',
           '<rect class="gl-bg" width="100%" height="100%" fill="#fff"/>']
    padded = " (padded)" if p else ""
    out.append(_grid("x", f"input x{padded}", xp, x_left, top_y, _limit(xp), pad_mask, (r0, c0, k)))
    out.append(_grid("w", "kernel W", scatter.weight, w_left, top_y, _limit(scatter.weight)))
    pending = np.zeros_like(scatter.grad_output, dtype=bool)
    for i, j in scatter.positions[step:]:
        pending[i, j] = True
    cell = (current[0], current[1], 1) if current else (None, None, 1)
    out.append(_grid("dy", "∂L/∂Y", scatter.grad_output, dy_left, top_y, _limit(scatter.grad_output), None, cell,
                     pending))
    out.append(_grid("dx", f"∂L/∂X so far{padded}", scatter.dx_padded(step), x_left, bottom_y, _limit(dx_final),
                     pad_mask, (r0, c0, k)))
    out.append(_grid("dw", "∂L/∂W so far", scatter.dw(step), w_left, bottom_y, _limit(dw_final), None,
                     (0, 0, k) if step else (None, None, k)))
    out.append(_caption(scatter, step, dy_left, bottom_y + 4))
    out.append("</svg>")
    return "".join(out)


def _grid(name, title, values, left, top, limit, padding=None, window=(None, None, 0), pending=None) -> str:
    """One table of coloured cells with its title, the padding's cells grey, and the window outlined."""
    parts = [f'<g class="gl-conv-grid gl-conv-{name}" data-rows="{values.shape[0]}" data-cols="{values.shape[1]}">',
             f'<text class="{ink_class(TITLE_INK)}" x="{left}" y="{top - 8}" font-size="12.5" font-weight="600" '
             f'fill="{TITLE_INK}">{escape(title)}</text>']
    for (i, j), v in np.ndenumerate(values):
        x, y = left + j * CELL, top + i * CELL
        is_pad = padding is not None and padding[i, j]
        fill = MISSING if is_pad else diverging_color(float(v), limit)
        classes = "gl-conv-cell" + (" gl-conv-pad" if is_pad else "") + \
            (" gl-conv-pending" if pending is not None and pending[i, j] else "")
        faded = ' opacity="0.35"' if "pending" in classes else ""
        parts.append(f'<g class="{classes}" data-i="{i}" data-j="{j}"{faded}><rect class="gl-frame" x="{x}" y="{y}" '
                     f'width="{CELL}" height="{CELL}" fill="{fill}" stroke="{FRAME}"/>'
                     f'<text class="{ink_class(AXIS_INK) if is_pad else "gl-conv-value"}" x="{x + CELL / 2}" '
                     f'y="{y + CELL / 2 + 4}" text-anchor="middle" font-size="10" '
                     f'fill="{AXIS_INK if is_pad else ink(fill)}">{_number(v)}</text></g>')
    r, c, size = window
    if r is not None:
        parts.append(f'<rect class="gl-conv-window" x="{left + c * CELL}" y="{top + r * CELL}" '
                     f'width="{size * CELL}" height="{size * CELL}" fill="none" stroke="{WINDOW_INK}" '
                     'stroke-width="3"/>')
    parts.append("</g>")
    return "".join(parts)


def _caption(scatter, step: int, left: int, top: int) -> str:
    """What this step did, in three lines (or what stepping will do, at step 0)."""
    k = scatter.kernel
    if not step:
        lines = [f"step 0 of {scatter.steps}: nothing scattered yet.",
                 "Each step takes one output's gradient g,",
                 "adds g·W into ∂L/∂X's window, g·x into ∂L/∂W."]
    else:
        i, j = scatter.positions[step - 1]
        r, c = scatter.window(step)
        g = scatter.grad_output[i, j]
        rows, cols = f"{r}:{r + k}", f"{c}:{c + k}"
        lines = [f"step {step} of {scatter.steps}: g = ∂L/∂Y[{i}, {j}] = {_number(g)}",
                 f"∂L/∂X[{rows}, {cols}] += g · W",
                 f"∂L/∂W += g · x[{rows}, {cols}]"]
        if step == scatter.steps:
            error = max(float(np.abs(scatter.dx() - scatter.engine_dx).max()),
                        float(np.abs(scatter.dw() - scatter.engine_dw).max()))
            lines.append(f"= the engine's conv2d backward (largest difference {error:.1e})")
    cls = ink_class(TEXT_INK)
    texts = "".join(f'<text class="{cls}" x="{left}" y="{top + 17 * n}" font-size="12" fill="{TEXT_INK}">'
                    f'{escape(line, quote=False)}</text>' for n, line in enumerate(lines))
    return f'<g class="gl-conv-caption">{texts}</g>'


def _limit(values: np.ndarray) -> float:
    return float(np.abs(values).max()) if values.size else 0.0


def _number(v) -> str:
    v = float(v)
    return "0" if v == 0 else f"{v:.2f}" if abs(v) >= 0.005 else f"{v:.0e}"

"""Lab 11's pictures: the gradient's norm at each time step of an unrolled RNN, and attention weights as heat maps.

Both are SVG with the theme classes of the other pictures (docs/lab.md, "Themes"): a ``gl-bg`` plate, classed
inks; the weights are coloured on the viridis scale of the colour-dimension strips, 0 dark, 1 bright.
"""

from __future__ import annotations

from html import escape

import numpy as np

from .activation_picture import Picture, _open, _text, _viridis, lines_svg
from .summary import as_numpy

CELL, AXIS, GAP, TOP = 11, 18, 28, 44
SHOWN = {" ": "␣", "\n": "⏎", "\t": "⇥"}  # characters that would draw as nothing


def gradient_norms_over_time(norms: dict, title: str = "‖∂L/∂h_t‖ at each time step t (log scale)") -> Picture:
    """One line per entry of ``norms`` (a name -> the norm at t = 1 … T), on a log scale; the key gives t = 1."""
    if not isinstance(norms, dict) or not norms:
        raise TypeError("gradient_norms_over_time(norms): norms maps a name to the list of ‖∂L/∂h_t‖ for "
                        f"t = 1 … T, e.g. {{'W scale 0.5': [...]}}; got {type(norms).__name__}")
    lengths = {len(values) for values in norms.values()}
    if len(lengths) != 1:
        raise ValueError(f"gradient_norms_over_time(norms): every line needs the same number of time steps, got "
                         f"{sorted(lengths)}")
    steps = list(range(1, lengths.pop() + 1))
    series = [(str(name), [float(v) for v in values]) for name, values in norms.items()]
    return lines_svg(title, steps, series, log=True, kind="bptt", x_name="t", key_end="at t = 1", key_first=True)


def attention_maps(weights, text: str, title: str = "attention weights") -> Picture:
    """Heat maps of attention weights, one per head: ``weights`` is (heads, T, T) or (layers, heads, T, T), row
    i the weights query position i gives to each key position j; ``text`` (T characters) labels both axes."""
    array = as_numpy(weights.detach()) if hasattr(weights, "detach") else np.asarray(weights, dtype=np.float64)
    if array.ndim == 3:
        array = array[None]
    if array.ndim != 4 or array.shape[-1] != array.shape[-2]:
        raise ValueError(f"attention_maps(weights, text): weights is (heads, T, T) or (layers, heads, T, T), "
                         f"got shape {tuple(array.shape)}")
    length = array.shape[-1]
    if not isinstance(text, str) or len(text) != length:
        raise ValueError(f"attention_maps(weights, text): text labels the {length} positions, one character each; "
                         f"got {len(text) if isinstance(text, str) else type(text).__name__} characters")
    layers, heads = array.shape[:2]
    side = AXIS + length * CELL
    width = heads * side + (heads - 1) * GAP + 20
    height = layers * (side + TOP) + 30
    out = _open("attention", width, height)
    out.append(_text(10, 16, f"{title}: row = the query's position, column = the key's; bright = 1, dark = 0, "
                             "blank = masked (the future)", "gl-act-title", size=12))
    labels = [SHOWN.get(c, c) for c in text]
    for layer in range(layers):
        for head in range(heads):
            x0, y0 = 10 + head * (side + GAP), TOP + layer * (side + TOP)
            out.append(f'<g class="gl-attn-map" data-layer="{layer}" data-head="{head}">')
            out.append(_text(x0 + AXIS, y0 - 14, f"layer {layer}, head {head}", "gl-act-text"))
            for j, label in enumerate(labels):
                out.append(_text(x0 + AXIS + j * CELL + CELL / 2, y0 - 2, label, "gl-act-axis", "middle", size=9))
                out.append(_text(x0 + AXIS - 4, y0 + j * CELL + CELL - 2, label, "gl-act-axis", "end", size=9))
            colours = _viridis(np.clip(array[layer, head], 0, 1))
            for i in range(length):
                for j in range(length):
                    p = array[layer, head, i, j]
                    if j > i and p == 0:  # masked: nothing to show
                        continue
                    fill = "#%02x%02x%02x" % tuple(int(c) for c in colours[i, j])
                    out.append(f'<rect class="gl-attn-cell" x="{x0 + AXIS + j * CELL}" y="{y0 + i * CELL}" '
                               f'width="{CELL}" height="{CELL}" fill="{fill}"><title>{escape(labels[i])} → '
                               f'{escape(labels[j])}: {p:.2f}</title></rect>')
            out.append("</g>")
    out.append("</svg>")
    return Picture("".join(out))

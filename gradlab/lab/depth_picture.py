"""The gradient's size at each depth of a network, one line per network, on a log scale.

A plain stack multiplies the gradient by one Jacobian per layer, so its size falls (or grows) geometrically
with depth: a straight slope on a log scale. A residual stack adds an identity to every Jacobian, and its
line stays flat. The figures are the learner's own measurements (``h.retain_grad()`` at each block's input).
"""

from __future__ import annotations

import math

from .activation_picture import Picture, lines_svg


def gradient_by_depth(series: dict, title: str = "‖∂L/∂h‖ at the input of each block (log scale)") -> Picture:
    """``series``: network name -> its gradient norms, one per block, input side first; drawn over the blocks."""
    if not isinstance(series, dict) or not series:
        raise TypeError(f"gradient_by_depth(series): a dict of network name -> list of norms, one per block, "
                        f"got {type(series).__name__}")
    lines = []
    for name, values in series.items():
        values = [float(v) for v in values]
        if not values or not all(math.isfinite(v) and v > 0 for v in values):
            raise ValueError(f"gradient_by_depth: {name!r} needs positive finite norms (a log scale), got {values[:4]}")
        lines.append((str(name), values))
    blocks = list(range(max(len(v) for _, v in lines)))
    return lines_svg(title, blocks, lines, log=True, kind="depth", x_name="block",
                     key_end=f"at block {blocks[-1]}")

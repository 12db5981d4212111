"""Pictures of a gradient flow's history: a static SVG (GitHub, nbconvert) and a matplotlib figure.

Both draw one line per layer over the training steps on a log scale, because the figures of a deep
network's layers differ by orders of magnitude: that spread is exactly what a vanishing gradient is.
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

# one colour per layer, first layer (nearest the input) first; repeats past ten layers
PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
           "#4b5563", "#65a30d"]


def layer_color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _positive(values: list) -> list:
    return [v for v in values if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]


def log_range(series: dict) -> tuple:
    """The powers of ten that enclose every positive figure: (low exponent, high exponent)."""
    values = [v for vs in series.values() for v in _positive(vs)]
    if not values:
        return -1, 1
    low, high = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
    return (low, high) if high > low else (low - 1, high + 1)


def flow_svg(history: dict, figure: str = "grad_norm", width: int = 640, height: int = 300) -> str:
    """One figure per layer over the steps, log y, with the layer key and the flags below."""
    series, steps, layers = history["series"][figure], history["steps"], history["layers"]
    symbol, meaning = history["figures"][figure]
    left, right, top, bottom = 56, 150, 24, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    low, high = log_range(series)
    first, last = (steps[0], steps[-1]) if steps else (0, 1)
    span = max(last - first, 1)

    def x(step):
        return left + (step - first) / span * plot_w

    def y(value):
        return top + (high - math.log10(value)) / (high - low) * plot_h

    flags = history.get("flags", [])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + 16 * len(flags) + 8}" '
           f'font-family="Helvetica, Arial, sans-serif" font-size="11" class="gl-flow-static">',
           f'<rect width="100%" height="100%" fill="#fff"/>',
           f'<text x="{left}" y="14" font-size="12" fill="#111827">{escape(symbol)} per layer over the steps '
           f'(log scale) — {escape(meaning)}</text>']
    for exponent in range(low, high + 1):
        ty = top + (high - exponent) / (high - low) * plot_h
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{ty:.1f}" y2="{ty:.1f}" stroke="#eef0f3"/>')
        out.append(f'<text x="{left - 6}" y="{ty + 4:.1f}" text-anchor="end" fill="#6b7280">1e{exponent}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#d1d5db"/>')
    out.append(f'<text x="{left}" y="{top + plot_h + 16}" fill="#6b7280">step {first}</text>')
    out.append(f'<text x="{left + plot_w}" y="{top + plot_h + 16}" text-anchor="end" fill="#6b7280">step {last}</text>')
    for index, name in enumerate(layers):
        color = layer_color(index)
        points = [f"{x(s):.1f},{y(v):.1f}" for s, v in zip(steps, series[name])
                  if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)]
        if len(points) == 1:
            px, py = points[0].split(",")
            out.append(f'<circle cx="{px}" cy="{py}" r="2.5" fill="{color}"/>')
        elif points:
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.6" points="{" ".join(points)}"/>')
        ky = top + 6 + index * 15
        if ky < top + plot_h:
            out.append(f'<line x1="{left + plot_w + 10}" x2="{left + plot_w + 26}" y1="{ky}" y2="{ky}" '
                       f'stroke="{color}" stroke-width="2"/>')
            out.append(f'<text x="{left + plot_w + 30}" y="{ky + 4}" fill="#374151">{escape(name)}</text>')
    if not steps:
        out.append(f'<text x="{left + 12}" y="{top + plot_h / 2}" fill="#6b7280">no updates yet: call flow.update() '
                   f'after each optimizer.step()</text>')
    for index, flag in enumerate(flags):
        fy = height + 4 + index * 16
        out.append(f'<text x="{left}" y="{fy}" fill="{"#b91c1c" if flag["kind"] == "exploding" else "#92400e"}">'
                   f'⚑ {escape(flag_text(flag))}</text>')
    out.append("</svg>")
    return "\n".join(out)


def flag_text(flag: dict) -> str:
    """'layer 0 vanishing: 3.1e-07 (rule ..., threshold 0.001)' — what the widget and pictures say."""
    figure = flag["figure"]
    shown = figure if isinstance(figure, str) else f"{figure:.3g}"
    return f"layer {flag['layer']} {flag['kind']}: {shown} — {flag['rule']}"


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

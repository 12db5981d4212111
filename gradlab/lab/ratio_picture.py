"""The update-to-weight ratio per layer over training, on a log scale, with Karpathy's 1e-3 guide drawn in.

makemore part 3 plots log10(std(lr · grad) / std(W)) per layer and a line at -3: a layer far below it
is learning too slowly, far above it too fast. Here the figure is GradientFlow's ‖ΔW‖ / ‖W‖, what one
optimizer step really moved (momentum and Adam included), read from ``flow.history()``.
"""

from __future__ import annotations

from .activation_picture import Picture, lines_svg

GUIDE = 1e-3


def update_ratios(flow, guide: float = GUIDE) -> Picture:
    """``flow``'s ‖ΔW‖ / ‖W‖ per layer over the steps (log y), a dashed line at ``guide`` (1e-3)."""
    if not hasattr(flow, "history") or not callable(flow.history):
        raise TypeError(f"update_ratios(flow): flow is a gl.lab.GradientFlow that watched training, "
                        f"got {type(flow).__name__}")
    if isinstance(guide, bool) or not isinstance(guide, (int, float)) or not guide > 0:
        raise ValueError(f"update_ratios(flow, guide=...): guide is a positive ratio such as 1e-3, got {guide!r}")
    history = flow.history()
    ratios = history["series"]["update_ratio"]
    series = [(name, [v if isinstance(v, (int, float)) else None for v in ratios[name]]) for name in history["layers"]]
    return lines_svg(f"‖ΔW‖ / ‖W‖ per layer over the steps (log scale); dashed: the {guide:g} guide",
                     history["steps"], series, log=True, guide=float(guide), kind="update-ratios")

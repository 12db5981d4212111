"""Draw a placed graph as SVG: the one picture used by the live widget and the saved notebook.

The widget inserts this SVG and then only restyles it (classes and fills by node id); GitHub,
nbviewer and nbconvert show the same SVG as the widget's static ``image/svg+xml`` picture.
"""

from __future__ import annotations

import itertools
from html import escape

from .colors import KIND_COLORS, MISSING, TEXT_INK, ZERO

INK = "#111827"
from .scene import GROUP_PREFIX, Scene, clip, sub_text

_ids = itertools.count()

STYLE = """
.gl-graph { font-family: -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; }
.gl-node rect { stroke: #4b5563; stroke-width: 1; }
.gl-node.gl-kind-param rect, .gl-node.gl-kind-leaf rect { stroke: #a16207; }
.gl-node.gl-kind-input rect { stroke-dasharray: 4 3; stroke: #9ca3af; }
.gl-node.gl-no-grad { opacity: 0.55; }
.gl-label { font-size: 12px; font-weight: 600; }
.gl-sub { font-size: 10.5px; }
.gl-edge { fill: none; stroke: #9ca3af; stroke-width: 1.3; }
.gl-edge-count { font-size: 10px; fill: #6b7280; }
.gl-group.gl-expanded > rect { fill: rgba(124, 58, 237, 0.04); stroke: #c4b5fd; stroke-width: 1; stroke-dasharray: 5 3; }
.gl-group.gl-collapsed > rect { stroke: #7c3aed; stroke-width: 1.4; }
.gl-group-title { font-size: 11px; fill: #5b21b6; font-weight: 600; }
.gl-state-unreached { opacity: 0.35; }
.gl-node.gl-state-current rect { stroke: #ea580c; stroke-width: 3.5; filter: drop-shadow(0 0 4px #fb923c); }
.gl-node.gl-state-done rect { stroke: #15803d; stroke-width: 1.6; }
.gl-edge-done { stroke: #f59e0b; stroke-width: 1.8; }
"""


def render(scene: Scene, placement=None, colors: dict | None = None, texts: dict | None = None,
           legend: dict | None = None, states: dict | None = None, margin: float = 12.0) -> str:
    """The SVG text of the graph; ``colors``, ``texts`` and ``states`` map ids to a fill, a second
    line and a stepper state (pending, current, done, unreached)."""
    placement = placement or scene.placement()
    colors = colors or {}
    texts = texts or {}
    states = states or {}
    uid = f"gl{next(_ids)}"
    key, _, key_h = _key(legend, max(placement.width, 300.0)) if legend else ("", 0.0, 0.0)
    legend_h = key_h + 20 if legend else 0.0
    width, height = placement.width + 2 * margin, placement.height + 2 * margin + legend_h
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-graph" width="{width:.0f}" height="{height:.0f}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" data-nodes="{sum(1 for k in placement.boxes if k in scene.graph.nodes)}">',
        f"<style>{STYLE}</style>",
        '<rect class="gl-bg" width="100%" height="100%" fill="#fff"/>',  # the saved picture's plate
        f'<defs><marker id="{uid}-arrow" viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0.8 L7.5,4 L0,7.2 z" fill="#9ca3af"/></marker></defs>',
        f'<g class="gl-viewport" transform="translate({margin},{margin})">',
    ]
    boxes = placement.boxes
    open_groups = sorted((k for k in boxes if k in placement.expanded), key=lambda k: _depth(scene, k))
    out.append('<g class="gl-groups">')
    for gid in open_groups:
        b = boxes[gid]
        out.append(
            f'<g class="gl-group gl-expanded" data-id="{escape(gid)}"><rect x="{b.x:.1f}" y="{b.y:.1f}" '
            f'width="{b.w:.1f}" height="{b.h:.1f}" rx="6"/><text class="gl-group-title" x="{b.x + 8:.1f}" '
            f'y="{b.y + 15:.1f}">▾ {escape(clip(scene.group_label(gid), 60))}</text></g>')
    out.append('</g><g class="gl-edges">')
    for route in placement.edges:
        done = states.get(route.target) in ("done", "current") and states.get(route.source) != "unreached"
        out.append(
            f'<path class="gl-edge{" gl-edge-done" if done else ""}" data-source="{escape(route.source)}" data-target="{escape(route.target)}" '
            f'd="{_path(route.points)}" marker-end="url(#{uid}-arrow)"/>')
        if route.count > 1:
            (x0, y0), (x1, y1) = route.points[-2], route.points[-1]
            out.append(f'<text class="gl-edge-count" x="{(x0 + x1) / 2:.1f}" y="{(y0 + y1) / 2 - 4:.1f}" '
                       f'text-anchor="middle">×{route.count}</text>')
    out.append('</g><g class="gl-nodes">')
    for item, b in boxes.items():
        if item in placement.expanded:
            continue
        if item.startswith(GROUP_PREFIX) and item not in scene.graph.nodes:
            state = f" gl-state-{states[item]}" if item in states else ""
            out.append(_box("gl-group gl-collapsed" + state, item, b, "▸ " + clip(scene.group_label(item)),
                            scene.group_sub(item), colors.get(item, (KIND_COLORS["group"], INK)), scene.group_label(item), 8))
            continue
        node = scene.graph.nodes[item]
        classes = f"gl-node gl-kind-{node.kind}" + ("" if node.requires_grad else " gl-no-grad")
        if item in states:
            classes += f" gl-state-{states[item]}"
        tip = f"{node.label} — {node.op}" + (f" — {node.group}" if node.group else "")
        out.append(_box(classes, item, b, clip(node.label), texts.get(item, sub_text(node)),
                        colors.get(item, (MISSING, INK)), tip, 4 if node.kind == "op" else 12))
    out.append("</g>")
    if legend:
        out.append(f'<g class="gl-key" transform="translate(0,{placement.height + 10:.1f})">{key}</g>')
    out.append("</g></svg>")
    return "".join(out)


def _depth(scene: Scene, gid: str) -> int:
    return len(scene.ancestors(gid))


def _box(classes, item, b, label, sub, color, tip, radius) -> str:
    cx = b.x + b.w / 2
    fill, ink = color
    return (f'<g class="{classes}" data-id="{escape(item)}"><title>{escape(tip)}</title>'
            f'<rect x="{b.x:.1f}" y="{b.y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="{radius}" fill="{fill}"/>'
            f'<text class="gl-label" x="{cx:.1f}" y="{b.y + 16:.1f}" text-anchor="middle" fill="{ink}">{escape(label)}</text>'
            f'<text class="gl-sub" x="{cx:.1f}" y="{b.y + 30:.1f}" text-anchor="middle" fill="{ink}">{escape(sub)}</text>'
            '</g>')


def _path(points) -> str:
    """A smooth left-to-right curve through the route's points (horizontal tangents at each)."""
    (x, y), rest = points[0], points[1:]
    d = [f"M{x:.1f},{y:.1f}"]
    for nx, ny in rest:
        mid = (nx - x) / 2
        d.append(f"C{x + mid:.1f},{y:.1f} {nx - mid:.1f},{ny:.1f} {nx:.1f},{ny:.1f}")
        x, y = nx, ny
    return "".join(d)


KEY_ROW, CHAR_W = 16, 6.2  # a row of the colour key; the width of one of its characters (10.5 px text)


def key_svg(legend: dict, max_width: float = 760) -> str:
    """The colour key alone, as SVG text: the widget shows it under its canvas (``render`` draws it inside)."""
    body, width, height = _key(legend, max_width)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="gl-key" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="-apple-system, \'Segoe UI\', Helvetica, Arial, '
            f'sans-serif">{body}</svg>')


def _key(legend: dict, max_width: float) -> tuple:
    """The key's title and entries (a scale with its ends, or the kinds of operation), flowed left to right in
    rows no wider than ``max_width``: (SVG elements, width, height)."""
    entries = [(None, f"{legend['title']}:")]
    entries += [(color, str(text)) for text, color in legend.get("stops") or legend.get("items") or []]
    if legend.get("stops") is not None:
        entries += [(MISSING, legend.get("missing_text", "not known yet")), (ZERO, "zero")]
    parts, x, y, width = [], 0.0, 0.0, 0.0
    for color, text in entries:
        swatch = 18 if color else 0
        entry_w = swatch + len(text) * CHAR_W + 10
        if x > 0 and x + entry_w > max_width:
            x, y = 0.0, y + KEY_ROW
        if color:
            parts.append(f'<rect class="gl-swatch" x="{x:.1f}" y="{y:.0f}" width="14" height="12" fill="{color}" '
                         f'stroke="#9ca3af" stroke-width="0.5"/>')
        parts.append(f'<text x="{x + swatch:.1f}" y="{y + 10:.0f}" font-size="10.5" class="gl-ink-text" fill="{TEXT_INK}">'
                     f'{escape(text)}</text>')
        x += entry_w
        width = max(width, x)
    return "".join(parts), width, y + 14

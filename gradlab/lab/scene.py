"""A graph ready to draw: box sizes, module groups, which groups are open, and their layout.

Layout is computed once per choice of open groups and cached (``layout.GraphLayout`` also caches
each group's own layout), so stepping, colouring and selecting only restyle what is drawn. A
graph too big to read opens with its modules collapsed, as many opened as fit in ``MAX_VISIBLE``.
"""

from __future__ import annotations

from .colors import MODES, color_modes
from .graph import Graph
from .layout import GraphLayout

MAX_VISIBLE = 300  # boxes drawn at first; bigger graphs open collapsed by module
MAX_WIDTH = 3200  # px: modules open a level at a time until the drawing would be wider than this
GROUP_PREFIX = "g:"  # group ids in the drawing, apart from node ids
CHAR_W, SUB_CHAR_W, PAD_X, NODE_H, MIN_W, MAX_CHARS = 7.4, 6.4, 18, 38, 54, 30


def shape_text(shape) -> str:
    if shape is None:
        return ""
    if shape and isinstance(shape[0], list):
        return " ".join(shape_text(s) for s in shape)
    return "scalar" if shape == [] else "×".join(str(n) for n in shape)


def sub_text(node) -> str:
    """The second line of a box: the output's shape, or a Scalar's value and gradient."""
    if node.output_shape == [] and node.dtype == "float":  # a Scalar
        value = (node.value or {}).get("values", [None])[0]
        grad = (node.grad or {}).get("values", [None])[0]
        return f"{_num(value)} · grad {_num(grad)}"
    return shape_text(node.output_shape)


def _num(v) -> str:
    return "—" if v is None else f"{v:.4g}"


def clip(text: str, limit: int = MAX_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Scene:
    """Sizes, groups and cached placements for one Graph."""

    def __init__(self, graph: Graph):
        self.graph = graph
        self.members = {GROUP_PREFIX + g: [] for g in graph.groups}  # group -> every node id below it
        for node in graph.nodes.values():
            group = node.group
            while group is not None:
                self.members[GROUP_PREFIX + group].append(node.id)
                group = graph.groups[group].parent if group in graph.groups else None
        self.members = {g: m for g, m in self.members.items() if m}
        sizes = {n.id: self.box_size(clip(n.label), sub_text(n)) for n in graph.nodes.values()}
        group_sizes = {GROUP_PREFIX + g.id: self.box_size(clip(g.label) + " ▸", self.group_sub(GROUP_PREFIX + g.id))
                       for g in graph.groups.values()}
        self.layout = GraphLayout(
            sizes, graph.edges, {n.id: GROUP_PREFIX + n.group if n.group else None for n in graph.nodes.values()},
            {GROUP_PREFIX + g.id: GROUP_PREFIX + g.parent if g.parent else None for g in graph.groups.values()},
            group_sizes=group_sizes, title_height=22.0, padding=10.0)
        self.expanded = self.default_expanded()
        closed = frozenset(GROUP_PREFIX + g.id for g in graph.groups.values() if g.closed)
        self.opened_collapsed = self.expanded | closed != frozenset(self.members)
        self.expanded -= closed
        self._placements = {}

    @staticmethod
    def box_size(label: str, sub: str) -> tuple:
        width = max(len(label) * CHAR_W, len(sub) * SUB_CHAR_W) + 2 * PAD_X
        return (max(MIN_W, round(width)), NODE_H)

    def group_sub(self, group_id: str) -> str:
        ops = sum(1 for m in self.members.get(group_id, ()) if self.graph.nodes[m].kind == "op")
        return f"{ops} op{'s' if ops != 1 else ''}"

    def default_expanded(self) -> frozenset:
        """Open modules outermost first, a level at a time, while the drawing stays readable:
        at most MAX_VISIBLE boxes, and no wider than MAX_WIDTH once the outermost level is open."""
        children: dict = {}
        for node in self.graph.nodes.values():
            parent = GROUP_PREFIX + node.group if node.group else None
            children.setdefault(parent, set()).add(node.id)
        for g in self.graph.groups.values():
            gid = GROUP_PREFIX + g.id
            if gid in self.members:
                children.setdefault(GROUP_PREFIX + g.parent if g.parent else None, set()).add(gid)
        visible = len(children.get(None, ()))
        expanded: set = set()
        level = sorted((g for g in children.get(None, ()) if g in self.members), key=self._first_index)
        while level:
            opened, deeper = set(), []
            for group in level:
                inside = children.get(group, set())
                if visible - 1 + len(inside) > MAX_VISIBLE:
                    continue
                visible += len(inside) - 1
                opened.add(group)
                deeper.extend(sorted((g for g in inside if g in self.members), key=self._first_index))
            if not opened:
                break
            if expanded and self.layout.place(expanded | opened).width > MAX_WIDTH:
                break  # one more level would make the picture a long thin strip: keep it closed
            expanded |= opened
            level = deeper
        return frozenset(expanded)

    def _first_index(self, group_id: str) -> int:
        first = self.members[group_id][0]
        return int(first[1:]) if first[1:].isdigit() else 0

    def placement(self, expanded=None):
        expanded = frozenset(self.expanded if expanded is None else expanded)
        placement = self._placements.get(expanded)
        if placement is None:
            placement = self._placements[expanded] = self.layout.place(expanded)
        return placement

    def toggle(self, group_id: str) -> bool:
        """Open a collapsed group or close an open one; returns True if it is now open."""
        if group_id not in self.members:
            raise KeyError(f"no module group {group_id!r} in this graph")
        opened = group_id not in self.expanded
        self.expanded = self.expanded | {group_id} if opened else self.expanded - {group_id}
        return opened

    def colors(self, modes=MODES):
        return color_modes(self.graph, self.members, modes)

    def group_label(self, group_id: str) -> str:
        return self.graph.groups[group_id[len(GROUP_PREFIX):]].label

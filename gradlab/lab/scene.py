"""A graph ready to draw: box sizes, module groups, which groups are open, and their layout.

Layout is computed once per choice of open groups and cached (``layout.GraphLayout`` also caches
each group's own layout), so stepping, colouring and selecting only restyle what is drawn. A
graph too big to read opens with its modules collapsed, as many opened as fit in ``MAX_VISIBLE``.
A level with more than ``MAX_VISIBLE`` items (a long chain with no modules, a module of thousands
of ops) is cut, in forward order, into runs of ``RUN`` items: groups of the drawing only,
"1–100 of 20,002", that open on a click like a module (runs of runs when there are still too many).
A level drawn wider than ``WRAP_WIDTH`` wraps into rows (rows.py), read like a page of text.
"""

from __future__ import annotations

from .colors import MODES, color_modes
from .graph import Graph
from .layout import GraphLayout

MAX_VISIBLE = 300  # boxes drawn at first; bigger graphs open collapsed by module
RUN = 100  # items per run of a level too long to draw whole
MAX_WIDTH = 3200  # px: modules open a level at a time until the drawing, unwrapped, would be wider than this
WRAP_WIDTH = 1200  # px: a level drawn wider than this wraps into rows (rows.py): a row fits a notebook at a readable zoom
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
        self.parent = {n.id: GROUP_PREFIX + n.group if n.group else None for n in graph.nodes.values()}
        self.parent.update({GROUP_PREFIX + g.id: GROUP_PREFIX + g.parent if g.parent else None
                            for g in graph.groups.values()})
        self.run_labels: dict = {}  # run id -> "1–100 of 20,002": the groups the drawing adds to long levels
        self._cut_long_levels()
        self.members = {g: [] for g in self.parent if g.startswith(GROUP_PREFIX) and g not in graph.nodes}
        for node in graph.nodes.values():  # group -> every node id below it
            group = self.parent[node.id]
            while group is not None:
                self.members[group].append(node.id)
                group = self.parent.get(group)
        self.members = {g: m for g, m in self.members.items() if m}
        sizes = {n.id: self.box_size(clip(n.label), sub_text(n)) for n in graph.nodes.values()}
        group_sizes = {gid: self.box_size(clip(self.group_label(gid)) + " ▸", self.group_sub(gid))
                       for gid in self.members}
        self.layout = GraphLayout(
            sizes, graph.edges, {n.id: self.parent[n.id] for n in graph.nodes.values()},
            {gid: self.parent.get(gid) for gid in self.members},
            group_sizes=group_sizes, title_height=22.0, padding=10.0, wrap_width=WRAP_WIDTH)
        self.expanded = self.default_expanded()
        closed = frozenset(GROUP_PREFIX + g.id for g in graph.groups.values() if g.closed)
        self.opened_collapsed = self.expanded | closed != frozenset(self.members)
        self.expanded -= closed
        self._placements = {}

    def _cut_long_levels(self) -> None:
        """Cut each level of more than MAX_VISIBLE items into runs of RUN consecutive items (forward order)."""
        order = {node_id: i for i, node_id in enumerate(self.graph.nodes)}
        first: dict = {}
        for node_id in self.graph.nodes:
            item = node_id
            while item is not None and item not in first:
                first[item] = order[node_id]
                item = self.parent.get(item)
        levels: dict = {}
        for item in sorted(first, key=first.get):
            levels.setdefault(self.parent.get(item), []).append(item)
        for level, items in levels.items():
            spans, names = [(i, i + 1) for i in range(len(items))], items  # the range of the level each item holds
            prefix = GROUP_PREFIX + (level[len(GROUP_PREFIX):] if level else "")
            while len(spans) > MAX_VISIBLE:
                runs, run_spans = [], []
                for inner, held in zip(_chunks(spans, RUN), _chunks(names, RUN)):
                    span = (inner[0][0], inner[-1][1])
                    run = f"{prefix}[{span[0]}:{span[1]}]"
                    self.parent[run] = level
                    self.run_labels[run] = f"{span[0] + 1:,}–{span[1]:,} of {len(items):,}"
                    for name in held:
                        self.parent[name] = run
                    runs.append(run)
                    run_spans.append(span)
                spans, names = run_spans, runs

    def ancestors(self, item: str) -> list:
        """The groups around a node or group, innermost first (modules and runs)."""
        found, group = [], self.parent.get(item)
        while group is not None:
            found.append(group)
            group = self.parent.get(group)
        return found

    @staticmethod
    def box_size(label: str, sub: str) -> tuple:
        width = max(len(label) * CHAR_W, len(sub) * SUB_CHAR_W) + 2 * PAD_X
        return (max(MIN_W, round(width)), NODE_H)

    def group_sub(self, group_id: str) -> str:
        ops = sum(1 for m in self.members.get(group_id, ()) if self.graph.nodes[m].kind == "op")
        return f"{ops} op{'s' if ops != 1 else ''}"

    def default_expanded(self) -> frozenset:
        """Open modules outermost first, a level at a time, while the drawing stays readable:
        at most MAX_VISIBLE boxes, and no wider than MAX_WIDTH unwrapped (in one strip) once the outermost level
        is open: the picture, wrapped into rows, then fits a few rows."""
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
            if expanded and self.layout.place(expanded | opened, wrap=False).width > MAX_WIDTH:
                break  # one more level would make the picture a long strip (wrapped: many rows): keep it closed
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

    def drawn(self) -> list:
        """The ids drawn now (nodes, closed groups, open groups' frames): what the front end is sent of a graph."""
        return list(self.placement().boxes)

    def colors(self, modes=MODES, only=None):
        return color_modes(self.graph, self.members, modes, only)

    def group_label(self, group_id: str) -> str:
        run = self.run_labels.get(group_id)
        return run if run is not None else self.graph.groups[group_id[len(GROUP_PREFIX):]].label


def _chunks(items: list, size: int) -> list:
    return [items[i:i + size] for i in range(0, len(items), size)]

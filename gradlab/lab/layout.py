"""A layered layout of a nested computation graph, drawn left to right, in pure Python.

Each group (a module of the model) is laid out on its own, on its direct children only — member
nodes and child groups, each a box of its current size — by the Sugiyama method: layers from left
to right, lanes for long edges, an order in each layer with few crossings, then coordinates; a
level much wider than ``wrap_width`` is then cut into rows (rows.py), as a long line of text. An
expanded group becomes a box the size of its children's drawing in its parent's layout, so a
collapse or expand re-lays out only that group and its ancestors; every other group's layout
comes from a cache.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .rows import Rows, row_starts

GAP_X = 36.0  # between columns: where edges bend
GAP_Y = 14.0  # between two boxes in a column
LANE_GAP = 8.0  # between an edge lane (a long edge passing through a column) and its neighbours
DEFAULT_GROUP_SIZE = (140.0, 40.0)
ORDER_SWEEPS = 8  # crossing reduction: alternating left-to-right and right-to-left sweeps
Y_SWEEPS = 8  # coordinates: alternating sweeps that level each item with its neighbours
# How hard an edge pulls its two ends level (Graphviz's weights): long edges stay straightest.
WEIGHT_BOX_BOX, WEIGHT_BOX_LANE, WEIGHT_LANE_LANE = 1.0, 2.0, 8.0
# An edge that carries only leaves (parameters, inputs) pulls less, and a leaf gives way to the
# other items of its column: the chain of computation stays straight, the leaves hang off it.
WEIGHT_LEAF = 0.25
LEAF_YIELD = 0.1
EPS = 1e-6


@dataclass(frozen=True)
class Box:
    """Top-left corner and size, in px."""

    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


@dataclass
class EdgeRoute:
    """One drawn edge: a polyline from the source's right-middle to the target's left-middle."""

    source: str  # visible item id (a node id, or a collapsed group's id)
    target: str
    points: list  # [(x, y), ...] through the lanes of the layers it crosses; the renderer smooths it
    count: int  # how many original edges it stands for (parallel edges are merged)


@dataclass
class Placement:
    """Where everything visible goes, for one choice of expanded groups."""

    boxes: dict  # id -> Box for every visible node and group (an expanded group: its frame)
    expanded: frozenset  # the group ids drawn open
    edges: list  # [EdgeRoute]
    width: float
    height: float
    visible_of: dict = field(default_factory=dict, repr=False, compare=False)

    def visible(self, node_id) -> str:
        """The id drawn for a node: itself, or its outermost collapsed ancestor group."""
        return self.visible_of[node_id]


# --------------------------------------------------------------------------------------------
# The Sugiyama method on one level: boxes, and the edges between them.


class _Layered:
    """Lays out the items of one level, numbered 0..n-1 in graph order.

    ``pairs``: edges (a, b) between items. ``entry_buses``: (key, items, weak) for each node
    outside the level that feeds items inside it; ``exits``: the items that feed something
    outside. Those edges run in lanes from the left border / to the right border, so they too
    pass between boxes. ``ports``: per item, the (in, out) offsets from its middle where its edges
    attach (an expanded group's edges meet its children, not its middle). ``weak_*``: the edges
    that carry only leaves.
    """

    def __init__(self, sizes, keys, pairs, entry_buses, exits, ports, weak_pairs, weak_exits, wrap_width=None):
        self.n = n = len(sizes)
        self.w = [float(s[0]) for s in sizes]
        self.h = [float(s[1]) for s in sizes]
        self.key = [(float(k), -1.0) for k in keys]
        self.in_dy = [float(p[0]) for p in ports]
        self.out_dy = [float(p[1]) for p in ports]
        self.lane = [False] * n
        self.edges, self.reversed = _break_cycles(n, pairs)
        self.forward = {(a, b) for a, b in pairs if (a, b) not in self.reversed}
        self.weak = weak_pairs
        self.entry_buses, self.exits, self.weak_exits = entry_buses, exits, weak_exits
        self.entries = {c for _, items, _ in entry_buses for c in items}
        self._assign_layers()
        self._add_lanes()
        self._order()
        self._coordinates()
        self.rows = self._wrap(wrap_width) if wrap_width is not None else None

    # 2. Layers: longest path, then move items right where that shortens their edges.
    def _assign_layers(self):
        n = self.n
        preds = [[] for _ in range(n)]
        succs = [[] for _ in range(n)]
        for a, b in self.edges:
            succs[a].append(b)
            preds[b].append(a)
        indegree = [len(p) for p in preds]
        ready = deque(v for v in range(n) if indegree[v] == 0)
        topo = []
        while ready:
            v = ready.popleft()
            topo.append(v)
            for s in succs[v]:
                indegree[s] -= 1
                if indegree[s] == 0:
                    ready.append(s)
        layer = [0] * n
        for v in topo:
            for s in succs[v]:
                if layer[s] <= layer[v]:
                    layer[s] = layer[v] + 1
        # Longest path puts every source in column 0. An item with at least as many edges going
        # right as coming in (a parameter, the transpose of one) loses nothing by moving right, to
        # just before its earliest successor; visiting in reverse order moves whole tails at once.
        last = max(layer, default=0)
        for _ in range(2):
            for v in reversed(topo):
                n_in = len(preds[v]) + (v in self.entries)
                n_out = len(succs[v]) + (v in self.exits)
                if n_out == 0 or n_out < n_in:
                    continue
                hi = min(layer[s] for s in succs[v]) - 1 if succs[v] else last
                if hi > layer[v]:
                    layer[v] = hi
        used = {number: rank for rank, number in enumerate(sorted(set(layer)))}
        self.layer = [used[number] for number in layer]
        self.n_layers = len(used)

    # 3. Lanes: an edge that spans several layers passes through a dummy item in each. All the
    #    long edges of one source share one bus of lanes (Graphviz's "concentrate"), as do all
    #    the edges that one outside node sends into this level.
    def _new_lane(self, layer, key):
        self.w.append(0.0)
        self.h.append(0.0)
        self.key.append(key)
        self.in_dy.append(0.0)
        self.out_dy.append(0.0)
        self.lane.append(True)
        self.layer.append(layer)
        return len(self.layer) - 1

    def _add_lanes(self):
        layer, n_layers = self.layer, self.n_layers
        self.chain = {}  # (a, b) -> the lanes of that edge, left to right
        self.entry_chain = {}  # (bus key, item) -> lanes from the left border to it
        self.exit_chain = {}  # item -> lanes from it to the right border
        links = []  # (a, b, strength)
        far = {}  # source -> [(layer of the target, target, strength)]
        for a, b in self.edges:
            if (a, b) not in self.forward:
                continue  # only a back edge runs here: it goes around the top (see _coordinates)
            strength = WEIGHT_LEAF if (a, b) in self.weak else 1.0
            if layer[b] - layer[a] == 1:
                links.append((a, b, strength))
                self.chain[(a, b)] = []
            else:
                far.setdefault(a, []).append((layer[b], b, strength))
        for a in sorted(self.exits):
            strength = WEIGHT_LEAF if a in self.weak_exits else 1.0
            far.setdefault(a, []).append((n_layers, None, strength))  # the right border
        for a in sorted(far):
            ends = far[a]
            end = max(at for at, _, _ in ends)
            bus = [self._new_lane(l, (self.key[a][0], 0.0)) for l in range(layer[a] + 1, end)]
            strength = max(s for _, _, s in ends)
            links.extend((x, y, strength) for x, y in zip([a] + bus[:-1], bus))
            for at, b, s in ends:
                lanes = bus[: at - layer[a] - 1]
                if b is None:
                    self.exit_chain[a] = lanes
                else:
                    self.chain[(a, b)] = lanes
                    links.append((lanes[-1], b, s))
        for bus_key, items, weak in self.entry_buses:
            strength = WEIGHT_LEAF if weak else 1.0
            end = max(layer[c] for c in items)
            first = min(self.key[c][0] for c in items)
            bus = [self._new_lane(l, (first - 0.5, 0.0)) for l in range(end)]
            links.extend((x, y, strength) for x, y in zip(bus, bus[1:]))
            for c in items:
                lanes = bus[: layer[c]]
                self.entry_chain[(bus_key, c)] = lanes
                if lanes:
                    links.append((lanes[-1], c, strength))
        total = len(self.layer)
        self.preds = [[] for _ in range(total)]
        self.succs = [[] for _ in range(total)]
        self.preds_w = [[] for _ in range(total)]
        self.succs_w = [[] for _ in range(total)]
        lane = self.lane
        for a, b, strength in sorted(set(links)):
            if lane[a] and lane[b]:
                weight = WEIGHT_LANE_LANE * strength
            elif lane[a] or lane[b]:
                weight = WEIGHT_BOX_LANE * strength
            else:
                weight = WEIGHT_BOX_BOX * strength
            self.succs[a].append(b)
            self.succs_w[a].append(weight)
            self.preds[b].append(a)
            self.preds_w[b].append(weight)
        self.yields = [LEAF_YIELD if v < self.n and not self.preds[v] and v not in self.entries
                       else 1.0 for v in range(total)]

    # 4. Order in each layer: start from graph order, sweep by medians, keep the best.
    def _order(self):
        layers = [[] for _ in range(self.n_layers)]
        for v in sorted(range(len(self.layer)), key=lambda v: (self.key[v], v)):
            layers[self.layer[v]].append(v)
        pos = [0] * len(self.layer)
        for layer in layers:
            for i, v in enumerate(layer):
                pos[v] = i
        self.layers, self.pos = layers, pos
        best = self._crossings()
        best_layers = [list(layer) for layer in layers]
        for sweep in range(ORDER_SWEEPS):
            if best == 0:
                break
            if sweep % 2 == 0:
                for l in range(1, len(layers)):
                    self._sort_by_median(layers[l], self.preds)
            else:
                for l in range(len(layers) - 2, -1, -1):
                    self._sort_by_median(layers[l], self.succs)
            self._transpose()
            crossings = self._crossings()
            if crossings < best:
                best, best_layers = crossings, [list(layer) for layer in layers]
        for l, layer in enumerate(best_layers):
            layers[l] = layer
            for i, v in enumerate(layer):
                pos[v] = i
        self.crossings = best

    def _sort_by_median(self, layer, neighbours):
        """Reorder one layer by the median position of each item's neighbours in the fixed layer;
        items with no neighbours there keep their place."""
        pos = self.pos
        movable, free_slots = [], []
        for i, v in enumerate(layer):
            near = neighbours[v]
            if near:
                where = pos[near[0]] if len(near) == 1 else _median(sorted(pos[u] for u in near))
                movable.append((where, i, v))
                free_slots.append(i)
        movable.sort()
        for slot, (_, _, v) in zip(free_slots, movable):
            layer[slot] = v
            pos[v] = slot

    def _transpose(self):
        """Swap neighbours in a layer while that removes crossings (Graphviz's local step);
        after the first pass, only the layers next to a swap are looked at again."""
        pos, preds, succs, layers = self.pos, self.preds, self.succs, self.layers
        todo = set(range(len(layers)))
        for _ in range(4):
            again = set()
            for l in sorted(todo):
                layer = layers[l]
                for i in range(len(layer) - 1):
                    a, b = layer[i], layer[i + 1]
                    keep = swap = 0
                    for side in (preds, succs):
                        for x in side[a]:
                            px = pos[x]
                            for y in side[b]:
                                if px > pos[y]:
                                    keep += 1
                                elif px < pos[y]:
                                    swap += 1
                    if swap < keep:
                        layer[i], layer[i + 1] = b, a
                        pos[a], pos[b] = i + 1, i
                        again.update((l - 1, l, l + 1))
            todo = {l for l in again if 0 <= l < len(layers)}
            if not todo:
                break

    def _crossings(self) -> int:
        """Edge crossings between all adjacent layers: inversions, counted with a Fenwick tree."""
        pos, succs, total = self.pos, self.succs, 0
        for l in range(len(self.layers) - 1):
            size = len(self.layers[l + 1])
            tree = [0] * (size + 1)
            seen = 0
            for u in self.layers[l]:
                near = succs[u]
                for p in (pos[near[0]],) if len(near) == 1 else sorted(pos[v] for v in near):
                    i, at_most_p = p + 1, 0
                    while i > 0:
                        at_most_p += tree[i]
                        i -= i & -i
                    total += seen - at_most_p
                    i = p + 1
                    while i <= size:
                        tree[i] += 1
                        i += i & -i
                    seen += 1
        return total

    # 5. Coordinates: columns side by side; in a column, each item level with the median of its
    #    neighbours, the order kept and no overlaps (an isotonic regression per column).
    def _coordinates(self):
        layers, w, h, lane = self.layers, self.w, self.h, self.lane
        col_w = [max((w[v] for v in layer), default=0.0) for layer in layers]
        # room for the hooks of edges against the flow, where they leave the last column or
        # enter the first
        last = len(layers) - 1
        left = GAP_X / 2 if any(self.layer[b] == 0 for _, b in self.reversed) else 0.0
        right = GAP_X / 2 if any(self.layer[a] == last for a, _ in self.reversed) else 0.0
        self.room = (left, right)
        col_x, x = [], left
        for width in col_w:
            col_x.append(x)
            x += width + GAP_X
        self.col_x, self.col_w = col_x, col_w
        self.x = [col_x[self.layer[v]] + (col_w[self.layer[v]] - w[v]) / 2 for v in range(len(w))]
        y = [0.0] * len(w)  # centres
        seps = []
        for layer in layers:
            gaps = [(h[a] + h[b]) / 2 + (LANE_GAP if lane[a] or lane[b] else GAP_Y)
                    for a, b in zip(layer, layer[1:])]
            seps.append(gaps)
            at = h[layer[0]] / 2 if layer else 0.0
            for i, v in enumerate(layer):
                y[v] = at
                if i < len(gaps):
                    at += gaps[i]
        self.y = y
        left_to_right = list(range(len(layers)))
        right_to_left = left_to_right[::-1]
        for sweep in range(Y_SWEEPS):
            if sweep % 2 == 0:  # left to right, each item level with its predecessors
                moved = self._level_columns(left_to_right, seps, from_left=True)
            else:  # right to left, with its successors
                moved = self._level_columns(right_to_left, seps, from_left=False)
            if sweep and moved < 0.01:
                break
        self._level_columns(left_to_right, seps, from_left=True)
        # the sources of the first columns moved before their successors did: once more for them
        self._level_columns(left_to_right, seps, from_left=True, sources_only=True)
        # Edges against the flow (cycles) run on tracks above everything, longest outermost.
        back = sorted(self.reversed, key=lambda e: (self.layer[e[1]] - self.layer[e[0]], e))
        self.tracks = {edge: i * LANE_GAP for i, edge in enumerate(back)}
        top = min((y[v] - h[v] / 2 for v in range(len(y))), default=0.0) - len(back) * LANE_GAP
        self.y = [c - top for c in y]
        self.width = (col_x[-1] + col_w[-1] + right) if layers else 0.0
        self.height = max((c + h[v] / 2 for v, c in enumerate(self.y)), default=0.0)

    def _level_columns(self, columns, seps, from_left, sources_only=False):
        """Move each column's items level with their neighbours on the left (or the right; items
        with none there: on the other side), keeping the order and the gaps. Returns the largest
        move."""
        y, in_dy, out_dy, yields, preds = self.y, self.in_dy, self.out_dy, self.yields, self.preds
        near, near_w, far, far_w = (self.preds, self.preds_w, self.succs, self.succs_w)
        if not from_left:
            near, near_w, far, far_w = far, far_w, near, near_w
        moved = 0.0
        for l in columns:
            layer = self.layers[l]
            targets, weights = [], []
            for v in layer:
                if sources_only and preds[v]:
                    targets.append(y[v])
                    weights.append(1e6)
                    continue
                if near[v]:
                    others, others_w, left = near[v], near_w[v], from_left
                else:
                    others, others_w, left = far[v], far_w[v], not from_left
                if not others:
                    targets.append(y[v])
                    weights.append(EPS)
                    continue
                if left:  # neighbours on the left: their out port level with my in port
                    values = [y[u] + out_dy[u] - in_dy[v] for u in others]
                else:
                    values = [y[u] + in_dy[u] - out_dy[v] for u in others]
                if len(values) == 1:
                    targets.append(values[0])
                    weights.append(others_w[0] * yields[v])
                    continue
                pulls = list(zip(values, others_w))
                pulls.append((y[v], EPS))  # among equally good places, stay put
                targets.append(_weighted_median(pulls))
                weights.append(sum(others_w) * yields[v])
            for v, c in zip(layer, _isotonic(targets, weights, seps[l])):
                moved = max(moved, abs(c - y[v]))
                y[v] = c
        return moved

    # 6. Rows: a strip much wider than tall is cut into rows (rows.py), as a long line of text wraps.
    def _wrap(self, wrap_width):
        layer, succs = self.layer, self.succs
        across = [0] * self.n_layers  # edges between column c - 1 and column c (all are one column long now)
        for v, near in enumerate(succs):
            for s in near:
                across[layer[s]] += 1
        starts = row_starts(self.col_x, self.col_w, across, wrap_width, self.height)
        if len(starts) == 1:
            return None
        row_of = [0] * self.n_layers
        for r, start in enumerate(starts):
            for l in range(start, starts[r + 1] if r + 1 < len(starts) else self.n_layers):
                row_of[l] = r
        self.row_of = row_of
        crossings = {}  # the row above a cut -> {item or lane leaving it: the y it leaves at}
        sequences = [[a] + lanes + [b] for (a, b), lanes in self.chain.items()]
        sequences += [lanes + [c] for (_, c), lanes in self.entry_chain.items()]
        sequences += [[a] + lanes for a, lanes in self.exit_chain.items()]
        for sequence in sequences:
            for u, v in zip(sequence, sequence[1:]):
                if row_of[layer[u]] != row_of[layer[v]]:
                    crossings.setdefault(row_of[layer[u]], {})[u] = self.y[u] + self.out_dy[u]
        # an edge against the flow between two rows climbs the right margin, past every row's end
        right = max(self.room[1], GAP_X / 2 if self.reversed else 0.0)
        return Rows(self, starts, crossings, (len(self.reversed) * LANE_GAP, self.room[0], right), GAP_X)

    # Results, in this level's own coordinates (top-left of the drawing is (0, 0)).
    def waypoints(self, first, lanes, last):
        """The points of an edge through ``lanes``, from item ``first`` to item ``last`` (None: the
        level's border): two per lane, and a return to the next row wherever it crosses a cut."""
        if self.rows is None:
            return self.lane_points(lanes)
        points, before = [], first
        for d in lanes:
            self._return(points, before, d, self.y[d])
            points.extend(self.lane_points([d]))
            before = d
        if last is not None:
            self._return(points, before, last, self.y[last] + self.in_dy[last])
        return points

    def _return(self, points, u, v, y_to):
        if u is not None and self.row_of[self.layer[u]] != self.row_of[self.layer[v]]:
            points.extend(self.rows.detour(self.row_of[self.layer[u]], u, self.y[u] + self.out_dy[u], y_to))

    def lane_points(self, lanes):
        """A lane runs straight across its column: two points per lane."""
        points = []
        for d in lanes:
            x, cy = self.col_x[self.layer[d]], self.y[d]
            points.append((x, cy))
            points.append((x + self.col_w[self.layer[d]], cy))
        return points


def _break_cycles(n, pairs):
    """Reverse the back edges of a depth-first search (in graph order): what is left is acyclic."""
    succ = [[] for _ in range(n)]
    for a, b in pairs:
        succ[a].append(b)
    state = [0] * n  # 0 unseen, 1 on the stack, 2 done
    back = set()
    for root in range(n):
        if state[root]:
            continue
        state[root] = 1
        stack = [(root, 0)]
        while stack:
            v, i = stack[-1]
            if i < len(succ[v]):
                stack[-1] = (v, i + 1)
                t = succ[v][i]
                if state[t] == 0:
                    state[t] = 1
                    stack.append((t, 0))
                elif state[t] == 1:
                    back.add((v, t))
            else:
                state[v] = 2
                stack.pop()
    edges = sorted({(b, a) if (a, b) in back else (a, b) for a, b in pairs})
    return edges, back


def _median(values):
    """Graphviz's weighted median of sorted positions: leans toward the side packed tighter."""
    m = len(values) // 2
    if len(values) % 2:
        return values[m]
    if len(values) == 2:
        return (values[0] + values[1]) / 2
    left, right = values[m - 1] - values[0], values[-1] - values[m]
    if left + right == 0:
        return (values[m - 1] + values[m]) / 2
    return (values[m - 1] * right + values[m] * left) / (left + right)


def _weighted_median(pulls):
    pulls = sorted(pulls)
    half = sum(weight for _, weight in pulls) / 2
    acc = 0.0
    for value, weight in pulls:
        acc += weight
        if acc >= half:
            return value
    return pulls[-1][0]


def _isotonic(targets, weights, seps):
    """Centres closest to ``targets`` (weighted least squares) with centre[i+1] - centre[i] >=
    seps[i]: pool adjacent violators on the centres less their least offsets."""
    if all(b - a >= sep for a, b, sep in zip(targets, targets[1:], seps)):
        return targets  # already far enough apart (and always so for a single item)
    offsets, at = [0.0], 0.0
    for sep in seps:
        at += sep
        offsets.append(at)
    blocks = []  # [weight, weighted sum, count]
    for t, wt, off in zip(targets, weights, offsets):
        bw, bs, bc = wt, wt * (t - off), 1
        while blocks and blocks[-1][1] * bw > bs * blocks[-1][0]:
            pw, ps, pc = blocks.pop()
            bw, bs, bc = bw + pw, bs + ps, bc + pc
        blocks.append((bw, bs, bc))
    centres = []
    for wt, total, count in blocks:
        z = total / wt
        for _ in range(count):
            centres.append(z + offsets[len(centres)])
    return centres


# --------------------------------------------------------------------------------------------
# Groups: one _Layered per expanded group, composed into absolute coordinates.


class _Level:
    """One group's children laid out, relative to the group's top-left corner (what is cached)."""

    __slots__ = ("width", "height", "pos", "column", "chains", "loops", "entry", "exit",
                 "in_dy", "out_dy")

    def __init__(self, width, height, pos, column, chains, loops, entry, exit, in_dy, out_dy):
        self.width, self.height = width, height
        self.pos = pos  # child id -> (x, y, w, h)
        self.column = column  # child id -> (left, right) of its column: edges bend outside it
        self.chains = chains  # (child, child) -> waypoints of that edge, left to right
        self.loops = loops  # (child, child) of an edge against the flow -> both ends of its track
        self.entry = entry  # (outside node, child) -> waypoints from the left border to the child
        self.exit = exit  # child -> waypoints from the child to the right border
        self.in_dy, self.out_dy = in_dy, out_dy  # where edges attach, from the middle


class _Static:
    """What a level's layout needs that does not change with expansion."""

    __slots__ = ("children", "keys", "pairs", "weak_pairs", "entry_buses", "exits", "weak_exits",
                 "out_child")


class GraphLayout:
    """Positions for the graph of a model whose nodes belong to nested groups (its modules).

    ``place(expanded)`` lays out every expanded group on its own and composes the pieces. Each
    group's layout is cached by (group, expanded groups inside it), so toggling one group costs
    the layouts of that group and its ancestors; ``layouts_computed`` counts the layouts made.
    """

    def __init__(self, node_sizes: dict, edges: list, group_of: dict, group_parent: dict,
                 group_sizes: dict | None = None, title_height: float = 22.0, padding: float = 12.0,
                 wrap_width: float | None = None):
        self.wrap_width = wrap_width  # a level drawn wider than this is wrapped into rows (None: never)
        self.node_sizes = {node: (float(w), float(h)) for node, (w, h) in node_sizes.items()}
        self.title_height, self.padding = float(title_height), float(padding)
        self.group_sizes = dict(group_sizes or {})
        self.layouts_computed = 0
        self._cache = {}
        index = {node: i for i, node in enumerate(self.node_sizes)}

        # Each node's path: its groups, outermost first, then itself.
        chains = {}

        def ancestry(group):
            path, seen, g = [], set(), group
            while g is not None and g not in seen and g not in chains:
                seen.add(g)
                path.append(g)
                g = group_parent.get(g)
            above = chains.get(g, ())  # a loop of parents ends here, at the top level
            for member in reversed(path):
                above = above + (member,)
                chains[member] = above
            return chains[group]

        self._path = {}
        for node in self.node_sizes:
            group = group_of.get(node)
            self._path[node] = (ancestry(group) if group is not None else ()) + (node,)
        self._ancestry = {}  # group -> (outermost, ..., group), for groups with nodes below
        for path in self._path.values():
            for depth, group in enumerate(path[:-1]):
                self._ancestry[group] = path[: depth + 1]
        self.groups = frozenset(self._ancestry)

        # Each level's children in graph order (a group comes where its first node does).
        first, children = {}, {None: []}
        for node, path in self._path.items():
            for depth, item in enumerate(path):
                if item not in first:
                    first[item] = index[node]
                    children.setdefault(path[depth - 1] if depth else None, []).append(item)

        # Merge duplicate edges; lift each to the level of its ends' lowest common group, and
        # note the groups it leaves (exits) and enters (entries) on the way.
        counts = {}
        for u, v in edges:
            if u != v and u in self._path and v in self._path:
                counts[(u, v)] = counts.get((u, v), 0) + 1
        self._edges = [(u, v, c) for (u, v), c in counts.items()]
        fed = {v for _, v, _ in self._edges}
        lifted = {g: {} for g in children}  # {(child, child): carries only leaves}
        entries = {g: {} for g in children}  # {outside node: {child}}
        exits = {g: {} for g in children}  # {child: carries only leaves}
        for u, v, _ in self._edges:
            pu, pv, leaf = self._path[u], self._path[v], u not in fed
            k = _common_prefix(pu, pv)
            level = pu[k - 1] if k else None
            pair = (pu[k], pv[k])
            lifted[level][pair] = lifted[level].get(pair, True) and leaf
            for i in range(k + 1, len(pu)):
                out = exits[pu[i - 1]]
                out[pu[i]] = out.get(pu[i], True) and leaf
            for i in range(k + 1, len(pv)):
                entries[pv[i - 1]].setdefault(u, set()).add(pv[i])
        self._static = {}
        for g, items in children.items():
            s = _Static()
            where = {c: i for i, c in enumerate(items)}
            s.children, s.keys = items, [first[c] for c in items]
            s.pairs = sorted((where[a], where[b]) for a, b in lifted[g])
            s.weak_pairs = {(where[a], where[b]) for (a, b), leaf in lifted[g].items() if leaf}
            s.entry_buses = [(u, sorted(where[c] for c in entries[g][u]), u not in fed)
                             for u in sorted(entries[g], key=index.get)]
            s.exits = {where[c] for c in exits[g]}
            s.weak_exits = {where[c] for c, leaf in exits[g].items() if leaf}
            s.out_child = max(exits[g], key=first.get) if exits[g] else None
            self._static[g] = s

    # ----------------------------------------------------------------------------------------
    def place(self, expanded=(), wrap: bool = True) -> Placement:
        """Lay out the graph with the ``expanded`` groups drawn open, the others collapsed (``wrap=False``:
        every level in one strip, even one wider than ``wrap_width``)."""
        wanted = set(expanded)
        open_groups = frozenset(g for g in self.groups
                                if all(a in wanted for a in self._ancestry[g]))
        levels = {}
        root, _ = self._level(None, open_groups, levels, self.wrap_width if wrap else None)

        boxes = {}

        def compose(group, ox, oy):
            for child, (x, y, w, h) in levels[group].pos.items():
                box = boxes[child] = Box(ox + x, oy + y, w, h)
                if child in open_groups:
                    compose(child, box.x, box.y)

        compose(None, 0.0, 0.0)

        visible_of = {}
        for item, path in list(self._path.items()) + list(self._ancestry.items()):
            visible_of[item] = next((p for p in path if p not in open_groups), item)
        merged = {}  # (visible source, visible target) -> [count, first original source]
        for u, v, count in self._edges:
            pair = (visible_of[u], visible_of[v])
            if pair[0] != pair[1]:
                merged.setdefault(pair, [0, u])[0] += count
        edges = [EdgeRoute(a, b, self._route(a, b, u, boxes, levels), count)
                 for (a, b), (count, u) in merged.items()]
        return Placement(boxes, open_groups, edges, root.width, root.height, visible_of)

    def _route(self, a, b, origin, boxes, levels):
        """The source's right-middle, out through the lanes of each group it leaves, across the
        lanes of the level where both ends meet, in through the groups it enters, to the target's
        left-middle. ``origin`` is an original node behind the edge: inside a group, the edges
        from one outside node share their lanes."""
        pa = self._path[a] if a in self._path else self._ancestry[a]
        pb = self._path[b] if b in self._path else self._ancestry[b]
        k = _common_prefix(pa, pb)
        src, dst = boxes[a], boxes[b]

        def add(points, group, waypoints):
            points.extend(_shifted(boxes[group] if group is not None else None, waypoints))

        def column(path, i):  # the absolute left and right of the column of path[i]
            group = path[i - 1] if i else None
            left, right = levels[group].column[path[i]]
            dx = boxes[group].x if group is not None else 0.0
            return left + dx, right + dx

        # Leaving a box (or a frame, at its border), an edge runs level to the edge of the box's
        # column before it bends: a narrow box in a wide column would otherwise clip its neighbours.
        leaving = [(column(pa, len(pa) - 1)[1], src.cy)]
        for i in range(len(pa) - 1, k, -1):
            add(leaving, pa[i - 1], levels[pa[i - 1]].exit[pa[i]])
            leaving.append((column(pa, i - 1)[1], leaving[-1][1]))
        entering = []
        for i in range(k + 1, len(pb)):
            before = len(entering)
            add(entering, pb[i - 1], levels[pb[i - 1]].entry[(origin, pb[i])])
            entering.insert(before, (column(pb, i - 1)[0], entering[before][1]))
        end = (dst.x, dst.cy)
        entering.append((column(pb, len(pb) - 1)[0], end[1]))
        points = [(src.right, src.cy)] + leaving
        meet = pa[k - 1] if k else None
        level, pair = levels[meet], (pa[k], pb[k])
        if pair in level.chains:
            add(points, meet, level.chains[pair])
        else:  # against the flow: right, up to its track, left over the top, down where it enters
            frame = boxes[meet] if meet is not None else None
            (x_out, track), (x_in, _) = _shifted(frame, level.loops[pair])
            y_from, y_to = points[-1][1], entering[0][1]
            points += [(x_out, y_from), (x_out, track), (x_in, track), (x_in, y_to)]
        points += entering + [end]
        route = [points[0]]
        for p in points[1:]:
            if abs(p[0] - route[-1][0]) > EPS or abs(p[1] - route[-1][1]) > EPS:
                route.append(p)
        return route

    def _level(self, group, open_groups, levels, wrap_width):
        """The layout of one group's children (or of the top level), from the cache if it can be.
        Returns it with the set of expanded groups inside ``group`` (its cache key)."""
        static = self._static[group]
        sizes, ports, inside = [], [], set()
        for child in static.children:
            if child in open_groups:
                sub, below = self._level(child, open_groups, levels, wrap_width)
                inside.add(child)
                inside |= below
                sizes.append((sub.width, sub.height))
                ports.append((sub.in_dy, sub.out_dy))
            elif child in self.groups:
                sizes.append(tuple(map(float, self.group_sizes.get(child, DEFAULT_GROUP_SIZE))))
                ports.append((0.0, 0.0))
            else:
                sizes.append(self.node_sizes[child])
                ports.append((0.0, 0.0))
        key = (group, frozenset(inside), wrap_width)
        level = self._cache.get(key)
        if level is None:
            level = self._cache[key] = self._compute_level(group, static, sizes, ports, wrap_width)
            self.layouts_computed += 1
        levels[group] = level
        return level, key[1]

    def _compute_level(self, group, static, sizes, ports, wrap_width) -> _Level:
        items = static.children
        lay = _Layered(sizes, static.keys, static.pairs, static.entry_buses, static.exits, ports,
                       static.weak_pairs, static.weak_exits, wrap_width)
        framed = group is not None  # the top level has no frame
        pad = self.padding if framed else 0.0
        top = self.title_height + pad if framed else 0.0
        width = lay.width + 2 * pad
        if framed:  # at least as wide as the collapsed box, so that the title fits
            width = max(width, float(self.group_sizes.get(group, DEFAULT_GROUP_SIZE)[0]))
        height = lay.height + top + pad if framed else lay.height
        ox, oy = (width - lay.width) / 2, top

        def lanes_at(first, lanes, last):
            return [(ox + x, oy + y) for x, y in lay.waypoints(first, lanes, last)]

        pos = {items[i]: (ox + lay.x[i], oy + lay.y[i] - lay.h[i] / 2, lay.w[i], lay.h[i])
               for i in range(len(items))}
        chains, loops = {}, {}
        for a, b in static.pairs:
            if (a, b) in lay.reversed:  # out to the right of a's column, back over the top
                x_out = lay.col_x[lay.layer[a]] + lay.col_w[lay.layer[a]] + GAP_X / 2
                if lay.rows is not None and lay.row_of[lay.layer[a]] != lay.row_of[lay.layer[b]]:
                    x_out = max(lay.rows.row_right) + GAP_X / 2  # up the right margin, not through a row
                x_in = lay.col_x[lay.layer[b]] - GAP_X / 2
                track = oy + lay.tracks[(a, b)]
                loops[(items[a], items[b])] = [(ox + x_out, track), (ox + x_in, track)]
            else:
                chains[(items[a], items[b])] = lanes_at(a, lay.chain[(a, b)], b)
        weak_bus = {bus_key for bus_key, _, weak in static.entry_buses if weak}
        entry, strong_y, weak_y = {}, [], []
        for (bus_key, v), lanes in lay.entry_chain.items():
            y = oy + (lay.y[lanes[0]] if lanes else lay.y[v] + lay.in_dy[v])
            entry[(bus_key, items[v])] = [(0.0, y)] + lanes_at(None, lanes, v)
            (weak_y if bus_key in weak_bus else strong_y).append(y)
        exit, exit_y = {}, {}
        for v, lanes in lay.exit_chain.items():
            y = exit_y[v] = oy + (lay.y[lanes[-1]] if lanes else lay.y[v] + lay.out_dy[v])
            exit[items[v]] = lanes_at(v, lanes, None) + [(width, y)]
        where = {c: i for i, c in enumerate(items)}
        # Where the parent lines this frame up with its neighbours: at its output (the last child
        # that feeds the outside), and at the input most level with it — a chain of blocks then
        # runs straight along its through-line (a residual stream) instead of stepping down.
        in_dy = out_dy = 0.0
        inputs = strong_y or weak_y  # rather an input that carries computation than a leaf
        out_y = exit_y[where[static.out_child]] if static.out_child is not None else None
        if out_y is not None:
            out_dy = out_y - height / 2
        if inputs:
            level_with = out_y if out_y is not None else inputs[0]
            in_dy = min(inputs, key=lambda y: (abs(y - level_with), y)) - height / 2
        column = {}
        for i, item in enumerate(items):
            left = ox + lay.col_x[lay.layer[i]]
            column[item] = (left, left + lay.col_w[lay.layer[i]])
        return _Level(width, height, pos, column, chains, loops, entry, exit, in_dy, out_dy)


def _shifted(frame, points):
    """Points relative to a frame's top-left corner, made absolute (frame None: the top level)."""
    if frame is None:
        return list(points)
    return [(frame.x + x, frame.y + y) for x, y in points]


def _common_prefix(a, b) -> int:
    k = 0
    while k < len(a) and k < len(b) and a[k] == b[k]:
        k += 1
    return k

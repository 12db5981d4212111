"""gradlab.lab.layout: the layered, nested layout of a model's graph (pure Python, no Graphviz)."""

import random

import numpy as np
import pytest

from gradlab.lab.layout import Box, EdgeRoute, GraphLayout, Placement

EPS = 1e-6


# --- small graphs and the checks every drawing must pass -------------------------------------

def sizes(*ids, w=80.0, h=30.0):
    return {i: (w, h) for i in ids}


def chain(n, prefix="n"):
    ids = [f"{prefix}{i}" for i in range(n)]
    return ids, list(zip(ids, ids[1:]))


def flat(node_sizes, edges):
    return GraphLayout(node_sizes, edges, {n: None for n in node_sizes}, {})


def overlap(a: Box, b: Box) -> bool:
    return (a.x < b.right - EPS and b.x < a.right - EPS
            and a.y < b.bottom - EPS and b.y < a.bottom - EPS)


def inside(inner: Box, outer: Box) -> bool:
    return (inner.x >= outer.x - EPS and inner.right <= outer.right + EPS
            and inner.y >= outer.y - EPS and inner.bottom <= outer.bottom + EPS)


def parent_of(layout, item):
    path = layout._path.get(item) or layout._ancestry[item]
    return path[-2] if len(path) > 1 else None


def assert_well_drawn(layout, placement):
    """No overlaps between siblings, children inside their open frame (below its title),
    everything inside (0, 0)-(width, height)."""
    boxes = placement.boxes
    by_parent = {}
    for item in boxes:
        by_parent.setdefault(parent_of(layout, item), []).append(item)
    for group, items in by_parent.items():
        for i, a in enumerate(items):
            for b in items[i + 1:]:
                assert not overlap(boxes[a], boxes[b]), (a, boxes[a], b, boxes[b])
        if group is not None:
            assert group in placement.expanded
            frame = boxes[group]
            content = Box(frame.x, frame.y + layout.title_height, frame.w, frame.h - layout.title_height)
            for item in items:
                assert inside(boxes[item], content), (item, group)
    points = [p for e in placement.edges for p in e.points]
    points += [(b.x, b.y) for b in boxes.values()] + [(b.right, b.bottom) for b in boxes.values()]
    if points:  # the drawing (boxes and edges) starts at (0, 0) and fits width x height
        assert min(x for x, _ in points) == pytest.approx(0)
        assert min(y for _, y in points) == pytest.approx(0)
        assert max(x for x, _ in points) <= placement.width + EPS
        assert max(y for _, y in points) <= placement.height + EPS


def assert_routes_attach(placement):
    for e in placement.edges:
        src, dst = placement.boxes[e.source], placement.boxes[e.target]
        assert e.points[0] == pytest.approx((src.right, src.cy))
        assert e.points[-1] == pytest.approx((dst.x, dst.cy))


def segments_cross(p, q, r, s) -> bool:
    """Proper crossing of segments pq and rs (touching at an end does not count)."""
    def orient(a, b, c):
        v = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
        return 0 if abs(v) < 1e-9 else (1 if v > 0 else -1)

    return (orient(p, q, r) * orient(p, q, s) < 0) and (orient(r, s, p) * orient(r, s, q) < 0)


def drawn_crossings(placement) -> int:
    segments = [(i, a, b) for i, e in enumerate(placement.edges) for a, b in zip(e.points, e.points[1:])]
    return sum(segments_cross(a, b, c, d)
               for k, (i, a, b) in enumerate(segments) for (j, c, d) in segments[k + 1:] if i != j)


def random_dag(seed, n=40):
    rng = random.Random(seed)
    ids = [f"v{i}" for i in range(n)]
    edges = []
    for i in range(1, n):
        for _ in range(rng.choice([1, 1, 2])):
            j = rng.randrange(max(0, i - 6), i) if rng.random() < 0.85 else rng.randrange(i)
            edges.append((ids[j], ids[i]))
    node_sizes = {v: (rng.choice([60.0, 90.0, 120.0]), rng.choice([24.0, 30.0, 44.0])) for v in ids}
    return node_sizes, edges


def nested_model(blocks=3):
    """A small model: an input, blocks `b.N` each with `b.N.attn` and `b.N.mlp`, and a loss."""
    node_sizes, edges, group_of = {}, [], {}
    group_parent = {"b": None}

    def op(name, group, *inputs):
        node_sizes[name] = (80.0, 28.0)
        group_of[name] = group
        edges.extend((i, name) for i in inputs)
        return name

    x = op("x", None)
    for n in range(blocks):
        block = f"b.{n}"
        group_parent[block] = "b"
        group_parent[f"{block}.attn"] = block
        group_parent[f"{block}.mlp"] = block
        w = op(f"{block}.attn.w", f"{block}.attn")
        h = op(f"{block}.attn.mm", f"{block}.attn", x, w)
        h = op(f"{block}.attn.softmax", f"{block}.attn", h)
        x = op(f"{block}.add1", block, x, h)
        w = op(f"{block}.mlp.w", f"{block}.mlp")
        h = op(f"{block}.mlp.mm", f"{block}.mlp", x, w)
        h = op(f"{block}.mlp.relu", f"{block}.mlp", h)
        x = op(f"{block}.add2", block, x, h)
    op("loss", None, x)
    return node_sizes, edges, group_of, group_parent


# --- flat graphs -----------------------------------------------------------------------------

def test_a_chain_lies_on_one_horizontal_line():
    ids, edges = chain(8)
    node_sizes = {i: (60.0 + 10 * k, 20.0 + 4 * k) for k, i in enumerate(ids)}  # sizes differ
    placement = flat(node_sizes, edges).place()
    centres = {placement.boxes[i].cy for i in ids}
    assert max(centres) - min(centres) < EPS
    xs = [placement.boxes[i].x for i in ids]
    assert xs == sorted(xs)


@pytest.mark.parametrize("seed", range(8))
def test_random_dags_have_no_overlaps_and_edges_run_left_to_right_between_boxes(seed):
    node_sizes, edges = random_dag(seed)
    placement = flat(node_sizes, edges).place()
    assert set(placement.boxes) == set(node_sizes)
    assert_well_drawn(flat(node_sizes, edges), placement)
    assert_routes_attach(placement)
    for e in placement.edges:
        assert placement.boxes[e.source].right <= placement.boxes[e.target].x + EPS
        xs = [x for x, _ in e.points]
        assert xs == sorted(xs)  # the polyline itself never turns back
        assert_avoids_boxes(placement, e)


def test_a_parameter_sits_in_the_column_just_before_the_op_it_feeds():
    ids, edges = chain(7)  # n5 is five layers deep
    node_sizes = sizes(*ids, "weight")
    placement = flat(node_sizes, edges + [("weight", "n5")]).place()
    weight, before, op = (placement.boxes[i] for i in ("weight", "n4", "n5"))
    assert weight.x + weight.w / 2 == pytest.approx(before.x + before.w / 2)  # n4's column
    assert weight.right <= op.x


def test_a_chain_of_leaves_moves_with_the_op_it_feeds():
    ids, edges = chain(7)  # weight -> transpose -> n5, as autograd records a Linear
    node_sizes = sizes(*ids, "weight", "t")
    placement = flat(node_sizes, edges + [("weight", "t"), ("t", "n5")]).place()
    boxes = placement.boxes
    assert boxes["t"].x == pytest.approx(boxes["n4"].x)
    assert boxes["weight"].x == pytest.approx(boxes["n3"].x)


def test_a_diamond_has_no_crossings():
    node_sizes = sizes("a", "b", "c", "d")
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]
    placement = flat(node_sizes, edges).place()
    assert drawn_crossings(placement) == 0
    assert placement.boxes["b"].x == placement.boxes["c"].x


def test_crossing_reduction_untangles_what_graph_order_tangles():
    # graph order puts a1 above b1, but a1 feeds b2 and b1 feeds a2: one swap removes both crossings
    node_sizes = sizes("s", "a1", "b1", "a2", "b2", "a3", "b3")
    edges = [("s", "a1"), ("s", "b1"), ("a1", "b2"), ("b1", "a2"), ("a2", "b3"), ("b2", "a3")]
    assert drawn_crossings(flat(node_sizes, edges).place()) == 0


def assert_avoids_boxes(placement, edge):
    """No point of the route lies inside a box other than its own two ends (frames aside):
    points sampled every 2 px along each segment, against every box shrunk by 1 px."""
    names = [n for n in placement.boxes
             if n not in (edge.source, edge.target) and n not in placement.expanded]
    if not names:
        return
    rect = np.array([[b.x + 1, b.y + 1, b.right - 1, b.bottom - 1]
                     for b in (placement.boxes[n] for n in names)])
    samples = []
    for (x0, y0), (x1, y1) in zip(edge.points, edge.points[1:]):
        steps = int(max(abs(x1 - x0), abs(y1 - y0)) / 2) + 2
        t = np.linspace(0.0, 1.0, steps)
        samples.append(np.stack([x0 + (x1 - x0) * t, y0 + (y1 - y0) * t], axis=1))
    pts = np.concatenate(samples)
    hit = ((pts[:, None, 0] > rect[None, :, 0]) & (pts[:, None, 0] < rect[None, :, 2])
           & (pts[:, None, 1] > rect[None, :, 1]) & (pts[:, None, 1] < rect[None, :, 3]))
    assert not hit.any(), (edge.source, edge.target, [names[j] for j in np.nonzero(hit.any(axis=0))[0]])


def test_a_long_edge_passes_between_boxes_not_through_them():
    ids, edges = chain(6)
    extra = [(f"side{i}", f"n{i + 1}") for i in range(4)]  # boxes in the columns it crosses
    node_sizes = sizes(*ids, *(a for a, _ in extra))
    placement = flat(node_sizes, edges + extra + [("n0", "n5")]).place()
    skip = next(e for e in placement.edges if (e.source, e.target) == ("n0", "n5"))
    assert len(skip.points) > 2  # it has waypoints
    assert_avoids_boxes(placement, skip)


def test_duplicate_edges_are_drawn_once_with_their_count():
    node_sizes = sizes("a", "b")
    placement = flat(node_sizes, [("a", "b"), ("a", "b"), ("a", "b")]).place()
    assert [(e.source, e.target, e.count) for e in placement.edges] == [("a", "b", 3)]


# --- groups ----------------------------------------------------------------------------------

def test_a_collapsed_group_is_one_box_and_its_edges_are_merged():
    node_sizes = sizes("x", "m1", "m2", "m3", "y")
    edges = [("x", "m1"), ("x", "m2"), ("m1", "m3"), ("m2", "m3"), ("m3", "y"), ("m1", "y")]
    group_of = {"x": None, "y": None, "m1": "mod", "m2": "mod", "m3": "mod"}
    layout = GraphLayout(node_sizes, edges, group_of, {"mod": None}, group_sizes={"mod": (150, 50)})
    placement = layout.place(set())
    assert set(placement.boxes) == {"x", "mod", "y"}
    assert placement.boxes["mod"].w == 150 and placement.boxes["mod"].h == 50
    assert placement.expanded == frozenset()
    assert [placement.visible(n) for n in ("x", "m1", "m2", "m3", "y")] == ["x", "mod", "mod", "mod", "y"]
    drawn = {(e.source, e.target): e.count for e in placement.edges}
    assert drawn == {("x", "mod"): 2, ("mod", "y"): 2}  # the edges inside mod are hidden
    assert_routes_attach(placement)


def test_an_expanded_group_frames_its_children():
    node_sizes, edges, group_of, group_parent = nested_model()
    layout = GraphLayout(node_sizes, edges, group_of, group_parent)
    placement = layout.place({"b", "b.1", "b.1.attn"})
    assert placement.expanded == {"b", "b.1", "b.1.attn"}
    assert {"b.0", "b.2", "b.1.mlp", "b.1.add1", "b.1.attn.mm"} <= set(placement.boxes)
    assert "b.0.attn" not in placement.boxes and "b.0.add1" not in placement.boxes
    assert placement.visible("b.0.attn.mm") == "b.0"
    assert placement.visible("b.1.attn.mm") == "b.1.attn.mm"
    assert placement.visible("b.1.mlp.relu") == "b.1.mlp"
    assert_well_drawn(layout, placement)
    assert_routes_attach(placement)
    frame = placement.boxes["b.1.attn"]
    content = [placement.boxes[n] for n in ("b.1.attn.w", "b.1.attn.mm", "b.1.attn.softmax")]
    assert min(b.x for b in content) - frame.x == pytest.approx(layout.padding)
    assert min(b.y for b in content) - frame.y == pytest.approx(layout.title_height + layout.padding)
    for e in placement.edges:
        assert placement.boxes[e.source].right <= placement.boxes[e.target].x + EPS


def test_a_group_opened_inside_a_collapsed_one_stays_hidden():
    node_sizes, edges, group_of, group_parent = nested_model()
    layout = GraphLayout(node_sizes, edges, group_of, group_parent)
    placement = layout.place({"b.1", "b.1.attn", "no-such-group"})  # "b" itself is closed
    assert placement.expanded == frozenset()
    assert set(placement.boxes) == {"x", "b", "loss"}


def relative_layout(placement, group, layout):
    frame = placement.boxes[group]
    return {item: tuple(round(v, 6) for v in (b.x - frame.x, b.y - frame.y, b.w, b.h))
            for item, b in placement.boxes.items() if parent_of(layout, item) == group}


def test_expanding_a_group_lays_out_only_it_and_its_ancestors():
    node_sizes, edges, group_of, group_parent = nested_model()
    layout = GraphLayout(node_sizes, edges, group_of, group_parent)
    before_open = {"b", "b.0", "b.0.attn", "b.0.mlp", "b.1", "b.1.attn", "b.2", "b.2.mlp"}
    before = layout.place(before_open)
    computed = layout.layouts_computed
    after = layout.place(before_open | {"b.1.mlp"})
    assert layout.layouts_computed - computed == 4  # b.1.mlp, b.1, b and the top level
    for group in before_open - {"b", "b.1"}:  # every other open group: the same drawing inside
        assert relative_layout(after, group, layout) == relative_layout(before, group, layout)
    assert_well_drawn(layout, after)
    # and going back needs no layout at all: every piece is in the cache
    computed = layout.layouts_computed
    again = layout.place(before_open)
    assert layout.layouts_computed == computed
    assert again.boxes == before.boxes


def test_an_edge_that_becomes_a_loop_after_collapsing_is_dropped():
    node_sizes = sizes("a", "b", "c")
    group_of = {"a": "g", "b": "g", "c": None}
    layout = GraphLayout(node_sizes, [("a", "b"), ("b", "a"), ("b", "c")], group_of, {"g": None})
    placement = layout.place()
    assert [(e.source, e.target, e.count) for e in placement.edges] == [("g", "c", 1)]


def test_edges_across_groups_route_through_the_frames_they_cross():
    node_sizes, edges, group_of, group_parent = nested_model()
    layout = GraphLayout(node_sizes, edges, group_of, group_parent)
    placement = layout.place({"b", "b.0", "b.0.attn", "b.1", "b.1.attn"})
    route = next(e for e in placement.edges if (e.source, e.target) == ("b.0.add2", "b.1.attn.mm"))
    b0, b1, attn = placement.boxes["b.0"], placement.boxes["b.1"], placement.boxes["b.1.attn"]
    xs = [x for x, _ in route.points]
    assert any(abs(x - b0.right) < EPS for x in xs)  # leaves b.0 at its right border
    assert any(abs(x - b1.x) < EPS for x in xs)  # enters b.1 at its left border
    assert any(abs(x - attn.x) < EPS for x in xs)  # and b.1.attn at its own
    assert xs == sorted(xs)


# --- robustness ------------------------------------------------------------------------------

def test_an_empty_graph():
    placement = GraphLayout({}, [], {}, {}).place()
    assert placement == Placement({}, frozenset(), [], 0.0, 0.0)


def test_a_single_node():
    placement = flat(sizes("only", w=50, h=20), []).place()
    assert placement.boxes == {"only": Box(0.0, 0.0, 50.0, 20.0)}
    assert (placement.width, placement.height) == (50.0, 20.0)
    assert placement.edges == []


def test_a_cycle_is_laid_out_without_hanging():
    ids, edges = chain(5)
    node_sizes = sizes(*ids)
    layout = flat(node_sizes, edges + [("n4", "n1"), ("n2", "n2")])
    placement = layout.place()
    assert set(placement.boxes) == set(ids)
    assert_well_drawn(layout, placement)
    assert {(e.source, e.target) for e in placement.edges} == set(edges) | {("n4", "n1")}
    assert all(isinstance(e, EdgeRoute) and len(e.points) >= 2 for e in placement.edges)
    assert_routes_attach(placement)
    back = next(e for e in placement.edges if (e.source, e.target) == ("n4", "n1"))
    assert_avoids_boxes(placement, back)  # it goes around, over the top
    assert min(y for _, y in back.points) < min(b.y for b in placement.boxes.values())


def test_a_cycle_between_groups():
    # a module called twice: its group feeds another that feeds it back
    node_sizes = sizes("a1", "b1", "a2")
    group_of = {"a1": "A", "a2": "A", "b1": "B"}
    layout = GraphLayout(node_sizes, [("a1", "b1"), ("b1", "a2")], group_of, {"A": None, "B": None})
    for expanded in (set(), {"A"}, {"B"}, {"A", "B"}):
        placement = layout.place(expanded)
        assert_well_drawn(layout, placement)
        assert_routes_attach(placement)
        for edge in placement.edges:
            assert_avoids_boxes(placement, edge)


def test_groups_nested_four_deep():
    ids, edges = chain(6)
    group_of = {"n0": None, "n1": "a", "n2": "a.b", "n3": "a.b.c", "n4": "a.b.c.d", "n5": None}
    group_parent = {"a": None, "a.b": "a", "a.b.c": "a.b", "a.b.c.d": "a.b.c", "empty": "a"}
    layout = GraphLayout(sizes(*ids), edges, group_of, group_parent)
    assert layout.groups == {"a", "a.b", "a.b.c", "a.b.c.d"}  # "empty" has no nodes: ignored
    placement = layout.place({"a", "a.b", "a.b.c", "a.b.c.d"})
    assert set(placement.boxes) == set(ids) | layout.groups
    assert_well_drawn(layout, placement)
    assert_routes_attach(placement)
    centres = [placement.boxes[i].cy for i in ids]
    assert max(centres) - min(centres) < EPS  # still one straight chain through four frames
    assert [placement.visible(i) for i in ids] == ids
    placement = layout.place({"a", "a.b"})
    assert placement.visible("n4") == "a.b.c"
    assert_well_drawn(layout, placement)


def test_random_nested_graphs_in_every_state():
    rng = random.Random(7)
    for seed in range(5):
        node_sizes, edges = random_dag(seed, n=60)
        ids = list(node_sizes)
        group_parent = {"g0": None, "g1": None, "g0.a": "g0", "g0.b": "g0", "g0.a.x": "g0.a"}
        names = list(group_parent) + [None]
        group_of = {}
        for start in range(0, len(ids), 6):  # runs of consecutive nodes share a module
            group = rng.choice(names)
            for v in ids[start:start + 6]:
                group_of[v] = group
        layout = GraphLayout(node_sizes, edges, group_of, group_parent)
        for _ in range(6):
            expanded = {g for g in group_parent if rng.random() < 0.6}
            placement = layout.place(expanded)
            assert_well_drawn(layout, placement)
            assert_routes_attach(placement)
            for e in placement.edges:
                assert_avoids_boxes(placement, e)
            drawn = sum(e.count for e in placement.edges)
            assert drawn == sum(1 for u, v in edges if placement.visible(u) != placement.visible(v))


def test_the_same_graph_gives_the_same_drawing():
    node_sizes, edges, group_of, group_parent = nested_model()
    first = GraphLayout(node_sizes, edges, group_of, group_parent).place({"b", "b.1"})
    second = GraphLayout(node_sizes, edges, group_of, group_parent).place({"b", "b.1"})
    assert first == second

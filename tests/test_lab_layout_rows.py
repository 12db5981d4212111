"""A long chain of blocks wraps into rows (gradlab/lab/rows.py), read as a page of text is read."""

import re

import pytest
from test_lab_layout import (EPS, assert_routes_attach, assert_well_drawn, drawn_crossings, nested_model,
                             random_dag)

import gradlab as gl
from gradlab.lab.layout import GraphLayout
from gradlab.lab.rows import ROW_ASPECT
from lab_big_models import gpt2, resnet18

WRAP = 1400.0


def blocks(n, ops=3):
    """``n`` modules b0..b(n-1) in a chain, ``ops`` ops each, between an input and a loss."""
    node_sizes, edges, group_of, group_parent = {"x": (60.0, 38.0)}, [], {"x": None}, {}
    last = "x"
    for b in range(n):
        group_parent[f"b{b}"] = None
        for k in range(ops):
            node = f"b{b}.{k}"
            node_sizes[node], group_of[node] = (90.0, 38.0), f"b{b}"
            edges.append((last, node))
            last = node
    node_sizes["loss"], group_of["loss"] = (60.0, 38.0), None
    edges.append((last, "loss"))
    return node_sizes, edges, group_of, group_parent


def rows_of(placement, ids):
    """The ids grouped into rows by their boxes' middles (top row first), each row left to right."""
    rows = {}
    for i in ids:
        rows.setdefault(round(placement.boxes[i].cy), []).append(i)
    return [sorted(row, key=lambda i: placement.boxes[i].x) for _, row in sorted(rows.items())]


def segments(route):
    return list(zip(route.points, route.points[1:]))


def passes_through(p, q, box, inset=1.0) -> bool:
    """Whether segment pq enters the inside of a box (sampled finely: the routes are polylines)."""
    for k in range(101):
        x, y = p[0] + (q[0] - p[0]) * k / 100, p[1] + (q[1] - p[1]) * k / 100
        if box.x + inset < x < box.right - inset and box.y + inset < y < box.bottom - inset:
            return True
    return False


def assert_no_edge_through_a_box(placement):
    closed = {i: b for i, b in placement.boxes.items() if i not in placement.expanded}
    for route in placement.edges:
        for p, q in segments(route):
            for item, box in closed.items():
                if item not in (route.source, route.target):
                    assert not passes_through(p, q, box), (route.source, route.target, item)


# --- a chain of closed blocks ----------------------------------------------------------------

def test_a_long_chain_of_blocks_wraps_into_rows_in_reading_order():
    node_sizes, edges, group_of, group_parent = blocks(60)
    layout = GraphLayout(node_sizes, edges, group_of, group_parent, wrap_width=WRAP)
    placement = layout.place()
    names = [f"b{b}" for b in range(60)]
    rows = rows_of(placement, names)
    assert len(rows) > 2
    assert [name for row in rows for name in row] == names  # left to right, then the next row down
    assert all(len(row) > 1 for row in rows)
    for upper, lower in zip(rows, rows[1:]):  # each row wholly below the one before it
        assert max(placement.boxes[i].bottom for i in upper) < min(placement.boxes[i].y for i in lower)
    assert placement.width <= 1.5 * WRAP
    assert 0.5 * ROW_ASPECT <= placement.width / placement.height <= 2 * ROW_ASPECT
    assert_well_drawn(layout, placement)
    assert_routes_attach(placement)
    assert_no_edge_through_a_box(placement)
    assert drawn_crossings(placement) == 0


def test_the_same_chain_without_a_wrap_width_stays_one_strip():
    node_sizes, edges, group_of, group_parent = blocks(60)
    placement = GraphLayout(node_sizes, edges, group_of, group_parent).place()
    assert len(rows_of(placement, [f"b{b}" for b in range(60)])) == 1
    assert placement.width / placement.height > 50


def test_a_short_chain_is_not_wrapped():
    node_sizes, edges, group_of, group_parent = blocks(5)
    wrapped = GraphLayout(node_sizes, edges, group_of, group_parent, wrap_width=WRAP).place()
    plain = GraphLayout(node_sizes, edges, group_of, group_parent).place()
    assert wrapped.boxes == plain.boxes
    assert [e.points for e in wrapped.edges] == [e.points for e in plain.edges]


def test_an_edge_between_rows_goes_out_right_back_under_its_row_and_in_from_the_left():
    node_sizes, edges, group_of, group_parent = blocks(40)
    placement = GraphLayout(node_sizes, edges, group_of, group_parent, wrap_width=WRAP).place()
    rows = rows_of(placement, [f"b{b}" for b in range(40)])
    boxes = placement.boxes
    for upper, lower in zip(rows, rows[1:]):
        route = next(e for e in placement.edges if (e.source, e.target) == (upper[-1], lower[0]))
        row_bottom = max(boxes[i].bottom for i in upper)
        row_top = min(boxes[i].y for i in lower)
        xs = [x for x, _ in route.points]
        assert max(xs) > max(boxes[i].right for i in upper)  # out past the row's end
        assert min(xs) < boxes[lower[0]].x  # in beside the next row's start
        back = [(p, q) for p, q in segments(route) if q[0] < p[0] - EPS]  # the leg that runs back left
        assert len(back) == 1
        (p, q), = back
        assert p[1] == pytest.approx(q[1])  # level, in the gap between the rows
        assert row_bottom < p[1] < row_top


def test_edges_across_one_cut_have_tracks_of_their_own():
    # a chain with skips: each node feeds the next and the one after it, so two or three edges cross each cut
    ids = [f"n{i}" for i in range(80)]
    edges = list(zip(ids, ids[1:])) + list(zip(ids, ids[2:]))
    layout = GraphLayout({i: (80.0, 30.0) for i in ids}, edges, {i: None for i in ids}, {}, wrap_width=WRAP)
    placement = layout.place()
    legs = {(e.source, round(p[1], 6)) for e in placement.edges for p, q in segments(e) if q[0] < p[0] - EPS}
    assert len(legs) >= 4  # at least two cuts, two sources' edges across each
    assert len({y for _, y in legs}) == len(legs)  # one line per source
    assert_well_drawn(layout, placement)
    assert_routes_attach(placement)
    assert_no_edge_through_a_box(placement)


@pytest.mark.parametrize("seed", range(6))
def test_random_dags_wrapped_are_well_drawn(seed):
    node_sizes, edges = random_dag(seed, n=120)
    layout = GraphLayout(node_sizes, edges, {n: None for n in node_sizes}, {}, wrap_width=WRAP)
    placement = layout.place()
    assert placement.width < 2 * WRAP
    assert_well_drawn(layout, placement)
    assert_routes_attach(placement)


# --- opened blocks ---------------------------------------------------------------------------

def test_opening_one_block_of_a_wrapped_chain_lays_out_only_it_and_the_top():
    node_sizes, edges, group_of, group_parent = blocks(60)
    layout = GraphLayout(node_sizes, edges, group_of, group_parent, wrap_width=WRAP)
    layout.place()
    before = layout.layouts_computed
    placement = layout.place({"b30"})
    assert layout.layouts_computed == before + 2  # b30's own layout, and the top level's again
    assert "b30" in placement.expanded
    assert [placement.boxes[f"b30.{k}"].x for k in range(3)] == sorted(placement.boxes[f"b30.{k}"].x
                                                                      for k in range(3))
    assert_well_drawn(layout, placement)
    assert_routes_attach(placement)
    assert_no_edge_through_a_box(placement)


def test_a_long_chain_inside_a_module_wraps_inside_its_frame():
    node_sizes, edges, group_of, group_parent = nested_model(blocks=24)
    layout = GraphLayout(node_sizes, edges, group_of, group_parent, wrap_width=WRAP)
    for expanded in ({"b"}, {"b", "b.3", "b.3.attn"}, {"b"} | {f"b.{i}" for i in range(24)}):
        placement = layout.place(expanded)
        frame = placement.boxes["b"]
        assert frame.w <= 1.5 * WRAP + 2 * layout.padding
        assert_well_drawn(layout, placement)
        assert_routes_attach(placement)
    rows = rows_of(layout.place({"b"}), [f"b.{i}" for i in range(24)])
    assert len(rows) > 1 and [i for row in rows for i in row] == [f"b.{i}" for i in range(24)]


# --- the lab's models ------------------------------------------------------------------------

def svg_box(svg, item):
    """(x, y) of the box drawn for ``item`` in a GraphView's SVG."""
    found = re.search(rf'data-id="{re.escape(item)}"><title>[^<]*</title><rect x="([\d.]+)" y="([\d.]+)"', svg)
    return float(found.group(1)), float(found.group(2))


def test_a_gpt2s_twelve_blocks_open_closed_in_rows_in_order_in_the_widget_and_its_picture():
    gl.manual_seed(0)
    model = gpt2(gl, n_embd=48, n_head=4, vocab_size=97, block_size=16)  # GPT-2's shape, made small
    with gl.lab.record() as rec:
        model(gl.randint(0, 97, (1, 8))).sum()
    view = gl.lab.GraphView(rec)
    placement = view.scene.placement()
    names = [f"g:h.{i}" for i in range(12)]
    assert all(name in placement.boxes and name not in placement.expanded for name in names)
    rows = rows_of(placement, names)
    assert len(rows) > 1 and [n for row in rows for n in row] == names
    assert placement.width / placement.height < 8  # not a strip (one row would be more than 20 times as wide)
    for svg in (view.svg, view.to_svg()):  # the widget and the saved picture wrap alike
        drawn = [svg_box(svg, name) for name in names]
        assert [round(y) for _, y in drawn] == [round(placement.boxes[n].y) for n in names]
        assert len({round(y) for _, y in drawn}) == len(rows)
    view.close()


def test_a_resnet18s_stages_are_drawn_in_rows_in_order():
    gl.manual_seed(0)
    model = resnet18(gl, num_classes=10)
    with gl.lab.record() as rec:
        model(gl.randn(2, 3, 32, 32)).sum()
    view = gl.lab.GraphView(rec)
    placement = view.scene.placement()
    stages = [f"g:layer{i}" for i in range(1, 5)]
    assert all(stage in placement.boxes for stage in stages)
    order = sorted(stages, key=lambda s: (round(placement.boxes[s].cy), placement.boxes[s].x))
    by_row = sorted(stages, key=lambda s: (placement.boxes[s].y, placement.boxes[s].x))
    assert order == stages and by_row == stages
    assert len({round(placement.boxes[s].y) for s in stages}) > 1  # more than one row
    assert placement.width <= 3200 and placement.height <= 1000
    view.close()

"""Wrap a long left-to-right drawing into rows, as a long line of text wraps on a page.

A level laid out in columns (``layout._Layered``) that comes out much wider than it is tall — a
chain of twelve transformer blocks, a ResNet's stages, an unrolled RNN — is cut between columns
into rows of about equal width, stacked top to bottom, each starting at the left. A cut goes where
few edges cross it. An edge that crosses a cut leaves its row at the right, runs back left along
the gap below that row and enters the next row from the left; each such return has its own track,
so two returns never share a line and never cross.
"""

from __future__ import annotations

import math

ROW_ASPECT = 2.0  # rows are chosen so that the drawing is about this much wider than tall (a notebook's canvas)
ROW_GAP = 26.0  # between two rows, besides the return tracks
TRACK_GAP = 8.0  # between two return tracks (and their vertical legs)
CUT_SLACK = 0.2  # a cut may move this fraction of a row's width away from even rows, to cross fewer edges


def row_starts(col_x: list, col_w: list, across: list, wrap_width: float, strip_height: float) -> list:
    """The first column of each row: ``[0]`` (one row) while the strip is at most ``wrap_width`` wide.

    ``across[c]``: how many edges cross between column c - 1 and column c. Wider strips get as many
    rows of at least ``wrap_width`` as bring the drawing nearest to ROW_ASPECT, cut where fewest cross."""
    n = len(col_x)
    width = col_x[-1] + col_w[-1] - col_x[0] if n else 0.0
    if n < 2 or width <= wrap_width:
        return [0]
    # k rows of width W/k and height ~strip_height + ROW_GAP each: W/k = ROW_ASPECT * k * (h + gap)
    row_width = max(wrap_width, math.sqrt(width * (strip_height + ROW_GAP) * ROW_ASPECT))
    rows = min(n, math.ceil(width / row_width))
    even = width / rows
    starts = [0]
    for j in range(1, rows):
        goal = col_x[0] + j * even
        later = range(starts[-1] + 1, n)
        if not later:
            break
        near = [c for c in later if abs(col_x[c] - goal) <= CUT_SLACK * even]
        near = near or [min(later, key=lambda c: abs(col_x[c] - goal))]
        starts.append(min(near, key=lambda c: (across[c], abs(col_x[c] - goal), c)))
    return starts


class Rows:
    """A level's columns cut into rows: which row each column is in, and each return's track.

    ``shift(lay)`` moves the level's columns, items and lanes into their rows (and sets its width
    and height); ``detour(row, key, y_from, y_to)`` is the return path of the crossing of the cut
    below ``row`` that leaves from item or lane ``key`` at ``y_from`` and enters the next row at ``y_to``.
    """

    def __init__(self, lay, starts: list, crossings: dict, room: tuple, gap_x: float):
        self.starts = starts
        n_layers = len(lay.layers)
        self.row_of_layer = []
        for r, start in enumerate(starts):
            end = starts[r + 1] if r + 1 < len(starts) else n_layers
            self.row_of_layer += [r] * (end - start)
        # crossings: cut (the row above it) -> {key: y_from}; a track per key, the topmost exit outermost
        self.tracks = {}
        most = 0
        for r, keys in crossings.items():
            order = sorted(keys, key=lambda k: (keys[k], k))
            most = max(most, len(order))
            for i, key in enumerate(order):
                self.tracks[(r, key)] = (i, len(order))
        margin = gap_x / 2 + max(most - 1, 0) * TRACK_GAP if most else 0.0
        top_room, left_room, right_room = room  # what the level keeps for its back edges' tracks and hooks
        self.left = max(margin, left_room)
        self.right = max(margin, right_room)
        self.gap_x = gap_x
        self._place(lay, crossings, top_room)

    def _place(self, lay, crossings, top_room) -> None:
        """Shift every column, item and lane into its row: rows start at the left margin, each below the
        one before it and the tracks of the returns between them."""
        layer, y, h = lay.layer, lay.y, lay.h
        n_rows = len(self.starts)
        top = [math.inf] * n_rows
        bottom = [-math.inf] * n_rows
        for v in range(len(y)):
            r = self.row_of_layer[layer[v]]
            top[r] = min(top[r], y[v] - h[v] / 2)
            bottom[r] = max(bottom[r], y[v] + h[v] / 2)
        dx = [self.left - lay.col_x[start] for start in self.starts]
        dy, self.bottom, at = [], [], top_room  # the tracks of back edges run above the first row
        for r in range(n_rows):
            shift = at - top[r]
            dy.append(shift)
            self.bottom.append(bottom[r] + shift)
            tracks = len(crossings.get(r, ()))
            at = self.bottom[r] + ROW_GAP + max(tracks - 1, 0) * TRACK_GAP
        self.dy = dy
        for v in range(len(y)):
            r = self.row_of_layer[layer[v]]
            lay.x[v] += dx[r]
            y[v] += dy[r]
        lay.col_x = [x + dx[self.row_of_layer[l]] for l, x in enumerate(lay.col_x)]
        self.row_left = [lay.col_x[start] for start in self.starts]
        self.row_right = []
        for r, start in enumerate(self.starts):
            end = self.starts[r + 1] if r + 1 < n_rows else len(lay.col_x)
            self.row_right.append(lay.col_x[end - 1] + lay.col_w[end - 1])
        lay.width = max(self.row_right) + self.right
        lay.height = self.bottom[-1]

    def detour(self, row: int, key, y_from: float, y_to: float) -> list:
        """Out past the right end of ``row``, down to this return's track, back left under the row,
        down to ``y_to`` beside the next row's start."""
        i, n = self.tracks[(row, key)]
        x_out = self.row_right[row] + self.gap_x / 2 + (n - 1 - i) * TRACK_GAP
        track = self.bottom[row] + ROW_GAP / 2 + (n - 1 - i) * TRACK_GAP
        x_in = self.row_left[row + 1] - self.gap_x / 2 - i * TRACK_GAP
        return [(x_out, y_from), (x_out, track), (x_in, track), (x_in, y_to)]

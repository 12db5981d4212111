"""A map drawn as runs: one SVG rect per run of equal cells along a row, not one per cell.

A 64 × 64 loss surface cut into 14 bands, or the playground's 40 × 40 grid of P(label 1) in a few tints,
has long runs of one colour; drawing each run as one rect keeps the picture small enough to redraw live.
"""

from __future__ import annotations


def row_runs(grid):
    """(row, start, stop, value) for each run of equal values along each row of a 2-D array."""
    rows, cols = grid.shape
    for row in range(rows):
        start = 0
        for col in range(1, cols + 1):
            if col == cols or grid[row, col] != grid[row, start]:
                yield row, start, col, grid[row, start]
                start = col

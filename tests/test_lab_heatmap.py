"""A map drawn as runs of equal cells covers every cell exactly once, with its own value."""

import numpy as np

from gradlab.lab.heatmap import row_runs


def test_the_runs_rebuild_the_grid_and_no_two_neighbours_in_a_row_share_a_value():
    grid = np.random.default_rng(0).integers(0, 3, size=(7, 11))
    rebuilt = np.full(grid.shape, -1)
    runs = list(row_runs(grid))
    for row, start, stop, value in runs:
        assert start < stop and (rebuilt[row, start:stop] == -1).all()
        rebuilt[row, start:stop] = value
    assert (rebuilt == grid).all()
    for (row, _, stop, value), (next_row, next_start, _, next_value) in zip(runs, runs[1:]):
        if row == next_row:
            assert next_start == stop and next_value != value
    assert len(list(row_runs(np.zeros((3, 5))))) == 3  # one run a row where a row is all one value

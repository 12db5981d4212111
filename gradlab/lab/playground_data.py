"""The playground's four 2-D datasets and the grid its decision boundary is drawn on.

Each set is ``gradlab.data.make_synthetic``'s (seeded, balanced, with Gaussian noise), named as in
TensorFlow Playground; labels come as a float column of 0s and 1s, what a one-logit classifier
trained with binary cross-entropy compares its output with.
"""

from __future__ import annotations

import numpy as np

from ..creation import from_numpy
from ..data import make_synthetic

# the playground's name -> make_synthetic's, in order of difficulty
DATASETS = {"blobs": "simple", "circles": "circle", "xor": "xor", "spirals": "spiral"}
EXTENT = 1.25  # the picture shows the square [-EXTENT, EXTENT]² (a point that noise pushed further out is not drawn)
GRID_CELLS = 40  # the boundary is the model's prediction at the centre of each of 40 × 40 cells


def make_dataset(name: str, n: int = 400, noise: float = 0.1, seed: int = 0):
    """``(X, y)``: X float32 (n, 2), y float32 (n, 1) of 0s and 1s, half of each; the same seed, the same points."""
    if name not in DATASETS:
        raise ValueError(f"Playground(dataset=...): no dataset {name!r}; choose one of "
                         f"{', '.join(map(repr, DATASETS))}")
    X, labels = make_synthetic(DATASETS[name], n=n, seed=seed, noise=noise)
    return X, labels.float().reshape(n, 1)


def grid_centres(cells: int = GRID_CELLS, extent: float = EXTENT):
    """The centres of a ``cells`` × ``cells`` grid over the picture's square, row by row from the top (y = +extent)
    and left to right in each row, as a float32 tensor of shape (cells², 2)."""
    ticks = -extent + (np.arange(cells) + 0.5) * (2 * extent / cells)
    xs, ys = np.meshgrid(ticks, ticks[::-1])
    return from_numpy(np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float32))

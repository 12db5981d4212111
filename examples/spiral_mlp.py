"""Two interleaved spirals told apart by a small MLP: the hardest of gradlab's 2-D toy sets.

No straight line separates the two arms, so the network has to bend the plane: two hidden layers of
ReLU units cut it into many small linear pieces that together follow the spiral. Run it with

    python examples/spiral_mlp.py

It trains to at least 95 % accuracy on its 1,000 points and draws the regions it learned (examples/README.md
gives the figure and time measured).
"""

from __future__ import annotations

import time

import gradlab as gl
import gradlab.nn as nn
from gradlab.data import DataLoader, TensorDataset, make_synthetic
from gradlab.training import evaluate, fit


def build_model(hidden: int = 64) -> nn.Module:
    """2 inputs (x1, x2) -> two hidden ReLU layers -> 2 scores (one per arm)."""
    return nn.Sequential(nn.Linear(2, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 2))


def draw(model: nn.Module, X, y, rows: int = 21, cols: int = 51) -> str:
    """The plane [-1.1, 1.1]² as text: '.' where the model says arm 0, '#' for arm 1, the points as o and x."""
    xs = gl.linspace(-1.1, 1.1, cols).expand(rows, cols)
    ys = gl.linspace(1.1, -1.1, rows)[:, None].expand(rows, cols)  # top row first
    grid = gl.stack([xs.reshape(-1), ys.reshape(-1)], 1)  # every (x1, x2) of the picture, one per row
    with gl.no_grad():
        regions = model(grid).argmax(1).reshape(rows, cols).tolist()
    canvas = [["#" if label else "." for label in row] for row in regions]
    for (x1, x2), label in zip(X.tolist(), y.tolist()):
        col, row = round((x1 + 1.1) / 2.2 * (cols - 1)), round((1.1 - x2) / 2.2 * (rows - 1))
        canvas[row][col] = "x" if label else "o"
    return "\n".join("".join(row) for row in canvas)


def main(epochs: int = 40, seed: int = 0, quiet: bool = False) -> float:
    """Train the MLP on the spiral; return its accuracy on the training points (0 to 1)."""
    gl.manual_seed(seed)
    X, y = make_synthetic("spiral", n=1000, seed=seed)
    train_loader = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)

    model = build_model()
    optimizer = gl.optim.Adam(model.parameters(), lr=0.01)
    scheduler = gl.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)  # big steps first, small at the end
    loss_fn = nn.CrossEntropyLoss()

    start = time.perf_counter()
    fit(model, train_loader, loss_fn, optimizer, epochs=epochs, scheduler=scheduler, progress=not quiet)
    seconds = time.perf_counter() - start

    # The accuracy fit reports is averaged over an epoch while the weights still move; measure the end result.
    final = evaluate(model, DataLoader(TensorDataset(X, y), batch_size=len(X)), loss_fn)
    if not quiet:
        print(draw(model, X, y))
        print(f"spiral: {final['accuracy']:.1%} of the {len(X)} training points right "
              f"(loss {final['loss']:.4f}) after {epochs} epochs, {seconds:.1f} s")
    return final["accuracy"]


if __name__ == "__main__":
    main()

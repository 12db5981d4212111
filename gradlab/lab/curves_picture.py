"""Loss curves over training: one line per curve (train, validation, ...), drawn in Python as SVG.

The picture of overfitting is two curves: the training loss going down for ever, the validation loss
turning up. ``loss_curves`` draws any such set on one linear axis, with an optional dashed mark at an
epoch (the best one, where early stopping keeps its checkpoint).
"""

from __future__ import annotations

import math

from .activation_picture import Picture, lines_svg


def loss_curves(curves: dict, title: str = "loss per epoch", *, mark: int | None = None) -> Picture:
    """``curves`` maps a name to its values per epoch (from epoch 0); ``mark`` an epoch to draw dashed."""
    if not isinstance(curves, dict) or not curves:
        raise TypeError(f"loss_curves(curves): give a dict of name -> list of losses per epoch, e.g. "
                        f"{{'train': train_losses, 'validation': val_losses}}; got {type(curves).__name__}")
    series = []
    for name, values in curves.items():
        values = [float(v) for v in values]
        if not values:
            raise ValueError(f"loss_curves: the curve {name!r} is empty; each curve needs a value per epoch")
        series.append((str(name), values))
    epochs = max(len(values) for _, values in series)
    if mark is not None and not (isinstance(mark, int) and 0 <= mark < epochs):
        raise ValueError(f"loss_curves(mark=...): mark is an epoch between 0 and {epochs - 1}, got {mark!r}")
    return lines_svg(title, list(range(epochs)), [(n, v + [math.nan] * (epochs - len(v))) for n, v in series],
                     log=False, kind="loss-curves", x_name="epoch", key_end="at the last epoch", mark=mark)

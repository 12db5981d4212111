"""``gl.lab.OptimizerRace``: gradlab's optimizers race down a 2-D loss surface, and you watch each step.

Python runs the race (``race.run_race``: the real optimizers, each stepping its own ``Parameter``)
and draws the whole picture (``race_picture.race_svg``); the front end (``widgets/optimizer_race.js``)
only moves the markers, the trails, the charts' cursor and the losses in the key to the step the
slider shows — play, pause and step need no kernel. The static ``image/svg+xml`` beside the widget is
the same picture at the last step, for GitHub, nbviewer and nbconvert.
"""

from __future__ import annotations

import json

from .frontend import bundle, stylesheet
from .race import RaceError, run_race, surface_of
from .race_picture import race_svg

try:
    import anywidget
    import traitlets
except ImportError as error:  # pragma: no cover - depends on the extra
    raise ImportError("gradlab's lab widgets need anywidget and ipywidgets: pip install 'gradlab[lab]'") from error

__all__ = ["OptimizerRace", "RaceError"]


class RacePanel(anywidget.AnyWidget):
    """The picture Python drew, each run's marker position and loss at every step, and the step shown (⇄)."""

    svg = traitlets.Unicode("").tag(sync=True)
    frames = traitlets.Unicode("[]").tag(sync=True)  # JSON: [{"name", "points": [[x, y], ...], "losses": [...]}]
    steps = traitlets.Int(0).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)  # the step the markers show; the slider sets it

    _esm = bundle("optimizer_race.js")
    _css = stylesheet()


class OptimizerRace:
    """Race optimizers from one start point on a 2-D loss: ``gl.lab.OptimizerRace("rosenbrock", {"SGD": lambda
    params: gl.optim.SGD(params, lr=1e-3), "Adam": lambda params: gl.optim.Adam(params, lr=0.05)}, steps=200)``.

    ``loss`` is a surface's name (``"rosenbrock"``, ``"ravine"``, ``"saddle"``) or a function of a point ``p``
    (a tensor of shape (2,)) returning one number, with ``extent=((x_low, x_high), (y_low, y_high))``;
    ``start`` moves the start. ``race.runs[i]`` holds each optimizer's positions, losses, gradients, steps and
    state (``runs[i].states["exp_avg"]``, one row per step); ``race.show(step)`` moves the markers there.
    """

    def __init__(self, loss, optimizers: dict, *, steps: int = 200, start=None, extent=None):
        self.surface = surface_of(loss, extent, start)
        self.runs = run_race(self.surface, optimizers, steps)
        self.steps = steps
        self._picture, frames = race_svg(self.surface, self.runs)
        data = [{"name": run.name, "points": frame, "losses": [_number(v) for v in run.losses.tolist()]}
                for run, frame in zip(self.runs, frames)]
        self.panel = RacePanel(svg=self._picture, frames=json.dumps(data), steps=steps, step=0)

    def run(self, name: str):
        """The ``Run`` of the optimizer called ``name``."""
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(f"OptimizerRace.run({name!r}): no optimizer of that name; the race has "
                       f"{', '.join(repr(r.name) for r in self.runs)}")

    def show(self, step: int) -> None:
        """Move the markers (and the charts' cursor) to ``step``, as the slider does."""
        if not isinstance(step, int) or isinstance(step, bool) or not 0 <= step <= self.steps:
            raise RaceError(f"OptimizerRace.show(step): step is a whole number from 0 to {self.steps}, got {step!r}")
        self.panel.step = step

    def to_svg(self, step: int | None = None) -> str:
        """The picture as SVG text, with the markers at ``step`` (the last step when None)."""
        return self._picture if step is None else race_svg(self.surface, self.runs, step)[0]

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus its picture as static SVG for GitHub, nbviewer and nbconvert."""
        bundle_ = self.panel._repr_mimebundle_(**kwargs)
        data, metadata = bundle_ if isinstance(bundle_, tuple) else (bundle_, {})
        return {**data, "image/svg+xml": self._picture, "text/plain": repr(self)}, metadata

    def __repr__(self):
        ends = ", ".join(f"{r.name} {r.losses[-1]:.3g}" for r in self.runs)
        return f"<gradlab.lab.OptimizerRace on {self.surface.name}, {self.steps} steps: final loss {ends}>"


def _number(v: float):
    """A loss as JSON can carry it: None where it is no longer finite."""
    return v if v == v and abs(v) != float("inf") else None

"""An optimizer race: real gradlab optimizers step one 2-D point down a loss surface, and every step is kept.

Each optimizer gets its own ``Parameter`` of shape (2,), starting at the same point, and runs the
training loop of any network — ``zero_grad``, loss, ``backward``, ``step`` — on the surface. After
each step the race keeps where the point is, the loss and gradient it saw, the step it took, and a
copy of every tensor in ``optimizer.state[p]`` (momentum buffer, ``exp_avg``, ``exp_avg_sq``, ...).
``race_picture.py`` draws it; ``optimizer_race.py`` animates it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..autograd.function import TrackedTensor
from ..autograd.grad_mode import no_grad
from ..creation import tensor
from ..dtypes import float64
from ..nn.parameter import Parameter
from ..optim.optimizer import Optimizer
from ..ops.joining import stack


class RaceError(ValueError):
    """A race asked for something it cannot run: the message says what was given and what to give."""


def rosenbrock(p):
    """(1 − x)² + 100 (y − x²)²: a curved, flat-bottomed valley; the minimum is at (1, 1)."""
    return (1 - p[0]) ** 2 + 100 * (p[1] - p[0] ** 2) ** 2


def ravine(p):
    """x² / 20 + 2 y²: a quadratic 40 times steeper across (y) than along (x); the minimum is at (0, 0)."""
    return p[0] ** 2 / 20 + 2 * p[1] ** 2


def saddle(p):
    """x² + y⁴ / 4 − y² / 2: a saddle at (0, 0) between two minima at (0, ±1)."""
    return p[0] ** 2 + p[1] ** 4 / 4 - p[1] ** 2 / 2


@dataclass(frozen=True)
class Surface:
    """A loss of a point ``p`` (a tensor of shape (2,)), the square of the plane to draw, where to start."""

    name: str
    loss: object
    extent: tuple  # ((x low, x high), (y low, y high))
    start: tuple
    minima: tuple = ()


SURFACES = {
    "rosenbrock": Surface("rosenbrock", rosenbrock, ((-2.0, 2.0), (-1.0, 3.0)), (-1.5, 2.5), ((1.0, 1.0),)),
    "ravine": Surface("ravine", ravine, ((-10.0, 10.0), (-4.0, 4.0)), (-9.0, 3.0), ((0.0, 0.0),)),
    "saddle": Surface("saddle", saddle, ((-2.0, 2.0), (-1.6, 1.6)), (1.8, 0.01), ((0.0, 1.0), (0.0, -1.0))),
}


@dataclass
class Run:
    """One optimizer's race: ``positions`` (steps + 1, 2) and their ``losses``, and per step its gradient,
    step and state.

    ``grads[t]`` is the gradient step t saw at ``positions[t]``; ``moves[t]`` is
    ``positions[t + 1] − positions[t]``; ``states[key][t]`` is ``optimizer.state[p][key]`` after step t
    (for each tensor of shape (2,) in it). ``stopped`` says why a run ended early (a non-finite loss)."""

    name: str
    optimizer: Optimizer
    parameter: Parameter
    positions: np.ndarray
    losses: np.ndarray
    grads: np.ndarray
    moves: np.ndarray
    states: dict = field(default_factory=dict)
    stopped: str = ""

    @property
    def steps(self) -> int:
        return len(self.moves)


def surface_of(loss, extent=None, start=None) -> Surface:
    """A ``Surface`` from a name in ``SURFACES`` or a function of a point, with ``extent``/``start`` to override."""
    if isinstance(loss, str):
        if loss not in SURFACES:
            raise RaceError(f"OptimizerRace: no surface named {loss!r}; the named ones are "
                            f"{', '.join(map(repr, SURFACES))}, or give a function of a point p (a tensor of shape (2,))")
        base = SURFACES[loss]
    elif callable(loss):
        if extent is None:
            raise RaceError("OptimizerRace: for a loss function of your own, give extent=((x_low, x_high), "
                            "(y_low, y_high)), the square of the plane to draw")
        name = getattr(loss, "__name__", "<lambda>")
        base = Surface("your loss" if name == "<lambda>" else name, loss, extent,
                       start if start is not None else (0.0, 0.0))
    else:
        raise RaceError(f"OptimizerRace: the loss is a surface's name ({', '.join(map(repr, SURFACES))}) or a "
                        f"function of a point p (a tensor of shape (2,)); got a {type(loss).__name__}")
    return Surface(base.name, base.loss, _extent(extent if extent is not None else base.extent),
                   _point(start if start is not None else base.start, "start"), base.minima)


def run_race(surface: Surface, optimizers: dict, steps: int) -> list:
    """Run every optimizer ``steps`` steps from ``surface.start``; one ``Run`` each, in the dict's order."""
    if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 10_000:
        raise RaceError(f"OptimizerRace(steps=...): steps is a whole number from 1 to 10000, got {steps!r}")
    if not isinstance(optimizers, dict) or not optimizers:
        raise RaceError("OptimizerRace: give the optimizers as a dict of name -> a function of the parameters, "
                        "e.g. {'Adam': lambda params: gl.optim.Adam(params, lr=0.1)}")
    _check_scalar_loss(surface)
    return [_run(name, make, surface, steps) for name, make in optimizers.items()]


def _run(name: str, make, surface: Surface, steps: int) -> Run:
    """The training loop, on one point: what a hand-written loop does, step for step."""
    p = Parameter(tensor(list(surface.start), dtype=float64))
    optimizer = make([p]) if callable(make) else make
    if not isinstance(optimizer, Optimizer):
        raise RaceError(f"OptimizerRace: the entry {name!r} should build an optimizer from the parameters it is "
                        f"given (lambda params: gl.optim.SGD(params, lr=0.01)); it gave a {type(optimizer).__name__}")
    positions, losses, grads, moves, states, stopped = [p.detach().numpy().copy()], [], [], [], {}, ""
    for t in range(steps):
        optimizer.zero_grad()
        loss = surface.loss(p)
        loss.backward()
        if not (math.isfinite(loss.item()) and np.isfinite(p.grad.numpy()).all()):
            stopped = f"stopped at step {t}: the loss or its gradient is no longer finite (the steps grew too large)"
            losses.append(loss.item())
            break
        losses.append(loss.item())
        grads.append(p.grad.numpy().copy())
        optimizer.step()
        positions.append(p.detach().numpy().copy())
        moves.append(positions[-1] - positions[-2])
        for key, value in optimizer.state[p].items():
            if isinstance(value, TrackedTensor) and tuple(value.shape) == (2,):
                states.setdefault(key, []).append(value.numpy().copy())
    if not stopped:
        with no_grad():
            losses.append(surface.loss(p).item())  # where the last step arrived
    return Run(name, optimizer, p, np.array(positions), np.array(losses), np.array(grads).reshape(-1, 2),
               np.array(moves).reshape(-1, 2), {k: np.array(v) for k, v in states.items()}, stopped)


def grid_losses(surface: Surface, cells: int) -> np.ndarray:
    """The loss at the centre of each of ``cells`` × ``cells`` squares of the extent, row by row from the top.

    The loss is first tried on all centres at once (a (2, n) tensor: p[0] is every x); where that gives
    something else than the point-by-point loss at a few centres, it is evaluated point by point."""
    (x0, x1), (y0, y1) = surface.extent
    xs = x0 + (np.arange(cells) + 0.5) * (x1 - x0) / cells
    ys = y1 - (np.arange(cells) + 0.5) * (y1 - y0) / cells
    gx, gy = np.meshgrid(xs, ys)
    points = np.stack([gx.ravel(), gy.ravel()])
    with no_grad():
        def one(i):
            return float(surface.loss(tensor(points[:, i].tolist(), dtype=float64)).item())
        try:
            every = surface.loss(stack([tensor(points[0], dtype=float64), tensor(points[1], dtype=float64)]))
            values = every.numpy().astype(np.float64) if isinstance(every, TrackedTensor) else None
        except Exception:  # the loss is not written element by element (a matmul, a sum): one point at a time
            values = None
        probes = [0, points.shape[1] // 3, points.shape[1] - 1]
        if values is None or values.shape != (points.shape[1],) or \
                not np.allclose([values[i] for i in probes], [one(i) for i in probes], rtol=1e-9, atol=1e-12):
            values = np.array([one(i) for i in range(points.shape[1])])
    return values.reshape(cells, cells)


def _check_scalar_loss(surface: Surface) -> None:
    p = tensor(list(surface.start), dtype=float64, requires_grad=True)
    try:
        loss = surface.loss(p)
    except Exception as error:
        raise RaceError(f"OptimizerRace: the loss raised {type(error).__name__} on the start point "
                        f"{surface.start}: {error}") from error
    if not isinstance(loss, TrackedTensor):
        raise RaceError(f"OptimizerRace: the loss should return a gradlab tensor (computed from p with gradlab's "
                        f"operations, so backward can run); it returned a {type(loss).__name__}")
    if loss.numel() != 1:
        raise RaceError(f"OptimizerRace: the loss should be one number (a scalar tensor), so that backward has "
                        f"one thing to differentiate; it returned shape {tuple(loss.shape)}. Sum or average it "
                        "into one number")
    if loss.grad_fn is None:
        raise RaceError("OptimizerRace: the loss does not depend on p through gradlab's operations (no graph): "
                        "compute it from p[0] and p[1] with tensor operations, not .item() or numpy")


def _point(value, what: str) -> tuple:
    array = value.detach().numpy() if isinstance(value, TrackedTensor) else np.asarray(value, dtype=object)
    if array.shape != (2,) or not all(isinstance(v, (int, float, np.floating, np.integer)) and
                                      not isinstance(v, bool) and math.isfinite(v) for v in array.tolist()):
        raise RaceError(f"OptimizerRace({what}=...): {what} is a point of the plane, two finite numbers (x, y); "
                        f"got {value!r} (shape {array.shape})")
    return (float(array[0]), float(array[1]))


def _extent(value) -> tuple:
    try:
        (x0, x1), (y0, y1) = value
        x0, x1, y0, y1 = (float(v) for v in (x0, x1, y0, y1))
    except (TypeError, ValueError):
        raise RaceError(f"OptimizerRace(extent=...): extent is ((x_low, x_high), (y_low, y_high)); "
                        f"got {value!r}") from None
    if not (x0 < x1 and y0 < y1):
        raise RaceError(f"OptimizerRace(extent=...): each range goes from low to high; got {value!r}")
    return ((x0, x1), (y0, y1))

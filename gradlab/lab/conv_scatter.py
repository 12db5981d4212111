"""``gl.lab.ConvScatter``: a convolution's backward, one output position at a time, as a scatter-add.

Each output ``Y[i, j]`` came from one window of the input, so its gradient ``g = ∂L/∂Y[i, j]`` goes back
to that window only: ``∂L/∂X[window] += g · W`` and ``∂L/∂W += g · X[window]``. After every position has
been scattered, the two sums are the engine's conv2d backward, which the stepper computes too and compares.
Python does the arithmetic and draws every step (``conv_picture.scatter_svg``); the front end
(``widgets/conv_scatter.js``) only shows the step asked for: step, back, run to the end need no kernel.
"""

from __future__ import annotations

import json

import numpy as np

from .conv_picture import scatter_svg
from .frontend import bundle, stylesheet

try:
    import anywidget
    import traitlets
except ImportError as error:  # pragma: no cover - depends on the extra
    raise ImportError("gradlab's lab widgets need anywidget and ipywidgets: pip install 'gradlab[lab]'") from error

__all__ = ["ConvScatter", "ConvScatterError"]

MAX_STEPS = 400  # one drawn picture per step: a stepper is for small examples


class ConvScatterError(ValueError):
    """A ConvScatter asked of something it cannot step (a shape, a stride, a step out of range)."""


class ConvScatterPanel(anywidget.AnyWidget):
    """One SVG per step (step 0: nothing scattered yet) and the step shown; the buttons set it."""

    frames = traitlets.Unicode("[]").tag(sync=True)  # JSON: [svg of step 0, svg of step 1, ...]
    steps = traitlets.Int(0).tag(sync=True)
    step = traitlets.Int(0).tag(sync=True)

    _esm = bundle("conv_scatter.js")
    _css = stylesheet()


class ConvScatter:
    """Step the backward of ``Y = conv2d(x, weight, stride, padding)`` for one channel, as a scatter-add.

    ``x`` is (H, W) or (1, 1, H, W), ``weight`` (k, k) or (1, 1, k, k), ``grad_output`` is ∂L/∂Y, the shape of
    Y (ones when not given). ``scatter.dx(step)`` and ``scatter.dw(step)`` are the sums after ``step`` output
    positions; ``scatter.engine_dx`` and ``scatter.engine_dw`` are what the engine's backward gives.
    """

    def __init__(self, x, weight, grad_output=None, *, stride: int = 1, padding: int = 0):
        x_np, w_np = _plane(x, "x"), _plane(weight, "weight")
        for name, value in (("stride", stride), ("padding", padding)):
            if not isinstance(value, int) or isinstance(value, bool) or value < (1 if name == "stride" else 0):
                raise ConvScatterError(f"ConvScatter: {name} is a whole number ≥ {1 if name == 'stride' else 0}, "
                                       f"got {value!r}")
        k = w_np.shape[0]
        if w_np.shape[0] != w_np.shape[1]:
            raise ConvScatterError(f"ConvScatter: the kernel is square here, got weight of shape {w_np.shape}")
        size = [(n + 2 * padding - k) // stride + 1 for n in x_np.shape]
        if min(size) < 1:
            raise ConvScatterError(f"ConvScatter: a {k}×{k} kernel does not fit in an input of shape {x_np.shape} "
                                   f"with padding {padding}: make the kernel smaller or pad more")
        dy = np.ones(size) if grad_output is None else _plane(grad_output, "grad_output")
        if dy.shape != tuple(size):
            raise ConvScatterError(f"ConvScatter: grad_output has the shape of the output, {size[0]}×{size[1]} "
                                   f"((H + 2p − k) // s + 1 each way), got {dy.shape[0]}×{dy.shape[1]}")
        if size[0] * size[1] > MAX_STEPS:
            raise ConvScatterError(f"ConvScatter: {size[0] * size[1]} output positions is too many to step "
                                   f"(at most {MAX_STEPS}); take a smaller input")
        self.x, self.weight, self.grad_output = x_np, w_np, dy
        self.stride, self.padding, self.kernel = stride, padding, k
        self.positions = [(i, j) for i in range(size[0]) for j in range(size[1])]
        self.steps = len(self.positions)
        self.x_padded = np.pad(x_np, padding)
        self._dx, self._dw = self._scatter()
        self.engine_dx, self.engine_dw = _engine_backward(x_np, w_np, dy, stride, padding)
        self._frames = [scatter_svg(self, step) for step in range(self.steps + 1)]
        self.panel = ConvScatterPanel(frames=json.dumps(self._frames), steps=self.steps, step=0)

    def _scatter(self):
        """Every step's running sums: (steps + 1, padded H, padded W) for ∂L/∂X and (steps + 1, k, k) for ∂L/∂W."""
        k, s = self.kernel, self.stride
        dx, dw = np.zeros_like(self.x_padded), np.zeros_like(self.weight)
        dxs, dws = [dx.copy()], [dw.copy()]
        for i, j in self.positions:
            g = self.grad_output[i, j]
            dx[i * s:i * s + k, j * s:j * s + k] += g * self.weight
            dw += g * self.x_padded[i * s:i * s + k, j * s:j * s + k]
            dxs.append(dx.copy())
            dws.append(dw.copy())
        return np.stack(dxs), np.stack(dws)

    def window(self, step: int) -> tuple:
        """(row, column) of the top-left corner, in the padded input, of the window step ``step`` scatters to."""
        i, j = self.positions[self._step(step) - 1] if step else (None, None)
        return (None, None) if i is None else (i * self.stride, j * self.stride)

    def dx_padded(self, step: int | None = None) -> np.ndarray:
        """∂L/∂X after ``step`` positions, over the padded input (the padding's share is dropped in ``dx``)."""
        return self._dx[self._step(step)].copy()

    def dx(self, step: int | None = None) -> np.ndarray:
        """∂L/∂X after ``step`` output positions have been scattered (the last step when None)."""
        p = self.padding
        full = self._dx[self._step(step)]
        return full[p:full.shape[0] - p, p:full.shape[1] - p].copy()

    def dw(self, step: int | None = None) -> np.ndarray:
        """∂L/∂W after ``step`` output positions have been scattered (the last step when None)."""
        return self._dw[self._step(step)].copy()

    @property
    def step(self) -> int:
        """The step the widget shows (the buttons move it)."""
        return self.panel.step

    def show(self, step: int) -> None:
        """Show ``step`` in the widget: 0 is before any scatter, ``steps`` after the last."""
        self.panel.step = self._step(step)

    def to_svg(self, step: int | None = None) -> str:
        """The picture of ``step`` (the last when None) as SVG text."""
        return self._frames[self._step(step)]

    def _step(self, step) -> int:
        if step is None:
            return self.steps
        if not isinstance(step, (int, np.integer)) or isinstance(step, bool) or not 0 <= step <= self.steps:
            raise ConvScatterError(f"ConvScatter: step is a whole number from 0 to {self.steps}, got {step!r}")
        return int(step)

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, plus the last step's picture as static SVG for GitHub, nbviewer and nbconvert."""
        bundle_ = self.panel._repr_mimebundle_(**kwargs)
        data, metadata = bundle_ if isinstance(bundle_, tuple) else (bundle_, {})
        return {**data, "image/svg+xml": self._frames[-1], "text/plain": repr(self)}, metadata

    def __repr__(self):
        error = float(np.abs(self.dx() - self.engine_dx).max())
        return (f"<gradlab.lab.ConvScatter: {self.x.shape[0]}×{self.x.shape[1]} input, {self.kernel}×{self.kernel} "
                f"kernel, stride {self.stride}, padding {self.padding}: {self.steps} steps; "
                f"largest difference from the engine's ∂L/∂X {error:.1e}>")


def _plane(value, name: str) -> np.ndarray:
    """One channel as a float64 array: (H, W), or (1, 1, H, W) squeezed."""
    from ..ops._common import TrackedTensor
    array = value.detach().cpu().numpy() if isinstance(value, TrackedTensor) else np.asarray(value)
    if array.ndim == 4 and array.shape[:2] == (1, 1):
        array = array[0, 0]
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.number):
        raise ConvScatterError(f"ConvScatter: {name} is one channel of numbers, shape (H, W) or (1, 1, H, W), "
                               f"got shape {tuple(array.shape)} of {array.dtype}")
    return array.astype(np.float64)


def _engine_backward(x, w, dy, stride, padding):
    """The engine's conv2d backward on the same numbers (float64): (∂L/∂X, ∂L/∂W)."""
    from ..creation import tensor
    from ..dtypes import float64
    from ..nn.functional import conv2d
    xt = tensor(x[None, None], dtype=float64, requires_grad=True)
    wt = tensor(w[None, None], dtype=float64, requires_grad=True)
    conv2d(xt, wt, stride=stride, padding=padding).backward(tensor(dy[None, None], dtype=float64))
    return xt.grad.numpy()[0, 0], wt.grad.numpy()[0, 0]

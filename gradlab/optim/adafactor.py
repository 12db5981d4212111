"""Adafactor: Adam-like steps whose second moment of a matrix is stored as one row and one column.

For an m×n weight the running mean of g² costs m + n numbers instead of m·n: their outer product,
over their mean, estimates it (Shazeer & Stern, 2018). Steps are relative to the parameter's size.
"""

from __future__ import annotations

import numpy as np

from .optimizer import Optimizer, _advance, _kernel_switches, _lerp_, _new_step

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    """v ≈ (row mean of g²) ⊗ (column mean of g²) / mean(row); u = g / √v, shrunk to RMS ≤ ``d``;
    p -= max(eps2, RMS(p)) * min(lr, 1/√t) * u.

    The averages move by t^beta2_decay (1 at the first step, then less): no bias correction needed.
    ``eps=(eps1, eps2)``: eps1 (default the dtype's machine epsilon) keeps v away from 0, eps2 keeps
    steps alive for parameters near 0. ``weight_decay`` is decoupled: p shrinks by lr * weight_decay.
    """

    _state_keys = ("step",)
    _optional_state_keys = ("row_var", "col_var", "variance")  # a matrix's rows and columns, or a vector's
    _decoupled_weight_decay = True

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 maximize=False, foreach=None):
        for ok, message in ((0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}"),
                            (beta2_decay <= 0.0, f"beta2_decay should be <= 0 but is: {beta2_decay}"),
                            (eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}"),
                            (0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}"),
                            (1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}"),
                            (0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")):
            if not ok:
                raise ValueError(message)
        defaults = dict(lr=lr, beta2_decay=beta2_decay, eps=tuple(eps), d=d, weight_decay=weight_decay,
                        maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        b = p.device.backend
        if p.ndim > 1:  # factored: one mean per row and one per column of the last two dims
            rows, cols = list(p.shape), list(p.shape)
            rows[-1], cols[-2] = 1, 1
            return dict(step=_new_step(), row_var=p._wrap(b.zeros(tuple(rows), p.dtype)),
                        col_var=p._wrap(b.zeros(tuple(cols), p.dtype)))
        return dict(step=_new_step(), variance=p._wrap(b.zeros(p.shape, p.dtype)))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        step = _advance(state)
        eps1, eps2 = group["eps"]
        if eps1 is None:
            eps1 = float(np.finfo(p.array.dtype).eps)
        weight = step ** group["beta2_decay"]
        relative = min(group["lr"], 1 / step ** 0.5)
        alpha = max(eps2, _rms(b, p.array)) * relative
        square = b.mul(grad, grad)
        if p.ndim > 1:
            row_var = _lerp_(state["row_var"], b.div(b.sum(square, -1, True), p.shape[-1]), weight)
            col_var = _lerp_(state["col_var"], b.div(b.sum(square, -2, True), p.shape[-2]), weight)
            row_mean = b.div(b.sum(row_var, -2, True), p.shape[-2])
            estimate = b.div(b.matmul(row_var, col_var), b.maximum(row_mean, eps1))
        else:
            estimate = _lerp_(state["variance"], square, weight)
        update = b.mul(b.div(1.0, b.sqrt(b.maximum(estimate, eps1 * eps1))), grad)
        clip = max(1.0, _rms(b, update) / group["d"])  # an update of RMS above d is scaled down to d
        return b.mul(update, alpha / clip)


def _rms(b, a) -> float:
    """The root mean square of an array's elements, ‖a‖ / √numel, as a Python number."""
    return float(b.to_numpy(b.sqrt(b.sum(b.mul(a, a))))) / (a.size ** 0.5)

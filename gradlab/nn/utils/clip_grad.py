"""Gradient clipping: rescale (or clamp) the gradients in place before ``optimizer.step()``.

``clip_grad_norm_`` treats all gradients as one long vector: if its norm exceeds ``max_norm``
every gradient is scaled by the same factor, so the update keeps its direction.
"""

from __future__ import annotations

import types
import warnings

from ...autograd.grad_mode import no_grad
from ...linalg import vector_norm
from ...ops.shape import stack
from ...tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]


def _grads(parameters) -> list:
    if isinstance(parameters, Tensor):
        return [parameters.grad] if parameters.grad is not None else []
    is_generator = isinstance(parameters, types.GeneratorType)
    parameters = list(parameters)
    if is_generator and not parameters:
        warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None) -> Tensor:
    """Scale all gradients together so that their joint ``norm_type``-norm is at most ``max_norm``.

    Returns the total norm before clipping (a 0-d tensor). ``foreach`` is accepted for
    compatibility: gradlab always clips in one pass over the gradients.
    """
    grads = _grads(parameters)
    norm_type, max_norm = float(norm_type), float(max_norm)
    if not grads:
        return Tensor(0.0)
    device = grads[0].device
    total_norm = vector_norm(stack([vector_norm(g, norm_type).to(device) for g in grads]), norm_type)
    if error_if_nonfinite and (total_norm.isnan() | total_norm.isinf()).item():
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`"
        )
    clip_coef = (max_norm / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(clip_coef.to(g.device))
    return total_norm


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """Deprecated spelling of ``clip_grad_norm_`` (kept as in PyTorch)."""
    warnings.warn("`gradlab.nn.utils.clip_grad_norm` is now deprecated in favor of `gradlab.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    for g in _grads(parameters):
        g.clamp_(min=-clip_value, max=clip_value)

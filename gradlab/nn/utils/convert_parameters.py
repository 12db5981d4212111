"""All parameters as one flat vector, and back: for optimizers and tools that see a model as a point."""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...ops.shape import cat
from ...tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _same_device(params) -> None:
    if len({p.device for p in params}) > 1:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")


def parameters_to_vector(parameters) -> Tensor:
    """Concatenate the parameters, each flattened, into one 1-D tensor (differentiable)."""
    params = list(parameters)
    _same_device(params)
    return cat([p.reshape(-1) for p in params])


def vector_to_parameters(vec, parameters) -> None:
    """Make each parameter's data the next slice of ``vec`` (a view of it, as in PyTorch)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected gradlab.Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    _same_device(params)
    needed = sum(p.numel() for p in params)
    if vec.numel() < needed:
        raise RuntimeError(f"vector_to_parameters: the vector has {vec.numel()} elements but the parameters need "
                           f"{needed}; build it with parameters_to_vector(model.parameters())")
    pointer = 0
    with no_grad():
        for param in params:
            n = param.numel()
            chunk = vec[pointer:pointer + n].view_as(param)
            param.array, param.device = chunk.array, chunk.device
            pointer += n

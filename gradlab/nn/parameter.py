"""``Parameter``: a tensor that a Module learns, found by ``module.parameters()``.

Assigning a Parameter to a module attribute registers it; it requires grad by default. Any
operation on it returns a plain Tensor, so only the weights themselves are Parameters.
"""

from __future__ import annotations

from ..tensor import Tensor, _init


class Parameter(Tensor):
    """A leaf tensor marked as a learnable weight of a Module (``torch.nn.Parameter``)."""

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = Tensor([])
        if not isinstance(data, Tensor):
            data = Tensor(data)
        _init(self, data.array, data.device)  # shares memory with data, as PyTorch does
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self):
        return (_rebuild_parameter, (Tensor.__reduce__(self), self.requires_grad))

    def __deepcopy__(self, memo):
        copy = Parameter(Tensor.__deepcopy__(self.detach(), memo), self.requires_grad)
        if self.grad is not None:
            copy.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = copy
        return copy


def _rebuild_parameter(tensor_reduce, requires_grad):
    rebuild, args = tensor_reduce
    return Parameter(rebuild(*args).detach(), requires_grad)

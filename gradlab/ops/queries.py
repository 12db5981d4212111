"""Questions about a tensor that PyTorch asks as functions: ``is_signed``, ``is_nonzero``, ``is_same_size``,
``typename``."""

from __future__ import annotations

from ._common import TrackedTensor, describe


def _tensor(op: str, input):
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input


def is_signed(input) -> bool:
    """Whether the dtype holds negative numbers (floats and intN: yes; bool and uintN: no)."""
    return _tensor("is_signed", input).dtype.is_signed


def is_nonzero(input) -> bool:
    """The truth of a one-element tensor; any other size is an error, as ``bool(tensor)`` is."""
    _tensor("is_nonzero", input)
    n = input.numel()
    if n != 1:
        kind = "no values" if n == 0 else "more than one value"
        raise RuntimeError(f"Boolean value of Tensor with {kind} is ambiguous (is_nonzero got {describe(input)})")
    return bool(input.item())


def is_same_size(input, other) -> bool:
    """Whether two tensors have the same shape."""
    return tuple(_tensor("is_same_size", input).shape) == tuple(_tensor("is_same_size", other).shape)


def typename(obj) -> str:
    """A tensor's legacy type name ('gradlab.FloatTensor'); for anything else its module and qualified name."""
    if isinstance(obj, TrackedTensor):
        return obj.type()
    module, qualname = getattr(obj, "__module__", "") or "", getattr(obj, "__qualname__", None)
    if qualname is None:
        qualname = getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


class QueryMethods:
    """Tensor's query methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def is_signed(self) -> bool:
        return is_signed(self)

    def is_nonzero(self) -> bool:
        return is_nonzero(self)

    def is_same_size(self, other) -> bool:
        return is_same_size(self, other)

"""``gradlab.typename``: the name PyTorch gives an object's type in messages ('gradlab.FloatTensor', 'int')."""

from __future__ import annotations

from .tensor import Tensor


def typename(obj) -> str:
    """A tensor's legacy type name ('gradlab.FloatTensor'); for anything else its module and qualified name."""
    if isinstance(obj, Tensor):
        return obj.type()
    module, qualname = getattr(obj, "__module__", "") or "", getattr(obj, "__qualname__", None)
    if qualname is None:
        qualname = getattr(obj, "__name__", None)
    if qualname is None:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"

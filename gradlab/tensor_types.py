"""PyTorch's legacy tensor types: ``gradlab.FloatTensor([1, 2])``, ``isinstance(t, gradlab.LongTensor)``.

Before dtypes were objects, each dtype had a tensor class of its own, and old scripts still use
them. Here each is a small stand-in: calling it makes a ``Tensor`` of its dtype (from data, or
zeros of a size), and ``isinstance`` asks about a tensor's dtype. New code passes ``dtype=``.
"""

from __future__ import annotations

from . import dtypes as dt
from .tensor import _LEGACY_NAMES, Tensor


class _LegacyTensorType(type):
    """The class of each legacy type: it makes tensors, and recognises them by dtype."""

    def __call__(cls, *data_or_size, device=None) -> Tensor:
        return Tensor(*data_or_size, dtype=cls.dtype, device=device)

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __repr__(cls) -> str:
        return f"<class 'gradlab.{cls.__name__}'>"


def _legacy_type(dtype: dt.DType, name: str) -> type:
    doc = f"A {dtype.name} tensor, PyTorch's legacy way: ``{name}(data)`` or ``{name}(*size)`` (zeros)."
    return _LegacyTensorType(name, (), {"dtype": dtype, "__doc__": doc, "__module__": "gradlab"})


LEGACY_TYPES = {name: _legacy_type(dtype, name) for dtype, name in _LEGACY_NAMES.items()}
globals().update(LEGACY_TYPES)
__all__ = sorted(LEGACY_TYPES)


class _VariableType(type):
    def __call__(cls, data, requires_grad: bool = False, volatile: bool = False) -> Tensor:
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()  # the same memory, as a leaf of its own
        return out.requires_grad_(True) if requires_grad else out

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableType):
    """PyTorch's old autograd wrapper, kept for old scripts: ``Variable(t, requires_grad=True)`` is
    ``t.detach().requires_grad_()``. Since PyTorch 0.4 every tensor is a Variable."""

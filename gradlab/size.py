"""``gradlab.Size``: a shape as PyTorch spells it, a tuple of ints that also knows its ``numel()``.

``x.shape`` and ``x.size()`` are Sizes, as in PyTorch: ``print(x.shape)`` shows ``gradlab.Size([3, 4])``
(PyTorch: ``torch.Size([3, 4])``), and a Size is still a tuple, equal to the plain tuple of the
same ints (``x.shape == (3, 4)``). Ops read their arrays' own shapes (``x.array.shape``), so the hot
path never builds one.
"""

from __future__ import annotations

import operator

_PACKAGE = __name__.partition(".")[0]  # "gradlab": the name a Size prints with


class Size(tuple):
    """An immutable shape: ``Size([2, 3]).numel() == 6``; slicing and ``+`` give Sizes again."""

    __slots__ = ()

    def __new__(cls, sizes=()):
        try:
            values = tuple(operator.index(s) for s in sizes)
        except TypeError:
            raise TypeError(f"Size: expected a sequence of integers, got {sizes!r}") from None
        return super().__new__(cls, values)

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (1 for the empty shape of a scalar)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return _of(Size, item) if index.__class__ is slice else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _of(Size, tuple.__add__(self, _ints(other)))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return _of(Size, tuple.__add__(_ints(other), self))

    def __mul__(self, times):
        return _of(Size, tuple.__mul__(self, times))

    __rmul__ = __mul__

    def __repr__(self):
        return f"{_PACKAGE}.Size({list(self)})"

    def __reduce__(self):
        return (Size, (tuple(self),))


_of = tuple.__new__  # a Size from ints already checked: shapes are read and sliced on every op, so no check again


def _ints(sizes: tuple) -> tuple:
    """sizes as a tuple of ints (checked unless it is one already)."""
    return sizes if all(n.__class__ is int for n in sizes) else Size(sizes)

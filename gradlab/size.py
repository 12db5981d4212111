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

    @classmethod
    def of(cls, shape: tuple) -> "Size":
        """The Size of a tuple of ints that is already a shape (an array's): made without checking each."""
        return tuple.__new__(cls, shape)

    def numel(self) -> int:
        """The number of elements a tensor of this shape holds (1 for the empty shape of a scalar)."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, index):
        item = tuple.__getitem__(self, index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __mul__(self, times):
        return Size(tuple(self) * times)

    __rmul__ = __mul__

    def __repr__(self):
        return f"{_PACKAGE}.Size({list(self)})"

    def __reduce__(self):
        return (Size, (tuple(self),))

"""``gradlab.Size``: a shape as PyTorch spells it, a tuple of ints that also knows its ``numel()``.

``Tensor.shape`` stays a plain tuple (it is read on every op, and a Size would cost a construction
each time); ``gradlab.Size((2, 3))`` builds one where a program asks for it, and compares equal to
the tuple, so ``x.shape == gradlab.Size([2, 3])`` holds.
"""

from __future__ import annotations

import operator


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
        return f"gradlab.Size({list(self)})"

    def __reduce__(self):
        return (Size, (tuple(self),))

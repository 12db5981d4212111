"""Logical and bitwise ops, and the operators & | ^ ~ << >> that PyTorch maps onto them.

``logical_and`` reads every dtype as true/false and answers in bool; ``bitwise_and`` works on the
bits of integer and bool tensors (on bools it is the logical op), and floats are refused as in
PyTorch. None of them has a gradient: their results are integers or bools.
"""

from __future__ import annotations

from ._common import TrackedTensor, describe
from .arithmetic import LogicalAnd, LogicalOr, LogicalXor
from .binary import binary, number_first, require_tensor
from .elementwise import elementwise, logical_not


def _bitwise_not(b, a):
    return b.logical_not(a) if b.dtype_of(a).name == "bool" else b.bitwise_not(a)


_NO_GRADIENT = "no gradient (integer or bool output)"

BitwiseAnd = binary("bitwise_and", lambda b, x, y: b.bitwise_and(x, y), inputs="bits",
                    doc="a & b on the bits of integers (logical and on bools): no gradient flows through it.",
                    derivative=_NO_GRADIENT)
BitwiseOr = binary("bitwise_or", lambda b, x, y: b.bitwise_or(x, y), inputs="bits",
                   doc="a | b on the bits of integers (logical or on bools): no gradient flows through it.",
                   derivative=_NO_GRADIENT)
BitwiseXor = binary("bitwise_xor", lambda b, x, y: b.bitwise_xor(x, y), inputs="bits",
                    doc="a ^ b on the bits of integers (logical xor on bools): no gradient flows through it.",
                    derivative=_NO_GRADIENT)
BitwiseLeftShift = binary("bitwise_left_shift", lambda b, x, y: b.left_shift(x, y), inputs="integers",
                          doc="a << b, integers shifted left (0 once shifted past the width): no gradient.",
                          derivative=_NO_GRADIENT)
BitwiseRightShift = binary("bitwise_right_shift", lambda b, x, y: b.right_shift(x, y), inputs="integers",
                           doc="a >> b, integers shifted right keeping the sign: no gradient.",
                           derivative=_NO_GRADIENT)


def _bitwise_not_dtype(op, x):
    if x.dtype.is_floating_point:
        raise TypeError(f"{op}: ~ (operator.invert) is only implemented on integer and Boolean-type tensors, got "
                        f"{describe(x)}; for a mask use ~(x > 0) or logical_not(x)")
    return x


BitwiseNot = elementwise("bitwise_not", _bitwise_not, inputs="any",
                         doc="~x, every bit flipped (logical not on bools): no gradient flows through it.",
                         derivative=_NO_GRADIENT)


def _number_or_tensor(function, op):
    """A bitwise op that takes a Python number on either side, as torch.bitwise_and(3, x) does."""
    def call(input, other):
        if not isinstance(input, TrackedTensor):
            input = number_first(op, input, other)
        return function.apply(input, other)
    call.__name__ = call.__qualname__ = op
    call.__doc__ = function.__doc__.split(":")[0] + ", elementwise with broadcasting."
    return call


bitwise_and = _number_or_tensor(BitwiseAnd, "bitwise_and")
bitwise_or = _number_or_tensor(BitwiseOr, "bitwise_or")
bitwise_xor = _number_or_tensor(BitwiseXor, "bitwise_xor")
bitwise_left_shift = _number_or_tensor(BitwiseLeftShift, "bitwise_left_shift")
bitwise_right_shift = _number_or_tensor(BitwiseRightShift, "bitwise_right_shift")


def bitwise_not(input):
    """~x: every bit flipped for integers, logical not for bools (floats are refused)."""
    return BitwiseNot.apply(_bitwise_not_dtype("bitwise_not", input))


def logical_and(input, other):
    """x and y elementwise, reading nonzero as true; a bool result."""
    require_tensor("logical_and", other)
    return LogicalAnd.apply(input, other)


def logical_or(input, other):
    require_tensor("logical_or", other)
    return LogicalOr.apply(input, other)


def logical_xor(input, other):
    require_tensor("logical_xor", other)
    return LogicalXor.apply(input, other)


class BitwiseMethods:
    """Tensor's logical and bitwise methods, and the operators & | ^ ~ << >> (mixed into gradlab.Tensor)."""

    __slots__ = ()

    bitwise_and, bitwise_or, bitwise_xor, bitwise_not = bitwise_and, bitwise_or, bitwise_xor, bitwise_not
    bitwise_left_shift, bitwise_right_shift = bitwise_left_shift, bitwise_right_shift
    logical_and, logical_or, logical_xor, logical_not = logical_and, logical_or, logical_xor, logical_not

    __and__ = __rand__ = bitwise_and  # and, or, xor are symmetric: 2 & x is x & 2
    __or__ = __ror__ = bitwise_or
    __xor__ = __rxor__ = bitwise_xor
    __lshift__, __rshift__ = bitwise_left_shift, bitwise_right_shift

    def __invert__(self):
        return BitwiseNot.apply(_bitwise_not_dtype("~", self))

    def __rlshift__(self, other):
        return bitwise_left_shift(other, self)

    def __rrshift__(self, other):
        return bitwise_right_shift(other, self)

    def __iand__(self, other):
        return self.bitwise_and_(other)

    def __ior__(self, other):
        return self.bitwise_or_(other)

    def __ixor__(self, other):
        return self.bitwise_xor_(other)

    def __ilshift__(self, other):
        return self.bitwise_left_shift_(other)

    def __irshift__(self, other):
        return self.bitwise_right_shift_(other)

"""Comparisons and tests: eq … ge as functions, isclose/allclose/equal, isin, and the dtype questions.

The elementwise comparisons are the Functions of ``arithmetic`` (their results are bools, so they
pass no gradient); here are their functional forms and PyTorch's other names for them, and the
tests built on them, which answer with bool tensors or, for allclose/equal, Python bools.
"""

from __future__ import annotations

import math

from ..dtypes import bool_, float64
from ._common import TrackedTensor, describe, shape_str
from .arithmetic import Eq, Ge, Gt, Le, Lt, Ne
from .binary import require_tensor
from .elementwise import elementwise


def _comparison(function, op: str, symbol: str):
    """torch.eq(input, other) and its kin: input a tensor, other a tensor or a Python number."""
    def compare(input, other):
        require_tensor(op, input, "input", 1)
        return function.apply(input, other)

    compare.__name__ = compare.__qualname__ = op
    compare.__doc__ = f"input {symbol} other elementwise (other a tensor or a number, broadcasting): a bool tensor."
    return compare


eq = _comparison(Eq, "eq", "==")
ne = _comparison(Ne, "ne", "!=")
lt = _comparison(Lt, "lt", "<")
le = _comparison(Le, "le", "<=")
gt = _comparison(Gt, "gt", ">")
ge = _comparison(Ge, "ge", ">=")
greater = _comparison(Gt, "greater", ">")
greater_equal = _comparison(Ge, "greater_equal", ">=")
less = _comparison(Lt, "less", "<")
less_equal = _comparison(Le, "less_equal", "<=")
not_equal = _comparison(Ne, "not_equal", "!=")


Isposinf = elementwise("isposinf", lambda b, a: b.eq(a, math.inf), inputs="any",
                       doc="isposinf(x): a test with a bool result, so no gradient flows through it.",
                       derivative="no gradient (bool output)")
Isneginf = elementwise("isneginf", lambda b, a: b.eq(a, -math.inf), inputs="any",
                       doc="isneginf(x): a test with a bool result, so no gradient flows through it.",
                       derivative="no gradient (bool output)")
Isreal = elementwise("isreal", lambda b, a: b.ones(a.shape, bool_), inputs="any",
                     doc="isreal(x): True for every element of a real tensor; a bool result, so no gradient.",
                     derivative="no gradient (bool output)")


def isposinf(input):
    return Isposinf.apply(input)


def isneginf(input):
    return Isneginf.apply(input)


def isreal(input):
    """True where the imaginary part is 0: everywhere, since gradlab's tensors are real."""
    return Isreal.apply(input)


def _check_tolerances(op: str, rtol, atol):
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value < 0:
            raise RuntimeError(f"{op}: {name} must be greater than or equal to zero, but got {value}")


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """``|input − other| ≤ atol + rtol · |other|`` elementwise (equal infinities are close; NaN only with equal_nan)."""
    require_tensor("isclose", other)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"isclose: {input.dtype.name} did not match {other.dtype.name} ({describe(input)} and "
                           f"{describe(other)}); convert one with .to({input.dtype.name})")
    _check_tolerances("isclose", rtol, atol)
    close = input == other
    if not input.dtype.is_floating_point:
        if input.dtype.name == "bool":
            return close
        input, other = input.to(float64), other.to(float64)  # no integer overflow in the difference
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    # equal values are close already, and an infinite other is close only when equal: zeros stand in for
    # them, so no inf − inf or 0 · inf is computed
    stand_in = close | ~other.isfinite()
    a, b = input.masked_fill(stand_in, 0), other.masked_fill(stand_in, 0)
    error = (a - b).abs()
    within = ~stand_in & error.isfinite() & (error <= b.abs() * rtol + atol)
    return (close | within).detach()


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of input is close to other's (isclose), as a Python bool."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other) -> bool:
    """True if both tensors have the same shape and the same values (NaN equals nothing)."""
    require_tensor("equal", input, "input", 1)
    require_tensor("equal", other)
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all())


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """For each element, whether it occurs in test_elements (either may be a number); invert negates."""
    if not isinstance(elements, TrackedTensor) and not isinstance(test_elements, TrackedTensor):
        raise TypeError(f"isin: expected at least one tensor, got {describe(elements)} and {describe(test_elements)}")
    some = elements if isinstance(elements, TrackedTensor) else test_elements
    if not isinstance(elements, TrackedTensor):
        elements = some.new_tensor(elements)
    if not isinstance(test_elements, TrackedTensor):
        test_elements = some.new_tensor(test_elements)
    # every element against every test value: memory grows as their product, which suits the usual small sets
    pairs = elements.detach().unsqueeze(-1) == test_elements.detach().reshape(-1)
    found = pairs.any(-1)
    return ~found if invert else found


def _tensor(op: str, input):
    """The tensor a query asks about; anything else is PyTorch's TypeError."""
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"{op}(): argument 'input' must be Tensor, not {type(input).__name__}")
    return input


def is_nonzero(input) -> bool:
    """Whether a one-element tensor holds a value other than zero."""
    n = _tensor("is_nonzero", input).numel()
    if n != 1:
        which = "no values" if n == 0 else "more than one value"
        raise RuntimeError(f"is_nonzero: Boolean value of Tensor with {which} is ambiguous "
                           f"(shape {shape_str(input.shape)}); is_nonzero needs exactly one element")
    return bool(input.item() != 0)


def is_same_size(input, other) -> bool:
    return tuple(_tensor("is_same_size", input).shape) == tuple(_tensor("is_same_size", other).shape)


def is_signed(input) -> bool:
    """Whether the dtype holds negative numbers (floats and intN; not bool or the unsigned uintN)."""
    return _tensor("is_signed", input).dtype.is_signed


class ComparisonMethods:
    """Tensor's tests (mixed into gradlab.Tensor); eq … ge are in ArithmeticMethods."""

    __slots__ = ()

    isclose, allclose, equal, isposinf, isneginf, isreal = isclose, allclose, equal, isposinf, isneginf, isreal
    is_nonzero, is_same_size, is_signed = is_nonzero, is_same_size, is_signed

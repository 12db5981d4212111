"""Inverse trigonometric and hyperbolic functions, atan2, hypot, sinc and angle conversions.

Each is a backend primitive (or a short composition) for the forward and the textbook derivative
for the backward, e.g. d/dx asin(x) = 1 / sqrt(1 − x²). ``arcsin`` and the other NumPy-style names
are the same functions, as in PyTorch.
"""

from __future__ import annotations

import math

from ..autograd.function import name_nodes
from .binary import binary, tensor_first
from .elementwise import elementwise

_PI = math.pi


def _sinc(backend, a):
    """sin(πx) / (πx), and 1 at x = 0 (the limit)."""
    zero = backend.eq(a, 0)
    pix = backend.where(zero, 1.0, backend.mul(a, _PI))
    return backend.where(zero, 1.0, backend.div(backend.sin(pix), pix))


def _sinc_gradient(g, x, out):
    """(cos(πx) − sinc(x)) / x, and 0 at x = 0 (sinc is even, so flat there)."""
    safe = x.masked_fill(x == 0, 1.0)
    slope = ((safe * _PI).cos() - out) / safe
    return g * slope.masked_fill(x == 0, 0.0)


Asin = elementwise("asin", "arcsin", lambda g, x, y: g / (1 - x * x).sqrt(), saves="x",
                   doc="asin(x): the gradient is divided by sqrt(1 − x²) (infinite at x = ±1).",
                   derivative="∂L/∂x = g / √(1 − x²)")
Acos = elementwise("acos", "arccos", lambda g, x, y: -g / (1 - x * x).sqrt(), saves="x",
                   doc="acos(x): the gradient is divided by −sqrt(1 − x²) (infinite at x = ±1).",
                   derivative="∂L/∂x = −g / √(1 − x²)")
Atan = elementwise("atan", "arctan", lambda g, x, y: g / (x * x + 1), saves="x",
                   doc="atan(x): the gradient is divided by 1 + x².",
                   derivative="∂L/∂x = g / (1 + x²)")
Sinh = elementwise("sinh", "sinh", lambda g, x, y: g * x.cosh(), saves="x",
                   doc="sinh(x): the gradient is multiplied by cosh(x).",
                   derivative="∂L/∂x = g · cosh(x)")
Cosh = elementwise("cosh", "cosh", lambda g, x, y: g * x.sinh(), saves="x",
                   doc="cosh(x): the gradient is multiplied by sinh(x).",
                   derivative="∂L/∂x = g · sinh(x)")
Asinh = elementwise("asinh", "arcsinh", lambda g, x, y: g / (x * x + 1).sqrt(), saves="x",
                    doc="asinh(x): the gradient is divided by sqrt(x² + 1).",
                    derivative="∂L/∂x = g / √(x² + 1)")
Acosh = elementwise("acosh", "arccosh", lambda g, x, y: g / ((x - 1).sqrt() * (x + 1).sqrt()), saves="x",
                    doc="acosh(x): the gradient is divided by sqrt(x − 1) · sqrt(x + 1) (infinite at x = 1).",
                    derivative="∂L/∂x = g / (√(x − 1) · √(x + 1))")
Atanh = elementwise("atanh", "arctanh", lambda g, x, y: g / (1 - x * x), saves="x",
                    doc="atanh(x): the gradient is divided by 1 − x².",
                    derivative="∂L/∂x = g / (1 − x²)")
Sinc = elementwise("sinc", _sinc, lambda g, x, y: _sinc_gradient(g, x, y),
                   doc="sinc(x) = sin(πx)/(πx): the gradient is multiplied by (cos(πx) − sinc(x)) / x (0 at x = 0).",
                   derivative="∂L/∂x = g · (cos(πx) − out) / x, and 0 at x = 0")
Deg2rad = elementwise("deg2rad", lambda b, a: b.mul(a, _PI / 180), lambda g, x, y: g * (_PI / 180), saves="",
                      doc="x · π/180, degrees to radians: the gradient is scaled by π/180.",
                      derivative="∂L/∂x = g · π/180")
Rad2deg = elementwise("rad2deg", lambda b, a: b.mul(a, 180 / _PI), lambda g, x, y: g * (180 / _PI), saves="",
                      doc="x · 180/π, radians to degrees: the gradient is scaled by 180/π.",
                      derivative="∂L/∂x = g · 180/π")
name_nodes(Deg2rad, "Deg2RadBackward0")  # (PyTorch's spelling of these two nodes)
name_nodes(Rad2deg, "Rad2DegBackward0")

Atan2 = binary("atan2", lambda b, y, x: b.arctan2(y, x),
               lambda g, a, b, out: g * b / (a * a + b * b), lambda g, a, b, out: -g * a / (a * a + b * b),
               numbers=False, doc="atan2(a, b), the angle of the point (b, a): a gets g · b / r², b gets −g · a / r².",
               derivative="∂L/∂a = g · b / (a² + b²);  ∂L/∂b = −g · a / (a² + b²)")
Hypot = binary("hypot", lambda b, x, y: b.hypot(x, y),
               lambda g, a, b, out: g * a / out, lambda g, a, b, out: g * b / out, inputs="floats", numbers=False,
               saves="a b out",
               doc="hypot(a, b) = √(a² + b²) without overflow: each input gets g times itself over the output.",
               derivative="∂L/∂a = g · a / out;  ∂L/∂b = g · b / out")


def asin(input):
    return Asin.apply(input)


def acos(input):
    return Acos.apply(input)


def atan(input):
    return Atan.apply(input)


def sinh(input):
    return Sinh.apply(input)


def cosh(input):
    return Cosh.apply(input)


def asinh(input):
    return Asinh.apply(input)


def acosh(input):
    return Acosh.apply(input)


def atanh(input):
    return Atanh.apply(input)


def sinc(input):
    """The normalised sinc, sin(πx) / (πx), 1 at x = 0."""
    return Sinc.apply(input)


def deg2rad(input):
    return Deg2rad.apply(input)


def rad2deg(input):
    return Rad2deg.apply(input)


atan2 = tensor_first("atan2", Atan2, "The angle of the point (other, input) in (−π, π], quadrant by the signs of "
                                      "both.")
hypot = tensor_first("hypot", Hypot, "√(input² + other²), computed without overflowing for large values.")


arcsin, arccos, arctan, arcsinh, arccosh, arctanh, arctan2 = asin, acos, atan, asinh, acosh, atanh, atan2


class TrigonometricMethods:
    """Tensor's inverse trigonometric and hyperbolic methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    asin, acos, atan, sinh, cosh, asinh, acosh, atanh = asin, acos, atan, sinh, cosh, asinh, acosh, atanh
    arcsin, arccos, arctan, arcsinh, arccosh, arctanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh
    sinc, deg2rad, rad2deg, atan2, arctan2, hypot = sinc, deg2rad, rad2deg, atan2, arctan2, hypot

"""Elementwise maths: exp, log, sin, abs, rounding, clamp, maximum/minimum, where and predicates.

A one-input op is two small functions: how to compute it on a backend array, and its backward
``grad * f'(x)`` written with Tensor operations (so it can be differentiated again).
``elementwise`` turns such a pair into a Function; ops with tensors as bounds or branches
(clamp, maximum, where) route the gradient with ``where``; the engine sums it back over the
dimensions where an input was broadcast.
"""

from __future__ import annotations

import math

from ..autograd.function import Function, defined_by_caller, name_nodes
from ..dtypes import bool_, get_default_dtype, int64, promote, result_dtype, result_dtype_with_scalar, scalar_dtype
from ._common import TrackedTensor, binary_operands, broadcast_shapes, check_same_device, describe, float_dtype_required
from .arithmetic import _compute


def _check_input(op: str, x, inputs: str):
    """Apply an op's dtype policy to a non-float input; returns the tensor to compute on.

    "float": integers and bools become the default float dtype (exp, sin: as torch.exp does);
    "keep": integers stay integers, bool is refused (abs, relu, floor); "floats": floating point
    only (the nn activations); "any": every dtype as it is (sign, predicates).
    """
    if inputs == "float":
        return x.to(get_default_dtype())
    if inputs == "floats":
        float_dtype_required(op, x)
    if inputs == "keep" and x.dtype is bool_:
        raise RuntimeError(f"{op}: bool inputs are not supported (got {describe(x)}); "
                           "convert with .int() or .float() first")
    return x


def elementwise(op: str, compute, gradient=None, inputs: str = "float", saves: str = "x out", *,
                doc: str = "", derivative: str = ""):
    """A Function for ``out = f(x, *params)``, applied element by element.

    ``compute(backend, array, *params)`` (or the name of a backend primitive) makes the output;
    ``gradient(grad, x, out, *params)`` gives the input's gradient from Tensor operations. Without
    one the op is piecewise constant (floor, sign, ...) and its gradient is zero, as in PyTorch.
    ``saves`` names what the gradient reads ("x", "out" or both): only that is kept for backward,
    so an in-place change to the other one is allowed, as in PyTorch. ``doc`` and ``derivative``
    become the class's docstring and rule, the same rule as ``gradient`` in words and in math.
    """
    save_x, save_out = "x" in saves.split(), "out" in saves.split()
    if isinstance(compute, str):
        compute = _primitive(compute)

    class Elementwise(Function):
        @staticmethod
        def forward(ctx, x, *params):
            if not x.dtype.is_floating_point and inputs != "any":
                x = _check_input(op, x, inputs)
            out = x._wrap(compute(x.device.backend, x.array, *params))
            if gradient is not None:
                ctx.save_for_backward(x if save_x else None, out if save_out else None)
                ctx.params = params
            return out

        @staticmethod
        def backward(ctx, grad):
            if gradient is None:
                return (grad.new_zeros(grad.shape),) + (None,) * (len(ctx.needs_input_grad) - 1)
            x, out = ctx.saved_tensors
            return (gradient(grad, x, out, *ctx.params),) + (None,) * len(ctx.params)

    name = "".join(part.capitalize() for part in op.split("_"))
    Elementwise.__doc__, Elementwise.derivative = doc, derivative
    Elementwise.__name__ = Elementwise.__qualname__ = name
    name_nodes(Elementwise)
    return defined_by_caller(Elementwise)


def _primitive(name: str):
    return lambda backend, a: getattr(backend, name)(a)


def _integral(compute):
    """Rounding an integer leaves it as it is (numpy's version would turn it into a float)."""
    def integral(backend, a, *params):
        return compute(backend, a, *params) if backend.dtype_of(a).is_floating_point else backend.copy(a)
    return integral


def _trunc(backend, a):
    return backend.where(backend.ge(a, 0), backend.floor(a), backend.ceil(a))


def _round(backend, a, decimals):
    """Round half to even at 10**-decimals, computed as PyTorch does: rint(a * 10^d) / 10^d."""
    if decimals == 0:
        return backend.round(a)
    if decimals > 0:
        return backend.div(backend.round(backend.mul(a, 10.0 ** decimals)), 10.0 ** decimals)
    return backend.mul(backend.round(backend.div(a, 10.0 ** -decimals)), 10.0 ** -decimals)


def _square(backend, a):
    return backend.mul(a, a) if backend.dtype_of(a) is not bool_ else backend.astype(a, int64)


def _sign(backend, a):
    return backend.sign(a) if backend.dtype_of(a) is not bool_ else backend.copy(a)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

_PIECEWISE_CONSTANT = "∂L/∂x = 0 (piecewise constant)"
_BOOL_RESULT = "no gradient (bool output)"

Exp = elementwise("exp", "exp", lambda g, x, y: g * y, saves="out",
                  doc="exp(x) is its own derivative: the gradient is multiplied by the output.",
                  derivative="∂L/∂x = g · out")
Log = elementwise("log", "log", lambda g, x, y: g / x, saves="x",
                  doc="log(x), the natural log: the gradient is divided by x.",
                  derivative="∂L/∂x = g / x")
Log1p = elementwise("log1p", "log1p", lambda g, x, y: g / (x + 1), saves="x",
                    doc="log(1 + x): the gradient is divided by 1 + x.",
                    derivative="∂L/∂x = g / (1 + x)")
Expm1 = elementwise("expm1", "expm1", lambda g, x, y: g * (y + 1), saves="out",
                    doc="exp(x) − 1: the gradient is multiplied by exp(x), which is the output plus 1.",
                    derivative="∂L/∂x = g · (out + 1)")
Sqrt = elementwise("sqrt", "sqrt", lambda g, x, y: g / (y * 2), saves="out",
                   doc="sqrt(x): the gradient is divided by twice the output (infinite at x = 0).",
                   derivative="∂L/∂x = g / (2 · out)")
Rsqrt = elementwise("rsqrt", lambda b, a: b.div(1.0, b.sqrt(a)), lambda g, x, y: g * y * y * y * -0.5, saves="out",
                    doc="1 / sqrt(x): the gradient is multiplied by −out³ / 2, that is −x^(−3/2) / 2.",
                    derivative="∂L/∂x = −g · out³ / 2")
Reciprocal = elementwise("reciprocal", lambda b, a: b.div(1.0, a), lambda g, x, y: -g * y * y, saves="out",
                         doc="1 / x: the gradient is multiplied by −out², that is −1 / x².",
                         derivative="∂L/∂x = −g · out²")
Sin = elementwise("sin", "sin", lambda g, x, y: g * x.cos(), saves="x",
                  doc="sin(x): the gradient is multiplied by cos(x).",
                  derivative="∂L/∂x = g · cos(x)")
Cos = elementwise("cos", "cos", lambda g, x, y: -g * x.sin(), saves="x",
                  doc="cos(x): the gradient is multiplied by −sin(x).",
                  derivative="∂L/∂x = −g · sin(x)")
Tan = elementwise("tan", "tan", lambda g, x, y: g * (y * y + 1), saves="out",
                  doc="tan(x): the gradient is multiplied by 1 + tan²(x), written with the output.",
                  derivative="∂L/∂x = g · (1 + out²)")
Tanh = elementwise("tanh", "tanh", lambda g, x, y: g * (1 - y * y), saves="out",
                   doc="tanh(x): the gradient is multiplied by 1 − tanh²(x), written with the output.",
                   derivative="∂L/∂x = g · (1 − out²)")
Erf = elementwise("erf", "erf", lambda g, x, y: g * (-x * x).exp() * _TWO_OVER_SQRT_PI, saves="x",
                  doc="erf(x): the gradient is multiplied by the bell curve 2/√π · exp(−x²).",
                  derivative="∂L/∂x = g · 2/√π · exp(−x²)")
Abs = elementwise("abs", "abs", lambda g, x, y: g * x.sign(), inputs="keep", saves="x",
                  doc="|x|: the gradient is multiplied by the sign of x (0 at x = 0).",
                  derivative="∂L/∂x = g · sign(x)")
Square = elementwise("square", _square, lambda g, x, y: g * x * 2, inputs="any", saves="x",
                     doc="x²: the gradient is multiplied by 2x.",
                     derivative="∂L/∂x = g · 2x")
Sign = elementwise("sign", _sign, inputs="any",
                   doc="sign(x): piecewise constant, so x receives a zero gradient.",
                   derivative=_PIECEWISE_CONSTANT)
Floor = elementwise("floor", _integral(lambda b, a: b.floor(a)), inputs="keep",
                    doc="floor(x): piecewise constant, so x receives a zero gradient.",
                    derivative=_PIECEWISE_CONSTANT)
Ceil = elementwise("ceil", _integral(lambda b, a: b.ceil(a)), inputs="keep",
                   doc="ceil(x): piecewise constant, so x receives a zero gradient.",
                   derivative=_PIECEWISE_CONSTANT)
Trunc = elementwise("trunc", _integral(_trunc), inputs="keep",
                    doc="trunc(x), rounding towards zero: piecewise constant, so x receives a zero gradient.",
                    derivative=_PIECEWISE_CONSTANT)
Round = elementwise("round", _integral(_round), inputs="keep",
                    doc="round(x): piecewise constant, so x receives a zero gradient.",
                    derivative=_PIECEWISE_CONSTANT)
LogicalNot = elementwise("logical_not", "logical_not", inputs="any",
                         doc="not x, elementwise: a bool result, so no gradient flows through it.",
                         derivative=_BOOL_RESULT)
Isnan = elementwise("isnan", "isnan", inputs="any",
                    doc="isnan(x): a test with a bool result, so no gradient flows through it.",
                    derivative=_BOOL_RESULT)
Isinf = elementwise("isinf", "isinf", inputs="any",
                    doc="isinf(x): a test with a bool result, so no gradient flows through it.",
                    derivative=_BOOL_RESULT)
Isfinite = elementwise("isfinite", lambda b, a: b.logical_not(b.logical_or(b.isnan(a), b.isinf(a))), inputs="any",
                       doc="isfinite(x): a test with a bool result, so no gradient flows through it.",
                       derivative=_BOOL_RESULT)
name_nodes(Log1p, "Log1PBackward0")  # (PyTorch's spelling)
name_nodes(Square, "PowBackward0")  # PyTorch's square is pow(x, 2)


# --- ops with tensor operands: clamp, maximum/minimum, where -------------------------------------

def _explain_broadcast(op: str, *operands) -> None:
    """After a backend failure: raise the clear ShapeError if the tensors' shapes clash."""
    broadcast_shapes(*(t.shape for t in operands if isinstance(t, TrackedTensor)), op=op)


def _operand(bound, dtype):
    """A bound as the backend wants it: a Python number as it is, a tensor's array in dtype."""
    if not isinstance(bound, TrackedTensor):
        return bound
    return bound.array if bound.dtype is dtype else bound.device.backend.astype(bound.array, dtype)


def _clamp_dtype(x, lo, hi):
    """The result dtype of clamp: PyTorch's promotion over x and the bounds that are given."""
    dtype, ndim = x.dtype, x.ndim
    for bound in (lo, hi):
        if isinstance(bound, TrackedTensor):
            check_same_device("clamp", x, bound)
            dtype, ndim = result_dtype(dtype, ndim, bound.dtype, bound.ndim), max(ndim, bound.ndim)
        elif bound is not None:
            dtype = result_dtype_with_scalar(dtype, bound)
    return dtype


class Clamp(Function):
    """min(max(x, lo), hi): x gets the gradient where lo <= x <= hi, a bound tensor where it won."""

    derivative = ("∂L/∂x = g where lo ≤ x ≤ hi, else 0;  ∂L/∂lo = g where x < lo < hi, else 0;  "
                  "∂L/∂hi = g where x > hi or hi < lo, else 0 (each summed back where broadcast)")
    node_names = ("ClampBackward1", "ClampBackward0")  # number bounds; a tensor bound (PyTorch's numbering)

    @staticmethod
    def forward(ctx, x, lo, hi):
        dtype = _clamp_dtype(x, lo, hi)
        backend = x.device.backend
        out = x.array if x.dtype is dtype else backend.astype(x.array, dtype)
        try:
            if lo is not None:
                out = backend.maximum(out, _operand(lo, dtype))
            if hi is not None:
                out = backend.minimum(out, _operand(hi, dtype))
        except ValueError:
            _explain_broadcast("clamp", x, lo, hi)
            raise
        if isinstance(lo, TrackedTensor) or isinstance(hi, TrackedTensor):
            ctx.recorded_as(1)
        ctx.save_for_backward(x, *(b if isinstance(b, TrackedTensor) else None for b in (lo, hi)))
        ctx.lo, ctx.hi = (None if isinstance(b, TrackedTensor) else b for b in (lo, hi))
        return x._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        x, lo, hi = ctx.saved_tensors
        lo = ctx.lo if lo is None else lo
        hi = ctx.hi if hi is None else hi
        grad_x = grad_lo = grad_hi = None
        if ctx.needs_input_grad[0]:
            inside = x <= hi if lo is None else (x >= lo if hi is None else (x >= lo) & (x <= hi))
            grad_x = where(inside, grad, 0.0)
        if ctx.needs_input_grad[1]:  # when lo > hi the output is hi everywhere, so lo never wins
            won = x < lo if hi is None else (x < lo) & (lo < hi)
            grad_lo = where(won, grad, 0.0)
        if ctx.needs_input_grad[2]:
            won = x > hi if lo is None else (x > hi) | (hi < lo)
            grad_hi = where(won, grad, 0.0)
        return grad_x, grad_lo, grad_hi


def _extremum(op: str, loses, winner: str):
    """maximum / minimum: the winner of each pair gets the gradient, a tie splits it evenly."""

    class Extremum(Function):
        __doc__ = f"{op}(a, b): the {winner} of each pair gets the gradient, a tie splits it evenly."
        derivative = (f"∂L/∂a = g where a is the {winner}, g / 2 where a = b, else 0;  "
                      f"∂L/∂b = g where b is the {winner}, g / 2 where a = b, else 0")

        @staticmethod
        def forward(ctx, a, b):
            for t in (a, b):
                if not isinstance(t, TrackedTensor):
                    raise TypeError(f"{op}: expected two tensors, got {describe(t)}; "
                                    f"for a number use clamp_{'min' if op == 'maximum' else 'max'}")
            ctx.save_for_backward(a, b)
            return _compute(op, op, a, b)

        @staticmethod
        def backward(ctx, grad):
            a, b = ctx.saved_tensors
            shared = where(a == b, grad * 0.5, grad)
            grad_a = where(loses(a, b), 0.0, shared) if ctx.needs_input_grad[0] else None
            grad_b = where(loses(b, a), 0.0, shared) if ctx.needs_input_grad[1] else None
            return grad_a, grad_b

    Extremum.__name__ = Extremum.__qualname__ = op.capitalize()
    name_nodes(Extremum)
    return defined_by_caller(Extremum)


Maximum = _extremum("maximum", lambda a, b: a < b, "larger")
Minimum = _extremum("minimum", lambda a, b: a > b, "smaller")


def _where_operands(cond, a, b):
    """The arrays (or numbers) of both branches, and the result dtype by PyTorch's promotion."""
    if not isinstance(cond, TrackedTensor) or cond.dtype is not bool_:
        raise RuntimeError(f"where: expected condition to be a bool tensor, but got {describe(cond)}; "
                           "make it with a comparison (x > 0) or convert it with .bool()")
    if isinstance(a, TrackedTensor):
        check_same_device("where", cond, a)
        return binary_operands("where", a, b)
    if isinstance(b, TrackedTensor):
        check_same_device("where", cond, b)
        b_data, a_data, dtype = binary_operands("where", b, a)
        return a_data, b_data, dtype
    for value in (a, b):
        if not isinstance(value, (bool, int, float)):
            raise TypeError(f"where: expected tensors or Python numbers for both branches, got {describe(value)}")
    return a, b, promote(scalar_dtype(a), scalar_dtype(b))


class Where(Function):
    """cond ? a : b elementwise; each branch gets the gradient where it was chosen."""

    derivative = "∂L/∂a = g where cond, else 0;  ∂L/∂b = g where not cond, else 0 (each summed back where broadcast)"

    @staticmethod
    def forward(ctx, cond, a, b):
        a_data, b_data, dtype = _where_operands(cond, a, b)
        backend = cond.device.backend
        try:
            out = backend.where(cond.array, a_data, b_data)
        except ValueError:
            _explain_broadcast("where", cond, a, b)
            raise
        if backend.dtype_of(out) is not dtype:  # numpy widens for Python numbers where PyTorch does not
            out = backend.astype(out, dtype)
        ctx.save_for_backward(cond)
        return cond._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        (cond,) = ctx.saved_tensors
        grad_a = where(cond, grad, 0.0) if ctx.needs_input_grad[1] else None
        grad_b = where(cond, 0.0, grad) if ctx.needs_input_grad[2] else None
        return None, grad_a, grad_b


# --- functional forms (gradlab.exp(x) as torch.exp(x)) --------------------------------------------

def exp(input):
    return Exp.apply(input)


def log(input):
    return Log.apply(input)


def log1p(input):
    """log(1 + x), accurate for small x."""
    return Log1p.apply(input)


def expm1(input):
    """exp(x) - 1, accurate for small x."""
    return Expm1.apply(input)


def sqrt(input):
    return Sqrt.apply(input)


def rsqrt(input):
    """1 / sqrt(x)."""
    return Rsqrt.apply(input)


def reciprocal(input):
    return Reciprocal.apply(input)


def sin(input):
    return Sin.apply(input)


def cos(input):
    return Cos.apply(input)


def tan(input):
    return Tan.apply(input)


def tanh(input):
    return Tanh.apply(input)


def erf(input):
    return Erf.apply(input)


def abs(input):
    return Abs.apply(input)


def square(input):
    return Square.apply(input)


def sign(input):
    return Sign.apply(input)


def floor(input):
    return Floor.apply(input)


def ceil(input):
    return Ceil.apply(input)


def trunc(input):
    """Round towards zero."""
    return Trunc.apply(input)


def round(input, *, decimals=0):
    """Round half to even (2.5 -> 2), at 10**-decimals."""
    if decimals and not input.dtype.is_floating_point:
        raise RuntimeError(f"round: decimals={decimals} needs a floating-point tensor, got {describe(input)}; "
                           "convert it first with .float()")
    return Round.apply(input, int(decimals))


def logical_not(input):
    return LogicalNot.apply(input)


def isnan(input):
    return Isnan.apply(input)


def isinf(input):
    return Isinf.apply(input)


def isfinite(input):
    return Isfinite.apply(input)


def clamp(input, min=None, max=None):
    """Limit every element to [min, max]; the bounds are numbers or tensors (broadcasting), either may be None."""
    if min is None and max is None:
        raise RuntimeError("clamp: at least one of 'min' or 'max' must not be None; e.g. x.clamp(min=0)")
    return Clamp.apply(input, min, max)


def clamp_min(input, min):
    return Clamp.apply(input, min, None)


def clamp_max(input, max):
    return Clamp.apply(input, None, max)


def maximum(input, other):
    """The larger of each pair of elements (broadcasting); NaN wins, as in PyTorch."""
    return Maximum.apply(input, other)


def minimum(input, other):
    return Minimum.apply(input, other)


def where(condition, input, other):
    """input where condition is True, else other (broadcasting; either may be a Python number)."""
    return Where.apply(condition, input, other)


clip = clamp


class ElementwiseMethods:
    """Tensor's elementwise methods (mixed into gradlab.Tensor).

    The functional forms take the tensor as their first argument, so they serve as methods as they are.
    """

    __slots__ = ()

    exp, log, log1p, expm1, sqrt, rsqrt, reciprocal = exp, log, log1p, expm1, sqrt, rsqrt, reciprocal
    sin, cos, tan, tanh, erf, abs, square, sign = sin, cos, tan, tanh, erf, abs, square, sign
    floor, ceil, trunc, round = floor, ceil, trunc, round
    logical_not, isnan, isinf, isfinite = logical_not, isnan, isinf, isfinite
    clamp, clip, clamp_min, clamp_max, maximum, minimum = clamp, clip, clamp_min, clamp_max, maximum, minimum
    __abs__ = abs

    def where(self, condition, other):
        """x.where(condition, other) is where(condition, x, other)."""
        return Where.apply(condition, self, other)

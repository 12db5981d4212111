"""More pointwise maths: other log bases, fmod and friends, NaN-aware max/min, lerp, addcmul and aliases.

These complete PyTorch's pointwise set around the core of ``elementwise`` and ``arithmetic``. The
one-input ops use ``elementwise``, the two-input ones ``binary``; a few (float_power, ldexp,
addcmul, rsub) are compositions of ops that already have gradients, exactly as PyTorch defines them.
"""

from __future__ import annotations

import collections
import math

from ..autograd.function import Function
from ._common import TrackedTensor, broadcast_shapes, check_same_device, describe
from .arithmetic import FloorDivide, Remainder, _refuse_integer_division_by_zero, div, mul, neg, sub
from .arithmetic import pow as _pow
from .binary import binary, number_first, require_tensor, tensor_first
from .elementwise import abs, elementwise, sign, trunc

_LN2, _LN10 = math.log(2.0), math.log(10.0)
_LARGEST = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
            "float64": 1.7976931348623157e308}  # the largest finite value of each float dtype (finfo.max)

_PIECEWISE_CONSTANT = "∂L/∂x = 0 (piecewise constant)"
frexp_result = collections.namedtuple("frexp", ["mantissa", "exponent"])


def _signbit(b, a):
    """True where the sign bit is set: negative numbers and −0.0 (and never for bool)."""
    dtype = b.dtype_of(a)
    if dtype.is_floating_point:
        return b.lt(b.copysign(1.0, a), 0)
    return b.lt(a, 0) if dtype.name != "bool" else b.logical_and(a, False)


def _nan_to_num(b, a, nan, posinf, neginf):
    """NaN, +inf and −inf replaced by the given numbers (integers have none of them)."""
    if not b.dtype_of(a).is_floating_point:
        return b.copy(a)
    out = b.where(b.isnan(a), nan, a)
    out = b.where(b.eq(a, math.inf), posinf, out)
    return b.where(b.eq(a, -math.inf), neginf, out)


def _fmax(pick):
    """fmax / fmin: the larger (smaller) of each pair, but a NaN loses to a number (maximum lets NaN win)."""
    def compute(b, x, y):
        return b.where(b.isnan(y), x, b.where(b.isnan(x), y, getattr(b, pick)(x, y)))
    return compute


def _frac(b, a):
    """x − trunc(x), NaN at ±inf (where inf − inf would be)."""
    finite = b.where(b.isinf(a), math.nan, a)
    return b.sub(finite, b.where(b.ge(finite, 0), b.floor(finite), b.ceil(finite)))


def _heaviside(b, x, values):
    """0 for x < 0, values where x = 0, 1 for x > 0."""
    return b.where(b.eq(x, 0), values, b.astype(b.gt(x, 0), b.dtype_of(x)))


Log2 = elementwise("log2", "log2", lambda g, x, y: g / (x * _LN2), saves="x",
                   doc="log2(x): the gradient is divided by x · ln 2.",
                   derivative="∂L/∂x = g / (x · ln 2)")
Log10 = elementwise("log10", "log10", lambda g, x, y: g / (x * _LN10), saves="x",
                    doc="log10(x): the gradient is divided by x · ln 10.",
                    derivative="∂L/∂x = g / (x · ln 10)")
Exp2 = elementwise("exp2", lambda b, a: b.pow(2.0, a), lambda g, x, y: g * y * _LN2, saves="out",
                   doc="2^x: the gradient is multiplied by the output times ln 2.",
                   derivative="∂L/∂x = g · out · ln 2")
Frac = elementwise("frac", _frac, lambda g, x, y: g, inputs="floats", saves="",
                   doc="frac(x) = x − trunc(x): the gradient passes unchanged (trunc is piecewise constant).",
                   derivative="∂L/∂x = g")
Signbit = elementwise("signbit", _signbit, inputs="any",
                      doc="signbit(x): a test with a bool result, so no gradient flows through it.",
                      derivative="no gradient (bool output)")
def _angle(b, a):
    """π below zero, 0 elsewhere, NaN for NaN (in a's own dtype: both branches here are numbers)."""
    return b.astype(b.where(b.isnan(a), math.nan, b.where(b.lt(a, 0), math.pi, 0.0)), b.dtype_of(a))


Angle = elementwise("angle", _angle,
                    doc="angle(x) of a real number, π below zero and 0 above: piecewise constant, a zero gradient.",
                    derivative=_PIECEWISE_CONSTANT)
NanToNum = elementwise("nan_to_num", _nan_to_num, lambda g, x, y, *numbers: g.masked_fill(~x.isfinite(), 0.0),
                       inputs="any", saves="x",
                       doc="nan_to_num(x): finite values pass the gradient, replaced NaN and infinities pass none.",
                       derivative="∂L/∂x = g where x is finite, else 0")

Copysign = binary("copysign", lambda b, x, y: b.copysign(x, y),
                  lambda g, a, b, out: g * (out / a.masked_fill(a == 0, 1.0)).masked_fill(a == 0, 0.0),
                  lambda g, a, b, out: g * 0.0, saves="a out",
                  doc="copysign(a, b) = |a| with b's sign: a gets g · out / a (±g), b gets zero.",
                  derivative="∂L/∂a = g · out / a (0 at a = 0);  ∂L/∂b = 0")
Fmod = binary("fmod", lambda b, x, y: b.fmod(x, y), lambda g, a, b, out: g, lambda g, a, b, out: -g * div(a, b, rounding_mode="trunc"),
              inputs="keep",
              doc="fmod(a, b), the remainder with a's sign (C's fmod): a gets g, b gets −g · trunc(a / b).",
              derivative="∂L/∂a = g;  ∂L/∂b = −g · trunc(a / b)")
Fmax = binary("fmax", _fmax("maximum"),
              lambda g, a, b, out: g.masked_fill(~((a >= b) | b.isnan()), 0.0),
              lambda g, a, b, out: g.masked_fill((a >= b) | b.isnan(), 0.0), inputs="keep", numbers=False,
              doc="fmax(a, b), the larger of each pair ignoring NaN: the one chosen gets g (a on a tie).",
              derivative="∂L/∂a = g where a ≥ b or b is NaN, else 0;  ∂L/∂b = g elsewhere")
Fmin = binary("fmin", _fmax("minimum"),
              lambda g, a, b, out: g.masked_fill(~((a <= b) | b.isnan()), 0.0),
              lambda g, a, b, out: g.masked_fill((a <= b) | b.isnan(), 0.0), inputs="keep", numbers=False,
              doc="fmin(a, b), the smaller of each pair ignoring NaN: the one chosen gets g (a on a tie).",
              derivative="∂L/∂a = g where a ≤ b or b is NaN, else 0;  ∂L/∂b = g elsewhere")
Logaddexp = binary("logaddexp", lambda b, x, y: b.logaddexp(x, y),
                   lambda g, a, b, out: g / ((b - a).exp() + 1), lambda g, a, b, out: g / ((a - b).exp() + 1),
                   inputs="floats", numbers=False,
                   doc="log(eᵃ + eᵇ) without overflow: each input gets g times its softmax weight.",
                   derivative="∂L/∂a = g / (1 + exp(b − a));  ∂L/∂b = g / (1 + exp(a − b))")
Logaddexp2 = binary("logaddexp2", lambda b, x, y: b.logaddexp2(x, y),
                    lambda g, a, b, out: g / ((b - a).exp2() + 1), lambda g, a, b, out: g / ((a - b).exp2() + 1),
                    inputs="floats", numbers=False,
                    doc="log2(2ᵃ + 2ᵇ) without overflow: each input gets g times its base-2 softmax weight.",
                    derivative="∂L/∂a = g / (1 + 2^(b − a));  ∂L/∂b = g / (1 + 2^(a − b))")
Nextafter = binary("nextafter", lambda b, x, y: b.nextafter(x, y), inputs="floats", numbers=False,
                   doc="nextafter(a, b), the next float after a towards b: piecewise constant, no gradient.",
                   derivative="no gradient (piecewise constant)")
Gcd = binary("gcd", lambda b, x, y: b.gcd(x, y), inputs="integers", numbers=False,
             doc="gcd(a, b), the greatest common divisor: integers only, so no gradient.",
             derivative="no gradient (integer output)")
Lcm = binary("lcm", lambda b, x, y: b.lcm(x, y), inputs="integers", numbers=False,
             doc="lcm(a, b), the least common multiple: integers only, so no gradient.",
             derivative="no gradient (integer output)")
Heaviside = binary("heaviside", _heaviside, inputs="any", numbers=False,
                   doc="heaviside(x, values), the unit step: piecewise constant, no gradient (as in PyTorch).",
                   derivative="no gradient (piecewise constant)")


class Frexp(Function):
    """frexp(x) = (mantissa, exponent) with x = mantissa · 2^exponent: the mantissa gets g / 2^exponent."""

    derivative = "∂L/∂x = g_mantissa / 2^exponent"

    @staticmethod
    def forward(ctx, x):
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"frexp: torch.frexp() only supports floating-point dtypes, got {describe(x)}; "
                               "convert it first with .float()")
        mantissa, exponent = x.device.backend.frexp(x.array)
        exponent = x._wrap(exponent)
        ctx.save_for_backward(exponent)
        return x._wrap(mantissa), exponent

    @staticmethod
    def backward(ctx, grad_mantissa, grad_exponent):
        (exponent,) = ctx.saved_tensors
        return grad_mantissa / (exponent.to(grad_mantissa.dtype) * _LN2).exp()


class Lerp(Function):
    """start + weight · (end − start): start gets g · (1 − w), end g · w, the weight g · (end − start)."""

    derivative = "∂L/∂start = g · (1 − w);  ∂L/∂end = g · w;  ∂L/∂weight = g · (end − start)"

    @staticmethod
    def forward(ctx, start, end, weight):
        _lerp_dtypes(start, end, weight)
        backend = start.device.backend
        tensor_weight = isinstance(weight, TrackedTensor)
        w = weight.array if tensor_weight else weight
        try:
            diff = backend.sub(end.array, start.array)
            # PyTorch's two-sided form: exact at w = 0 and w = 1, and monotone in between
            low = backend.add(start.array, backend.mul(diff, w))
            high = backend.sub(end.array, backend.mul(diff, backend.sub(1.0, w) if tensor_weight else 1.0 - w))
            out = backend.where(backend.lt(backend.abs(w), 0.5), low, high) if tensor_weight else (
                low if -0.5 < w < 0.5 else high)
        except ValueError:
            broadcast_shapes(start.shape, end.shape, getattr(weight, "shape", ()), op="lerp")
            raise
        ctx.save_for_backward(start, end, weight if isinstance(weight, TrackedTensor) else None)
        ctx.weight = None if isinstance(weight, TrackedTensor) else weight
        return start._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        start, end, weight = ctx.saved_tensors
        w = ctx.weight if weight is None else weight
        needs = ctx.needs_input_grad
        grad_start = grad * (1 - w) if needs[0] else None  # in the output's shape: the engine sums each back
        grad_end = grad * w if needs[1] else None
        grad_weight = grad * (end - start) if weight is not None and needs[2] else None
        return grad_start, grad_end, grad_weight


def _lerp_dtypes(start, end, weight):
    """lerp needs one floating dtype for start, end and a tensor weight, as PyTorch checks."""
    require_tensor("lerp", start, "input", 1)
    require_tensor("lerp", end, "end", 2)
    check_same_device("lerp", start, end, weight)
    if not start.dtype.is_floating_point:
        raise NotImplementedError(f"lerp: \"lerp_kernel\" not implemented for integer tensors ({describe(start)}); "
                                  "convert with .float() first")
    for name, other in (("end", end), ("weight", weight)):
        if isinstance(other, TrackedTensor) and other.dtype is not start.dtype:
            raise RuntimeError(f"lerp: expected dtype {start.dtype.name} for `{name}` but got dtype "
                               f"{other.dtype.name}; convert it with .to({start.dtype.name})")


# --- functional forms ---------------------------------------------------------------------------

def log2(input):
    return Log2.apply(input)


def log10(input):
    return Log10.apply(input)


def exp2(input):
    """2 to the power x."""
    return Exp2.apply(input)


def frac(input):
    """The fractional part x − trunc(x), with x's sign."""
    return Frac.apply(input)


def signbit(input):
    """True where the sign bit is set (x < 0, and −0.0)."""
    return Signbit.apply(input)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """NaN → nan, +inf → posinf, −inf → neginf; the infinities default to the dtype's largest finite values."""
    largest = _LARGEST.get(input.dtype.name, 0.0)
    return NanToNum.apply(input, nan, largest if posinf is None else posinf, -largest if neginf is None else neginf)


def angle(input):
    """The argument of each element as a complex number: π for negatives, 0 otherwise (NaN stays NaN)."""
    return Angle.apply(input)


def positive(input):
    """+x: the tensor itself, as in PyTorch (bool tensors are refused)."""
    if input.dtype.name == "bool":
        raise RuntimeError(f"positive: The `+` operator, on a bool tensor is not supported ({describe(input)})")
    return input


def copysign(input, other):
    """``|input|`` with the sign of other (a tensor or a number); integer inputs give floats."""
    return Copysign.apply(input, other)


def fmod(input, other):
    """The remainder of truncated division, with the dividend's sign (C's fmod); remainder takes the divisor's."""
    out = Fmod.apply(input, other)
    _refuse_integer_division_by_zero("fmod", out, other)
    return out


def remainder(input, other):
    """The remainder of floor division, with the divisor's sign (Python's %); a number may come first."""
    if not isinstance(input, TrackedTensor):
        input = number_first("remainder", input, other)
    return Remainder.apply(input, other)


def floor_divide(input, other):
    """input // other, rounding towards −∞."""
    if not isinstance(input, TrackedTensor):
        input = number_first("floor_divide", input, other)
    return FloorDivide.apply(input, other)


fmax = tensor_first("fmax", Fmax, "The larger of each pair; where one is NaN the other wins (maximum propagates "
                                   "NaN instead).")
fmin = tensor_first("fmin", Fmin, "The smaller of each pair; where one is NaN the other wins.")
logaddexp = tensor_first("logaddexp", Logaddexp, "log(exp(input) + exp(other)), computed without overflow.")
logaddexp2 = tensor_first("logaddexp2", Logaddexp2, "log2(2**input + 2**other), computed without overflow.")
nextafter = tensor_first("nextafter", Nextafter, "The next floating-point number after input, towards other.")
gcd = tensor_first("gcd", Gcd, "The greatest common divisor of each pair of integers.")
lcm = tensor_first("lcm", Lcm, "The least common multiple of each pair of integers.")


def heaviside(input, values):
    """The step function: 0 below zero, 1 above, ``values`` at zero (same dtype as input)."""
    require_tensor("heaviside", input, "input", 1)
    require_tensor("heaviside", values, "values", 2)
    if input.dtype is not values.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes ({describe(input)} "
                           f"and {describe(values)}); convert values with .to({input.dtype.name})")
    return Heaviside.apply(input, values)


def float_power(input, exponent):
    """input ** exponent computed in float64 (the result is always float64)."""
    if not isinstance(input, TrackedTensor) and not isinstance(exponent, TrackedTensor):
        raise TypeError(f"float_power: expected a tensor for input or exponent, got {describe(input)} and "
                        f"{describe(exponent)}")
    def double(value):
        return value.double() if isinstance(value, TrackedTensor) else float(value)

    return _pow(double(input), double(exponent))


def ldexp(input, other):
    """input · 2^other, as PyTorch defines it (a float result)."""
    require_tensor("ldexp", input, "input", 1)
    require_tensor("ldexp", other, "other", 2)
    return mul(input, _pow(2.0, other))


def frexp(input):
    """``(mantissa, exponent)`` with ``input = mantissa · 2^exponent`` and ``0.5 ≤ |mantissa| < 1`` (int32 exponent)."""
    return frexp_result(*Frexp.apply(input))


def lerp(input, end, weight):
    """input + weight · (end − input); weight a number or a tensor (all broadcast)."""
    return Lerp.apply(input, end, weight)


def _check_value(op: str, value, *tensors):
    """As for add's alpha: a float value needs a floating-point result (PyTorch would truncate it silently)."""
    if isinstance(value, float) and not any(t.dtype.is_floating_point for t in tensors):
        raise RuntimeError(f"{op}: For integral input tensors, argument value must not be a floating point number "
                           f"(got value={value} with {', '.join(describe(t) for t in tensors)}); convert with .float()")


def addcmul(input, tensor1, tensor2, *, value=1):
    """input + value · tensor1 · tensor2, broadcasting."""
    _check_value("addcmul", value, input, tensor1, tensor2)
    product = tensor1 * tensor2 if value == 1 else tensor1 * value * tensor2
    return input + product


def addcdiv(input, tensor1, tensor2, *, value=1):
    """input + value · tensor1 / tensor2, broadcasting (true division: integer tensors are refused)."""
    if not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:
        raise RuntimeError("addcdiv: Integer division with addcdiv is no longer supported, and in a future release "
                           "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior "
                           "can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           f"for all dtypes (got {describe(tensor1)} and {describe(tensor2)}).")
    quotient = tensor1 / tensor2 if value == 1 else tensor1 * value / tensor2
    return input + quotient


def rsub(input, other, *, alpha=1):
    """other − alpha · input (subtraction with the operands reversed)."""
    if not isinstance(other, TrackedTensor):
        other = number_first("rsub", other, input)
    return sub(other, input, alpha=alpha)


sgn, absolute, negative, fix = sign, abs, neg, trunc


class PointwiseMethods:
    """Tensor's methods for the ops of this file (mixed into gradlab.Tensor)."""

    __slots__ = ()

    log2, log10, exp2, frac, signbit, nan_to_num, positive = log2, log10, exp2, frac, signbit, nan_to_num, positive
    copysign, fmod, fmax, fmin, nextafter = copysign, fmod, fmax, fmin, nextafter
    logaddexp, logaddexp2 = logaddexp, logaddexp2
    gcd, lcm, heaviside, float_power, ldexp, frexp, lerp = gcd, lcm, heaviside, float_power, ldexp, frexp, lerp
    addcmul, addcdiv, sgn, absolute, negative, fix, angle = addcmul, addcdiv, sgn, absolute, negative, fix, angle

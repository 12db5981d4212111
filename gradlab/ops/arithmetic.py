"""Arithmetic: + - * / ** // %, negation and comparisons, with broadcasting.

Each Function keeps forward and backward side by side. Backward is written with Tensor
operations, so the same formula gives plain gradients normally and a differentiable graph under
``create_graph=True`` (that is all higher-order gradients need). A formula returns
the gradient of a broadcast input in the broadcast shape; the engine sums it back over the
stretched dimensions (as PyTorch's does), so no formula here undoes broadcasting itself.
"""

from __future__ import annotations

import math

from ..autograd.function import Function, defined_by_caller, name_nodes
from ..dtypes import bool_, get_default_dtype, result_dtype, result_dtype_with_scalar
from ._common import TrackedTensor, binary_operands, broadcast_shapes, describe


def _compute(op: str, primitive: str, a, b):
    """Run one binary primitive; a backend failure becomes an error naming op, shapes and fix."""
    if isinstance(b, TrackedTensor) and a.array.dtype is b.array.dtype and a.device is b.device:
        a_data, b_data = a.array, b.array  # the usual case: nothing to promote or check
    else:
        a_data, b_data, _ = binary_operands(op, a, b)
    try:
        return a._wrap(getattr(a.device.backend, primitive)(a_data, b_data))
    except ValueError as error:
        broadcast_shapes(a.shape, getattr(b, "shape", ()), op=op)  # raises the clear ShapeError when shapes clash
        raise RuntimeError(f"{op}: {error} ({describe(a)} and {describe(b)})") from None


def _compute_no_bool(op: str, a, b):
    """pow, floor_divide and remainder: PyTorch has no bool kernel for them (numpy would quietly make int8)."""
    if a.dtype is bool_ and _is_bool(b):
        raise NotImplementedError(f"{op}: \"{op}\" not implemented for 'Bool' ({describe(a)} and {describe(b)}); "
                                  "convert the operands first, e.g. x.int()")
    return _compute(op, op, a, b)


def _is_bool(x) -> bool:
    return x.__class__ is bool or isinstance(x, TrackedTensor) and x.dtype is bool_


def _result_dtype(a, b):
    """The dtype of a binary op's result (a is a Tensor, b a Tensor or a Python number)."""
    if isinstance(b, TrackedTensor):
        return result_dtype(a.dtype, a.ndim, b.dtype, b.ndim)
    return result_dtype_with_scalar(a.dtype, b)


def _number_tensor(op: str, x, number):
    """The Python number of a reflected operator (2 - x) as a 0-d tensor of the result dtype."""
    if not isinstance(number, (int, float, bool)):
        _, number, _ = binary_operands(op, x, number)  # a TypeError for non-numbers; a numpy scalar gives its number
    return x.new_full((), number, dtype=result_dtype_with_scalar(x.dtype, number))


class Add(Function):
    """a + b: the gradient passes to both inputs unchanged (reduced by the engine where broadcast)."""

    derivative = "∂L/∂a = g;  ∂L/∂b = g"

    @staticmethod
    def forward(ctx, a, b):
        return _compute("add", "add", a, b)

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Sub(Function):
    """a - b: the gradient passes to a unchanged and to b negated (reduced by the engine where broadcast)."""

    derivative = "∂L/∂a = g;  ∂L/∂b = −g"

    @staticmethod
    def forward(ctx, a, b):
        if a.dtype is bool_ and _is_bool(b):  # numpy refuses it too, with its own message
            raise RuntimeError("sub: Subtraction, the `-` operator, with two bool tensors is not supported. "
                               "Use the `^` or `logical_xor()` operator instead.")
        return _compute("sub", "sub", a, b)

    @staticmethod
    def backward(ctx, grad):
        return grad, (-grad if ctx.needs_input_grad[1] else None)


class Rsub(Sub):
    """number - b (the reflected operator): Sub with the number as a 0-d tensor, named as PyTorch's rsub."""

    node_names = ("RsubBackward1",)


class Mul(Function):
    """a * b: each input receives the incoming gradient times the other input, summed back where broadcast."""

    derivative = "∂L/∂a = g · b;  ∂L/∂b = g · a"

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b if isinstance(b, TrackedTensor) else None)
        ctx.b_number = None if isinstance(b, TrackedTensor) else b
        return _compute("mul", "mul", a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        if b is None:
            return grad * ctx.b_number, None
        grad_a = grad * b if ctx.needs_input_grad[0] else None
        grad_b = grad * a if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Div(Function):
    """a / b: a receives the gradient divided by b, and b receives minus the gradient times a / b²."""

    derivative = "∂L/∂a = g / b;  ∂L/∂b = −g · a / b²"

    @staticmethod
    def forward(ctx, a, b):
        if not a.dtype.is_floating_point and not (isinstance(b, TrackedTensor) and b.dtype.is_floating_point):
            a = a.to(get_default_dtype())  # true division of integers gives floats, as in PyTorch
        ctx.save_for_backward(a, b if isinstance(b, TrackedTensor) else None)
        ctx.b_number = None if isinstance(b, TrackedTensor) else b
        return _compute("div", "div", a, b)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        if b is None:
            return grad / ctx.b_number, None
        grad_a = grad / b if ctx.needs_input_grad[0] else None
        grad_b = -grad * a / (b * b) if ctx.needs_input_grad[1] else None
        return grad_a, grad_b


class Neg(Function):
    """-a: the gradient comes back with its sign flipped."""

    derivative = "∂L/∂a = −g"

    @staticmethod
    def forward(ctx, a):
        if a.dtype.name == "bool":
            raise RuntimeError(
                "neg: negation, the `-` operator, on a bool tensor is not supported. "
                "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
            )
        return a._wrap(a.device.backend.neg(a.array))

    @staticmethod
    def backward(ctx, grad):
        return -grad


class Pow(Function):
    """a ** b: the base receives the gradient times b · a^(b−1), the exponent the gradient times out · log(a).

    Where b = 0 the base receives 0 (even at a = 0), and where a = 0 with b ≥ 0 the exponent receives 0.
    """

    derivative = "∂L/∂a = g · b · a^(b−1);  ∂L/∂b = g · out · log(a)"
    node_names = ("PowBackward0", "PowBackward1")  # a number exponent; a tensor exponent

    @staticmethod
    def forward(ctx, a, b):
        if isinstance(b, int) and b < 0 and not a.dtype.is_floating_point:
            raise RuntimeError(
                f"pow: integers to negative integer powers are not allowed ({describe(a)} ** {b}); "
                "convert the base with .float() first"
            )
        out = _compute_no_bool("pow", a, b)
        if isinstance(b, TrackedTensor):
            ctx.recorded_as(1)
        ctx.save_for_backward(a, b if isinstance(b, TrackedTensor) else None, out)
        ctx.b_number = None if isinstance(b, TrackedTensor) else b
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b, out = ctx.saved_tensors
        if b is None:
            exponent = ctx.b_number
            if exponent == 0:
                return grad * 0.0, None
            return grad * exponent * a ** (exponent - 1), None
        grad_a = None
        if ctx.needs_input_grad[0]:
            exponent = (b - 1).masked_fill(b == 0, 0.0)  # b * a^(b-1) is 0 where b == 0, even at a == 0 (not 0 * inf)
            grad_a = grad * b * a ** exponent
        grad_b = None
        if ctx.needs_input_grad[1]:
            log_a = a.log().masked_fill((a == 0) & (b >= 0), 0.0)  # 0^b contributes no gradient to b
            grad_b = grad * out * log_a
        return grad_a, grad_b


class RPow(Function):
    """number ** b: the exponent b receives the gradient times out · log(number) (the number gets none)."""

    derivative = "∂L/∂b = g · out · log(number)"
    node_names = ("PowBackward2",)  # PyTorch's pow(Scalar self, Tensor exponent)

    @staticmethod
    def forward(ctx, b, number):
        base = _number_tensor("pow", b, number)
        out = _compute_no_bool("pow", base, b)
        ctx.save_for_backward(b, out)
        ctx.number = base.item()
        return out

    @staticmethod
    def backward(ctx, grad):
        b, out = ctx.saved_tensors
        if ctx.number == 0:  # as for tensor bases: 0^b gives b no gradient where b >= 0, and -inf where b < 0
            log_number = out.new_full(out.shape, -math.inf).masked_fill(b >= 0, 0.0)
        else:
            log_number = math.log(ctx.number) if ctx.number > 0 else math.nan
        return grad * out * log_number, None


def _no_grad_binary(op: str, primitive: str, expression: str, kind: str):
    """Ops without a gradient (comparisons and logical ops): ``expression`` and ``kind`` make the docstring."""

    class NoGradBinary(Function):
        __doc__ = f"{expression}: {kind}, so no gradient flows through it."
        derivative = "no gradient (piecewise constant)"

        @staticmethod
        def forward(ctx, a, b):
            return _compute(op, primitive, a, b)

        @staticmethod
        def backward(ctx, grad):
            return None, None

    NoGradBinary.__name__ = NoGradBinary.__qualname__ = "".join(p.capitalize() for p in op.split("_"))
    name_nodes(NoGradBinary)
    defined_by_caller(NoGradBinary)
    return NoGradBinary


Eq = _no_grad_binary("eq", "eq", "a == b", "a comparison")
Ne = _no_grad_binary("ne", "ne", "a != b", "a comparison")
Lt = _no_grad_binary("lt", "lt", "a < b", "a comparison")
Le = _no_grad_binary("le", "le", "a <= b", "a comparison")
Gt = _no_grad_binary("gt", "gt", "a > b", "a comparison")
Ge = _no_grad_binary("ge", "ge", "a >= b", "a comparison")
LogicalAnd = _no_grad_binary("logical_and", "logical_and", "a and b, elementwise", "a logical op with a bool result")
LogicalOr = _no_grad_binary("logical_or", "logical_or", "a or b, elementwise", "a logical op with a bool result")
LogicalXor = _no_grad_binary("logical_xor", "logical_xor", "a xor b, elementwise", "a logical op with a bool result")


def _refuse_integer_division_by_zero(op: str, out, b) -> None:
    """Integers have no inf: PyTorch raises where numpy would quietly give 0."""
    if out.dtype.is_floating_point:
        return
    if isinstance(b, TrackedTensor):
        backend = b.device.backend
        zero = bool(backend.to_numpy(backend.any(backend.eq(b.array, 0), None, False)))
    else:
        zero = b == 0
    if zero:
        raise RuntimeError(f"{op}: ZeroDivisionError: integer division by zero (divisor {describe(b)}); "
                           "use floats if you want inf")


class FloorDivide(Function):
    """a // b: piecewise constant, so no gradient flows through it (None for both inputs, as in PyTorch)."""

    derivative = "no gradient (piecewise constant)"

    @staticmethod
    def forward(ctx, a, b):
        out = _compute_no_bool("floor_divide", a, b)
        _refuse_integer_division_by_zero("floor_divide", out, b)
        return out

    @staticmethod
    def backward(ctx, grad):
        return None, None


class Remainder(Function):
    """a % b (sign of b, like Python): a receives the gradient unchanged, b minus the gradient times floor(a / b)."""

    derivative = "∂L/∂a = g;  ∂L/∂b = −g · floor(a / b)"
    node_names = ("RemainderBackward0", "RemainderBackward1")  # a number divisor; a tensor divisor

    @staticmethod
    def forward(ctx, a, b):
        if isinstance(b, TrackedTensor):
            ctx.recorded_as(1)
        ctx.save_for_backward(a, b if isinstance(b, TrackedTensor) else None)
        out = _compute_no_bool("remainder", a, b)
        _refuse_integer_division_by_zero("remainder", out, b)
        return out

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_b = -grad * (a / b).floor() if b is not None and ctx.needs_input_grad[1] else None
        return grad, grad_b


def add(input, other, *, alpha=1):
    """input + alpha * other, broadcasting."""
    return Add.apply(input, other if alpha == 1 else _scaled("add", input, other, alpha))


def sub(input, other, *, alpha=1):
    return Sub.apply(input, other if alpha == 1 else _scaled("sub", input, other, alpha))


def _scaled(op, input, other, alpha):
    """alpha * other for add/sub; as in PyTorch, a float alpha needs a floating-point result."""
    if isinstance(alpha, float) and not _result_dtype(input, other).is_floating_point:
        raise RuntimeError(f"{op}: For integral input tensors, argument alpha must not be a floating point number "
                           f"(got alpha={alpha} with {describe(input)} and {describe(other)}); convert with .float()")
    return other * alpha


def mul(input, other):
    return Mul.apply(input, other)


def div(input, other, *, rounding_mode=None):
    """True division; rounding_mode 'floor' or 'trunc' as in PyTorch."""
    if rounding_mode is None:
        return Div.apply(input, other)
    if rounding_mode == "floor":
        return FloorDivide.apply(input, other)
    if rounding_mode == "trunc":
        dtype = _result_dtype(input, other)
        q = Div.apply(input, other).trunc()
        return q if dtype.is_floating_point else q.to(dtype)
    raise RuntimeError(f"div: rounding_mode must be None, 'floor' or 'trunc', got {rounding_mode!r}")


def pow(input, exponent):
    if not isinstance(input, TrackedTensor):
        return RPow.apply(exponent, input)
    return Pow.apply(input, exponent)


def neg(input):
    return Neg.apply(input)


class ArithmeticMethods:
    """Tensor's arithmetic methods and operators (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def add(self, other, *, alpha=1):
        return add(self, other, alpha=alpha)

    def sub(self, other, *, alpha=1):
        return sub(self, other, alpha=alpha)

    def mul(self, other):
        return Mul.apply(self, other)

    def div(self, other, *, rounding_mode=None):
        return div(self, other, rounding_mode=rounding_mode)

    def pow(self, exponent):
        return Pow.apply(self, exponent)

    def neg(self):
        return Neg.apply(self)

    def floor_divide(self, other):
        return FloorDivide.apply(self, other)

    def remainder(self, other):
        return Remainder.apply(self, other)

    def eq(self, other):
        return Eq.apply(self, other)

    def ne(self, other):
        return Ne.apply(self, other)

    def lt(self, other):
        return Lt.apply(self, other)

    def le(self, other):
        return Le.apply(self, other)

    def gt(self, other):
        return Gt.apply(self, other)

    def ge(self, other):
        return Ge.apply(self, other)

    subtract = sub
    multiply = mul
    divide = div
    true_divide = div
    greater = gt
    greater_equal = ge
    less = lt
    less_equal = le
    not_equal = ne

    def __add__(self, other):  # the operators call apply directly: they are the hottest path
        return Add.apply(self, other)

    def __sub__(self, other):
        return Sub.apply(self, other)

    __mul__ = mul

    def __truediv__(self, other):
        return Div.apply(self, other)

    __pow__ = pow
    __floordiv__ = floor_divide
    __mod__ = remainder
    __neg__ = neg
    __eq__ = eq
    __ne__ = ne
    __lt__ = lt
    __le__ = le
    __gt__ = gt
    __ge__ = ge

    def __radd__(self, other):
        return Add.apply(self, other)

    def __rmul__(self, other):
        return Mul.apply(self, other)

    def __rsub__(self, other):
        return Rsub.apply(_number_tensor("sub", self, other), self)

    def __rtruediv__(self, other):
        return Div.apply(_number_tensor("div", self, other), self)

    def __rpow__(self, other):
        return RPow.apply(self, other)

    def __rfloordiv__(self, other):
        return FloorDivide.apply(_number_tensor("floor_divide", self, other), self)

    def __rmod__(self, other):
        return Remainder.apply(_number_tensor("remainder", self, other), self)

    def __pos__(self):
        return self

    __hash__ = object.__hash__

"""Two-input elementwise ops as one pattern: promote the operands, compute on arrays, route the gradient.

``binary`` is the two-input twin of ``elementwise``: ``compute(backend, a, b)`` makes the output
from arrays in the result dtype (PyTorch's promotion), and each input's gradient is a small
formula written with Tensor operations, in the output's shape: the engine sums the gradient of an
input that was broadcast back to its shape (``autograd/broadcasting.py``), as for every op.
"""

from __future__ import annotations

from ..autograd.function import Function, defined_by_caller, name_nodes
from ..dtypes import get_default_dtype
from ._common import TrackedTensor, binary_operands, broadcast_shapes, describe
from .arithmetic import _number_tensor

# PyTorch's own names for dtypes in its "not implemented for 'Long'" messages
TORCH_NAMES = {"bool": "Bool", "int32": "Int", "int64": "Long", "float16": "Half", "bfloat16": "BFloat16",
               "float32": "Float", "float64": "Double"}


def not_implemented(op: str, dtype, *operands, fix: str):
    """PyTorch's NotImplementedError for a dtype an op has no kernel for, with the operands and a fix."""
    found = " and ".join(describe(x) for x in operands)
    return NotImplementedError(f"{op}: \"{op}\" not implemented for '{TORCH_NAMES[dtype.name]}' ({found}); {fix}")


def require_tensor(op: str, value, argument: str = "other", position: int = 2) -> None:
    """PyTorch's TypeError for an op whose argument must be a tensor (atan2, hypot, logaddexp ...)."""
    if not isinstance(value, TrackedTensor):
        raise TypeError(f"{op}(): argument '{argument}' (position {position}) must be Tensor, not "
                        f"{type(value).__name__}; wrap a number first, e.g. gradlab.tensor({value!r})")


def check_dtype(op: str, dtype, inputs: str, *operands):
    """The dtype an op computes in, by its policy, or PyTorch's error for the dtypes it has no kernel for.

    "float": integer and bool results become the default float (atan2, xlogy); "floats": floating
    point only (logaddexp, nextafter); "keep": any number but bool (fmod, fmax); "integers": integers
    only (gcd, lcm, shifts); "bits": integers and bool (bitwise and/or/xor); "any": every dtype.
    """
    if inputs == "any":
        return dtype
    if dtype.is_floating_point:
        if inputs in ("integers", "bits"):
            raise not_implemented(op, dtype, *operands, fix="bitwise and integer ops need integer tensors; "
                                                           "convert with .long() (or compare first: x > 0)")
        return dtype
    if inputs == "float":
        return get_default_dtype()
    if inputs == "floats":
        raise not_implemented(op, dtype, *operands, fix="convert the operands to floats first, e.g. x.float()")
    if dtype.name == "bool" and inputs in ("keep", "integers"):
        raise not_implemented(op, dtype, *operands, fix="convert the operands first, e.g. x.int()")
    return dtype


def promoted(op: str, a, b, inputs: str):
    """(a's array, b's array or number, dtype): both in the dtype the op computes in."""
    a_data, b_data, dtype = binary_operands(op, a, b)
    wanted = check_dtype(op, dtype, inputs, a, b)
    if wanted is not dtype:
        backend = a.device.backend
        a_data = backend.astype(a_data, wanted)
        if isinstance(b, TrackedTensor):
            b_data = backend.astype(b_data, wanted)
    return a_data, b_data, wanted


def run(op: str, compute, a, b, *args):
    """compute(backend, *args); a backend failure on shapes that clash becomes the clear ShapeError."""
    try:
        return compute(a.device.backend, *args)
    except ValueError:
        broadcast_shapes(a.shape, getattr(b, "shape", ()), op=op)
        raise


def binary(op: str, compute, grad_a=None, grad_b=None, inputs: str = "float", *, numbers: bool = True,
           saves: str = "a b", doc: str, derivative: str):
    """A Function for ``out = f(a, b)`` elementwise, broadcasting, b a tensor or (if ``numbers``) a Python number.

    ``grad_a(g, a, b, out)`` and ``grad_b(g, a, b, out)`` give each input's gradient with Tensor
    operations; without them the op passes no gradient (comparisons, bit ops, rounding steps).
    ``saves`` names what the formulas read ("a", "b", "out"), so only that is kept for backward.
    """
    saved = saves.split()

    class Binary(Function):
        @staticmethod
        def forward(ctx, a, b):
            if not numbers:
                require_tensor(op, b)
            a_data, b_data, _ = promoted(op, a, b, inputs)
            out = a._wrap(run(op, compute, a, b, a_data, b_data))
            if grad_a is not None or grad_b is not None:
                b_tensor = isinstance(b, TrackedTensor)
                ctx.save_for_backward(a if "a" in saved else None, b if b_tensor and "b" in saved else None,
                                      out if "out" in saved else None)
                ctx.b_number = None if b_tensor else b
            return out

        @staticmethod
        def backward(ctx, grad):
            if grad_a is None and grad_b is None:
                return None, None
            a, b, out = ctx.saved_tensors
            b = ctx.b_number if ctx.b_number is not None else b
            needs = ctx.needs_input_grad
            da = grad_a(grad, a, b, out) if needs[0] and grad_a else None
            db = grad_b(grad, a, b, out) if needs[1] and grad_b else None
            return da, db

    name = "".join(part.capitalize() for part in op.split("_"))
    Binary.__doc__, Binary.derivative = doc, derivative
    Binary.__name__ = Binary.__qualname__ = name
    name_nodes(Binary)
    return defined_by_caller(Binary)


def number_first(op: str, number, other):
    """A Python number on the left (xlogy(2.0, y), bitwise_and(3, x)) as a 0-d tensor of the result dtype."""
    if not isinstance(other, TrackedTensor):
        raise TypeError(f"{op}: expected at least one tensor, got {describe(number)} and {describe(other)}; "
                        f"wrap one first, e.g. gradlab.tensor({number!r})")
    return _number_tensor(op, other, number)


def tensor_first(name: str, function, doc: str):
    """The functional form ``name(input, other)`` of a two-input Function whose first operand must be a tensor."""
    def op(input, other):
        require_tensor(name, input, "input", 1)
        return function.apply(input, other)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = doc
    return op

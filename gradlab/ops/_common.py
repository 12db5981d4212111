"""Helpers every op module shares: operands, broadcasting, dims, and error messages.

Ops are written on gradlab Tensors but reach their data through ``x.array`` and their backend
through ``x.device.backend``; new tensors come from ``x._wrap(array)`` so this layer never needs
to import the Tensor class above it.
"""

from __future__ import annotations

import operator

from ..autograd.function import TrackedTensor
from ..dtypes import check_int_fits, result_dtype, result_dtype_with_scalar

Tensor = TrackedTensor  # for isinstance checks: every gradlab Tensor is a TrackedTensor


class ShapeError(RuntimeError):
    """Shapes that an operation cannot combine (PyTorch raises RuntimeError for these too)."""


def shape_str(shape) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ")"


def describe(x) -> str:
    """'float32 tensor of shape (2, 3) on cpu' or 'Python float 2.0' for error messages."""
    if isinstance(x, TrackedTensor):
        return f"{x.dtype.name} tensor of shape {shape_str(x.shape)} on {x.device}"
    return f"Python {type(x).__name__} {x!r}"


def broadcast_shapes(*shapes, op: str = "broadcast_shapes") -> tuple:
    """The shape that all of ``shapes`` broadcast to, by numpy's and PyTorch's rule."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for shape in shapes:
        for i, n in enumerate(shape, ndim - len(shape)):
            if n != 1:
                if out[i] != 1 and out[i] != n:
                    raise ShapeError(
                        f"{op}: shapes " + " and ".join(shape_str(s) for s in shapes) + " cannot be broadcast together: "
                        f"at dimension {i - ndim} the sizes are {out[i]} and {n}; sizes must match or be 1"
                    )
                out[i] = n
    return tuple(out)


def check_same_device(op: str, *tensors) -> None:
    """PyTorch's rule: the tensors one op combines all live on one device (numbers and None are skipped).

    Every op that takes two or more tensors asks here (or, on a hot path, compares ``a.device is
    b.device`` itself and raises ``mixed_devices``), so the error reads the same everywhere.
    """
    first = None
    for t in tensors:
        if isinstance(t, TrackedTensor):
            if first is None:
                first = t
            elif t.device is not first.device:
                raise mixed_devices(op, first, t)


def mixed_devices(op: str, a, b) -> RuntimeError:
    """The error for two tensors of one op on different devices, naming both and the fix."""
    return RuntimeError(
        f"{op}: expected all tensors to be on the same device, but found at least two devices, {a.device} and "
        f"{b.device}! (a {describe(a)} and a {describe(b)}); move one to the other's device first, "
        f"with .to('{a.device}') or .to('{b.device}')"
    )


_INT32_LIMIT = 1 << 31


def binary_operands(op: str, a, b):
    """The arrays (or Python numbers) to compute with, cast to the result dtype, and that dtype.

    ``a`` is a Tensor; ``b`` is a Tensor or a Python number. The usual case (same dtype and
    device) is one comparison; promotion and device checks happen only when they differ.
    """
    if isinstance(b, TrackedTensor):
        if a.device is not b.device:
            raise mixed_devices(op, a, b)
        da, db = a.dtype, b.dtype
        if da is db:
            return a.array, b.array, da
        dtype = result_dtype(da, a.ndim, db, b.ndim)
        return data_in(a, dtype), data_in(b, dtype), dtype
    if type(b) not in (int, float, bool) and getattr(b, "shape", None) == () and hasattr(b, "item"):
        b = b.item()  # a numpy scalar counts as the Python number it holds, as in PyTorch
    if isinstance(b, (int, float, bool)):
        dtype = result_dtype_with_scalar(a.dtype, b)
        if type(b) is int and not -_INT32_LIMIT <= b < _INT32_LIMIT:
            check_int_fits(op, b, dtype)  # else numpy fails with "Python int too large to convert to C long"
        return data_in(a, dtype), b, dtype
    raise TypeError(f"{op}: unsupported operand {describe(b)}; expected a gradlab Tensor or a Python number")


def data_in(x, dtype):
    """A tensor's backend array in ``dtype``: the array itself when it already is, else a converted copy."""
    return x.array if x.dtype is dtype else x.device.backend.astype(x.array, dtype)


def array_in(backend, array, dtype):
    """A backend array in ``dtype`` (numpy, for one, sums int32 into int64 on its own)."""
    return array if backend.dtype_of(array) is dtype else backend.astype(array, dtype)


def int_tuple(op: str, args) -> tuple:
    """Sizes or dims given as f(2, 3) or f((2, 3)) / f([2, 3]), as a tuple of ints."""
    while len(args) == 1 and isinstance(args[0], (tuple, list)) or (len(args) == 1 and hasattr(args[0], "tolist")
                                                                    and not hasattr(args[0], "__index__")):
        args = args[0]
    try:
        return tuple(map(operator.index, args))
    except TypeError:
        odd = next((a for a in args if not hasattr(type(a), "__index__")), None)
        which = f"; {odd!r} is a {type(odd).__name__}" if odd is not None else ""
        raise TypeError(f"{op}(): expected integers or one sequence of integers, got {tuple(args)!r}{which}") from None


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    """A dim in range [-ndim, ndim) as a non-negative index, or an IndexError naming the op."""
    if dim.__class__ is not int:
        dim = dim_index(op, dim)
    size = max(ndim, 1)
    if not -size <= dim < size:
        raise IndexError(
            f"{op}: Dimension out of range (expected to be in range of [{-size}, {size - 1}], but got {dim})"
        )
    return dim % size


def dim_index(op: str, dim) -> int:
    """A dim given as something other than a Python int: numpy integers pass, floats and strings do not."""
    if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
        hint = f"dim={int(dim)}" if isinstance(dim, float) and dim.is_integer() else "an int such as dim=0 or dim=-1"
        raise TypeError(f"{op}: dim must be an int (or a tuple of ints), got {dim!r} of type {type(dim).__name__}; "
                        f"dims count axes, so pass {hint}")
    return dim.__index__()


def normalize_dims(op: str, dim, ndim: int) -> tuple:
    """dim=None (all), an int or a tuple of ints, as a sorted tuple of non-negative axes."""
    if dim is None:
        return tuple(range(ndim))
    dims = tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)
    axes = tuple(sorted({normalize_dim(op, d, ndim) for d in dims}))
    if len(axes) != len(dims):
        raise RuntimeError(f"{op}: dim {dims} appears multiple times in the list of dims")
    return axes


def float_dtype_required(op: str, x) -> None:
    """Raise PyTorch's error for ops that are only defined on floating-point tensors."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(
            f"{op}: expected a floating-point tensor but got {describe(x)}; convert it first with .float()"
        )


def in_place(name: str, function):
    """The Tensor method ``name`` (exp_, clamp_, ...): compute out of place, then write back (Tensor._inplace)."""
    def method(self, *args, **kwargs):
        compute = (lambda x, *a: function(x, *a, **kwargs)) if kwargs else function
        return self._inplace(name, compute, *args)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"In-place {name[:-1]}: the result of {name[:-1]}(self, ...) written into this tensor."
    return method

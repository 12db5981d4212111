"""Undoing broadcasting in backward: one rule, written once, for the engine, the ops and the compiler.

An input of shape (3, 1) broadcast to (2, 3, 4) was read once for every element along the dims
that broadcasting added in front (the 2) or stretched from size 1 (the 4), so its gradient is the
gradient of the output summed over those dims. ``summed_dims`` finds them from the two shapes;
``sum_to_shape`` sums a tensor (with Tensor ops, so ``create_graph`` records it) and
``sum_array_to_shape`` a backend array (for compiled programs, which run on arrays).
"""

from __future__ import annotations

from ..dtypes import NATIVE_TO_DTYPE


def summed_dims(got: tuple, shape: tuple):
    """The dims of a gradient shaped ``got`` to sum, keeping them, to bring it back to ``shape``: the
    leading dims broadcasting added and the size-1 dims it stretched. None if ``shape`` does not
    broadcast to ``got`` (then no sum can undo it)."""
    lead = len(got) - len(shape)
    if lead < 0:
        return None
    dims = list(range(lead))
    for i, n in enumerate(shape, lead):
        if n != got[i]:
            if n != 1:
                return None
            dims.append(i)
    return tuple(dims)


def _not_broadcast(got, shape) -> ValueError:
    return ValueError(f"cannot sum a gradient of shape {list(got)} back to shape {list(shape)}: the shape "
                      "does not broadcast to it (each size must be 1 or match, counting from the last)")


def sum_to_shape(grad, shape):
    """``grad`` (a tensor) summed over the dims where an input of ``shape`` was broadcast; a gradient
    already in ``shape`` is returned as it is, after one comparison."""
    got = grad.array.shape
    if got == shape:
        return grad
    got, shape = tuple(got), tuple(shape)
    dims = summed_dims(got, shape)
    if dims is None:
        raise _not_broadcast(got, shape)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.reshape(shape) if len(got) != len(shape) else grad


def sum_array_to_shape(backend, a, shape):
    """The array twin of ``sum_to_shape``: backend array ``a`` summed back to ``shape``."""
    got = a.shape
    if got == shape:
        return a
    got, shape = tuple(got), tuple(shape)
    dims = summed_dims(got, shape)
    if dims is None:
        raise _not_broadcast(got, shape)
    if dims:
        a = backend.sum(a, dims, True)
    return backend.reshape(a, shape) if len(got) != len(shape) else a


def fit_to_input(grad, shape, dtype):
    """A gradient as the engine hands it to an input of ``shape`` and native ``dtype`` (None: any):
    summed back over broadcasting and cast to the input's dtype, as PyTorch's engine does."""
    grad = sum_to_shape(grad, shape)
    if dtype is not None and grad.array.dtype != dtype:
        # bfloat16 + float32 is float32, and so is the grad it returns: PyTorch's engine casts each grad to
        # its input's dtype, so a bfloat16 activation gets a bfloat16 grad (autocast depends on it)
        grad = grad.to(NATIVE_TO_DTYPE[dtype])
    return grad

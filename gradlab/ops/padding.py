"""Padding: new elements around a tensor's edges — a constant, or taken from the tensor itself.

Constant padding is one Function whose gradient crops the padding off again (negative widths crop,
so the gradient of a pad is a pad with the widths negated). Reflect, replicate and circular padding
are composed from narrow, flip, expand and cat, so their gradients come from those.
"""

from __future__ import annotations

from ..autograd.function import Function
from ._common import int_tuple
from .joining import cat


class Pad(Function):
    """Constant padding, (before, after) per dim: the gradient has the padding cropped off again.

    Negative widths crop. The gradient is the same op with the widths negated: it crops away what
    was padded and pads zeros where elements were cropped.
    """

    derivative = "∂L/∂x = g with the padding cropped off (and zeros where x was cropped)"
    node_names = ("ConstantPadNdBackward0",)  # PyTorch's constant_pad_nd

    @staticmethod
    def forward(ctx, x, widths, value):
        ctx.widths = widths
        backend = x.device.backend
        data = x.array
        if any(lo < 0 or hi < 0 for lo, hi in widths):
            kept = tuple(slice(max(-lo, 0), n - max(-hi, 0)) for (lo, hi), n in zip(widths, x.shape))
            data = backend.getitem(data, kept)
        if any(lo > 0 or hi > 0 for lo, hi in widths):
            return x._wrap(backend.pad(data, tuple((max(lo, 0), max(hi, 0)) for lo, hi in widths), value))
        return x._wrap(backend.copy(data))

    @staticmethod
    def backward(ctx, grad):
        return Pad.apply(grad, tuple((-lo, -hi) for lo, hi in ctx.widths), 0), None, None


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input, pad, mode="constant", value=None):
    """PyTorch's F.pad: ``pad`` lists (before, after) pairs starting from the LAST dim, e.g. (left, right,
    top, bottom). 'constant' fills with value (negative widths crop); 'reflect', 'replicate' and
    'circular' take the new elements from the tensor itself and are built from narrow, flip and cat."""
    pad = int_tuple("pad", (pad,))
    if len(pad) % 2:
        raise RuntimeError(f"pad: Padding length must be divisible by 2 (got {len(pad)}: {list(pad)})")
    ndim, n = input.ndim, len(pad) // 2
    if n > ndim:
        raise RuntimeError(
            f"pad: Padding length should be less than or equal to two times the input dimension but got padding "
            f"length {len(pad)} and input of dimension {ndim}"
        )
    widths = ((0, 0),) * (ndim - n) + tuple((pad[2 * i], pad[2 * i + 1]) for i in reversed(range(n)))
    if mode == "constant":
        for axis, ((lo, hi), size) in enumerate(zip(widths, input.shape)):
            if size + lo + hi < 0:
                raise RuntimeError(
                    f"pad: The input size {size}, plus negative padding {lo} and {hi} resulted in a negative output "
                    f"size, which is invalid. Check dimension {axis} of your input."
                )
        return Pad.apply(input, widths, 0 if value is None else value)
    if mode not in _PAD_MODES:
        raise NotImplementedError(
            f"pad: unrecognised padding mode {mode!r}; gradlab supports {', '.join(map(repr, _PAD_MODES))}"
        )
    if value is not None and value != 0:
        raise RuntimeError(f'pad: Padding mode "{mode}" doesn\'t take in value argument')
    if not 1 <= n <= 3 or ndim not in (n + 1, n + 2):
        raise NotImplementedError(
            f"pad: Padding size {len(pad)} is not supported for {ndim}D input tensor in mode {mode!r}. Supported "
            "combinations for non-constant padding: 2D or 3D input with padding size 2 (pads last dimension); 3D or "
            "4D input with padding size 4 (last 2 dimensions); 4D or 5D input with padding size 6 (last 3 dimensions)"
        )
    out = input
    for axis in range(ndim - n, ndim):
        out = _pad_from_self(out, axis, *widths[axis], mode, input.shape)
    return out


def _pad_from_self(x, axis, lo, hi, mode, input_shape):
    """Pad one dim with elements of x itself (reflected, repeated edge, or wrapped round) and crop where
    a width is negative: circular mode crops first and wraps what is left, as PyTorch does."""
    if mode == "circular" and (lo < 0 or hi < 0):
        x = x.narrow(axis, -min(lo, 0), x.shape[axis] + min(lo, 0) + min(hi, 0))
        lo, hi = max(lo, 0), max(hi, 0)
    size = x.shape[axis]
    before, after = max(lo, 0), max(hi, 0)
    if mode == "reflect" and (before >= size or after >= size):
        raise RuntimeError(
            f"pad: Padding size should be less than the corresponding input dimension, but got: padding ({lo}, {hi}) "
            f"at dimension {axis} of input {list(input_shape)} (reflect mode)"
        )
    if mode == "circular" and (before > size or after > size):
        raise RuntimeError(
            f"pad: Padding value causes wrapping around more than once: padding ({lo}, {hi}) at dimension {axis} of "
            f"input {list(input_shape)} (circular mode)"
        )
    if mode == "reflect":
        left, right = x.narrow(axis, 1, before).flip(axis), x.narrow(axis, size - 1 - after, after).flip(axis)
    elif mode == "circular":
        left, right = x.narrow(axis, size - before, before), x.narrow(axis, 0, after)
    else:  # replicate: the edge element, expanded
        shape = list(x.shape)
        left = x.narrow(axis, 0, 1).expand(shape[:axis] + [before] + shape[axis + 1:])
        right = x.narrow(axis, size - 1, 1).expand(shape[:axis] + [after] + shape[axis + 1:])
    out = cat((left, x, right), axis) if before or after else x
    if lo < 0 or hi < 0:
        out = out.narrow(axis, -min(lo, 0), out.shape[axis] + min(lo, 0) + min(hi, 0))
    return out


_pad = pad  # inside constant_pad_nd the argument ``pad`` hides the function


def constant_pad_nd(input, pad, value=0):
    """pad(input, pad, mode='constant', value=value): PyTorch's name for the constant case."""
    return _pad(input, pad, "constant", value)

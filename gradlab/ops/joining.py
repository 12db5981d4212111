"""Joining tensors: cat along an existing dim, stack along a new one, and what is built from them.

numpy's hstack/vstack/dstack/column_stack, block_diag, meshgrid, cartesian_prod, combinations and
vander all assemble one tensor from pieces with cat, stack, expand or indexing.

Joined tensors of different dtypes promote as in PyTorch. The gradient of a join cuts the
output's gradient back into the pieces (narrow for cat, unbind for stack), each in its input's dtype.
"""

from __future__ import annotations

import builtins
import itertools
import operator

from ..autograd.function import Function
from ..dtypes import int64, promote
from ._common import TrackedTensor, data_in, mixed_devices, describe, normalize_dim, shape_str
from .views import atleast_1d, atleast_2d, atleast_3d


def _join_operands(op: str, tensors: tuple):
    """The arrays to join, all cast to the promoted dtype (as PyTorch does), and that dtype."""
    device = dtype = None
    for i, t in enumerate(tensors):
        if not isinstance(t, TrackedTensor):
            raise TypeError(f"{op}: expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        if device is None:
            device, dtype = t.device, t.dtype
        elif t.device is not device:
            raise mixed_devices(f"{op} (element {i})", tensors[0], t)
        else:
            dtype = promote(dtype, t.dtype)
    return [data_in(t, dtype) for t in tensors]


def _is_legacy_empty(t) -> bool:
    return t.shape == (0,)


class Cat(Function):
    """Tensors joined along an existing dim; the gradient is cut back into the pieces with narrow."""

    derivative = "∂L/∂tensors[i] = the slice of g along dim where tensors[i] was placed"

    @staticmethod
    def forward(ctx, dim, *tensors):
        arrays = _join_operands("cat", tensors)
        # PyTorch's legacy rule: 1-d empty tensors are skipped, whatever the others' shapes
        kept = [i for i, t in enumerate(tensors) if not _is_legacy_empty(t)] or list(range(len(tensors)))
        first = tensors[kept[0]]
        axis = normalize_dim("cat", dim, first.ndim)
        try:
            out = first.device.backend.concatenate([arrays[i] for i in kept], axis)
        except ValueError:
            _check_cat_shapes(tensors, kept, axis)
            raise
        ctx.axis = axis
        ctx.pieces = tuple((t.shape[axis] if i in kept else None, t.dtype) for i, t in enumerate(tensors))
        return first._wrap(out)

    @staticmethod
    def backward(ctx, grad):
        grads, start = [None], 0
        for needed, (size, dtype) in zip(ctx.needs_input_grad[1:], ctx.pieces):
            if size is None:
                grads.append(grad.new_zeros((0,), dtype=dtype) if needed else None)
                continue
            grads.append(grad.narrow(ctx.axis, start, size).to(dtype) if needed else None)
            start += size
        return tuple(grads)


def _check_cat_shapes(tensors, kept, axis) -> None:
    """Raise the clear error for tensors that cannot be joined along axis."""
    first = tensors[kept[0]]
    for i in kept:
        t = tensors[i]
        if t.ndim == 0:
            raise RuntimeError(
                f"cat: zero-dimensional tensor (at position {i}) cannot be concatenated; give it a dim first with "
                ".unsqueeze(0)"
            )
        if t.ndim != first.ndim:
            raise RuntimeError(
                f"cat: Tensors must have same number of dimensions: got {first.ndim} and {t.ndim} (shapes "
                f"{shape_str(first.shape)} and {shape_str(t.shape)} for tensors number {kept[0]} and {i} in the list)"
            )
        for d, (a, b) in enumerate(zip(first.shape, t.shape)):
            if d != axis and a != b:
                raise RuntimeError(
                    f"cat: Sizes of tensors must match except in dimension {axis}. Expected size {a} but got size {b} "
                    f"for tensor number {i} in the list (shapes {shape_str(first.shape)} and {shape_str(t.shape)} "
                    f"differ at dimension {d})"
                )


class Stack(Function):
    """Equal-shaped tensors joined along a new dim; the gradient is unbound back into the pieces."""

    derivative = "∂L/∂tensors[i] = g[i] along the new dim"

    @staticmethod
    def forward(ctx, dim, *tensors):
        arrays = _join_operands("stack", tensors)
        first = tensors[0]
        ctx.axis = axis = normalize_dim("stack", dim, first.ndim + 1)
        ctx.dtypes = tuple(t.dtype for t in tensors)
        try:
            return first._wrap(first.device.backend.stack(arrays, axis))
        except ValueError:
            for i, t in enumerate(tensors):
                if t.shape != first.shape:
                    raise RuntimeError(
                        f"stack expects each tensor to be equal size, but got {list(first.shape)} at entry 0 and "
                        f"{list(t.shape)} at entry {i}"
                    ) from None
            raise

    @staticmethod
    def backward(ctx, grad):
        pieces = grad.unbind(ctx.axis)
        return (None,) + tuple(g.to(dtype) if needed else None
                               for g, dtype, needed in zip(pieces, ctx.dtypes, ctx.needs_input_grad[1:]))


def _tensor_list(op: str, tensors) -> tuple:
    if isinstance(tensors, TrackedTensor):
        raise TypeError(f"{op}(): argument 'tensors' must be a tuple or list of Tensors, not a single Tensor; "
                        f"wrap them: gradlab.{op}([a, b], dim)")
    tensors = tuple(tensors)
    if not tensors:
        raise ValueError(f"{op}(): expected a non-empty list of Tensors")
    return tensors


def cat(tensors, dim=0):
    """Join tensors along an existing dim (dtypes promote as in PyTorch)."""
    return Cat.apply(dim, *_tensor_list("cat", tensors))


concat = concatenate = cat


def stack(tensors, dim=0):
    """Join equal-shaped tensors along a new dim."""
    return Stack.apply(dim, *_tensor_list("stack", tensors))


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids from 1-D tensors: output i varies along dim i ('ij') — or, with 'xy', the
    first two swap, as for (x, y) images. Each grid is a broadcast view (reshape + expand), no copy."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise ValueError(f"meshgrid: indexing must be 'ij' or 'xy', got {indexing!r}")
    tensors = _tensor_list("meshgrid", tensors)
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError(f"meshgrid: expected 0-D or 1-D tensors, got {describe(t)}")
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    shape = [0] * len(tensors)
    for i, t in enumerate(tensors):
        shape[order[i]] = t.numel()
    grids = []
    for i, t in enumerate(tensors):
        view = [1] * len(tensors)
        view[order[i]] = -1
        grids.append(t.reshape(view).expand(shape))
    return tuple(grids)


# --- stacking in numpy's ways, and tensors built from pieces -------------------------------------

def hstack(tensors):
    """Join side by side: along dim 1, or dim 0 for 1-d tensors (0-d tensors count as 1-d)."""
    tensors = atleast_1d(_tensor_list("hstack", tensors))
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    """Join on top of each other: along dim 0, after making every tensor at least 2-d ((n,) is a row)."""
    return cat(atleast_2d(_tensor_list("vstack", tensors)), 0)


row_stack = vstack


def dstack(tensors):
    """Join along the depth, dim 2, after making every tensor at least 3-d ((n,) is (1, n, 1))."""
    return cat(atleast_3d(_tensor_list("dstack", tensors)), 2)


def column_stack(tensors):
    """Join as columns: 0-d and 1-d tensors become (n, 1) columns, then everything is joined along dim 1."""
    tensors = _tensor_list("column_stack", tensors)
    return cat([t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in tensors], 1)


def block_diag(*tensors):
    """The tensors as blocks on the diagonal of one matrix, zeros elsewhere (0-d is 1×1, (n,) is a 1×n row)."""
    tensors = _tensor_list("block_diag", tensors)
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions ({describe(t)})")
    dtype = tensors[0].dtype
    for t in tensors[1:]:
        dtype = promote(dtype, t.dtype)
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    width, left, rows = builtins.sum(b.shape[1] for b in blocks), 0, []
    for b in blocks:
        n, m = b.shape
        before, after = b.new_zeros((n, left), dtype=dtype), b.new_zeros((n, width - left - m), dtype=dtype)
        rows.append(cat([before, b.to(dtype), after], 1))
        left += m
    return cat(rows, 0)


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-d tensor, as rows of an (N, k) tensor (itertools.product)."""
    tensors = _tensor_list("cartesian_prod", tensors)
    if len(tensors) == 1:
        return tensors[0]
    for t in tensors[1:]:
        if t.dtype is not tensors[0].dtype:
            raise RuntimeError(f"cartesian_prod: expects all tensors to have the same dtype, but got "
                               f"{describe(tensors[0])} and {describe(t)}; convert them with .to(dtype)")
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def combinations(input, r=2, with_replacement=False):
    """Every r-element combination of a 1-d tensor's elements, as rows (itertools.combinations; with
    with_replacement=True, combinations_with_replacement). The rows are gathered by index, so the
    gradient adds back to each element once per time it was picked."""
    if input.ndim != 1:
        raise RuntimeError(f"combinations: Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"combinations: Expect a non-negative number, but got {r}")
    if r == 0:
        return input[:0]
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    rows = list(pick(range(input.shape[0]), r))
    backend = input.device.backend
    index = input._wrap(backend.asarray(rows, int64))  # (combinations, r), or (0,) when there are none
    return input[index.reshape(-1)].reshape(len(rows), r)


def vander(x, N=None, increasing=False):
    """The Vandermonde matrix: column j is x ** (N - 1 - j), or x ** j with increasing=True (numpy's vander).

    The powers are running products of x along each row, so x = 0 has the right gradient too.
    """
    if x.ndim != 1:
        raise RuntimeError(f"vander: x must be a one-dimensional tensor, but got {describe(x)}")
    n = x.shape[0] if N is None else operator.index(N)
    if n < 0:
        raise RuntimeError(f"vander: N must be non-negative, got {n}")
    if not x.dtype.is_floating_point:
        x = x.to(int64)  # integer and bool inputs give int64 powers, as in PyTorch
    if n == 0:
        return x.new_zeros((x.shape[0], 0))
    columns = cat([x.new_ones((x.shape[0], 1)), x.unsqueeze(1).expand(x.shape[0], n - 1)], 1)
    powers = columns.cumprod(1)
    return powers if increasing else powers.flip(1)

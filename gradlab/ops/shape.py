"""Shape and movement: reshape, permute, expand, slicing into pieces, joining, flipping, padding.

Most of these move no numbers at all: a reshape, a permute or an expand is a *view*, a new tensor
reading the same memory through other strides. Their gradients only move the gradient back into
the input's shape: reshape it back, permute it back, sum over what expand stretched. Joining and
cutting are each other's adjoint: the gradient of ``cat`` is split, the gradient of ``split`` is cat.
"""

from __future__ import annotations

import math
import operator

from ..autograd.function import Function
from ..dtypes import promote
from ._common import TrackedTensor, describe, normalize_dim, normalize_dims, shape_str


# --- arguments ------------------------------------------------------------------------------------

def _int_tuple(op: str, args) -> tuple:
    """Sizes or dims given as f(2, 3) or f((2, 3)) / f([2, 3]), as a tuple of ints."""
    while len(args) == 1 and not hasattr(args[0], "__index__"):
        args = args[0]
    try:
        return tuple(map(operator.index, args))
    except TypeError:
        raise TypeError(f"{op}(): expected integers or one sequence of integers, got {args!r}") from None


def _resolve_shape(op: str, shape: tuple, numel: int, old_shape: tuple) -> tuple:
    """The requested shape with its one -1 filled in; an error naming both sizes if numel cannot fit it."""
    known, infer = 1, None
    for i, n in enumerate(shape):
        if n == -1:
            if infer is not None:
                raise RuntimeError(f"{op}: only one dimension can be inferred, but shape {list(shape)} has several -1")
            infer = i
        elif n < 0:
            raise RuntimeError(f"{op}: invalid shape dimension {n} at index {i} of shape {list(shape)}")
        else:
            known *= n
    if infer is None:
        if known == numel:
            return shape
    elif known != 0 and numel % known == 0:
        return shape[:infer] + (numel // known,) + shape[infer + 1:]
    elif numel == 0:
        raise RuntimeError(
            f"{op}: cannot reshape tensor of 0 elements into shape {list(shape)} because the unspecified "
            "dimension size -1 can be any value and is ambiguous"
        )
    holds = f"a multiple of {known}" if infer is not None else str(known)
    raise RuntimeError(
        f"{op}: shape '{list(shape)}' is invalid for input of size {numel}: the input has shape {shape_str(old_shape)} "
        f"({numel} elements) but the new shape holds {holds}; the sizes must multiply to {numel}"
    )


def _new_shape(op: str, x, args) -> tuple:
    return _resolve_shape(op, _int_tuple(op, args), x.numel(), x.shape)


def _view_possible(shape: tuple, strides: tuple, new_shape: tuple) -> bool:
    """PyTorch's rule (computeStride): can new_shape read x's memory through strides alone?

    Walk x's dims from the last, grouping runs that are laid out contiguously with each other; each
    run must map onto a run of whole dims of the new shape, or the view would need a copy.
    """
    if not shape or 0 in shape:
        return True
    view_d = len(new_shape) - 1
    chunk_stride, tensor_numel, view_numel = strides[-1], 1, 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new_shape[view_d] == 1):
                view_numel *= new_shape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return False
            if d > 0:
                chunk_stride, tensor_numel, view_numel = strides[d - 1], 1, 1
    return view_d == -1


def _viewable(x, new_shape: tuple) -> bool:
    if x.device.backend.is_contiguous(x.array):
        return True
    strides = x.stride()
    return len(strides) == x.ndim and _view_possible(x.shape, strides, new_shape)


# --- reshaping: views whose gradient is reshaped back ---------------------------------------------

class Reshape(Function):
    """x.reshape(shape): a view when the strides allow one, else a copy; the gradient is reshaped back."""

    derivative = "∂L/∂x = g reshaped back to x's shape"
    copies = True  # View sets this False: it must be a view or fail

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        backend = x.device.backend
        if _viewable(x, shape):
            return x._view_of(backend.reshape(x.array, shape))
        if not ctx.function.copies:
            raise RuntimeError(
                f"view size is not compatible with input tensor's size and stride (at least one dimension spans "
                f"across two contiguous subspaces): shape {list(x.shape)} with strides {list(x.stride())} cannot "
                f"be viewed as {list(shape)}. Use .reshape(...) instead."
            )
        return x._wrap(backend.reshape(backend.copy(x.array), shape))

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.shape), None


class View(Reshape):
    """x.view(shape): a view, never a copy; the gradient is reshaped back to x's shape."""

    copies = False


class Squeeze(Reshape):
    """Dropping size-1 dims (always a view); the gradient is reshaped back to x's shape."""


class Unsqueeze(Reshape):
    """Inserting a size-1 dim (always a view); the gradient is reshaped back to x's shape."""


def reshape(input, shape):
    """The same elements in a new shape (one size may be -1); a view whenever the layout allows."""
    return Reshape.apply(input, _new_shape("reshape", input, (shape,)))


def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims start_dim..end_dim into one."""
    if input.ndim == 0:
        return Reshape.apply(input, (1,))
    start = normalize_dim("flatten", start_dim, input.ndim)
    end = normalize_dim("flatten", end_dim, input.ndim)
    if start > end:
        raise RuntimeError(
            f"flatten() has invalid args: start_dim cannot come after end_dim (got {start_dim} and {end_dim})"
        )
    if start == end:
        return input
    shape = input.shape
    return Reshape.apply(input, shape[:start] + (math.prod(shape[start:end + 1]),) + shape[end + 1:])


def unflatten(input, dim, sizes):
    """Split one dim into several (sizes may hold one -1): the inverse of flatten."""
    axis = normalize_dim("unflatten", dim, input.ndim)
    sizes = _int_tuple("unflatten", (sizes,))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input.shape[axis]
    try:
        sizes = _resolve_shape("unflatten", sizes, n, (n,))
    except RuntimeError:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} ({n}) in the input "
            f"tensor of shape {shape_str(input.shape)}"
        ) from None
    return View.apply(input, input.shape[:axis] + sizes + input.shape[axis + 1:])


def squeeze(input, dim=None):
    """Remove size-1 dims (all of them, or those in dim; a named dim of another size is kept)."""
    shape = input.shape
    axes = range(len(shape)) if dim is None else normalize_dims("squeeze", dim, input.ndim)
    return Squeeze.apply(input, tuple(n for i, n in enumerate(shape) if n != 1 or i not in axes))


def unsqueeze(input, dim):
    """Insert a size-1 dim at position dim (which may be input.ndim, to append one)."""
    axis = normalize_dim("unsqueeze", dim, input.ndim + 1)
    shape = input.shape
    return Unsqueeze.apply(input, shape[:axis] + (1,) + shape[axis:])


# --- reordering dims ------------------------------------------------------------------------------

class Permute(Function):
    """Dims reordered (a view); the gradient is permuted back by the inverse order."""

    derivative = "∂L/∂x = g permuted back by the inverse of dims"

    @staticmethod
    def forward(ctx, x, dims):
        ctx.dims = dims
        return x._view_of(x.device.backend.permute(x.array, dims))

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i
        return grad.permute(inverse), None


class Transpose(Permute):
    """Two dims swapped (a view); the gradient has the same two dims swapped back."""

    derivative = "∂L/∂x = g with the same two dims swapped back"


def permute(input, dims):
    """Reorder the dims: output dim i is input dim dims[i]."""
    dims = _int_tuple("permute", (dims,))
    ndim = input.ndim
    if len(dims) != ndim:
        raise RuntimeError(
            f"permute: number of dims don't match: input.dim() = {ndim} is not equal to len(dims) = {len(dims)} "
            f"(dims {list(dims)} for a tensor of shape {shape_str(input.shape)}); give each dim exactly once"
        )
    axes = tuple(normalize_dim("permute", d, ndim) for d in dims)
    if len(set(axes)) != ndim:
        raise RuntimeError(f"permute(): duplicate dims are not allowed (got {list(dims)}); give each dim exactly once")
    return Permute.apply(input, axes)


def transpose(input, dim0, dim1):
    ndim = input.ndim
    a, b = normalize_dim("transpose", dim0, ndim), normalize_dim("transpose", dim1, ndim)
    dims = list(range(ndim))
    if ndim:
        dims[a], dims[b] = b, a
    return Transpose.apply(input, tuple(dims))


swapaxes = swapdims = transpose


def t(input):
    """The transpose of a matrix; 0-d and 1-d tensors come back as they are (as views)."""
    if input.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D; use .transpose(dim0, dim1) or .mT"
        )
    return Transpose.apply(input, tuple(range(input.ndim))[::-1])


def movedim(input, source, destination):
    """Move dims from source positions to destination positions; the others keep their order."""
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should contain the same number "
            f"of dims as destination ({list(dst)} dims)"
        )
    ndim = input.ndim
    src = [normalize_dim("movedim", d, ndim) for d in src]
    dst = [normalize_dim("movedim", d, ndim) for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    order = [None] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter([i for i in range(ndim) if i not in src])
    return Permute.apply(input, tuple(next(rest) if o is None else o for o in order))


moveaxis = movedim


# --- expanding and repeating ----------------------------------------------------------------------

class Expand(Function):
    """Size-1 dims stretched without copying (a read-only view); the gradient sums over the stretch."""

    derivative = "∂L/∂x = g summed over the expanded dims, back to x's shape"

    @staticmethod
    def forward(ctx, x, shape):
        try:
            return x._view_of(x.device.backend.broadcast_to(x.array, shape))
        except ValueError:
            _check_expand(x.shape, shape)
            raise

    @staticmethod
    def backward(ctx, grad):
        return grad, None  # in the expanded shape: the engine sums it back, as for any broadcast input


def _check_expand(shape, sizes) -> None:
    """Raise the clear error for sizes that a tensor of this shape cannot be expanded to."""
    lead = len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(sizes)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(shape)}); sizes {list(sizes)} for a tensor of shape {shape_str(shape)}"
        )
    for i, n in enumerate(sizes):
        if i < lead and n < 0:
            raise RuntimeError(
                f"expand: The expanded size of the tensor ({n}) isn't allowed in a leading, non-existing dimension {i}"
            )
        if i >= lead and n != shape[i - lead] and (shape[i - lead] != 1 or n < 0):
            raise RuntimeError(
                f"expand: The expanded size of the tensor ({n}) must match the existing size ({shape[i - lead]}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: {list(shape)}; "
                "only size-1 dimensions can be expanded (use .repeat(...) to copy data along a dimension)"
            )


def expand(input, sizes):
    """Stretch size-1 dims to the given sizes (-1 keeps a size; new dims may be added in front)."""
    sizes = _int_tuple("expand", (sizes,))
    lead = len(sizes) - input.ndim
    if -1 in sizes and lead >= 0:
        sizes = tuple(input.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(sizes))
    return Expand.apply(input, sizes)


broadcast_to = expand


class Repeat(Function):
    """Tile x by broadcasting it against new axes, then copying; the gradient sums over the tiles."""

    derivative = "∂L/∂x = g summed over the tiles, back to x's shape"

    @staticmethod
    def forward(ctx, x, sizes):
        shape = (1,) * (len(sizes) - x.ndim) + x.shape
        ctx.shape = x.shape
        ctx.tiled = tuple(v for r, n in zip(sizes, shape) for v in (r, n))
        backend = x.device.backend
        spread = backend.broadcast_to(backend.reshape(x.array, tuple(v for n in shape for v in (1, n))), ctx.tiled)
        return x._wrap(backend.reshape(backend.copy(spread), tuple(r * n for r, n in zip(sizes, shape))))

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.tiled).sum(tuple(range(0, len(ctx.tiled), 2))).reshape(ctx.shape), None


def repeat(input, sizes):
    """Copy the tensor sizes[i] times along dim i (sizes may add leading dims)."""
    sizes = _int_tuple("repeat", (sizes,))
    if len(sizes) < input.ndim:
        raise RuntimeError(
            f"repeat: Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor "
            f"(got {list(sizes)} for a tensor of shape {shape_str(input.shape)}); use .tile(...) to fill in leading 1s"
        )
    if any(r < 0 for r in sizes):
        raise RuntimeError(f"repeat: trying to create tensor with negative dimension: repeats {list(sizes)}")
    return Repeat.apply(input, sizes)


def tile(input, dims):
    """Like repeat, but fewer dims than the tensor has are padded with leading 1s."""
    dims = _int_tuple("tile", (dims,))
    return repeat(input, (1,) * (input.ndim - len(dims)) + dims)


# --- flipping and rolling -------------------------------------------------------------------------

class Flip(Function):
    """The order of elements reversed along some dims; the gradient is flipped back."""

    derivative = "∂L/∂x = g flipped back along the same dims"

    @staticmethod
    def forward(ctx, x, axes):
        ctx.axes = axes
        backend = x.device.backend
        # numpy's flip is a view with negative strides; PyTorch's flip is a copy, and so is this one
        return x._wrap(backend.copy(backend.flip(x.array, axes)))

    @staticmethod
    def backward(ctx, grad):
        return Flip.apply(grad, ctx.axes), None


class Roll(Function):
    """Elements rotated along dims (those pushed off one end come back at the other); rolled back for the gradient."""

    derivative = "∂L/∂x = g rolled back by −shifts along the same dims"

    @staticmethod
    def forward(ctx, x, shifts, axes):
        ctx.shifts, ctx.axes = shifts, axes
        return x._wrap(x.device.backend.roll(x.array, shifts, axes))

    @staticmethod
    def backward(ctx, grad):
        return Roll.apply(grad, tuple(-s for s in ctx.shifts), ctx.axes), None, None


def flip(input, dims):
    return Flip.apply(input, normalize_dims("flip", dims, input.ndim))


def roll(input, shifts, dims=None):
    """Rotate elements along dims by shifts; with dims=None the tensor is rolled as if flattened."""
    shifts = (shifts,) if hasattr(shifts, "__index__") else tuple(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise RuntimeError(
                f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:0; give dims, or one shift"
            )
        return Roll.apply(input.flatten(), shifts, (0,)).view(input.shape)
    dims = (dims,) if hasattr(dims, "__index__") else tuple(dims)
    if len(shifts) != len(dims):
        raise RuntimeError(
            f"roll: shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}; give one shift per dim"
        )
    axes = tuple(normalize_dim("roll", d, input.ndim) for d in dims)
    return Roll.apply(input, tuple(map(operator.index, shifts)), axes)


# --- cutting into pieces (views) and padding (their adjoint) --------------------------------------

class Pad(Function):
    """Constant padding, (before, after) per dim: the gradient has the padding cropped off again.

    Negative widths crop. The gradient is the same op with the widths negated: it crops away what
    was padded and pads zeros where elements were cropped.
    """

    derivative = "∂L/∂x = g with the padding cropped off (and zeros where x was cropped)"

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


class Narrow(Function):
    """length elements of one dim from start on (a view); the gradient is zero-padded back to full size."""

    derivative = "∂L/∂x = g zero-padded back to x's shape"

    @staticmethod
    def forward(ctx, x, axis, start, length):
        ctx.widths = tuple((start, n - start - length) if i == axis else (0, 0) for i, n in enumerate(x.shape))
        return x._view_of(x.device.backend.getitem(x.array, (slice(None),) * axis + (slice(start, start + length),)))

    @staticmethod
    def backward(ctx, grad):
        return Pad.apply(grad, ctx.widths, 0), None, None, None


class Split(Function):
    """Consecutive pieces along one dim, each a view; their gradients are joined back with cat."""

    derivative = "∂L/∂x = cat(g₁, …, gₙ) along dim, one gradient per piece"

    @staticmethod
    def forward(ctx, x, axis, sizes):
        ctx.axis = axis
        backend, head, start, pieces = x.device.backend, (slice(None),) * axis, 0, []
        for n in sizes:
            pieces.append(x._view_of(backend.getitem(x.array, head + (slice(start, start + n),))))
            start += n
        return tuple(pieces)

    @staticmethod
    def backward(ctx, *grads):
        return cat(grads, ctx.axis), None, None


class Unbind(Function):
    """Every slice along one dim, each a view with that dim removed; the gradients are stacked back."""

    derivative = "∂L/∂x = stack(g₁, …, gₙ) along dim, one gradient per slice"

    @staticmethod
    def forward(ctx, x, axis):
        ctx.axis = axis
        backend, head = x.device.backend, (slice(None),) * axis
        return tuple(x._view_of(backend.getitem(x.array, head + (i,))) for i in range(x.shape[axis]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(grads, ctx.axis), None


def narrow(input, dim, start, length):
    """input[..., start:start + length, ...] along dim, as a view."""
    axis = normalize_dim("narrow", dim, input.ndim)
    size, start, length = input.shape[axis], operator.index(start), operator.index(length)
    if not -size <= start <= size:
        raise IndexError(f"narrow: start out of range (expected to be in range of [{-size}, {size}], but got {start})")
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative (got {length}).")
    if start + length > size:
        raise RuntimeError(
            f"narrow: start ({start}) + length ({length}) exceeds dimension size ({size}) of dim {dim} in a tensor "
            f"of shape {shape_str(input.shape)}."
        )
    return Narrow.apply(input, axis, start, length)


def split(tensor, split_size_or_sections, dim=0):
    """Pieces of split_size along dim (the last may be smaller), or pieces of the listed sizes; views."""
    axis = normalize_dim("split", dim, tensor.ndim)
    size = tensor.shape[axis]
    if hasattr(split_size_or_sections, "__index__"):
        step = operator.index(split_size_or_sections)
        if step < 0 or step == 0 and size != 0:
            raise RuntimeError(
                f"split: split_size must be positive (it can only be 0 if dimension size is 0), but got "
                f"split_size={step} for dimension size {size}"
            )
        sizes = tuple(min(step, size - s) for s in range(0, size, step)) if size else (0,)
    else:
        sizes = tuple(map(operator.index, split_size_or_sections))
        if sum(sizes) != size or any(n < 0 for n in sizes):
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension "
                f"{dim}), but got split_sizes={list(sizes)}"
            )
    return Split.apply(tensor, axis, sizes)


def chunk(input, chunks, dim=0):
    """Split into chunks pieces of equal size (the last may be smaller, and there may be fewer)."""
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    axis = normalize_dim("chunk", dim, input.ndim)
    size = input.shape[axis]
    if size == 0:
        return Split.apply(input, axis, (0,) * chunks)
    return split(input, -(-size // chunks), axis)


def unbind(input, dim=0):
    """A tuple of all slices along dim, each without that dim (views)."""
    return Unbind.apply(input, normalize_dim("unbind", dim, input.ndim))


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input, pad, mode="constant", value=None):
    """PyTorch's F.pad: ``pad`` lists (before, after) pairs starting from the LAST dim, e.g. (left, right,
    top, bottom). 'constant' fills with value (negative widths crop); 'reflect', 'replicate' and
    'circular' take the new elements from the tensor itself and are built from narrow, flip and cat."""
    pad = _int_tuple("pad", (pad,))
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


# --- joining --------------------------------------------------------------------------------------

def _join_operands(op: str, tensors: tuple):
    """The arrays to join, all cast to the promoted dtype (as PyTorch does), and that dtype."""
    device = dtype = None
    for i, t in enumerate(tensors):
        if not isinstance(t, TrackedTensor):
            raise TypeError(f"{op}: expected Tensor as element {i} in argument 0, but got {type(t).__name__}")
        if device is None:
            device, dtype = t.device, t.dtype
        elif t.device is not device:
            raise RuntimeError(
                f"{op}: expected all tensors to be on the same device, but found {describe(tensors[0])} and "
                f"{describe(t)} (element {i}); move them with .to('{device}')"
            )
        else:
            dtype = promote(dtype, t.dtype)
    backend = device.backend
    return [t.array if t.dtype is dtype else backend.astype(t.array, dtype) for t in tensors]


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


# --- the Tensor methods ---------------------------------------------------------------------------

class ShapeMethods:
    """Tensor's shape methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def reshape(self, *shape):
        return Reshape.apply(self, _new_shape("reshape", self, shape))

    def view(self, *shape):
        return View.apply(self, _new_shape("view", self, shape))

    def view_as(self, other):
        return View.apply(self, _new_shape("view_as", self, (other.shape,)))

    def reshape_as(self, other):
        return Reshape.apply(self, _new_shape("reshape_as", self, (other.shape,)))

    def flatten(self, start_dim=0, end_dim=-1):
        return flatten(self, start_dim, end_dim)

    def unflatten(self, dim, sizes):
        return unflatten(self, dim, sizes)

    def squeeze(self, dim=None):
        return squeeze(self, dim)

    def unsqueeze(self, dim):
        return unsqueeze(self, dim)

    def permute(self, *dims):
        return permute(self, dims)

    def transpose(self, dim0, dim1):
        return transpose(self, dim0, dim1)

    swapaxes = swapdims = transpose

    def t(self):
        return t(self)

    @property
    def T(self):
        """All dims reversed (PyTorch warns for ndim != 2 and will change that; here it simply reverses)."""
        return Transpose.apply(self, tuple(range(self.ndim))[::-1])

    @property
    def mT(self):
        """The last two dims swapped: a batch of matrices, each transposed."""
        if self.ndim < 2:
            raise RuntimeError(
                f"tensor.mT is only supported on matrices or batches of matrices. Got {self.ndim}-D tensor."
            )
        return transpose(self, -2, -1)

    def movedim(self, source, destination):
        return movedim(self, source, destination)

    moveaxis = movedim

    def expand(self, *sizes):
        return expand(self, sizes)

    def expand_as(self, other):
        return expand(self, other.shape)

    def broadcast_to(self, size):
        return expand(self, size)

    def repeat(self, *sizes):
        return repeat(self, sizes)

    def tile(self, *dims):
        return tile(self, dims)

    def flip(self, *dims):
        return Flip.apply(self, normalize_dims("flip", _int_tuple("flip", dims), self.ndim))

    def roll(self, shifts, dims=None):
        return roll(self, shifts, dims)

    def narrow(self, dim, start, length):
        return narrow(self, dim, start, length)

    def split(self, split_size, dim=0):
        return split(self, split_size, dim)

    def chunk(self, chunks, dim=0):
        return chunk(self, chunks, dim)

    def unbind(self, dim=0):
        return unbind(self, dim)

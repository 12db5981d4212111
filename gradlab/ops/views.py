"""Views: the same memory read through another shape — reshape, squeeze, permute, transpose, expand.

A view moves no numbers: it is a new tensor over the input's memory with other sizes and strides,
sharing its version counter. Its gradient only moves the gradient back into the input's shape:
reshape it back, permute it back by the inverse order, sum over what expand stretched.
"""

from __future__ import annotations

import math
import operator
import warnings

from ..autograd.function import Function
from ..autograd.grad_mode import grad_state
from ..autograd.views import follow_retained_grad
from ..dtypes import bool_, int64
from ._common import broadcast_shapes as _broadcast_shapes
from ._common import data_in, describe, int_tuple, normalize_dim, normalize_dims, shape_str


# --- arguments ------------------------------------------------------------------------------------

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
    return _resolve_shape(op, int_tuple(op, args), x.numel(), x.shape)


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
    node_names = ("ViewBackward0", "UnsafeViewBackward0")  # a view; a copy (PyTorch's reshape records either)

    @staticmethod
    def forward(ctx, x, shape):
        ctx.shape = x.shape
        backend = x.device.backend
        if _viewable(x, shape):
            return x._view_of(backend.reshape(x.array, shape))
        ctx.recorded_as(1)
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
    node_names = ("ViewBackward0",)


class Squeeze(Reshape):
    """Dropping size-1 dims (always a view); the gradient is reshaped back to x's shape."""


class SqueezeDim(Squeeze):
    """squeeze(x, dim): Squeeze, named as PyTorch names the node of squeeze with one dim."""

    node_names = ("SqueezeBackward1",)


class SqueezeDims(Squeeze):
    """squeeze(x, (d0, d1)): Squeeze, named as PyTorch names the node of squeeze with several dims."""

    node_names = ("SqueezeBackward2",)


class Unsqueeze(Reshape):
    """Inserting a size-1 dim (always a view); the gradient is reshaped back to x's shape."""


def reshape(input, shape):
    """The same elements in a new shape (one size may be -1); a view whenever the layout allows."""
    return Reshape.apply(input, _new_shape("reshape", input, (shape,)))


def view(input, size):
    """The same memory in a new shape (one size may be -1); an error if the strides cannot express it."""
    return View.apply(input, _new_shape("view", input, (size,)))


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
    sizes = int_tuple("unflatten", (sizes,))
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
    function = Squeeze if dim is None else SqueezeDim if isinstance(dim, int) else SqueezeDims
    return function.apply(input, tuple(n for i, n in enumerate(shape) if n != 1 or i not in axes))


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


class MatrixTranspose(Transpose):
    """x.t(): a matrix transposed (a view), as PyTorch's t(), whose node it is named after."""

    node_names = ("TBackward0",)


def permute(input, dims):
    """Reorder the dims: output dim i is input dim dims[i]."""
    dims = int_tuple("permute", (dims,))
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


swapdims = transpose


def swapaxes(input, axis0, axis1):
    """numpy's name for transpose(input, axis0, axis1)."""
    return transpose(input, axis0, axis1)


def t(input):
    """The transpose of a matrix; 0-d and 1-d tensors come back as they are (as views)."""
    if input.ndim > 2:
        raise RuntimeError(
            f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D; use .transpose(dim0, dim1) or .mT"
        )
    return MatrixTranspose.apply(input, tuple(range(input.ndim))[::-1])


def movedim(input, source, destination):
    """Move dims from source positions to destination positions; the others keep their order."""
    src = tuple(source) if isinstance(source, (tuple, list)) else (source,)
    dst = tuple(destination) if isinstance(destination, (tuple, list)) else (destination,)
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


def expand(input, size):
    """Stretch size-1 dims to the given sizes (-1 keeps a size; new dims may be added in front)."""
    sizes = int_tuple("expand", (size,))
    lead = len(sizes) - input.ndim
    if -1 in sizes and lead >= 0:
        sizes = tuple(input.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(sizes))
    return Expand.apply(input, sizes)


broadcast_to = expand


# --- more views: ravel, atleast_nd, broadcasting, windows, strides ---------------------------------

def ravel(input):
    """The elements as one flat dim (a view when the layout allows, else a copy)."""
    return Reshape.apply(input, (input.numel(),))


def _tensors_or_one(tensors):
    """f(a), f(a, b) or f([a, b]): one tensor back for one tensor given alone, else a tuple."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        return tuple(tensors[0]), False
    return tensors, len(tensors) == 1


def _at_least(ndim, new_shape, tensors):
    tensors, alone = _tensors_or_one(tensors)
    out = tuple(t if t.ndim >= ndim else Unsqueeze.apply(t, new_shape(t.shape)) for t in tensors)
    return out[0] if alone else out


def atleast_1d(*tensors):
    """Each tensor with at least one dim: a 0-d tensor becomes shape (1,); others come back as they are."""
    return _at_least(1, lambda shape: (1,), tensors)


def atleast_2d(*tensors):
    """Each tensor with at least two dims: (n,) becomes (1, n), a 0-d tensor (1, 1)."""
    return _at_least(2, lambda shape: (1,) * (2 - len(shape)) + shape, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least three dims: (n,) becomes (1, n, 1) and (m, n) becomes (m, n, 1), as numpy's."""
    return _at_least(3, lambda shape: {0: (1, 1, 1), 1: (1,) + shape + (1,), 2: shape + (1,)}[len(shape)], tensors)


def broadcast_shapes(*shapes):
    """The shape that tensors of these shapes broadcast to (an int counts as a 1-d shape), without any tensor."""
    shapes = tuple((operator.index(s),) if hasattr(s, "__index__") else int_tuple("broadcast_shapes", (s,))
                   for s in shapes)
    return _broadcast_shapes(*shapes, op="broadcast_shapes")


def broadcast_tensors(*tensors):
    """All tensors expanded to their common broadcast shape (views, as in arithmetic between them)."""
    tensors, _ = _tensors_or_one(tensors)
    shape = _broadcast_shapes(*(t.shape for t in tensors), op="broadcast_tensors")
    return tuple(Expand.apply(t, shape) for t in tensors)


class Unfold(Function):
    """Every window of ``size`` elements along dim, ``step`` apart, as a new last dim (a read-only view).

    Windows may overlap, so the gradient adds each window's gradient back where it was read:
    the adjoint, ``FoldWindows``, whose own gradient is this op again.
    """

    derivative = "∂L/∂x = the window gradients added back where each window was read (overlaps summed)"

    @staticmethod
    def forward(ctx, x, axis, size, step):
        ctx.shape, ctx.geometry = x.shape, (axis, size, step)
        return x._view_of(x.device.backend.sliding_windows(x.array, (size,), (axis,), (step,), (1,)))

    @staticmethod
    def backward(ctx, grad):
        return FoldWindows.apply(grad, ctx.shape, *ctx.geometry), None, None, None


class FoldWindows(Function):
    """Windows (a new last dim) summed back onto a tensor of ``shape``: unfold's adjoint; its gradient is unfold."""

    derivative = "∂L/∂windows = g.unfold(dim, size, step): each window element reads g where it was added"

    @staticmethod
    def forward(ctx, windows, shape, axis, size, step):
        ctx.geometry = (axis, size, step)
        return windows._wrap(windows.device.backend.fold_windows(windows.array, shape, (axis,), (step,), (1,)))

    @staticmethod
    def backward(ctx, grad):
        return Unfold.apply(grad, *ctx.geometry), None, None, None, None


def unfold(input, dimension, size, step):
    """Tensor.unfold: windows of ``size`` along ``dimension`` every ``step`` elements, as a new last dim (a view)."""
    x = input if input.ndim else Reshape.apply(input, (1,))
    axis = normalize_dim("unfold", dimension, x.ndim)
    n = x.shape[axis]
    if size < 0 or size > n:
        raise RuntimeError(
            f"unfold: maximum size for tensor at dimension {dimension} is {n} but size is {size} (tensor of shape "
            f"{shape_str(input.shape)}); choose 0 <= size <= {n}"
        )
    if step <= 0:
        raise RuntimeError(f"unfold: step is {step} but must be > 0")
    out = Unfold.apply(x, axis, size, step)
    return Reshape.apply(out, (size,)) if not input.ndim else out


def as_strided(input, size, stride, storage_offset=None):
    """A view reading the tensor's memory through the given sizes and strides (in elements), from storage_offset.

    gradlab reads the memory of a tensor that owns it, contiguous (a view or a non-contiguous tensor
    is refused: .clone() it first). It is built from windows of windows: each window of a flat view
    of the memory steps by one stride and its taps are another stride apart. The gradient adds the
    output's gradient back onto every element it read, so overlapping reads are summed.
    """
    size, stride = int_tuple("as_strided", (size,)), int_tuple("as_strided", (stride,))
    offset = 0 if storage_offset is None else operator.index(storage_offset)
    if len(size) != len(stride):
        raise RuntimeError(f"as_strided: mismatch in length of strides and shape: size {list(size)} has {len(size)} "
                           f"entries but stride {list(stride)} has {len(stride)}; give one stride per size")
    if any(s < 0 for s in stride) or any(n < 0 for n in size) or offset < 0:
        raise RuntimeError(f"as_strided: Negative strides, sizes or offsets are not supported, got size {list(size)}, "
                           f"strides {list(stride)} and storage offset {offset}")
    if input._base is not None or not input.is_contiguous():
        raise RuntimeError(
            f"as_strided: gradlab reads the memory of a contiguous tensor that owns it, but got a "
            f"{'view' if input._base is not None else 'non-contiguous tensor'} ({describe(input)}); "
            "call .clone() first"
        )
    needed = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1 if 0 not in size else 0
    if needed > input.numel():
        raise RuntimeError(
            f"as_strided: sizes {list(size)}, strides {list(stride)} and storage offset {offset} reach element "
            f"{needed - 1}, out of bounds for a tensor of {input.numel()} elements ({describe(input)})"
        )
    return AsStrided.apply(input, size, stride, offset)


class AsStrided(Function):
    """Elements of x's memory read through sizes and strides (a read-only view); read elements receive the gradient.

    The flat index that output position (i₀, i₁, …) reads is offset + Σ iₖ · strideₖ; the gradient is
    scatter-added there, so an element read twice gets both gradients.
    """

    derivative = "∂L/∂x_j = Σ g over the output positions that read element j"

    @staticmethod
    def forward(ctx, x, size, stride, offset):
        ctx.shape, ctx.geometry = x.shape, (size, stride, offset)
        backend = x.device.backend
        flat = backend.reshape(x.array, (x.numel(),))
        if 0 in size or not size:
            return x._view_of(backend.reshape(backend.getitem(flat, (slice(offset, offset + (not size)),)), size))
        # windows of windows: one window axis per dim, from the last to the first
        view = backend.getitem(flat, (slice(offset, None),))
        for n, s in zip(reversed(size[1:]), reversed(stride[1:])):
            view = backend.sliding_windows(view, (n,), (0,), (1,), (s,))
        view = backend.sliding_windows(view, (1,), (0,), (stride[0] or 1,), (1,))  # dim 0 steps by its stride
        view = backend.getitem(view, (slice(0, size[0]),))
        if stride[0] == 0:
            view = backend.broadcast_to(backend.getitem(view, (slice(0, 1),)), (size[0],) + view.shape[1:])
        # the window axes came out last-dim-first after dim 0: put them back in order, drop the tap of dim 0
        order = (0,) + tuple(range(view.ndim - 2, 0, -1))
        view = backend.reshape(backend.permute(view, order + (view.ndim - 1,)), size)
        return x._view_of(view)

    @staticmethod
    def backward(ctx, grad):
        size, stride, offset = ctx.geometry
        index = _strided_index(grad, size, stride, offset)
        numel = math.prod(ctx.shape)
        flat = grad.new_zeros((numel,)).scatter_add(0, index.reshape(-1), grad.reshape(-1))
        return flat.reshape(ctx.shape), None, None, None


def _strided_index(like, size, stride, offset):
    """The flat memory index each position of an as_strided view reads, as an int64 tensor of shape size."""
    backend = like.device.backend
    index = backend.full(size, offset, int64)
    for axis, (n, s) in enumerate(zip(size, stride)):
        along = backend.reshape(backend.arange(0, n * s, s, int64) if s else backend.zeros((n,), int64),
                                tuple(n if i == axis else 1 for i in range(len(size))))
        index = backend.add(index, along)
    return like._wrap(index)


def unravel_index(indices, shape):
    """Flat indices into a tensor of ``shape`` as a tuple of coordinate tensors, one per dim (numpy's unravel_index)."""
    shape = int_tuple("unravel_index", (shape,))
    if indices.dtype.is_floating_point or indices.dtype is bool_:
        raise TypeError(f"unravel_index: expected 'indices' to be an integer tensor, but got {describe(indices)}")
    if any(n < 0 for n in shape):
        raise ValueError(f"unravel_index: 'shape' cannot have negative values, but got {list(shape)}")
    numel = math.prod(shape)
    backend = indices.device.backend
    flat = data_in(indices, int64)
    if indices.numel() and (backend.any_true(backend.ge(flat, numel)) or backend.any_true(backend.lt(flat, -numel))):
        raise RuntimeError(f"unravel_index: 'indices' must be in range [{-numel}, {numel - 1}] for shape "
                           f"{list(shape)}, but got {indices.tolist()}")
    flat = backend.remainder(flat, numel) if numel else flat
    coords = []
    for n in reversed(shape):
        coords.append(indices._wrap(backend.remainder(flat, n)))
        flat = backend.floor_divide(flat, n)
    return tuple(reversed(coords))


# --- the Tensor methods ---------------------------------------------------------------------------

def _change_in_place(x, op: str, view):
    """x.t_(), x.squeeze_() and the like: x itself takes the sizes and strides of ``view``, a view of x.

    Its values stay, so only its history moves on to the view's node; the version goes up, as any
    in-place change's does, so backward notices if x was saved before (PyTorch does the same).
    """
    if grad_state.enabled and x.requires_grad and x.grad_fn is None:
        raise RuntimeError(
            f"{op}: a leaf Variable that requires grad is being used in an in-place operation. Use the out-of-place "
            f"form ({op[:-1]}), or change the shape inside `with gradlab.no_grad():`"
        )
    x.array = view.array
    if view.grad_fn is not None:
        old_node, old_nr = x.grad_fn, x._output_nr
        x.grad_fn, x._output_nr = view.grad_fn, view._output_nr
        follow_retained_grad(x, old_node, old_nr)
    x._version[0] += 1
    if x._base is not None:
        x._view_version = x._version[0]  # its new history describes its values as they are now
    return x


def _resize(x, op: str, sizes: tuple):
    """x.resize_(sizes): x takes a new shape; a smaller one keeps its first elements, a larger one adds zeros
    (PyTorch leaves them uninitialised). Not recorded: PyTorch refuses tensors that require grad."""
    if any(n < 0 for n in sizes):
        raise RuntimeError(f"{op}: Trying to create tensor with negative dimension: {list(sizes)}")
    if x.requires_grad:
        raise RuntimeError(f"{op}: cannot resize variables that require grad ({describe(x)}); resize a .detach()-ed "
                           "copy, or use .reshape(...) to keep the history")
    if sizes == x.shape:
        return x
    if x._base is not None or not x.is_contiguous():
        raise RuntimeError(f"{op}: gradlab resizes only a contiguous tensor that owns its memory, but got a "
                           f"{'view' if x._base is not None else 'non-contiguous tensor'} ({describe(x)}); "
                           "call .clone() first")
    backend, n, new_n = x.device.backend, x.numel(), math.prod(sizes)
    flat = backend.reshape(x.array, (n,))
    if new_n <= n:
        x.array = backend.reshape(backend.getitem(flat, (slice(0, new_n),)), sizes)
    else:
        grown = backend.zeros((new_n,), x.dtype)
        backend.setitem(grown, (slice(0, n),), flat)
        x.array = backend.reshape(grown, sizes)
    x._version[0] += 1
    return x


def _resize_keeping_numel(x, op, sizes):
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=3)
    numel = math.prod(sizes)
    if numel != x.numel():
        raise RuntimeError(
            f"{op}: requested resize to {'x'.join(map(str, sizes))} ({numel} elements in total), but the given tensor "
            f"has a size of {'x'.join(map(str, x.shape))} ({x.numel()} elements). autograd's resize can only change "
            "the shape of a given tensor, while preserving the number of elements; use .reshape(...)"
        )
    return Reshape.apply(x, sizes)


def as_strided_(input, size, stride, storage_offset=None):
    """as_strided in place: the tensor itself reads its memory through the new sizes and strides."""
    return _change_in_place(input, "as_strided_", as_strided(input, size, stride, storage_offset))


def resize_as_(input, the_template, *, memory_format=None):
    """input.resize_(the_template.shape): the first elements kept, zeros added if it grows."""
    return _resize(input, "resize_as_", tuple(the_template.shape))


def _sizes(op, args, keyword):
    """Sizes given as f(2, 3), f((2, 3)) or by keyword, f(size=(2, 3)), as PyTorch's methods take them."""
    if keyword is not None:
        if args:
            raise TypeError(f"{op}(): got sizes both as arguments {args} and by keyword ({keyword!r}); give one")
        return (keyword,)
    return args


class ViewMethods:
    """Tensor's view methods (mixed into gradlab.Tensor through ShapeMethods)."""

    __slots__ = ()

    def reshape(self, *args, shape=None):
        return reshape(self, _sizes("reshape", args, shape))

    def view(self, *args, size=None):
        return view(self, _sizes("view", args, size))

    def ravel(self):
        return ravel(self)

    def ndimension(self) -> int:
        """The number of dims (an old name for dim())."""
        return self.ndim

    def unfold(self, dimension, size, step):
        return unfold(self, dimension, size, step)

    def as_strided(self, size, stride, storage_offset=None):
        return as_strided(self, size, stride, storage_offset)

    def as_strided_(self, size, stride, storage_offset=None):
        return as_strided_(self, size, stride, storage_offset)

    def resize_(self, *sizes, memory_format=None):
        return _resize(self, "resize_", int_tuple("resize_", sizes))

    def resize_as_(self, tensor, memory_format=None):
        return resize_as_(self, tensor)

    def squeeze_(self, dim=None):
        return _change_in_place(self, "squeeze_", squeeze(self, dim))

    def unsqueeze_(self, dim):
        return _change_in_place(self, "unsqueeze_", unsqueeze(self, dim))

    def t_(self):
        return _change_in_place(self, "t_", t(self))

    def transpose_(self, dim0, dim1):
        return _change_in_place(self, "transpose_", transpose(self, dim0, dim1))

    swapdims_ = transpose_

    def swapaxes_(self, axis0, axis1):
        return _change_in_place(self, "swapaxes_", transpose(self, axis0, axis1))

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

    def permute(self, *args, dims=None):
        return permute(self, _sizes("permute", args, dims))

    def transpose(self, dim0, dim1):
        return transpose(self, dim0, dim1)

    swapdims = transpose

    def swapaxes(self, axis0, axis1):
        return swapaxes(self, axis0, axis1)

    def resize(self, *sizes):
        """Deprecated in PyTorch: a differentiable reshape that keeps the number of elements (it warns)."""
        return _resize_keeping_numel(self, "resize", int_tuple("resize", sizes))

    def resize_as(self, tensor):
        """Deprecated in PyTorch: resize(tensor.shape)."""
        return _resize_keeping_numel(self, "resize_as", tuple(tensor.shape))

    def t(self):
        return t(self)

    @property
    def T(self):
        """All dims reversed (PyTorch warns for ndim != 2 and will change that; here it simply reverses)."""
        return Permute.apply(self, tuple(range(self.ndim))[::-1])

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

    def expand(self, *args, size=None):
        return expand(self, _sizes("expand", args, size))

    def expand_as(self, other):
        return expand(self, other.shape)

    def broadcast_to(self, size):
        return expand(self, size)

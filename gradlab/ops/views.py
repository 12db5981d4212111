"""Views: the same memory read through another shape — reshape, squeeze, permute, transpose, expand.

A view moves no numbers: it is a new tensor over the input's memory with other sizes and strides,
sharing its version counter. Its gradient only moves the gradient back into the input's shape:
reshape it back, permute it back by the inverse order, sum over what expand stretched.
"""

from __future__ import annotations

import math

from ..autograd.function import Function
from ._common import int_tuple, normalize_dim, normalize_dims, shape_str, sum_to_shape


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


def view(input, shape):
    """The same memory in a new shape (one size may be -1); an error if the strides cannot express it."""
    return View.apply(input, _new_shape("view", input, (shape,)))


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
        ctx.shape = x.shape
        try:
            return x._view_of(x.device.backend.broadcast_to(x.array, shape))
        except ValueError:
            _check_expand(x.shape, shape)
            raise

    @staticmethod
    def backward(ctx, grad):
        return sum_to_shape(grad, ctx.shape), None


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
    sizes = int_tuple("expand", (sizes,))
    lead = len(sizes) - input.ndim
    if -1 in sizes and lead >= 0:
        sizes = tuple(input.shape[i - lead] if n == -1 and i >= lead else n for i, n in enumerate(sizes))
    return Expand.apply(input, sizes)


broadcast_to = expand


# --- the Tensor methods ---------------------------------------------------------------------------

class ViewMethods:
    """Tensor's view methods (mixed into gradlab.Tensor through ShapeMethods)."""

    __slots__ = ()

    def reshape(self, *shape):
        return reshape(self, shape)

    def view(self, *shape):
        return view(self, shape)

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

"""Linear algebra: matmul and its fixed-shape forms (mm, bmm, mv, dot, outer), and einsum.

The gradient of a matrix product is two more matrix products: for C = A @ B, dA = dC @ Bᵀ and
dB = Aᵀ @ dC. einsum generalises the rule: the gradient of each operand is an einsum of the
output's gradient with the other operands, written onto that operand's subscripts.
"""

from __future__ import annotations

import functools
import string

from ..autograd.broadcasting import sum_to_shape
from ..autograd.function import Function
from ..dtypes import int64
from .autocast import autocast_op
from ._common import ShapeError, TrackedTensor, broadcast_shapes, check_same_device, describe, shape_str

# --- matmul ----------------------------------------------------------------------------------------


class Matmul(Function):
    """a @ b: a receives the gradient times bᵀ, and b receives aᵀ times the gradient.

    PyTorch's rules: vectors become one-row / one-column matrices, and batch dims broadcast (their
    gradients are summed back over the broadcast batch dims).
    """

    derivative = "∂L/∂a = g · bᵀ;  ∂L/∂b = aᵀ · g"
    # PyTorch's names for the product it does: matrix @ matrix (or vector @ matrix), matrix @ vector,
    # vector @ vector, and batched (where PyTorch's matmul wraps its bmm node in a reshape's node)
    node_names = ("MmBackward0", "MvBackward0", "DotBackward0", "BmmBackward0")

    @staticmethod
    def forward(ctx, a, b):
        _check_pair("matmul", a, b)
        if a.ndim != 2 or b.ndim != 2:
            ctx.recorded_as(3 if a.ndim > 2 or b.ndim > 2 else 2 if a.ndim == 1 and b.ndim == 1 else 1 if b.ndim == 1
                            else 0)
        ctx.save_for_backward(a, b)
        try:
            return a._wrap(a.device.backend.matmul(a.array, b.array))
        except ValueError:
            raise _shape_error("matmul", a.shape, b.shape) from None

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        a2 = a if a.ndim > 1 else a.unsqueeze(0)  # a vector on the left is a one-row matrix
        b2 = b if b.ndim > 1 else b.unsqueeze(-1)  # on the right, a one-column matrix
        if b.ndim == 1:
            grad = grad.unsqueeze(-1)
        if a.ndim == 1:
            grad = grad.unsqueeze(-2)
        grad_a = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_a = sum_to_shape(grad @ b2.transpose(-2, -1), a2.shape)
            grad_a = grad_a if a.ndim > 1 else grad_a.reshape(a.shape)
        if ctx.needs_input_grad[1]:
            if b2.ndim == 2 and a2.ndim > 2:  # one matrix shared by the whole batch: fold the batch into rows
                grad_b = a2.reshape(-1, a2.shape[-1]).transpose(0, 1) @ grad.reshape(-1, grad.shape[-1])
            else:
                grad_b = sum_to_shape(a2.transpose(-2, -1) @ grad, b2.shape)
            grad_b = grad_b if b.ndim > 1 else grad_b.reshape(b.shape)
        return grad_a, grad_b


def _check_pair(op, a, b):
    """Two tensors on one device with one dtype: PyTorch refuses to promote in a matrix product."""
    if not (isinstance(a, TrackedTensor) and isinstance(b, TrackedTensor)):
        raise TypeError(f"{op}: expected two gradlab Tensors, got {describe(a)} and {describe(b)}; "
                        "convert the other operand with gradlab.tensor(...)")
    check_same_device(op, a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"{op}: expected m1 and m2 to have the same dtype, but got: {a.dtype.name} != "
                           f"{b.dtype.name}; convert one first, e.g. b.to(a.dtype)")


def _dims(shape) -> str:
    return "x".join(str(n) for n in shape)


def _shape_error(op, a_shape, b_shape) -> RuntimeError:
    """Why a matrix product of these shapes fails (called only once the backend has refused them)."""
    if not a_shape or not b_shape:
        return RuntimeError(f"both arguments to {op} need to be at least 1D, but they are {len(a_shape)}D and "
                            f"{len(b_shape)}D; use * to multiply by a scalar")
    inner = b_shape[-2] if len(b_shape) > 1 else b_shape[0]
    if a_shape[-1] != inner:
        return RuntimeError(
            f"{op}: mat1 and mat2 shapes cannot be multiplied ({_dims(a_shape)} and {_dims(b_shape)}); the last "
            f"dimension of the first ({a_shape[-1]}) must equal the "
            f"{'second-to-last dimension' if len(b_shape) > 1 else 'length'} of the second ({inner})"
        )
    try:
        broadcast_shapes(a_shape[:-2], b_shape[:-2])
    except ShapeError as error:
        return RuntimeError(f"{op}: the batch dimensions of {_dims(a_shape)} and {_dims(b_shape)} "
                            f"(all but the last two) do not broadcast: {error}")
    return RuntimeError(f"{op}: cannot multiply shapes {shape_str(a_shape)} and {shape_str(b_shape)}")


_ARG_NAMES = {"mm": ("self", "mat2"), "bmm": ("batch1", "batch2"), "mv": ("self", "vec"), "dot": ("self", "tensor")}


def _fixed_shape(op, a, b, a_ndim, b_ndim):
    """The checks of mm/bmm/mv/dot, which accept exactly these ranks and never broadcast."""
    _check_pair(op, a, b)
    for x, name, ndim in zip((a, b), _ARG_NAMES[op], (a_ndim, b_ndim)):
        if x.ndim != ndim:
            raise RuntimeError(f"{op}: {name} must be a {ndim}-D tensor, but got {describe(x)}; "
                               "use matmul for other shapes")
    if a.shape[-1] != b.shape[-2 if b_ndim > 1 else 0]:
        raise _shape_error(op, a.shape, b.shape)
    if a.shape[:-2] != b.shape[:-2]:
        raise RuntimeError(f"{op}: the batch sizes differ ({_dims(a.shape)} and {_dims(b.shape)}); {op} does not "
                           "broadcast: use matmul, or expand the smaller batch first")


@autocast_op("lower")
def matmul(input, other):
    """Matrix product with PyTorch's rules for vectors (1-D) and batches (N-D, broadcast)."""
    return Matmul.apply(input, other)


@autocast_op("lower")
def mm(input, mat2):
    """Matrix times matrix: (n, k) @ (k, m)."""
    _fixed_shape("mm", input, mat2, 2, 2)
    return Matmul.apply(input, mat2)


@autocast_op("lower")
def bmm(input, mat2):
    """A batch of matrix products: (b, n, k) @ (b, k, m), with equal batch sizes."""
    _fixed_shape("bmm", input, mat2, 3, 3)
    return Matmul.apply(input, mat2)


def mv(input, vec):
    """Matrix times vector: (n, k) @ (k,) gives (n,)."""
    _fixed_shape("mv", input, vec, 2, 1)
    return Matmul.apply(input, vec)


def dot(input, tensor):
    """The inner product of two vectors of the same length: a 0-d tensor."""
    _fixed_shape("dot", input, tensor, 1, 1)
    return Matmul.apply(input, tensor)


def outer(input, vec2):
    """out[i, j] = input[i] * vec2[j]: a column times a row, by broadcasting (dtypes promote)."""
    for x, name in ((input, "self"), (vec2, "vec2")):
        if not isinstance(x, TrackedTensor) or x.ndim != 1:
            raise RuntimeError(f"outer: expected 1-D argument {name}, but got {describe(x)}")
    return input.unsqueeze(-1) * vec2


ger = outer

# --- einsum ----------------------------------------------------------------------------------------

_LETTERS = string.ascii_uppercase + string.ascii_lowercase  # einsum's labels, in the order implicit output sorts them


class Einsum(Function):
    """Einstein summation: each operand receives an einsum of the gradient with the other operands.

    That einsum writes onto the operand's own subscripts. Forward is one backend call on an
    explicit equation ('...' made into letters).
    """

    derivative = "∂L/∂operands[k] = einsum of g with the other operands, onto operand k's subscripts"

    @staticmethod
    def forward(ctx, equation, *operands):
        first = _check_operands(operands)
        terms, out = _parse_einsum(equation, tuple(x.ndim for x in operands))
        ctx.terms, ctx.out = terms, out
        ctx.save_for_backward(*operands)
        try:
            result = first.device.backend.einsum(",".join(terms) + "->" + out, *(x.array for x in operands))
        except ValueError:
            raise _size_error(terms, [x.shape for x in operands]) from None
        if len(terms) == 1 and set(terms[0]) == set(out):  # only permutes / takes a diagonal: a view, as in PyTorch
            return first._view_of(result)
        return first._wrap(result)

    @staticmethod
    def backward(ctx, grad):
        operands = ctx.saved_tensors
        sizes = _label_sizes(ctx.terms, [x.shape for x in operands])
        return (None,) + tuple(
            _operand_grad(grad, ctx.out, operands, ctx.terms, k, sizes) if needed else None
            for k, needed in enumerate(ctx.needs_input_grad[1:])
        )


def _operand_grad(grad, out, operands, terms, k, sizes):
    """d(loss)/d(operand k): an einsum of grad with the other operands onto operand k's subscripts.

    A label repeated in operand k (a diagonal, 'ii') is renamed at each repeat and tied to its first
    occurrence by an identity matrix. A label found in no other operand (summed out of operand k alone)
    cannot appear in that einsum's output: every element along it receives the same gradient, so expand
    (as for a size-1 dim of another operand that broadcast against operand k).
    """
    used = set("".join(terms) + out)
    fresh = (c for c in _LETTERS if c not in used)
    x, target = operands[k], ""
    subscripts, inputs = [out], [grad]
    for label in terms[k]:
        if label in terms[k][: len(target)]:  # a repeat: rename it, and tie it to the first occurrence
            renamed = next(fresh)
            subscripts.append(label + renamed)
            inputs.append(_identity(x, sizes[label]))
            target += renamed
        else:
            target += label
    for j, (term, operand) in enumerate(zip(terms, operands)):
        if j != k:
            subscripts.append(term)
            inputs.append(operand)
    present = set("".join(subscripts))
    kept = "".join(c for c in target if c in present)
    g = Einsum.apply(",".join(subscripts) + "->" + kept, *inputs)
    if len(kept) < len(target):
        kept_sizes = dict(zip(kept, g.shape))
        g = g.reshape(tuple(kept_sizes.get(c, 1) for c in target))
    # summed over the dims where operand k was broadcast (size 1 in x), expanded where the others were (size 1 in g)
    g = sum_to_shape(g, tuple(1 if n == 1 else m for n, m in zip(x.shape, g.shape)))
    return g if g.shape == x.shape else g.expand(x.shape)


def _identity(x, n):
    """An n x n identity matrix of x's dtype on x's device, made from primitives."""
    backend = x.device.backend
    index = backend.arange(0, n, 1, int64)
    return x._wrap(backend.astype(backend.eq(backend.reshape(index, (n, 1)), backend.reshape(index, (1, n))), x.dtype))


def _check_operands(operands):
    if not operands:
        raise RuntimeError("einsum(): must provide at least one operand")
    first = operands[0]
    for x in operands:
        if not isinstance(x, TrackedTensor):
            raise TypeError(f"einsum(): operands must be gradlab Tensors, got {describe(x)}")
        check_same_device("einsum()", first, x)
        if x.dtype is not first.dtype:
            raise RuntimeError(f"einsum(): expected all operands to have the same dtype and device, but got "
                               f"{describe(first)} and {describe(x)}; convert with .to(...) first")
    return first


@functools.lru_cache(maxsize=512)
def _parse_einsum(equation: str, ndims: tuple):
    """The equation made explicit: (subscripts of each operand, subscripts of the output).

    '...' becomes fresh letters (as many as the operand has leftover dims, aligned on the right).
    An implicit output is PyTorch's and numpy's: the '...' dims, then every label that appears
    exactly once, in alphabetical order (upper case first).
    """
    for i, c in enumerate(equation):
        if c not in _LETTERS and c not in " .,->":
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string "
                               f"{equation!r}, subscripts must be in [a-zA-Z]")
    equation = equation.replace(" ", "")
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise RuntimeError(f"einsum(): {'more' if len(ndims) > len(terms) else 'fewer'} operands were provided "
                           f"than specified in the equation {equation!r} ({len(ndims)} given, {len(terms)} specified)")
    for part in terms + ([rhs] if arrow else []):
        if part.replace("...", "", 1).count(".") or part.count("-") or part.count(">"):
            raise RuntimeError(f"einsum(): invalid term {part!r} in the equation {equation!r}: use letters, "
                               "at most one '...' per term, and at most one '->'")
    ellipsis_dims = []
    for k, (term, ndim) in enumerate(zip(terms, ndims)):
        labels = len(term.replace("...", ""))
        if "..." not in term and labels != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({labels}) does not match the "
                               f"number of dimensions ({ndim}) for operand {k} and no ellipsis was given")
        if labels > ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({labels}) is more than the "
                               f"number of dimensions ({ndim}) for operand {k}")
        ellipsis_dims.append(ndim - labels)
    used = set(equation)
    spare = [c for c in _LETTERS if c not in used]
    n_ellipsis = max(ellipsis_dims)
    if n_ellipsis > len(spare):
        raise RuntimeError(f"einsum(): too many dimensions for the 52 letters of {equation!r}")
    broadcast = "".join(spare[:n_ellipsis])
    terms = tuple(term.replace("...", broadcast[n_ellipsis - n:]) for term, n in zip(terms, ellipsis_dims))
    joined = "".join(terms)
    if not arrow:
        return terms, broadcast + "".join(sorted(c for c in set(joined) if joined.count(c) == 1 and c not in broadcast))
    out = rhs.replace("...", broadcast)
    for c in out:
        if out.count(c) > 1:
            raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
        if c not in joined:
            raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation for any input operand")
    return terms, out


def _label_sizes(terms, shapes) -> dict:
    """The size of every label, once size-1 dims are broadcast."""
    sizes = {}
    for term, shape in zip(terms, shapes):
        for label, n in zip(term, shape):
            if n != 1 or label not in sizes:
                sizes[label] = n
    return sizes


def _size_error(terms, shapes) -> RuntimeError:
    """Why the backend refused these operands: the first label whose sizes clash."""
    seen = {}
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        own = {}
        for label, n in zip(term, shape):
            if own.setdefault(label, n) != n:
                return RuntimeError(f"einsum(): subscript {label} is repeated for operand {k} but the sizes don't "
                                    f"match, {own[label]} != {n}")
        for label, n in own.items():
            previous = seen.setdefault(label, n)
            if previous != n and 1 not in (previous, n):
                return RuntimeError(f"einsum(): subscript {label} has size {n} for operand {k} which does not "
                                    f"broadcast with previously seen size {previous}")
            if previous == 1:
                seen[label] = n
    return RuntimeError(f"einsum(): cannot combine operands of shapes {', '.join(shape_str(s) for s in shapes)} "
                        f"with subscripts {','.join(terms)}")


def einsum(equation, *operands):
    """Sum of products over the labelled dims: einsum('ij,jk->ik', a, b) is a @ b.

    Accepts the operands as arguments or as one list (einsum('ij,jk', [a, b])), as PyTorch does.
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum(): the first argument must be the equation string, like 'ij,jk->ik', "
                        f"got {describe(equation)}")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    return Einsum.apply(equation, *operands)


class LinalgMethods:
    """Tensor's linalg methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    @autocast_op("lower")
    def matmul(self, other):
        return Matmul.apply(self, other)

    def mm(self, mat2):
        return mm(self, mat2)

    def bmm(self, mat2):
        return bmm(self, mat2)

    def mv(self, vec):
        return mv(self, vec)

    def dot(self, other):
        return dot(self, other)

    def outer(self, vec2):
        return outer(self, vec2)

    ger = outer
    __matmul__ = matmul

    @autocast_op("lower")
    def __rmatmul__(self, other):
        return Matmul.apply(other, self)

"""In-place writes through views, as PyTorch does them: the base records the write, its views follow.

A view shares its base's memory (``view._base``), so a write into the view changes the base too.
Two Functions keep the graph true to the values, both knowing the view by its *positions*: for
each element of the view, the row-major index of the base element it shares memory with.

* ``CopySlices`` is the base's history after ``view[...] = value``: the view's region of the
  gradient goes to ``value``, the rest to the base's earlier history.
* ``AsStrided`` is a view's history rebuilt from its base's: the view's elements read from the
  base. A view takes it when its base changed in place after the view was taken (the shared
  version counter moved on), before anything reads its history again.
"""

from __future__ import annotations

from ..dtypes import bool_
from .function import Function
from .grad_mode import enable_grad


class CopySlices(Function):
    """The base after a write through its view: the view's region of the gradient goes to the value, the rest back.

    The values are already in the base's memory (they were written through the view); this records
    what the write means for the base's history.
    """

    derivative = "∂L/∂base = g with the view's positions zeroed;  ∂L/∂value = g at the view's positions"
    node_names = ("CopySlices",)  # PyTorch's name for this node (it has no "Backward")

    @staticmethod
    def forward(ctx, base, value, positions):
        ctx.positions, ctx.base_shape = positions, base.shape
        ctx.mark_dirty(base)
        return base

    @staticmethod
    def backward(ctx, grad):
        grad_base = grad_value = None
        if ctx.needs_input_grad[0]:
            grad_base = grad.masked_fill(_region_mask(grad, ctx.positions, ctx.base_shape), 0.0)
        if ctx.needs_input_grad[1]:
            grad_value = grad.reshape(-1)[grad._wrap(ctx.positions)]
        return grad_base, grad_value, None


class AsStrided(Function):
    """A view's elements read from its base by position: each gradient is added back where its element lives."""

    derivative = "∂L/∂base = zeros of base's shape with g added at the view's positions"

    @staticmethod
    def forward(ctx, base, view_array, positions):
        ctx.positions, ctx.base_shape = positions, base.shape
        return base._view_of(view_array)

    @staticmethod
    def backward(ctx, grad):
        n = 1
        for size in ctx.base_shape:
            n *= size
        index = grad._wrap(ctx.positions).reshape(-1)
        return grad.new_zeros(n).scatter_add(0, index, grad.reshape(-1)).reshape(ctx.base_shape), None, None


def record_view_write(view, value) -> None:
    """``value`` was just written into ``view``'s memory: the base takes a CopySlices node, the view an AsStrided one."""
    base = view._base
    positions = _positions(view)
    old_node, old_nr = base.grad_fn, base._output_nr
    CopySlices.apply(base, value, positions)
    follow_retained_grad(base, old_node, old_nr)
    _take_history_from_base(view, positions)


def refresh_view(view) -> None:
    """Rebuild a view's history from its base's if the base changed in place since (PyTorch regenerates it too)."""
    if view._base is not None and view._version[0] != view._view_version:
        _take_history_from_base(view, _positions(view))


def check_view_write(view, op: str) -> None:
    """Refuse the in-place writes into a view that PyTorch refuses, with its messages."""
    base = view._base
    if base.requires_grad and not view.requires_grad and view._version[0] == view._view_version:
        raise RuntimeError(
            f"{op}: A view was created in no_grad mode (or before its base required grad) and is being modified "
            "inplace with grad mode enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
            "Take the view and do the in-place change both inside the no_grad block (if the change should not be "
            "tracked) or both outside it (if it should)."
        )
    if base.requires_grad and base.grad_fn is None:
        raise RuntimeError(
            f"{op}: a view of a leaf Variable that requires grad is being used in an in-place operation. "
            "Do the update inside `with gradlab.no_grad():` (as optimizers do), or write into a clone of the leaf."
        )


def _take_history_from_base(view, positions) -> None:
    old_node, old_nr = view.grad_fn, view._output_nr
    with enable_grad():  # the history is the view's own, whatever mode reads it (e.g. backward under no_grad)
        fresh = AsStrided.apply(view._base, view.array, positions)
    view.grad_fn, view._output_nr, view.requires_grad = fresh.grad_fn, 0, fresh.requires_grad
    view._view_version = view._version[0]
    follow_retained_grad(view, old_node, old_nr)


def follow_retained_grad(t, old_node, old_nr) -> None:
    """retain_grad follows a tensor to its new grad_fn: ``.grad`` is the gradient of its latest value."""
    keep = getattr(t, "_retains_grad", None)
    if keep and old_node is not None and t.grad_fn is not old_node:
        old_node._tensor_hooks[old_nr].remove(keep)
        t._hook_list().append(keep)


def _positions(view):
    base = view._base
    try:
        return base.device.backend.positions_in_base(base.array, view.array)
    except ValueError:
        raise RuntimeError(
            f"a view of shape {list(view.shape)} no longer shares memory with the tensor it was taken from "
            f"(shape {list(base.shape)}), whose memory was replaced (e.g. through .data = ...); take the view again"
        ) from None


def _region_mask(like, positions, shape):
    """A bool tensor of the base's shape, True at the view's positions."""
    backend = like.device.backend
    n = 1
    for size in shape:
        n *= size
    flat = backend.zeros((n,), bool_)
    backend.setitem(flat, positions, True)
    return like._wrap(backend.reshape(flat, shape))

"""The ``*_copy`` variants: each view op's result as fresh memory (``torch.view_copy`` is ``x.view(...).clone()``).

PyTorch has them for programs that must not alias memory. They are made here from one table:
every entry is the view op itself; the copy clones what it returns, so the gradient is the view's.
"""

from __future__ import annotations

import functools

from ._common import normalize_dim
from .splitting import narrow, split, split_with_sizes, unbind
from .views import as_strided, permute, squeeze, t, transpose, unfold, unsqueeze, view


def _expand(input, size, *, implicit=False):
    """expand, with the ``implicit`` flag of PyTorch's expand_copy (it only marks tracing; no effect)."""
    return input.expand(size)


def _alias(input):
    """The same tensor (PyTorch's alias): its copy is a clone that keeps the gradient."""
    return input


def _detach(input):
    """The same data cut out of the graph: its copy does not require grad."""
    return input.detach()


_VIEW_OPS = {
    "view_copy": view, "permute_copy": permute, "expand_copy": _expand, "squeeze_copy": squeeze,
    "unsqueeze_copy": unsqueeze, "transpose_copy": transpose, "t_copy": t, "narrow_copy": narrow,
    "unbind_copy": unbind, "split_copy": split, "split_with_sizes_copy": split_with_sizes, "alias_copy": _alias,
    "detach_copy": _detach, "unfold_copy": unfold, "as_strided_copy": as_strided,
}


def _copying(name, view_op):
    @functools.wraps(view_op)
    def copy(*args, **kwargs):
        out = view_op(*args, **kwargs)
        return tuple(piece.clone() for piece in out) if isinstance(out, tuple) else out.clone()

    copy.__name__ = copy.__qualname__ = name
    copy.__doc__ = f"{view_op.__name__.strip('_')}, but the result is a copy with memory of its own (no view)."
    return copy


COPIES = {name: _copying(name, op) for name, op in _VIEW_OPS.items()}
globals().update(COPIES)  # view_copy, permute_copy, ... as names of this module
__all__ = list(COPIES)


class CopyMethods:
    """Tensor's narrow_copy (the one ``*_copy`` that is also a Tensor method in PyTorch)."""

    __slots__ = ()

    narrow_copy = COPIES["narrow_copy"]

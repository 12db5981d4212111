"""Shape and movement, gathered in one place: the ops live in one file per job.

``views`` (reshape, permute, expand, ...), ``joining`` (cat, stack, ...), ``splitting`` (narrow,
split, chunk, unbind, ...), ``padding`` (pad) and ``reordering`` (flip, roll, ...). This module
re-exports their functional forms and joins their Tensor methods into one mixin, ``ShapeMethods``.
"""

from __future__ import annotations

from .joining import Cat, Stack, cat, concat, concatenate, meshgrid, stack
from .padding import Pad, pad
from .reordering import Flip, ReorderingMethods, Roll, flip, roll
from .splitting import Narrow, Split, SplittingMethods, Unbind, chunk, narrow, split, unbind
from .views import (Expand, Permute, Reshape, Squeeze, Transpose, Unsqueeze, View, ViewMethods, broadcast_to, expand,
                    flatten, movedim, moveaxis, permute, reshape, squeeze, swapaxes, swapdims, t, transpose,
                    unflatten, unsqueeze, view)
from .repeat import Repeat, repeat, tile


class ShapeMethods(ViewMethods, SplittingMethods, ReorderingMethods):
    """Tensor's shape methods (mixed into gradlab.Tensor): one mixin per file, joined here."""

    __slots__ = ()

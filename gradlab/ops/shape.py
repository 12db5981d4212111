"""Shape and movement, gathered in one place: the ops live in one file per job.

``views`` (reshape, permute, expand, ...), ``joining`` (cat, stack, ...), ``splitting`` (narrow,
split, chunk, unbind, ...), ``padding`` (pad), ``reordering`` (flip, roll, ...) and ``copies``
(the ``*_copy`` variants). This module re-exports their functional forms and joins their Tensor
methods into one mixin, ``ShapeMethods``.
"""

from __future__ import annotations

from .copies import COPIES, CopyMethods
from .joining import (Cat, Stack, block_diag, cartesian_prod, cat, column_stack, combinations, concat, concatenate,
                      dstack, hstack, meshgrid, row_stack, stack, vander, vstack)
from .padding import Pad, constant_pad_nd, pad
from .reordering import Flip, ReorderingMethods, Roll, flip, fliplr, flipud, roll, rot90
from .splitting import (Narrow, Split, SplittingMethods, Unbind, chunk, dsplit, hsplit, narrow, split,
                        split_with_sizes, tensor_split, unbind, unsafe_chunk, unsafe_split, unsafe_split_with_sizes,
                        vsplit)
from .views import (AsStrided, Expand, Permute, Reshape, Squeeze, Transpose, Unfold, Unsqueeze, View, ViewMethods,
                    as_strided, as_strided_, atleast_1d, atleast_2d, atleast_3d, broadcast_shapes, broadcast_tensors,
                    broadcast_to, expand, flatten, moveaxis, movedim, permute, ravel, reshape, resize_as_, squeeze,
                    swapaxes, swapdims, t, transpose, unflatten, unravel_index, unsqueeze, view)
from .repeat import Repeat, repeat, tile

globals().update(COPIES)  # view_copy, permute_copy, ...


class ShapeMethods(ViewMethods, SplittingMethods, ReorderingMethods, CopyMethods):
    """Tensor's shape methods (mixed into gradlab.Tensor): one mixin per file, joined here."""

    __slots__ = ()

"""Collate: how a list of samples becomes one batch, as ``torch.utils.data.default_collate``.

``default_collate`` stacks tensors and numpy arrays on a new first dim and recurses into tuples,
lists and dicts, so ``(image, label)`` samples become ``[images, labels]``; ``default_convert`` is
what an unbatched loader does to each sample (numpy arrays become tensors, nothing is stacked).
"""

from __future__ import annotations

import collections.abc
import copy

import numpy as np

from ...creation import as_tensor, tensor
from ...dtypes import float64
from ...ops.functional import stack
from ...tensor import Tensor

__all__ = ["default_collate", "default_convert"]

_COLLATE_ERROR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _is_numpy(value) -> bool:
    return isinstance(value, (np.ndarray, np.generic)) and not isinstance(value, (np.str_, np.bytes_))


def _rebuild(like, items):
    """A container of like's type holding ``items`` (a dict of values for mappings, a list otherwise).

    Tuples become lists and types that can't be rebuilt become plain dicts/lists, as in PyTorch.
    """
    if isinstance(like, collections.abc.Mapping):
        try:
            if isinstance(like, collections.abc.MutableMapping):
                clone = copy.copy(like)
                clone.update(items)
                return clone
            return type(like)(items)
        except TypeError:
            return dict(items)
    if isinstance(like, tuple):
        return type(like)(*items) if hasattr(like, "_fields") else items
    try:
        if isinstance(like, collections.abc.MutableSequence):
            clone = copy.copy(like)
            clone[:] = items
            return clone
        return type(like)(items)
    except TypeError:
        return items


def default_collate(batch):
    """Merge a list of samples into a batch: tensors and numpy arrays are stacked on a new first dim,
    numbers become a 1-D tensor (floats as float64), strings stay a list, and tuples, lists and dicts
    are collated field by field (tuples come back as lists, as in PyTorch).
    """
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if _is_numpy(elem):
        if elem.dtype.kind in "OSUV":
            raise TypeError(_COLLATE_ERROR.format(elem.dtype))
        return stack([as_tensor(b) for b in batch], 0) if isinstance(elem, np.ndarray) else as_tensor(np.array(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, {key: default_collate([sample[key] for sample in batch]) for key in elem})
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size "
                               f"(got lengths {[len(sample) for sample in batch]})")
        return _rebuild(elem, [default_collate(list(field)) for field in zip(*batch)])
    raise TypeError(_COLLATE_ERROR.format(type(elem)))


def default_convert(data):
    """What a loader without batching (``batch_size=None``) does to each sample: numpy arrays become
    tensors, inside tuples, lists and dicts too; everything else is left as it is."""
    if _is_numpy(data):
        return data if data.dtype.kind in "OSUV" else as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(value) for key, value in data.items()})
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild(data, [default_convert(value) for value in data])
    return data

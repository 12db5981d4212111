"""Datasets: what a DataLoader reads samples from, as in ``torch.utils.data``.

A map-style ``Dataset`` answers ``dataset[i]`` and ``len(dataset)``; an ``IterableDataset`` is a
stream you can only loop over. ``Subset``, ``ConcatDataset`` and ``random_split`` build new
datasets from old ones without copying any data.
"""

from __future__ import annotations

import bisect
import itertools
import math
import warnings
from typing import Generic, TypeVar

from ...random import randperm
from ...tensor import Tensor

__all__ = ["Dataset", "IterableDataset", "TensorDataset", "StackDataset", "Subset", "ConcatDataset", "ChainDataset",
           "random_split"]


T_co = TypeVar("T_co", covariant=True)


class Dataset(Generic[T_co]):
    """A map from index to sample: subclasses define ``__getitem__`` (and usually ``__len__``).

    Generic, as PyTorch's: ``class Pairs(Dataset[tuple])`` names what a sample is, for type checkers.
    """

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} subclasses Dataset, so it must define __getitem__(self, i)")

    def __add__(self, other) -> "ConcatDataset":
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T_co]):
    """A stream of samples: subclasses define ``__iter__``; a DataLoader batches what it yields."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} subclasses IterableDataset, so it must define __iter__(self)")

    def __add__(self, other) -> "ChainDataset":
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Tensors of the same length, read together: sample ``i`` is ``(t[i] for t in tensors)``."""

    def __init__(self, *tensors: Tensor):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor, e.g. TensorDataset(inputs, labels)")
        for t in tensors:
            if not isinstance(t, Tensor) or t.ndim == 0:
                got = "a 0-d tensor" if isinstance(t, Tensor) else type(t).__name__
                raise TypeError(f"TensorDataset takes tensors with at least one dimension (samples first), got {got}")
        sizes = [t.shape[0] for t in tensors]
        if any(n != sizes[0] for n in sizes):
            raise ValueError(f"Size mismatch between tensors: TensorDataset needs one first dimension, got {sizes}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].shape[0]


class StackDataset(Dataset):
    """Datasets of the same length read side by side: ``StackDataset(images, texts)[i]`` is
    ``(images[i], texts[i])``, and ``StackDataset(image=images, text=texts)[i]`` a dict of them."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        self.datasets = args or kwargs
        parts = list(self.datasets.values()) if kwargs else list(args)
        self._length = len(parts[0])
        if any(len(part) != self._length for part in parts):
            raise ValueError(f"Size mismatch between datasets: StackDataset needs one length, got "
                             f"{[len(part) for part in parts]}")

    def _parts(self):
        return self.datasets.items() if isinstance(self.datasets, dict) else enumerate(self.datasets)

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {key: part[index] for key, part in self.datasets.items()}
        return tuple(part[index] for part in self.datasets)

    def __getitems__(self, indices: list) -> list:
        """One batch read part by part (each through its own ``__getitems__`` when it has one)."""
        columns = {}
        for key, part in self._parts():
            getitems = getattr(part, "__getitems__", None)
            column = getitems(indices) if callable(getitems) else [part[i] for i in indices]
            if len(column) != len(indices):
                raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got {len(column)}")
            columns[key] = column
        if isinstance(self.datasets, dict):
            return [dict(zip(columns, row)) for row in zip(*columns.values())]
        return [tuple(row) for row in zip(*columns.values())]

    def __len__(self) -> int:
        return self._length


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``, in that order."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list) -> list:
        inner = getattr(self.dataset, "__getitems__", None)
        if callable(inner):
            return inner([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Several map-style datasets one after another: index ``len(first)`` is the second's sample 0."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset; chain streams with ChainDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError(f"ConcatDataset: absolute value of index should not exceed dataset length "
                                 f"(index {idx}, length {len(self)})")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        if which == len(self.datasets):
            raise IndexError(f"ConcatDataset: index {idx} is out of range for a dataset of length {len(self)}")
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


class ChainDataset(IterableDataset):
    """Several iterable datasets one after another, read lazily."""

    def __init__(self, datasets):
        self.datasets = datasets

    def _streams(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only supports IterableDataset, got {type(d).__name__}")
            yield d

    def __iter__(self):
        for d in self._streams():
            yield from d

    def __len__(self) -> int:
        return sum(len(d) for d in self._streams())


def random_split(dataset, lengths, generator=None) -> list:
    """Split ``dataset`` into non-overlapping random Subsets of the given lengths (or fractions summing to 1).

    Fractions become ``floor(fraction * len(dataset))`` each, and what is left over is handed out
    one by one, round-robin, as PyTorch does. Pass ``generator=gradlab.Generator().manual_seed(0)``
    for the same split every time.
    """
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError(f"random_split: fraction at index {i} is not between 0 and 1 (got {fraction})")
        counts = [math.floor(n * fraction) for fraction in lengths]
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.",
                              stacklevel=2)
        lengths = counts
    if any(not isinstance(k, int) or k < 0 for k in lengths):
        raise ValueError(f"random_split: lengths must be non-negative integers or fractions summing to 1, "
                         f"got {lengths}")
    if sum(lengths) != n:
        raise ValueError(f"random_split: sum of input lengths ({sum(lengths)}) does not equal the length of the input "
                         f"dataset ({n})")
    order = randperm(n, generator=generator).tolist()
    return [Subset(dataset, order[end - k:end]) for end, k in zip(itertools.accumulate(lengths), lengths)]

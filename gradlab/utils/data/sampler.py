"""Samplers: the order in which a DataLoader visits a dataset's indices, as in ``torch.utils.data``.

A sampler is any iterable of indices (``BatchSampler`` yields lists of them). The random ones draw
from a ``gradlab.Generator`` when given one, so a seeded generator gives the same order every run.
"""

from __future__ import annotations

import itertools
from typing import Generic, TypeVar

import numpy as np

from ...random import Generator, _rng, randint, randperm

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]


T_co = TypeVar("T_co", covariant=True)


class Sampler(Generic[T_co]):
    """Base class: subclasses define ``__iter__`` (the indices) and usually ``__len__``; generic like
    PyTorch's (``Sampler[int]``, ``Sampler[list[int]]`` for a batch sampler)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} subclasses Sampler, so it must define __iter__(self)")


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1, always in order."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _positive_int(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


def _boolean(name: str, value, error=ValueError) -> None:
    if not isinstance(value, bool):
        raise error(f"{name} should be a boolean value, but got {name}={value}")


_DRAWS_PER_CALL = 32  # replacement draws are made this many at a time, as PyTorch does: never num_samples at once


class RandomSampler(Sampler):
    """A fresh random permutation each epoch; with ``replacement=True``, ``num_samples`` independent draws,
    made lazily (a sampler asked for 10**10 samples holds only the next few).

    Without a generator it seeds one from the global generator, so ``gradlab.manual_seed`` fixes the order.
    """

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        _boolean("replacement", replacement, TypeError)
        _positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n, wanted = len(self.data_source), self.num_samples
        generator = self.generator
        if generator is None:
            generator = Generator().manual_seed(randint(0, 2**62, ()).item())
        if self.replacement:
            for start in range(0, wanted, _DRAWS_PER_CALL):
                yield from randint(0, n, (min(_DRAWS_PER_CALL, wanted - start),), generator=generator).tolist()
            return
        for _ in range(wanted // n):
            yield from randperm(n, generator=generator).tolist()
        yield from randperm(n, generator=generator).tolist()[:wanted % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices, in a random order (without replacement)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """``num_samples`` indices in [0, len(weights)), index i drawn with probability weights[i] / sum(weights).

    Handy for unbalanced classes: give every sample the weight 1 / (size of its class).
    """

    def __init__(self, weights, num_samples: int, replacement: bool = True, generator=None):
        _positive_int("num_samples", num_samples)
        _boolean("replacement", replacement)
        weights = np.asarray(weights.tolist() if hasattr(weights, "tolist") else weights, dtype=np.float64)
        if weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {weights.shape}")
        if not np.isfinite(weights).all() or (weights < 0).any():
            raise ValueError("WeightedRandomSampler: invalid multinomial distribution "
                             "(weights must be finite and >= 0)")
        if weights.sum() <= 0:
            raise ValueError("WeightedRandomSampler: invalid multinomial distribution (sum of probabilities <= 0)")
        if not replacement and num_samples > np.count_nonzero(weights):
            raise ValueError(
                f"WeightedRandomSampler: cannot draw num_samples={num_samples} without replacement from "
                f"{np.count_nonzero(weights)} indices of non-zero weight; lower num_samples or use replacement=True"
            )
        self.weights = weights
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rng = _rng(self.generator)
        if self.replacement:  # inverse-CDF sampling: one uniform number per draw
            cdf = np.cumsum(self.weights)
            u = rng.random(self.num_samples) * cdf[-1]
            picks = np.minimum(np.searchsorted(cdf, u, side="right"), len(cdf) - 1)
        else:  # exponential race: the smallest Exp(1)/w values win, in order (zero weights never do)
            with np.errstate(divide="ignore", invalid="ignore"):
                keys = rng.exponential(size=len(self.weights)) / self.weights
            picks = np.argsort(keys, kind="stable")[:self.num_samples]
        yield from picks.tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups another sampler's indices into lists of ``batch_size``; ``drop_last`` drops a short final list."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        _positive_int("batch_size", batch_size)
        _boolean("drop_last", drop_last)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        indices = iter(self.sampler)
        while batch := list(itertools.islice(indices, self.batch_size)):
            if self.drop_last and len(batch) < self.batch_size:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size

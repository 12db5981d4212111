"""Fetchers: turn what the sampler gives (an index, or a list of them) into one collated batch.

The main process and every worker process fetch the same way, which is why a seeded loader gives
the same batches whatever ``num_workers`` is. A map-style dataset is read at the indices; an
iterable one is read onwards from its stream (the indices only say how many samples to take).
"""

from __future__ import annotations

import numpy as np

from .collate import default_collate
from .dataset import IterableDataset, Subset, TensorDataset


def _tensor_source(dataset, indices):
    """Unwrap Subsets down to a plain TensorDataset, or return (None, None) if the chain is anything else."""
    while type(dataset) is Subset:
        indices = [dataset.indices[i] for i in indices]
        dataset = dataset.dataset
    if type(dataset) is TensorDataset:
        return dataset, indices
    return None, None


class MapFetcher:
    """``dataset[i]`` for each index of a batch, then ``collate_fn`` (or the sample alone, unbatched)."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        dataset = self.dataset
        if not self.auto_collation:
            return self.collate_fn(dataset[index])
        if self.collate_fn is default_collate:
            source, rows = _tensor_source(dataset, index)
            if source is not None:  # one gather per tensor instead of stacking single samples: same batch
                rows = np.asarray(rows, dtype=np.int64)
                return [t[rows] for t in source.tensors]
        getitems = getattr(dataset, "__getitems__", None)
        samples = getitems(index) if callable(getitems) else [dataset[i] for i in index]
        return self.collate_fn(samples)


class IterableFetcher:
    """The next ``len(index)`` samples of the stream; raises StopIteration once it has run dry.

    A short final batch is kept unless ``drop_last``; the stream itself is opened here, so each
    worker (after its ``worker_init_fn``) reads its own copy of the dataset.
    """

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.stream, self.auto_collation = iter(dataset), auto_collation
        self.collate_fn, self.drop_last, self.ended = collate_fn, drop_last, False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.stream))
        samples = []
        for _ in index:
            try:
                samples.append(next(self.stream))
            except StopIteration:
                self.ended = True
                break
        if not samples or (self.drop_last and len(samples) < len(index)):
            raise StopIteration
        return self.collate_fn(samples)


def make_fetcher(dataset, auto_collation: bool, collate_fn, drop_last: bool):
    """The fetcher that fits the dataset: an IterableFetcher for streams, a MapFetcher otherwise."""
    kind = IterableFetcher if isinstance(dataset, IterableDataset) else MapFetcher
    return kind(dataset, auto_collation, collate_fn, drop_last)

"""``DistributedSampler``: the share of a dataset that one of ``num_replicas`` processes reads.

Every replica shuffles with the same seed (``seed + epoch``), pads the order by repeating its start
until it divides evenly (or, with ``drop_last``, cuts the tail), and takes every
``num_replicas``-th index from ``rank`` on. gradlab trains in one process, so there is no process
group to ask: pass ``num_replicas`` and ``rank`` yourself, e.g. to split work between machines.
"""

from __future__ import annotations

import math

from ...generator import Generator
from ...random import randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices ``rank, rank + num_replicas, ...`` of the (shuffled, padded) order; ``set_epoch`` reshuffles."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            missing = " and ".join(name for name, value in (("num_replicas", num_replicas), ("rank", rank))
                                   if value is None)
            raise RuntimeError(f"DistributedSampler: gradlab trains in one process and has no process group to "
                               f"read {missing} from; pass them yourself, e.g. "
                               f"DistributedSampler(dataset, num_replicas=2, rank=0)")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset, self.num_replicas, self.rank = dataset, num_replicas, rank
        self.epoch, self.drop_last, self.shuffle, self.seed = 0, drop_last, shuffle, seed
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            indices = randperm(n, generator=Generator().manual_seed(self.seed + self.epoch)).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - n
            indices += (indices * math.ceil(padding / n))[:padding] if n else []
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use a new order (seed + epoch) next time; call it at the start of every epoch, on every replica."""
        self.epoch = epoch

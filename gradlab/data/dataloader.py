"""``DataLoader``: batches from a dataset, in the order a sampler gives, as in ``torch.utils.data``.

Each batch is a list of samples glued together by ``collate_fn``; the default stacks tensors and
recurses into tuples, lists and dicts, so ``(image, label)`` samples become ``[images, labels]``.
Everything runs in the main process (``num_workers=0``).
"""

from __future__ import annotations

import collections.abc
import copy

import numpy as np

from ..creation import as_tensor, tensor
from ..dtypes import float64
from ..ops.functional import stack
from ..tensor import Tensor
from .dataset import IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

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


def get_worker_info() -> None:
    """Always None: gradlab loads data in the main process, where PyTorch returns None too."""


class _InfiniteConstantSampler(Sampler):
    """What an IterableDataset is 'sampled' with: the stream decides when it ends."""

    def __iter__(self):
        while True:
            yield None


def _tensor_source(dataset, indices):
    """Unwrap Subsets down to a plain TensorDataset, or return (None, None) if the chain is anything else."""
    while type(dataset) is Subset:
        indices = [dataset.indices[i] for i in indices]
        dataset = dataset.dataset
    if type(dataset) is TensorDataset:
        return dataset, indices
    return None, None


class DataLoader:
    """Iterate over ``dataset`` in batches: ``for x, y in DataLoader(TensorDataset(X, Y), batch_size=32)``.

    ``shuffle=True`` draws a new order each epoch (from ``generator`` when given); ``sampler`` or
    ``batch_sampler`` choose the order yourself; ``batch_size=None`` yields single samples unbatched;
    ``drop_last`` drops a short final batch; ``collate_fn`` merges a list of samples into a batch.
    """

    _frozen = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.")
        if num_workers > 0:
            raise ValueError(f"DataLoader: gradlab loads batches in the main process only, so num_workers must be 0 "
                             f"(got num_workers={num_workers}); drop the argument or pass num_workers=0")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing; gradlab has no "
                             "worker processes, so leave prefetch_factor as None")
        if persistent_workers:
            raise ValueError("persistent_workers option needs num_workers > 0, and gradlab's DataLoader has no workers")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, "
                                     f"but got {name}={value}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            else:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.sampler, self.batch_sampler, self.generator = sampler, batch_sampler, generator
        self.num_workers, self.pin_memory, self.timeout = num_workers, pin_memory, timeout
        self.worker_init_fn, self.multiprocessing_context = worker_init_fn, multiprocessing_context
        self.prefetch_factor, self.persistent_workers = prefetch_factor, persistent_workers
        self.pin_memory_device, self.in_order = pin_memory_device, in_order
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self._initialized = True

    def __setattr__(self, name, value):
        if name in self._frozen and getattr(self, "_initialized", False):
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        object.__setattr__(self, name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self._index_sampler)

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            return self._iterate_stream()
        return self._iterate_map()

    def _iterate_map(self):
        dataset, collate = self.dataset, self.collate_fn
        if not self._auto_collation:
            for index in self.sampler:
                yield collate(dataset[index])
            return
        getitems = getattr(dataset, "__getitems__", None)
        for indices in self.batch_sampler:
            if collate is default_collate:
                source, rows = _tensor_source(dataset, indices)
                if source is not None:  # one gather per tensor instead of stacking single samples: same batch
                    rows = np.asarray(rows, dtype=np.int64)
                    yield [t[rows] for t in source.tensors]
                    continue
            samples = getitems(indices) if callable(getitems) else [dataset[i] for i in indices]
            yield collate(samples)

    def _iterate_stream(self):
        stream, collate = iter(self.dataset), self.collate_fn
        if not self._auto_collation:
            for sample in stream:
                yield collate(sample)
            return
        for indices in self.batch_sampler:
            samples = [sample for _, sample in zip(indices, stream)]
            if not samples or (self.drop_last and len(samples) < len(indices)):
                return
            yield collate(samples)
            if len(samples) < len(indices):
                return

"""``gradlab.utils.data``, as ``torch.utils.data``: datasets, samplers and the DataLoader that batches them.

Read in this order: ``dataset`` (what samples are), ``sampler`` (in which order to visit them),
``collate`` (how samples become a batch), ``fetch`` (read one batch), ``worker`` (a worker process),
``dataloader`` (putting it together). Datasets to learn on live one level up, in ``gradlab.data``.
"""

from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .distributed import DistributedSampler
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)
from .worker import WorkerInfo, get_worker_info

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info", "WorkerInfo", "Dataset",
           "IterableDataset", "TensorDataset", "StackDataset", "Subset", "ConcatDataset", "ChainDataset",
           "random_split", "Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler",
           "WeightedRandomSampler", "BatchSampler", "DistributedSampler"]

"""Data loading, as ``torch.utils.data``: datasets, samplers and the DataLoader that batches them,
plus small sets to learn on (2-D toy problems, the 8×8 digits) and a reader for MNIST's IDX files.
"""

from .dataloader import DataLoader, default_collate, default_convert, get_worker_info
from .dataset import ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .digits import load_digits, train_test_split
from .idx import load_mnist, read_idx
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)
from .synthetic import SYNTHETIC_NAMES, make_synthetic
from .text import TEXT_NAMES, load_text  # noqa: F401

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info", "Dataset", "IterableDataset",
           "TensorDataset", "Subset", "ConcatDataset", "ChainDataset", "random_split", "Sampler", "SequentialSampler",
           "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler", "BatchSampler", "make_synthetic",
           "SYNTHETIC_NAMES", "load_digits", "train_test_split", "read_idx", "load_mnist", "load_text", "TEXT_NAMES"]

from .. import utils  # noqa: E402,F401  (so that gradlab.utils.data works after a plain `import gradlab`, as in torch)

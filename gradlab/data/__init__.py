"""Datasets to learn on, as torchvision's sit beside ``torch.utils.data``: 2-D toy problems, the 8×8
digits, a reader for MNIST's IDX files and bundled texts for character models.

The loading machinery (``Dataset``, ``DataLoader``, the samplers) lives in ``gradlab.utils.data``,
where PyTorch keeps it; its names are re-exported here, so ``from gradlab.data import DataLoader``
works too. Imports run one way: this package uses ``gradlab.utils.data``, never the reverse.
"""

from ..utils.data import *  # noqa: F401,F403
from ..utils.data import __all__ as _loading_names
from .digits import load_digits, train_test_split
from .idx import load_mnist, read_idx
from .synthetic import SYNTHETIC_NAMES, make_synthetic
from .text import TEXT_NAMES, load_text

__all__ = [*_loading_names, "make_synthetic", "SYNTHETIC_NAMES", "load_digits", "train_test_split", "read_idx",
           "load_mnist", "load_text", "TEXT_NAMES"]

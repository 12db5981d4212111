"""Datasets for the DataLoader worker tests that a spawned worker can import quickly: this module
needs only numpy (not torch, which tests/helpers.py imports), so a fresh interpreter starts fast."""

import os

import numpy as np

from gradlab.utils.data import Dataset


class Numbers(Dataset):
    """Sample i is {"x": [i, i²] (float32), "y": i, "pid": the process that read it}."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return {"x": np.array([i, i * i], dtype=np.float32), "y": i, "pid": os.getpid()}

    def __len__(self):
        return self.n

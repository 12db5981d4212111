"""``gradlab.utils``: where PyTorch code looks for ``utils.data`` (datasets, samplers, DataLoader) and ``utils.hooks``."""

from . import data, dlpack, hooks  # noqa: F401

"""``gradlab.utils``: where PyTorch code looks for ``utils.data`` (datasets, samplers, DataLoader)."""

from . import data  # noqa: F401

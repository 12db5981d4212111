"""``gradlab.utils``: where PyTorch code looks for ``utils.data``."""

from . import data  # noqa: F401

"""``gradlab.utils``: where PyTorch code looks for ``utils.data`` and ``utils.hooks``."""

from . import data, hooks  # noqa: F401

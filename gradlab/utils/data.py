"""``gradlab.utils.data`` is ``gradlab.data`` under PyTorch's name: ``from gradlab.utils.data import DataLoader``."""

from ..data import *  # noqa: F401,F403
from ..data import __all__  # noqa: F401

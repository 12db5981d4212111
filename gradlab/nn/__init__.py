"""Neural-network building blocks: Module, Parameter, layers, losses, init and utilities."""

from . import functional, init  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Parameter  # noqa: F401
from . import utils  # noqa: F401
from .parallel import DataParallel  # noqa: F401  (also binds gradlab.nn.parallel)

"""Neural-network building blocks: Module, Parameter, layers, losses, init and utilities."""

from . import functional, init  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from . import common_types, grad, utils  # noqa: F401
from .factory import factory_kwargs  # noqa: F401
from .parallel import DataParallel  # noqa: F401  (also binds gradlab.nn.parallel)

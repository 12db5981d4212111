"""Neural-network building blocks: Module, Parameter, layers, losses, init and utilities."""

from . import functional, init  # noqa: F401
from .modules import *  # noqa: F401,F403
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter  # noqa: F401
from . import grad, utils  # noqa: F401

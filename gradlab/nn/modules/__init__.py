"""The layers of gradlab.nn, one file per family (each file lists its public names in ``__all__``)."""

from .module import Module, RemovableHandle  # noqa: F401
from .container import *  # noqa: F401,F403

"""``gradlab.nn.functional``: the stateless forms of the layers (``F.relu``, ``F.conv2d``, ``F.cross_entropy``).

Each file here holds one family and lists its public names in ``__all__``.
"""
from .attention import *  # noqa: F401,F403

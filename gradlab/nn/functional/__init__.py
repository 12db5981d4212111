"""``gradlab.nn.functional``: the stateless forms of the layers (``F.relu``, ``F.conv2d``, ``F.cross_entropy``).

Each file here holds one family and lists its public names in ``__all__``.
"""
from .attention import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .vision import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .. import grad  # noqa: F401,E402  (torch.nn.functional.grad is torch.nn.grad too)

"""The layers of gradlab.nn, one file per family (each file lists its public names in ``__all__``)."""

from .module import Module, RemovableHandle, register_module_forward_hook, register_module_forward_pre_hook  # noqa: F401
from .container import *  # noqa: F401,F403
from .loss import *  # noqa: F401,F403
from .rnn import *  # noqa: F401,F403
from .activation import *  # noqa: F401,F403
from .batchnorm import *  # noqa: F401,F403
from .dropout import *  # noqa: F401,F403
from .normalization import *  # noqa: F401,F403
from .sparse import *  # noqa: F401,F403
from .linear import *  # noqa: F401,F403
from .flatten import *  # noqa: F401,F403
from .conv import *  # noqa: F401,F403
from .pooling import *  # noqa: F401,F403
from .attention import *  # noqa: F401,F403
from .transformer import *  # noqa: F401,F403
from .instancenorm import *  # noqa: F401,F403
from .padding import *  # noqa: F401,F403
from .pixelshuffle import *  # noqa: F401,F403
from .upsampling import *  # noqa: F401,F403
from .distance import *  # noqa: F401,F403
from .fold import *  # noqa: F401,F403
from .lazy import *  # noqa: F401,F403
from .adaptive import *  # noqa: F401,F403

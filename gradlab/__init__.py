"""gradlab: an autograd engine you can read, with a lab that shows it working.

The names follow PyTorch: ``gradlab.tensor``, ``gradlab.zeros``, ``x.backward()``, ``gradlab.no_grad``.
Importing gradlab needs numpy alone; the optional backends and the lab load when first used.
"""

from . import autograd
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .backends.device import Device as device
from .backends.device import set_default_device
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace, ones,
                       ones_like, tensor, zeros, zeros_like)
from .dtypes import (DType as dtype, bool_ as bool, float16, float32, float64, get_default_dtype, int32, int64,
                     set_default_dtype)
from .dtypes import float16 as half, float32 as float, float64 as double, int32 as int, int64 as long
from .ops.functional import *  # noqa: F401,F403  (gradlab.exp, gradlab.matmul, ... as in torch)
from .random import (Generator, initial_seed, manual_seed, multinomial, normal, rand, rand_like, randint, randn,
                     randn_like, randperm, seed)
from .scalar import Scalar
from .tensor import Tensor, is_floating_point, is_tensor, numel

# Built on Tensor, so imported after it:
from .autograd import functional as _functional, gradcheck as _gradcheck  # noqa: E402
from . import cuda, data, linalg, nn, optim, utils  # noqa: E402  (gradlab.nn, gradlab.optim, ... as in torch)
from .io import load, save  # noqa: E402

autograd.functional = _functional
autograd.gradcheck = _gradcheck.gradcheck
autograd.gradgradcheck = _gradcheck.gradgradcheck

__version__ = "0.1.0"


def __getattr__(name):
    """``gradlab.lab`` loads on first use, so ``import gradlab`` never imports the lab's dependencies."""
    if name == "lab":
        import importlib

        return importlib.import_module(".lab", __name__)
    raise AttributeError(f"module 'gradlab' has no attribute {name!r}")

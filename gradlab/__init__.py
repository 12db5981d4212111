"""gradlab: an autograd engine you can read, with a lab that shows it working.

The names follow PyTorch: ``gradlab.tensor``, ``gradlab.zeros``, ``x.backward()``, ``gradlab.no_grad``.
Importing gradlab needs numpy alone; the optional backends and the lab load when first used.
"""

# Bottom-up, as the layers stack (README.md, docs/architecture.md): dtypes and backends, autograd,
# ops, Tensor and its factories, then the libraries built on Tensor.
from .dtypes import (DType as dtype, bfloat16, bool_ as bool, can_cast, finfo, float16, float32, float64,
                     get_default_dtype, iinfo, int8, int16, int32, int64, promote_types, result_type, set_default_dtype,
                     uint8, uint16, uint32, uint64)
from .dtypes import float16 as half, float32 as float, float64 as double, int16 as short, int32 as int, int64 as long
from .size import Size
from .layouts import channels_last, channels_last_3d, contiguous_format, layout, memory_format, preserve_format, strided
from .backends.device import Device as device
from .backends.device import set_default_device
from .backends.device import DeviceInfo, devices
from . import return_types
from . import autograd
from .generator import default_generator
from .autograd import (enable_grad, gradcheck as _gradcheck, inference_mode, is_grad_enabled,
                       is_inference_mode_enabled, no_grad, set_grad_enabled)
from .ops.functional import *  # noqa: F401,F403  (gradlab.exp, gradlab.matmul, ... as in torch)
from .ops.out_argument import accept_out as _accept_out
from .ops.autocast import (autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache,
                           get_autocast_cpu_dtype, get_autocast_dtype, is_autocast_available, is_autocast_cache_enabled,
                           is_autocast_cpu_enabled, is_autocast_enabled, set_autocast_cache_enabled,
                           set_autocast_cpu_dtype, set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled)
from .tensor import Tensor, clone, detach, detach_, fill, get_device, is_floating_point, is_tensor, numel
from .tensor_types import *  # noqa: F401,F403  (gradlab.FloatTensor, gradlab.LongTensor, ... as in torch)
from .tensor_types import Variable
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace, ones,
                       ones_like, tensor, tril_indices, triu_indices, zeros, zeros_like)
from .random import (Generator, initial_seed, manual_seed, multinomial, normal, rand, rand_like, randint, randn,
                     randn_like, randperm, seed)
from .scalar import Scalar
from .dlpack import from_dlpack, to_dlpack
from .printing import set_printoptions
from .random import bernoulli, get_rng_state, poisson, randint_like, set_rng_state
from .factories import (asarray, bartlett_window, blackman_window, empty_strided, frombuffer, hamming_window,
                        hann_window, kaiser_window, logspace, scalar_tensor)
from .naming import typename
from .settings import (are_deterministic_algorithms_enabled, get_default_device, get_deterministic_debug_mode,
                       get_float32_matmul_precision, get_num_interop_threads, get_num_threads,
                       is_anomaly_check_nan_enabled, is_anomaly_enabled, is_deterministic_algorithms_warn_only_enabled,
                       is_warn_always_enabled, set_anomaly_enabled, set_deterministic_debug_mode,
                       set_float32_matmul_precision, set_num_interop_threads, set_num_threads, set_warn_always,
                       use_deterministic_algorithms)
from . import cuda, linalg, special  # gradlab.special as torch.special
from .autograd import functional as _functional  # built on Tensor, so after it
from . import nn, optim, utils, data  # gradlab.nn, gradlab.optim, ... as in torch
from . import jit, compile  # gradlab.jit.trace, gradlab.compile(fn) and gradlab.compile.make_step
from .nn.functional.torch_level import *  # noqa: F401,F403  (gradlab.conv2d, gradlab.dropout, ... as in torch)
from .io import load, save
from . import amp, cpu  # mixed precision; gradlab.cpu.amp as in torch
from .amp import GradScaler, autocast

from math import e, inf, nan, pi  # noqa: E402  (gradlab.pi, gradlab.inf as in torch)

newaxis = None  # x[:, gradlab.newaxis], as numpy's and torch's
_accept_out(globals())  # gradlab.add(x, y, out=r), gradlab.matmul(a, b, out=c): wherever torch's takes out=
autograd.functional = _functional
autograd.Variable = Variable
autograd.gradcheck = _gradcheck.gradcheck
autograd.gradgradcheck = _gradcheck.gradgradcheck

__version__ = "0.1.0"


def __getattr__(name):
    """``gradlab.lab`` loads on first use, so ``import gradlab`` never imports the lab's dependencies;
    ``gradlab.testing`` and ``gradlab.distributed`` load on first use too, to keep the import fast."""
    if name in ("lab", "testing", "distributed"):
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'gradlab' has no attribute {name!r}")

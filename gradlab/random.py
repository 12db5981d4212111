"""Random numbers: ``manual_seed``, ``Generator`` and the random factories.

Every draw comes from numpy's PCG64 on the host and is then moved to the device, so one seed
gives the same numbers on every backend: a model initialised on 'cpu' and on 'cuda' starts equal.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .backends.device import backend_for, resolve_device
from .creation import _finish, _size
from .generator import Generator, default_generator, generator_rng as _rng
from .generator import multinomial  # noqa: F401  (it lives below Tensor, for Tensor.multinomial)
from .layouts import check_options
from .tensor import Tensor


def manual_seed(seed: int) -> Generator:
    """Seed the default generator: the same seed gives the same numbers, on every device."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def _float_dtype(op, dtype):
    dtype = dt.as_dtype(dtype) if dtype is not None else dt.get_default_dtype()
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op}: expected a floating-point dtype, got {dtype.name}; use randint for integers")
    return dtype


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """Uniform random numbers in [0, 1)."""
    check_options("rand", layout, pin_memory)
    device, dtype = resolve_device(device), _float_dtype("rand", dtype)
    array = backend_for("rand", device, dtype).random_uniform(_rng(generator), _size("rand", size), 0.0, 1.0, dtype)
    return _finish(array, device, requires_grad, "rand")


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """Standard normal random numbers (mean 0, standard deviation 1)."""
    check_options("randn", layout, pin_memory)
    device, dtype = resolve_device(device), _float_dtype("randn", dtype)
    array = backend_for("randn", device, dtype).random_normal(_rng(generator), _size("randn", size), 0.0, 1.0, dtype)
    return _finish(array, device, requires_grad, "randn")


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False,
            layout=None, pin_memory=False):
    """Random integers in [low, high): ``randint(10, (3,))`` or ``randint(2, 10, (3,))``."""
    check_options("randint", layout, pin_memory)
    if size is None:
        if high is None or isinstance(high, (int, np.integer)):
            raise TypeError("randint: missing the size argument, e.g. randint(0, 10, (3,)) or randint(10, (3,))")
        low, high, size = 0, low, high
    elif high is None:
        low, high = 0, low
    if high <= low:
        raise RuntimeError(f"randint: expected low < high, but got low={low}, high={high}")
    device = resolve_device(device)
    dtype = dt.as_dtype(dtype) if dtype is not None else dt.int64
    array = backend_for("randint", device, dtype).random_integers(_rng(generator), low, high, _size("randint", (size,)), dtype)
    return _finish(array, device, requires_grad, "randint")


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False,
           layout=None, pin_memory=False):
    """Normal random numbers; ``mean``/``std`` may be tensors (elementwise) or numbers with a ``size``."""
    check_options("normal", layout, pin_memory)
    if isinstance(std, Tensor):
        backend = std.device.backend
        if bool(backend.to_numpy(backend.any(backend.lt(std.array, 0)))):
            raise RuntimeError("normal: expected all elements of std >= 0.0, but some are negative")
    elif std < 0:
        raise RuntimeError(f"normal: expected std >= 0.0, but found std {std}")
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        ref = mean if isinstance(mean, Tensor) else std
        shape = np.broadcast_shapes(getattr(mean, "shape", ()), getattr(std, "shape", ()))
        noise = ref.device.backend.random_normal(_rng(generator), shape, 0.0, 1.0, _float_dtype("normal", ref.dtype))
        return (ref._wrap(noise) * std + mean).detach()
    if size is None:
        raise TypeError("normal: give a size when mean and std are numbers, e.g. normal(0.0, 1.0, (3,))")
    device, dtype = resolve_device(device), _float_dtype("normal", dtype)
    array = backend_for("normal", device, dtype).random_normal(_rng(generator), _size("normal", (size,)), mean, std, dtype)
    return _finish(array, device, requires_grad, "normal")


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
    """A random permutation of 0 .. n-1."""
    check_options("randperm", layout, pin_memory)
    if n < 0:
        raise RuntimeError(f"randperm: n must be non-negative, got {n}")
    device = resolve_device(device)
    dtype = dt.as_dtype(dtype) if dtype is not None else dt.int64
    return _finish(backend_for("randperm", device, dtype).random_permutation(_rng(generator), n, dtype), device, requires_grad, "randperm")


def rand_like(input, *, generator=None, dtype=None, device=None, requires_grad=False,
              layout=None, pin_memory=False, memory_format=None):
    """Uniform [0, 1) numbers in the shape (and, unless given, dtype and device) of ``input``."""
    check_options("rand_like", layout, pin_memory, memory_format, ndim=input.ndim)
    return rand(input.shape, generator=generator, dtype=dtype or input.dtype, device=device or input.device,
                requires_grad=requires_grad)


def randn_like(input, *, generator=None, dtype=None, device=None, requires_grad=False,
               layout=None, pin_memory=False, memory_format=None):
    """Standard normal numbers in the shape (and, unless given, dtype and device) of ``input``."""
    check_options("randn_like", layout, pin_memory, memory_format, ndim=input.ndim)
    return randn(input.shape, generator=generator, dtype=dtype or input.dtype, device=device or input.device,
                 requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, dtype=None, device=None, requires_grad=False,
                 layout=None, pin_memory=False, memory_format=None, generator=None):
    """Random integers in [low, high) in the shape of ``input``: ``randint_like(x, 10)`` or ``randint_like(x, 2, 10)``.

    The dtype and device follow ``input`` unless given (so a float input gives whole-number floats).
    """
    check_options("randint_like", layout, pin_memory, memory_format, ndim=input.ndim)
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(input.shape), generator=generator, dtype=dtype or input.dtype,
                   device=device or input.device, requires_grad=requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """0/1 draws, 1 with probability ``input`` elementwise (or ``p`` for every element), in input's dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"bernoulli(): argument 'input' must be Tensor, not {type(input).__name__}")
    out = input.detach().clone()
    return out.bernoulli_(input if p is None else p, generator=generator)


def poisson(input, generator=None):
    """Poisson counts with rates ``input`` (non-negative), as floats of input's dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"poisson(): argument 'input' must be Tensor, not {type(input).__name__}")
    backend = input.device.backend
    backend.synchronize()
    rates = np.asarray(backend.to_numpy(input.array), dtype=np.float64)
    if not np.all(rates >= 0):
        raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative (and not NaN)")
    return input._wrap(backend.asarray(_rng(generator).poisson(rates), input.dtype))


def get_rng_state() -> Tensor:
    """The default generator's state as a uint8 tensor; ``set_rng_state`` puts it back (as in PyTorch)."""
    state = default_generator.get_state()["state"]
    packed = state["state"].to_bytes(16, "little") + state["inc"].to_bytes(16, "little")
    extra = default_generator.get_state()
    packed += bytes([extra["has_uint32"]]) + int(extra["uinteger"]).to_bytes(4, "little")
    return Tensor(np.frombuffer(packed, dtype=np.uint8).copy(), dtype=dt.uint8)


def set_rng_state(new_state) -> None:
    """Restore the default generator from a state that ``get_rng_state`` returned."""
    if not isinstance(new_state, Tensor) or new_state.dtype is not dt.uint8 or tuple(new_state.shape) != (37,):
        raise RuntimeError(f"set_rng_state: expected the uint8 tensor of 37 bytes that get_rng_state returns, got "
                           f"{new_state!r:.60}")
    packed = bytes(new_state.numpy().tolist())
    default_generator.set_state({"bit_generator": "PCG64",
                                 "state": {"state": int.from_bytes(packed[:16], "little"),
                                           "inc": int.from_bytes(packed[16:32], "little")},
                                 "has_uint32": packed[32], "uinteger": int.from_bytes(packed[33:37], "little")})

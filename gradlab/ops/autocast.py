"""Autocast's state and its one decorator: inside ``with gradlab.autocast("cpu")`` ops change precision.

An op marked ``@autocast_op("lower")`` (matrix products, convolutions, attention) casts its floating
inputs to the autocast dtype (bfloat16 on 'cpu', float16 on 'cuda' unless asked otherwise); one marked
``@autocast_op("fp32")`` (losses, prod, ...) casts them up to float32, where lower precision loses too
much. Every other op runs in its inputs' dtype. The casts are ``x.to(dtype)``, so they are recorded and
a float32 weight gets a float32 gradient. The state is per thread, as PyTorch keeps it: a new thread
starts with autocast off. While no thread has it on, a marked op pays for one attribute read.
"""

from __future__ import annotations

import functools
import inspect
import threading

from .. import dtypes as dt
from ..autograd.function import TrackedTensor
from ..autograd.grad_mode import is_grad_enabled
from .conversion import Cast

DEVICE_TYPES = ("cpu", "cuda")  # the device types autocast knows; others raise PyTorch's error
_DEFAULT_DTYPES = {"cpu": dt.bfloat16, "cuda": dt.float16}


class _AutocastState(threading.local):
    """One thread's autocast switches. ``active`` is True when any device type has autocast on."""

    def __init__(self):
        self.active = False
        self.enabled = dict.fromkeys(DEVICE_TYPES, False)
        self.dtype = dict(_DEFAULT_DTYPES)
        self.nesting = 0
        self.cache_enabled = True
        self.cache = {}  # id(weight) -> (weight, its cast): a leaf weight is cast once per autocast region


class _Anywhere:
    """How many threads have autocast on: a plain attribute, so the ops' fast path skips the thread-local
    lookup (0.2 µs on this machine) while no thread uses autocast."""

    __slots__ = ("threads", "lock")

    def __init__(self):
        self.threads = 0
        self.lock = threading.Lock()


state = _AutocastState()
_anywhere = _Anywhere()


def _set_active(active: bool) -> None:
    if active != state.active:
        with _anywhere.lock:
            _anywhere.threads += 1 if active else -1
        state.active = active


def _device_type(op: str, device_type) -> str:
    if device_type not in DEVICE_TYPES:
        raise RuntimeError(f"{op}: unsupported autocast device_type {device_type!r}; gradlab's autocast knows "
                           f"{', '.join(map(repr, DEVICE_TYPES))}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether ``autocast(device_type)`` is a device type autocast knows ('cpu' and 'cuda')."""
    return device_type in DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` in this thread (no argument: 'cuda', as in PyTorch)."""
    return state.enabled[_device_type("is_autocast_enabled", "cuda" if device_type is None else device_type)]


def set_autocast_enabled(device_type, enabled=None) -> None:
    """``set_autocast_enabled('cpu', True)``; the one-argument form ``set_autocast_enabled(True)`` means 'cuda'."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    state.enabled[_device_type("set_autocast_enabled", device_type)] = bool(enabled)
    _set_active(any(state.enabled.values()))


def get_autocast_dtype(device_type: str):
    """The dtype autocast runs lower-precision ops in on ``device_type`` (this thread)."""
    return state.dtype[_device_type("get_autocast_dtype", device_type)]


def set_autocast_dtype(device_type: str, dtype) -> None:
    state.dtype[_device_type("set_autocast_dtype", device_type)] = dt.as_dtype(dtype)


def _deprecated_pair(device_type):
    def is_enabled() -> bool:
        return is_autocast_enabled(device_type)

    def set_enabled(enabled) -> None:
        set_autocast_enabled(device_type, enabled)

    def get_dtype():
        return get_autocast_dtype(device_type)

    def set_dtype(dtype) -> None:
        set_autocast_dtype(device_type, dtype)

    return is_enabled, set_enabled, get_dtype, set_dtype


# PyTorch's older per-device names for the CPU
is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype = (
    _deprecated_pair("cpu"))


def autocast_increment_nesting() -> int:
    """Count one more open autocast region in this thread; returns the new depth."""
    state.nesting += 1
    return state.nesting


def autocast_decrement_nesting() -> int:
    """Count one autocast region closed; returns the new depth (the cache is dropped at 0 by autocast)."""
    state.nesting -= 1
    return state.nesting


def is_autocast_cache_enabled() -> bool:
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Forget the cast copies of weights kept for this autocast region."""
    state.cache.clear()


# --- casting the inputs of a marked op ----------------------------------------------------------------


def _cast(value, dtype, device_type):
    """A floating tensor on ``device_type`` in ``dtype`` (float64 is left alone, as PyTorch does)."""
    if isinstance(value, TrackedTensor):
        if (value.dtype is dtype or not value.dtype.is_floating_point or value.dtype is dt.float64
                or value.device.type != device_type):
            return value
        cacheable = state.cache_enabled and value.requires_grad and value.grad_fn is None and is_grad_enabled()
        if cacheable:
            cached = state.cache.get(id(value))
            if cached is not None and cached[0] is value and cached[1].dtype is dtype:
                return cached[1]
        out = Cast.apply(value, dtype)
        if cacheable:
            state.cache[id(value)] = (value, out)
        return out
    if type(value) in (list, tuple):  # a sequence of tensors (cat, einsum); not a NamedTuple of settings
        return type(value)(_cast(item, dtype, device_type) for item in value)
    return value


def _run_autocast(policy, fn, args, kwargs):
    """The slow path, taken while some thread has autocast on: cast the inputs if this thread has it on."""
    if not state.active:
        return fn(*args, **kwargs)
    for device_type, on in state.enabled.items():
        if on:
            dtype = dt.float32 if policy == "fp32" else state.dtype[device_type]
            args = _cast(args, dtype, device_type)
            kwargs = {name: _cast(value, dtype, device_type) for name, value in kwargs.items()}
    state.active = False  # the op's own inner ops run as written, as PyTorch's autocast kernels redispatch
    try:
        return fn(*args, **kwargs)
    finally:
        state.active = True


def autocast_op(policy: str):
    """Mark an op for autocast: "lower" runs it in the autocast dtype, "fp32" in float32."""
    if policy not in ("lower", "fp32"):
        raise ValueError(f"autocast_op: policy must be 'lower' or 'fp32', got {policy!r}")

    def mark(fn):
        run = _forwarding_wrapper(fn, policy)
        run.autocast_policy = policy
        return functools.wraps(fn)(run)

    return mark


def _forwarding_wrapper(fn, policy):
    """``def run(<fn's own parameters>)`` that calls ``fn`` straight through while no thread has autocast on.

    It is written out with the op's parameters rather than as ``run(*args, **kwargs)``: packing them
    costs about 0.5 µs a call (5 % of a small matmul), the written-out form about nothing.
    """
    params, positional, keywords, namespace = [], [], [], {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.POSITIONAL_ONLY:
            raise TypeError(f"autocast_op: {fn.__name__} has positional-only parameters, which it does not forward")
        if p.kind is p.KEYWORD_ONLY and not any(x.startswith("*") for x in params):
            params.append("*")
        default = ""
        if p.default is not p.empty:
            default = f"=_d{len(namespace)}"
            namespace[f"_d{len(namespace)}"] = p.default
        star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        params.append(star + p.name + default)
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL):
            positional.append(star + p.name)
        else:
            keywords.append((star, p.name))
    call = positional + [f"**{name}" if star else f"{name}={name}" for star, name in keywords]
    packed_kwargs = ", ".join(f"**{name}" if star else f"{name!r}: {name}" for star, name in keywords)
    source = (f"def run({', '.join(params)}):\n"
              f"    if _anywhere.threads:\n"
              f"        return _slow(_policy, _fn, ({''.join(a + ', ' for a in positional)}), {{{packed_kwargs}}})\n"
              f"    return _fn({', '.join(call)})\n")
    namespace.update(_anywhere=_anywhere, _slow=_run_autocast, _policy=policy, _fn=fn)
    exec(compile(source, __file__, "exec"), namespace)  # noqa: S102  (named after this file: the lab skips it as ours)
    return namespace["run"]

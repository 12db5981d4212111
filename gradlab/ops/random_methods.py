"""The random in-place fills of a tensor: ``random_``, ``bernoulli_``, ``exponential_``, ``geometric_``,
``cauchy_``, ``log_normal_``.

Each draws from the (default or given) generator on the host, as every gradlab draw does, so one
seed gives the same numbers on every backend; then it writes the values into the tensor in place.
"""

from __future__ import annotations

import numpy as np

from ..generator import generator_rng
from ._common import TrackedTensor, describe

# random_() with no range: every integer a float can hold exactly, from 0 to 2**(mantissa bits + 1)
_FLOAT_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _fill(tensor, op: str, values: np.ndarray):
    array = tensor.device.backend.asarray(values, tensor.dtype)
    return tensor._inplace(op, lambda x: x._wrap(array))


def _check_float(op: str, tensor) -> None:
    if not tensor.dtype.is_floating_point:
        raise RuntimeError(f"{op} expects a floating point dtype, but got {describe(tensor)}; "
                           "use random_ for integers, or convert with .float()")


def _default_upper(dtype) -> int:
    """random_()'s exclusive upper bound for a dtype."""
    if dtype.is_floating_point:
        return 2 ** _FLOAT_DIGITS[dtype.name] + 1
    if dtype.name == "bool":
        return 2
    return int(np.iinfo(dtype.name).max) + 1


class RandomMethods:
    """Tensor's random in-place methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    def random_(self, *args, generator=None, **kwargs):
        """Integers in [from, to): ``random_(to)``, ``random_(from, to)``, or, with no ``to``, up to the largest
        integer the dtype holds exactly (2**24 for float32). PyTorch's keywords are ``from`` and ``to``."""
        unknown = set(kwargs) - {"from", "to"}
        if unknown or len(args) > 2 or (args and "from" in kwargs) or (len(args) == 2 and "to" in kwargs):
            raise TypeError(f"random_() takes (to), (from, to) or the keywords from=/to=, got {len(args)} positional "
                            f"arguments and keywords {sorted(kwargs)}")
        if len(args) == 2:
            low, high = args
        elif len(args) == 1:
            low, high = 0, args[0]
        else:
            low, high = kwargs.get("from", 0), kwargs.get("to")
        if high is None:
            high = _default_upper(self.dtype)
        if high <= low:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        values = generator_rng(generator).integers(low, high, size=self.shape, dtype=np.int64)
        return _fill(self, "random_", values)

    def bernoulli_(self, p=0.5, *, generator=None):
        """1 with probability p (a number, or a tensor of probabilities broadcast to this shape), else 0."""
        if isinstance(p, TrackedTensor):
            p.device.backend.synchronize()
            probs = np.broadcast_to(np.asarray(p.device.backend.to_numpy(p.array), dtype=np.float64), self.shape)
        else:
            probs = np.float64(p)
        if not np.all((probs >= 0) & (probs <= 1)):  # NaN fails too
            shown = "a tensor with values outside it" if isinstance(p, TrackedTensor) else f"p={p}"
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got {shown}")
        return _fill(self, "bernoulli_", generator_rng(generator).random(self.shape) < probs)

    def exponential_(self, lambd=1.0, *, generator=None):
        """Exponential numbers with rate ``lambd`` (mean 1/lambd)."""
        _check_float("exponential_", self)
        if not lambd > 0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
        return _fill(self, "exponential_", generator_rng(generator).exponential(1.0 / lambd, self.shape))

    def geometric_(self, p, *, generator=None):
        """The number of Bernoulli(p) trials up to and including the first success: 1, 2, 3, ..."""
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        return _fill(self, "geometric_", generator_rng(generator).geometric(p, self.shape))

    def cauchy_(self, median=0.0, sigma=1.0, *, generator=None):
        """Cauchy numbers: median + sigma * tan(pi * (U - 1/2))."""
        _check_float("cauchy_", self)
        if not sigma > 0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        return _fill(self, "cauchy_", median + sigma * generator_rng(generator).standard_cauchy(self.shape))

    def log_normal_(self, mean=1.0, std=2.0, *, generator=None):
        """exp of a normal N(mean, std²) number."""
        _check_float("log_normal_", self)
        if not std > 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        return _fill(self, "log_normal_", generator_rng(generator).lognormal(mean, std, self.shape))

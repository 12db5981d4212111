"""``Generator``: the seeded source of every random number in gradlab.

Draws come from numpy's PCG64 on the host and are then moved to the device, so one seed gives
the same numbers on every backend. This module sits below Tensor, so the methods that draw
(``Tensor.uniform_``, ``Tensor.multinomial``) can use it too.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from .autograd import observers
from .autograd.function import TrackedTensor
from .backends.device import resolve_device


class Generator:
    """A seeded source of random numbers (``torch.Generator``); pass it as ``generator=``."""

    def __init__(self, device="cpu"):
        self.device = resolve_device(device)
        self._seed = 67280421310721
        self._rng = np.random.default_rng(self._seed)

    def manual_seed(self, seed: int) -> "Generator":
        self._seed = int(seed)
        self._rng = np.random.default_rng(self._seed)
        return self

    def seed(self) -> int:
        self.manual_seed(int(np.random.SeedSequence().entropy % (2**63)))
        return self._seed

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self):
        return self._rng.bit_generator.state

    def set_state(self, state) -> "Generator":
        self._rng.bit_generator.state = state
        return self


default_generator = Generator()


def generator_rng(generator) -> np.random.Generator:
    """The numpy generator behind ``generator`` (the default one when None)."""
    if observers.escape_watchers:
        observers.escaped("random")
    return (generator or default_generator)._rng


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Draw ``num_samples`` category indices from each row of (non-negative, unnormalised) probabilities.

    With replacement each draw is inverse-CDF sampling: the first category whose running total passes a
    uniform number. Without, each category waits an exponential time scaled by 1/p and the first
    ``num_samples`` to arrive win (the Gumbel-top-k trick). int64, one row per row of a 2-D input.
    """
    probs = _multinomial_rows(input, num_samples, replacement)
    rng = generator_rng(generator)
    if replacement:
        totals = np.cumsum(probs, axis=1)
        targets = rng.random((len(probs), num_samples)) * totals[:, -1:]
        last = probs.shape[1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)  # rounding must not pass the last p > 0
        draws = [np.minimum(np.searchsorted(t, u, side="right"), n) for t, u, n in zip(totals, targets, last)]
        draws = np.array(draws, dtype=np.int64).reshape(len(probs), num_samples)
    else:
        arrival = rng.exponential(size=probs.shape)
        draws = np.argsort(-(probs / arrival), axis=1, kind="stable")[:, :num_samples]
    backend = input.device.backend
    return input._wrap(backend.asarray(draws.reshape(input.shape[:-1] + (num_samples,)), dt.int64))


def _multinomial_rows(input, num_samples, replacement) -> np.ndarray:
    """The probabilities as float64 rows on the host, after PyTorch's checks of them and of num_samples."""
    if not isinstance(input, TrackedTensor):
        raise TypeError(f"multinomial(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got a tensor of shape {tuple(input.shape)}")
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {input.dtype.name}; "
                           "convert it with .float()")
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)):
        raise TypeError(f"multinomial(): argument 'num_samples' must be int, not {type(num_samples).__name__}")
    if num_samples <= 0:
        raise RuntimeError(f"multinomial: cannot sample n_sample <= 0 samples (num_samples={num_samples})")
    categories = input.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError(f"multinomial: cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                           f"({num_samples} samples, {categories} categories); pass replacement=True")
    backend = input.device.backend
    backend.synchronize()
    probs = np.asarray(backend.to_numpy(input.array), dtype=np.float64).reshape(-1, categories)
    if probs.size:
        if np.isnan(probs).any() or np.isinf(probs).any():
            raise RuntimeError("multinomial: invalid multinomial distribution (encountering probability entry = "
                               "infinity or NaN)")
        if (probs < 0).any():
            raise RuntimeError("multinomial: invalid multinomial distribution (encountering probability entry < 0); "
                               "probabilities must be non-negative (softmax the scores first)")
    if len(probs) and not (probs.sum(axis=1) > 0).all():
        raise RuntimeError("multinomial: invalid multinomial distribution (sum of probabilities <= 0): every row "
                           "needs a positive probability")
    return probs

"""``Generator``: the seeded source of every random number in gradlab.

Draws come from numpy's PCG64 on the host and are then moved to the device, so one seed gives
the same numbers on every backend. This module sits below Tensor, so in-place fills such as
``Tensor.uniform_`` can use it too.
"""

from __future__ import annotations

import numpy as np

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
    return (generator or default_generator)._rng

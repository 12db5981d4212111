"""The complex-number API on real tensors, answering as PyTorch does for a real dtype.

gradlab's dtypes are all real (complex numbers are out of its scope), so a conjugate is the
tensor itself, its real part is itself, and there is no imaginary part to ask for. Code written
for both kinds (``x.conj()``, ``torch.is_complex(x)``) runs unchanged.
"""

from __future__ import annotations

from ._common import describe


def is_complex(input) -> bool:
    """False: no gradlab dtype is complex."""
    return False


def is_conj(input) -> bool:
    return False


def is_neg(input) -> bool:
    return False


def conj(input):
    """The complex conjugate: for a real tensor, the tensor itself (as in PyTorch)."""
    return input


def real(input):
    """The real part: for a real tensor, the tensor itself."""
    return input


def imag(input):
    raise RuntimeError(f"imag is not implemented for tensors with non-complex dtypes ({describe(input)}); "
                       "a real tensor has no imaginary part")


conj_physical = resolve_conj = resolve_neg = conj


class RealMethods:
    """Tensor's complex-number methods, for real tensors (mixed into gradlab.Tensor)."""

    __slots__ = ()

    is_complex, is_conj, is_neg, conj, conj_physical, resolve_conj, resolve_neg = (
        is_complex, is_conj, is_neg, conj, conj_physical, resolve_conj, resolve_neg)

    def conj_physical_(self):
        """In place, for a real tensor: nothing to change."""
        return self

    @property
    def real(self):
        return self

    @property
    def imag(self):
        return imag(self)

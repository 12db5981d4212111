"""``gradlab.backends.mps``: Apple's Metal backend is not one of gradlab's, so it is never available.

(gradlab's Apple-silicon backend is ``device="mlx"``.)
"""


def is_available() -> bool:
    """False: gradlab has no MPS backend."""
    return False


def is_built() -> bool:
    """False: gradlab is not built with MPS."""
    return False

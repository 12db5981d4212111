"""``gradlab.backends.mkldnn``: oneDNN (MKL-DNN) is not used by gradlab; numpy's BLAS does the CPU work.

``enabled`` is kept settable for scripts that switch it; it has no effect on the numpy CPU backend.
"""

enabled = True


def is_available() -> bool:
    """False: gradlab does not use oneDNN."""
    return False

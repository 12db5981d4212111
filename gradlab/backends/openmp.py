"""``gradlab.backends.openmp``: gradlab itself starts no OpenMP threads (numpy's BLAS may use its own)."""


def is_available() -> bool:
    """False: gradlab is not built with OpenMP."""
    return False

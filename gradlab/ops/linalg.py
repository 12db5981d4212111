"""(being written)"""


class LinalgMethods:
    """Tensor's linalg methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

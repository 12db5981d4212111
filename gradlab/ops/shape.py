"""(being written)"""


class ShapeMethods:
    """Tensor's shape methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

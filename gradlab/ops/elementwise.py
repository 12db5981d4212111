"""(being written)"""


class ElementwiseMethods:
    """Tensor's elementwise methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

"""(being written)"""


class ReductionMethods:
    """Tensor's reductions methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

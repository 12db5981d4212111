"""(being written)"""


class IndexingMethods:
    """Tensor's indexing methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

"""``gradlab.utils.dlpack``: where PyTorch code looks for ``from_dlpack`` and ``to_dlpack``."""

from ..dlpack import from_dlpack, to_dlpack  # noqa: F401

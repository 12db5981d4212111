"""``gradlab.utils.hooks`` is where PyTorch code finds ``RemovableHandle`` (``torch.utils.hooks``)."""

from ..autograd.hooks import RemovableHandle

__all__ = ["RemovableHandle"]

"""DataParallel runs its module; DistributedDataParallel refuses to be built, saying why."""

from __future__ import annotations

from ..modules.module import Module


class DataParallel(Module):
    """Wraps ``module`` and runs it: there is one device, so there is nothing to split the batch over.

    ``device_ids``, ``output_device`` and ``dim`` are accepted and kept, as PyTorch keeps them when
    no GPU is present (``device_ids`` then is ``[]``).
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DataParallel: expected an nn.Module to wrap, got {type(module).__name__}")
        self.module = module
        self.device_ids = []
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """The functional DataParallel: ``module(*inputs, **module_kwargs)`` on the one device."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*inputs, **(module_kwargs or {}))


class DistributedDataParallel(Module):
    """Not available: it synchronises gradients across processes, and gradlab trains in one process."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0, *args, **kwargs):
        raise RuntimeError("DistributedDataParallel: gradlab trains in one process, so there is no process group to "
                           "synchronise gradients with (gradlab.distributed.is_available() is False). Train the module "
                           "directly, or wrap it in nn.DataParallel, which runs it as it is.")

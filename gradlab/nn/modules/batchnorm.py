"""Batch normalisation layers: BatchNorm1d, BatchNorm2d, BatchNorm3d, and SyncBatchNorm.

In training each channel is normalised with the batch's mean and variance, and those are blended
into the running_mean/running_var buffers (momentum=None: a cumulative average over all batches
seen, counted by num_batches_tracked). In evaluation the running statistics are used instead.
"""

from __future__ import annotations

from ... import dtypes as dt
from ...autograd.grad_mode import no_grad
from ...creation import ones, tensor, zeros
from ...ops._common import shape_str
from .. import init
from ..functional.normalization import batch_norm
from .module import Module
from .normalization import _optional_parameter

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"]


class _BatchNorm(Module):
    """What the three layers share; each subclass says only which input shapes it takes."""

    _ndims = ()
    _layout = ""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None, *, bias=True):
        super().__init__()
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _optional_parameter(self, "weight", affine, (num_features,), dtype, device)
        _optional_parameter(self, "bias", affine and bias, (num_features,), dtype, device)
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype, device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=dt.int64, device=device))
        else:
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                self.register_buffer(name, None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input(self, input) -> None:
        if input.ndim not in self._ndims:
            raise ValueError(f"{self._get_name()}({self.num_features}): expected {self._layout}, got "
                             f"{input.ndim}-D input of shape {shape_str(input.shape)}")
        self._check_channels(input)

    def _check_channels(self, input) -> None:
        if input.shape[1] != self.num_features and (self.weight is not None or self.running_mean is not None):
            raise RuntimeError(f"{self._get_name()}({self.num_features}): expected input with {self.num_features} "
                               f"channels in dimension 1, got input of shape {shape_str(input.shape)}")
        if self.training and input.shape[1] and input.numel() // input.shape[1] == 1:  # before any buffer changes
            raise ValueError(f"{self._get_name()}({self.num_features}): Expected more than 1 value per channel when "
                             f"training, got input size {list(input.shape)}; a batch of one has no spread to normalize "
                             "by. Use a batch of at least 2, or call .eval() to use the running statistics")

    def forward(self, input):
        self._check_input(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # a cumulative average: batch k gets weight 1/k
                momentum = 1.0 / float(self.num_batches_tracked)
        use_batch_stats = self.training or (self.running_mean is None and self.running_var is None)
        track = not self.training or self.track_running_stats
        return batch_norm(input, self.running_mean if track else None, self.running_var if track else None,
                          self.weight, self.bias, use_batch_stats, momentum, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """Batch norm over (N, C) or (N, C, L) inputs: one mean and variance per channel C."""

    _ndims = (2, 3)
    _layout = "a 2-D input (N, C) or 3-D input (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """Batch norm over (N, C, H, W) images: one mean and variance per channel, over batch and pixels."""

    _ndims = (4,)
    _layout = "a 4-D input (N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """Batch norm over (N, C, D, H, W) volumes: one mean and variance per channel."""

    _ndims = (5,)
    _layout = "a 5-D input (N, C, D, H, W)"


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics PyTorch averages over every process of a distributed run.

    gradlab trains in one process, so the statistics are this batch's: exactly what PyTorch's
    SyncBatchNorm computes when no process group is initialised (it then calls plain batch norm).
    Any ``(N, C, *)`` input; ``process_group`` is kept for compatibility.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None, *, bias=True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input(self, input) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input of shape {shape_str(input.shape)}; "
                             "SyncBatchNorm takes (N, C, *))")
        if input.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        self._check_channels(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """``module`` with every BatchNorm*d replaced by a SyncBatchNorm holding the same parameters and
        buffers (a BatchNorm given directly comes back as a new SyncBatchNorm)."""
        converted = module
        if isinstance(module, (BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm)):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                with no_grad():
                    converted.weight = module.weight
                    converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted

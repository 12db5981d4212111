"""Lazy layers: LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*, LazyInstanceNorm*.

A lazy layer is built without its input size: its weights are ``UninitializedParameter``s, and a
forward pre-hook reads the size from the first input, materializes the weights (initialised as the
ordinary layer's are) and turns the module into that ordinary layer (``cls_to_become``). Loading a
state_dict materializes them too, from the shapes it holds.
"""

from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...creation import tensor
from ...dtypes import int64
from ...ops._common import shape_str
from ..parameter import UninitializedBuffer, UninitializedParameter, is_lazy
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from .linear import Linear

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]


def _infer_parameters(module, args, kwargs):
    """The pre-hook of the first call: materialize from the input, then become the ordinary layer."""
    module.initialize_parameters(*args, **kwargs)
    if module.has_uninitialized_params():
        raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
    module._initialize_hook.remove()
    del module._initialize_hook
    if module.cls_to_become is not None:
        module.__class__ = module.cls_to_become


class LazyModuleMixin:
    """Mixed in before a layer: its uninitialized parameters get their shapes from the first input.

    A subclass defines ``initialize_parameters(*inputs)``, which materializes them, and may name the
    class the module becomes afterwards in ``cls_to_become``.
    """

    cls_to_become = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)

    def has_uninitialized_params(self) -> bool:
        """Whether a parameter or buffer of this module still has no shape."""
        return any(is_lazy(t) for t in (*self._parameters.values(), *self._buffers.values()))

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise TypeError(f"{type(self).__name__} mixes in LazyModuleMixin but does not define "
                        "initialize_parameters(*inputs), which materializes its UninitializedParameters")


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is the last dim of its first input."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        super().__init__(0, 0, False)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvMixin(LazyModuleMixin):
    """in_channels from dim 1 of the first input (dim 0 when unbatched)."""

    def _lazy_weights(self, out_channels, bias, device, dtype):
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.in_channels != 0:
            super().reset_parameters()

    def _get_in_channels(self, input) -> int:
        unbatched, batched = self._nd + 1, self._nd + 2
        if input.ndim not in (unbatched, batched):
            raise RuntimeError(f"Expected {unbatched}D (unbatched) or {batched}D (batched) input to "
                               f"{type(self).__name__}, but got input of size: {shape_str(input.shape)}")
        return input.shape[1] if input.ndim == batched else input.shape[0]

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.in_channels = self._get_in_channels(input)
            if self.in_channels % self.groups != 0:
                raise ValueError(f"{type(self).__name__}: in_channels must be divisible by groups (in_channels="
                                 f"{self.in_channels}, groups={self.groups})")
            if self.transposed:
                shape = (self.in_channels, self.out_channels // self.groups)
            else:
                shape = (self.out_channels, self.in_channels // self.groups)
            with no_grad():
                self.weight.materialize(shape + tuple(self.kernel_size))
                if self.bias is not None:
                    self.bias.materialize((self.out_channels,))
                self.reset_parameters()


def _lazy_conv(nd, base):
    name = f"Lazy{base.__name__}"

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", device=None, dtype=None):
        base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False, padding_mode,
                      device=device, dtype=dtype)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)
        self._lazy_weights(out_channels, bias, device, dtype)

    doc = f"A {base.__name__} whose in_channels is the channel dim of its first input."
    return type(name, (_LazyConvMixin, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                                                "__module__": __name__, "__qualname__": name})


def _lazy_conv_transpose(nd, base):
    name = f"Lazy{base.__name__}"

    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1, bias=True,
                 dilation=1, padding_mode="zeros", device=None, dtype=None):
        base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False, dilation,
                      padding_mode, device=device, dtype=dtype)
        self._initialize_hook = self.register_forward_pre_hook(_infer_parameters, with_kwargs=True)
        self._lazy_weights(out_channels, bias, device, dtype)

    doc = f"A {base.__name__} whose in_channels is the channel dim of its first input."
    return type(name, (_LazyConvMixin, base), {"__init__": __init__, "cls_to_become": base, "__doc__": doc,
                                                "__module__": __name__, "__qualname__": name})


LazyConv1d, LazyConv2d, LazyConv3d = (_lazy_conv(nd, base) for nd, base in ((1, Conv1d), (2, Conv2d), (3, Conv3d)))
LazyConvTranspose1d, LazyConvTranspose2d, LazyConvTranspose3d = (
    _lazy_conv_transpose(nd, base) for nd, base in ((1, ConvTranspose1d), (2, ConvTranspose2d), (3, ConvTranspose3d)))


class _LazyNormMixin(LazyModuleMixin):
    """num_features from dim 1 of the first input (as PyTorch reads it)."""

    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None, dtype=None):
        super().__init__(0, eps, momentum, False, False, device, dtype)
        factory = {"device": device, "dtype": dtype}
        self.affine = affine
        self.track_running_stats = track_running_stats
        if affine:
            self.weight = UninitializedParameter(**factory)
            self.bias = UninitializedParameter(**factory)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(**factory)
            self.running_var = UninitializedBuffer(**factory)
            self.num_batches_tracked = tensor(0, dtype=int64, device=device)

    def reset_parameters(self) -> None:
        if not self.has_uninitialized_params() and self.num_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if self.has_uninitialized_params():
            self.num_features = input.shape[1]
            with no_grad():
                for t in (self.weight, self.bias, self.running_mean, self.running_var):
                    if is_lazy(t):
                        t.materialize((self.num_features,))
                self.reset_parameters()


def _lazy_norm(base):
    name = f"Lazy{base.__name__}"
    doc = f"A {base.__name__} whose num_features is dim 1 of its first input."
    return type(name, (_LazyNormMixin, base), {"cls_to_become": base, "__doc__": doc, "__module__": __name__,
                                                "__qualname__": name})


LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d = (_lazy_norm(b) for b in (BatchNorm1d, BatchNorm2d, BatchNorm3d))
LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d = (
    _lazy_norm(b) for b in (InstanceNorm1d, InstanceNorm2d, InstanceNorm3d))

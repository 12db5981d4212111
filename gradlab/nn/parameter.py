"""``Parameter``: a tensor that a Module learns, found by ``module.parameters()``; ``Buffer``, a tensor that
registers itself as a buffer; and the uninitialized tensors of the Lazy layers.

Assigning a Parameter to a module attribute registers it; it requires grad by default. Any
operation on it returns a plain Tensor, so only the weights themselves are Parameters.
"""

from __future__ import annotations

from ..backends.device import resolve_device
from ..tensor import Tensor, _init


class Parameter(Tensor):
    """A leaf tensor marked as a learnable weight of a Module (``torch.nn.Parameter``)."""

    __slots__ = ()

    def __init__(self, data=None, requires_grad: bool = True):
        if data is None:
            data = Tensor([])
        if not isinstance(data, Tensor):
            data = Tensor(data)
        _init(self, data.array, data.device)  # shares memory with data, as PyTorch does
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __reduce__(self):
        return (_rebuild_parameter, (Tensor.__reduce__(self), self.requires_grad))

    def __deepcopy__(self, memo):
        copy = Parameter(Tensor.__deepcopy__(self.detach(), memo), self.requires_grad)
        if self.grad is not None:
            copy.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = copy
        return copy


def _rebuild_parameter(tensor_reduce, requires_grad):
    rebuild, args = tensor_reduce
    return Parameter(rebuild(*args).detach(), requires_grad)


# --- tensors whose shape is not known yet (for the Lazy layers) ---------------------------------

_RAW_ARRAY = Tensor.__dict__["array"]  # the slot itself, which the uninitialized tensors guard


class UninitializedTensorMixin:
    """A tensor with a dtype and a device but no shape or values yet: any use raises, until
    ``materialize(shape)`` gives it a shape and turns it into its ``cls_to_become``.

    It holds an empty array of its dtype on its device, so ``module.to(...)`` can still change both.
    """

    __slots__ = ()

    @property
    def array(self):
        raise ValueError(f"Attempted to use an uninitialized parameter ({type(self).__name__}). This error happens "
                         "when you are using a `LazyModule` or explicitly manipulating "
                         f"`gradlab.nn.parameter.{type(self).__name__}` objects. When using LazyModules call "
                         "`forward` with a dummy batch to initialize the parameters before calling gradlab functions")

    @array.setter
    def array(self, value):
        _RAW_ARRAY.__set__(self, value)

    @property
    def dtype(self):
        return self.device.backend.dtype_of(_RAW_ARRAY.__get__(self))

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. This error usually happens "
                           "in `load_state_dict` when trying to load an uninitialized parameter into an initialized "
                           "one. Call `forward` to initialize the parameters before accessing their attributes.")

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the tensor ``shape`` (uninitialised memory, on device, of dtype) and make it a ``cls_to_become``."""
        device = resolve_device(device) if device is not None else self.device
        array = device.backend.empty(tuple(shape), dtype if dtype is not None else self.dtype)
        _RAW_ARRAY.__set__(self, array)
        self.device = device
        self.__class__ = self.cls_to_become

    def _empty_like_self(self) -> Tensor:
        """An empty plain tensor of this dtype and device (what ``Module.to`` converts in its place)."""
        return Tensor._from_array(_RAW_ARRAY.__get__(self), self.device)

    def _take_dtype_and_device(self, converted) -> None:
        _RAW_ARRAY.__set__(self, _RAW_ARRAY.__get__(converted))
        self.device = converted.device

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"

    def __deepcopy__(self, memo):
        copy = type(self)(self.requires_grad, self.device, self.dtype)
        memo[id(self)] = copy
        return copy

    def __reduce__(self):
        return (type(self), (self.requires_grad, str(self.device), self.dtype.name))


def is_lazy(tensor) -> bool:
    """Whether tensor is an UninitializedParameter or UninitializedBuffer (its shape is not known yet)."""
    return isinstance(tensor, UninitializedTensorMixin)


def _empty(device, dtype):
    from ..creation import empty
    return empty(0, device=device, dtype=dtype)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape a Lazy layer learns from its first input (``torch.nn.UninitializedParameter``)."""

    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None):
        super().__init__(_empty(device, dtype), requires_grad)


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape a Lazy layer learns from its first input (``torch.nn.UninitializedBuffer``)."""

    __slots__ = ()
    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device=None, dtype=None):
        data = _empty(device, dtype)
        _init(self, _RAW_ARRAY.__get__(data), data.device)
        if requires_grad:
            self.requires_grad_(True)


class Buffer(Tensor):
    """A tensor that registers itself as a buffer when assigned to a Module attribute (``torch.nn.Buffer``).

    ``persistent=False`` keeps it out of the state_dict. It shares memory with ``data``.
    """

    __slots__ = ("persistent",)

    def __init__(self, data=None, *, persistent: bool = True):
        if data is None:
            data = _empty(None, None)
        if not isinstance(data, Tensor):
            data = Tensor(data)
        _init(self, _RAW_ARRAY.__get__(data), data.device)
        self.persistent = persistent
        if data.requires_grad:
            self.requires_grad_(True)

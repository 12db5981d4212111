"""``Tensor``: one backend array plus the autograd fields, with PyTorch's methods.

The class is assembled from small parts: ``TrackedTensor`` (gradient, history, version) from
autograd, and one mixin of methods per file in ``gradlab.ops``. What lives here is what belongs
to the tensor itself: making tensors, reading them back, copies and casts, backward and hooks,
and the rule for in-place operations.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np

from . import dtypes as dt
from .autograd import engine, observers, views
from .autograd.function import TrackedTensor
from .autograd.grad_mode import grad_state
from .autograd.hooks import RemovableHandle
from .backends.device import Device, backend_for, resolve_device
from .backends.interop import dlpack_source
from .generator import generator_rng, multinomial
from .layouts import channels_last, channels_last_3d, check_options
from .ops._common import describe, normalize_dim, shape_str
from .ops.activations import ActivationMethods
from .ops.arithmetic import ArithmeticMethods
from .ops.bitwise import BitwiseMethods
from .ops.comparison import ComparisonMethods
from .ops.conversion import Cast, Clone, Fill, ToDevice
from .ops.diagonals import DiagonalMethods
from .ops.elementwise import ElementwiseMethods
from .ops.indexing import IndexingMethods
from .ops.inplace import InPlaceMethods
from .ops.legacy_linalg import LegacyLinalgMethods
from .ops.linalg import LinalgMethods
from .ops.numpy_spellings import accept_numpy_spellings
from .ops.pointwise import PointwiseMethods
from .ops.products import ProductMethods
from .ops.random_methods import RandomMethods
from .ops.real import RealMethods
from .ops.reductions import ReductionMethods
from .ops.repeat import RepeatMethods
from .ops.selection import SelectionMethods
from .ops.shape import ShapeMethods
from .ops.sorting import SortingMethods
from .ops.special import SpecialMethods
from .ops.statistics import StatisticsMethods
from .ops.trigonometric import TrigonometricMethods
from .printing import format_tensor
from .size import Size

_new = object.__new__
_size = functools.partial(tuple.__new__, Size)  # x.shape: an array's shape, made a Size without checking it again


def _cast(name: str, dtype: dt.DType):
    """The method ``x.float()``, ``x.long()``, ...: this tensor in ``dtype`` (itself if it already is)."""
    def method(self, memory_format=None) -> "Tensor":
        return self.to(dtype, memory_format=memory_format)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"This tensor as {dtype.name} (itself if it already is): ``x.to(gradlab.{dtype.name})``."
    return method

_NATIVE_TO_DTYPE = dt.NATIVE_TO_DTYPE


class Tensor(TrackedTensor, ArithmeticMethods, ElementwiseMethods, ActivationMethods, ReductionMethods, ShapeMethods,
             IndexingMethods, LinalgMethods, RepeatMethods, SortingMethods, SelectionMethods, DiagonalMethods,
             StatisticsMethods, ProductMethods, LegacyLinalgMethods, PointwiseMethods, TrigonometricMethods,
             SpecialMethods, ComparisonMethods, BitwiseMethods, InPlaceMethods, RealMethods, RandomMethods):
    """A multi-dimensional array that can remember how it was computed.

    ``array`` is the backend's array (a numpy ndarray on 'cpu'); ``device`` says which backend.
    Set ``requires_grad=True`` on the tensors you want gradients for; every operation on them
    is recorded, and ``backward()`` fills their ``.grad``.
    """

    __slots__ = ("array", "device")

    __array_priority__ = 1000  # numpy defers to Tensor's operators: np.float64(2) * t stays a Tensor

    def __init__(self, *args, dtype=None, device=None, requires_grad=False):
        """PyTorch's legacy constructor: ``Tensor(2, 3)`` is a zero-filled float tensor of that size,
        ``Tensor(data)`` a float copy of the data (``gradlab.tensor`` infers the dtype instead)."""
        dtype = dtype if dtype is not None else dt.get_default_dtype()
        if args and all(isinstance(n, int) and not isinstance(n, bool) for n in args):
            device, dtype = resolve_device(device), dt.as_dtype(dtype)
            _init(self, backend_for("Tensor", device, dtype).zeros(_shape_arg(args), dtype), device)
        elif len(args) <= 1:
            source = as_backend_array(args[0] if args else [], dtype, device, "Tensor", copy=True)
            _init(self, source[0], source[1])
        else:
            raise TypeError(f"Tensor(): expected sizes (Tensor(2, 3)) or one piece of data (Tensor([1, 2])), "
                            f"got {len(args)} arguments")
        if requires_grad:
            self.requires_grad_(True)

    @property
    def data(self) -> "Tensor":
        """PyTorch's ``.data``: the same memory as a tensor outside the graph (``w.data -= lr * g``).

        Assigning a tensor to it swaps this tensor's values (and shape) for that tensor's, leaving
        the history alone. Unlike ``detach()`` it has a version counter of its own, so changes made
        through it are not reported by backward — exactly PyTorch's (risky) ``.data``. The backend
        array itself is ``.array``.
        """
        return self._wrap(self.array)

    @data.setter
    def data(self, value) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Tensor.data must be set to a gradlab Tensor, got {type(value).__name__}; "
                            "wrap it first: gradlab.tensor(value)")
        self.array, self.device = value.array, value.device

    # --- making tensors inside the library -------------------------------------------------------

    def _wrap(self, array, device=None) -> "Tensor":
        """A new tensor holding ``array`` on this tensor's device (ops make their outputs this way)."""
        t = _new(Tensor)
        t.array = array
        t.device = device or self.device
        t.requires_grad = False
        t._grad = None
        t.grad_fn = None
        t._output_nr = 0
        t._version = [0]
        t._base = None
        return t

    def _view_of(self, array) -> "Tensor":
        """A new tensor that shares this one's memory: it shares the version counter too, and
        remembers the version its history belongs to (see ``autograd.function._edge``)."""
        t = self._wrap(array)
        t._version = self._version
        t._view_version = self._version[0]
        t._base = self if self._base is None else self._base
        return t

    # --- what a tensor is ------------------------------------------------------------------------

    @property
    def shape(self) -> Size:
        """The sizes of the dims, as a ``gradlab.Size``: a tuple that prints as ``gradlab.Size([3, 4])``."""
        return _size(self.array.shape)

    @property
    def dtype(self) -> dt.DType:
        try:
            return _NATIVE_TO_DTYPE[self.array.dtype]  # filled in by each backend as it loads
        except KeyError:
            return self.device.backend.dtype_of(self.array)  # (loads the backend the first time)

    @property
    def ndim(self) -> int:
        return len(self.array.shape)

    def dim(self) -> int:
        return len(self.array.shape)

    def size(self, dim=None):
        if dim is None:
            return _size(self.array.shape)
        return self.array.shape[normalize_dim("size", dim, self.ndim)]

    def numel(self) -> int:
        n = 1
        for s in self.array.shape:
            n *= s
        return n

    nelement = numel

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.numel() * self.dtype.itemsize

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the elements lie in memory in row-major order (channels_last: with the channels last)."""
        check_options("is_contiguous", memory_format=memory_format, ndim=self.ndim)
        if memory_format in (channels_last, channels_last_3d):
            return bool(self.device.backend.is_contiguous(self.movedim(1, -1).array))
        return bool(self.device.backend.is_contiguous(self.array))

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def get_device(self) -> int:
        """The index of the GPU holding this tensor, or -1 on the CPU (as in PyTorch)."""
        return -1 if self.device.type == "cpu" else (self.device.index or 0)

    @property
    def retains_grad(self) -> bool:
        return bool(getattr(self, "_retains_grad", False))

    def stride(self, dim=None):
        strides = tuple(s // self.dtype.itemsize for s in getattr(self.array, "strides", ()))
        return strides if dim is None else strides[dim]

    # --- reading values back ---------------------------------------------------------------------

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a numpy array (the same memory on 'cpu'), like ``torch.Tensor.numpy``.

        ``force=True`` also serves a tensor that requires grad (its detached values), as in PyTorch.
        """
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.")
        if observers.escape_watchers:
            observers.escaped("numpy()")
        self.device.backend.synchronize()
        return self.device.backend.to_numpy(self.array)

    def item(self):
        """The single value of a one-element tensor as a Python number."""
        if observers.escape_watchers:
            observers.escaped("item()")
        if self.numel() != 1:
            raise RuntimeError(
                f"item: a Tensor with {self.numel()} elements cannot be converted to a Python number; "
                f"only one-element tensors can (this one has shape {shape_str(self.shape)}). Index or reduce it first."
            )
        return self.device.backend.to_numpy(self.array).reshape(()).item()

    def tolist(self):
        if observers.escape_watchers:
            observers.escaped("tolist()")
        return self.device.backend.to_numpy(self.array).tolist()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """This tensor's memory as a DLPack capsule, for torch.from_dlpack / np.from_dlpack (no copy).

        What describes the memory is the backend's array itself, or on 'cpu' the numpy array
        (``backends.interop.dlpack_source``); the keywords pass through to its ``__dlpack__``.
        """
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        kwargs = {key: value for key, value in (("stream", stream), ("max_version", max_version),
                                                ("dl_device", dl_device), ("copy", copy)) if value is not None}
        return dlpack_source(self.device, self.array).__dlpack__(**kwargs)

    def __dlpack_device__(self):
        """(device type, index) as DLPack numbers them: (1, 0) is the CPU, (2, N) CUDA GPU N."""
        return dlpack_source(self.device, self.array).__dlpack_device__()

    @property
    def __cuda_array_interface__(self):
        """A 'cuda' tensor's memory as CuPy, PyTorch and numba read GPU arrays (absent on other devices)."""
        array = self.array
        if self.device.type != "cuda" or not hasattr(array, "__cuda_array_interface__"):
            raise AttributeError(f"a tensor on '{self.device}' has no __cuda_array_interface__; only 'cuda' tensors do")
        if self.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        return array.__cuda_array_interface__

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()  # refuses a tensor that requires grad: numpy would silently cut the graph
        if dtype is not None:
            array = array.astype(dtype, copy=bool(copy))
        return array.copy() if copy and dtype is None else array

    def __repr__(self) -> str:
        return format_tensor(self)

    def __len__(self) -> int:
        if not self.array.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.array.shape[0]

    def __iter__(self):
        if not self.array.shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if observers.escape_watchers:
            observers.escaped("bool()")
        n = self.numel()
        if n != 1:
            how_many = "no values" if n == 0 else "more than one value"
            raise RuntimeError(
                f"Boolean value of Tensor with {how_many} is ambiguous (shape {shape_str(self.shape)}); "
                "say which you mean with .any() or .all()"
            )
        return bool(self.item())

    def _python_number(self, kind: str):
        if observers.escape_watchers:
            observers.escaped(f"{kind}()")
        if self.numel() != 1:
            raise ValueError(
                f"only one element tensors can be converted to Python scalars; {kind}() got a tensor of shape "
                f"{shape_str(self.shape)}. Index or reduce it first"
            )
        return self.item()

    def __float__(self) -> float:
        return float(self._python_number("float"))

    def __int__(self) -> int:
        return int(self._python_number("int"))

    def __index__(self) -> int:
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError(f"only integer tensors of a single element can be converted to an index, got {describe(self)}")
        return int(self.item())

    def __format__(self, spec):
        """A 0-d tensor formats as its number (f"{loss:.3f}"); any other tensor only as its repr."""
        if not self.array.shape:
            return format(self.item(), spec)
        if spec:
            raise TypeError(f"unsupported format string {spec!r} passed to Tensor.__format__: only 0-d tensors "
                            f"format as numbers, this one has shape {shape_str(self.shape)}")
        return repr(self)

    def __reduce__(self):
        return (_rebuild, (self.device.backend.to_numpy(self.array), self.dtype.name, str(self.device), self.requires_grad))

    def __deepcopy__(self, memo):
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy protocol")
        copy = type(self)._from_array(self.device.backend.copy(self.array), self.device)
        copy.requires_grad = self.requires_grad
        if self.grad is not None:
            copy.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = copy
        return copy

    @classmethod
    def _from_array(cls, array, device) -> "Tensor":
        t = _new(cls)
        _init(t, array, device)
        return t

    # --- copies, casts and devices ---------------------------------------------------------------

    def detach(self) -> "Tensor":
        """The same data (and version counter), cut out of the graph: no grad_fn, requires_grad False."""
        t = self._wrap(self.array)
        t._version = self._version
        return t

    def detach_(self) -> "Tensor":
        self.grad_fn = None
        self.requires_grad = False
        return self

    def clone(self, *, memory_format=None) -> "Tensor":
        return Clone.apply(self)

    def contiguous(self, memory_format=None) -> "Tensor":
        return self if self.is_contiguous() else Clone.apply(self)

    def to(self, *args, dtype=None, device=None, copy=False, non_blocking=False, memory_format=None) -> "Tensor":
        """``to(dtype)``, ``to(device)``, ``to(device, dtype)`` or ``to(other_tensor)``, as in PyTorch.

        Positional ``non_blocking, copy`` may follow, as in PyTorch; ``non_blocking`` changes nothing
        here, since every move has completed when ``to`` returns. The target device is checked first
        (its backend loads, it has the dtype), so a failed move does no work.
        """
        check_options("to", memory_format=memory_format, ndim=self.ndim)
        flags = []
        for arg in args:
            if isinstance(arg, Tensor):
                dtype, device = arg.dtype, arg.device
            elif isinstance(arg, (str, Device)):
                device = arg
            elif isinstance(arg, bool):
                flags.append(arg)
            elif isinstance(arg, int):
                device = _cuda_device(arg)  # an int names a GPU, as in PyTorch: x.to(0) is x.to('cuda:0')
            elif arg is not None:
                dtype = arg
        if len(flags) > 2:
            raise TypeError(f"to(): expected at most two positional flags (non_blocking, copy), got {len(flags)}")
        if len(flags) == 2:
            copy = copy or flags[1]
        device = self.device if device is None else resolve_device(device)
        dtype = self.dtype if dtype is None else dt.as_dtype(dtype)
        if device is not self.device or dtype is not self.dtype:
            backend_for("to", device, dtype)  # a device without that dtype refuses before anything moves
        out = self
        if device is not self.device:
            if dtype is not self.dtype and dtype in self.device.backend.supported_dtypes:
                out = Cast.apply(out, dtype)  # cast first, so what travels is a dtype the target device has
            out = ToDevice.apply(out, device)
        if dtype is not out.dtype:
            out = Cast.apply(out, dtype)
        if copy and out is self:
            out = Clone.apply(self)
        return out

    def type(self, dtype=None, non_blocking=False):
        """With no argument, PyTorch's legacy type name ('gradlab.FloatTensor'); with a dtype (or one of
        those names, or a legacy type such as gradlab.LongTensor), a cast."""
        if dtype is None:
            return f"gradlab.{_LEGACY_NAMES[self.dtype]}"
        if isinstance(dtype, str) and dtype.startswith(("gradlab.", "torch.")) and dtype.endswith("Tensor"):
            dtype = _LEGACY_DTYPES[dtype.split(".", 1)[1]]
        return self.to(getattr(dtype, "dtype", dtype))

    def type_as(self, other) -> "Tensor":
        return self.to(other.dtype)

    def cpu(self, memory_format=None) -> "Tensor":
        return self.to("cpu", memory_format=memory_format)

    def cuda(self, device=None, non_blocking=False, memory_format=None) -> "Tensor":
        """This tensor on a CUDA GPU: ``cuda()`` (GPU 0), ``cuda(1)`` or ``cuda('cuda:1')``."""
        return self.to(_cuda_device(device), non_blocking=non_blocking, memory_format=memory_format)

    float, double, half, bfloat16 = (_cast("float", dt.float32), _cast("double", dt.float64),
                                     _cast("half", dt.float16), _cast("bfloat16", dt.bfloat16))
    long, int, short, char, byte, bool = (_cast("long", dt.int64), _cast("int", dt.int32), _cast("short", dt.int16),
                                          _cast("char", dt.int8), _cast("byte", dt.uint8), _cast("bool", dt.bool_))

    # --- new tensors like this one ---------------------------------------------------------------

    def new_tensor(self, data, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False) -> "Tensor":
        """A new leaf holding a copy of ``data``, with this tensor's dtype and device unless given."""
        check_options("new_tensor", layout, pin_memory)
        array, device = as_backend_array(data, dtype or self.dtype, device or self.device, "new_tensor", copy=True)
        out = Tensor._from_array(array, device)
        return out.requires_grad_(True) if requires_grad else out

    def new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False, layout=None,
                 pin_memory=False) -> "Tensor":
        """A tensor of ``size`` filled with ``fill_value``, with this tensor's dtype and device unless given."""
        check_options("new_full", layout, pin_memory)
        return self._new_filled("new_full", size, fill_value, dtype, device, requires_grad)

    def _new_filled(self, op, size, fill_value, dtype, device, requires_grad) -> "Tensor":
        device = resolve_device(device) if device is not None else self.device
        dtype = dt.as_dtype(dtype) if dtype else self.dtype
        array = backend_for(op, device, dtype).full(_shape_arg(size), fill_value, dtype)
        out = Tensor._from_array(array, device)
        return out.requires_grad_(True) if requires_grad else out

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        check_options("new_zeros", layout, pin_memory)
        return self._new_filled("new_zeros", _shape_arg(size), 0, dtype, device, requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        check_options("new_ones", layout, pin_memory)
        return self._new_filled("new_ones", _shape_arg(size), 1, dtype, device, requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False, layout=None, pin_memory=False):
        check_options("new_empty", layout, pin_memory)
        device = resolve_device(device) if device is not None else self.device
        dtype = dt.as_dtype(dtype) if dtype else self.dtype
        out = Tensor._from_array(backend_for("new_empty", device, dtype).empty(_shape_arg(size), dtype), device)
        return out.requires_grad_(True) if requires_grad else out

    def full_like(self, fill_value) -> "Tensor":
        return self.new_full(self.shape, fill_value)

    # --- autograd --------------------------------------------------------------------------------

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Ask (or stop asking) for this leaf's gradient; only floating-point tensors can have one."""
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError(
                f"only Tensors of floating point dtype can require gradients, but this is a {describe(self)}; "
                "convert it first, e.g. x = x.float().requires_grad_()"
            )
        if not requires_grad and self.grad_fn is not None:
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables. If you want to use a computed "
                "variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()."
            )
        self.requires_grad = bool(requires_grad)
        return self

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Compute the gradient of this tensor with respect to every leaf that requires grad.

        It runs the engine of ``autograd.backward_steps`` to the end; the lab steps through the same generator.
        """
        engine.backward(self, gradient, retain_graph, create_graph, inputs)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it."""
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        hooks = self._hook_list()
        if hooks and getattr(hooks[-1], "keeps_grad", False):
            hooks.insert(len(hooks) - 1, hook)  # retain_grad's hook stays last
        else:
            hooks.append(hook)
        return RemovableHandle(hooks, hook=hook)

    def _hook_list(self) -> list:
        """Where this tensor's hooks live: on the leaf itself, or on its grad_fn under its output index."""
        views.refresh_view(self)  # a stale view's hooks belong on its regenerated grad_fn
        if self.grad_fn is None:
            if getattr(self, "_hooks", None) is None:
                self._hooks = []
            return self._hooks
        return self.grad_fn._tensor_hook_list(self._output_nr)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor too (leaves keep theirs anyway).

        The keeping hook always runs after the tensor's other hooks, so ``.grad`` is what they made.
        """
        if not self.requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None or getattr(self, "_retains_grad", None):
            return
        me = weakref.ref(self)

        def keep(grad):
            t = me()
            if t is not None:
                grad = grad.detach()
                t.grad = grad._wrap(grad.device.backend.copy(grad.array)) if t.grad is None else t.grad + grad

        keep.keeps_grad = True
        self._retains_grad = keep
        self._hook_list().append(keep)

    # --- in-place operations ---------------------------------------------------------------------

    def _inplace(self, op: str, compute, *args) -> "Tensor":
        """Do ``compute(self, *args)`` out of place, then write the result into this tensor's memory.

        When the graph is being recorded the tensor takes the result's grad_fn, and a copy of its
        old value stands in for it, so the graph stays correct. The version counter goes up, which
        is how backward notices that a saved tensor was changed afterwards.
        """
        if grad_state.enabled and (self.requires_grad or (self._base is not None and self._base.requires_grad)
                                   or any(isinstance(a, TrackedTensor) and a.requires_grad for a in args)):
            return self._inplace_recorded(op, compute, args)
        self._write(op, compute(self, *args))
        return self

    def _inplace_recorded(self, op: str, compute, args) -> "Tensor":
        """The recorded form of ``_inplace``: the old value is a copy, the new one takes the result's grad_fn.

        Written through a view, the result is history for the view's base (``autograd.views``).
        """
        if self._base is not None:
            views.check_view_write(self, op)
            views.refresh_view(self)
        elif self.requires_grad and self.grad_fn is None:
            raise RuntimeError(
                f"{op}: a leaf Variable that requires grad is being used in an in-place operation. "
                f"Do the update inside `with gradlab.no_grad():` (as optimizers do), or use the out-of-place form."
            )
        before = self._wrap(self.device.backend.copy(self.array))
        before.requires_grad, before.grad_fn, before._output_nr = self.requires_grad, self.grad_fn, self._output_nr
        if observers.write_watchers:
            observers.wrote(before, self)  # a copy: it holds what self holds now
        result = compute(before, *args)
        if result.grad_fn is None and result.requires_grad:
            result = result.clone()  # the result is a leaf (copy_ from a leaf): give the tensor a node of its own
        result = self._write(op, result)
        if self._base is not None:
            views.record_view_write(self, result)
            return self
        old_node, old_nr = self.grad_fn, self._output_nr
        self.grad_fn, self._output_nr, self.requires_grad = result.grad_fn, result._output_nr, result.requires_grad
        views.follow_retained_grad(self, old_node, old_nr)
        return self

    def _regenerate_view_history(self) -> None:
        """This view's base changed in place since it was taken: rebuild its history from the base's."""
        views.refresh_view(self)

    def _write(self, op: str, result) -> "Tensor":
        """Copy result's values into this tensor's memory (same shape, a dtype it can hold); returns what was written."""
        if result.shape != self.shape and tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(
                f"{op}: output with shape {shape_str(self.shape)} doesn't match the broadcast shape "
                f"{shape_str(result.shape)}; an in-place operation cannot change the shape of its tensor"
            )
        if result.dtype is not self.dtype:
            if result.dtype.category > self.dtype.category:
                raise RuntimeError(
                    f"{op}: result type {result.dtype.name} can't be cast to the desired output type "
                    f"{self.dtype.name}; use the out-of-place form, or convert the tensor first"
                )
            result = result.to(self.dtype)
        try:
            self.device.backend.setitem(self.array, Ellipsis, result.array)
        except ValueError as error:
            raise RuntimeError(
                f"{op}: unsupported operation: more than one element of the written-to tensor refers to a single "
                "memory location (it is an expanded/broadcast view, or read-only). Please clone() the tensor before "
                "performing the operation."
            ) from error
        self._version[0] += 1
        if observers.write_watchers:
            observers.wrote(self, result)
        return result

    def add_(self, other, *, alpha=1):
        return self._inplace("add_", lambda x, o: x.add(o, alpha=alpha), other)

    def sub_(self, other, *, alpha=1):
        return self._inplace("sub_", lambda x, o: x.sub(o, alpha=alpha), other)

    def mul_(self, other):
        return self._inplace("mul_", Tensor.mul, other)

    def div_(self, other, *, rounding_mode=None):
        return self._inplace("div_", lambda x, o: x.div(o, rounding_mode=rounding_mode), other)

    def pow_(self, exponent):
        return self._inplace("pow_", Tensor.pow, exponent)

    def neg_(self):
        return self._inplace("neg_", Tensor.neg)

    def copy_(self, src, non_blocking=False):
        if not isinstance(src, Tensor):
            src = self.new_tensor(src)
        return self._inplace("copy_", lambda x, s: s.to(x.device, x.dtype).expand(x.shape), src)

    def fill_(self, value):
        if isinstance(value, Tensor) and value.ndim != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with {value.ndim} dimensions.")
        dt.check_int_fits("fill_", value, self.dtype)
        return self._inplace("fill_", Fill.apply, value)

    def zero_(self):
        return self.fill_(0)

    def uniform_(self, a=0.0, b=1.0, *, generator=None, **bounds):
        """Fill with uniform random numbers from [a, b), in place (``w.uniform_(-k, k)``).

        PyTorch names the bounds ``from`` and ``to``, which Python reserves; ``**{"from": 0, "to": 1}`` works.
        """
        unknown = set(bounds) - {"from", "to"}
        if unknown:
            raise TypeError(f"uniform_() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        a, b = bounds.get("from", a), bounds.get("to", b)
        values = self.device.backend.random_uniform(generator_rng(generator), self.shape, a, b, self.dtype)
        return self._inplace("uniform_", lambda x: x._wrap(values))

    def normal_(self, mean=0.0, std=1.0, *, generator=None):
        """Fill with normal random numbers N(mean, std²), in place."""
        values = self.device.backend.random_normal(generator_rng(generator), self.shape, mean, std, self.dtype)
        return self._inplace("normal_", lambda x: x._wrap(values))

    def multinomial(self, num_samples, replacement=False, *, generator=None) -> "Tensor":
        """Category indices drawn from each row of probabilities (``gradlab.multinomial``)."""
        return multinomial(self, num_samples, replacement, generator=generator)

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __ipow__(self, other):
        return self.pow_(other)

    __hash__ = object.__hash__


accept_numpy_spellings(Tensor, leave=("norm",))  # x.sum(1, keepdims=True), x.mean(axis=0), as in PyTorch


def _init(t, array, device) -> None:
    t.array = array
    t.device = device
    t.requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._version = [0]
    t._base = None


def _cuda_device(device) -> "str | Device":
    """What ``.cuda(device)`` and ``.to(n)`` mean: None is 'cuda', an int n is 'cuda:n', else as given."""
    if device is None:
        return "cuda"
    return f"cuda:{device}" if isinstance(device, int) and not isinstance(device, bool) else device


def _shape_arg(size) -> tuple:
    """A size given as 3, (2, 3), [2, 3], or as the tuple of *size arguments (2, 3) or ((2, 3),)."""
    if isinstance(size, int):
        size = (size,)
    elif len(size) == 1 and not isinstance(size[0], int):
        size = size[0]
    shape = tuple(int(n) for n in size)
    if any(n < 0 for n in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(shape)}: {list(shape)}")
    return shape


_LEGACY_NAMES = {dt.bool_: "BoolTensor", dt.uint8: "ByteTensor", dt.int8: "CharTensor", dt.int16: "ShortTensor",
                 dt.int32: "IntTensor", dt.int64: "LongTensor", dt.float16: "HalfTensor", dt.bfloat16: "BFloat16Tensor",
                 dt.float32: "FloatTensor", dt.float64: "DoubleTensor", dt.uint16: "UInt16Tensor",
                 dt.uint32: "UInt32Tensor", dt.uint64: "UInt64Tensor"}


_LEGACY_DTYPES = {name: dtype for dtype, name in _LEGACY_NAMES.items()}


def _rebuild(array, dtype_name, device, requires_grad):
    t = Tensor(array, dtype=dt.as_dtype(dtype_name), device=device)
    return t.requires_grad_(True) if requires_grad else t


def _infer_dtype(data) -> dt.DType:
    """PyTorch's rule for Python data: bools stay bool, ints become int64, floats the default dtype.

    A numpy array (or numpy number) keeps its own dtype, widened to the nearest one gradlab has.
    """
    if isinstance(data, (np.ndarray, np.generic)):
        name = data.dtype.name
        if name in dt.NUMPY_NAMES:
            return dt.as_dtype(name)
        if data.dtype.kind == "f":  # longdouble
            return dt.float64
        raise TypeError(f"can't convert a numpy array of dtype {data.dtype} to a gradlab tensor; "
                        f"supported: {', '.join(sorted(dt.NUMPY_NAMES))}")
    kind = np.asarray(data).dtype.kind
    if kind in "uO" and _out_of_range_int(data, dt.int64) is not None:  # Python ints beyond int64
        kind = "f" if _has_float(data) else "i"  # ints alone: the conversion to int64 says which does not fit
    if kind == "b":
        return dt.bool_
    if kind in "iu":
        return dt.int64
    if kind == "f":
        return dt.get_default_dtype()
    raise TypeError(
        f"can't build a tensor from {type(data).__name__} data; "
        "expected numbers, nested lists of numbers, a numpy array or a tensor"
    )


def _out_of_range_int(data, dtype):
    """The first Python int in (nested lists of) data that the integer dtype cannot hold, or None."""
    if isinstance(data, (list, tuple)):
        return next((found for item in data if (found := _out_of_range_int(item, dtype)) is not None), None)
    try:
        dt.check_int_fits("", data, dtype)
    except RuntimeError:
        return data
    return None


def _has_float(data) -> bool:
    return any(_has_float(item) for item in data) if isinstance(data, (list, tuple)) else isinstance(data, float)


def _not_rectangular(data):
    """Where nested lists stop forming a box, as PyTorch says it: 'expected sequence of length 2 at dim 1 (got 1)'."""
    shape, first = [], data
    while isinstance(first, (list, tuple)):
        shape.append(len(first))
        first = first[0] if first else None

    def check(item, dim):
        is_seq = isinstance(item, (list, tuple))
        if dim == len(shape):
            return f"expected a number at dim {dim} (got a sequence of length {len(item)})" if is_seq else None
        if not is_seq or len(item) != shape[dim]:
            return f"expected sequence of length {shape[dim]} at dim {dim} (got {len(item) if is_seq else 'a number'})"
        return next((found for x in item if (found := check(x, dim + 1))), None)

    return check(data, 0) if shape else None


def as_backend_array(data, dtype, device, op: str, copy: bool = False):
    """(backend array, Device) for any data a factory accepts: numbers, nested lists, numpy arrays, tensors.

    The array may share memory with ``data`` (what as_tensor wants) unless ``copy`` is true.
    """
    if isinstance(data, Tensor):
        device = resolve_device(device) if device is not None else data.device
        dtype = dt.as_dtype(dtype) if dtype is not None else data.dtype
        data.device.backend.synchronize()
        data = data.device.backend.to_numpy(data.array)
    else:
        device = resolve_device(device)
    try:
        if not isinstance(dtype, dt.DType):
            dtype = dt.as_dtype(dtype) if dtype is not None else _infer_dtype(data)
    except (ValueError, TypeError) as error:
        _conversion_failed(op, data, dtype, error)
    backend = backend_for(op, device, dtype)  # outside the try: a device's own error reaches the user as it is
    try:
        array = backend.asarray(data, dtype)
    except (ValueError, TypeError, OverflowError) as error:
        _conversion_failed(op, data, dtype, error)
    if copy and isinstance(data, np.ndarray) and isinstance(array, np.ndarray) and np.may_share_memory(array, data):
        array = device.backend.copy(array)
    return array, device


def _conversion_failed(op: str, data, dtype, error):
    """Raise the error that explains why ``data`` did not become a tensor (ragged lists, a too-big int, ...)."""
    if isinstance(error, ValueError):
        where = _not_rectangular(data)
        if where:
            raise ValueError(f"{op}: the nested lists do not form a tensor: {where}. Every row must have the same "
                             "length") from None
        raise ValueError(f"{op}: could not convert the data to a {dtype} tensor: {error}") from None
    if isinstance(error, TypeError):
        raise TypeError(f"{op}: {error}") from None
    value = _out_of_range_int(data, dtype)
    if value is None:
        raise error
    dt.check_int_fits(op, value, dtype)
    raise error


def is_tensor(obj) -> bool:
    """True if obj is a gradlab Tensor (``torch.is_tensor``)."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of a tensor (``torch.numel``)."""
    return input.numel()


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


def get_device(input: Tensor) -> int:
    """``torch.get_device``: the GPU index of a tensor, -1 on the CPU."""
    return input.get_device()


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """``torch.clone``: a copy that stays in the graph (its gradient flows back to input)."""
    return input.clone(memory_format=memory_format)


def detach(input: Tensor) -> Tensor:
    """``torch.detach``: the same memory, outside the graph."""
    return input.detach()


def detach_(input: Tensor) -> Tensor:
    return input.detach_()


def fill(input: Tensor, value) -> Tensor:
    """``torch.fill``: a new tensor of input's shape and dtype, every element ``value`` (differentiable in value)."""
    return input.clone().fill_(value)

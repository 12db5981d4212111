"""``Module``: the base class of every layer and model.

Attributes do the bookkeeping: assigning a Parameter registers a weight, assigning a Module
registers a child, ``register_buffer`` registers state that is saved but not trained. Everything
else (``parameters()``, ``state_dict()``, ``to()``, ``train()``) walks that tree. Calling a module
runs its forward with the hooks around it; the lab's gradient-flow view listens there.
"""

from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ... import dtypes as dt
from ...autograd.function import Function
from ...autograd.hooks import RemovableHandle
from ...autograd.grad_mode import grad_state, no_grad
from ...backends.device import Device, backend_for, resolve_device
from ...tensor import Tensor
from ..parameter import Buffer, Parameter, is_lazy


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: the keys it did not find, and the ones it did not use."""

    __slots__ = ()

    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: set = set()  # ids of the global forward hooks that run even when forward raises


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """``hook(module, args)`` runs before the forward of every module, ahead of the module's own pre-hooks.

    A returned value replaces the args. The lab's ``record()`` listens here to learn which module
    each operation ran in.
    """
    return _add_hook(_global_forward_pre_hooks, hook)


def register_module_forward_hook(hook, *, always_call: bool = False) -> RemovableHandle:
    """``hook(module, args, output)`` runs after the forward of every module, ahead of its own hooks;
    a returned value replaces the output. With ``always_call=True`` it also runs when the call raises
    (with output None, before the error goes on), as in PyTorch: ``record()`` closes the module's call there."""
    return _add_hook(_global_forward_hooks, hook, flags=_global_forward_hooks_always_called if always_call else None)


def _add_hook(hooks: OrderedDict, hook, prepend: bool = False, flags=None) -> RemovableHandle:
    handle = RemovableHandle(hooks, extra_dict=flags)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    if flags is not None:
        flags.add(handle.id)
    return handle


class Module:
    """Base class for all neural-network modules; subclasses define ``forward``."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument "
                            f"'{next(iter(kwargs))}'")
        if args:
            raise TypeError(f"{type(self).__name__}.__init__() takes 1 positional argument but {len(args) + 1} "
                            "were given")
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers", set())
        set_(self, "_modules", OrderedDict())
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_forward_pre_hooks_with_kwargs", set())
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_forward_hooks_with_kwargs", set())
        set_(self, "_backward_pre_hooks", OrderedDict())
        set_(self, "_backward_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # --- registration through attributes -----------------------------------------------------

    def __setattr__(self, name, value):
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, "_buffers", "_modules")
            self.register_parameter(name, value)
        elif isinstance(value, Buffer):
            if d.get("_buffers") is None:
                raise AttributeError("cannot assign buffer before Module.__init__() call")
            self._forget(name, "_parameters", "_modules")
            self.register_buffer(name, value, value.persistent)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(gradlab.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            if d.get("_modules") is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, "_parameters", "_buffers")
            self._modules[name] = value
        elif "_modules" in d and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(gradlab.nn.Module or None expected)")
            self._modules[name] = None
        elif "_buffers" in d and name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(gradlab.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name, *stores):
        """Drop ``name`` from the plain attributes and the given stores (a re-registered name keeps its place)."""
        self.__dict__.pop(name, None)
        for store in stores:
            self.__dict__[store].pop(name, None)
        self._non_persistent_buffers.discard(name)

    def __getattr__(self, name):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            if store in d and name in d[store]:
                return d[store][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, ()):
                del self.__dict__[store][name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        names = set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules)
        return sorted(name for name in names if not name[0].isdigit())

    def register_parameter(self, name: str, param) -> None:
        """Add a Parameter (or None, a declared-but-absent weight) under ``name``."""
        _check_name(self, name, "parameter", "_parameters")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(gradlab.nn.Parameter or None required); wrap it: nn.Parameter(tensor)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be created "
                             f"explicitly. To express '{name}' as a function of another Tensor, compute the value in "
                             "the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Add state that is not trained but moves with ``to()`` and (if persistent) is saved."""
        _check_name(self, name, "buffer", "_buffers")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(gradlab.Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module) -> None:
        """Register ``module`` (or None) as the child called ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name(self, name, "module", "_modules")
        self._modules[name] = module

    register_module = add_module

    def get_submodule(self, target: str) -> "Module":
        """The module at a dotted path such as ``'encoder.layers.0'`` ('' is this module)."""
        module = self
        for item in target.split(".") if target else ():
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target: str) -> Parameter:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Tensor:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if not hasattr(module, name):
            raise AttributeError(f"{module._get_name()} has no attribute `{name}`")
        if name not in module._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return module._buffers[name]

    # --- walking the tree ----------------------------------------------------------------------

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) for this module and every descendant, each module once."""
        if memo is None:
            memo = set()
        if id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self):
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        for _, child in self.named_children():
            yield child

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in module.__dict__[store].items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """(dotted name, Parameter) pairs; a Parameter shared by several modules comes once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    # --- modes, gradients, devices ---------------------------------------------------------------

    def train(self, mode: bool = True) -> "Module":
        """Training mode (dropout on, batch-norm updates its running statistics) for the whole tree."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: drop them (default) or zero them in place."""
        for param in self.parameters():
            grad = param.grad
            if grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                grad.detach_()
                grad.zero_()

    def apply(self, fn) -> "Module":
        """Call ``fn(module)`` on every child (depth first) and then on this module."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def _apply(self, convert) -> "Module":
        """Convert every parameter, gradient and buffer; Parameter (and .grad) objects stay the same
        objects, so an optimizer built before ``to()`` still holds the model's weights."""
        for child in self.children():
            child._apply(convert)
        with no_grad():
            for param in self._parameters.values():
                if param is None:
                    continue
                for t in (param, param.grad):
                    if is_lazy(t):  # no values yet: only its dtype and device change
                        t._take_dtype_and_device(convert(t._empty_like_self()))
                    elif t is not None:
                        new = convert(t)
                        t.array, t.device = new.array, new.device
            for name, buffer in self._buffers.items():
                if is_lazy(buffer):
                    buffer._take_dtype_and_device(convert(buffer._empty_like_self()))
                elif buffer is not None:
                    self._buffers[name] = convert(buffer)
        return self

    def to(self, *args, **kwargs) -> "Module":
        """Move parameters and buffers to a device and/or cast floating-point ones to a dtype.

        Every tensor is checked against the target device first (is its backend there, does it have
        the dtype?), so a move that cannot finish leaves the whole model where it was.
        """
        unknown = kwargs.keys() - {"device", "dtype", "non_blocking", "memory_format"}
        if unknown:
            raise TypeError(f"to() received an invalid combination of arguments: unexpected keyword {sorted(unknown)[0]!r}; "
                            "expected device, dtype, non_blocking or memory_format")
        device, dtype = kwargs.get("device"), kwargs.get("dtype")
        for arg in args:
            if isinstance(arg, (str, Device)):
                device = arg
            elif isinstance(arg, Tensor):
                device, dtype = arg.device, arg.dtype
            elif isinstance(arg, bool):
                continue  # non_blocking, which changes nothing here (every move completes before it returns)
            elif isinstance(arg, int):
                device = f"cuda:{arg}"  # an int names a GPU, as in PyTorch
            elif arg is not None:
                dtype = arg
        device = resolve_device(device) if device is not None else None
        dtype = dt.as_dtype(dtype) if dtype is not None else None
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def target_dtype(t):
            return dtype if dtype is not None and t.dtype.is_floating_point else None

        for name, t in itertools.chain(self.named_parameters(), self.named_buffers()):
            for which, x in ((name, t), (f"{name}.grad", t.grad)):
                if x is not None and (device is not None or target_dtype(x) is not None):
                    backend_for(f"Module.to ({which})", device or x.device, target_dtype(x) or x.dtype)
        return self._apply(lambda t: t.to(device=device, dtype=target_dtype(t)))

    def cpu(self) -> "Module":
        return self.to("cpu")

    def cuda(self, device=None) -> "Module":
        return self.to(f"cuda:{device}" if isinstance(device, int) else device or "cuda")

    def float(self) -> "Module":
        return self.to(dt.float32)

    def double(self) -> "Module":
        return self.to(dt.float64)

    def half(self) -> "Module":
        return self.to(dt.float16)

    def type(self, dst_type) -> "Module":
        """Cast every parameter and buffer (floating or not) to ``dst_type``."""
        return self._apply(lambda t: t.to(dst_type))

    # --- saving and loading ------------------------------------------------------------------------

    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False) -> OrderedDict:
        """Every parameter and persistent buffer by dotted name (detached unless keep_vars).

        A module reachable under two names is saved under both, as in PyTorch.
        """
        if destination is None:
            destination = OrderedDict()
        for key, value in self._state_items(prefix):
            destination[key] = value if keep_vars or is_lazy(value) else value.detach()
        return destination

    def _state_items(self, prefix: str = ""):
        """(key, tensor) for what ``state_dict`` holds, walking every path (shared modules repeat)."""
        for name, param in self._parameters.items():
            if param is not None:
                yield prefix + name, param
        for name, buffer in self._buffers.items():
            if buffer is not None and name not in self._non_persistent_buffers:
                yield prefix + name, buffer
        for name, child in self._modules.items():
            if child is not None:
                yield from child._state_items(f"{prefix}{name}.")

    def _local_state(self) -> dict:
        return {name: value for name, value in itertools.chain(self._parameters.items(), self._buffers.items())
                if value is not None and name not in self._non_persistent_buffers}

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy values in by name. Every problem is found before anything is written, so a load that
        raises leaves the model exactly as it was (PyTorch may have copied part of it by then)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        odd = [key for key in state_dict if not isinstance(key, str)]
        if odd:
            raise TypeError(f"load_state_dict: state_dict keys are parameter and buffer names (strings such as "
                            f"'0.weight'), but it has the key {odd[0]!r} of type {type(odd[0]).__name__}; nothing was "
                            "loaded")
        missing, unexpected, errors, writes = [], [], [], []

        def check(module, prefix):
            local = module._local_state()
            for name, target in local.items():
                key = prefix + name
                if key not in state_dict:
                    missing.append(key)
                    continue
                value = state_dict[key]
                if not isinstance(value, Tensor):
                    errors.append(f'While copying the parameter named "{key}", expected gradlab.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(value)}; convert it first, e.g. "
                                  "gradlab.from_numpy(array)")
                    continue
                if is_lazy(target):  # a Lazy layer takes the checkpoint's shape (materialized when writing)
                    writes.append((module, name, target, value))
                    continue
                if target.ndim == 0 and value.shape == (1,):
                    value = value.reshape(())
                if tuple(value.shape) != tuple(target.shape):
                    errors.append(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from "
                                  f"checkpoint, the shape in current model is {tuple(target.shape)}.")
                    continue
                writes.append((module, name, target, value))
            for key in state_dict:
                if key.startswith(prefix):
                    head, dot, _ = key[len(prefix):].partition(".")
                    if (head not in module._modules) if dot else (head not in local):
                        unexpected.append(key)
            for name, child in module._modules.items():
                if child is not None:
                    check(child, f"{prefix}{name}.")

        check(self, "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for module, name, target, value in writes:
                if is_lazy(target):
                    target.materialize(value.shape)
                if not assign:
                    target.copy_(value)
                elif isinstance(target, Parameter):
                    value = value if isinstance(value, Parameter) else Parameter(value, requires_grad=False)
                    setattr(module, name, value.requires_grad_(target.requires_grad))
                else:
                    setattr(module, name, value)
        return _IncompatibleKeys(missing, unexpected)

    # --- calling, with hooks -------------------------------------------------------------------

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args)`` runs before forward; a returned value replaces the args.

        With ``with_kwargs=True`` it is ``hook(module, args, kwargs)`` and may return ``(args, kwargs)``.
        """
        flags = self._forward_pre_hooks_with_kwargs if with_kwargs else None
        return _add_hook(self._forward_pre_hooks, hook, prepend, flags)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False) -> RemovableHandle:
        """``hook(module, args, output)`` (or ``hook(module, args, kwargs, output)``) runs after forward;
        a returned value replaces the output."""
        flags = self._forward_hooks_with_kwargs if with_kwargs else None
        return _add_hook(self._forward_hooks, hook, prepend, flags)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_input, grad_output)`` runs when the gradients w.r.t. the module's
        positional inputs are computed; a returned tuple replaces grad_input."""
        return _add_hook(self._backward_hooks, hook, prepend)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """``hook(module, grad_output)`` runs before the module's backward; a returned tuple replaces grad_output."""
        return _add_hook(self._backward_pre_hooks, hook, prepend)

    def __call__(self, *args, **kwargs):
        own_hooks = self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks
        if not (own_hooks or _global_forward_pre_hooks or _global_forward_hooks):
            return self.forward(*args, **kwargs)
        ran = []  # the global forward hooks that have run: an always_call hook runs once, even if a later one raises
        backward_hook = None
        try:
            for hook in tuple(_global_forward_pre_hooks.values()):
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
            if own_hooks:  # (only global ones, a recording's, is the common case: it skips this)
                for hook_id, hook in tuple(self._forward_pre_hooks.items()):
                    if hook_id in self._forward_pre_hooks_with_kwargs:
                        result = hook(self, args, kwargs)
                        if result is not None:
                            if not (isinstance(result, tuple) and len(result) == 2):
                                raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, "
                                                   f"new_kwargs), but got {result}.")
                            args, kwargs = result
                    else:
                        result = hook(self, args)
                        if result is not None:
                            args = result if isinstance(result, tuple) else (result,)
                if self._backward_hooks or self._backward_pre_hooks:
                    backward_hook = _BackwardHook(self)
                    args = backward_hook.wrap_inputs(args)
            output = self.forward(*args, **kwargs)
            for hook_id, hook in tuple(_global_forward_hooks.items()):
                result = hook(self, args, output)
                ran.append(hook_id)
                if result is not None:
                    output = result
            if own_hooks:
                for hook_id, hook in tuple(self._forward_hooks.items()):
                    if hook_id in self._forward_hooks_with_kwargs:
                        result = hook(self, args, kwargs, output)
                    else:
                        result = hook(self, args, output)
                    if result is not None:
                        output = result
                if backward_hook is not None:
                    output = backward_hook.wrap_outputs(output)
        except Exception:
            if _global_forward_hooks_always_called:
                _run_always_called_hooks(self, args, ran)
            raise
        return output

    # --- printing ----------------------------------------------------------------------------------

    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr``; layers override it."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + repr(child).replace("\n", "\n  ") for name, child in self._modules.items()]
        if len(extra_lines) == 1 and not child_lines:
            return f"{self._get_name()}({extra_lines[0]})"
        lines = extra_lines + child_lines
        if not lines:
            return f"{self._get_name()}()"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __getstate__(self):
        return self.__dict__.copy()

    def __setstate__(self, state):
        self.__dict__.update(state)


def _run_always_called_hooks(module, args, ran) -> None:
    """The call raised: run the global forward hooks registered with ``always_call=True`` that have not run yet."""
    for hook_id, hook in tuple(_global_forward_hooks.items()):
        if hook_id in _global_forward_hooks_always_called and hook_id not in ran:
            try:
                hook(module, args, None)
            except Exception as error:  # the first error is the one to see
                warnings.warn("global module forward hook with ``always_call=True`` raised an exception that was "
                              f"silenced as another error was raised in forward: {error}", stacklevel=3)


def _typename(value) -> str:
    """How PyTorch names a value's type in messages: 'gradlab.FloatTensor' for tensors, else the class."""
    return value.type() if isinstance(value, Tensor) else type(value).__name__


def _check_name(module: Module, name: str, kind: str, store: str) -> None:
    if store not in module.__dict__:
        raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')
    if hasattr(module, name) and name not in module.__dict__[store]:
        raise KeyError(f"attribute '{name}' already exists")


class _BackwardHook:
    """Full backward hooks for one call of a module: identity Functions on its inputs and outputs.

    The node on the outputs runs first in backward: it runs the pre-hooks and records grad_output.
    The node on the inputs runs once the gradients w.r.t. the inputs are complete and calls the
    hooks with both. Gradients are packed by position, None where an argument is not a tensor.
    """

    def __init__(self, module: Module):
        self.module = module
        self.hooks = tuple(module._backward_hooks.values())  # as registered when the module was called
        self.pre_hooks = tuple(module._backward_pre_hooks.values())
        self.n_inputs = 0
        self.input_index = None  # positions of the tensor args, when any of them requires grad
        self.n_outputs = 0
        self.output_index = None
        self.grad_output = None

    def wrap_inputs(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        wrapped, self.input_index = _wrap_tensors(_HookInputs, self, args)
        return wrapped

    def wrap_outputs(self, output):
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        self.n_outputs = len(outputs)
        wrapped, self.output_index = _wrap_tensors(_HookOutputs, self, outputs)
        return wrapped[0] if single else wrapped

    def on_grad_output(self, grads: tuple) -> tuple:
        """Pre-hooks may replace grad_output; with no input needing grad, the hooks run here (grad_input all None)."""
        grad_output = _pack(self.output_index, grads, self.n_outputs)
        for hook in self.pre_hooks:
            result = hook(self.module, grad_output)
            if result is not None:
                _check_count("Backward pre hook", "grad_output", result, len(grad_output))
                grad_output = tuple(result)
        if self.input_index is None:
            grad_input = (None,) * self.n_inputs
            for hook in self.hooks:
                result = hook(self.module, grad_input, grad_output)
                if result is not None and not all(g is None for g in result):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
        else:
            self.grad_output = grad_output
        return tuple(grad_output[i] for i in self.output_index)

    def on_grad_input(self, grads: tuple) -> tuple:
        if self.grad_output is None:  # the gradient reached the inputs without passing the outputs
            return grads
        grad_input = _pack(self.input_index, grads, self.n_inputs)
        for hook in self.hooks:
            result = hook(self.module, grad_input, self.grad_output)
            if result is not None:
                _check_count("Backward hook", "grad_input", result, len(grad_input))
                grad_input = tuple(result)
        self.grad_output = None
        return tuple(grad_input[i] for i in self.input_index)


def _wrap_tensors(function, state, values: tuple):
    """Pass the tensors among ``values`` through ``function`` (if any requires grad).

    Returns the new values and the positions of the tensors (None when nothing was wrapped)."""
    index = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
    if not (grad_state.enabled and any(values[i].requires_grad for i in index)):
        return values, None
    out = function.apply(state, *(values[i] for i in index))
    out = out if isinstance(out, tuple) else (out,)
    values = list(values)
    for i, t in zip(index, out):
        values[i] = t
    return tuple(values), index


def _pack(index, grads, size) -> tuple:
    packed = [None] * size
    for i, g in zip(index or (), grads):
        packed[i] = g
    return tuple(packed)


def _check_count(what, name, result, expected):
    if len(result) != expected:
        raise RuntimeError(f"{what} returned an invalid number of {name}, got {len(result)}, but expected {expected}")


def _identity_forward(ctx, state, tensors):
    """Fresh tensors sharing the inputs' data; those whose input needs no grad stay without one."""
    ctx.state = state
    outs = tuple(t.detach() for t in tensors)
    ctx.mark_non_differentiable(*(o for o, t in zip(outs, tensors) if not t.requires_grad))
    return outs if len(outs) > 1 else outs[0]


class _HookInputs(Function):
    """Identity on the module's inputs: the gradient passes through, and the backward hooks may replace it.

    Its backward sees grad_input and calls the hooks.
    """

    derivative = "∂L/∂tensors[i] = g_i (or what a module backward hook returns as grad_input)"
    node_names = ("BackwardHookFunctionBackward",)  # PyTorch's name for the identity its full backward hooks add

    @staticmethod
    def forward(ctx, state, *tensors):
        return _identity_forward(ctx, state, tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + ctx.state.on_grad_input(grads)


class _HookOutputs(Function):
    """Identity on the module's outputs: the gradient passes through, and the backward pre-hooks may replace it.

    Its backward runs the pre-hooks and records grad_output for the hooks on the inputs.
    """

    derivative = "∂L/∂tensors[i] = g_i (or what a module backward pre-hook returns as grad_output)"
    node_names = ("BackwardHookFunctionBackward",)  # PyTorch's name for the identity its full backward hooks add

    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.set_materialize_grads(False)  # an unused output has grad_output None, as in PyTorch
        return _identity_forward(ctx, state, tensors)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) + ctx.state.on_grad_output(grads)

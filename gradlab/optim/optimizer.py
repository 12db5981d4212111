"""``Optimizer``: parameter groups, per-parameter state, and the step that moves the parameters.

An optimizer keeps ``param_groups`` (lists of parameters sharing options such as ``lr``) and ``state``
(each parameter's running buffers, e.g. Adam's moments). ``step()`` reads every ``p.grad`` and moves
``p`` in place; ``state_dict()`` saves both in PyTorch's format, parameters replaced by their index.

The arithmetic runs on the backend arrays (``p.array``) through the backend's primitives: nothing is
recorded, no Function objects are made, and each parameter is written once per step.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections import defaultdict
from itertools import chain

from ..autograd.grad_mode import enable_grad
from ..backends.contract import Backend
from ..creation import tensor
from ..tensor import Tensor


class _RequiredParameter:
    """The default of an option that every parameter group must set itself (``optim.optimizer.required``)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class of every optimizer: groups of parameters, their state, and ``step()``.

    ``params`` is an iterable of tensors, or of dicts ``{"params": [...], "lr": ...}`` whose options
    override ``defaults`` for that group. A subclass gives ``_init_state(p, group)``, the state a
    parameter starts with, and ``_delta(p, grad, group)``: how far to move ``p`` this step (subtracted
    from it). The base applies maximize and weight decay around it.
    """

    _decoupled_weight_decay = False  # True where weight decay always shrinks p directly (Lion)
    # The per-parameter state keys this kind of optimizer writes: always, and only under some options
    # (Adam's max_exp_avg_sq with amsgrad). load_state_dict refuses a state with other keys: another
    # kind's. None: not declared (a subclass with its own step), and then not checked.
    _state_keys: tuple | None = None
    _optional_state_keys: tuple = ()

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            "but got " + _typename(params))
        self.state = defaultdict(dict)
        self.param_groups = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options (the rest come from ``defaults``)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering of "
                            "tensors in sets will change between runs. Please use a list instead.")
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]  # from model.named_parameters()
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(p))
            if not (p.is_leaf or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(params) != len(set(params)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
        seen = set()
        for group in self.param_groups:
            seen.update(group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def __init_subclass__(cls, **kwargs):
        """A subclass's own step() (LBFGS's, a user's) is followed by ``_materialize`` too."""
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = _then_materialize(cls.__dict__["step"])
        writes_its_own = any(name in cls.__dict__ for name in ("step", "_delta", "_init_state"))
        if writes_its_own and "_state_keys" not in cls.__dict__:
            cls._state_keys = None  # its keys may differ from its base's: unknown, so unchecked

    # --- the step ----------------------------------------------------------------------------------

    def step(self, closure=None):
        """Move every parameter that has a gradient; ``closure`` (re-evaluating the loss) runs first.

        With ``maximize`` the gradient is negated; ``weight_decay`` adds ``wd * p`` to it, or, when
        decoupled (AdamW, Lion), takes ``lr * wd * p`` off ``p`` directly instead.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    self._update(p, group)
        return loss

    def _update(self, p, group) -> None:
        """Move one parameter by its gradient: ``step`` runs this for each, and a compiled training step
        (``gradlab.compile.make_step``) runs it as soon as that parameter's gradient is final."""
        maximize = group.get("maximize", False)
        weight_decay = group.get("weight_decay", 0)
        decoupled = self._decoupled_weight_decay or group.get("decoupled_weight_decay", False)
        decay = group["lr"] * weight_decay if decoupled else 0  # decoupled: p -= lr * wd * p
        state = self.state.get(p)
        if not state:
            fresh = self._init_state(p, group)
            if fresh:
                self.state[p] = fresh
        else:
            _follow_parameter(p, state)  # after model.to(...), the state moves with its parameter
        backend = p.device.backend
        grad = backend.neg(p.grad.array) if maximize else p.grad.array
        if weight_decay != 0 and not decoupled:
            grad = backend.add(grad, backend.mul(p.array, weight_decay))
        delta = self._delta(p, grad, group)
        if decay:
            delta = backend.add(delta, backend.mul(p.array, decay))
        backend.isub(p.array, delta)
        p._version[0] += 1  # an in-place change: graphs that saved p notice it

    def _materialize(self) -> None:
        """On a lazy backend (MLX) compute the new parameters and state now, so that the next step's
        graph starts from values instead of holding every step before it. Eager backends are skipped."""
        lazy = {}
        for group in self.param_groups:
            for p in group["params"]:
                backend = p.device.backend
                if type(backend).materialize is Backend.materialize:
                    continue
                arrays = lazy.setdefault(backend, [])
                arrays.append(p.array)
                arrays.extend(v.array for v in self.state.get(p, {}).values()
                              if isinstance(v, Tensor) and v.device.backend is backend)
        for backend, arrays in lazy.items():
            backend.materialize(arrays)

    def _init_state(self, p, group) -> dict:
        """The state ``p`` starts with (before its first step): its zero-filled buffers and step counter.

        ``load_state_dict`` also reads it, to know which keys and shapes a saved state must have.
        """
        return {}

    def _delta(self, p, grad, group):
        """The amount to subtract from ``p.array`` this step, given the (backend array) gradient."""
        raise NotImplementedError(f"{type(self).__name__} must define step() or _delta(p, grad, group)")

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: set ``p.grad`` to None (default), or fill it with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if p.grad.grad_fn is not None:
                        p.grad.detach_()
                    else:
                        p.grad.requires_grad_(False)
                    p.grad.zero_()

    # --- saving and loading ------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """``{'state': {index: {...}}, 'param_groups': [{..., 'params': [index, ...]}]}``, as PyTorch saves it.

        Parameters are numbered in group order; the state tensors are the optimizer's own (not copies).
        """
        index_of, packed_groups = {}, []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for p in group["params"]:
                index_of.setdefault(id(p), len(index_of))
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            packed_groups.append(packed)
        state = {(index_of[id(p)] if isinstance(p, Tensor) else p): v for p, v in self.state.items()}
        return {"state": state, "param_groups": packed_groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore groups and state saved by ``state_dict()``; the groups must have the same sizes.

        Everything is checked before anything is written (the layout, the groups, each parameter's
        state keys and shapes), so a load that fails leaves the optimizer as it was. The state is
        copied, and its tensors are cast to their parameter's dtype and device (except the step
        counters), so training continues exactly where it stopped.
        """
        saved_groups = self._check_loaded_groups(state_dict)
        param_of = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                            chain.from_iterable(g["params"] for g in self.param_groups)))
        group_of = {index: g for g in saved_groups for index in g["params"]}
        for key, entry in state_dict["state"].items():
            if key not in param_of:
                raise ValueError(f"loaded state dict has state for parameter {key!r}, but its parameter groups "
                                 f"list only {sorted(param_of, key=repr)}")
            if not isinstance(entry, dict):
                raise ValueError(f"loaded state dict: the state of parameter {key!r} should be a dict of its "
                                 f"buffers, got {type(entry).__name__}")
            self._check_state_kind(key, entry)
            self._check_loaded_state(key, entry, param_of[key], {**self.defaults, **group_of[key]})
        saved_groups = copy.deepcopy(saved_groups)
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            p = param_of[key]
            state[p] = {name: _cast_like(p, v, name) for name, v in value.items()}
        for group, saved in zip(self.param_groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
            for name, default in self.defaults.items():  # options newer than the checkpoint, as __setstate__ does
                saved.setdefault(name, default)
        self.state, self.param_groups = state, saved_groups

    def _check_loaded_groups(self, state_dict) -> list:
        """The saved parameter groups, once they are known to match this optimizer's in number and size."""
        if not isinstance(state_dict, dict) or not {"state", "param_groups"} <= set(state_dict):
            found = sorted(state_dict) if isinstance(state_dict, dict) else type(state_dict).__name__
            raise ValueError(f"loaded state dict should be a dict with 'state' and 'param_groups', as "
                             f"Optimizer.state_dict() returns, got {found}")
        groups, saved_groups = self.param_groups, state_dict["param_groups"]
        if len(groups) != len(saved_groups):
            raise ValueError(f"loaded state dict has a different number of parameter groups ({len(saved_groups)}; "
                             f"this optimizer has {len(groups)})")
        for i, saved in enumerate(saved_groups):
            if not isinstance(saved, dict) or "params" not in saved:
                raise ValueError(f"loaded state dict: parameter group {i} should be a dict with a 'params' list")
        sizes = [len(g["params"]) for g in groups]
        saved_sizes = [len(g["params"]) for g in saved_groups]
        if sizes != saved_sizes:
            raise ValueError(f"loaded state dict contains a parameter group that doesn't match the size of "
                             f"optimizer's group (its groups hold {saved_sizes} parameters, this optimizer's "
                             f"{sizes})")
        return saved_groups

    def _check_state_kind(self, index, entry: dict) -> None:
        """Raise if a saved state entry was written by another kind of optimizer (Adam's into SGD).

        The per-parameter keys are the signal, as every checkpoint holds them (gradlab's, older ones,
        PyTorch's): a key this kind never writes, or one it always writes missing, where another kind
        writes exactly the saved keys.
        """
        mine = type(self)
        if mine._state_keys is None:
            return
        saved = set(entry)
        always, allowed = set(mine._state_keys), set(mine._state_keys) | set(mine._optional_state_keys)
        kinds = _kinds_keeping(saved)
        if saved <= allowed and (always <= saved or not kinds or mine in kinds):
            return  # a missing key of our own kind is _check_loaded_state's to name
        name, source = mine.__name__, " or ".join(kind.__name__ for kind in kinds)
        keeps = sorted(always) if always else "nothing"
        if mine._optional_state_keys:
            keeps = f"{keeps} (and {sorted(mine._optional_state_keys)} under some options)"
        differ = [f"{sorted(saved - allowed)}, which {name} never writes"] if saved - allowed else []
        differ += [f"no {sorted(always - saved)}, which {name} always writes"] if always - saved else []
        raise ValueError(f"loaded state dict: the state of parameter {index!r} was saved by "
                         f"{source or 'another kind of optimizer'}, not by {name}: it keeps {sorted(saved)} "
                         f"({'; '.join(differ)}), where {name} keeps {keeps} for each parameter. Load it into "
                         f"{source or 'the kind of optimizer that saved it'}, or leave this {name}'s state as it is")

    def _check_loaded_state(self, index, entry: dict, p, group: dict) -> None:
        """Raise unless a saved state entry has every key a fresh state of ``p`` has, each tensor of the
        fresh one's shape (a tensor the fresh state lacks, such as SGD's momentum buffer, has p's shape)."""
        fresh = self._init_state(p, group)
        missing = [key for key in fresh if key not in entry]
        if missing:
            raise ValueError(f"loaded state dict: the state of parameter {index!r} has no {missing[0]!r}; "
                             f"{type(self).__name__} keeps {sorted(fresh)} for each parameter")
        for key, value in entry.items():
            like = fresh.get(key)
            if isinstance(like, Tensor) and not isinstance(value, Tensor):
                if like.ndim == 0 and isinstance(value, (int, float)) and not isinstance(value, bool):
                    continue  # a step saved as a number, as older PyTorch checkpoints hold it
                raise ValueError(f"loaded state dict: state {key!r} of parameter {index!r} should be a tensor, "
                                 f"got {type(value).__name__}")
            if not isinstance(value, Tensor):
                continue
            expected = like.shape if isinstance(like, Tensor) else (p.shape if value.ndim else ())
            if tuple(value.shape) != tuple(expected):
                needs = (f"the parameter it belongs to has shape {tuple(p.shape)}" if tuple(expected) == tuple(p.shape)
                         else f"{type(self).__name__} keeps it with shape {tuple(expected)}")
                raise ValueError(f"loaded state dict: state {key!r} of parameter {index!r} has shape "
                                 f"{tuple(value.shape)}, but {needs}")

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)

    def __repr__(self) -> str:
        text = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"


def _then_materialize(step):
    """``step`` followed by the optimizer's ``_materialize`` (one place for every optimizer)."""
    @functools.wraps(step)
    def step_then_materialize(self, *args, **kwargs):
        loss = step(self, *args, **kwargs)
        self._materialize()
        return loss

    return step_then_materialize


Optimizer.step = _then_materialize(Optimizer.step)


# --- helpers the optimizers share: state buffers are Tensors whose arrays are replaced each step ------


def _zeros_like(p) -> Tensor:
    return p._wrap(p.device.backend.zeros(p.shape, p.dtype))


def _new_step() -> Tensor:
    """The step counter, a 0-d tensor of the default dtype on the CPU, as PyTorch keeps it."""
    return tensor(0.0)


def _advance(state: dict) -> float:
    """Add one to ``state['step']`` and return the new count as a Python number."""
    step = state["step"]
    step.array = step.device.backend.add(step.array, 1)
    return step.item()


def _lerp(b, start, end, weight: float):
    """start + weight * (end - start) on backend arrays, rounded the way torch.lerp rounds it."""
    if weight < 0.5:
        return b.add(start, b.mul(b.sub(end, start), weight))
    return b.sub(end, b.mul(b.sub(end, start), 1 - weight))


def _lerp_(buffer: Tensor, end, weight: float):
    """buffer += weight * (end - buffer), as torch.lerp rounds it; returns the new array."""
    buffer.array = _lerp(buffer.device.backend, buffer.array, end, weight)
    return buffer.array


def _average_square_(buffer: Tensor, grad, beta: float):
    """buffer = beta * buffer + (1 - beta) * grad²: the running mean of squared gradients; returns it."""
    b = buffer.device.backend
    buffer.array = b.add(b.mul(buffer.array, beta), b.mul(b.mul(grad, 1 - beta), grad))
    return buffer.array


def _kernel_switches(**switches) -> dict:
    """PyTorch's implementation switches, accepted and kept in each group as PyTorch keeps them.

    ``foreach`` and ``fused`` choose among PyTorch's kernels for one same update, and ``capturable``
    lets CUDA graphs capture it: gradlab has one kernel, so they change nothing. ``differentiable=True``
    asks for the update to be recorded in the graph, which gradlab's in-place array updates are not.
    """
    if switches.get("fused") and switches.get("foreach"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    if switches.get("differentiable"):
        raise ValueError("differentiable=True would backpropagate through optimizer.step(), but gradlab's optimizers "
                         "update the parameters' arrays outside the graph; leave differentiable=False (the default)")
    return switches


def _check_nonnegative(**options) -> None:
    """PyTorch's constructor checks, with its messages: 'Invalid learning rate: -1'."""
    for name, value in options.items():
        if not 0.0 <= value:
            label = {"lr": "learning rate", "eps": "epsilon value"}.get(name, f"{name} value")
            raise ValueError(f"Invalid {label}: {value}")


def _check_betas(betas) -> None:
    for i in (0, 1):
        if not 0.0 <= betas[i] < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {betas[i]}")


_SCALAR_STATE = ("step", "mu_product", "eta", "mu")  # bookkeeping (NAdam's, ASGD's) in the default dtype


def _cast_like(p: Tensor, value, key):
    """A copy of one saved state value; tensors move to p's device, and to its dtype unless they are bookkeeping.

    (PyTorch casts NAdam's mu_product to the parameter's dtype too, so a float64 run resumes ~1e-12 off; here
    a resumed run continues bit for bit.)
    """
    if key in _SCALAR_STATE and isinstance(value, (int, float)):
        return tensor(float(value))
    if not isinstance(value, Tensor):
        return copy.deepcopy(value)
    if key in _SCALAR_STATE:
        return value.detach().clone()
    dtype = p.dtype if p.dtype.is_floating_point else value.dtype
    return value.detach().to(p.device, dtype, copy=True)


def _follow_parameter(p: Tensor, state: dict) -> None:
    """Put p's state tensors (and lists of them) on p's device and dtype, where ``model.to(...)`` moved p.

    The same rule as ``load_state_dict``'s (``_cast_like``): the step counters and other bookkeeping stay
    where they are; the rest take p's device, and its dtype when p is floating-point. A state already
    in place costs one comparison per tensor.
    """
    device, native = p.device, p.array.dtype
    for key, value in state.items():
        if isinstance(value, Tensor):
            if (value.device is not device or value.array.dtype != native) and key not in _SCALAR_STATE:
                moved = _cast_like(p, value, key)
                if moved.device is not value.device or moved.dtype is not value.dtype:
                    state[key] = moved
        elif isinstance(value, list) and value and isinstance(value[0], Tensor) and value[0].device is not device:
            value[:] = [_cast_like(p, v, key) for v in value]


def _kinds_keeping(keys: set) -> list:
    """The optimizer classes that write exactly these per-parameter state keys (their own declared ones)."""
    kinds, todo = [], list(Optimizer.__subclasses__())
    while todo:
        kind = todo.pop(0)
        todo.extend(kind.__subclasses__())
        if "_state_keys" in kind.__dict__ and kind._state_keys is not None:
            if set(kind._state_keys) <= keys <= set(kind._state_keys) | set(kind._optional_state_keys):
                kinds.append(kind)
    return sorted(kinds, key=lambda kind: kind.__name__)


def _typename(obj) -> str:
    """'float', 'numpy.ndarray', 'torch.Tensor': the type named as torch.typename names it."""
    kind = type(obj)
    module = kind.__module__
    return kind.__qualname__ if module in ("", "builtins") else f"{module}.{kind.__qualname__}"

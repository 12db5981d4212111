"""``Function``, its graph ``Node``, and ``apply``: the one place where the graph is recorded.

A Function is a pair of static methods, ``forward(ctx, *inputs)`` and ``backward(ctx, *grads)``,
exactly as in PyTorch. ``apply`` runs forward, and when an input requires grad it makes a Node:
the object that backward will visit, holding the edges to the inputs' own nodes and whatever
forward saved. The same Node is the ``ctx`` that forward and backward receive.
"""

from __future__ import annotations

import itertools
import weakref

from ..dtypes import FLOATING_NATIVES
from . import observers
from .grad_mode import grad_state


class TrackedTensor:
    """The half of a tensor that autograd knows about: gradient, history, version, hooks.

    ``gradlab.Tensor`` subclasses it and adds the data and the operations. Keeping these fields
    here lets the engine work on tensors without importing the layer above it; in return the
    engine reads only what every subclass provides: ``array`` (with ``.shape`` and ``.dtype``),
    ``device``, the Tensor operators for summing gradients, and ``_regenerate_view_history()``
    for a view whose base changed in place (``autograd.views``).
    """

    __slots__ = ("requires_grad", "_grad", "grad_fn", "_output_nr", "_version", "_base", "_view_version", "_hooks",
                 "_retains_grad", "_accumulator", "__weakref__")

    @property
    def grad(self):
        """The gradient backward accumulated here (None until then). Assigning one checks it fits, as PyTorch does."""
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            _check_assigned_grad(self, value)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def is_leaf(self) -> bool:
        """A leaf was made by the user (or does not require grad); only leaves get ``.grad`` by default."""
        return self.grad_fn is None

    @property
    def _version_count(self) -> int:
        return self._version[0]


def _check_assigned_grad(tensor, grad) -> None:
    """``t.grad = g`` keeps g only if it could have come from backward: a tensor of t's shape, dtype and device."""
    if not isinstance(grad, TrackedTensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(grad).__name__}")
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    problems = [(what, theirs, ours) for what, theirs, ours in (
        ("dtype", grad.dtype, tensor.dtype), ("size", tuple(grad.shape), tuple(tensor.shape)),
        ("device", grad.device, tensor.device)) if theirs != ours]
    if problems:
        what, theirs, ours = problems[0]
        shown = (lambda v: list(v)) if what == "size" else str
        raise RuntimeError(f"attempting to assign a gradient with {what} '{shown(theirs)}' to a tensor with {what} "
                           f"'{shown(ours)}'. Please ensure that the gradient and the tensor have the same {what}")


_FREED = object()
_sequence = itertools.count()  # every node's number is unique: the engine orders ready nodes by it
_LEAF_SEQUENCE = 1 << 62


class Node:
    """A recorded operation in the backward graph (``grad_fn``), and the ``ctx`` of its Function.

    ``next_functions`` holds one ``(node, output_index)`` edge per forward input: where the
    gradient for that input goes next. Leaves that require grad are reached through an
    ``AccumulateGrad`` node, and inputs that need no gradient have ``(None, 0)``.
    """

    __slots__ = ("next_functions", "needs_input_grad", "_output_shapes", "_output_dtypes", "_seq", "__dict__",
                 "__weakref__")

    function = None  # the Function class this node belongs to (set on each generated subclass)
    _saved = ()
    _saved_versions = ()
    _materialize_grads = True
    _non_differentiable = ()
    _dirty = ()
    _tensor_hooks = None  # {output index: [hook(grad)]}, from register_hook on non-leaf tensors
    _pre_hooks = None  # [hook(grad_outputs)], from Node.register_prehook
    _post_hooks = None  # [hook(grad_inputs, grad_outputs)], from Node.register_hook
    _forward_trace = None  # where forward ran, kept while detect_anomaly is on

    # --- what forward may call on ctx ----------------------------------------------------------

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for backward; using them after an in-place change is an error."""
        try:
            self._saved_versions = tuple(t._version[0] if t is not None else 0 for t in tensors)
        except AttributeError:
            i, bad = next((i, t) for i, t in enumerate(tensors) if t is not None and not isinstance(t, TrackedTensor))
            raise TypeError(
                f"save_for_backward can only save tensors (or None), but argument {i} is of type {type(bad).__name__}; "
                "keep other values as attributes of ctx (ctx.value = ...)"
            ) from None
        self._saved = tensors

    @property
    def saved_tensors(self) -> tuple:
        saved = self._saved
        if saved is _FREED:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved tensors after "
                "they have already been freed). Saved intermediate values of the graph are freed when you call "
                ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
                "graph a second time or if you need to access saved tensors after calling backward."
            )
        for i, (t, version) in enumerate(zip(saved, self._saved_versions)):
            if t is not None and t._version[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [{_describe(t)}], which is saved tensor {i} of {self.name()}, is at version "
                    f"{t._version[0]}; expected version {version} instead. Hint: the in-place change happened "
                    "after this tensor was used; use an out-of-place operation (e.g. x = x + 1 instead of "
                    "x += 1) or .clone() it first."
                )
        return saved

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs (such as indices) that have no gradient."""
        self._non_differentiable = tuple(id(t) for t in tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """When False, backward receives None instead of zeros for outputs nobody used."""
        self._materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward changed in place and returns: they take this node as their history."""
        self._dirty = tuple(id(t) for t in tensors)

    # --- what users and the lab see --------------------------------------------------------------

    def name(self) -> str:
        return type(self).__name__

    def register_hook(self, hook):
        """Call ``hook(grad_inputs, grad_outputs)`` after this node's backward has run."""
        if self._post_hooks is None:
            self._post_hooks = []
        return _RemovableHandle(self._post_hooks, hook)

    def register_prehook(self, hook):
        """Call ``hook(grad_outputs)`` before this node's backward; a returned tuple replaces them."""
        if self._pre_hooks is None:
            self._pre_hooks = []
        return _RemovableHandle(self._pre_hooks, hook)

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad(Node):
    """The node at a leaf tensor: its 'backward' adds the incoming gradient to ``leaf.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        self.needs_input_grad = ()
        self._output_shapes = (variable.shape,)
        self._output_dtypes = (variable.array.dtype,)
        self._seq = _LEAF_SEQUENCE + next(_sequence)  # above every op's number: ready leaves are served first

    def name(self) -> str:
        return "AccumulateGrad"


def accumulator(leaf) -> AccumulateGrad:
    """The one AccumulateGrad node of a leaf (kept by weak reference so leaf and node can die)."""
    ref = getattr(leaf, "_accumulator", None)
    node = ref() if ref is not None else None
    if node is None:
        node = AccumulateGrad(leaf)
        leaf._accumulator = weakref.ref(node)
    return node


class _RemovableHandle:
    """Returned by every register_* call: ``remove()`` takes the hook out again."""

    def __init__(self, hooks: list, hook):
        self._hooks = hooks
        self._hook = hook
        hooks.append(hook)

    def remove(self) -> None:
        if self._hook in self._hooks:
            self._hooks.remove(self._hook)


class Function:
    """Base class of every differentiable operation, built in or written by a user.

    Subclasses define ``forward(ctx, *inputs)`` and ``backward(ctx, *grad_outputs)`` as static
    methods and are called through ``apply``. backward returns one gradient per forward input
    (None for inputs that need none).
    """

    _node_type = Node
    derivative = ""  # the local rule in plain math ("∂L/∂x = g · out"), shown by the lab

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._node_type = type(f"{cls.__name__}Backward", (Node,), {"__slots__": (), "function": cls})

    @staticmethod
    def forward(ctx, *inputs):
        raise NotImplementedError(f"{ctx.function.__name__} must define forward(ctx, *inputs)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(f"{ctx.function.__name__} must define backward(ctx, *grad_outputs) to be differentiated")

    @classmethod
    def apply(cls, *inputs):
        """Run forward; if any input requires grad (and grad mode is on), record a Node for backward."""
        ctx = cls._node_type()
        if grad_state.enabled:
            needs = ctx.needs_input_grad = _needs_grad(inputs)
            if True in needs:
                grad_state.enabled = False  # forward itself is not recorded, only this one node
                try:
                    outputs = cls.forward(ctx, *inputs)
                finally:
                    grad_state.enabled = True
                outputs = _connect(ctx, inputs, outputs)
                if observers.active:
                    observers.notify(cls, inputs, outputs, ctx)
                return outputs
        else:
            ctx.needs_input_grad = (False,) * len(inputs)
        outputs = cls.forward(ctx, *inputs)
        if observers.active:
            observers.notify(cls, inputs, outputs, None)
        return outputs


_NO_EDGE = (None, 0)


def _needs_grad(inputs) -> tuple:
    """Which inputs require grad. One and two inputs (nearly every op) skip the comprehension."""
    if len(inputs) == 2:
        a, b = inputs
        return (isinstance(a, TrackedTensor) and (a.requires_grad or _view_gains_grad(a)),
                isinstance(b, TrackedTensor) and (b.requires_grad or _view_gains_grad(b)))
    if len(inputs) == 1:
        return (isinstance(inputs[0], TrackedTensor) and (inputs[0].requires_grad or _view_gains_grad(inputs[0])),)
    return tuple([isinstance(x, TrackedTensor) and (x.requires_grad or _view_gains_grad(x)) for x in inputs])


def _view_gains_grad(x) -> bool:
    """A view taken before its base began to require grad (through an in-place write) requires it now too."""
    return x._base is not None and x._version[0] != x._view_version and x._base.requires_grad


def _edge(x) -> tuple:
    """Where the gradient for input x goes next: its grad_fn's output, or its leaf accumulator."""
    if x._base is not None and x._version[0] != x._view_version:
        x._regenerate_view_history()  # its base changed in place since x was taken (autograd.views)
    fn = x.grad_fn
    return (fn, x._output_nr) if fn is not None else (accumulator(x), 0)


def _connect(node: Node, inputs: tuple, outputs):
    """Give the node its edges to the inputs, and make it the grad_fn of its outputs."""
    needs = node.needs_input_grad
    if len(inputs) == 2:
        node.next_functions = (_edge(inputs[0]) if needs[0] else _NO_EDGE, _edge(inputs[1]) if needs[1] else _NO_EDGE)
    else:
        node.next_functions = tuple([_edge(x) if need else _NO_EDGE for x, need in zip(inputs, needs)])
    node._seq = next(_sequence)
    if outputs.__class__ is not tuple and isinstance(outputs, TrackedTensor) and not node._dirty:
        for x in inputs:
            if outputs is x:
                break
        else:  # the usual case: one new output tensor
            if outputs.array.dtype in FLOATING_NATIVES and id(outputs) not in node._non_differentiable:
                outputs.requires_grad = True
                outputs.grad_fn = node
            node._output_shapes = (outputs.array.shape,)
            node._output_dtypes = (outputs.array.dtype,)  # a gradient arriving in another dtype is cast to it
            return outputs
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    shapes, dtypes = [], []
    for i, out in enumerate(outs):
        if isinstance(out, TrackedTensor):
            for x in inputs:
                if out is x:
                    if id(out) not in node._dirty:  # an input returned as it is: the output is a tensor of its own
                        out = out.detach()
                        outs = outs[:i] + (out,) + outs[i + 1:]
                    elif out.requires_grad and out.grad_fn is None:
                        raise RuntimeError(
                            f"{node.function.__name__}: a leaf Variable that requires grad has been used in an in-place "
                            "operation (it was passed to mark_dirty); apply the Function to a copy, e.g. x.clone()"
                        )
                    break
            if out.dtype.is_floating_point and id(out) not in node._non_differentiable:
                out.requires_grad = True
                out.grad_fn = node
                out._output_nr = i
            shapes.append(out.shape)
            dtypes.append(out.array.dtype)
        else:
            shapes.append(None)
            dtypes.append(None)
    node._output_shapes = tuple(shapes)
    node._output_dtypes = tuple(dtypes)
    return outs[0] if single else outs


def _describe(t) -> str:
    return f"{getattr(t.dtype, 'name', t.dtype)} tensor of shape {list(t.shape)}"

"""``Function``, its graph ``Node``, and ``apply``: the one place where the graph is recorded.

A Function is a pair of static methods, ``forward(ctx, *inputs)`` and ``backward(ctx, *grads)``,
exactly as in PyTorch. ``apply`` runs forward, and when an input requires grad it makes a Node:
the object that backward will visit, holding the edges to the inputs' own nodes and whatever
forward saved. The same Node is the ``ctx`` that forward and backward receive.
"""

from __future__ import annotations

import itertools
import sys
import weakref

from ..dtypes import FLOATING_NATIVES
from . import observers
from .grad_mode import per_thread, set_enabled, thread_mode, threads_off
from .hooks import RemovableHandle


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

    @property
    def version(self) -> int:
        """How many times this tensor's memory has been changed in place (PyTorch spells it ``t._version``);
        a view shares its base's count. Backward compares it with the count a saved tensor had when saved."""
        return self._version[0]


def _check_assigned_grad(tensor, grad) -> None:
    """``t.grad = g`` keeps g only if it could have come from backward: a tensor of t's shape, dtype and device."""
    if (isinstance(grad, TrackedTensor) and grad is not tensor and grad.device is tensor.device
            and grad.array.dtype is tensor.array.dtype and grad.array.shape == tensor.array.shape):
        return  # what backward assigns (checked first: the engine assigns every leaf's first gradient)
    if not isinstance(grad, TrackedTensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of type {type(grad).__name__}")
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    problems = [(what, theirs, ours) for what, theirs, ours in (
        ("dtype", grad.dtype, tensor.dtype), ("size", grad.array.shape, tensor.array.shape),
        ("device", grad.device, tensor.device)) if theirs != ours]
    if problems:
        what, theirs, ours = problems[0]
        shown = (lambda v: list(v)) if what == "size" else str
        raise RuntimeError(f"attempting to assign a gradient with {what} '{shown(theirs)}' to a tensor with {what} "
                           f"'{shown(ours)}'. Please ensure that the gradient and the tensor have the same {what}")


_FREED = object()
_sequence = itertools.count()  # every node's number is unique: the engine orders ready nodes by it
_LEAF_SEQUENCE = 1 << 62


class SavedValue:
    """One tensor forward saved, as ``Node.inspect_saved()`` shows it: ``tensor``, ``output``, ``version``.

    ``output`` is the index of the node's own output this tensor is, or None (an input, or a tensor
    forward made for backward). A saved output is kept without its history, since a node holding its
    own output would be a cycle; ``saved_tensors`` gives the history back for backward. It unpacks as
    ``tensor, output``.
    """

    __slots__ = ("tensor", "output", "_version_saved")

    def __init__(self, tensor, output: int | None, version: int = 0):
        self.tensor, self.output, self._version_saved = tensor, output, version

    @property
    def version(self) -> int:
        """The tensor's ``version`` when forward saved it. Where ``tensor.version`` has moved on since, it
        was changed in place after forward used it, and backward will refuse it."""
        return self._version_saved

    def __iter__(self):
        return iter((self.tensor, self.output))

    def __eq__(self, other) -> bool:
        if isinstance(other, tuple):  # as the pair it unpacks to
            return (self.tensor, self.output) == other
        return (isinstance(other, SavedValue) and self.tensor is other.tensor and self.output == other.output
                and self.version == other.version)

    __hash__ = None

    def __repr__(self) -> str:
        return f"SavedValue(tensor={self.tensor!r}, output={self.output!r}, version={self.version})"


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
    _saved_outputs = ()  # (position in _saved, output index) of saved outputs, kept without their history
    _materialize_grads = True
    _non_differentiable = ()
    _dirty = ()
    _marked = False  # mark_dirty or mark_non_differentiable was called: the outputs take the general path
    _tensor_hooks = None  # {output index: [hook(grad)]}, from register_hook on non-leaf tensors
    _pre_hooks = None  # [hook(grad_outputs)], from Node.register_prehook
    _post_hooks = None  # [hook(grad_inputs, grad_outputs)], from Node.register_hook
    _hooked = False  # whether any of the three was ever set: the engine reads this one flag for most nodes
    _forward_trace = None  # where forward ran, kept while detect_anomaly is on
    _variants = ()  # the node classes of this node's Function, one per name in its node_names

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
        if self._saved_outputs:
            saved = list(saved)
            for i, nr in self._saved_outputs:
                saved[i] = _with_history(saved[i], self, nr)
            saved = tuple(saved)
        return saved

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs (such as indices) that have no gradient."""
        self._non_differentiable, self._marked = tuple(id(t) for t in tensors), True

    def set_materialize_grads(self, value: bool) -> None:
        """When False, backward receives None instead of zeros for outputs nobody used."""
        self._materialize_grads = bool(value)

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward changed in place and returns: they take this node as their history."""
        self._dirty, self._marked = tuple(id(t) for t in tensors), True

    # --- what users and the lab see --------------------------------------------------------------

    def name(self) -> str:
        """The node's class name, PyTorch's where the op is PyTorch's: ``AddBackward0``, ``SumBackward1``."""
        return type(self).__name__

    @property
    def freed(self) -> bool:
        """True once backward released what forward saved (to backward twice, pass retain_graph=True)."""
        return self._saved is _FREED

    def inspect_saved(self):
        """What forward saved, to look at (the lab draws it): one ``SavedValue(tensor, output, version)`` per value
        given to ``save_for_backward`` (tensor None where None was given), or None once freed. Unlike
        ``saved_tensors`` it checks no versions and raises nothing."""
        saved = self._saved
        if saved is _FREED:
            return None
        outputs, versions = dict(self._saved_outputs), self._saved_versions
        return tuple(SavedValue(t, outputs.get(i), versions[i] if i < len(versions) else 0)
                     for i, t in enumerate(saved))

    @property
    def output_shapes(self) -> tuple:
        """The shape of each output of forward (None for one that is not a tensor): the gradients arriving
        here have these shapes. Empty until forward's outputs are connected."""
        return getattr(self, "_output_shapes", ())

    @property
    def sequence_nr(self) -> int:
        """When the node was recorded: a later node has a larger number, and a leaf's AccumulateGrad one larger
        than every op's. Backward runs the ready node with the largest number first."""
        return self._seq

    @property
    def forward_trace(self):
        """Where forward ran (``traceback.FrameSummary`` entries, outermost first), kept while ``detect_anomaly()``
        is on; else None."""
        return self._forward_trace

    def recorded_as(self, variant: int) -> None:
        """Record this node under its Function's ``node_names[variant]``, for an op that PyTorch names by
        how it was called (``x.sum()`` is ``SumBackward0``, ``x.sum(1)`` ``SumBackward1``). Forward calls
        it; a subclass that inherits the forward but names no variants of its own keeps its one name."""
        variants = self._variants
        if variant < len(variants):
            self.__class__ = variants[variant]

    def register_hook(self, hook):
        """Call ``hook(grad_inputs, grad_outputs)`` after this node's backward has run."""
        if self._post_hooks is None:
            self._post_hooks, self._hooked = [], True
        self._post_hooks.append(hook)
        return RemovableHandle(self._post_hooks, hook=hook)

    def register_prehook(self, hook):
        """Call ``hook(grad_outputs)`` before this node's backward; a returned tuple replaces them."""
        if self._pre_hooks is None:
            self._pre_hooks, self._hooked = [], True
        self._pre_hooks.append(hook)
        return RemovableHandle(self._pre_hooks, hook=hook)

    def _tensor_hook_list(self, nr: int) -> list:
        """The hooks of this node's output ``nr`` (``Tensor.register_hook`` on a non-leaf tensor)."""
        if self._tensor_hooks is None:
            self._tensor_hooks, self._hooked = {}, True
        return self._tensor_hooks.setdefault(nr, [])

    def __repr__(self):
        return f"<{self.name()} object at {id(self):#x}>"


class AccumulateGrad(Node):
    """The node at a leaf tensor: its 'backward' adds the incoming gradient to ``leaf.grad``."""

    __slots__ = ("variable",)

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()
        self.needs_input_grad = ()
        self._output_shapes = (variable.array.shape,)
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


_PRIMITIVE_MODULES = ("gradlab.ops.", "gradlab.nn.functional.")


def defined_by_caller(cls, frames_up: int = 2):
    """Give a Function made by a factory (``elementwise()``, ``binary()``) the module that called the
    factory, where its name is bound, as ``collections.namedtuple`` does: the lab shows that file, the
    docs link it, a saved tape names it. Its node type follows. ``frames_up`` 2: the factory's caller.

    Whether its forward is primitive was decided by the factory's own module, which wrote that forward.
    """
    module = sys._getframe(frames_up).f_globals.get("__name__")
    if module:
        cls.__module__ = module
        for node_type in cls._node_type._variants:
            node_type.__module__ = module
    return cls


class Function:
    """Base class of every differentiable operation, built in or written by a user.

    Subclasses define ``forward(ctx, *inputs)`` and ``backward(ctx, *grad_outputs)`` as static
    methods and are called through ``apply``. backward returns one gradient per forward input
    (None for inputs that need none).
    """

    _node_type = Node
    derivative = ""  # the local rule in plain math ("∂L/∂x = g · out"), shown by the lab
    # The class names of this op's grad_fn, as PyTorch names its nodes (empty: see name_nodes). A second
    # name onwards is a variant that forward picks with ctx.recorded_as(i) (SumBackward0 / SumBackward1).
    node_names: tuple = ()
    # True when forward uses backend primitives only (the rule of gradlab.ops): nothing inside can record,
    # so apply need not switch this thread's recording off around it (~0.3 µs: 4% of an add in the chain).
    _forward_is_primitive = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name_nodes(cls, *cls.__dict__.get("node_names", ()))
        if "_forward_is_primitive" not in cls.__dict__:  # gradlab's own ops, unless a class says otherwise
            cls._forward_is_primitive = cls.__module__.startswith(_PRIMITIVE_MODULES)

    @staticmethod
    def forward(ctx, *inputs):
        raise NotImplementedError(f"{ctx.function.__name__} must define forward(ctx, *inputs)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(f"{ctx.function.__name__} must define backward(ctx, *grad_outputs) to be differentiated")

    @classmethod
    def apply(cls, *inputs):
        """Run forward; if grad mode is on and an input requires grad, record a Node for backward."""
        ctx = cls._node_type()
        watched = observers.active  # observers are told of each op; while they are, forwards are counted
        # 1. Decide whether it is recorded: this thread records, and an input requires grad.
        if not threads_off or per_thread.mode.enabled:
            needs = ctx.needs_input_grad = _needs_grad(inputs)
            if True in needs:
                # 2. Run forward (itself never recorded: only this one node is).
                if cls._forward_is_primitive and not watched:
                    outputs = cls.forward(ctx, *inputs)
                else:
                    outputs = _forward_apart(cls, ctx, inputs, watched)
                # 3. Connect the node to the inputs' nodes and make it the outputs' grad_fn.
                outputs = _connect(ctx, inputs, outputs)
                # 4. Tell the observers (one falsy check when there are none).
                if watched:
                    observers.notify(cls, inputs, outputs, ctx)
                return outputs
        else:
            ctx.needs_input_grad = (False,) * len(inputs)
        # Not recorded: steps 2 and 4 only. (Kept apart: one branch per step cost 2% of an add.)
        if watched:
            outputs = observers.run_forward(cls.forward, ctx, inputs)
            observers.notify(cls, inputs, outputs, None)
            return outputs
        return cls.forward(ctx, *inputs)


def name_nodes(cls, *names) -> None:
    """Make the grad_fn classes of Function ``cls``: one per name, the first the default. Without names,
    PyTorch's: ``"<ClassName>Backward0"`` for gradlab's own ops (PyTorch's built-in nodes end in a number),
    ``"<ClassName>Backward"`` for a user's Function (as torch.autograd.Function names its nodes). Done once,
    when the class is made, so no call pays for its node's name; a class renamed later calls it again."""
    names = names or (f"{cls.__name__}Backward{'0' if cls.__module__.startswith('gradlab.') else ''}",)
    variants = tuple(type(name, (Node,), {"__slots__": (), "function": cls, "__module__": cls.__module__})
                     for name in names)
    for node_type in variants:
        node_type._variants = variants
    cls._node_type = variants[0]
    cls.node_names = names


def _forward_apart(cls, ctx, inputs, watched):
    """A forward that may use Tensor operations runs with this thread's recording off, as in PyTorch;
    while observers watch, it runs one level deeper, so that they see the ops inside it as nested."""
    if cls._forward_is_primitive:
        return observers.run_forward(cls.forward, ctx, inputs)
    mode = thread_mode()
    set_enabled(mode, False)
    try:
        return observers.run_forward(cls.forward, ctx, inputs) if watched else cls.forward(ctx, *inputs)
    finally:
        set_enabled(mode, True)


_NO_EDGE = (None, 0)


def _needs_grad(inputs) -> tuple:
    """Which inputs require grad."""
    if len(inputs) == 2:  # nearly every op: without the comprehension the chain of adds is 4-6% faster
        a, b = inputs
        return (isinstance(a, TrackedTensor) and (a.requires_grad or (a._base is not None and _view_gains_grad(a))),
                isinstance(b, TrackedTensor) and (b.requires_grad or (b._base is not None and _view_gains_grad(b))))
    if len(inputs) == 1:  # and the rest take one input: a chain of negations is 2% faster
        x = inputs[0]
        return (isinstance(x, TrackedTensor) and (x.requires_grad or (x._base is not None and _view_gains_grad(x))),)
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
    # Two inputs and one (nearly every op) are written out: without the comprehension and the loop that
    # looks for an input returned as it is, the chain of adds is ~10% faster.
    if len(inputs) == 2:
        a, b = inputs
        node.next_functions = (_edge(a) if needs[0] else _NO_EDGE, _edge(b) if needs[1] else _NO_EDGE)
        new_output = outputs is not a and outputs is not b
    elif len(inputs) == 1:
        x = inputs[0]
        node.next_functions = (_edge(x) if needs[0] else _NO_EDGE,)
        new_output = outputs is not x
    else:
        node.next_functions = tuple([_edge(x) if need else _NO_EDGE for x, need in zip(inputs, needs)])
        new_output = not _is_one_of(outputs, inputs)
    node._seq = next(_sequence)
    if new_output and outputs.__class__ is not tuple and not node._marked and isinstance(outputs, TrackedTensor):
        array = outputs.array  # one new output tensor (nearly every op) skips the general loop
        dtype = array.dtype
        if dtype in FLOATING_NATIVES:
            outputs.requires_grad = True
            outputs.grad_fn = node
            if node._saved and _is_one_of(outputs, node._saved):  # (most ops save inputs only)
                _save_outputs_without_history(node, (outputs,))
        node._output_shapes = (array.shape,)
        node._output_dtypes = (dtype,)  # a gradient arriving in another dtype is cast to it
        return outputs
    return _connect_outputs(node, inputs, outputs)


def _connect_outputs(node: Node, inputs: tuple, outputs):
    """The general case: several outputs, inputs returned as they are, and inputs changed in place (mark_dirty)."""
    single = not isinstance(outputs, tuple)
    outs = list((outputs,) if single else outputs)
    shapes, dtypes = [], []
    for i, out in enumerate(outs):
        if not isinstance(out, TrackedTensor):
            shapes.append(None)
            dtypes.append(None)
            continue
        if _is_one_of(out, inputs):
            if id(out) not in node._dirty:  # an input returned as it is: the output is a tensor of its own
                out = outs[i] = out.detach()
            elif out.requires_grad and out.grad_fn is None:
                raise RuntimeError(
                    f"{node.function.__name__}: a leaf Variable that requires grad has been used in an in-place "
                    "operation (it was passed to mark_dirty); apply the Function to a copy, e.g. x.clone()"
                )
        if out.dtype.is_floating_point and id(out) not in node._non_differentiable:
            out.requires_grad = True
            out.grad_fn = node
            out._output_nr = i
        shapes.append(out.shape)
        dtypes.append(out.array.dtype)
    node._output_shapes = tuple(shapes)
    node._output_dtypes = tuple(dtypes)
    if node._saved:
        _save_outputs_without_history(node, outs)
    return outs[0] if single else tuple(outs)


def _save_outputs_without_history(node: Node, outs) -> None:
    """A saved output holds its own node (out.grad_fn is node): a cycle, so an unused graph would wait
    for the garbage collector. Keep it without its history instead (the same memory and version
    counter); ``saved_tensors`` gives the history back, as PyTorch's SavedVariable does."""
    saved, where = list(node._saved), []
    for i, t in enumerate(saved):
        for nr, out in enumerate(outs):
            if t is out and t is not None and t.grad_fn is node:
                saved[i] = t.detach()
                where.append((i, nr))
    if where:
        node._saved, node._saved_outputs = tuple(saved), tuple(where)


def _with_history(t, node: Node, nr: int):
    """A saved output as backward sees it: the same memory, with the node as its grad_fn again."""
    out = t.detach()
    out.requires_grad, out.grad_fn, out._output_nr = True, node, nr
    return out


def _is_one_of(t, inputs) -> bool:
    """Whether t is one of the inputs itself (by identity: == on tensors compares values)."""
    for x in inputs:
        if t is x:
            return True
    return False


def _describe(t) -> str:
    return f"{getattr(t.dtype, 'name', t.dtype)} tensor of shape {list(t.shape)}"

"""The rule every op has: run its own ``forward`` and ``backward`` exactly as eager does, minus the graph.

The forward instruction wraps the slots' arrays as Tensors, calls ``Function.forward`` with a
fresh ctx (``needs_input_grad`` decided when planned) and hands back the ctx with the outputs; the
backward instruction gives that ctx and the gradients to ``Function.backward`` and fits each
gradient to its input (summed over broadcast dimensions, cast to its dtype), as the engine would.
Any op — built in or a user's Function — compiles this way; ``rules.py`` replaces the hot ones.
"""

from __future__ import annotations

from ..autograd.broadcasting import fit_to_input, sum_array_to_shape
from ..autograd.function import TrackedTensor
from ..jit.tape import Ref


class ShapeChanged(RuntimeError):
    """An op gave outputs of other shapes than when it was traced: the program no longer fits."""


class GenericForward:
    """``(ctx, *outputs) = forward(*arrays)`` of one traced op; constants and live tensors are bound in."""

    def __init__(self, op, args, needs, wrap):
        self.function, self.args, self.needs, self.wrap = op.function, args, tuple(needs), wrap
        self.out_shapes = op.out_shapes
        self.name = op.name

    def __call__(self, *arrays):
        it = iter(arrays)
        args = [_bind(a, it, self.wrap) for a in self.args]
        ctx = self.function._node_type()
        ctx.needs_input_grad = self.needs
        out = self.function.forward(ctx, *args)
        outs = out if isinstance(out, tuple) else (out,)
        result = [ctx]
        for o, shape in zip(outs, self.out_shapes):
            if isinstance(o, TrackedTensor):
                if tuple(o.array.shape) != shape:
                    raise ShapeChanged(f"{self.name} gave an output of shape {tuple(o.array.shape)} where it gave "
                                       f"{shape} when traced")
                result.append(o.array)
            else:
                result.append(o)
        return result


def _bind(a, arrays, wrap):
    """An argument as forward takes it: a slot's array wrapped as a Tensor, a live tensor, or a constant."""
    if a.__class__ is Ref:
        return wrap(next(arrays))
    if a.__class__ is Live:
        return a.tensor
    if isinstance(a, (tuple, list)) and a and any(x.__class__ in (Ref, Live) or isinstance(x, (tuple, list)) for x in a):
        items = [_bind(x, arrays, wrap) for x in a]
        return type(a)(*items) if hasattr(a, "_fields") else type(a)(items)
    return a


class Live:
    """A parameter, buffer or captured tensor passed to forward as the object itself (so in-place
    updates of running statistics land where eager puts them)."""

    __slots__ = ("tensor",)

    def __init__(self, tensor):
        self.tensor = tensor


class GenericBackward:
    """``grads = backward(ctx, *grad_outputs)``, each fitted to its input's shape and dtype."""

    def __init__(self, op, wanted, targets, wrap):
        self.function, self.wrap, self.name = op.function, wrap, op.name
        self.wanted = wanted  # per forward argument: whether its gradient is needed
        self.targets = targets  # per forward argument: (shape, native dtype) of the input, or None
        self.out_shapes = op.out_shapes

    def __call__(self, ctx, *grad_arrays):
        grads = [self.wrap(g) if g is not None else None for g in grad_arrays]
        if any(g is None for g in grads) and ctx._materialize_grads:
            present = next(g for g in grads if g is not None)
            grads = [g if g is not None or shape is None else present.new_zeros(shape)
                     for g, shape in zip(grads, self.out_shapes)]
        out = self.function.backward(ctx, *grads)
        out = out if isinstance(out, (tuple, list)) else (out,)
        result = []
        for g, wanted, target in zip(out, self.wanted, self.targets):
            result.append(fit_to_input(g, *target).array if wanted and g is not None else None)
        result.extend([None] * (len(self.wanted) - len(result)))
        return result


def sum_to(backend, shape):
    """The instruction that fits a broadcast gradient to ``shape`` (a rule's gradients use it)."""
    def fit(g):
        return sum_array_to_shape(backend, g, shape)
    return fit

"""Activation rules: sigmoid and tanh as one array instruction each, forward and backward; and the
split of an LSTM's gate pre-activations into its gates (Split: views forward, one array backward),
and the unbind of its input into time steps and stack of its outputs (Unbind, Stack), likewise.

Forward is eager's own computation on arrays: sigmoid is numpy_kernels.sigmoid's four passes
(−a, exp, + 1, 1 / ·), here into the instruction's buffer; tanh is numpy's tanh. Backward is
eager's formula in eager's order: sigmoid g · out · (1 − out) as (g · out) · (1 − out), tanh
g · (1 − out · out). Both backwards are plain arithmetic, so the fusion pass runs them in its
kernels. A forward joins a fused chain only where numba's exp / tanh give numpy's numbers bit for
bit on this machine (checked once per dtype on a probe of values: numpy's own SIMD exp or tanh,
where it has one, rounds differently from the C library numba calls).
"""

from __future__ import annotations

import functools

import numpy as np

from ..jit.tape import Ref
from .passes import OUT_BACKENDS
from .rules_elementwise import float_operands, registrar
from ..ops.activations import Sigmoid
from ..ops.elementwise import Tanh
from ..ops.joining import Stack
from ..ops.splitting import Split, Unbind

RULES: dict = {}
rule = registrar(RULES)


def _sigmoid(a, out=...):
    """numpy_kernels.sigmoid, written into ``out``: 1 / (1 + exp(−a)), exp overflowing to inf giving 0."""
    e = np.negative(a, out=out)
    with np.errstate(over="ignore"):
        np.exp(e, out=e)
    np.add(e, 1, out=e)
    return np.reciprocal(e, out=e)


def _tanh(a, out=...):
    return np.tanh(a, out=out)


def _sigmoid_backward(g, y, out=...):
    """(g · out) · (1 − out), eager's Tensor operations in their order. ``out`` may be g's or y's own
    memory (the buffer pass reuses an input it reads last): 1 − y is taken before anything is written."""
    one_minus = np.subtract(1, y)
    t = np.multiply(g, y, out=out)
    return np.multiply(t, one_minus, out=t)


def _tanh_backward(g, y, out=...):
    """g · (1 − out · out), eager's Tensor operations in their order (``out`` may be g's or y's memory:
    the temporary is new, and only the last step writes into out)."""
    t = np.multiply(y, y)
    np.subtract(1, t, out=t)
    return np.multiply(g, t, out=out)


# how the fusion pass writes them (each step the same IEEE operation as numpy's)
_SIGMOID_FORMULA = "(one / (np.exp(-{0}) + one))"
_TANH_FORMULA = "np.tanh({0})"
_sigmoid_backward.formula = "(({0} * {1}) * (one - {1}))"
_tanh_backward.formula = "({0} * (one - {1} * {1}))"


class _Fusable:
    """A forward instruction's function with a ``formula`` for the fusion pass (only where it is exact)."""

    def __init__(self, fn, formula):
        self.fn, self.formula = fn, formula

    def __call__(self, a, out=...):
        return self.fn(a, out=out)


@functools.cache
def numba_matches(name: str, dtype_name: str) -> bool:
    """Whether numba's np.exp / np.tanh give numpy's numbers bit for bit for this dtype (a probe of
    values: small and large, both signs, overflow, inf and NaN). False without numba."""
    try:
        import numba
    except ImportError:
        return False
    dtype = np.dtype(dtype_name)
    ufunc = {"exp": np.exp, "tanh": np.tanh}[name]
    rng = np.random.default_rng(12345)
    probe = np.concatenate([rng.standard_normal(20000) * s for s in (1e-3, 0.5, 3, 20, 300)]
                           + [np.linspace(-100, 100, 20001), [0.0, -0.0, np.inf, -np.inf, np.nan, 710, -745, 89, -104]])
    probe = probe.astype(dtype)

    def each(a, o):
        for i in range(a.shape[0]):
            o[i] = ufunc(a[i])
    kernel = numba.njit(error_model="numpy")(each)
    got = np.empty_like(probe)
    kernel(probe, got)
    with np.errstate(all="ignore"):
        want = ufunc(probe)
    return bool(np.array_equal(got.view(f"u{dtype.itemsize}"), want.view(f"u{dtype.itemsize}")))


def _lower(op, b, args, forward, backward, formula, ufunc_name):
    if len(args) != 1:
        return None
    dtype = float_operands(b, op, args)
    if dtype is None or b.backend.name not in OUT_BACKENDS:
        return None  # other backends: the generic path (exact)
    x = args[0].value
    fn = _Fusable(forward, formula) if numba_matches(ufunc_name, dtype.name) else forward
    out = b.emit1(fn, (x,), op.out_shapes[0], dtype, op.name, ufunc=True)

    def emit_backward(grads):
        (g,) = grads
        return [b.emit1(backward, (g, out), b.slots[out].shape, dtype, f"{op.name}.backward", ufunc=True)]
    return (out,), emit_backward


@rule(Sigmoid)
def sigmoid(op, b, args, needs, wrap):
    """sigmoid(x) = 1 / (1 + exp(−x)); its gradient g · out · (1 − out) reads only the output."""
    return _lower(op, b, args, _sigmoid, _sigmoid_backward, _SIGMOID_FORMULA, "exp")


@rule(Tanh)
def tanh(op, b, args, needs, wrap):
    """tanh(x); its gradient g · (1 − out²) reads only the output."""
    return _lower(op, b, args, _tanh, _tanh_backward, _TANH_FORMULA, "tanh")


@rule(Split)
def split(op, b, args, needs, wrap):
    """Consecutive pieces along one axis, each a view of x (forward holds no copy); backward writes each
    piece's gradient into its place in one new array (zeros where a piece has none), as eager's cat does."""
    if len(args) != 3 or args[0].__class__ is not Ref or b.backend.name not in OUT_BACKENDS:
        return None
    x, axis, sizes = args[0].value, args[1], args[2]
    xs = b.slots[x]
    if not isinstance(xs.dtype, np.dtype) or xs.shape is None or type(axis) is not int:
        return None
    sizes = tuple(int(n) for n in sizes)
    if sum(sizes) != xs.shape[axis] or len(op.out_shapes) != len(sizes):
        return None
    head = (slice(None),) * axis
    cuts = []
    start = 0
    for n in sizes:
        cuts.append(head + (slice(start, start + n),))
        start += n
    return _views(op, b, x, tuple(cuts), "Split", extra_args=2)


@rule(Unbind)
def unbind(op, b, args, needs, wrap):
    """Every slice along one axis, each a view; backward stacks the gradients (zeros where one has none)."""
    if len(args) != 2 or args[0].__class__ is not Ref or type(args[1]) is not int or b.backend.name not in OUT_BACKENDS:
        return None
    x, axis = args[0].value, args[1]
    xs = b.slots[x]
    if not isinstance(xs.dtype, np.dtype) or xs.shape is None or not 0 <= axis < len(xs.shape):
        return None
    return _views(op, b, x, tuple((slice(None),) * axis + (i,) for i in range(xs.shape[axis])), "Unbind",
                  extra_args=1)


def _views(op, b, x, cuts, name, extra_args):
    """Split and Unbind: each output is the view ``x[cut]``; backward writes each piece's gradient into its
    place in one new array, zeros where a piece has none (as eager's cat and stack do)."""
    xs = b.slots[x]
    if len(op.out_shapes) != len(cuts):
        return None

    def forward(a):
        return [a[c] for c in cuts]
    outs = [b.slot(shape, xs.dtype, name) for shape in op.out_shapes]
    b.emit(forward, (x,), outs, f"{name} (views)", fresh=False, many=True)

    def emit_backward(grads):
        present = tuple(k for k, g in enumerate(grads) if g is not None)
        shape, dtype = xs.shape, xs.dtype

        def backward(*gs):
            out = np.zeros(shape, dtype) if len(present) < len(cuts) else np.empty(shape, dtype)
            for k, g in zip(present, gs):
                out[cuts[k]] = g
            return out
        grad = b.emit1(backward, tuple(grads[k] for k in present), shape, dtype, f"{name}.backward (into one array)")
        return [grad] + [None] * extra_args
    return tuple(outs), emit_backward


@rule(Stack)
def stack(op, b, args, needs, wrap):
    """Equal tensors of one float dtype joined along a new axis (numpy's stack); backward: views of g."""
    if len(args) < 2 or type(args[0]) is not int or b.backend.name not in OUT_BACKENDS:
        return None
    refs = args[1:]
    if not all(r.__class__ is Ref for r in refs):
        return None
    slots = [r.value for r in refs]
    shapes = {b.slots[s].shape for s in slots}
    dtypes = {b.slots[s].dtype for s in slots}
    if len(shapes) != 1 or len(dtypes) != 1:
        return None
    (shape,), (dtype,) = shapes, dtypes
    if not isinstance(dtype, np.dtype) or shape is None or op.dtypes[0] != dtype.name:
        return None
    axis = args[0] + len(shape) + 1 if args[0] < 0 else args[0]
    if not 0 <= axis <= len(shape):
        return None
    out = b.emit1(lambda *arrays: np.stack(arrays, axis), tuple(slots), op.out_shapes[0], dtype, "Stack")

    def emit_backward(grads):
        (g,) = grads
        cuts = tuple((slice(None),) * axis + (i,) for i in range(len(slots)))
        pieces = [b.slot(shape, dtype, "Stack.backward") for _ in slots]
        b.emit(lambda a: [a[c] for c in cuts], (g,), pieces, "Stack.backward (views)", fresh=False, many=True)
        return [None] + [p if n else None for p, n in zip(pieces, needs[1:])]
    return (out,), emit_backward

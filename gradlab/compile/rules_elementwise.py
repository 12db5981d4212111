"""Elementwise rules: + − × ÷ (two tensors, or a tensor and a Python number), ReLU and GELU as one
array instruction each, with no Tensor in between.

On numpy's arrays each instruction is a ufunc that also takes ``out=``, so the buffer pass runs a
chain of them in place (and rules_fuse, with numba, as one kernel). Add's gradient is the incoming
gradient itself: no instruction at all. GELU is the backend's fused kernel pair.
"""

from __future__ import annotations

import functools

import numpy as np

from ..jit.tape import Ref
from .generic import sum_to
from .kernels import numba_gelu32, numba_gelu_backward
from .passes import OUT_BACKENDS
from ..ops.activations import Gelu, Relu
from ..ops.arithmetic import Add, Div, Mul, Rsub, Sub

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def is_float(dtype) -> bool:
    """Whether a slot's dtype is numpy's float32 or float64 (not None: np.dtype(None) is float64, so
    ``None in FLOATS`` is True; not another library's dtype object)."""
    return isinstance(dtype, np.dtype) and dtype in FLOATS


def registrar(table: dict):
    """A ``@rule(FunctionClass, ...)`` decorator writing into ``table`` (each rules_*.py has its own;
    rules.py merges them into RULES, so that no rules file imports rules.py)."""
    def rule(*functions):
        def register(fn):
            for f in functions:
                table[f] = fn
            return fn
        return register
    return rule


RULES: dict = {}
rule = registrar(RULES)


def ufunc_of(b, numpy_ufunc, primitive):
    """(fn, flags) of an elementwise instruction: numpy's ufunc with ``out=`` where the arrays are numpy's
    (0-d results stay arrays: ``out=...``), else the backend's primitive."""
    if b.backend.name in OUT_BACKENDS:
        return functools.partial(numpy_ufunc, out=...), {"ufunc": True}
    return getattr(b.backend, primitive), {}


def float_operands(b, op, args):
    """The native dtype when every argument is a value of one float dtype, the op's own output; else None."""
    if not all(a.__class__ is Ref for a in args):
        return None
    dtypes = {b.slots[a.value].dtype for a in args}
    (dtype,) = dtypes if len(dtypes) == 1 else (None,)
    if not is_float(dtype) or op.dtypes[0] != dtype.name:
        return None
    return dtype


def fit(b, g, shape, name):
    """g summed back to ``shape`` where it was broadcast (no instruction when it already fits)."""
    if b.slots[g].shape == tuple(shape):
        return g
    return b.emit1(sum_to(b.backend, tuple(shape)), (g,), shape, b.slots[g].dtype, name)


class WithNumber:
    """``ufunc(a, number)`` as a one-input instruction (x * 2, x + 0.5): the Python number passed as it is,
    as eager passes it (numpy casts it to the array's dtype). ``formula`` is for the fusion pass."""

    def __init__(self, ufunc, number, formula):
        self.ufunc, self.number, self.formula = ufunc, number, formula

    def __call__(self, a, out=...):
        return self.ufunc(a, self.number, out=out)


_NUMBER_BACKWARD = {"add": None, "sub": None, "mul": np.multiply, "div": np.divide}  # ∂a = g (op) number


def _with_number(op, b, args, needs, numpy_ufunc, primitive):
    """a (op) number, for a float tensor a and a Python int or float: eager's own arithmetic, on arrays."""
    a, number = args
    if a.__class__ is not Ref or type(number) not in (int, float) or b.backend.name not in OUT_BACKENDS:
        return None
    dtype = b.slots[a.value].dtype
    if not is_float(dtype) or op.dtypes[0] != dtype.name:
        return None
    symbol = _SYMBOL[primitive]
    out = b.emit1(WithNumber(numpy_ufunc, number, "{} " + symbol + " {c}"), (a.value,), op.out_shapes[0], dtype,
                  op.name, ufunc=True)

    def emit_backward(grads):
        (g,) = grads
        scale = _NUMBER_BACKWARD[primitive]
        if not needs[0]:
            return [None, None]
        if scale is None:  # + and −: the gradient passes as it is
            return [g, None]
        return [b.emit1(WithNumber(scale, number, "{} " + symbol + " {c}"), (g,), b.slots[g].shape, dtype,
                        f"{op.name}.backward", ufunc=True), None]
    return (out,), emit_backward


_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/"}


def _binary(numpy_ufunc, primitive, backward):
    def lower(op, b, args, needs, wrap):
        if len(args) == 2 and args[0].__class__ is Ref and args[1].__class__ is not Ref:
            return _with_number(op, b, args, needs, numpy_ufunc, primitive)
        dtype = float_operands(b, op, args)
        if dtype is None:
            return None
        x, y = args[0].value, args[1].value
        fn, flags = ufunc_of(b, numpy_ufunc, primitive)
        out = b.emit1(fn, (x, y), op.out_shapes[0], dtype, op.name, **flags)

        def emit_backward(grads):
            (g,) = grads
            return backward(b, g, x, y, needs, op.name)
        return (out,), emit_backward
    return lower


def _add_backward(b, g, x, y, needs, name):
    return [fit(b, g, b.slots[s].shape, f"{name}.backward (sum to shape)") if n else None for s, n in zip((x, y), needs)]


def _sub_backward(b, g, x, y, needs, name):
    gx = fit(b, g, b.slots[x].shape, f"{name}.backward (sum to shape)") if needs[0] else None
    gy = None
    if needs[1]:
        fn, flags = ufunc_of(b, np.negative, "neg")
        gy = fit(b, b.emit1(fn, (g,), b.slots[g].shape, b.slots[g].dtype, "neg", **flags), b.slots[y].shape,
                 f"{name}.backward (sum to shape)")
    return [gx, gy]


def _mul_backward(b, g, x, y, needs, name):
    mul, flags = ufunc_of(b, np.multiply, "mul")
    out = []
    for this, other, n in ((x, y, needs[0]), (y, x, needs[1])):
        if not n:
            out.append(None)
            continue
        full = b.emit1(mul, (g, other), _broadcast(b, g, other), b.slots[g].dtype, f"{name}.backward", **flags)
        out.append(fit(b, full, b.slots[this].shape, f"{name}.backward (sum to shape)"))
    return out


def _div_backward(b, g, x, y, needs, name):
    """As eager: ∂a = g / b; ∂b = ((−g) · a) / (b · b) — the same operations in the same order."""
    div, flags = ufunc_of(b, np.divide, "div")
    mul, _ = ufunc_of(b, np.multiply, "mul")
    neg, _ = ufunc_of(b, np.negative, "neg")
    dtype = b.slots[g].dtype
    gx = gy = None
    if needs[0]:
        gx = fit(b, b.emit1(div, (g, y), _broadcast(b, g, y), dtype, f"{name}.backward", **flags), b.slots[x].shape,
                 f"{name}.backward (sum to shape)")
    if needs[1]:
        minus = b.emit1(neg, (g,), b.slots[g].shape, dtype, f"{name}.backward", **flags)
        top = b.emit1(mul, (minus, x), _broadcast(b, minus, x), dtype, f"{name}.backward", **flags)
        square = b.emit1(mul, (y, y), b.slots[y].shape, dtype, f"{name}.backward", **flags)
        gy = fit(b, b.emit1(div, (top, square), _broadcast(b, top, square), dtype, f"{name}.backward", **flags),
                 b.slots[y].shape, f"{name}.backward (sum to shape)")
    return [gx, gy]


def _broadcast(b, *slots):
    return tuple(np.broadcast_shapes(*(b.slots[s].shape for s in slots)))


rule(Add)(_binary(np.add, "add", _add_backward))
rule(Sub, Rsub)(_binary(np.subtract, "sub", _sub_backward))  # (1 - x is Rsub: PyTorch names its node apart)
rule(Mul)(_binary(np.multiply, "mul", _mul_backward))
rule(Div)(_binary(np.divide, "div", _div_backward))


def _relu_forward(a, out=...):
    return np.maximum(a, 0, out=out)


def _relu_backward(g, y, out=...):
    """g · (y > 0), as eager computes it (so inf · 0 is nan there and here)."""
    return np.multiply(g, np.greater(y, 0), out=out)


# how the fusion pass writes them (numpy's maximum keeps a NaN, and -0.0 against 0)
_relu_forward.formula = "({0} if ({0} >= zero or {0} != {0}) else zero)"
_relu_backward.formula = "({0} * (one if {1} > zero else zero))"


@rule(Relu)
def relu(op, b, args, needs, wrap):
    """relu(x) = max(x, 0); its gradient g · (out > 0) reads only the output."""
    dtype = float_operands(b, op, args)
    if dtype is None or b.backend.name not in OUT_BACKENDS:
        return None  # other backends: the generic path (exact) until a rule of theirs is written
    x = args[0].value
    forward, backward, flags = _relu_forward, _relu_backward, {"ufunc": True}
    out = b.emit1(forward, (x,), op.out_shapes[0], dtype, "Relu", **flags)

    def emit_backward(grads):
        (g,) = grads
        return [b.emit1(backward, (g, out), b.slots[out].shape, dtype, "Relu.backward", **flags)]
    return (out,), emit_backward


@rule(Gelu)
def gelu(op, b, args, needs, wrap):
    """gelu(x) = x · Φ(x), forward keeping Φ(x); backward g · (Φ(x) + x · φ(x))."""
    dtype = float_operands(b, op, args[:1])
    if dtype is None or args[1] not in ("none", "tanh"):
        return None
    x, approximate = args[0].value, args[1]
    kernels = b.backend  # (numba's parallel GELU fights BLAS's threads for 2 cores: the backend's own kernel)
    shape = op.out_shapes[0]
    saved = b.slot(None, None, "Φ(x) saved by Gelu")
    out = b.slot(shape, dtype, "Gelu")

    compiled = numba_gelu32() if approximate == "none" and dtype == np.float32 and b.backend.name == "numpy" else None

    def forward(a):
        if compiled is not None:  # numpy's float32 kernel, step for step, in one compiled loop
            flat = np.ascontiguousarray(a).reshape(-1)
            y, cdf = np.empty(flat.shape, dtype), np.empty(flat.shape, dtype)
            compiled(flat, y, cdf)
            return y.reshape(a.shape), (cdf.reshape(a.shape),)
        y, keep = kernels.gelu(a, approximate)
        return y, keep
    b.emit(forward, (x,), (out, saved), "Gelu", many=True)

    serial = numba_gelu_backward() if approximate == "none" and b.backend.name == "numpy" else None

    def backward(g, a, s):
        if serial is not None:  # one compiled pass instead of numpy's several (the same formula, as numba's backend)
            out = np.empty(a.shape, dtype)
            serial(np.ascontiguousarray(g).reshape(-1), np.ascontiguousarray(a).reshape(-1),
                   np.ascontiguousarray(s[0]).reshape(-1), out.reshape(-1))
            return out
        return kernels.gelu_backward(g, a, s, approximate)

    def emit_backward(grads):
        (g,) = grads
        return [b.emit1(backward, (g, x, saved), shape, dtype, "Gelu.backward")]
    return (out,), emit_backward

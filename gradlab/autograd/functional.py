"""Whole-function derivatives: ``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``hvp``, ``vhp``.

Each takes a function and its inputs, as ``torch.autograd.functional`` does, and is built on
``autograd.grad``. Reverse mode gives vector-Jacobian products directly; a Jacobian-vector product
comes from the "double-vjp" trick: ``u -> vjp(u)`` is linear in ``u``, so differentiating it with
respect to ``u`` along ``v`` gives ``J v``. Inputs and results are a Tensor or a tuple of Tensors,
following the structure of what was passed in and what the function returns.
"""

from __future__ import annotations

import numpy as np

from ..creation import zeros_like
from ..ops.shape import stack
from ..tensor import Tensor
from .engine import grad
from .grad_mode import enable_grad, grad_state, set_grad_enabled

__all__ = ["vjp", "jvp", "jacobian", "hessian", "hvp", "vhp"]


# --- the shared plumbing: tuples in, tuples out ---------------------------------------------------


def _as_tuple(value, what: str, fn_name: str):
    """(was it a tuple?, the tuple): a lone Tensor is wrapped, anything else is a clear TypeError."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, Tensor):
            if is_tuple:
                raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                                f"value at index {i} has type {type(item)}.")
            raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but the "
                            f"given {what} has type {type(item)}.")
    return is_tuple, items


def _unpack(result, is_tuple):
    """Undo the tuple wrapping: ``is_tuple`` is a flag, or (outer, inner) flags for nested results."""
    if isinstance(is_tuple, tuple):
        outer, inner = is_tuple
        if not inner:
            result = tuple(row[0] for row in result)
        return result if outer else result[0]
    return result if is_tuple else result[0]


def _prepare(inputs, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh tensors for the function to run on; under create_graph they stay linked to the originals."""
    if create_graph:
        return tuple(x.clone() if x.requires_grad else x.detach().requires_grad_(need_graph) for x in inputs)
    return tuple(x.detach().requires_grad_(need_graph) for x in inputs)


def _finish(tensors, create_graph: bool):
    """Results leave the function detached, unless the caller asked for a graph through them."""
    if create_graph:
        return tensors
    if isinstance(tensors, tuple):
        return tuple(_finish(t, False) for t in tensors)
    return tensors.detach()


def _check_v(v, others, is_others_tuple: bool) -> None:
    if len(v) != len(others):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(others)} but got {len(v)}.")
    for i, (v_i, other) in enumerate(zip(v, others)):
        if tuple(v_i.shape) != tuple(other.shape):
            where = f"Entry {i} in " if is_others_tuple else ""
            raise RuntimeError(f"{where}v has invalid size: should be {tuple(other.shape)} but got {tuple(v_i.shape)}.")


def _check_requires_grad(tensors, kind: str, strict: bool) -> None:
    """In strict mode, every output (or derivative) must depend on the inputs."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode.")
        if not t.requires_grad:
            raise RuntimeError({
                "outputs": f"Output {i} of the user-provided function does not require gradients. The outputs must "
                           "be computed in a differentiable manner from the input when running in strict mode.",
                "grad_inputs": f"The gradient with respect to input {i} is independent of the inputs of the "
                               "user-provided function. This is not allowed in strict mode.",
                "jacobian": f"While computing the hessian, found that the jacobian of the user-provided function "
                            f"with respect to input {i} is independent of the input. This is not allowed in strict "
                            "mode. You should ensure that your function is twice differentiable and that the "
                            "jacobian depends on the inputs (this would be violated by a linear function for example).",
                "hessian": f"The hessian of the user-provided function with respect to input {i} is independent of "
                           "the input. This is not allowed in strict mode. You should ensure that your function is "
                           "thrice differentiable and that the hessian depends on the inputs.",
            }[kind])


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None) -> tuple:
    """autograd.grad that skips outputs not requiring grad and returns None for unused inputs."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    kept = [(out, g) for out, g in zip(outputs, grad_outputs) if out is not None and out.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    return grad([out for out, _ in kept], inputs, [g for _, g in kept], retain_graph=retain_graph,
                create_graph=create_graph, allow_unused=True)


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                  "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                         "This is not allowed in strict mode as it prevents from using the double backward trick to "
                         "replace forward mode AD.",
}


def _zeros_for_none(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Unused inputs get zero gradients (or, in strict mode, an error naming the stage)."""
    result = []
    for i, (g, ref) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode when create_graph=True.")
        result.append(g)
    return tuple(result)


def _prepare_v(v, refs, is_refs_tuple, create_graph, fn_name, none_message):
    """Check ``v`` against the tensors it pairs with; None is allowed only for one single-element tensor."""
    if v is None:
        if len(refs) != 1 or refs[0].numel() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _as_tuple(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _check_v(v, refs, is_refs_tuple)
    return v


_V_FOR_OUTPUT = "The vector v can only be None if the user-provided function returns a single Tensor with a single element."
_V_FOR_INPUT = "The vector v can only be None if the input to the user-provided function is a single Tensor with a single element."


def _second_pass_mode(create_graph: bool):
    """The grad mode of the last backward: on when a graph is wanted, else what the caller had."""
    return set_grad_enabled(True if create_graph else grad_state.enabled)


# --- products with the Jacobian -------------------------------------------------------------------


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ J): the vector-Jacobian product at ``inputs``, one backward pass.

    ``v`` is shaped like the outputs (it may be None when func returns one single-element tensor);
    the product is shaped like the inputs.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, is_outputs_tuple, create_graph, "vjp", _V_FOR_OUTPUT)
    with _second_pass_mode(create_graph):
        products = _zeros_for_none(_grad(outputs, inputs, v, create_graph), inputs, strict, create_graph, "back")
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(products, create_graph), is_inputs_tuple))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-vjp trick.

    g(u) = uᵀ J is linear in u, so the vjp of g with respect to u, along v, is J v. ``v`` is
    shaped like the inputs (None when there is one single-element input); the product like the outputs.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "jvp", _V_FOR_INPUT)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # The vjp is linear in u, so u's value never matters: zeros are as good as anything finite.
        u = tuple(zeros_like(out, requires_grad=True) for out in outputs)
        u_transpose_j = _grad(outputs, inputs, u, create_graph=True)
        _check_requires_grad(u_transpose_j, "grad_inputs", strict)
    with _second_pass_mode(create_graph):
        products = _zeros_for_none(_grad(u_transpose_j, u, v, create_graph), outputs, strict, create_graph, "back_trick")
    return (_unpack(_finish(outputs, create_graph), is_outputs_tuple),
            _unpack(_finish(products, create_graph), is_outputs_tuple))


# --- whole Jacobians and Hessians ------------------------------------------------------------------


def _one_hot(like, flat_index: int):
    """A tensor shaped like ``like``: zero everywhere except a one at ``flat_index`` (row-major)."""
    e = zeros_like(like)
    e.device.backend.setitem(e.array, tuple(int(i) for i in np.unravel_index(flat_index, e.shape)), 1)
    return e


def _jacobian_reverse(outputs, inputs, create_graph, strict):
    """One backward pass per output element: row k of J is the vjp with the k-th one-hot vector."""
    jacobian = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        for k in range(out.numel()):
            seed = _one_hot(out, k)
            row = _grad((out,), inputs, (seed,), create_graph=create_graph, retain_graph=True)
            for j, (g, x) in enumerate(zip(row, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                           "This is not allowed in strict mode.")
                    g = zeros_like(x)
                elif strict and create_graph and not g.requires_grad:
                    raise RuntimeError(f"The jacobian of the user-provided function is independent of input {j}. "
                                       "This is not allowed in strict mode when create_graph=True.")
                rows[j].append(g)
        jacobian.append(tuple(_assemble(rows[j], out, x) for j, x in enumerate(inputs)))
    return tuple(jacobian)


def _jacobian_forward(func, inputs, outputs, create_graph, strict):
    """One jvp per input element: column k of J is J times the k-th one-hot vector."""
    columns = [[[] for _ in inputs] for _ in outputs]
    for j, x in enumerate(inputs):
        for k in range(x.numel()):
            v = tuple(_one_hot(y, k) if m == j else zeros_like(y) for m, y in enumerate(inputs))
            _, column = jvp(func, inputs, v, create_graph=create_graph, strict=strict)
            for i, c in enumerate(column if isinstance(column, tuple) else (column,)):
                columns[i][j].append(c)
    return tuple(
        tuple(_assemble(columns[i][j], out, x, by_column=True) for j, x in enumerate(inputs))
        for i, out in enumerate(outputs)
    )


def _assemble(pieces, out, x, by_column=False):
    """Stack the rows (or columns) of the block d out / d x into shape ``out.shape + x.shape``."""
    shape = tuple(out.shape) + tuple(x.shape)
    if not pieces:  # an empty output or input: nothing to stack
        return x.new_zeros(shape)
    if by_column:
        return stack([p.reshape(-1) for p in pieces], dim=1).reshape(shape)
    return stack(pieces, dim=0).reshape(shape)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: block (i, j) has shape ``outputs[i].shape + inputs[j].shape``.

    A single input and a single output give one Tensor; tuples give tuples (a tuple of tuples
    when both are tuples), as in PyTorch. "reverse-mode" runs one backward per output element,
    "forward-mode" one jvp per input element; ``vectorize`` is accepted for compatibility (gradlab
    always computes the rows one by one, with the same result).
    """
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError(f'jacobian: expected strategy to be either "forward-mode" or "reverse-mode", got {strategy!r}.')
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs = func(*inputs)
        is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jacobian")
        _check_requires_grad(outputs, "outputs", strict)
        if strategy == "forward-mode":
            blocks = _jacobian_forward(func, inputs, outputs, create_graph, strict)
        else:
            blocks = _jacobian_reverse(outputs, inputs, create_graph, strict)
        blocks = tuple(_finish(row, create_graph) for row in blocks)
    return _unpack(blocks, (is_outputs_tuple, is_inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The matrix of second derivatives of a scalar ``func``: the Jacobian of its gradient.

    One input gives a Tensor of shape ``inputs.shape + inputs.shape``; a tuple of inputs gives a
    tuple of tuples, block (i, j) holding d²f / dinputs[i] dinputs[j].
    """
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def scalar_func(*xs):
        out = func(*xs)
        is_out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if is_out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.reshape(())

    def gradient(*xs):
        g = jacobian(scalar_func, xs, create_graph=True)
        _check_requires_grad(g, "jacobian", strict)
        return g

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                      strategy=outer_jacobian_strategy)
    return _unpack(result, (is_inputs_tuple, is_inputs_tuple))


def _scalar_output(func, inputs, fn_name):
    outputs = func(*inputs)
    is_outputs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", fn_name)
    if is_outputs_tuple:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should contain a single element")
    return outputs


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ H): differentiate the gradient once more, along ``v`` (two backward passes)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "vhp", _V_FOR_INPUT)
        outputs = _scalar_output(func, inputs, "vhp")
        _check_requires_grad(outputs, "outputs", strict)
        gradient = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(gradient, "jacobian", strict)
    with _second_pass_mode(create_graph):
        products = _zeros_for_none(_grad(gradient, inputs, v, create_graph), inputs, strict, create_graph, "double_back")
    return _finish(outputs[0], create_graph), _unpack(_finish(products, create_graph), is_inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): the double-vjp trick applied to the gradient (vhp is cheaper; for smooth
    functions H is symmetric and both agree)."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, is_inputs_tuple, create_graph, "hvp", _V_FOR_INPUT)
        outputs = _scalar_output(func, inputs, "hvp")
        _check_requires_grad(outputs, "outputs", strict)
        gradient = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(gradient, "jacobian", strict)
        u = tuple(zeros_like(x, requires_grad=True) for x in inputs)
        u_transpose_h = _grad(gradient, inputs, u, create_graph=True)
        _check_requires_grad(u_transpose_h, "hessian", strict)
    with _second_pass_mode(create_graph):
        products = _zeros_for_none(_grad(u_transpose_h, u, v, create_graph), inputs, strict, create_graph,
                                   "double_back_trick")
    return _finish(outputs[0], create_graph), _unpack(_finish(products, create_graph), is_inputs_tuple)

"""Planning: a tape of one forward (and loss) becomes one program of forward *and* backward.

1. Which values need a gradient: those computed from a parameter (or input) that requires one.
2. Forward: each op is lowered by its rule (``rules.py``) or run as it is (``generic.py``).
3. Backward: the ops again, last to first. When an op's turn comes every use of its outputs has
   already sent its gradient, so the order is fixed here, once — the engine's ready-queue is not
   needed at run time. Two gradients for one value are added by an instruction planned here too.
4. Each leaf's ``.grad`` is added where its gradient is final, and (with an optimizer) the leaf moves.
5. Passes (``passes.py``): drop what nobody reads, reuse buffers by liveness, fuse elementwise chains.
"""

from __future__ import annotations

from ..dtypes import NATIVE_TO_DTYPE
from ..jit.entries import Ref, refs_in
from . import passes, rules
from .generic import GenericBackward, GenericForward, Live
from .program import Builder, Instr, Program


def plan(tape, backend, wrap, *, backward: bool = True, fuse: bool = True, buffers: bool = True,
         input_grad: bool = False, seed_input: bool = False, optimizer=None) -> Program:
    """Lower ``tape`` into a Program. With ``backward``, its output must be a scalar loss; the program
    then also adds the gradient of every leaf that requires one into its ``.grad`` (on MLX, whose
    program is a pure function, it returns them instead: results ``grad:<value id>``).

    A piece of a model (a segment) also gives its input's gradient (``input_grad``: result
    ``input_grad``) for the piece before it, and, unless it is the last, takes its output's gradient
    as a second input (``seed_input``) instead of starting from a scalar loss. With an ``optimizer``
    (one that moves each parameter on its own: ``Optimizer._update``), each parameter is moved by an
    instruction right after its ``.grad`` is final."""
    b = Builder(backend)
    slot_of: dict = {}  # tape value id -> slot
    inputs = []
    for vid in tape.inputs:
        v = tape.values[vid]
        slot_of[vid] = b.slot(v.shape, _native(v.dtype), v.name)
        inputs.append(slot_of[vid])
    externals = {}
    for vid, t in tape.externals.items():
        slot_of[vid] = b.slot(tuple(t.shape), _native(tape.values[vid].dtype), tape.values[vid].name)
        externals[slot_of[vid]] = t
    leaves = _leaves(tape) if backward else {}
    needs_grad = _needs_grad(tape, set(leaves) | (set(tape.inputs[:1]) if input_grad else set())) if backward else set()

    # --- forward ------------------------------------------------------------------------------------
    backwards = []  # (op, backward emitter or None), in tape order
    for op in tape.ops:
        refs = op.refs()
        needs = tuple(_needs(a, needs_grad) for a in op.args)
        rule = rules.RULES.get(op.function)
        start = len(b.instrs)
        lowered = rule(op, b, _slots(op.args, slot_of), needs, wrap) if rule is not None else None
        if lowered is None:
            del b.instrs[start:]  # (a rule that declined may have begun)
            lowered = _generic(op, b, slot_of, tape, needs, wrap)
        _mark(b.instrs[start:], op)
        outs, emit_backward = lowered
        for vid, slot in zip(op.outputs, outs):
            if vid is not None:
                slot_of[vid] = slot
        backwards.append((op, emit_backward if any(needs) and any(r in needs_grad for r in refs) else None))

    results = {}
    out_refs = list(refs_in(tape.output))
    if not backward:
        return _finish(b, inputs, externals, {f"out:{r}": slot_of[r] for r in out_refs}, fuse, buffers)

    (loss_vid,) = out_refs if len(out_refs) == 1 else (None,)
    loss = tape.values.get(loss_vid)
    if loss is None or (loss.shape != () and not seed_input):
        shape = "no tensor" if loss is None else f"shape {tuple(loss.shape)}"
        raise ValueError(f"compile.make_step: loss_fn must return a scalar (0-d) loss tensor, got {shape}; "
                         "reduce it first, e.g. .mean() or .sum()")
    results["loss"] = slot_of[loss_vid]

    # --- backward -----------------------------------------------------------------------------------
    b.phase = "backward"
    grad_of: dict = {}  # tape value id -> slot of its gradient so far
    if seed_input:
        grad_of[loss_vid] = b.like(slot_of[loss_vid], "∂L/∂output (from the next piece)")
        inputs.append(grad_of[loss_vid])
    elif loss_vid in needs_grad:
        grad_of[loss_vid] = b.constant(backend.ones((), NATIVE_TO_DTYPE[b.slots[slot_of[loss_vid]].dtype]),
                                       "seed ∂L/∂L = 1")
    for op, emit_backward in reversed(backwards):
        if emit_backward is None:
            continue
        grads_out = [grad_of.get(vid) if vid is not None else None for vid in op.outputs]
        if all(g is None for g in grads_out):
            continue  # no path from this op to the loss: dead for backward
        start = len(b.instrs)
        grads_in = emit_backward(grads_out)
        _mark(b.instrs[start:], op)
        for arg, g in zip(op.args, grads_in):
            if g is not None and arg.__class__ is Ref and arg.value in needs_grad:
                _add_gradient(b, grad_of, arg.value, g)
            elif g is not None and isinstance(arg, (tuple, list)):
                for vid, gi in zip(refs_in(arg), g):
                    if gi is not None and vid in needs_grad:
                        _add_gradient(b, grad_of, vid, gi)
    if backend.name == "mlx":  # mx.compile runs a pure function: the gradients come back as its results
        results.update({f"grad:{vid}": grad_of[vid] for vid in leaves if vid in grad_of})
    else:
        _accumulate_where_final(b, {leaf: grad_of[vid] for vid, leaf in leaves.items() if vid in grad_of}, optimizer)
    if input_grad:
        results["input_grad"] = grad_of.get(tape.inputs[0])
    return _finish(b, inputs, externals, results, fuse, buffers)


def _mark(instrs, op) -> None:
    """Each instruction remembers the tape op it came from (the listing and the lab show it)."""
    for ins in instrs:
        if ins.op is None:
            ins.op = op


def _accumulate_where_final(b, grads, optimizer=None) -> None:
    """``leaf.grad += g`` as an instruction right after the one that makes g final, as the engine's
    AccumulateGrad runs as soon as a leaf's gradient is complete: it need not be held to the end.
    Then, with an optimizer, the parameter's update: nothing later in the program reads it."""
    made_at = {o: n for n, ins in enumerate(b.instrs) for o in ins.outs}
    groups = {id(p): group for group in optimizer.param_groups for p in group["params"]} if optimizer else {}
    for leaf, g in sorted(grads.items(), key=lambda item: -made_at.get(item[1], -1)):
        at = made_at.get(g, len(b.instrs) - 1) + 1
        if id(leaf) in groups:
            b.instrs.insert(at, Instr(Update(optimizer, leaf, groups[id(leaf)]), (), (), f"{type(optimizer).__name__} "
                                      "update", pure=False, phase="update"))
        b.instrs.insert(at, Instr(Accumulate(leaf), (g,), (), "accumulate into .grad", pure=False, phase="backward"))


class Update:
    """One parameter's optimizer step (``Optimizer._update``), run as soon as its gradient is final."""

    def __init__(self, optimizer, param, group):
        self.optimizer, self.param, self.group = optimizer, param, group

    def __call__(self):
        self.optimizer._update(self.param, self.group)


class Accumulate:
    """Add a gradient into ``leaf.grad`` as backward does: the first is kept (copied unless the program
    made it for this alone: ``own``, set once buffers are assigned), later ones are added in place."""

    def __init__(self, leaf):
        self.leaf, self.own = leaf, False

    def __call__(self, g):
        leaf = self.leaf
        if leaf.grad is None:
            leaf.grad = leaf._wrap(g if self.own else leaf.device.backend.copy(g))
        else:
            leaf.grad.add_(leaf._wrap(g))


def _finish(b, inputs, externals, results, fuse, buffers) -> Program:
    program = Program(b, inputs, externals, results)
    passes.run_all(program, fuse=fuse, buffers=buffers)
    return program


def _generic(op, b, slot_of, tape, needs, wrap):
    args = _bind_template(op.args, tape)
    ins = [slot_of[r] for r in op.refs() if r not in tape.externals]
    ctx = b.slot(None, None, f"ctx of {op.name}")
    outs = [b.slot(s, _native(d), f"{op.name} out") if s is not None else b.slot(None, None, "")
            for s, d in zip(op.out_shapes, op.dtypes)]
    # pure (dropped when nobody reads it) unless it changes a tensor in place, draws random numbers, or runs
    # Tensor operations of its own (a user's Function may do anything)
    pure = op.function._forward_is_primitive and not op.inplace and not op.random
    b.emit(GenericForward(op, args, needs, wrap), ins, [ctx] + outs, op.name, op=op, pure=pure, fresh=False, many=True,
           holders=[ctx] + [outs[i] for i in op.views])  # ctx keeps what forward saved; a view keeps its base

    def emit_backward(grads_out):
        targets = [_target(a, tape) for a in op.args]
        wanted = [bool(n) for n in needs]
        results = [b.slot(t[0], t[1], f"∂L/∂ of {op.name} input") if w and t is not None else None
                   for w, t in zip(wanted, targets)]
        b.emit(GenericBackward(op, wanted, [t or (None, None) for t in targets], wrap), [ctx] + list(grads_out),
               [r if r is not None else b.slot(None, None, "") for r in results], f"{op.name}.backward", op=op,
               pure=True, fresh=False, many=True, aliases=range(1, 1 + len(grads_out)))  # a gradient may pass through
        return results

    return outs, emit_backward


def _bind_template(args, tape):
    """The op's arguments with each external tensor replaced by its live object (Refs stay Refs)."""
    out = []
    for a in args:
        if a.__class__ is Ref and a.value in tape.externals:
            out.append(Live(tape.externals[a.value]))
        elif isinstance(a, (tuple, list)) and not hasattr(a, "_fields"):
            out.append(type(a)(_bind_template(a, tape)))
        else:
            out.append(a)
    return out


def _target(a, tape):
    if a.__class__ is Ref:
        v = tape.values[a.value]
        t = tape.externals.get(a.value)
        return v.shape, (t.array.dtype if t is not None else _native(v.dtype))
    return None


def _native(name):
    import numpy as np

    try:
        return np.dtype(name)
    except TypeError:
        return None


def _add_gradient(b, grad_of, vid, g):
    """A second gradient for the same value is added to the first, by an instruction planned now."""
    old = grad_of.get(vid)
    if old is None:
        grad_of[vid] = g
    else:
        grad_of[vid] = b.emit1(b.backend.add, (old, g), b.slots[g].shape, b.slots[g].dtype, "add gradients")


def _leaves(tape) -> dict:
    """Tape values whose ``.grad`` backward fills: parameters and inputs that require grad."""
    leaves = {}
    for vid, t in tape.externals.items():
        if t.requires_grad and t.grad_fn is None:
            leaves[vid] = t
    return leaves


def _needs_grad(tape, leaves) -> set:
    needs = set(leaves)
    for op in tape.ops:
        if any(r in needs for r in op.refs()):
            for vid, dtype in zip(op.outputs, op.dtypes):
                if vid is not None and dtype in ("float16", "bfloat16", "float32", "float64", "complex64", "complex128"):
                    needs.add(vid)
    return needs


def _needs(a, needs_grad) -> bool:
    if a.__class__ is Ref:
        return a.value in needs_grad
    return False


def _slots(args, slot_of):
    return tuple(Ref(slot_of[a.value]) if a.__class__ is Ref else a for a in args)

""""Check this node" for a PyTorch node: its vector-Jacobian product against finite differences.

Where the forward is known — a recording kept the function and the inputs it got — the op is rerun
on float64 copies, exactly as for gradlab (``lab/finite_differences.py``), with torch's random state replayed
too. A graph drawn from a tensor has only the node: PyTorch keeps what its backward needs, not its
forward, so there is nothing to take finite differences of. What the node alone can show is that its
backward is linear in the gradient it receives, as every vector-Jacobian product is; the result says
that this is all it checked.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..capture import _forward_arg_names
from ..finite_differences import TOLERANCE, RandomStates, TensorProbe, result, verdict
from .backward_steps import node_vjp

MIXED = (1.7, -0.6)  # the linear check: vᵀJ for v = a·v₁ + b·v₂ must be a·(v₁ᵀJ) + b·(v₂ᵀJ)
LINEAR_TOLERANCE = {torch.float64: 1e-10, torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 1e-1}


def check_torch_node(node, call, seed: int, recorded: bool = False, together: tuple = ()) -> dict:
    """check_node's answer for a PyTorch node: finite differences where a recording kept its forward (``call``:
    (function, inputs) or (function, inputs, kwargs)); else what the node alone can show, and why only that.
    ``together`` labels the other nodes the same call made (F.linear makes T and Addmm): the call is checked
    whole, and the answer says so."""
    rng = np.random.default_rng(seed)
    if call is not None:
        states = TorchRandomStates()
        try:
            probe = TorchProbe(call, states)
            if probe.unrepeatable:
                return {"ok": None, "inputs": [], "tolerance": TOLERANCE, "random": True,
                        "message": f"{node.label}: its forward gives different outputs on the same inputs, even with "
                                   "torch's, numpy's and Python's random state replayed, so finite differences cannot "
                                   "check it. Check it with the randomness off (model.eval())"}
            answer = verdict(node.label, probe, probe.rows(rng))
            if together:
                name = getattr(call[0], "__name__", "the call")
                answer["message"] += (f" (checked as the whole call {name}, which made it together with "
                                      f"{', '.join(together)}: PyTorch keeps no forward of one node alone)")
            return answer
        finally:
            states.restore()
    return _linearity(node, rng, recorded)


def _linearity(node, rng, recorded: bool) -> dict:
    """The node called on two random gradients and on a mix of them: a backward must be linear in its gradient.
    ("inputs" stays empty: no finite difference was taken; "linearity" has each input's relative error.)"""
    ref = node.ref
    metadata = ref._input_metadata
    if not metadata or not any(child is not None for child, _ in ref.next_functions):
        return result(True, [], f"{node.label}: none of its inputs needs a gradient, so there is nothing to check")
    why = (f"{node.label}: a call the recording does not see made it (a custom Function's apply, or code run "
           "before the recording), so the recording has no forward of it to compare with finite differences"
           ) if recorded else (
           f"{node.label}: PyTorch's node keeps what its backward needs, not its forward or the inputs it got, so "
           "a graph drawn from a tensor cannot compare it with finite differences (record the forward, with "
           "gl.lab.record() as rec: loss = ..., to check it against them)")

    def random_gradients():
        return [torch.as_tensor(rng.standard_normal(tuple(m.shape))).to(dtype=m.dtype, device=m.device)
                for m in metadata]

    first, second = random_gradients(), random_gradients()
    a, b = MIXED
    try:
        with torch.no_grad():
            one, two = node_vjp(ref, first), node_vjp(ref, second)
            mixed = node_vjp(ref, [a * x + b * y for x, y in zip(first, second)])
    except RuntimeError as error:
        text = (str(error).strip().splitlines() or [""])[0]
        return {"ok": None, "inputs": [], "tolerance": TOLERANCE,
                "message": f"{why}. Calling the node failed, too: {type(error).__name__}: {text}"}
    rows = []
    for i, (g1, g2, gm) in enumerate(zip(one, two, mixed)):
        if g1 is None or g2 is None or gm is None:
            continue
        expected = (a * g1.double() + b * g2.double())
        error = float((gm.double() - expected).norm()) / max(1.0, float(expected.norm()))
        rows.append({"name": f"input {i}", "error": error, "tolerance": LINEAR_TOLERANCE.get(gm.dtype, 1e-4)})
    if not rows:
        return {"ok": None, "inputs": [], "tolerance": TOLERANCE, "message": f"{why}; it sent no gradient to check"}
    worst = max(rows, key=lambda row: row["error"] / row["tolerance"])
    if not math.isfinite(worst["error"]):
        return {"ok": None, "inputs": [], "linearity": rows, "tolerance": TOLERANCE,
                "message": f"{why}; its gradients hold NaN or inf here, so not even its linearity can be checked"}
    if worst["error"] > worst["tolerance"]:
        return {"ok": False, "inputs": [], "linearity": rows, "tolerance": TOLERANCE, "linear": False,
                "message": f"{node.label}: backward is NOT linear in the gradient g it receives (for {worst['name']}, "
                           f"relative error {worst['error']:.1e}), as a vector-Jacobian product must be: given "
                           f"{a:g}·g₁ {b:+g}·g₂ it must return {a:g} times its answer for g₁ {b:+g} times its "
                           "answer for g₂. The chain rule: return g times the local derivative"}
    return {"ok": None, "inputs": [], "linearity": rows, "tolerance": TOLERANCE, "linear": True,
            "message": f"{why}. What the node alone shows: its backward is linear in the gradient it receives, as a "
                       f"vector-Jacobian product must be (worst relative error {worst['error']:.1e}); that is all "
                       "this check can say"}


class TorchRandomStates(RandomStates):
    """gradlab's, numpy's and Python's random state, and torch's (dropout draws from it)."""

    def __init__(self):
        super().__init__()
        self.torch_state = torch.get_rng_state()

    def replay(self) -> None:
        super().replay()
        torch.set_rng_state(self.torch_state)

    restore = replay

    def moved(self) -> bool:
        return super().moved() or not torch.equal(torch.get_rng_state(), self.torch_state)


class TorchProbe(TensorProbe):
    """A recorded PyTorch op rerun on float64 copies of its inputs (torch's autograd gives the VJP)."""

    float64, no_grad, enable_grad = torch.float64, staticmethod(torch.no_grad), staticmethod(torch.enable_grad)
    grad = staticmethod(torch.autograd.grad)
    tensor_type = torch.Tensor

    def __init__(self, call, states):
        function, inputs, *rest = call
        self.kwargs = rest[0] if rest else {}
        super().__init__(function, list(inputs), states)

    def _names(self, count) -> list:
        """The forward's argument names where Python can read them (a custom Function's ``apply``), else numbers."""
        owner = getattr(self.function, "__self__", None)
        names = _forward_arg_names(owner) if isinstance(owner, type) and issubclass(owner, torch.autograd.Function) \
            else []
        return [names[i] if i < len(names) else f"input {i}" for i in range(count)]

    def _call(self, inputs):
        return self.function(*inputs, **self.kwargs)

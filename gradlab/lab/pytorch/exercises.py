"""Checked exercises of the lab on PyTorch (lab 13): node names, a ported Function, a ported model's weights.

Each check runs the learner's answer in PyTorch beside what PyTorch itself does (its graph, its own
layers, the same weights in gradlab) and, when it is off, names the usual slip of a port — a fused node
expected where there is none, a gradlab function called on torch tensors, a weight kept in gradlab's
(in, out) layout — never the answer.
"""

from __future__ import annotations

import copy
from collections import Counter

import numpy as np
import torch

from ..exercises import Verdict, check, check_name, not_done, not_done_yet
from ..summary import as_numpy
from .graph import reachable

LOSS_TOLERANCE = 1e-5  # relative: two float32 engines on the same weights agree to a few roundings of 2⁻²⁴


def node_name(node) -> str:
    """PyTorch's name of a backward node, as the lab prints it (``AccumulateGrad`` without its C++ namespace)."""
    return node.name().rsplit("::", 1)[-1]


def backward_node_names(t) -> list:
    """The name of every node ``t.backward()`` would run, root first (each node once)."""
    return [node_name(node) for node in reachable(t.grad_fn)] if t.grad_fn is not None else []


def check_torch_node_names(name: str, mine, of) -> Verdict:
    """``mine`` lists the names of the nodes backward runs from the torch tensor ``of`` (any order, each node
    once, ``AccumulateGrad`` once per leaf that requires grad); compared with PyTorch's own graph."""
    check_name("check_torch_node_names", name)
    if not_done(mine):
        return not_done_yet(name)
    if isinstance(mine, str) or not isinstance(mine, (list, tuple, set)) or not all(isinstance(n, str) for n in mine):
        return Verdict(name, "fail", "expected a list of node names, strings such as 'SumBackward0'")
    truth, yours = Counter(backward_node_names(of)), Counter(n.rsplit("::", 1)[-1] for n in mine)
    if yours == truth:
        return Verdict(name, "pass", f"exactly the {sum(truth.values())} nodes backward runs")
    return Verdict(name, "fail", _names_hint(yours, truth))


def _names_hint(yours: Counter, truth: Counter) -> str:
    for extra in yours - truth:
        if extra not in truth and any(n.startswith(extra) and n != extra for n in truth):
            return (f"{extra!r} is not a node's full name: PyTorch names it after the op, then 'Backward' and the "
                    "number of the op's variant, as in 'SumBackward0'")
        if extra == "AddmmBackward0" and "MmBackward0" in truth:
            return ("there is no AddmmBackward0 in this graph: PyTorch fuses the bias into the matrix product only "
                    "when you call the fused op (nn.Linear, F.linear, torch.addmm); written with @ and +, they are "
                    "two operations")
        if extra == "TBackward0":
            return "there is no TBackward0 in this graph: nothing on that line is transposed"
        if extra == "AccumulateGrad":
            return (f"you named AccumulateGrad {yours[extra]} times, backward runs {truth[extra]}: one per leaf "
                    "tensor that requires grad (a tensor without requires_grad gets none)")
        if extra not in truth:
            return f"there is no {extra} in this graph: look again at which operations that line calls"
    missing = truth - yours
    if "AccumulateGrad" in missing:
        return (f"you named AccumulateGrad {yours['AccumulateGrad']} times, backward runs {truth['AccumulateGrad']}: "
                "one per leaf tensor that requires grad")
    count = sum(missing.values())
    return (f"{'a node is' if count == 1 else f'{count} nodes are'} missing: every operation on a tensor that needs a "
            "gradient makes one node, the last one (the result's) included")


def check_torch_function(name: str, mine, reference, *inputs) -> Verdict:
    """``mine`` is a ``torch.autograd.Function`` (or its ``apply``); on float64 copies of ``inputs`` its output
    and its gradients are compared with ``reference``'s (a torch function), then torch.autograd.gradcheck
    tests its backward against finite differences."""
    check_name("check_torch_function", name)
    if not_done(mine):
        return not_done_yet(name)
    apply = getattr(mine, "apply", mine)
    ours = [_probe(x) for x in inputs]
    theirs = [_probe(x) for x in inputs]
    try:
        got = apply(*ours)
    except Exception as error:  # the learner's forward: its failure is the verdict
        return Verdict(name, "fail", _raised("forward", error))
    if not_done(got):
        return not_done_yet(name)
    if not isinstance(got, torch.Tensor):
        return Verdict(name, "fail", f"forward returned a {type(got).__name__}: it should return a torch tensor")
    want = reference(*theirs)
    values = check(name, got.detach(), want.detach())
    if not values.passed:
        return Verdict(name, "fail", f"forward's output is off: {values.message}", values.error)
    if got.grad_fn is None:
        return Verdict(name, "fail", "the output has no grad_fn: call your Function through its apply, "
                                     "TorchLeakyReLU.apply(x, slope), so that PyTorch records it")
    wrt = [x for x in ours if isinstance(x, torch.Tensor) and x.requires_grad]
    direction = torch.linspace(-1.0, 1.0, got.numel(), dtype=got.dtype).reshape(got.shape)
    try:
        grads = torch.autograd.grad(got, wrt, direction, allow_unused=True)
    except Exception as error:  # the learner's backward
        return Verdict(name, "fail", _raised("backward", error))
    true_grads = torch.autograd.grad(want, [x for x in theirs if isinstance(x, torch.Tensor) and x.requires_grad],
                                     direction)
    for i, (g, t) in enumerate(zip(grads, true_grads)):
        if g is None:
            return Verdict(name, "fail", f"the values are right, but backward gave no gradient for input {i}: does it "
                                         "return the gradient first, then None for the slope?")
        verdict = check(f"{name} (gradient)", g, t)
        if not verdict.passed:
            return Verdict(name, "fail", f"the values are right, the gradient is not: {verdict.message}", verdict.error)
    if not torch.autograd.gradcheck(apply, tuple(_probe(x) for x in inputs), raise_exception=False):
        return Verdict(name, "fail", "the gradient matches at these inputs but not torch.autograd.gradcheck's finite "
                                     "differences")
    return Verdict(name, "pass", f"{values.message}, the gradients too, and torch.autograd.gradcheck agrees")


def _probe(x):
    """A float64 copy of a tensor input that requires grad (what a gradient check wants); anything else as is."""
    if isinstance(x, torch.Tensor):
        return x.detach().to(torch.float64).requires_grad_(x.requires_grad or x.is_floating_point())
    return x


def _raised(where: str, error: Exception) -> str:
    text = f"your {where} raised {type(error).__name__}: {error}"
    if _from_gradlab(error):
        return (f"{text} — a gradlab function met a torch tensor: inside a torch.autograd.Function, use torch's "
                "functions (torch.<name> for gl.<name>); gradlab's take only gradlab tensors")
    return text


def _from_gradlab(error: Exception) -> bool:
    """Whether the error was raised inside gradlab's engine (not in the learner's code or in torch)."""
    tb = error.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        if module.startswith("gradlab.") and not module.startswith("gradlab.lab"):
            return True
        tb = tb.tb_next
    return False


def check_wrong_parameter(name: str, answer, gl_model, torch_model) -> Verdict:
    """``answer`` names the parameter of ``torch_model`` that was ported wrong from ``gl_model`` (the two have
    the same parameter names): the one whose values are not gradlab's."""
    check_name("check_wrong_parameter", name)
    if not_done(answer):
        return not_done_yet(name)
    ours = dict(gl_model.named_parameters())
    theirs = dict(torch_model.named_parameters())
    wrong = [k for k, p in theirs.items() if not np.array_equal(as_numpy(p), as_numpy(ours[k]))]
    if not isinstance(answer, str):
        return Verdict(name, "fail", f"expected a parameter's name, a string such as '1.bias', got a "
                                     f"{type(answer).__name__}")
    if answer in wrong:
        return Verdict(name, "pass", f"{answer} holds other numbers than gradlab's; every other parameter is gradlab's "
                                     "to the last bit")
    modules = {k.rsplit(".", 1)[0] for k in wrong}
    if answer in modules:
        return Verdict(name, "fail", f"module {answer} is the one, right: now which of its parameters?")
    if answer not in theirs:
        return Verdict(name, "fail", f"the model has no parameter {answer!r}; its parameters are "
                                     f"{', '.join(theirs)}")
    return Verdict(name, "fail", f"{answer} holds gradlab's numbers, to the last bit: its gradient differs because "
                                 "a wrong number elsewhere changes what reaches it. Look for the first module, in "
                                 "forward's order, whose output differs")


def check_ported_weights(name: str, state, torch_model, gl_loss_fn, gl_weights, x, y) -> Verdict:
    """``state`` is a ``{name: torch tensor}`` for ``torch_model.load_state_dict`` that gives its ``nn.Linear``
    layers the gradlab weights ``gl_weights`` (a list of gradlab tensors, used as ``x @ W + b``); passes when
    the torch model's cross-entropy on (x, y) matches ``gl_loss_fn(x, y)``'s to float32 rounding."""
    check_name("check_ported_weights", name)
    if not_done(state):
        return not_done_yet(name)
    if not isinstance(state, dict):
        return Verdict(name, "fail", f"expected a dict of parameter name -> torch tensor, got a {type(state).__name__}")
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            return Verdict(name, "fail", f"{key!r} is a {type(value).__module__}.{type(value).__name__}: a torch model "
                                         "takes torch tensors (torch.from_numpy(t.numpy()) makes one of a gradlab "
                                         "tensor, sharing its memory)")
    model = copy.deepcopy(torch_model)
    expected = dict(model.state_dict())
    for key, value in state.items():
        if key in expected and tuple(value.shape) != tuple(expected[key].shape):
            flipped = tuple(value.shape) == tuple(expected[key].shape)[::-1]
            return Verdict(name, "fail", f"{key!r} has shape {tuple(value.shape)}, the model's {tuple(expected[key].shape)}"
                           + (": nn.Linear keeps its weight as (out_features, in_features)" if flipped else ""))
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        return Verdict(name, "fail", f"load_state_dict refused it: {str(error).splitlines()[-1].strip()}")
    for key, value in model.state_dict().items():
        hint = _layout_hint(key, as_numpy(value), [as_numpy(w) for w in gl_weights])
        if hint:
            return Verdict(name, "fail", hint)
    with torch.no_grad():
        theirs = torch.nn.functional.cross_entropy(model(_torch(x)), _torch(y)).item()
    ours = float(gl_loss_fn(x, y).item())
    error = abs(theirs - ours) / max(abs(ours), 1e-30)
    if error > LOSS_TOLERANCE:
        return Verdict(name, "fail", f"the losses differ: gradlab {ours:.6f}, torch {theirs:.6f}", error)
    return Verdict(name, "pass", f"the same loss in both engines, {ours:.6f} (relative difference {error:.0e}, "
                                 "float32 rounding)", error)


def _layout_hint(key: str, value: np.ndarray, weights: list) -> str | None:
    """What a parameter holds if it is not one of the gradlab weights (used as x @ W + b) in nn.Linear's layout."""
    if value.ndim == 1 and any(w.shape == value.shape and np.array_equal(w, value) for w in weights):
        return None
    if value.ndim == 2 and any(w.shape == value.shape[::-1] and np.array_equal(w.T, value) for w in weights):
        return None
    if value.ndim == 2 and any(w.shape == value.shape and np.array_equal(w, value) for w in weights):
        return (f"{key!r} holds a gradlab weight as gradlab's x @ W uses it, (in, out): nn.Linear computes "
                "x @ weight.T, so its weight is (out, in)")
    return f"{key!r} holds none of the gradlab weights: was it left as torch initialised it?"


def _torch(t):
    return t if isinstance(t, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(as_numpy(t)))

"""Checked exercises about backward as an algorithm: an order of the graph, a prediction, dual numbers, a mode.

These answers are not gradients but facts about how gradients are computed: a topological order of a
graph's nodes, what ``.grad`` holds after two backward calls, a forward-mode ``Dual`` number's rules,
and which mode (forward or reverse) builds a Jacobian in fewer passes. Each check returns a ``Verdict``
(exercises.py) whose hint names the mistake — a node twice, a node before its input, a product rule with
one term — and never the answer.
"""

from __future__ import annotations

import math
from collections import Counter

from ..autograd.function import TrackedTensor
from ..scalar import Scalar
from ..autograd.functional import jvp
from ..creation import tensor
from ..dtypes import float64
from .exercises import Verdict, check, not_done, not_done_yet


# --- a topological order ----------------------------------------------------------------------------

def _graph(output):
    """(the nodes reachable from ``output``, node -> its inputs): engine nodes for a tensor, Scalars for a Scalar."""
    if isinstance(output, Scalar):
        start, inputs_of = output, lambda node: [p for p in node.parents]
    else:
        start = output.grad_fn if isinstance(output, TrackedTensor) else output
        if start is None or not hasattr(start, "next_functions"):
            raise ValueError("check_topological_order: give the output of a graph (a tensor with a grad_fn, its "
                             f"grad_fn, or a Scalar), got {type(output).__name__}")
        inputs_of = lambda node: [child for child, _ in node.next_functions if child is not None]  # noqa: E731
    inputs, stack = {start: inputs_of(start)}, [start]
    while stack:
        for child in inputs[stack.pop()]:
            if child not in inputs:
                inputs[child] = inputs_of(child)
                stack.append(child)
    return inputs


def _label(node) -> str:
    if isinstance(node, Scalar):
        return node.label or (node.op and f"the {node.op} Scalar") or f"Scalar({node.data:g})"
    name = node.name()
    if name == "AccumulateGrad":
        return f"AccumulateGrad (of a {'×'.join(map(str, node.variable.shape)) or 'scalar'} leaf)"
    return name


def check_topological_order(name: str, order, output) -> Verdict:
    """Pass when ``order`` lists every node of ``output``'s graph once, each after all of its inputs.

    For a tensor the nodes are the engine's (``loss.grad_fn`` and, along ``next_functions``, every node
    down to the leaves' ``AccumulateGrad``); for a Scalar they are the Scalars (inputs: ``.parents``).
    Any valid order passes: a graph with fan-out has many. Backward runs such an order reversed."""
    if not_done(order):
        return not_done_yet(name)
    inputs = _graph(output)
    try:
        order = list(order)
    except TypeError:
        return Verdict(name, "fail", f"expected a list of nodes, got a {type(order).__name__}")
    if any(not_done(node) for node in order):
        return not_done_yet(name)
    if any(isinstance(node, TrackedTensor) for node in order):
        return Verdict(name, "fail", "your list holds tensors; the graph's nodes are their grad_fn (and the leaves' "
                                     "AccumulateGrad nodes, which you reach through next_functions)")
    strangers = [node for node in order if node not in inputs]
    if strangers:
        return Verdict(name, "fail", f"{len(strangers)} of your items are not nodes of this graph (the first is a "
                                     f"{type(strangers[0]).__name__}): start from the output and follow the edges")
    twice = [(node, n) for node, n in Counter(order).items() if n > 1]
    if twice:  # name a node that fans out (two consumers): the nodes below it are repeated only because it is
        consumers = Counter(child for node in inputs for child in inputs[node])
        node, n = max(twice, key=lambda pair: consumers[pair[0]] > 1)
        return Verdict(name, "fail", f"{_label(node)} is in your list {n} times: a node reached along two paths "
                                     "(a fan-out) goes in once — remember which nodes you have visited")
    missing = [node for node in inputs if node not in set(order)]
    if missing:
        kinds = Counter(_label(node).split(" (")[0] for node in missing)
        listed = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in kinds.items())
        where = (" — the leaves' AccumulateGrad nodes: follow next_functions all the way down"
                 if set(kinds) == {"AccumulateGrad"} else ": follow every edge, each input of each node")
        return Verdict(name, "fail", f"{len(missing)} of the {len(inputs)} nodes are missing ({listed}){where}")
    position = {node: i for i, node in enumerate(order)}
    late = [(node, child) for node in order for child in inputs[node] if position[child] > position[node]]
    if not late:
        return Verdict(name, "pass", f"all {len(order)} nodes, each after its inputs")
    if all(position[child] > position[node] for node in order for child in inputs[node]):
        return Verdict(name, "fail", "every node comes before its inputs: that is the order backward runs in, "
                                     "from the output down. This asks for forward's order, each node after its inputs")
    node, child = late[0]
    return Verdict(name, "fail", f"{_label(node)} comes before its input {_label(child)}: a node may go into the "
                                 "list only once all its inputs are in it (walking level by level from the output "
                                 "gets this wrong where two paths of different lengths meet)")


# --- a prediction, with the mistakes it is likely to be ------------------------------------------------

def check_prediction(name: str, mine, expected, mistakes: dict | None = None) -> Verdict:
    """``check``, with the hints of known mistakes: ``mistakes`` maps a hint to the value that mistake gives.

    A prediction equal to one of those values fails with that hint (the lab writes it: "the value one
    backward leaves: .grad is added into, never overwritten"); any other wrong value gets check's hints."""
    if not_done(mine):
        return not_done_yet(name)
    verdict = check(name, mine, expected)
    if verdict.passed or verdict.status != "fail":
        return verdict
    for hint, value in (mistakes or {}).items():
        if check(name, mine, value).passed:
            return Verdict(name, "fail", hint, verdict.error)
    return verdict


# --- forward mode with dual numbers --------------------------------------------------------------------

# operation -> probes: (what is computed, as text and as a function of duals or tensors, the inputs' (value, tangent))
PROBES = {
    "__mul__": [("a * b", lambda a, b: a * b, [(2.0, 1.0), (-3.0, 0.5)]),
                ("a * 4.0", lambda a: a * 4.0, [(2.0, 1.5)])],
    "tanh": [("a.tanh()", lambda a: a.tanh(), [(0.7, 1.5)])],
}


def _engine_jvp(run, args) -> tuple:
    """(value, tangent) of ``run`` at the probe's values along its tangents: the engine's jvp, in float64."""
    values = tuple(tensor(value, dtype=float64) for value, _ in args)
    tangents = tuple(tensor(tangent, dtype=float64) for _, tangent in args)
    out, product = jvp(run, values, tangents)
    return out.item(), product.item()


def _dual_text(pair) -> str:
    return f"({pair[0]:g} + {pair[1]:g}ε)"


def check_dual(name: str, dual, operations=("__mul__", "tanh")) -> Verdict:
    """Check the learner's ``Dual`` class: ``Dual(value, tangent)`` with attributes ``value`` and ``tangent``.

    Each operation named (``"__mul__"``, ``"tanh"``) is run on a few dual numbers and its value and
    tangent compared with the engine's ``jvp`` of the same operation on tensors; the hint names the operation, the inputs and
    what is off (a product rule with one term, the chain rule's factor forgotten), never the rule itself.
    An operation whose body is still ``...`` (it returns None) is not done yet."""
    if not_done(dual):
        return not_done_yet(name)
    if not isinstance(dual, type):
        return Verdict(name, "fail", f"give the class itself (Dual), not a {type(dual).__name__}")
    unknown = [op for op in operations if op not in PROBES]
    if unknown:
        raise ValueError(f"check_dual({name!r}): no probes for {unknown}; operations are among {sorted(PROBES)}")
    checked = 0
    for op in operations:
        for text, run, args in PROBES[op]:
            value, tangent = _engine_jvp(run, args)
            duals = [dual(*pair) for pair in args]
            shown = text.replace("a", _dual_text(args[0]), 1).replace("b", _dual_text(args[-1]), 1)
            try:
                got = run(*duals)
            except Exception as error:  # the learner's code: its failure is the verdict
                return Verdict(name, "fail", f"{shown} raised {type(error).__name__}: {error}")
            if not_done(got) or got is NotImplemented:
                return not_done_yet(name)
            if not isinstance(got, dual):
                return Verdict(name, "fail", f"{shown} should give a {dual.__name__}, got a {type(got).__name__}")
            mine = (float(got.value), float(got.tangent))
            if not _close(mine[0], value):
                return Verdict(name, "fail", f"{op}: the value part of {shown} is {mine[0]:.6g}, it should be "
                                             f"{value:.6g} — the value is computed as for plain numbers")
            if not _close(mine[1], tangent):
                return Verdict(name, "fail", f"{op}: the tangent of {shown} is {mine[1]:.6g}, the engine's jvp "
                                             f"says {tangent:.6g}. " + _tangent_hint(op, args, mine[1]))
            checked += 1
    return Verdict(name, "pass", f"the value and tangent of all {checked} probes agree with the rules "
                                 f"({', '.join(operations)})")


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(b))


def _tangent_hint(op: str, args, got: float) -> str:
    """What a wrong tangent most likely forgot (the probes are chosen so that each mistake gives its own number)."""
    (a, da), *rest = args
    if op == "__mul__" and rest:
        (b, db) = rest[0]
        if _close(got, da * db):
            return "You multiplied the two tangents: ε² = 0, so that term vanishes; which terms keep one ε?"
        if _close(got, da * b) or _close(got, a * db):
            return "Only one of the two terms: each factor's change moves the product"
    if op == "tanh":
        t = math.tanh(a)
        if _close(got, 1 - t * t) or _close(got, 1 - t):
            return "The chain rule: the slope of tanh is multiplied by how fast its input moves (its tangent)"
        if _close(got, da * (1 - t)) or _close(got, da * t):
            return "The chain rule's factor is there; the slope of tanh at the value is not (what is d tanh/dx?)"
    return "Write a + a'ε and b + b'ε, multiply or apply the function, and keep the terms in ε once"


# --- which mode builds a Jacobian in fewer passes ------------------------------------------------------

def _mode(answer):
    if isinstance(answer, str):
        word = answer.strip().lower()
        for mode in ("forward", "reverse"):
            if word.startswith(mode):
                return mode
        if word in ("jvp", "vjp"):
            return {"jvp": "forward", "vjp": "reverse"}[word]
    return None


def check_cheaper_mode(name: str, mine: dict) -> Verdict:
    """``mine`` maps shapes ``(n, m)`` of functions R^n → R^m to "forward" or "reverse": the mode that gets
    the whole m × n Jacobian in fewer passes. Forward mode gives one column per pass (n passes), reverse
    one row (m passes); a shape with n == m is not asked. The hint names the shapes answered wrong."""
    if not_done(mine):
        return not_done_yet(name)
    if not isinstance(mine, dict):
        return Verdict(name, "fail", "expected a dict of (n, m) -> 'forward' or 'reverse', got a "
                                     f"{type(mine).__name__}")
    if any(not_done(answer) for answer in mine.values()):
        return not_done_yet(name)
    truth, wrong = {}, []
    for shape, answer in mine.items():
        if not (isinstance(shape, tuple) and len(shape) == 2 and all(isinstance(s, int) and s > 0 for s in shape)):
            raise ValueError(f"check_cheaper_mode({name!r}): each key is a shape (n, m) of positive whole numbers, "
                             f"got {shape!r}")
        n, m = shape
        if n == m:
            raise ValueError(f"check_cheaper_mode({name!r}): for n == m ({shape}) both modes take as many passes")
        mode = _mode(answer)
        if mode is None:
            return Verdict(name, "fail", f"for {shape} answer 'forward' or 'reverse', not {answer!r}")
        truth[shape] = "forward" if n < m else "reverse"
        if mode != truth[shape]:
            wrong.append(shape)
    if not wrong:
        return Verdict(name, "pass", f"all {len(mine)} right: the mode whose pass count is the smaller of n and m")
    if len(wrong) == len(mine) and len(mine) > 1:
        return Verdict(name, "fail", "every answer is swapped: one forward pass pushes one input direction through "
                                     "(a column of the Jacobian), one reverse pass pulls back one output (a row)")
    shown = ", ".join(f"R^{n} → R^{m}" for n, m in wrong)
    return Verdict(name, "fail", f"{len(wrong)} of {len(mine)} wrong ({shown}): count for each mode how many passes "
                                 "the whole Jacobian takes — how many columns has it, how many rows?")

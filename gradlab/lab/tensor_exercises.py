"""Checked exercises about a tensor's layout: shapes, strides, views, and a function tried on many shapes.

These answers are not gradients but facts about memory: the strides of a transposed tensor, whether
a tensor is a view that shares its base's memory, the shape a broadcast gives. Each check returns a
``Verdict`` (exercises.py) whose hint names the mistake — shapes lined up from the left, strides
left unswapped, a copy where a view was asked — and never the answer.
"""

from __future__ import annotations

import numpy as np

from ..autograd.function import TrackedTensor
from .exercises import Verdict, check, check_function, not_done, not_done_yet
from .summary import shape_text


def check_strides(name: str, mine, of) -> Verdict:
    """Compare the learner's strides (a tuple of whole numbers, in elements) with ``of.stride()``."""
    if not_done(mine):
        return not_done_yet(name)
    truth = tuple(of.stride())
    answer = _whole_numbers(mine)
    if answer is None:
        return Verdict(name, "fail", f"expected a tuple of whole numbers, one per dimension, got {mine!r}")
    if answer == truth:
        return Verdict(name, "pass", "exact")
    if len(answer) != len(truth):
        return Verdict(name, "fail", f"the tensor has {len(truth)} dimensions, so it has {len(truth)} strides; "
                                     f"yours has {len(answer)}")
    itemsize = of.element_size()
    if itemsize > 1 and tuple(s * itemsize for s in truth) == answer:
        return Verdict(name, "fail", f"counted in bytes? A stride counts elements, not bytes (one element here is "
                                     f"{itemsize} bytes)")
    if answer == _contiguous_strides(tuple(of.shape)) and not of.is_contiguous():
        return Verdict(name, "fail", "those are the strides of a fresh, contiguous tensor of this shape; this one "
                                     "is not contiguous: it reads the memory of the tensor it came from in another "
                                     "order, and a transpose or permute moves no data")
    if sorted(answer) == sorted(truth):
        return Verdict(name, "fail", "the right numbers in the wrong order: a transpose swaps the strides of the "
                                     "dimensions it swaps — which dimension of the original does each one read along?")
    off = [i for i, (a, t) in enumerate(zip(answer, truth)) if a != t]
    return Verdict(name, "fail", f"the stride of dimension {', '.join(map(str, off))} is off: how many elements "
                                 f"apart in memory are two neighbours along {'it' if len(off) == 1 else 'each'}?")


def check_view(name: str, mine, of, values=None) -> Verdict:
    """Pass when ``mine`` shares memory with ``of`` (it is a view of it, not a copy) and, where ``values``
    is given, holds those values. Compares memory on the CPU."""
    if not_done(mine):
        return not_done_yet(name)
    if not isinstance(mine, TrackedTensor):
        return Verdict(name, "fail", f"expected a tensor, got a {type(mine).__name__}")
    for what, t in (("your tensor", mine), ("the tensor it should be a view of", of)):
        if t.device.type != "cpu":
            raise ValueError(f"check_view({name!r}): {what} is on {t.device}; memory is compared on the CPU only")
    if values is not None:
        verdict = check(name, mine, values)  # (a wrong shape or wrong values get check's own hints)
        if not verdict.passed:
            return verdict
    if not np.shares_memory(mine.detach().numpy(), of.detach().numpy()):
        return Verdict(name, "fail", "the values are right but it is a copy: it shares no memory with the tensor, "
                                     "so a write into it would not show there. Slicing, view, transpose and "
                                     "unsqueeze make views; indexing with a list or a tensor, clone() and "
                                     "arithmetic make copies")
    return Verdict(name, "pass", "a view: it shares memory with the tensor" + (", and its values are right"
                                                                               if values is not None else ""))


def check_broadcast_shape(name: str, mine, *shapes) -> Verdict:
    """Compare the learner's prediction with the shape that broadcasting ``shapes`` together gives."""
    if not_done(mine):
        return not_done_yet(name)
    shapes = [tuple(s) for s in shapes]
    truth = _broadcast(shapes, from_right=True)
    if truth is None:
        raise ValueError(f"check_broadcast_shape({name!r}): the shapes {', '.join(map(shape_text, shapes))} do not "
                         "broadcast together; give shapes that do")
    answer = _whole_numbers(mine)
    if answer is None:
        return Verdict(name, "fail", f"expected a shape, a tuple of whole numbers such as (2, 3), got {mine!r}")
    if answer == truth:
        return Verdict(name, "pass", "exact")
    if answer == _broadcast(shapes, from_right=False):
        return Verdict(name, "fail", "you lined the shapes up from the left; broadcasting lines them up from the "
                                     "right (last dimensions first) and pads the shorter shape with 1s in front")
    if len(answer) != len(truth):
        return Verdict(name, "fail", f"the result has as many dimensions as the longest shape, {len(truth)}; "
                                     f"yours has {len(answer)}")
    if answer in shapes:
        return Verdict(name, "fail", "that is one of the inputs' shapes; the result takes, dimension by dimension, "
                                     "the size that is not 1")
    off = [i for i, (a, t) in enumerate(zip(answer, truth)) if a != t]
    kept_one = [i for i in off if answer[i] == 1]
    if kept_one:
        return Verdict(name, "fail", f"at dimension {kept_one[0]} you kept a size 1; a dimension of size 1 "
                                     "stretches to the other shape's size there")
    return Verdict(name, "fail", f"dimension {off[0]} is off: which sizes meet there, counting from the right?")


def check_function_cases(name: str, mine, reference, cases, *, tolerance: float | None = None) -> Verdict:
    """``check_function`` on several inputs: ``cases`` is a list of argument tuples. Passes when every case
    does; otherwise the first that fails is named by its inputs' shapes, with its hint."""
    if not_done(mine):
        return not_done_yet(name)
    worst, exact = 0.0, True
    for number, case in enumerate(cases, 1):
        verdict = check_function(name, mine, reference, *case, tolerance=tolerance)
        if verdict.status == "not done":
            return verdict
        if not verdict.passed:
            return Verdict(name, "fail", f"case {number} of {len(cases)}, called with {_describe(case)}: {verdict.message}",
                           verdict.error)
        exact = exact and verdict.message == "exact"
        worst = max(worst, verdict.error or 0.0)
    how = "exact" if exact else f"approximately (largest relative error {worst:.1e})"
    return Verdict(name, "pass", f"{how} on all {len(cases)} cases", worst)


# --- helpers -------------------------------------------------------------------------------------------

def _whole_numbers(value) -> tuple | None:
    """``value`` as a tuple of ints (a tuple, list or gradlab.Size of whole numbers), else None."""
    if not isinstance(value, (tuple, list)):
        return None
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        return None
    return tuple(int(v) for v in value)


def _contiguous_strides(shape: tuple) -> tuple:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _broadcast(shapes: list, from_right: bool) -> tuple | None:
    """The broadcast of ``shapes`` lined up from the right (the rule), or from the left (the usual mistake)."""
    n = max(len(s) for s in shapes)
    padded = [(1,) * (n - len(s)) + s if from_right else s + (1,) * (n - len(s)) for s in shapes]
    result = []
    for sizes in zip(*padded):
        big = {size for size in sizes if size != 1}
        if len(big) > 1:
            return None
        result.append(big.pop() if big else 1)
    return tuple(result)


def _describe(case) -> str:
    """A case's arguments as a learner reads them: tensors by their shape, everything else as written."""
    return " and ".join(f"a tensor of shape {shape_text(tuple(a.shape))}" if isinstance(a, TrackedTensor) else repr(a)
                     for a in case)

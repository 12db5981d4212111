"""What every capture shares, whichever engine it reads: its error, the words of a leaf, and names.

PyTorch names a node by its backward (``AddmmBackward0``); a box is labelled by the short name
(``Addmm``), and leaves by the names the user gave, for gradlab's graphs and PyTorch's alike.
"""

from __future__ import annotations


class CaptureError(TypeError):
    """The object given to the lab cannot be drawn as a graph (and the message says what can)."""


LEAF_WORDS = "a leaf: backward adds the gradient that reaches it into its .grad"
LEAF_MATH = "x.grad += g"


def short_name(name: str) -> str:
    """"MulBackward0" -> "Mul", "SumBackward1" -> "Sum", "AccumulateGrad" and "CopySlices" as they are."""
    stem = name.rstrip("0123456789")
    return stem[:-len("Backward")] if stem.endswith("Backward") and len(stem) > len("Backward") else name


def name_pairs(names):
    """Accept {name: tensor} (as model.named_parameters() gives) or {tensor: name}."""
    if not names:
        return []
    items = names.items() if hasattr(names, "items") else names
    pairs = []
    for a, b in items:
        pairs.append((b, a) if isinstance(a, str) else (a, b))
    return pairs


def reachable(root) -> list:
    """Every node backward would visit from ``root``, root first: gradlab's and PyTorch's nodes alike list
    their inputs' nodes as ``next_functions``."""
    seen, stack = {root: None}, [root]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None and child not in seen:
                seen[child] = None
                stack.append(child)
    return list(seen)

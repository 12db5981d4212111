"""Copies of a timed call's arguments on another device, so every device runs the same work.

A model, its parameters and the data are found wherever they sit (in lists, tuples, dicts) and copied
once each, so a model and one of its parameters stay linked; the caller's own never move. gradlab's
and PyTorch's modules and tensors take the same path: the caller says which classes are which.
"""

from __future__ import annotations

import copy


def copy_to_device(value, device, module_type, tensor_type, memo=None):
    """``value`` with every ``module_type`` and ``tensor_type`` in it copied to ``device``; anything else as it
    is. A tensor keeps requires_grad (and its .grad); an object seen twice is copied once."""
    memo = {} if memo is None else memo
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, module_type):
        moved = copy.deepcopy(value, memo).to(device)  # .to swaps each parameter's data in place
    elif isinstance(value, tensor_type):
        moved = copy.deepcopy(value if value.is_leaf else value.detach(), memo)
        moved.data = moved.detach().to(device)  # in place, so every reference the memo handed out follows
        if moved.grad is not None:
            moved.grad = moved.grad.to(device)
    elif isinstance(value, (list, tuple)):
        items = [copy_to_device(item, device, module_type, tensor_type, memo) for item in value]
        moved = type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    elif isinstance(value, dict):
        moved = type(value)((key, copy_to_device(item, device, module_type, tensor_type, memo))
                            for key, item in value.items())
    else:
        return value
    memo[id(value)] = moved
    return moved

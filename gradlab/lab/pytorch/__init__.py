"""The lab on PyTorch: the same graph, stepper and pictures on a real ``torch`` model.

The widgets read the lab's ``Graph`` model, not an engine, so PyTorch needs only an adapter: these
modules turn what PyTorch holds (``grad_fn`` nodes, ``_saved_*`` attributes, module hooks) into that
model. They are the only place in gradlab that imports torch, and they load only when a torch object
reaches the lab: this file tells one apart without importing torch.
"""

from __future__ import annotations

import sys


def is_torch(obj) -> bool:
    """Whether ``obj`` is a PyTorch tensor, module or grad_fn node, asked without importing torch: if the
    user's code has not imported torch, it cannot hold one."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, (torch.Tensor, torch.nn.Module, torch.autograd.graph.Node))


def is_torch_module(obj) -> bool:
    """Whether ``obj`` is a ``torch.nn.Module`` (a user's subclass too)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def is_torch_tensor(obj) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


def version_of(t) -> int:
    """A torch tensor's version counter (bumped by every in-place change: backward adding into a .grad)."""
    return t._version

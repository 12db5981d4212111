"""compare_engines' PyTorch side: a torch model's parameters as plain host arrays (compare.py does the rest)."""

from __future__ import annotations

import torch


def _host(tensor: torch.Tensor):
    """A float64 host copy of a tensor's values (a sparse gradient made dense)."""
    tensor = tensor.detach()
    if tensor.is_sparse:
        tensor = tensor.to_dense()
    return tensor.to("cpu", torch.float64).numpy()


def torch_sides(model: torch.nn.Module) -> dict:
    """{name: the fields of compare.Side} of a torch model's parameters, in ``named_parameters()`` order."""
    return {name: dict(name=name, shape=list(p.shape), dtype=str(p.dtype).replace("torch.", ""), value=_host(p),
                       grad=None if p.grad is None else _host(p.grad))
            for name, p in model.named_parameters()}


def loss_number(loss: torch.Tensor) -> float:
    return float(loss.detach().item())

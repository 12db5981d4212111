"""Compare a gradlab layer with its PyTorch twin: same state_dict keys, same outputs, same gradients (float64)."""

from __future__ import annotations

import numpy as np
from helpers import assert_close, torch

import gradlab as gl


def load_torch_state(module, torch_module):
    """Copy the torch module's state_dict into the gradlab module (keys must match exactly, both ways)."""
    module.double()
    torch_module.double()
    state = torch_module.state_dict()
    assert list(module.state_dict()) == list(state), f"{list(module.state_dict())} != {list(state)}"
    module.load_state_dict({k: gl.tensor(v.detach().numpy()) for k, v in state.items()})


def as_pair(value, frozen=False):
    """A numpy input as a (gradlab, torch) pair of leaves (floats require grad unless frozen); anything else passes
    as is."""
    if isinstance(value, np.ndarray):
        grad = value.dtype.kind == "f" and not frozen
        return gl.tensor(value, requires_grad=grad), torch.tensor(value, requires_grad=grad)
    return value, value


def compare_modules(module, torch_module, *inputs, rtol=1e-10, atol=1e-10, load=True, frozen=(), **kwargs):
    """Forward values, input gradients and parameter gradients agree; the reprs agree too.

    ``frozen`` lists the positions of float inputs that must not require grad (targets PyTorch refuses to
    differentiate).
    """
    module.double()
    torch_module.double()
    if load:
        load_torch_state(module, torch_module)
    pairs = [as_pair(x, i in frozen) for i, x in enumerate(inputs)]
    out = module(*[p[0] for p in pairs], **kwargs)
    t_out = torch_module(*[p[1] for p in pairs], **kwargs)
    compare_outputs(out, t_out, rtol, atol)
    for (g, t) in pairs:
        if isinstance(t, torch.Tensor) and t.grad is not None:
            assert_close(g.grad, t.grad, rtol=rtol, atol=atol)
    for (name, p), (t_name, t_p) in zip(module.named_parameters(), torch_module.named_parameters()):
        assert name == t_name
        if t_p.grad is not None:
            assert_close(p.grad, t_p.grad, rtol=rtol, atol=atol)
    assert repr(module) == repr(torch_module)
    return out


def compare_outputs(out, t_out, rtol=1e-10, atol=1e-10):
    """Values agree; float outputs are backpropagated with the same random seed gradient."""
    if isinstance(t_out, tuple):
        outs = list(zip(out, t_out))
    else:
        outs = [(out, t_out)]
    for i, (o, t) in enumerate(outs):
        if not t.dtype.is_floating_point:
            np.testing.assert_array_equal(o.numpy(), t.numpy())
            continue
        assert_close(o, t, rtol=rtol, atol=atol)
        if t.requires_grad:
            seed = np.random.default_rng(7 + i).standard_normal(tuple(t.shape))
            o.backward(gl.tensor(seed), retain_graph=True)
            t.backward(torch.tensor(seed), retain_graph=True)

"""numpy's spellings keepdims= and axis= on the reductions, accepted where PyTorch accepts them.

A famous bigram notebook normalises with ``counts.sum(1, keepdims=True)``; PyTorch's argument
parser takes numpy's names on every native function with a ``keepdim`` argument.
"""

import numpy as np
import pytest

import gradlab as gl
from helpers import assert_close, requires_torch, torch

X = np.array([[3.0, 1.0, 4.0, 1.0], [5.0, 9.0, 2.0, 6.0], [5.0, 3.0, 5.0, 8.0]])

# name, extra positional arguments before dim, the numpy reduction it matches (None: compared with torch only)
REDUCTIONS = [
    ("sum", (), np.sum), ("mean", (), np.mean), ("prod", (), np.prod), ("amax", (), np.amax), ("amin", (), np.amin),
    ("std", (), lambda a, axis, keepdims: np.std(a, axis=axis, ddof=1, keepdims=keepdims)),
    ("var", (), lambda a, axis, keepdims: np.var(a, axis=axis, ddof=1, keepdims=keepdims)),
    ("nansum", (), np.nansum), ("nanmean", (), np.nanmean), ("any", (), np.any), ("all", (), np.all),
    ("argmax", (), np.argmax), ("argmin", (), np.argmin),
    ("logsumexp", (), lambda a, axis, keepdims: np.log(np.exp(a).sum(axis=axis, keepdims=keepdims))),
    ("max", (), None), ("min", (), None), ("median", (), None), ("nanmedian", (), None), ("mode", (), None),
    ("kthvalue", (2,), None), ("quantile", (0.5,), None), ("nanquantile", (0.5,), None),
]


def _values(result):
    """A reduction's values: the tensor itself, or .values of a (values, indices) result."""
    return result if isinstance(result, gl.Tensor) or (torch is not None and isinstance(result, torch.Tensor)) \
        else result[0]


@pytest.mark.parametrize("form", ["method", "function"])
@pytest.mark.parametrize("name, before, numpy_fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_keepdims_is_keepdim(name, before, numpy_fn, form):
    x = gl.tensor(X)
    call = getattr(x, name) if form == "method" else lambda *a, **k: getattr(gl, name)(x, *a, **k)
    spelled = _values(call(*before, 1, keepdims=True))
    assert tuple(spelled.shape) == (3, 1)
    assert_close(spelled, _values(call(*before, 1, keepdim=True)))
    assert_close(_values(call(*before, axis=1, keepdims=True)), spelled)
    if numpy_fn is not None:
        assert_close(spelled, numpy_fn(X, axis=1, keepdims=True))


@requires_torch
@pytest.mark.parametrize("form", ["method", "function"])
@pytest.mark.parametrize("name, before, numpy_fn", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_keepdims_as_in_torch(name, before, numpy_fn, form):
    x, t = gl.tensor(X), torch.tensor(X)
    if form == "method":
        ours, theirs = getattr(x, name)(*before, 1, keepdims=True), getattr(t, name)(*before, 1, keepdims=True)
    else:
        ours, theirs = getattr(gl, name)(x, *before, 1, keepdims=True), getattr(torch, name)(t, *before, 1,
                                                                                            keepdims=True)
    assert_close(_values(ours), _values(theirs))


@pytest.mark.parametrize("call", [
    lambda x: gl.linalg.vector_norm(x, 2, 1, keepdims=True), lambda x: gl.linalg.norm(x, None, 1, keepdims=True),
    lambda x: gl.linalg.matrix_norm(x.unsqueeze(0), keepdims=True)[0],
    lambda x: gl.special.logsumexp(x, 1, keepdims=True),
    lambda x: gl.aminmax(x, dim=1, keepdims=True).min, lambda x: gl.std_mean(x, 1, keepdims=True)[0],
    lambda x: gl.var_mean(x, 1, keepdims=True)[1], lambda x: gl.nn.functional.pairwise_distance(x, x, keepdims=True),
], ids=["vector_norm", "linalg.norm", "matrix_norm", "special.logsumexp", "aminmax", "std_mean", "var_mean",
        "pairwise_distance"])
def test_keepdims_beyond_the_tensor_methods(call):
    assert call(gl.tensor(X)).ndim == 2


def test_the_bigram_normalisation():
    counts = gl.tensor(X)
    probs = counts / counts.sum(1, keepdims=True)
    assert_close(probs, X / X.sum(1, keepdims=True))


def test_keepdims_still_records_the_graph():
    x = gl.tensor(X, requires_grad=True)
    x.mean(axis=1, keepdims=True).sum().backward()
    assert_close(x.grad, np.full_like(X, 0.25))


@pytest.mark.parametrize("kwargs, names", [({"keepdim": True, "keepdims": True}, "keepdim= and keepdims="),
                                           ({"dim": 1, "axis": 1}, "dim= and axis=")])
def test_both_spellings_at_once_is_an_error(kwargs, names):
    x = gl.tensor(X)
    with pytest.raises(TypeError, match=f"sum\\(\\) got both {names}"):
        x.sum(**kwargs)
    with pytest.raises(TypeError, match=f"mean\\(\\) got both {names}"):
        gl.mean(x, **kwargs)


@requires_torch
def test_both_spellings_at_once_is_an_error_in_torch_too():
    with pytest.raises(TypeError):
        torch.ones(2, 3).sum(1, keepdim=True, keepdims=True)


def test_norm_refuses_keepdims_as_torch_norm_does():
    """torch.norm and Tensor.norm are Python functions in PyTorch: they take keepdim only."""
    x = gl.tensor(X)
    with pytest.raises(TypeError, match="keepdims"):
        x.norm(dim=1, keepdims=True)
    with pytest.raises(TypeError, match="keepdims"):
        gl.norm(x, dim=1, keepdims=True)
    assert x.norm(dim=1, keepdim=True).shape == (3, 1)


@requires_torch
def test_norm_refuses_keepdims_in_torch_too():
    with pytest.raises(TypeError, match="keepdims"):
        torch.ones(2, 3).norm(dim=1, keepdims=True)


def test_functions_without_keepdim_do_not_take_keepdims():
    with pytest.raises(TypeError):
        gl.tensor(X).cumsum(1, keepdims=True)

"""nn.utils: clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters (vs numpy and PyTorch)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn

SHAPES = [(3, 4), (5,), (2, 2, 2)]


def params_with_grads(scale=1.0, lib=gl, nn_=nn):
    params = []
    for i, shape in enumerate(SHAPES):
        p = nn_.Parameter(lib.tensor(randn(*shape, seed=i)))
        p.grad = lib.tensor(randn(*shape, seed=10 + i) * scale)
        params.append(p)
    return params


def numpy_total_norm(grads, norm_type):
    flat = np.concatenate([g.ravel() for g in grads])
    if norm_type == math.inf:
        return np.abs(flat).max()
    return (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)


def test_reachable_as_nn_utils():
    assert nn.utils.clip_grad_norm_ is gl.nn.utils.clip_grad.clip_grad_norm_
    from gradlab.nn.utils import parameters_to_vector, vector_to_parameters  # noqa: F401


@pytest.mark.parametrize("norm_type", [2.0, 1, math.inf, 3.0, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 1e6])
def test_clip_grad_norm_against_numpy(norm_type, max_norm):
    params = params_with_grads()
    before = [p.grad.numpy().copy() for p in params]
    grad_objects = [p.grad for p in params]
    total = nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type)
    expected = numpy_total_norm(before, float(norm_type))
    assert isinstance(total, gl.Tensor) and total.shape == ()
    assert total.item() == pytest.approx(expected, rel=1e-10)
    coef = min(max_norm / (expected + 1e-6), 1.0)
    for p, g, old in zip(params, grad_objects, before):
        assert p.grad is g  # scaled in place
        assert_close(p.grad, old * coef, rtol=1e-10)
    if max_norm < expected:
        assert numpy_total_norm([p.grad.numpy() for p in params], float(norm_type)) == pytest.approx(max_norm, rel=1e-5)


@requires_torch
@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 0.5])
def test_clip_grad_norm_matches_torch(norm_type):
    ours = params_with_grads(scale=3.0)
    theirs = params_with_grads(scale=3.0, lib=torch, nn_=torch.nn)
    total = nn.utils.clip_grad_norm_(iter(ours), 2.0, norm_type)  # a generator of parameters works
    expected = torch.nn.utils.clip_grad_norm_(iter(theirs), 2.0, norm_type)
    assert total.item() == pytest.approx(expected.item(), rel=1e-10)
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad, rtol=1e-10)


def test_clip_grad_norm_single_tensor_missing_grads_and_float32():
    p = nn.Parameter(gl.tensor([3.0, 4.0]))
    p.grad = gl.tensor([3.0, 4.0])
    total = nn.utils.clip_grad_norm_(p, 1.0)
    assert total.item() == pytest.approx(5.0) and total.dtype is gl.float32
    assert_close(p.grad, [0.6, 0.8], rtol=1e-5)
    q = nn.Parameter(gl.ones(2))  # no grad: ignored
    total = nn.utils.clip_grad_norm_([p, q], 10.0)
    assert total.item() == pytest.approx(1.0, rel=1e-5) and q.grad is None
    empty = nn.utils.clip_grad_norm_([q], 1.0)
    assert empty.item() == 0.0 and empty.shape == ()
    with pytest.warns(UserWarning, match="`parameters` is an empty generator, no gradient clipping will occur."):
        nn.utils.clip_grad_norm_((x for x in []), 1.0)


def test_clip_grad_norm_does_not_record_a_graph():
    p = nn.Parameter(gl.tensor([3.0, 4.0]))
    p.grad = gl.tensor([3.0, 4.0], requires_grad=True)
    total = nn.utils.clip_grad_norm_([p], 1.0)
    assert total.grad_fn is None and p.grad.grad_fn is None


def test_clip_grad_norm_nonfinite():
    params = params_with_grads()
    with gl.no_grad():
        params[1].grad[2] = float("nan")
    with pytest.raises(RuntimeError, match=r"The total norm of order 2.0 for gradients from `parameters` is non-finite, "
                                           r"so it cannot be clipped. To disable this error and scale the gradients by "
                                           r"the non-finite norm anyway, set `error_if_nonfinite=False`"):
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert not np.isnan(params[0].grad.numpy()).any()  # nothing was scaled
    total = nn.utils.clip_grad_norm_(params, 1.0)
    assert math.isnan(total.item())
    params = params_with_grads()
    with gl.no_grad():
        params[0].grad[0, 0] = float("inf")
    with pytest.raises(RuntimeError, match="The total norm of order inf"):
        nn.utils.clip_grad_norm_(params, 1.0, norm_type="inf", error_if_nonfinite=True)


def test_clip_grad_norm_deprecated_alias():
    params = params_with_grads()
    with pytest.warns(FutureWarning, match="clip_grad_norm_"):
        total = nn.utils.clip_grad_norm(params, 1.0)
    assert total.item() > 1.0


@pytest.mark.parametrize("clip", [0.3, 1, 10.0])
def test_clip_grad_value(clip):
    params = params_with_grads()
    before = [p.grad.numpy().copy() for p in params]
    assert nn.utils.clip_grad_value_(params, clip) is None
    for p, old in zip(params, before):
        assert_close(p.grad, np.clip(old, -clip, clip))


@requires_torch
def test_clip_grad_value_matches_torch():
    ours, theirs = params_with_grads(), params_with_grads(lib=torch, nn_=torch.nn)
    nn.utils.clip_grad_value_(ours, 0.4)
    torch.nn.utils.clip_grad_value_(theirs, 0.4)
    for p, q in zip(ours, theirs):
        assert_close(p.grad, q.grad)
    single = nn.Parameter(gl.tensor([-2.0, 0.1, 2.0]))
    single.grad = gl.tensor([-2.0, 0.1, 2.0])
    nn.utils.clip_grad_value_(single, 1.0)
    assert_close(single.grad, [-1.0, 0.1, 1.0])


def test_parameters_to_vector_and_back():
    params = params_with_grads()
    vec = nn.utils.parameters_to_vector(params)
    assert vec.shape == (12 + 5 + 8,)
    assert_close(vec, np.concatenate([p.detach().numpy().ravel() for p in params]))
    vec.sum().backward()  # differentiable with respect to the parameters
    assert_close(params[0].grad, randn(3, 4, seed=10) + 1.0)
    new = gl.tensor(np.arange(25.0))
    held = params[2]
    nn.utils.vector_to_parameters(new, params)
    assert params[2] is held and isinstance(held, nn.Parameter)
    assert_close(params[0], np.arange(12.0).reshape(3, 4))
    assert_close(params[1], np.arange(12.0, 17.0))
    assert_close(params[2], np.arange(17.0, 25.0).reshape(2, 2, 2))
    assert params[0].requires_grad and params[0].is_leaf


@requires_torch
def test_vectors_match_torch():
    ours, theirs = params_with_grads(), params_with_grads(lib=torch, nn_=torch.nn)
    assert_close(nn.utils.parameters_to_vector(ours), torch.nn.utils.parameters_to_vector(theirs))
    new = randn(25, seed=99)
    nn.utils.vector_to_parameters(gl.tensor(new), ours)
    torch.nn.utils.vector_to_parameters(torch.tensor(new), theirs)
    for p, q in zip(ours, theirs):
        assert_close(p, q)


def test_vector_to_parameters_errors():
    params = params_with_grads()
    with pytest.raises(TypeError, match="expected gradlab.Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0] * 25, params)
    with pytest.raises(RuntimeError, match="vector_to_parameters: the vector has 24 elements but the parameters need 25"):
        nn.utils.vector_to_parameters(gl.zeros(24), params)


def test_clip_in_a_training_step():
    model = nn.Module()
    model.w = nn.Parameter(gl.tensor(randn(4, 3)))
    x = gl.tensor(randn(8, 4, seed=1))
    (x.matmul(model.w) ** 2).sum().backward()
    norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    assert norm.item() > 1.0
    assert np.linalg.norm(model.w.grad.numpy()) == pytest.approx(1.0, rel=1e-5)

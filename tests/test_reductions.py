"""Reductions: values over every kind of dim, dtypes, gradients (ties and zeros included), errors."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck
from helpers import assert_close, leaf, noncontiguous_leaf, randn, requires_torch, to_torch, torch

SHAPE = (2, 3, 4)
DIMS = [None, 0, -1, (0, 2), (-1, 1), (0, 1, 2)]
KEEPDIMS = [False, True]


def _np_axis(dim):
    return dim if dim is None or isinstance(dim, int) else tuple(dim)


def _np_logsumexp(a, axis=None, keepdims=False):
    m = np.max(a, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(a - m), axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis) if axis is not None else out.reshape(())


def _np_norm(a, p, axis=None, keepdims=False):
    a = np.abs(a)
    if p == math.inf:
        return np.max(a, axis=axis, keepdims=keepdims)
    if p == -math.inf:
        return np.min(a, axis=axis, keepdims=keepdims)
    if p == 0:
        return np.sum(a != 0, axis=axis, keepdims=keepdims).astype(a.dtype)
    return np.sum(a ** p, axis=axis, keepdims=keepdims) ** (1 / p)


# name -> (gradlab call, numpy reference), both taking (tensor/array, dim, keepdim)
REDUCTIONS = {
    "sum": (lambda x, d, k: x.sum(d, keepdim=k), lambda a, d, k: np.sum(a, axis=d, keepdims=k)),
    "mean": (lambda x, d, k: x.mean(d, keepdim=k), lambda a, d, k: np.mean(a, axis=d, keepdims=k)),
    "prod": (lambda x, d, k: x.prod(d, keepdim=k), lambda a, d, k: np.prod(a, axis=d, keepdims=k)),
    "amax": (lambda x, d, k: x.amax(d, keepdim=k), lambda a, d, k: np.max(a, axis=d, keepdims=k)),
    "amin": (lambda x, d, k: x.amin(d, keepdim=k), lambda a, d, k: np.min(a, axis=d, keepdims=k)),
    "var": (lambda x, d, k: x.var(d, keepdim=k), lambda a, d, k: np.var(a, axis=d, keepdims=k, ddof=1)),
    "std": (lambda x, d, k: x.std(d, keepdim=k), lambda a, d, k: np.std(a, axis=d, keepdims=k, ddof=1)),
    "logsumexp": (lambda x, d, k: x.logsumexp(d, keepdim=k), _np_logsumexp),
    "norm": (lambda x, d, k: x.norm(dim=d, keepdim=k), lambda a, d, k: _np_norm(a, 2, d, k)),
    "norm3": (lambda x, d, k: x.norm(3, dim=d, keepdim=k), lambda a, d, k: _np_norm(a, 3, d, k)),
    "norm_inf": (lambda x, d, k: x.norm(math.inf, d, k), lambda a, d, k: _np_norm(a, math.inf, d, k)),
}
TORCH_NAMES = {"norm3": ("norm", (3,)), "norm_inf": ("norm", (math.inf,))}


def _torch_call(name, t, dim, keepdim):
    method, args = TORCH_NAMES.get(name, (name, ()))
    if method == "norm":
        return t.norm(*(args or ("fro",)), dim=dim, keepdim=keepdim)
    if method == "prod" and not isinstance(dim, int):  # torch.prod takes one int dim or none
        for d in sorted((d % t.ndim for d in (dim if dim is not None else range(t.ndim))), reverse=True):
            t = t.prod(d, keepdim=keepdim)
        return t
    if dim is None and method == "logsumexp":  # torch.logsumexp needs dims
        dim = tuple(range(t.ndim))
    return getattr(t, method)(dim=dim, keepdim=keepdim)


# --- forward: values, shapes ----------------------------------------------------------------------


@pytest.mark.parametrize("keepdim", KEEPDIMS)
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_matches_numpy(name, dim, keepdim):
    ours, reference = REDUCTIONS[name]
    a = randn(*SHAPE, seed=1)
    assert_close(ours(leaf(a, requires_grad=False), dim, keepdim), reference(a, _np_axis(dim), keepdim))


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "amax", "amin", "var", "std", "logsumexp", "norm"])
def test_functional_form_matches_method(name):
    a = randn(3, 4, seed=2)
    ours, reference = REDUCTIONS[name]
    assert_close(getattr(gl, name)(leaf(a), dim=1, keepdim=True), reference(a, 1, True))


def test_dim_none_and_empty_tuple_reduce_everything():
    a = randn(2, 3, seed=3)
    x = leaf(a, requires_grad=False)
    for dim in (None, (), []):
        assert_close(x.sum(dim), np.sum(a))
        assert_close(x.mean(dim), np.mean(a))
        assert_close(x.amax(dim), np.max(a))


def test_zero_dim_tensor_reductions():
    x = gl.tensor(2.5, dtype=gl.float64)
    for result in (x.sum(0), x.sum(-1, keepdim=True), x.mean(0), x.amax(0), x.prod(0), x.max(0).values, x.cumsum(0)):
        assert result.shape == () and result.item() == 2.5
    assert x.argmax(0).item() == 0 and x.argmax(0, keepdim=True).shape == ()
    with pytest.raises(IndexError, match=r"sum: Dimension out of range \(expected to be in range of \[-1, 0\], but got 1\)"):
        x.sum(1)


@pytest.mark.parametrize("keepdim", KEEPDIMS)
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_dim_return_values_and_indices(op, dim, keepdim):
    a = randn(3, 4, seed=4)
    result = getattr(leaf(a, requires_grad=False), op)(dim, keepdim)
    values, indices = result
    assert result._fields == ("values", "indices") and values is result.values and indices is result.indices
    assert type(result).__name__ == op
    assert_close(values, getattr(np, op)(a, axis=dim, keepdims=keepdim))
    assert indices.dtype == gl.int64
    np.testing.assert_array_equal(indices.numpy(), getattr(np, "arg" + op)(a, axis=dim, keepdims=keepdim))
    other = getattr(gl, op)(leaf(a), dim, keepdim)
    assert_close(other.values, values)


def test_max_min_without_dim_and_with_another_tensor():
    a, b = randn(3, 4, seed=5), randn(3, 4, seed=6)
    assert_close(leaf(a).max(), np.max(a))
    assert_close(gl.min(leaf(a)), np.min(a))
    assert_close(gl.max(leaf(a), leaf(b)), np.maximum(a, b))
    assert_close(leaf(a).min(leaf(b)), np.minimum(a, b))


@pytest.mark.parametrize("keepdim", KEEPDIMS)
@pytest.mark.parametrize("dim", [None, 0, 1, -1])
@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op, dim, keepdim):
    a = randn(3, 4, seed=7)
    out = getattr(leaf(a), op)(dim, keepdim)
    expected = getattr(np, op)(a, axis=dim, keepdims=keepdim)
    assert out.dtype == gl.int64 and not out.requires_grad
    np.testing.assert_array_equal(out.numpy(), expected)
    assert out.shape == np.shape(expected)


@pytest.mark.parametrize("dim", [0, 1, -1, -3])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_cumulative_matches_numpy(op, dim):
    a = randn(*SHAPE, seed=8)
    assert_close(getattr(leaf(a), op)(dim), getattr(np, op)(a, axis=dim))
    assert_close(getattr(gl, op)(leaf(a), dim), getattr(np, op)(a, axis=dim))


def test_cumsum_in_place():
    a = randn(3, 4, seed=9)
    x = leaf(a, requires_grad=False)
    assert x.cumsum_(1) is x
    assert_close(x, np.cumsum(a, axis=1))


@pytest.mark.parametrize("keepdim", KEEPDIMS)
@pytest.mark.parametrize("dim", [None, 0, -1, (0, 1)], ids=str)
@pytest.mark.parametrize("op", ["all", "any"])
def test_all_any(op, dim, keepdim):
    a = np.array([[0, 1, 2], [3, 4, 5]]) if op == "all" else np.array([[0, 0, 2], [0, 0, 0]])
    for data in (a, a.astype(bool), a.astype(np.float64)):
        out = getattr(gl.tensor(data), op)(dim, keepdim)
        assert out.dtype == gl.bool
        np.testing.assert_array_equal(out.numpy(), getattr(np, op)(data, axis=_np_axis(dim), keepdims=keepdim))
    assert getattr(gl, op)(gl.tensor(a)).dtype == gl.bool


def test_norm_orders():
    a = randn(3, 4, seed=10)
    x = leaf(a)
    for p in (1, 2, 3, 0.5, math.inf, -math.inf, 0):
        assert_close(x.norm(p), _np_norm(a, p))
        assert_close(x.norm(p, dim=1, keepdim=True), _np_norm(a, p, 1, True))
    assert_close(x.norm("fro"), np.linalg.norm(a))
    assert_close(x.norm("fro", dim=(0, 1)), np.linalg.norm(a))
    assert_close(gl.norm(x, dim=-1), np.linalg.norm(a, axis=-1))


def test_var_std_correction_spellings():
    a = randn(3, 4, seed=11)
    x = leaf(a, requires_grad=False)
    assert_close(x.var(), np.var(a, ddof=1))
    assert_close(x.var(unbiased=False), np.var(a))
    assert_close(x.var(False), np.var(a))
    assert_close(x.var(1, False), np.var(a, axis=1))
    assert_close(x.var(1, correction=0), np.var(a, axis=1))
    assert_close(x.std(0, correction=2, keepdim=True), np.std(a, axis=0, ddof=2, keepdims=True))
    assert_close(gl.std(x, dim=1, unbiased=True), np.std(a, axis=1, ddof=1))
    assert np.isnan(gl.tensor([1.0]).var().item())
    assert gl.tensor([1.0, 2.0]).var(correction=3).item() == math.inf


def test_logsumexp_is_stable():
    a = np.array([[1000.0, 1000.0], [-1000.0, -1000.0]])
    assert_close(leaf(a).logsumexp(1), [1000.0 + math.log(2), -1000.0 + math.log(2)])
    assert gl.tensor([-math.inf, -math.inf]).logsumexp(0).item() == -math.inf
    assert gl.empty(0).logsumexp(0).item() == -math.inf


def test_empty_tensor_reductions():
    e = gl.empty(0, 3)
    assert e.sum().item() == 0 and e.prod().item() == 1 and math.isnan(e.mean().item())
    assert e.amax(1).shape == (0,) and e.argmax(1).shape == (0,)
    assert e.sum(0).shape == (3,) and e.norm().item() == 0


# --- dtypes ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [gl.bool, gl.int32, gl.int64])
def test_sum_prod_cumsum_of_integers_and_bools_give_int64(dtype):
    x = gl.tensor([[1, 0, 1], [1, 1, 1]], dtype=dtype)
    for out in (x.sum(), x.sum(1), x.prod(0), x.cumsum(1), x.cumprod(0)):
        assert out.dtype == gl.int64
    assert x.sum().item() == 5


def test_result_dtypes():
    i32 = gl.tensor([[1, 2], [3, 4]], dtype=gl.int32)
    f32 = gl.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert i32.sum(dtype=gl.float64).dtype == gl.float64 and i32.sum(dtype=gl.float64).item() == 10.0
    assert i32.sum(0, dtype=gl.int32).dtype == gl.int32
    assert i32.mean(dtype=gl.float64).item() == 2.5
    assert i32.amax().dtype == gl.int32 and i32.max(0).values.dtype == gl.int32
    assert i32.logsumexp(0).dtype == gl.float32
    assert i32.cumsum(0, dtype=gl.float32).dtype == gl.float32
    for out in (f32.sum(), f32.mean(), f32.var(), f32.std(0), f32.norm(), f32.logsumexp(1), f32.prod(), f32.amax()):
        assert out.dtype == gl.float32
    assert f32.half().sum().dtype == gl.float16
    assert f32.norm(dtype=gl.float64).dtype == gl.float64


def test_sum_with_dtype_passes_gradient_back_in_the_input_dtype():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    x.sum(dtype=gl.float64).backward()
    assert x.grad.dtype == gl.float32
    assert_close(x.grad, [1.0, 1.0])


def test_integer_outputs_do_not_require_grad():
    x = leaf(randn(3, 4, seed=12))
    assert not x.argmax().requires_grad and not x.max(1).indices.requires_grad and not x.any().requires_grad
    assert x.max(1).values.requires_grad


# --- errors ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("call", [
    lambda x: x.sum(3), lambda x: x.mean(-4), lambda x: x.prod((0, 5)), lambda x: x.amax(3),
    lambda x: x.var(3), lambda x: x.logsumexp(3), lambda x: x.norm(dim=3), lambda x: x.all(3),
])
def test_dim_out_of_range_names_op_and_range(call):
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\]"):
        call(leaf(randn(*SHAPE)))


@pytest.mark.parametrize("op, call", [
    ("max", lambda x: x.max(3)), ("argmin", lambda x: x.argmin(-4)), ("cumsum", lambda x: x.cumsum(3)),
    ("sum", lambda x: x.sum(-4)),
])
def test_dim_errors_name_the_op(op, call):
    with pytest.raises(IndexError, match=rf"^{op}: Dimension out of range .*but got -?[34]\)"):
        call(leaf(randn(*SHAPE)))


def test_repeated_dim_is_an_error():
    with pytest.raises(RuntimeError, match="sum: dim .* appears multiple times"):
        leaf(randn(2, 3)).sum((1, -1))


@pytest.mark.parametrize("dtype", [gl.int64, gl.int32, gl.bool])
def test_mean_of_integer_tensor_raises(dtype):
    with pytest.raises(RuntimeError, match=r"mean\(\): could not infer output dtype.*floating point.*Got: .*"
                                           + dtype.name + r" tensor of shape \(2,?\).*\.float\(\)"):
        gl.tensor([1, 0], dtype=dtype).mean()


def test_float_only_reductions_raise_for_integers():
    x = gl.tensor([1, 2])
    with pytest.raises(RuntimeError, match=r"var\(\): std and var only support floating point.*int64"):
        x.var()
    with pytest.raises(RuntimeError, match=r"std\(\): std and var"):
        x.std()
    with pytest.raises(RuntimeError, match=r"norm\(\): expected a floating point tensor.*int64"):
        x.norm()


def test_argmax_of_empty_tensor_raises():
    with pytest.raises(IndexError, match=r"argmax\(\): Expected reduction dim to be specified for input.numel\(\) == 0"):
        gl.empty(0).argmax()
    with pytest.raises(IndexError, match=r"argmin\(\): Expected reduction dim 0 to have non-zero size"):
        gl.empty(0, 3).argmin(0)


def test_max_of_empty_tensor_raises():
    with pytest.raises(RuntimeError, match=r"max\(\): Expected reduction dim to be specified.*shape \(0, 3\)"):
        gl.empty(0, 3).max()
    with pytest.raises(IndexError, match=r"amin\(\): Expected reduction dim 0 to have non-zero size"):
        gl.empty(0, 3).amin(0)
    with pytest.raises(IndexError, match=r"max\(\): Expected reduction dim 0 to have non-zero size"):
        gl.empty(0, 3).max(0)


def test_bad_arguments():
    x = leaf(randn(2, 3))
    with pytest.raises(TypeError, match=r"max\(\): dim must be an int.*amax"):
        x.max((0, 1))
    with pytest.raises(RuntimeError, match=r"norm\(\): order 'nuc' is not supported"):
        x.norm("nuc")
    with pytest.raises(RuntimeError, match=r"var\(\): cannot pass both correction and unbiased"):
        x.var(0, True, correction=0)
    with pytest.raises(TypeError):
        x.cumsum()


# --- gradients ------------------------------------------------------------------------------------

GRAD_DIMS = [None, 1, -1, (0, 2)]


@pytest.mark.parametrize("keepdim", KEEPDIMS)
@pytest.mark.parametrize("dim", GRAD_DIMS, ids=str)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_gradcheck(name, dim, keepdim):
    ours = REDUCTIONS[name][0]
    a = randn(*SHAPE, seed=13)
    assert gradcheck(lambda x: ours(x, dim, keepdim), (leaf(a),))


@pytest.mark.parametrize("name", REDUCTIONS)
def test_gradcheck_non_contiguous(name):
    ours = REDUCTIONS[name][0]
    x = noncontiguous_leaf(randn(3, 4, seed=14))
    assert gradcheck(lambda t: ours(t, 0, False), (x,))
    assert gradcheck(lambda t: ours(t, None, False), (x,))


@pytest.mark.parametrize("call", [
    lambda x: x.max(1).values, lambda x: x.min(0, keepdim=True).values, lambda x: x.max(), lambda x: x.min(),
    lambda x: x.cumsum(1), lambda x: x.cumsum(0), lambda x: x.cumprod(1), lambda x: x.cumprod(-2),
    lambda x: x.norm(1, dim=1), lambda x: x.norm(0.5), lambda x: x.norm(-math.inf, 0), lambda x: x.var(0, correction=0),
    lambda x: x.std(1, unbiased=False, keepdim=True), lambda x: gl.logsumexp(x, (0, 1), True),
])
def test_gradcheck_more_forms(call):
    assert gradcheck(call, (leaf(randn(3, 4, seed=15)),))
    assert gradcheck(call, (noncontiguous_leaf(randn(3, 4, seed=16)),))


def test_gradcheck_through_broadcasting():
    a, b = randn(3, 1, seed=17), randn(1, 4, seed=18)
    assert gradcheck(lambda x, y: (x * y).prod(1), (leaf(a), leaf(b)))
    assert gradcheck(lambda x, y: (x + y).logsumexp(0).norm(), (leaf(a), leaf(b)))


@pytest.mark.parametrize("values", [
    [[2.0, 0.0, 3.0], [1.5, -2.0, 0.5]],  # one zero
    [[0.0, 0.0, 3.0], [1.5, -2.0, 0.5]],  # two zeros in a row
    [[0.0, 0.0, 0.0], [0.0, 4.0, 0.5]],  # three, and one in the other row
])
def test_prod_gradient_with_zeros(values):
    for call in (lambda x: x.prod(), lambda x: x.prod(1), lambda x: x.prod(0, keepdim=True)):
        assert gradcheck(call, (leaf(values),))
    x = leaf([2.0, 0.0, 3.0, 4.0])
    x.prod().backward()
    assert_close(x.grad, [0.0, 24.0, 0.0, 0.0])


@pytest.mark.parametrize("values", [
    [[2.0, 0.0, 3.0, 1.5], [1.5, -2.0, 0.5, 2.0]],
    [[0.0, 2.0, 0.0, 3.0], [1.5, 0.0, 0.5, 0.0]],
])
def test_cumprod_gradient_with_zeros(values):
    assert gradcheck(lambda x: x.cumprod(1), (leaf(values),))
    assert gradcheck(lambda x: x.cumprod(0), (leaf(values),))


def test_max_gradient_goes_to_selected_index_and_ties_split():
    x = leaf([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])
    x.max(1).values.sum().backward()
    assert_close(x.grad, [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # the first of tied maxima (numpy's index)
    x.grad = None
    x.max().backward()
    assert_close(x.grad, [[0.0, 0.5, 0.5], [0.0, 0.0, 0.0]])
    x.grad = None
    x.amax(1).sum().backward()
    assert_close(x.grad, [[0.0, 0.5, 0.5], [0.5, 0.5, 0.0]])
    x.grad = None
    x.amin((0, 1)).backward()
    assert_close(x.grad, [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


@pytest.mark.parametrize("p", [2, 1, 3, 0.5, math.inf, "fro"])
def test_norm_gradient_at_zero_is_zero_not_nan(p):
    x = leaf(np.zeros((2, 3)))
    x.norm(p).backward()
    assert_close(x.grad, np.zeros((2, 3)))
    y = leaf([[0.0, 0.0], [3.0, 4.0]])
    y.norm(p, dim=1).sum().backward()
    assert not np.isnan(y.grad.numpy()).any()


def test_std_gradient_of_constant_is_zero():
    x = leaf(np.full((2, 3), 1.5))
    x.std().backward()
    assert_close(x.grad, np.zeros((2, 3)))


def test_sum_backward_is_one_reshape_and_expand():
    x = leaf(randn(2, 3, seed=19))
    out = x.sum(1)
    out.backward(gl.tensor([1.0, 2.0], dtype=gl.float64))
    assert_close(x.grad, [[1.0, 1.0, 1.0], [2.0, 2.0, 2.0]])


@pytest.mark.parametrize("call", [
    lambda x: x.sum(1), lambda x: x.sum(), lambda x: x.mean((0, 1), keepdim=True), lambda x: x.var(1),
    lambda x: x.std(0), lambda x: x.logsumexp(1), lambda x: x.norm(), lambda x: x.norm(dim=0),
    lambda x: x.norm(3, dim=1), lambda x: x.prod(1), lambda x: x.cumsum(1), lambda x: x.cumprod(0),
    lambda x: x.amax(1), lambda x: x.max(0).values,
], ids=["sum1", "sum", "mean", "var", "std", "logsumexp", "norm", "norm_dim", "norm3", "prod", "cumsum", "cumprod",
        "amax", "max_dim"])
def test_gradgradcheck(call):
    assert gradgradcheck(call, (leaf(randn(3, 4, seed=20)),))


def test_gradgradcheck_prod_with_one_zero():
    assert gradgradcheck(lambda x: x.prod(1), (leaf([[2.0, 0.0, 3.0], [1.5, -2.0, 0.5]]),))


# --- against PyTorch ------------------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("keepdim", KEEPDIMS)
@pytest.mark.parametrize("dim", [None, 1, -1, (0, 2)], ids=str)
@pytest.mark.parametrize("name", REDUCTIONS)
def test_values_and_gradients_match_torch(name, dim, keepdim):
    a = randn(*SHAPE, seed=21)
    x, t = leaf(a), to_torch(a, True)
    out, t_out = REDUCTIONS[name][0](x, dim, keepdim), _torch_call(name, t, dim, keepdim)
    assert_close(out, t_out)
    weight = randn(*t_out.shape, seed=22)
    (out * leaf(weight, requires_grad=False)).sum().backward()
    (t_out * to_torch(weight)).sum().backward()
    assert_close(x.grad, t.grad)


TORCH_CASES = {
    "max_dim": lambda m, x: m.max(x, 1).values,
    "min_dim_keep": lambda m, x: m.min(x, 0, keepdim=True).values,
    "prod_zero": lambda m, x: m.prod(x * (x.round() != 0), 1),
    "prod_zero_all": lambda m, x: m.prod(x * (x.round() != 0)),
    "cumsum": lambda m, x: m.cumsum(x, 1),
    "cumprod": lambda m, x: m.cumprod(x, 0),
    "var_corr": lambda m, x: m.var(x, 1, correction=0),
    "std_unbiased": lambda m, x: m.std(x, 0, unbiased=True, keepdim=True),
    "norm1": lambda m, x: m.norm(x, 1, 1),
    "norm_half": lambda m, x: m.norm(x, 0.5),
    "norm_zero_row": lambda m, x: m.norm(x * (m.arange(3) > 0).reshape(3, 1), dim=1),
    "logsumexp": lambda m, x: m.logsumexp(x, (0, 1)),
}


@requires_torch
@pytest.mark.parametrize("case", TORCH_CASES)
def test_special_cases_match_torch(case):
    call = TORCH_CASES[case]
    a = randn(3, 4, seed=23) * 1.5
    x, t = leaf(a), to_torch(a, True)
    out, t_out = call(gl, x), call(torch, t)
    assert_close(out, t_out)
    weight = randn(*t_out.shape, seed=24)
    (out * leaf(weight, requires_grad=False)).sum().backward()
    (t_out * to_torch(weight)).sum().backward()
    assert_close(x.grad, t.grad)


TIES = [[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, -1.0, 2.0], [0.5, 0.5, -3.0, 3.0]]
TIE_CASES = {
    "max": lambda m, x: m.max(x),
    "min": lambda m, x: m.min(x),
    "amax_dim": lambda m, x: m.amax(x, 1),
    "amin_dims": lambda m, x: m.amin(x, (0, 1), keepdim=True),
    "max_dim": lambda m, x: m.max(x, 1).values,
    "min_dim": lambda m, x: m.min(x, 0).values,
    "norm_inf": lambda m, x: m.norm(x, float("inf")),
    "norm_inf_dim": lambda m, x: m.norm(x, float("inf"), 1),
}


@requires_torch
@pytest.mark.parametrize("case", TIE_CASES)
def test_tied_extremes_share_gradient_like_torch(case):
    call = TIE_CASES[case]
    x, t = leaf(TIES), to_torch(np.array(TIES), True)
    out, t_out = call(gl, x), call(torch, t)
    assert_close(out, t_out)
    weight = randn(*t_out.shape, seed=25)
    (out * leaf(weight, requires_grad=False)).sum().backward()
    (t_out * to_torch(weight)).sum().backward()
    assert_close(x.grad, t.grad)


@requires_torch
def test_indices_and_dtypes_match_torch():
    a = np.array([[3, 1, 3], [0, 5, 5]])
    x, t = gl.tensor(a), torch.tensor(a)
    for dim in (0, 1):
        np.testing.assert_array_equal(x.max(dim).indices.numpy(), t.max(dim).indices.numpy())
        np.testing.assert_array_equal(x.argmin(dim).numpy(), t.argmin(dim).numpy())
    assert x.argmax(keepdim=True).shape == tuple(t.argmax(keepdim=True).shape)
    for op in ("sum", "prod", "amax"):
        for dtype, t_dtype in ((gl.int32, torch.int32), (gl.bool, torch.bool)):
            if op == "amax" and dtype == gl.bool:
                continue
            ours, theirs = getattr(x.to(dtype), op)(), getattr(t.to(t_dtype), op)()
            assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")


# --- properties on random shapes ------------------------------------------------------------------


@st.composite
def shapes_and_dims(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    picked = draw(st.lists(st.integers(-len(shape), len(shape) - 1), unique_by=lambda d: d % len(shape), max_size=len(shape)))
    dim = draw(st.sampled_from([None, tuple(picked) if picked else None] + ([picked[0]] if picked else [])))
    return shape, dim, draw(st.booleans()), draw(st.integers(0, 2 ** 16))


@settings(max_examples=25, deadline=None)
@given(shapes_and_dims())
def test_property_reductions_match_numpy(case):
    shape, dim, keepdim, seed = case
    a = randn(*shape, seed=seed)
    x = leaf(a, requires_grad=False)
    for name in ("sum", "mean", "prod", "amax", "amin", "logsumexp", "norm", "norm3"):
        ours, reference = REDUCTIONS[name]
        assert_close(ours(x, dim, keepdim), reference(a, dim, keepdim))
    count = a.size if dim is None else np.prod([shape[d] for d in ((dim,) if isinstance(dim, int) else dim)])
    if count > 1:
        assert_close(x.var(dim, keepdim=keepdim), np.var(a, axis=dim, keepdims=keepdim, ddof=1))
    np.testing.assert_array_equal((x > 0).all(dim, keepdim).numpy(), np.all(a > 0, axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal((x > 0).any(dim, keepdim).numpy(), np.any(a > 0, axis=dim, keepdims=keepdim))


@settings(max_examples=25, deadline=None)
@given(shapes_and_dims())
def test_property_sum_gradient_is_ones_of_input_shape(case):
    shape, dim, keepdim, seed = case
    x = leaf(randn(*shape, seed=seed))
    out = x.sum(dim, keepdim=keepdim)
    weight = randn(*out.shape, seed=seed + 1)
    out.backward(leaf(weight, requires_grad=False))
    axis = dim if dim is not None else tuple(range(len(shape)))
    expected = np.broadcast_to(weight if keepdim else np.expand_dims(weight, axis), shape)
    assert_close(x.grad, expected)


@settings(max_examples=25, deadline=None)
@given(shapes_and_dims())
def test_property_argmax_and_cumsum_match_numpy(case):
    shape, dim, keepdim, seed = case
    a = randn(*shape, seed=seed)
    axis = dim if isinstance(dim, int) or dim is None else dim[0]
    np.testing.assert_array_equal(leaf(a).argmax(axis, keepdim).numpy(), np.argmax(a, axis=axis, keepdims=keepdim))
    if axis is not None:
        assert_close(leaf(a).cumsum(axis), np.cumsum(a, axis=axis))


def test_float16_mean_accumulates_in_float32():
    """70000 ones: a float16 running sum would stall at 2048 and the count itself is inf in float16."""
    x = gl.ones(70000, dtype=gl.float16, requires_grad=True)
    m = x.mean()
    m.backward()
    assert m.dtype is gl.float16 and m.item() == 1.0
    assert abs(x.grad[0].item() - 1 / 70000) < 1e-7

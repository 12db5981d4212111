"""matmul and its fixed-shape forms, einsum, and gradlab.linalg norms: values, gradients, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck
from helpers import assert_close, leaf, noncontiguous_leaf, randn, requires_torch, to_torch, torch

# (shape of a, shape of b) for a @ b: every rank combination, and batch dims that broadcast
MATMUL_SHAPES = [
    ((3,), (3,)),  # dot
    ((2, 3), (3,)),  # matrix @ vector
    ((3,), (3, 4)),  # vector @ matrix
    ((2, 3), (3, 4)),  # matrix @ matrix
    ((5, 2, 3), (5, 3, 4)),  # batched
    ((5, 2, 3), (3, 4)),  # batch @ one shared matrix
    ((2, 3), (5, 3, 4)),  # one shared matrix @ batch
    ((5, 2, 3), (3,)),  # batch @ vector
    ((3,), (5, 3, 4)),  # vector @ batch
    ((5, 2, 3), (1, 3, 4)),  # size-1 batch dim broadcast
    ((2, 1, 2, 3), (5, 3, 4)),  # batch dims of different rank broadcast both ways
    ((4, 1, 2, 3), (1, 5, 3, 2)),
]
SHAPE_IDS = [f"{a}@{b}" for a, b in MATMUL_SHAPES]


def _pair(shapes, seed=0):
    (sa, sb) = shapes
    return randn(*sa, seed=seed), randn(*sb, seed=seed + 1)


# --- matmul: forward -------------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=SHAPE_IDS)
def test_matmul_matches_numpy(shapes):
    a, b = _pair(shapes)
    expected = np.matmul(a, b)
    assert_close(leaf(a) @ leaf(b), expected)
    assert_close(gl.matmul(leaf(a), leaf(b)), expected)
    assert_close(leaf(a).matmul(leaf(b)), expected)


@requires_torch
@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=SHAPE_IDS)
def test_matmul_values_and_gradients_match_torch(shapes):
    a, b = _pair(shapes)
    ga, gb = leaf(a), leaf(b)
    ta, tb = to_torch(a, True), to_torch(b, True)
    out, t_out = ga @ gb, ta @ tb
    assert_close(out, t_out)
    weight = randn(*t_out.shape, seed=7)
    (out * leaf(weight, requires_grad=False)).sum().backward()
    (t_out * to_torch(weight)).sum().backward()
    assert_close(ga.grad, ta.grad)
    assert_close(gb.grad, tb.grad)


@pytest.mark.parametrize("dtype", [gl.float32, gl.float64, gl.int64])
def test_matmul_keeps_the_dtype(dtype):
    a = gl.tensor([[1, 2], [3, 4]], dtype=dtype)
    out = a @ a
    assert out.dtype is dtype
    assert_close(out.to(gl.float64), np.array([[7.0, 10.0], [15.0, 22.0]]))


def test_rmatmul_is_matmul_with_the_operands_swapped():
    a, b = randn(2, 3), randn(3, 4, seed=1)
    assert_close(leaf(b).__rmatmul__(leaf(a)), a @ b)


# --- matmul: gradients -----------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=SHAPE_IDS)
def test_matmul_gradcheck(shapes):
    a, b = _pair(shapes)
    assert gradcheck(gl.matmul, (leaf(a), leaf(b)))


@pytest.mark.parametrize("shapes", [((4, 3), (3, 5)), ((2, 4, 3), (3, 5)), ((3,), (3, 2)), ((2, 3, 4), (2, 4, 3))])
def test_matmul_gradcheck_noncontiguous(shapes):
    a, b = _pair(shapes)
    assert gradcheck(gl.matmul, (noncontiguous_leaf(a), noncontiguous_leaf(b)))


def test_matmul_gradcheck_on_transposed_views():
    a, b = leaf(randn(3, 2)), leaf(randn(4, 3, seed=1))
    assert gradcheck(lambda x, y: x.transpose(0, 1) @ y.transpose(0, 1), (a, b))


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                                    ((2, 2, 3), (3, 2)), ((2, 1, 2, 3), (3, 3, 2))])
def test_matmul_gradgradcheck(shapes):
    a, b = _pair(shapes)
    assert gradgradcheck(gl.matmul, (leaf(a), leaf(b)))


def test_matmul_gradient_has_the_inputs_shapes():
    a, b = leaf(randn(3)), leaf(randn(2, 1, 3, 4, seed=1))
    (a @ b).sum().backward()
    assert a.grad.shape == (3,) and b.grad.shape == (2, 1, 3, 4)
    assert_close(a.grad, randn(2, 1, 3, 4, seed=1).sum(axis=(0, 1, 3)))


def test_matmul_backward_computes_only_the_gradients_asked_for(monkeypatch):
    a, b = leaf(randn(2, 3)), leaf(randn(3, 4, seed=1), requires_grad=False)
    backend = a.device.backend
    calls = []
    real = backend.matmul
    monkeypatch.setattr(backend, "matmul", lambda x, y: calls.append((x.shape, y.shape)) or real(x, y))
    (a @ b).sum().backward()
    assert calls == [((2, 3), (3, 4)), ((2, 4), (4, 3))]  # forward, then dA = dC @ B^T only
    assert b.grad is None


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_matmul_broadcasts_batch_dims_like_numpy(data):
    batch = data.draw(st.lists(st.integers(2, 3), max_size=3))

    def batch_of_one_side():  # the common batch, with some sizes 1 and some leading dims dropped
        dims = [size if data.draw(st.booleans()) else 1 for size in batch]
        return dims[data.draw(st.integers(0, len(dims))):]

    n, k, m = (data.draw(st.integers(1, 3)) for _ in range(3))
    a, b = randn(*batch_of_one_side(), n, k), randn(*batch_of_one_side(), k, m, seed=1)
    ga, gb = leaf(a), leaf(b)
    out = ga @ gb
    assert_close(out, np.matmul(a, b))
    out.sum().backward()
    ones = np.ones(out.shape)
    assert_close(ga.grad, _reduce_to(np.matmul(ones, np.swapaxes(b, -1, -2)), a.shape))
    assert_close(gb.grad, _reduce_to(np.matmul(np.swapaxes(a, -1, -2), ones), b.shape))


def _reduce_to(array, shape):
    """numpy's sum over broadcast dims, written independently of gradlab's sum_to_shape."""
    while array.ndim > len(shape):
        array = array.sum(0)
    return array.sum(axis=tuple(i for i, n in enumerate(shape) if n == 1), keepdims=True)


# --- matmul: bad input -----------------------------------------------------------------------------


def test_matmul_inner_dimensions_must_agree():
    with pytest.raises(RuntimeError, match=r"matmul: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)"):
        leaf(randn(2, 3)) @ leaf(randn(4, 5))
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(3 and 4\)"):
        gl.matmul(leaf(randn(3)), leaf(randn(4)))
    with pytest.raises(RuntimeError, match=r"shapes cannot be multiplied \(2x3 and 4\)"):
        leaf(randn(2, 3)) @ leaf(randn(4))


def test_matmul_batch_dims_must_broadcast():
    with pytest.raises(RuntimeError, match=r"matmul: the batch dimensions of 2x2x3 and 3x3x4 .*do not broadcast"):
        leaf(randn(2, 2, 3)) @ leaf(randn(3, 3, 4))


def test_matmul_needs_at_least_one_dimension():
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D, but they are 0D and 1D"):
        gl.tensor(2.0) @ gl.tensor([1.0, 2.0])


def test_matmul_refuses_to_promote_dtypes():
    message = "matmul: expected m1 and m2 to have the same dtype, but got: float32 != float64"
    with pytest.raises(RuntimeError, match=message):
        gl.ones(2, 3) @ gl.ones(3, 2, dtype=gl.float64)


def test_matmul_operands_must_share_a_device():
    with pytest.raises(RuntimeError, match="matmul: expected all tensors to be on the same device"):
        gl.ones(2, 3) @ gl.ones(3, 2, device="cpu:1")


def test_matmul_operands_must_be_tensors():
    with pytest.raises(TypeError, match="matmul: expected two gradlab Tensors, got .* and Python int 3"):
        gl.ones(3) @ 3
    with pytest.raises(TypeError, match="matmul: expected two gradlab Tensors, got Python list"):
        [1.0, 2.0, 3.0] @ gl.ones(3)


# --- mm, bmm, mv, dot, outer -----------------------------------------------------------------------

FIXED = [  # (name, shape of a, shape of b, numpy reference)
    ("mm", (2, 3), (3, 4), np.matmul),
    ("bmm", (5, 2, 3), (5, 3, 4), np.matmul),
    ("mv", (2, 3), (3,), np.matmul),
    ("dot", (3,), (3,), np.dot),
    ("outer", (3,), (4,), np.outer),
    ("ger", (2,), (3,), np.outer),
]


@pytest.mark.parametrize("name, sa, sb, reference", FIXED, ids=[f[0] for f in FIXED])
def test_fixed_shape_products_match_numpy_and_gradcheck(name, sa, sb, reference):
    a, b = randn(*sa), randn(*sb, seed=1)
    expected = reference(a, b)
    assert_close(getattr(gl, name)(leaf(a), leaf(b)), expected)
    assert_close(getattr(leaf(a), name)(leaf(b)), expected)
    assert gradcheck(getattr(gl, name), (leaf(a), leaf(b)))


@requires_torch
@pytest.mark.parametrize("name, sa, sb, reference", FIXED, ids=[f[0] for f in FIXED])
def test_fixed_shape_products_match_torch(name, sa, sb, reference):
    a, b = randn(*sa), randn(*sb, seed=1)
    ga, gb, ta, tb = leaf(a), leaf(b), to_torch(a, True), to_torch(b, True)
    out, t_out = getattr(gl, name)(ga, gb), getattr(torch, name)(ta, tb)
    assert_close(out, t_out)
    out.sum().backward()
    t_out.sum().backward()
    assert_close(ga.grad, ta.grad)
    assert_close(gb.grad, tb.grad)


def test_outer_promotes_like_pytorch():
    out = gl.outer(gl.tensor([1, 2]), gl.tensor([0.5, 1.0, 2.0]))
    assert out.dtype is gl.float32
    assert_close(out, np.outer([1, 2], [0.5, 1.0, 2.0]))


@pytest.mark.parametrize("name, sa, sb, message", [
    ("mm", (3,), (3, 4), r"mm: self must be a 2-D tensor, but got float64 tensor of shape \(3\)"),
    ("mm", (2, 3), (3,), r"mm: mat2 must be a 2-D tensor"),
    ("mm", (2, 3), (4, 3), r"mm: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x3\)"),
    ("bmm", (2, 3), (2, 3, 4), r"bmm: batch1 must be a 3-D tensor"),
    ("bmm", (2, 2, 3), (2, 4, 4), r"bmm: mat1 and mat2 shapes cannot be multiplied \(2x2x3 and 2x4x4\)"),
    ("bmm", (2, 2, 3), (3, 3, 4), r"bmm: the batch sizes differ \(2x2x3 and 3x3x4\); bmm does not broadcast"),
    ("bmm", (1, 2, 3), (3, 3, 4), r"bmm: the batch sizes differ"),
    ("mv", (2, 3), (3, 1), r"mv: vec must be a 1-D tensor"),
    ("mv", (2, 3), (4,), r"mv: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4\)"),
    ("dot", (2, 3), (3,), r"dot: self must be a 1-D tensor"),
    ("dot", (3,), (4,), r"dot: mat1 and mat2 shapes cannot be multiplied \(3 and 4\)"),
    ("outer", (2, 3), (3,), r"outer: expected 1-D argument self, but got float64 tensor of shape \(2, 3\)"),
])
def test_fixed_shape_products_reject_other_shapes(name, sa, sb, message):
    with pytest.raises(RuntimeError, match=message):
        getattr(gl, name)(leaf(randn(*sa)), leaf(randn(*sb)))


def test_dot_refuses_to_promote_dtypes():
    with pytest.raises(RuntimeError, match="dot: expected m1 and m2 to have the same dtype, but got: int64 != float32"):
        gl.dot(gl.tensor([1, 2]), gl.tensor([1.0, 2.0]))


# --- einsum ----------------------------------------------------------------------------------------

EINSUM = [  # (equation, operand shapes)
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),  # implicit output: labels seen once, sorted
    ("ba,cb", [(3, 2), (4, 3)]),  # implicit output sorts: 'ac'
    ("i,i->", [(3,), (3,)]),
    ("i,i", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),  # i summed out of the only operand holding it
    ("ij,j->i", [(2, 3), (3,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,kl->ijkl", [(2, 3), (2, 2)]),
    ("ijk,ik->j", [(2, 3, 2), (2, 2)]),  # k summed out, j from the first operand only
    ("ii->i", [(3, 3)]),  # diagonal
    ("ii", [(3, 3)]),  # trace
    ("ii->", [(3, 3)]),
    ("iij->ij", [(2, 2, 3)]),
    ("iji->j", [(2, 3, 2)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("ij,jj->i", [(2, 3), (3, 3)]),
    ("bij,bjk->bik", [(4, 2, 3), (4, 3, 2)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (5, 3, 4)]),  # ellipsis dims broadcast
    ("...ij,...jk", [(4, 2, 3), (3, 2)]),  # implicit output with an ellipsis: '...' first
    ("...ii->...i", [(2, 3, 3)]),
    ("i...->...", [(2, 3, 4)]),
    ("ba,...", [(2, 3), (4,)]),
    ("...,...->...", [(2, 3), (3,)]),
    ("i,i,i->", [(3,), (3,), (3,)]),  # three operands
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),  # a size-1 label broadcasts, as in PyTorch
    ("Ab,bC->AC", [(2, 3), (3, 2)]),  # upper-case labels
    (" i j , j k -> i k ", [(2, 3), (3, 4)]),  # spaces are ignored
]
EINSUM_IDS = [eq.replace(" ", "_") for eq, _ in EINSUM]


def _operands(shapes):
    return [randn(*s, seed=i) for i, s in enumerate(shapes)]


@pytest.mark.parametrize("equation, shapes", EINSUM, ids=EINSUM_IDS)
def test_einsum_matches_numpy(equation, shapes):
    arrays = _operands(shapes)
    expected = np.einsum(equation.replace(" ", ""), *arrays)
    assert_close(gl.einsum(equation, *[leaf(a) for a in arrays]), expected)


@requires_torch
@pytest.mark.parametrize("equation, shapes", EINSUM, ids=EINSUM_IDS)
def test_einsum_values_and_gradients_match_torch(equation, shapes):
    arrays = _operands(shapes)
    ours, theirs = [leaf(a) for a in arrays], [to_torch(a, True) for a in arrays]
    out, t_out = gl.einsum(equation, *ours), torch.einsum(equation, *theirs)
    assert_close(out, t_out)
    weight = randn(*t_out.shape, seed=9)
    (out * leaf(weight, requires_grad=False)).sum().backward()
    (t_out * to_torch(weight)).sum().backward()
    for x, t in zip(ours, theirs):
        assert_close(x.grad, t.grad)


@pytest.mark.parametrize("equation, shapes", EINSUM, ids=EINSUM_IDS)
def test_einsum_gradcheck(equation, shapes):
    inputs = [leaf(a) for a in _operands(shapes)]
    assert gradcheck(lambda *xs: gl.einsum(equation, *xs), inputs)


@pytest.mark.parametrize("equation, shapes", [("ij,jk->ik", [(2, 3), (3, 2)]), ("ii->i", [(2, 2)]),
                                               ("ij->j", [(2, 3)]), ("...ij,...jk", [(2, 1, 2), (2, 1)]),
                                               ("i,i,i->", [(3,), (3,), (3,)])])
def test_einsum_gradgradcheck(equation, shapes):
    inputs = [leaf(a) for a in _operands(shapes)]
    assert gradgradcheck(lambda *xs: gl.einsum(equation, *xs), inputs)


def test_einsum_gradcheck_noncontiguous():
    a, b = noncontiguous_leaf(randn(2, 3)), noncontiguous_leaf(randn(3, 4, seed=1))
    assert gradcheck(lambda x, y: gl.einsum("ij,jk->ik", x, y), (a, b))


def test_einsum_takes_the_operands_as_a_list_too():
    a, b = randn(2, 3), randn(3, 4, seed=1)
    assert_close(gl.einsum("ij,jk", [leaf(a), leaf(b)]), a @ b)
    assert_close(gl.einsum("ij,jk", (leaf(a), leaf(b))), a @ b)


def test_einsum_gradient_skips_operands_without_grad():
    a, b = leaf(randn(2, 3)), leaf(randn(3, 4, seed=1), requires_grad=False)
    gl.einsum("ij,jk->ik", a, b).sum().backward()
    assert b.grad is None
    assert_close(a.grad, np.ones((2, 4)) @ randn(3, 4, seed=1).T)


def test_einsum_of_a_permutation_or_diagonal_is_a_view():
    x = gl.tensor(np.arange(9.0).reshape(3, 3))
    diagonal = gl.einsum("ii->i", x)
    x.add_(1.0)
    assert_close(diagonal, [1.0, 5.0, 9.0])
    assert gl.einsum("ij->i", x)._version is not x._version  # a sum is a new tensor


@pytest.mark.parametrize("equation, shapes, message", [
    ("ij,jk->ik", [(2, 3)], r"einsum\(\): fewer operands were provided than specified in the equation"),
    ("ij->ij", [(2, 3), (3,)], r"einsum\(\): more operands were provided than specified in the equation"),
    ("ijk->i", [(2, 3)], r"the number of subscripts in the equation \(3\) does not match the number of "
                         r"dimensions \(2\) for operand 0 and no ellipsis was given"),
    ("ij...->i", [(2,)], r"the number of subscripts in the equation \(2\) is more than the number of dimensions \(1\)"),
    ("i1->i", [(2, 3)], r"invalid subscript given at index 1 in the equation string"),
    ("i.j->i", [(2, 3)], r"einsum\(\): invalid term 'i.j'"),
    ("i->ii", [(2,)], r"output subscript i appears more than once in the output"),
    ("i->j", [(2,)], r"output subscript j does not appear in the equation for any input operand"),
    ("ij,jk->ik", [(2, 3), (4, 5)], r"subscript j has size 4 for operand 1 which does not broadcast with previously "
                                   r"seen size 3"),
    ("ii->i", [(2, 3)], r"subscript i is repeated for operand 0 but the sizes don't match, 2 != 3"),
])
def test_einsum_bad_input(equation, shapes, message):
    with pytest.raises(RuntimeError, match=message):
        gl.einsum(equation, *[leaf(randn(*s)) for s in shapes])


def test_einsum_operands_must_share_a_dtype():
    with pytest.raises(RuntimeError, match="einsum\\(\\): expected all operands to have the same dtype and device"):
        gl.einsum("i,i", gl.ones(2), gl.ones(2, dtype=gl.float64))


def test_einsum_equation_comes_first():
    with pytest.raises(TypeError, match="einsum\\(\\): the first argument must be the equation string"):
        gl.einsum(gl.ones(2), "i->")


# --- gradlab.linalg: norms -------------------------------------------------------------------------

VECTOR_NORMS = [  # (ord, dim, keepdim)
    (2, None, False), (1, None, False), (np.inf, None, False), (-np.inf, None, False), (3, None, False),
    (0.5, None, False), (2, 1, False), (2, -1, True), (1, (0, 2), False), (np.inf, (1,), True), (-1.5, 0, False),
]


def _np_vector_norm(x, ord, dim, keepdim):
    axes = tuple(range(x.ndim)) if dim is None else (dim if isinstance(dim, tuple) else (dim,))
    a = np.abs(x)
    if ord == np.inf:
        return a.max(axis=axes, keepdims=keepdim)
    if ord == -np.inf:
        return a.min(axis=axes, keepdims=keepdim)
    return (a ** ord).sum(axis=axes, keepdims=keepdim) ** (1.0 / ord)


@pytest.mark.parametrize("ord, dim, keepdim", VECTOR_NORMS)
def test_vector_norm_matches_numpy_and_gradcheck(ord, dim, keepdim):
    x = randn(2, 3, 4)
    out = gl.linalg.vector_norm(leaf(x), ord, dim, keepdim)
    assert_close(out, _np_vector_norm(x, ord, dim, keepdim))
    assert gradcheck(lambda t: gl.linalg.vector_norm(t, ord, dim, keepdim), (leaf(x),))


MATRIX_NORMS = ["fro", 1, -1, np.inf, -np.inf]


@pytest.mark.parametrize("ord", MATRIX_NORMS)
@pytest.mark.parametrize("dim, keepdim", [((-2, -1), False), ((0, 2), True), ((2, 0), False)])
def test_matrix_norm_matches_numpy_and_gradcheck(ord, dim, keepdim):
    x = randn(3, 2, 4)
    expected = np.linalg.norm(x, ord=ord, axis=dim, keepdims=keepdim)
    assert_close(gl.linalg.matrix_norm(leaf(x), ord, dim, keepdim), expected)
    assert gradcheck(lambda t: gl.linalg.matrix_norm(t, ord, dim, keepdim), (leaf(x),))


@pytest.mark.parametrize("shape, ord, dim, reference", [
    ((2, 3, 4), None, None, lambda x: np.sqrt((x ** 2).sum())),  # every element, flattened
    ((4,), 1, None, lambda x: np.abs(x).sum()),  # 1-D: a vector norm
    ((3, 4), np.inf, None, lambda x: np.abs(x).sum(1).max()),  # 2-D: a matrix norm
    ((3, 4), None, None, lambda x: np.linalg.norm(x)),
    ((2, 3, 4), 3, 1, lambda x: (np.abs(x) ** 3).sum(1) ** (1 / 3)),
    ((2, 3, 4), None, (0, 2), lambda x: np.sqrt((x ** 2).sum((0, 2)))),
    ((2, 3, 4), 1, (2, 1), lambda x: np.linalg.norm(x, 1, axis=(2, 1))),
])
def test_norm_picks_a_vector_or_a_matrix_norm(shape, ord, dim, reference):
    x = randn(*shape)
    assert_close(gl.linalg.norm(leaf(x), ord, dim), reference(x))


def test_norm_gradgradcheck():
    assert gradgradcheck(lambda t: gl.linalg.norm(t, dim=1), (leaf(randn(2, 3)),))


def test_norm_keeps_float32():
    assert gl.linalg.norm(gl.ones(2, 3)).dtype is gl.float32
    assert gl.linalg.vector_norm(gl.ones(3), dtype=gl.float64).dtype is gl.float64


@requires_torch
@pytest.mark.parametrize("fn, kwargs", [
    ("vector_norm", {}), ("vector_norm", {"ord": 1, "dim": 1}), ("vector_norm", {"ord": float("inf"), "dim": (0, 2)}),
    ("vector_norm", {"ord": 3, "dim": -1, "keepdim": True}),
    ("matrix_norm", {}), ("matrix_norm", {"ord": 1}), ("matrix_norm", {"ord": float("-inf"), "dim": (0, 2)}),
    ("norm", {}), ("norm", {"dim": 1}), ("norm", {"ord": -1, "dim": (1, 2), "keepdim": True}),
])
def test_norms_match_torch(fn, kwargs):
    x = randn(3, 2, 4)
    ours, theirs = leaf(x), to_torch(x, True)
    out, t_out = getattr(gl.linalg, fn)(ours, **kwargs), getattr(torch.linalg, fn)(theirs, **kwargs)
    assert_close(out, t_out)
    out.sum().backward()
    t_out.sum().backward()
    assert_close(ours.grad, theirs.grad)


@pytest.mark.parametrize("call, error, message", [
    (lambda: gl.linalg.vector_norm(gl.tensor([1, 2])), RuntimeError,
     r"linalg.vector_norm: Expected a floating point tensor as input. Got int64 tensor"),
    (lambda: gl.linalg.vector_norm(gl.ones(3), "fro"), TypeError, r"linalg.vector_norm: ord must be a number"),
    (lambda: gl.linalg.matrix_norm(gl.ones(3)), RuntimeError,
     r"linalg.matrix_norm: The input tensor A must have at least 2 dimensions"),
    (lambda: gl.linalg.matrix_norm(gl.ones(3, 3), 3), RuntimeError,
     r"linalg.matrix_norm: Order 3 not supported; use 'fro', 'nuc', 2, -2, 1, -1, inf or -inf"),
    (lambda: gl.linalg.matrix_norm(gl.ones(3, 3), 3), RuntimeError, r"linalg.matrix_norm: Order 3 not supported"),
    (lambda: gl.linalg.matrix_norm(gl.ones(3, 3), dim=(0, -2)), RuntimeError,
     r"linalg.matrix_norm: dims must be different"),
    (lambda: gl.linalg.matrix_norm(gl.ones(3, 3), dim=0), RuntimeError, r"linalg.matrix_norm: dim must be a 2-tuple"),
    (lambda: gl.linalg.norm(gl.ones(2, 3, 4), 2), RuntimeError,
     r"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got 3D"),
    (lambda: gl.linalg.norm(gl.ones(2, 3, 4), dim=(0, 1, 2)), RuntimeError,
     r"linalg.norm: If dim is specified, it must be of length 1 or 2. Got \[0, 1, 2\]"),
])
def test_norms_bad_input(call, error, message):
    with pytest.raises(error, match=message):
        call()

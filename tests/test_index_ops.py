"""index_add, index_copy, index_fill, index_reduce, index_put, scatter_reduce, scatter(reduce=) and their in-place
forms; and indices out of range: an error naming the op, the index, the dim and its size, never wrapped around."""

import numpy as np
import pytest
from helpers import assert_close, leaf, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn.functional as F
from gradlab.autograd import gradcheck, gradgradcheck

A = randn(4, 3, seed=11)
SRC = randn(5, 3, seed=12)
ROWS = np.array([0, 2, 0, 3, 2])  # repeats: values meet at rows 0 and 2, row 1 gets nothing
SCATTER_INDEX = np.array([[0, 1, 2], [2, 1, 0], [0, 0, 0], [3, 1, 3], [2, 2, 1]])


def _to(module, value):
    if isinstance(value, np.ndarray):
        return gl.tensor(value) if module is gl else torch.from_numpy(value.copy())
    return value


FORWARD = [
    ("index_add", lambda m, x, i, s: m.index_add(x, 0, i, s), (A, ROWS, SRC)),
    ("index_add alpha dim 1", lambda m, x, i, s: x.index_add(1, i, s, alpha=2.5), (A, np.array([2, 2]), SRC[:4, :2])),
    ("index_copy", lambda m, x, i, s: m.index_copy(x, 1, i, s), (A, np.array([2, 0]), SRC[:4, :2])),
    ("index_fill", lambda m, x, i: m.index_fill(x, 0, i, -1.5), (A, np.array([1, -1]))),
    ("index_fill 0-d tensor value", lambda m, x, i: x.index_fill(1, i, m.tensor(7.0, dtype=m.float64)),
     (A, np.array([0]))),
    ("index_add 0-d", lambda m, x, i, s: x.index_add(0, i, s), (np.array(1.0), np.array([0]), np.array(3.0))),
    ("index_copy 0-d", lambda m, x, i, s: x.index_copy(-1, i, s), (np.array(1.0), np.array(0), np.array(3.0))),
    ("index_fill 0-d", lambda m, x, i: x.index_fill(0, i, 2.0), (np.array(1.0), np.array([0]))),
    ("index_reduce 0-d", lambda m, x, i, s: x.index_reduce(0, i, s, "amax"), (np.array(1.0), np.array([0]), np.array(3.0))),
    ("index_select 0-d", lambda m, x, i: x.index_select(0, i), (np.array(1.0), np.array([0]))),
    ("index_put", lambda m, x, i, j, v: m.index_put(x, (i, j), v), (A, np.array([0, -1]), np.array([2, 1]),
                                                                      np.array([5.0, 6.0]))),
    ("index_put accumulate", lambda m, x, i, v: x.index_put((i,), v, accumulate=True), (A, np.array([1, 1, 0]),
                                                                                       SRC[:3])),
    ("torch.index_put_", lambda m, x, i, v: m.index_put_(x, (i,), v), (A, np.array([1, 1]), SRC[:2])),
    ("index_put mask", lambda m, x, mask: x.index_put((mask,), m.tensor(0.0, dtype=m.float64)), (A, A > 0)),
    ("scatter reduce=add", lambda m, x, i, s: m.scatter(x, 0, i, s, reduce="add"), (A, SCATTER_INDEX, SRC)),
    ("scatter reduce=multiply", lambda m, x, i, s: x.scatter(0, i, s, reduce="multiply"), (A, SCATTER_INDEX, SRC)),
    ("scatter value reduce=add", lambda m, x, i: x.scatter(0, i, 2.0, reduce="add"), (A, SCATTER_INDEX)),
    ("scatter_reduce int mean", lambda m, x, i, s: x.scatter_reduce(0, i, s, "mean"),
     (np.array([2, 3, 4]), np.array([0, 0, 2]), np.array([5, 6, 8]))),
    ("scatter_reduce int amax, include_self=False", lambda m, x, i, s: x.scatter_reduce(0, i, s, "amax", include_self=False),
     (np.array([2, 3, 4]), np.array([0, 0, 2]), np.array([-5, -6, 8]))),
] + [
    (f"scatter_reduce {reduce}{'' if include_self else ' without self'}",
     (lambda reduce, include_self: lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, reduce, include_self=include_self))(
         reduce, include_self), (A, SCATTER_INDEX, SRC))
    for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)
] + [
    (f"index_reduce {reduce}{'' if include_self else ' without self'}",
     (lambda reduce, include_self: lambda m, x, i, s: x.index_reduce(0, i, s, reduce, include_self=include_self))(
         reduce, include_self), (A, ROWS, SRC))
    for reduce in ("prod", "mean", "amax", "amin") for include_self in (True, False)
]


@requires_torch
@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("fn, args", [f[1:] for f in FORWARD], ids=[f[0] for f in FORWARD])
def test_forward_matches_torch(fn, args):
    ours, theirs = fn(gl, *(_to(gl, a) for a in args)), fn(torch, *(_to(torch, a) for a in args))
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    assert_close(ours, theirs.numpy(), rtol=1e-12, atol=1e-15)


def test_against_numpy():
    expected = A.copy()
    np.add.at(expected, ROWS, SRC)
    assert_close(gl.index_add(gl.tensor(A), 0, gl.tensor(ROWS), gl.tensor(SRC)), expected)
    expected = A.copy()
    np.maximum.at(expected, (SCATTER_INDEX, np.arange(3)), SRC)
    assert_close(gl.scatter_reduce(gl.tensor(A), 0, gl.tensor(SCATTER_INDEX), gl.tensor(SRC), "amax"), expected)


@requires_torch
@pytest.mark.filterwarnings("ignore:index_reduce\\(\\) is in beta")
@pytest.mark.parametrize("method, args", [
    ("index_add_", lambda m: (0, _to(m, ROWS), _to(m, SRC))),
    ("index_copy_", lambda m: (0, _to(m, np.array([3, 1, 0])), _to(m, SRC[:3]))),
    ("index_fill_", lambda m: (1, _to(m, np.array([2])), 0.5)),
    ("index_reduce_", lambda m: (0, _to(m, ROWS), _to(m, SRC), "amin")),
    ("index_put_", lambda m: ((_to(m, np.array([1, 2])),), _to(m, SRC[:2]))),
    ("scatter_reduce_", lambda m: (0, _to(m, SCATTER_INDEX), _to(m, SRC), "prod")),
    ("scatter_", lambda m: (0, _to(m, SCATTER_INDEX), _to(m, SRC))),
])
def test_in_place_forms_write_into_the_tensor(method, args):
    ours, theirs = gl.tensor(A), torch.from_numpy(A.copy())
    assert getattr(ours, method)(*args(gl)) is ours
    getattr(theirs, method)(*args(torch))
    assert_close(ours, theirs.numpy())


def test_scatter_in_place_with_reduce():
    x = gl.tensor(A)
    x.scatter_(0, gl.tensor(SCATTER_INDEX), gl.tensor(SRC), reduce="add")
    expected = A.copy()
    np.add.at(expected, (SCATTER_INDEX, np.arange(3)), SRC)
    assert_close(x, expected)


# --- gradients ---------------------------------------------------------------------------------

REDUCE_GRADS = [
    (f"scatter_reduce {reduce}{'' if include_self else ' without self'}",
     (lambda reduce, include_self: lambda x, s: gl.scatter_reduce(x, 0, gl.tensor(SCATTER_INDEX), s, reduce,
                                                                 include_self=include_self))(reduce, include_self))
    for reduce in ("sum", "prod", "mean", "amax", "amin") for include_self in (True, False)
] + [
    ("index_add", lambda x, s: x.index_add(0, gl.tensor(ROWS), s, alpha=-2.0)),
    ("index_copy", lambda x, s: x.index_copy(0, gl.tensor([3, 1, 0, 2, 0])[:4], s[:4])),
    ("index_reduce prod", lambda x, s: x.index_reduce(0, gl.tensor(ROWS), s, "prod")),
    ("index_reduce mean without self", lambda x, s: x.index_reduce(0, gl.tensor(ROWS), s, "mean", include_self=False)),
    ("index_put accumulate", lambda x, s: x.index_put((gl.tensor(ROWS),), s, accumulate=True)),
    ("scatter reduce=multiply", lambda x, s: x.scatter(0, gl.tensor(SCATTER_INDEX), s, reduce="multiply")),
]


@pytest.mark.parametrize("fn", [g[1] for g in REDUCE_GRADS], ids=[g[0] for g in REDUCE_GRADS])
def test_gradcheck(fn):
    assert gradcheck(fn, (leaf(A), leaf(SRC)))


def test_index_fill_gradcheck():
    assert gradcheck(lambda x: x.index_fill(1, gl.tensor([0, 2]), 3.0), (leaf(A),))


def test_gradgradcheck_of_scatter_reduce_prod():
    index = gl.tensor(SCATTER_INDEX)
    assert gradgradcheck(lambda x, s: gl.scatter_reduce(x, 0, index, s, "prod"), (leaf(A), leaf(SRC)))


@requires_torch
@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "mean"])
@pytest.mark.parametrize("include_self", [True, False])
def test_gradients_with_zeros_and_ties_match_torch(reduce, include_self):
    """Zeros in a product and equal values at a max: the cases where the rule, not the formula, decides."""
    x = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 4.0]])
    src = np.array([[0.0, 2.0, 5.0], [3.0, 2.0, 4.0], [1.0, 0.0, 4.0]])
    index = np.array([[0, 0, 1], [1, 0, 1], [0, 1, 1]])
    ours_x, ours_s = leaf(x), leaf(src)
    theirs_x, theirs_s = torch.tensor(x, requires_grad=True), torch.tensor(src, requires_grad=True)
    weights = randn(2, 3, seed=1)
    out = gl.scatter_reduce(ours_x, 0, gl.tensor(index), ours_s, reduce, include_self=include_self)
    (out * gl.tensor(weights)).sum().backward()
    expected = torch.scatter_reduce(theirs_x, 0, torch.tensor(index), theirs_s, reduce, include_self=include_self)
    (expected * torch.from_numpy(weights)).sum().backward()
    assert_close(out, expected)
    assert_close(ours_x.grad, theirs_x.grad)
    assert_close(ours_s.grad, theirs_s.grad)


# --- bad calls -----------------------------------------------------------------------------------


@pytest.mark.parametrize("call, error, message", [
    (lambda x: x.index_add(0, gl.tensor([[0]]), gl.zeros(1, 3, dtype=gl.float64)), IndexError,
     r"index_add\(\): Index is supposed to be a vector"),
    (lambda x: x.index_add(0, gl.tensor([1]), gl.zeros(1, 3)), RuntimeError,
     r"index_add\(\): self \(float64\) and source \(float32\) must have the same scalar type"),
    (lambda x: x.index_copy(0, gl.tensor([1, 2]), gl.zeros(3, 3, dtype=gl.float64)), RuntimeError,
     r"index_copy\(\): source float64 tensor of shape \(3, 3\) on cpu does not fit: it needs shape \(2, 3\)"),
    (lambda x: x.index_fill(0, gl.tensor([0]), gl.ones(2)), RuntimeError,
     r"index_fill\(\): only supports a 0-dimensional value tensor"),
    (lambda x: x.index_add(0, [0], gl.zeros(1, 3, dtype=gl.float64)), TypeError,
     r"index_add\(\): argument 'index' must be a Tensor, not list"),
    (lambda x: x.index_reduce(0, gl.tensor([0]), gl.zeros(1, 3, dtype=gl.float64), "sum"), RuntimeError,
     r"index_reduce\(\): reduce argument must be one of prod, mean, amax, amin, got 'sum'"),
    (lambda x: x.scatter_reduce(0, gl.tensor([[0]]), gl.zeros(1, 1, dtype=gl.float64), "max"), RuntimeError,
     r"scatter_reduce\(\): reduce argument must be one of sum, prod, mean, amax, amin, got 'max'"),
    (lambda x: x.scatter(0, gl.tensor([[0]]), 1.0, reduce="mean"), RuntimeError,
     r"scatter\(\): reduce argument must be either add or multiply, got 'mean'"),
    (lambda x: x.index_put(gl.tensor([0]), gl.zeros(3, dtype=gl.float64)), TypeError,
     r"index_put\(\): argument 'indices' must be a tuple of Tensors"),
])
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call(gl.tensor(A))


# --- indices out of range: errors, never wrapped -------------------------------------------------

X = np.array([1.0, 2.0, 3.0])

# (op, call on x with index tensor i) for every op whose indices must lie in [0, size)
NON_NEGATIVE = [
    ("index_select", lambda x, i: x.index_select(0, i)),
    ("gather", lambda x, i: x.gather(0, i)),
    ("scatter", lambda x, i: x.scatter(0, i, 1.0)),
    ("scatter", lambda x, i: x.scatter(0, i, gl.ones(1, dtype=gl.float64), reduce="add")),
    ("scatter_add", lambda x, i: x.scatter_add(0, i, gl.ones(1, dtype=gl.float64))),
    ("scatter_reduce", lambda x, i: x.scatter_reduce(0, i, gl.ones(1, dtype=gl.float64), "amax")),
    ("take_along_dim", lambda x, i: x.take_along_dim(i, 0)),
    ("index_add", lambda x, i: x.index_add(0, i, gl.ones(1, dtype=gl.float64))),
    ("index_copy", lambda x, i: x.index_copy(0, i, gl.ones(1, dtype=gl.float64))),
    ("index_reduce", lambda x, i: x.index_reduce(0, i, gl.ones(1, dtype=gl.float64), "prod")),
]
NON_NEGATIVE_IDS = [f"{op} {n}" for n, (op, _) in enumerate(NON_NEGATIVE)]


@pytest.mark.parametrize("op, call", NON_NEGATIVE, ids=NON_NEGATIVE_IDS)
@pytest.mark.parametrize("bad", [-1, 3])
def test_an_index_out_of_range_is_an_error(op, call, bad):
    with pytest.raises(IndexError, match=rf"{op}: index {bad} is out of bounds for dimension 0 with size 3"):
        call(gl.tensor(X), gl.tensor([bad]))
    with pytest.raises(RuntimeError):  # PyTorch raises RuntimeError for some of these: both work
        call(gl.tensor(X), gl.tensor([bad]))


def test_the_message_says_negatives_are_not_counted_from_the_end():
    with pytest.raises(IndexError, match=r"gather: index -1 .*; negative indices are not counted from the end here"):
        gl.tensor(X).gather(0, gl.tensor([-1]))


@requires_torch
@pytest.mark.parametrize("op, call", NON_NEGATIVE, ids=NON_NEGATIVE_IDS)
def test_torch_refuses_the_same_negative_index(op, call):
    def torch_call(x, i):  # the same call with torch tensors
        ones = torch.ones(1, dtype=torch.float64)
        return {
            "index_select": lambda: x.index_select(0, i), "gather": lambda: x.gather(0, i),
            "scatter": lambda: x.scatter(0, i, 1.0), "scatter_add": lambda: x.scatter_add(0, i, ones),
            "scatter_reduce": lambda: x.scatter_reduce(0, i, ones, "amax"),
            "take_along_dim": lambda: torch.take_along_dim(x, i), "index_add": lambda: x.index_add(0, i, ones),
            "index_copy": lambda: x.index_copy(0, i, ones),
            "index_reduce": lambda: x.index_reduce(0, i, ones, "prod"),
        }[op]()

    with pytest.raises((IndexError, RuntimeError)):
        torch_call(torch.from_numpy(X.copy()), torch.tensor([-1]))


@pytest.mark.parametrize("method, args", [
    ("scatter_", lambda: (0, gl.tensor([0, -1]), 9.0)),
    ("scatter_add_", lambda: (0, gl.tensor([0, 3]), gl.ones(2, dtype=gl.float64))),
    ("index_add_", lambda: (0, gl.tensor([0, -1]), gl.ones(2, dtype=gl.float64))),
    ("index_copy_", lambda: (0, gl.tensor([0, 5]), gl.ones(2, dtype=gl.float64))),
    ("scatter_reduce_", lambda: (0, gl.tensor([0, -2]), gl.ones(2, dtype=gl.float64), "sum")),
    ("index_fill_", lambda: (0, gl.tensor([0, 3]), 9.0)),
    ("index_put_", lambda: ((gl.tensor([0, 3]),), gl.ones(2, dtype=gl.float64))),
])
def test_a_failed_in_place_write_leaves_the_tensor_unchanged(method, args):
    x = gl.tensor(X)
    version = x._version[0]
    with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 3"):
        getattr(x, method)(*args())
    assert x.tolist() == X.tolist() and x._version[0] == version


@pytest.mark.parametrize("call, expected", [
    (lambda x: x[-1], 3.0),
    (lambda x: x[gl.tensor([-1, 0])].tolist(), [3.0, 1.0]),
    (lambda x: x[[-1, 0]].tolist(), [3.0, 1.0]),
    (lambda x: x.narrow(0, -2, 2).tolist(), [2.0, 3.0]),
    (lambda x: x.select(0, -1).item(), 3.0),
    (lambda x: x.take(gl.tensor([-1])).tolist(), [3.0]),
    (lambda x: x.index_fill(0, gl.tensor([-1]), 0.0).tolist(), [1.0, 2.0, 0.0]),
    (lambda x: x.index_put((gl.tensor([-1]),), gl.zeros(1, dtype=gl.float64)).tolist(), [1.0, 2.0, 0.0]),
    (lambda x: x.put(gl.tensor([-1]), gl.zeros(1, dtype=gl.float64)).tolist(), [1.0, 2.0, 0.0]),
])
def test_negative_indices_count_from_the_end_where_pytorch_accepts_them(call, expected):
    result = call(gl.tensor(X))
    assert (result.item() if isinstance(result, gl.Tensor) else result) == expected


@pytest.mark.parametrize("call, message", [
    (lambda x: x[3], r"index 3 is out of bounds for dimension 0 with size 3"),
    (lambda x: x[gl.tensor([-4])], r"index -4 is out of bounds for dimension 0 with size 3"),
    (lambda x: x.index_fill(0, gl.tensor([-4]), 0.0), r"index_fill: index -4 is out of bounds"),
    (lambda x: x.index_put((gl.tensor([3]),), gl.zeros(1, dtype=gl.float64)), r"index_put: index 3 is out of bounds"),
])
def test_negative_indices_beyond_the_start_are_errors_too(call, message):
    with pytest.raises(IndexError, match=message):
        call(gl.tensor(X))


@pytest.mark.parametrize("bad", [-1, 3])
@pytest.mark.parametrize("max_norm", [None, 1.0])
def test_embedding_refuses_an_index_out_of_range_before_touching_the_weights(bad, max_norm):
    weight = gl.tensor(randn(3, 2) * 5)
    before = weight.numpy().copy()
    with pytest.raises(IndexError, match=rf"embedding: index out of range in self: index {bad} for a table of 3 "):
        F.embedding(gl.tensor([0, bad]), weight, max_norm=max_norm)
    assert_close(weight, before)  # max_norm rescales rows in place, but only after the check

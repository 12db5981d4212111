"""Indexing: x[...] and x[...] = v, gather/scatter, index_select, masked_fill, take_along_dim, tril/triu, one_hot."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers import assert_close, leaf, noncontiguous_leaf, randn, requires_torch, to_torch, torch

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck

A = randn(3, 4, 5)


def long(values):
    return gl.tensor(values, dtype=gl.int64)


def mask(values):
    return gl.tensor(values, dtype=gl.bool)


# --- x[key]: each kind of key, forward against numpy ---------------------------------------------

# (name, key for gradlab, the same key for numpy)
KEYS = [
    ("int", 1, 1),
    ("negative int", -1, -1),
    ("int, int", (2, -3), (2, -3)),
    ("int, int, int", (0, 1, 2), (0, 1, 2)),
    ("slice", slice(1, None), slice(1, None)),
    ("slice with step", (slice(None), slice(0, 4, 2)), (slice(None), slice(0, 4, 2))),
    ("slice past the end", slice(1, 10), slice(1, 10)),
    ("None", (None, 1), (None, 1)),
    ("Ellipsis", (Ellipsis, 2), (Ellipsis, 2)),
    ("Ellipsis and None", (0, ..., None), (0, ..., None)),
    ("python True", True, True),
    ("python False", False, False),
    ("int list", [2, 0], [2, 0]),
    ("repeated int list", [0, 0, 2], [0, 0, 2]),
    ("int64 tensor", long([1, 2]), np.array([1, 2])),
    ("int32 tensor", gl.tensor([1, 2], dtype=gl.int32), np.array([1, 2])),
    ("negative int tensor", long([-1, 0]), np.array([-1, 0])),
    ("2-d int tensor", long([[0, 1], [2, 2]]), np.array([[0, 1], [2, 2]])),
    ("0-d int tensor", long(2), 2),
    ("numpy int", np.int64(1), 1),
    ("empty list", [], np.array([], dtype=np.int64)),
    ("bool tensor", mask([True, False, True]), np.array([True, False, True])),
    ("2-d bool tensor", gl.tensor(A[..., 0] > 0), A[..., 0] > 0),
    ("bool list", [True, False, True], np.array([True, False, True])),
    ("two int tensors", (long([0, 2]), long([1, 3])), (np.array([0, 2]), np.array([1, 3]))),
    ("int tensors that broadcast", (long([[0], [2]]), long([1, 3])), (np.array([[0], [2]]), np.array([1, 3]))),
    ("slice then int list", (slice(None), [3, 0]), (slice(None), [3, 0])),
    ("int then int list", (1, [3, 0]), (1, [3, 0])),
    ("separated int lists", ([0, 1], slice(None), [4, 2]), ([0, 1], slice(None), [4, 2])),
    ("mask then slice", (mask([True, False, True]), slice(1, 3)), (np.array([True, False, True]), slice(1, 3))),
    ("ellipsis then list", (Ellipsis, [0, 0, 1]), (Ellipsis, [0, 0, 1])),
]
KEY_IDS = [name for name, _, _ in KEYS]


@pytest.mark.parametrize("name, key, np_key", KEYS, ids=KEY_IDS)
def test_getitem_matches_numpy(name, key, np_key):
    out = gl.tensor(A)[key]
    assert out.dtype is gl.float64
    assert_close(out, A[np_key])


@pytest.mark.parametrize("name, key, np_key", KEYS, ids=KEY_IDS)
def test_getitem_gradcheck(name, key, np_key):
    x = leaf(A)
    # .clone(): gradcheck keeps the outputs it computes, and a view would change with its input
    assert gradcheck(lambda t: t[key].clone(), (x,))


@pytest.mark.parametrize("name, key, np_key", KEYS, ids=KEY_IDS)
def test_getitem_gradient_scatters_into_zeros_with_accumulation(name, key, np_key):
    x = leaf(A)
    seed = randn(*A[np_key].shape, seed=1)
    x[key].backward(gl.tensor(seed))
    expected = np.zeros_like(A)
    np.add.at(expected, np_key, seed)
    assert_close(x.grad, expected)


def test_repeated_indices_accumulate_their_gradients():
    x = leaf([1.0, 2.0, 3.0])
    x[[0, 0, 2, 0]].sum().backward()
    assert_close(x.grad, [3.0, 0.0, 1.0])


def test_getitem_of_a_noncontiguous_input():
    x = noncontiguous_leaf(A[0])
    assert_close(x[[2, 0], 1:], A[0][[2, 0], 1:])
    assert gradcheck(lambda t: t[[2, 0, 2], ::2], (x,))


def test_getitem_second_derivatives():
    x = leaf(randn(4, 3))
    assert gradgradcheck(lambda t: t[[0, 0, 3], 1:] * t[[1, 2, 2], :2], (x,))


def test_getitem_integer_tensor_keeps_dtype():
    x = gl.tensor([[1, 2], [3, 4]])
    assert x[1].dtype is gl.int64
    assert x[x > 1].tolist() == [2, 3, 4]


@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3), data=st.data())
@settings(max_examples=25, deadline=None)
def test_integer_array_indexing_on_random_shapes(shape, data):
    values = randn(*shape)
    picks = data.draw(st.lists(st.integers(-shape[0], shape[0] - 1), min_size=0, max_size=6))
    x = leaf(values)
    out = x[long(picks)]
    assert_close(out, values[np.array(picks, dtype=np.int64)])
    out.sum().backward()
    expected = np.zeros_like(values)
    np.add.at(expected, np.array(picks, dtype=np.int64), 1.0)
    assert_close(x.grad, expected)


# --- views ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("key", [1, (0, 2), (slice(None), slice(1, 3)), (None, ..., 1), (1, 2, 3)])
def test_basic_indexing_returns_a_view(key):
    x = gl.tensor(A)
    view = x[key]
    assert np.shares_memory(view.numpy(), x.numpy())
    assert view._version is x._version  # an in-place change through either is seen by both
    x.add_(1.0)
    assert_close(view, A[key] + 1.0)


@pytest.mark.parametrize("key", [[0, 1], mask([True, False, True]), (0, [1, 1])])
def test_advanced_indexing_returns_a_copy(key):
    x = gl.tensor(A)
    assert not np.shares_memory(x[key].numpy(), x.numpy())


def test_writing_into_a_view_changes_the_base():
    x = gl.zeros(3, 4)
    row = x[1]
    row[2] = 5.0
    assert x[1, 2].item() == 5.0
    assert x._version[0] == 1


# --- x[key] = value ------------------------------------------------------------------------------

SET_KEYS = [
    ("int", 1, 1),
    ("slice with step", (slice(None), slice(0, 5, 2)), (slice(None), slice(0, 5, 2))),
    ("None and Ellipsis", (None, ..., 0), (None, ..., 0)),
    ("int list", ([2, 0],), ([2, 0],)),
    ("mixed", (slice(1, 3), [3, 0]), (slice(1, 3), [3, 0])),
    ("bool mask", mask([False, True, True]), np.array([False, True, True])),
    ("2-d bool mask", gl.tensor(A[..., 0] > 0), A[..., 0] > 0),
]
SET_IDS = [name for name, _, _ in SET_KEYS]


@pytest.mark.parametrize("name, key, np_key", SET_KEYS, ids=SET_IDS)
def test_setitem_matches_numpy(name, key, np_key):
    values = randn(*A[np_key].shape, seed=2)
    x = gl.tensor(A)
    x[key] = gl.tensor(values)
    expected = A.copy()
    expected[np_key] = values
    assert_close(x, expected)


@pytest.mark.parametrize("name, key, np_key", SET_KEYS, ids=SET_IDS)
def test_setitem_gradients_to_input_and_value(name, key, np_key):
    def put(a, v):
        x = a * 1  # a non-leaf: a leaf that requires grad cannot be written in place
        x[key] = v
        return x

    a, v = leaf(A), leaf(randn(*A[np_key].shape, seed=3))
    assert gradcheck(put, (a, v))


def test_setitem_gradient_values():
    a, v = leaf(randn(3, 4)), leaf(randn(4, seed=1))
    x = a * 1
    x[1] = v
    seed = randn(3, 4, seed=2)
    x.backward(gl.tensor(seed))
    expected_a = seed.copy()
    expected_a[1] = 0.0
    assert_close(a.grad, expected_a)
    assert_close(v.grad, seed[1])


def test_setitem_broadcast_value_gets_the_summed_gradient():
    a, v = leaf(randn(3, 4)), leaf(randn(1, seed=1))
    x = a * 1
    x[:, 1:3] = v
    x.sum().backward()
    assert_close(v.grad, [6.0])
    assert gradcheck(lambda a, v: _put(a * 1, (slice(None), slice(1, 3)), v), (a, v))


def test_setitem_with_extra_leading_ones_in_value():
    a, v = leaf(randn(3, 4)), leaf(randn(1, 4, seed=1))
    assert gradcheck(lambda a, v: _put(a * 1, 0, v), (a, v))


def _put(x, key, value):
    x[key] = value
    return x


def test_setitem_with_numbers_lists_and_casts():
    x = gl.zeros(2, 3)
    x[0] = 1.5
    x[1, :2] = [7, 8]
    assert x.tolist() == [[1.5, 1.5, 1.5], [7.0, 8.0, 0.0]]
    ints = gl.tensor([1, 2, 3])
    ints[0] = 9.7  # written in the tensor's own dtype, as in PyTorch
    assert ints.dtype is gl.int64 and ints.tolist() == [9, 2, 3]


def test_setitem_on_a_leaf_that_requires_grad_is_an_error():
    x = leaf(A)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        x[0] = 1.0
    with gl.no_grad():
        x[0] = 1.0
    assert x[0].detach().numpy().tolist() == np.ones((4, 5)).tolist()


def test_setitem_value_of_the_wrong_shape():
    x = gl.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"__setitem__: shape mismatch.*\(3\)"):
        x[0] = gl.ones(3)


# --- index_select, gather, scatter, scatter_add, take_along_dim ---------------------------------

def test_index_select_matches_numpy():
    x = gl.tensor(A)
    assert_close(x.index_select(1, long([3, 0, 3])), np.take(A, [3, 0, 3], axis=1))
    assert_close(gl.index_select(x, -1, long(2)), A[..., [2]])
    assert_close(x.index_select(0, gl.tensor([2, 1], dtype=gl.int32)), A[[2, 1]])


def test_index_select_gradcheck():
    x = leaf(A)
    assert gradcheck(lambda t: t.index_select(1, long([3, 0, 3])), (x,))
    assert gradcheck(lambda t: gl.index_select(t, 0, long([1])), (noncontiguous_leaf(A[0]),))


GATHER_INDEX = np.array([[0, 2, 1, 0], [2, 2, 0, 1]])  # shape (2, 4), picks along dim 0 of a (3, 5) input


def test_gather_matches_numpy():
    x = randn(3, 5)
    out = gl.tensor(x).gather(0, long(GATHER_INDEX))
    # only the first index.size(1) columns of the input take part, as in PyTorch
    assert_close(out, np.take_along_axis(x[:, :4], GATHER_INDEX, axis=0))
    idx = np.array([[4, 0], [1, 1], [3, 3]])
    assert_close(gl.gather(gl.tensor(x), -1, long(idx)), np.take_along_axis(x, idx, axis=1))


def test_gather_gradcheck_and_gradient_is_scatter_add():
    x = leaf(randn(3, 5))
    assert gradcheck(lambda t: t.gather(0, long(GATHER_INDEX)), (x,))
    seed = randn(2, 4, seed=1)
    x.gather(0, long(GATHER_INDEX)).backward(gl.tensor(seed))
    expected = np.zeros((3, 5))
    np.add.at(expected, (GATHER_INDEX, np.arange(4)[None, :]), seed)
    assert_close(x.grad, expected)


def test_gather_second_derivatives():
    assert gradgradcheck(lambda t: t.gather(1, long([[0, 0], [2, 1]])) ** 2, (leaf(randn(2, 3)),))


SCATTER_INDEX = np.array([[1, 0, 2], [0, 2, 1]])  # no repeats within a column: scatter has one writer per place


def test_scatter_matches_numpy():
    x, src = randn(3, 4), randn(2, 5, seed=1)
    out = gl.tensor(x).scatter(0, long(SCATTER_INDEX), gl.tensor(src))
    expected = x.copy()
    for i in range(2):
        for j in range(3):
            expected[SCATTER_INDEX[i, j], j] = src[i, j]
    assert_close(out, expected)
    filled = gl.scatter(gl.tensor(x), 1, long([[3], [0], [1]]), value=-1.0)
    expected = x.copy()
    expected[[0, 1, 2], [3, 0, 1]] = -1.0
    assert_close(filled, expected)


def test_scatter_gradcheck():
    x, src = leaf(randn(3, 4)), leaf(randn(2, 5, seed=1))
    assert gradcheck(lambda a, s: a.scatter(0, long(SCATTER_INDEX), s), (x, src))
    assert gradcheck(lambda a: a.scatter(1, long([[3], [0], [1]]), 2.0), (x,))


def test_scatter_add_matches_numpy_with_repeated_indices():
    x, src = randn(3, 4), randn(3, 4, seed=1)
    index = np.array([[0, 0, 2, 1], [0, 1, 1, 1], [2, 2, 2, 0]])
    out = gl.tensor(x).scatter_add(0, long(index), gl.tensor(src))
    expected = x.copy()
    np.add.at(expected, (index, np.arange(4)[None, :]), src)
    assert_close(out, expected)
    assert_close(gl.scatter_add(gl.tensor(x), 0, long(index), gl.tensor(src)), expected)


def test_scatter_add_gradcheck_and_gradient_is_gather():
    x, src = leaf(randn(3, 4)), leaf(randn(3, 5, seed=1))
    index = long([[0, 0, 2, 1], [0, 1, 1, 1]])
    assert gradcheck(lambda a, s: a.scatter_add(0, index, s), (x, src))
    seed = randn(3, 4, seed=2)
    x.scatter_add(0, index, src).backward(gl.tensor(seed))
    expected = np.zeros((3, 5))
    expected[:2, :4] = np.take_along_axis(seed, index.numpy(), axis=0)
    assert_close(src.grad, expected)
    assert_close(x.grad, seed)


def test_take_along_dim_matches_numpy():
    x = randn(3, 4)
    idx = np.array([[0], [3], [1]])
    assert_close(gl.take_along_dim(gl.tensor(x), long(idx), 1), np.take_along_axis(x, idx, axis=1))
    flat = np.array([11, 0, 5, 5])
    assert_close(gl.tensor(x).take_along_dim(long(flat)), x.ravel()[flat])
    # input and indices broadcast on the other dims
    col = randn(3, 1)
    idx = np.array([[0, 0], [0, 0], [0, 0]])
    assert_close(gl.take_along_dim(gl.tensor(col), long(idx), 1), np.take_along_axis(col, idx, axis=1))
    wide = np.array([[2, 1, 0, 2]])
    assert_close(gl.take_along_dim(gl.tensor(x), long(wide), 0), np.take_along_axis(x, np.broadcast_to(wide, (1, 4)), 0))


def test_take_along_dim_gradcheck():
    assert gradcheck(lambda t: gl.take_along_dim(t, long([[0, 2], [3, 3], [1, 0]]), 1), (leaf(randn(3, 4)),))
    assert gradcheck(lambda t: gl.take_along_dim(t, long([[0, 0, 0]]), 1), (leaf(randn(2, 1)),))
    assert gradcheck(lambda t: t.take_along_dim(long([5, 0, 5])), (noncontiguous_leaf(randn(2, 3)),))


# --- masked_fill, tril, triu --------------------------------------------------------------------


def test_masked_fill_matches_numpy():
    x = randn(3, 4)
    m = x > 0
    assert_close(gl.tensor(x).masked_fill(gl.tensor(m), -1.0), np.where(m, -1.0, x))
    row = np.array([True, False, False, True])  # the mask broadcasts
    assert_close(gl.masked_fill(gl.tensor(x), gl.tensor(row), 2.0), np.where(row, 2.0, x))
    out = gl.tensor([1, 2, 3]).masked_fill(mask([True, False, True]), 7.9)
    assert out.dtype is gl.int64 and out.tolist() == [7, 2, 7]


def test_masked_fill_gradients_to_input_and_value():
    m = gl.tensor(randn(3, 4, seed=1) > 0)
    x, value = leaf(randn(3, 4)), leaf(0.5)
    assert gradcheck(lambda a, v: a.masked_fill(m, v), (x, value))
    assert gradcheck(lambda a: a.masked_fill(mask([[True], [False], [True]]), 3.0), (noncontiguous_leaf(randn(3, 4)),))
    x.masked_fill(m, value).sum().backward()
    assert_close(value.grad, np.array(m.numpy().sum(), dtype=np.float64))
    assert_close(x.grad, (~m.numpy()).astype(np.float64))


def test_masked_fill_input_broadcast_by_the_mask():
    x = leaf(randn(4))
    out = x.masked_fill(mask([[True], [False]]), 0.0)
    assert out.shape == (2, 4)
    assert gradcheck(lambda a: a.masked_fill(mask([[True], [False]]), 0.0), (x,))


@pytest.mark.parametrize("diagonal", [0, 1, -1, 3])
def test_tril_triu_match_numpy(diagonal):
    x = randn(2, 3, 4)
    assert_close(gl.tensor(x).tril(diagonal), np.tril(x, diagonal))
    assert_close(gl.triu(gl.tensor(x), diagonal), np.triu(x, diagonal))
    assert_close(gl.tril(gl.tensor(x), diagonal=diagonal), np.tril(x, diagonal))


def test_tril_triu_gradcheck():
    assert gradcheck(lambda t: t.tril(), (leaf(randn(3, 4)),))
    assert gradcheck(lambda t: t.triu(1), (noncontiguous_leaf(randn(4, 3)),))
    assert gradgradcheck(lambda t: t.tril(-1) * t, (leaf(randn(3, 3)),))


# --- in-place forms -----------------------------------------------------------------------------


def test_inplace_forms_change_the_tensor_and_keep_the_graph():
    a = leaf(randn(3, 4))
    m = mask([[True, False, False, True]])
    index = long([[2, 0, 1, 1]])
    for name, call, expected in [
        ("masked_fill_", lambda x: x.masked_fill_(m, 0.0), lambda x: np.where(m.numpy(), 0.0, x)),
        ("tril_", lambda x: x.tril_(), np.tril),
        ("triu_", lambda x: x.triu_(1), lambda x: np.triu(x, 1)),
        ("scatter_", lambda x: x.scatter_(0, index, 9.0), None),
        ("scatter_add_", lambda x: x.scatter_add_(0, index, gl.ones(1, 4, dtype=gl.float64)), None),
    ]:
        x = a * 1
        out = call(x)
        assert out is x, name
        if expected is not None:
            assert_close(x, expected(a.detach().numpy()))
        assert gradcheck(lambda t: call(t * 1), (a,)), name


def test_scatter_inplace_values():
    x = gl.zeros(2, 3)
    x.scatter_(1, long([[2], [0]]), gl.tensor([[1.0], [2.0]]))
    x.scatter_add_(1, long([[2, 2], [0, 1]]), gl.ones(2, 2))
    assert x.tolist() == [[0.0, 0.0, 3.0], [3.0, 1.0, 0.0]]


# --- one_hot ------------------------------------------------------------------------------------


def test_one_hot():
    labels = np.array([[0, 2], [1, 2]])
    out = gl.one_hot(long(labels))
    assert out.dtype is gl.int64 and out.shape == (2, 2, 3)
    assert_close(out, np.eye(3, dtype=np.int64)[labels])
    assert_close(gl.one_hot(long([1]), num_classes=4), [[0, 1, 0, 0]])
    assert gl.one_hot(long([]), 3).shape == (0, 3)


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("key, dim, index, size", [
    (5, 0, 5, 3), ((0, 7), 1, 7, 4), ((0, 0, -6), 2, -6, 5), (long([0, 5]), 0, 5, 3), ((Ellipsis, [1, 9]), 2, 9, 5),
])
def test_index_out_of_range(key, dim, index, size):
    with pytest.raises(IndexError, match=f"__getitem__: index {index} is out of bounds for dimension {dim} with size {size}"):
        gl.tensor(A)[key]


def test_out_of_range_in_the_other_ops():
    x = gl.tensor(A[0])  # shape (4, 5)
    with pytest.raises(IndexError, match="index_select: index 7 is out of bounds for dimension 0 with size 4"):
        x.index_select(0, long([0, 7]))
    with pytest.raises(RuntimeError, match="gather: index 5 is out of bounds for dimension 1 with size 5"):
        x.gather(1, long([[0, 5]]))
    with pytest.raises(RuntimeError, match="scatter_add: index 4 is out of bounds for dimension 0 with size 4"):
        x.scatter_add(0, long([[4]]), gl.ones(1, 1, dtype=gl.float64))
    with pytest.raises(IndexError, match="__setitem__: index 3 is out of bounds for dimension 0 with size 3"):
        gl.zeros(3)[[0, 3]] = 1.0


def test_float_index_is_an_error():
    with pytest.raises(IndexError, match="tensors used as indices must be long, int or bool tensors, got float32"):
        gl.tensor(A)[gl.tensor([0.0, 1.0])]
    with pytest.raises(IndexError, match="gather: tensors used as indices must be int64"):
        gl.tensor(A).gather(0, gl.tensor([[[0.0]]]))


def test_negative_step_is_an_error():
    with pytest.raises(ValueError, match="step must be greater than zero"):
        gl.tensor(A)[::-1]


def test_bad_keys():
    x = gl.tensor(A[0])
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match=r"the shape of the mask \[3\] at index 0 does not match"):
        x[mask([True, False, True])]
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be broadcast together with shapes \[2\], \[3\]"):
        x[[0, 1], [0, 1, 2]]


def test_masked_fill_errors():
    x = gl.tensor(A[0])
    with pytest.raises(RuntimeError, match="only supports boolean masks, but got mask int64"):
        x.masked_fill(long([1, 0, 1, 0, 1]), 0.0)
    with pytest.raises(RuntimeError, match="only supports a 0-dimensional value tensor"):
        x.masked_fill(x > 0, gl.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="cannot be broadcast together"):
        x.masked_fill(mask([True, False]), 0.0)


def test_gather_scatter_shape_errors():
    x = gl.tensor(A[0])  # shape (4, 5)
    with pytest.raises(RuntimeError, match="gather.*same number of dimensions"):
        x.gather(0, long([0, 1]))
    with pytest.raises(RuntimeError, match=r"gather.*index \[1, 6\] to be no larger than self \[4, 5\] apart from dimension 0"):
        x.gather(0, long([[0] * 6]))
    with pytest.raises(RuntimeError, match=r"scatter.*no larger than src \[1, 1\]"):
        x.scatter(0, long([[0, 1]]), gl.ones(1, 1, dtype=gl.float64))
    with pytest.raises(RuntimeError, match="Expected self.dtype to be equal to src.dtype"):
        x.scatter_add(0, long([[0]]), gl.ones(1, 1))
    with pytest.raises(TypeError, match="'src' must be a Tensor"):
        x.scatter_add(0, long([[0]]), 1.0)
    with pytest.raises(TypeError, match=r"gather\(\): argument 'index' must be a Tensor, not list"):
        x.gather(0, [[0]])
    with pytest.raises(IndexError, match="Index is supposed to be a vector"):
        x.index_select(0, long([[0]]))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        gl.take_along_dim(x, long([0]), 1)
    with pytest.raises(RuntimeError, match="take_along_dim: input and indices must broadcast"):
        gl.take_along_dim(x, long([[0], [1]]), 1)


def test_tril_and_one_hot_errors():
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        gl.ones(3).tril()
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor"):
        gl.one_hot(gl.tensor([0.0, 1.0]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes"):
        gl.one_hot(long([0, 3]), 2)
    with pytest.raises(RuntimeError, match="Class values must be non-negative"):
        gl.one_hot(long([0, -1]))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor"):
        gl.one_hot(long([]))


# --- against PyTorch: forward values and gradients ----------------------------------------------


def _torch_key(key):
    if isinstance(key, tuple):
        return tuple(_torch_key(k) for k in key)
    if isinstance(key, gl.Tensor):
        return torch.tensor(key.numpy())
    if isinstance(key, np.integer):
        return int(key)
    return key


@requires_torch
@pytest.mark.parametrize("name, key, np_key", KEYS, ids=KEY_IDS)
def test_getitem_matches_torch(name, key, np_key):
    seed = randn(*A[np_key].shape, seed=1)
    x, tx = leaf(A), to_torch(A, requires_grad=True)
    out, tout = x[key], tx[_torch_key(key)]
    assert_close(out, tout)
    out.backward(gl.tensor(seed))
    tout.backward(torch.tensor(seed))
    assert_close(x.grad, tx.grad)


@requires_torch
@pytest.mark.parametrize("name, key, np_key", SET_KEYS, ids=SET_IDS)
def test_setitem_matches_torch(name, key, np_key):
    values = randn(*A[np_key].shape, seed=2)
    seed = randn(*A.shape, seed=3)
    a, v = leaf(A), leaf(values)
    ta, tv = to_torch(A, requires_grad=True), to_torch(values, requires_grad=True)
    x, tx = a * 1, ta * 1
    x[key] = v
    tx[_torch_key(key)] = tv
    assert_close(x, tx)
    x.backward(gl.tensor(seed))
    tx.backward(torch.tensor(seed))
    assert_close(a.grad, ta.grad)
    assert_close(v.grad, tv.grad)


TORCH_OPS = {
    "index_select": (lambda m, x, i: m.index_select(x, 1, i), [3, 0, 3]),
    "gather": (lambda m, x, i: m.gather(x, 0, i), [[0, 2, 1, 0, 1], [2, 2, 0, 1, 1]]),
    "scatter": (lambda m, x, i: m.scatter(x, 1, i, x[:, :3] * 2), [[1, 0, 2], [0, 2, 1], [4, 3, 2]]),
    "scatter value": (lambda m, x, i: m.scatter(x, 1, i, value=0.5), [[1], [0], [4]]),
    "scatter_add": (lambda m, x, i: m.scatter_add(x, 0, i, x[:2] ** 2), [[0, 0, 2, 1, 1], [0, 1, 1, 1, 2]]),
    "take_along_dim": (lambda m, x, i: m.take_along_dim(x, i, 1), [[0, 4], [3, 3], [1, 0]]),
    "take_along_dim flat": (lambda m, x, i: m.take_along_dim(x, i), [14, 0, 7, 7]),
    "masked_fill": (lambda m, x, i: m.masked_fill(x, x > 0, -2.0), [0]),
    "tril": (lambda m, x, i: m.tril(x, 1), [0]),
    "triu": (lambda m, x, i: m.triu(x, -1), [0]),
}


@requires_torch
@pytest.mark.parametrize("name", TORCH_OPS)
def test_ops_match_torch(name):
    fn, index = TORCH_OPS[name]
    values, seed_shape = randn(3, 5), None
    x, tx = leaf(values), to_torch(values, requires_grad=True)
    out = fn(gl, x, long(index))
    tout = fn(torch, tx, torch.tensor(index))
    assert_close(out, tout)
    seed = randn(*tout.shape, seed=seed_shape or 4)
    out.backward(gl.tensor(seed))
    tout.backward(torch.tensor(seed))
    assert_close(x.grad, tx.grad)


@requires_torch
def test_masked_fill_value_gradient_matches_torch():
    values, m = randn(3, 4), randn(3, 4, seed=1) > 0
    x, v = leaf(values), leaf(1.5)
    tx, tv = to_torch(values, requires_grad=True), to_torch(np.array(1.5), requires_grad=True)
    (x.masked_fill(gl.tensor(m), v) ** 2).sum().backward()
    (tx.masked_fill(torch.tensor(m), tv) ** 2).sum().backward()
    assert_close(x.grad, tx.grad)
    assert_close(v.grad, tv.grad)


@requires_torch
def test_one_hot_matches_torch():
    labels = np.array([3, 0, 1, 3])
    assert_close(gl.one_hot(long(labels)), torch.nn.functional.one_hot(torch.tensor(labels)))
    assert_close(gl.one_hot(long(labels), 6), torch.nn.functional.one_hot(torch.tensor(labels), 6))

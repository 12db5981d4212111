"""The Tensor itself: attributes, reading values back, copies and casts, conversions, and repr."""

import copy
import math
import pickle

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl

# --- attributes ----------------------------------------------------------------------------------


def test_a_new_tensor_is_a_leaf_without_grad():
    t = gl.tensor([1.0, 2.0])
    assert t.requires_grad is False and t.grad is None and t.grad_fn is None and t.is_leaf
    assert t.device == gl.device("cpu") and str(t.device) == "cpu"


def test_requires_grad_leaf_and_computed_tensor():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf and y.grad_fn is not None
    assert y.grad_fn.name() == "MulBackward0"


@pytest.mark.parametrize(
    "data, dtype",
    [([1.0, 2.0], gl.float32), ([1, 2], gl.int64), ([True], gl.bool), (1.5, gl.float32), (3, gl.int64)],
)
def test_default_dtypes(data, dtype):
    assert gl.tensor(data).dtype is dtype


@pytest.mark.parametrize("dtype", [gl.float16, gl.float32, gl.float64, gl.int32, gl.int64, gl.bool])
def test_explicit_dtype_is_kept_and_backs_the_array(dtype):
    t = gl.tensor([1, 0, 1], dtype=dtype)
    assert t.dtype is dtype
    assert t.numpy().dtype == np.dtype(dtype.name)
    assert t.element_size() == np.dtype(dtype.name).itemsize
    assert t.is_floating_point() == (dtype in (gl.float16, gl.float32, gl.float64))


def test_dtype_aliases_match_pytorch_names():
    assert gl.float is gl.float32 and gl.double is gl.float64 and gl.half is gl.float16
    assert gl.long is gl.int64 and gl.int is gl.int32
    assert repr(gl.float32) == "gradlab.float32"


def test_shape_ndim_numel_size_dim():
    t = gl.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.dim() == 3
    assert t.numel() == 24 and t.nelement() == 24
    assert t.size() == (2, 3, 4) and t.size(0) == 2 and t.size(-1) == 4 and t.size(1) == 3
    assert t.nbytes == 24 * 4
    with pytest.raises(IndexError, match=r"size.*range"):
        t.size(3)


def test_zero_dim_tensor_shape():
    t = gl.tensor(2.5)
    assert t.shape == () and t.ndim == 0 and t.numel() == 1 and t.size() == ()


# --- reading values back -------------------------------------------------------------------------


def test_item_returns_python_numbers():
    assert gl.tensor(2.5).item() == 2.5 and type(gl.tensor(2.5).item()) is float
    assert gl.tensor([[7]]).item() == 7 and type(gl.tensor([[7]]).item()) is int
    assert gl.tensor(True).item() is True
    assert gl.tensor(1.5, requires_grad=True).item() == 1.5


def test_item_of_many_values_is_an_error():
    with pytest.raises(RuntimeError, match=r"item.*3 elements"):
        gl.tensor([1.0, 2.0, 3.0]).item()


def test_numpy_shares_memory_on_cpu():
    t = gl.tensor([1.0, 2.0, 3.0])
    a = t.numpy()
    a[0] = 10.0
    assert t.tolist() == [10.0, 2.0, 3.0]
    assert isinstance(a, np.ndarray) and a.dtype == np.float32


def test_numpy_refuses_a_tensor_that_requires_grad():
    t = gl.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"detach\(\)\.numpy\(\)"):
        t.numpy()
    assert t.detach().numpy().tolist() == [1.0]


def test_tolist():
    assert gl.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert gl.tensor(2.5).tolist() == 2.5
    assert gl.tensor([True, False]).tolist() == [True, False]
    assert gl.tensor([]).tolist() == []


def test_np_asarray_reads_the_values():
    t = gl.tensor([1.0, 2.0])
    a = np.asarray(t, dtype=np.float64)
    assert a.dtype == np.float64 and a.tolist() == [1.0, 2.0]


def test_np_asarray_refuses_a_tensor_that_requires_grad():
    """As in PyTorch: numpy would silently cut the graph, so it has to ask for .detach() first."""
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        np.asarray(gl.tensor([1.0, 2.0], requires_grad=True))


def test_numpy_scalars_defer_to_tensor_operators():
    w = gl.ones(3, requires_grad=True)
    out = np.float64(2.0) * w
    assert isinstance(out, gl.Tensor) and out.grad_fn is not None and out.dtype is gl.float32


def test_a_view_taken_before_an_in_place_change_follows_it():
    a = gl.ones(2, 3, requires_grad=True)
    x = a * 1
    v = x[0]
    x.mul_(2)
    v.sum().backward()  # v's history is rebuilt from x's (tests/test_inplace_views.py)
    assert a.grad.tolist() == [[2.0, 2.0, 2.0], [0.0, 0.0, 0.0]]


def test_legacy_constructor_takes_sizes_or_data_and_makes_floats():
    assert gl.Tensor(2, 3).shape == (2, 3) and gl.Tensor(2, 3).dtype is gl.float32
    t = gl.Tensor([1, 2])
    assert t.dtype is gl.float32 and t.tolist() == [1.0, 2.0]
    source = np.ones(2)
    copy = gl.Tensor(source)
    assert copy.dtype is gl.float32 and not np.shares_memory(copy.numpy(), source)


# --- copies ---------------------------------------------------------------------------------------


def test_detach_shares_memory_and_leaves_the_graph():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    d = y.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf
    d.numpy()[0] = -1.0
    assert y.detach().tolist()[0] == -1.0  # the same memory as y
    assert np.shares_memory(x.detach().numpy(), x.data)


def test_clone_copies_and_stays_in_the_graph():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    c = x.clone()
    assert c.grad_fn is not None and c.requires_grad
    c.detach().numpy()[0] = 5.0
    assert x.detach().tolist() == [1.0, 2.0]
    plain = gl.tensor([1, 2]).clone()
    assert plain.dtype is gl.int64 and not plain.requires_grad and plain.tolist() == [1, 2]


def test_contiguous_returns_self_or_a_row_major_copy():
    t = gl.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert t.contiguous() is t
    f = gl.from_numpy(np.asfortranarray(np.arange(6.0).reshape(2, 3)))
    assert not f.is_contiguous()
    c = f.contiguous()
    assert c.is_contiguous() and c.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert c.stride() == (3, 1)


# --- casts and moves ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, dtype",
    [("float", gl.float32), ("double", gl.float64), ("half", gl.float16), ("long", gl.int64),
     ("int", gl.int32), ("bool", gl.bool)],
)
def test_cast_methods(method, dtype):
    t = getattr(gl.tensor([0.0, 1.5, -2.7]), method)()
    assert t.dtype is dtype
    expected = np.array([0.0, 1.5, -2.7], np.float32).astype(dtype.name).tolist()
    assert t.tolist() == expected


def test_to_dtype_device_and_tensor():
    t = gl.tensor([1, 2])
    assert t.to(gl.float64).dtype is gl.float64
    assert t.to(dtype=gl.float32).dtype is gl.float32
    assert t.to("cpu") is t and t.to(gl.device("cpu")) is t
    assert t.to(gl.int64) is t
    other = gl.tensor([0.5], dtype=gl.float64)
    assert t.to(other).dtype is gl.float64
    moved = t.to("cpu", gl.float16)
    assert moved.dtype is gl.float16 and moved.device == "cpu"
    copied = t.to(gl.int64, copy=True)
    assert copied is not t and copied.tolist() == [1, 2]
    assert t.to(float).dtype is gl.float64  # Python float means float64, as in PyTorch


def test_cast_keeps_the_graph():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    y = x.double()
    assert y.requires_grad and y.grad_fn is not None


def test_type_names():
    assert gl.tensor([1.0]).type() == "gradlab.FloatTensor"
    assert gl.tensor([1]).type() == "gradlab.LongTensor"
    assert gl.tensor([1]).type(gl.float64).dtype is gl.float64
    assert gl.tensor([1]).type_as(gl.tensor([1.0])).dtype is gl.float32


# --- new tensors like this one --------------------------------------------------------------------


def test_new_factories_take_dtype_and_device_from_self():
    base = gl.tensor([1.0], dtype=gl.float64)
    for t in (base.new_zeros(2, 3), base.new_zeros((2, 3)), base.new_ones([2, 3]), base.new_empty(2, 3),
              base.new_full((2, 3), 7.0)):
        assert t.shape == (2, 3) and t.dtype is gl.float64 and t.device is base.device and t.is_leaf
    assert base.new_zeros(2).tolist() == [0.0, 0.0] and base.new_ones(2).tolist() == [1.0, 1.0]
    assert base.new_full((1,), 7).tolist() == [7.0]
    assert base.new_zeros(2, dtype=gl.int32).dtype is gl.int32
    assert base.new_ones(2, requires_grad=True).requires_grad
    assert base.new_tensor([1, 2]).dtype is gl.float64


def test_new_tensor_copies():
    a = np.array([1.0, 2.0])
    t = gl.tensor([0.0]).new_tensor(a)
    same_dtype = gl.tensor([0.0], dtype=gl.float64).new_tensor(a)
    source = gl.tensor([1.0, 2.0])
    from_tensor = source.new_tensor(source)
    a[0] = 9.0
    source.numpy()[0] = 9.0
    assert t.tolist() == [1.0, 2.0] and t.dtype is gl.float32
    assert same_dtype.tolist() == [1.0, 2.0] and from_tensor.tolist() == [1.0, 2.0]


# --- Python protocols -----------------------------------------------------------------------------


def test_len():
    assert len(gl.zeros(3, 2)) == 3
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(gl.tensor(1.0))


@pytest.mark.skipif(not hasattr(gl.Tensor, "unbind"), reason="iteration needs Tensor.unbind (shape ops)")
def test_iter_yields_rows():
    rows = list(gl.tensor([[1, 2], [3, 4]]))
    assert [r.tolist() for r in rows] == [[1, 2], [3, 4]]
    with pytest.raises(TypeError, match="iteration over a 0-d tensor"):
        iter(gl.tensor(1.0))


def test_bool_of_one_value_and_ambiguous_values():
    assert bool(gl.tensor([3.0])) is True and bool(gl.tensor(0)) is False
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(gl.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        bool(gl.tensor([]))


def test_float_int_index():
    assert float(gl.tensor([[2]])) == 2.0 and int(gl.tensor(3.9)) == 3 and int(gl.tensor(-3.9)) == -3
    assert [10, 11, 12][gl.tensor(2)] == 12 and [10, 11][gl.tensor([1])] == 11
    assert math.isclose(math.sqrt(gl.tensor(4.0)), 2.0)
    with pytest.raises(TypeError, match="only integer tensors of a single element can be converted to an index"):
        [1, 2][gl.tensor(1.0)]
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        int(gl.zeros(2))
    with pytest.raises(ValueError, match="only one element tensors can be converted to Python scalars"):
        float(gl.zeros(2))


def test_format_of_zero_dim_tensors_is_the_number():
    assert f"{gl.tensor(3.25):.1f}" == "3.2" and f"{gl.tensor(3.5)}" == "3.5"
    assert f"{gl.tensor([1.5])}" == "tensor([1.5000])"
    with pytest.raises(TypeError, match="format"):
        f"{gl.tensor([1.5]):.2f}"


def test_pickle_round_trip():
    for t in (gl.tensor([[1.0, 2.5]], dtype=gl.float64), gl.tensor([1, 2], dtype=gl.int32), gl.tensor(True),
              gl.tensor([1.0, 2.0], requires_grad=True)):
        back = pickle.loads(pickle.dumps(t))
        assert back.dtype is t.dtype and back.device is t.device and back.shape == t.shape
        assert back.tolist() == t.tolist() and back.requires_grad == t.requires_grad and back.is_leaf


def test_deepcopy_is_independent_and_copies_grad():
    x = gl.tensor([1.0, 2.0], requires_grad=True)
    x.grad = gl.tensor([0.5, 0.5])
    y = copy.deepcopy(x)
    assert y is not x and y.requires_grad and y.tolist() == [1.0, 2.0] and y.grad.tolist() == [0.5, 0.5]
    y.detach().numpy()[0] = 9.0
    assert x.detach().tolist() == [1.0, 2.0]
    pair = copy.deepcopy([x, x])
    assert pair[0] is pair[1]
    with pytest.raises(RuntimeError, match="graph leaves"):
        copy.deepcopy(x * 2)


@requires_torch
def test_protocols_agree_with_torch():
    for data in ([[1, 2], [3, 4]], [2.5], 7, [True]):
        g, t = gl.tensor(data), torch.tensor(data)
        assert g.tolist() == t.tolist() and g.shape == tuple(t.shape) and g.numel() == t.numel()
        if g.numel() == 1:
            assert g.item() == t.item() and float(g) == float(t) and bool(g) == bool(t)
    assert f"{gl.tensor(3.14159):.3f}" == f"{torch.tensor(3.14159):.3f}"


# --- repr ------------------------------------------------------------------------------------------

REPR_CASES = [
    ("floats with decimals", [1.0, 2.5], None),
    ("integral floats", [1.0, 2.0], None),
    ("padded to equal width", [5.0, 12.0, 21.0], None),
    ("negative padding", [-1.5, 2.0], None),
    ("mixed magnitudes", [0.1, 0.25, 100.0], None),
    ("ints", [1, -20, 300], None),
    ("bools", [True, False], None),
    ("2-d", [[1.0, 2.0], [3.0, 4.5]], None),
    ("2-d bools", [[True, False], [False, True]], None),
    ("3-d", [[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]], None),
    ("0-d float", 3.5, None),
    ("0-d integral float", 3.0, None),
    ("0-d int", 3, None),
    ("0-d bool", True, None),
    ("float64", [1.0, 2.5], "float64"),
    ("float16", [1.5, 2.0], "float16"),
    ("int32", [1, 2], "int32"),
    ("large values", [1e10, 1.0], None),
    ("small values", [1e-5, 1.0], None),
    ("wide range", [1000.5, 1.0], None),
    ("huge integral", [1e16, 1.0], None),
    ("tiny and huge", [1e-9, 1e9], None),
    ("nan and inf", [float("inf"), -float("inf"), float("nan"), 1.5], None),
    ("all zero", [0.0, 0.0], None),
    ("empty", [], None),
    ("empty 2-d", [[]], None),
    ("long row wraps", [[float(i) for i in range(20)] for _ in range(3)], None),
    ("summarised", list(range(2000)), None),
    ("summarised floats", [float(i) / 7 for i in range(1500)], None),
]


def _torch_repr(t):
    return repr(t).replace("torch.", "gradlab.")


@requires_torch
@pytest.mark.parametrize("name, data, dtype", REPR_CASES, ids=[c[0] for c in REPR_CASES])
def test_repr_matches_torch(name, data, dtype):
    g = gl.tensor(data, dtype=dtype and getattr(gl, dtype))
    t = torch.tensor(data, dtype=dtype and getattr(torch, dtype))
    assert repr(g) == _torch_repr(t)


@requires_torch
@pytest.mark.parametrize("shape", [(100, 100), (10, 20, 30), (3, 30), (0, 3), (2, 0, 1), (2, 2, 2, 2)])
def test_repr_of_random_arrays_matches_torch(shape):
    a = (np.random.default_rng(0).standard_normal(shape) * 100).astype(np.float32)
    assert repr(gl.from_numpy(a.copy())) == _torch_repr(torch.from_numpy(a.copy()))
    ints = np.arange(int(np.prod(shape))).reshape(shape)
    assert repr(gl.from_numpy(ints.copy())) == _torch_repr(torch.from_numpy(ints.copy()))


@requires_torch
def test_repr_with_grad_fields_matches_torch():
    data = np.random.default_rng(1).standard_normal(20)
    x, tx = gl.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)
    assert repr(x) == _torch_repr(tx)
    assert repr(x * 2) == _torch_repr(tx * 2)
    x, tx = gl.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    assert repr(x + 1) == _torch_repr(tx + 1)
    assert repr(gl.tensor(2.0, requires_grad=True)) == _torch_repr(torch.tensor(2.0, requires_grad=True))


# The same layouts written out, so the rules are checked without PyTorch too.
@pytest.mark.parametrize(
    "tensor, expected",
    [
        (lambda: gl.tensor([1.0, 2.5]), "tensor([1.0000, 2.5000])"),
        (lambda: gl.tensor([1.0, 2.0]), "tensor([1., 2.])"),
        (lambda: gl.tensor([5.0, 12.0, 21.0]), "tensor([ 5., 12., 21.])"),
        (lambda: gl.tensor([-1.5, 2.0]), "tensor([-1.5000,  2.0000])"),
        (lambda: gl.tensor([1, -20, 300]), "tensor([  1, -20, 300])"),
        (lambda: gl.tensor([True, False]), "tensor([ True, False])"),
        (lambda: gl.tensor([[1.0, 2.0], [3.0, 4.5]]), "tensor([[1.0000, 2.0000],\n        [3.0000, 4.5000]])"),
        (lambda: gl.tensor(3.5), "tensor(3.5000)"),
        (lambda: gl.tensor(3), "tensor(3)"),
        (lambda: gl.tensor([1.0, 2.5], dtype=gl.float64), "tensor([1.0000, 2.5000], dtype=gradlab.float64)"),
        (lambda: gl.tensor([1, 2], dtype=gl.int32), "tensor([1, 2], dtype=gradlab.int32)"),
        (lambda: gl.tensor([1.0, 2.0], requires_grad=True), "tensor([1., 2.], requires_grad=True)"),
        (lambda: gl.tensor([1e10, 1.0]), "tensor([1.0000e+10, 1.0000e+00])"),
        (lambda: gl.tensor([1e-5, 1.0]), "tensor([1.0000e-05, 1.0000e+00])"),
        (lambda: gl.tensor([float("inf"), 1.5]), "tensor([   inf, 1.5000])"),
        (lambda: gl.tensor([]), "tensor([])"),
        (lambda: gl.zeros(0, 3), "tensor([], size=(0, 3))"),
        (lambda: gl.zeros(0, dtype=gl.int64), "tensor([], dtype=gradlab.int64)"),
        (lambda: gl.arange(2000), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"),
    ],
)
def test_repr_layout(tensor, expected):
    assert repr(tensor()) == expected


def test_repr_of_a_computed_tensor_names_its_grad_fn():
    y = gl.tensor([1.0, 2.0], requires_grad=True) * 2
    assert repr(y) == "tensor([2., 4.], grad_fn=<MulBackward0>)"


def test_repr_follows_the_default_dtype(default_float64):
    assert repr(gl.tensor([1.5])) == "tensor([1.5000])"
    assert repr(gl.tensor([1.5], dtype=gl.float32)) == "tensor([1.5000], dtype=gradlab.float32)"


@pytest.fixture
def default_float64():
    gl.set_default_dtype(gl.float64)
    yield
    gl.set_default_dtype(gl.float32)


def test_data_is_the_same_memory_outside_the_graph():
    w = gl.tensor([1.0, 2.0], requires_grad=True)
    d = w.data
    assert isinstance(d, gl.Tensor) and not d.requires_grad and d.grad_fn is None
    d.mul_(3)  # the classic manual update: changes w without recording anything
    assert w.tolist() == [3.0, 6.0] and w.requires_grad and w.is_leaf


def test_manual_sgd_through_data():
    w = gl.tensor([1.0, -2.0], requires_grad=True)
    (w * w).sum().backward()
    w.data -= 0.25 * w.grad
    assert w.tolist() == [0.5, -1.0] and w.is_leaf and w.requires_grad


def test_assigning_data_swaps_values_and_shape():
    w = gl.zeros(2, requires_grad=True)
    w.data = gl.ones(3)
    assert w.shape == (3,) and w.tolist() == [1.0, 1.0, 1.0] and w.requires_grad
    with pytest.raises(TypeError, match="Tensor.data must be set to a gradlab Tensor"):
        w.data = [1.0, 2.0]


def test_array_is_the_backend_array():
    t = gl.tensor([1.0, 2.0])
    assert isinstance(t.array, np.ndarray) and np.shares_memory(t.array, t.numpy())


def test_dtype_of_the_first_tensor_in_a_fresh_process():
    """from_numpy makes a tensor without touching the backend; its dtype must still be known."""
    import subprocess
    import sys

    code = "import numpy as np, gradlab as gl; print(gl.from_numpy(np.ones(2, np.float32)).dtype)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "gradlab.float32"


def test_module_level_queries_as_in_torch():
    t = gl.zeros(2, 3)
    assert gl.is_tensor(t) and not gl.is_tensor(np.zeros(2))
    assert gl.numel(t) == 6 and gl.is_floating_point(t) and not gl.is_floating_point(gl.arange(3))

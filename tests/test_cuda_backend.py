"""The CUDA backend's primitives against the numpy backend, on numba's simulator when there is no GPU.

Every primitive runs on small inputs in the layouts that matter (broadcast, permuted, sliced, 0-d,
empty) and must give numpy's values and dtypes; views must share device memory; a training step
must copy nothing between host and device but the loss it reads.
"""

import os

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not os.path.exists("/proc/driver/nvidia/version"):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"  # before anything imports numba.cuda: no GPU, so the simulator

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

if importlib.util.find_spec("numba_cuda") is None:
    pytest.skip("numba-cuda is not installed (pip install \"gradlab[cuda]\")", allow_module_level=True)

import gradlab as gl
from gradlab import dtypes as dt
from gradlab.backends.numpy_backend import NumpyBackend as N

try:
    from gradlab.backends import cuda_backend
    from gradlab.backends.cuda_backend import CudaBackend as C
except RuntimeError as error:  # numba.cuda was imported before this file, without the simulator, and no GPU
    pytest.skip(str(error), allow_module_level=True)

rng = np.random.default_rng(0)


def up(x, dtype=None):
    """A host array on the device, in its own dtype unless told."""
    x = np.asarray(x)
    return C.asarray(x, dtype or N.dtype_of(x))


def down(a):
    return C.to_numpy(a)


def same(got, expected, rtol=1e-6, atol=1e-12):
    """The device result equals numpy's: dtype, shape and values (NaN where numpy has NaN)."""
    got = down(got)
    expected = np.asarray(expected)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, expected)


def both(name, *args, **kwargs):
    """Run one primitive on numpy arrays and on their device copies; compare."""
    device_args = [up(a) if isinstance(a, np.ndarray) else a for a in args]
    same(getattr(C, name)(*device_args, **kwargs), getattr(N, name)(*args, **kwargs))


# an input that is a permuted, sliced view on the device, and the same values on the host
BASE = np.linspace(-3, 3, 24).reshape(2, 3, 4)
EDGES = np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, np.inf, -np.inf, np.nan, 1e3, -1e3])


def strided_pair():
    """(host, device) views with the same values: permuted axes and a step-2 slice of device memory."""
    device = C.getitem(C.permute(up(BASE), (2, 0, 1)), (slice(None, None, 2),))
    host = BASE.transpose(2, 0, 1)[::2]
    assert not C.is_contiguous(device)
    return host, device


UNARY = ("neg abs exp log log1p expm1 sqrt sin cos tan tanh sign floor ceil round erf isnan isinf logical_not "
         "arcsin arccos arctan sinh cosh arcsinh arccosh arctanh log2 log10 erfc").split()


@pytest.mark.parametrize("name", UNARY)
def test_unary_on_edges_and_on_strided_views(name):
    both(name, EDGES)
    host, device = strided_pair()
    same(getattr(C, name)(device), getattr(N, name)(host))


BINARY = ("add sub mul div pow floor_divide remainder maximum minimum eq ne lt le gt ge logical_and logical_or "
          "logical_xor arctan2 hypot copysign fmod logaddexp logaddexp2").split()


@pytest.mark.parametrize("name", BINARY)
def test_binary_broadcasts_and_takes_python_numbers(name):
    a = np.array([[-2.5], [0.0], [1.5]])  # (3, 1) against (4,)
    b = np.array([-1.0, 0.0, 2.0, np.inf])
    both(name, a, b)
    both(name, a.astype(np.float32), 2.0)  # a Python float stays weak: float32 out, as in numpy
    both(name, 3.0, b)
    host, device = strided_pair()
    same(getattr(C, name)(device, C.getitem(device, (slice(0, 1),))), getattr(N, name)(host, host[:1]))


@pytest.mark.parametrize("name", "add sub mul floor_divide remainder maximum minimum eq lt bitwise_and bitwise_or "
                                  "bitwise_xor".split())
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.int16, np.int8, np.uint8])
def test_integer_ops_keep_numpys_dtypes(name, dtype):
    a = np.array([[7, -3, 0, 5]], dtype=dtype) if np.dtype(dtype).kind == "i" else np.array([[7, 3, 0, 5]], dtype)
    b = np.array([[2], [3]], dtype=dtype)
    both(name, a, b)
    both(name, a, 2)


def test_bool_arrays_and_bitwise_not():
    t = np.array([True, False, True])
    for name in ("logical_and", "logical_or", "logical_xor", "bitwise_and", "eq", "add"):
        both(name, t, t[::-1].copy())
    both("bitwise_not", t)
    both("bitwise_not", np.array([0, 5, -3], np.int32))
    both("logical_not", np.array([0.0, 2.0]))


def test_where_broadcasts_arrays_and_numbers():
    cond = np.array([[True], [False]])
    a, b = np.arange(3.0), np.array([[10.0, 20.0, 30.0]] * 2)
    both("where", cond, a, b)
    both("where", cond, a.astype(np.float32), 0.0)
    both("where", cond, 1, np.arange(3))


@pytest.mark.parametrize("name", "sum prod max min all any".split())
@pytest.mark.parametrize("axis", [None, 0, (1,), (0, 2), (2, 1, 0)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reductions_over_axis_tuples(name, axis, keepdims):
    host, device = strided_pair()  # (2, 2, 3), not contiguous
    same(getattr(C, name)(device, axis, keepdims), getattr(N, name)(host, axis, keepdims))


def test_reductions_on_integers_bools_nan_and_empty():
    ints = np.arange(-5, 7, dtype=np.int32).reshape(3, 4)
    both("sum", ints, (0,), False)  # int32 sums into int64, as numpy does
    both("prod", ints[:, 1:], None, False)
    both("sum", ints > 0, (1,), False)
    both("max", np.array([1.0, np.nan, 3.0]), None, False)  # NaN propagates
    both("min", np.array([[1.0, 2.0], [np.nan, 0.0]]), (1,), True)
    both("sum", np.zeros((0, 3)), (0,), False)
    both("prod", np.zeros((2, 0)), (1,), False)
    both("all", np.zeros((0,)), None, False)
    both("sum", np.array(4.0), None, False)  # 0-d
    many = np.linspace(0, 1, 300)  # more elements than threads in a block
    both("sum", many, None, False)
    both("max", many[::-1].copy(), None, False)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions_take_the_first_of_ties_and_nan(name):
    a = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, np.nan, 5.0, np.nan], [0.0, 0.0, -1.0, -1.0]])
    both(name, a, 1, False)
    both(name, a, 0, True)
    both(name, a, None, False)
    both(name, a, None, True)
    both(name, np.arange(100)[::-1].copy() % 37, None, False)
    host, device = strided_pair()
    same(getattr(C, name)(device, 2), getattr(N, name)(host, 2))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
def test_scans_along_any_axis(name):
    a = np.array([[1.0, -2.0, np.nan, 4.0], [0.5, 3.0, -1.0, 2.0]])
    both(name, a, 1)
    both(name, a, 0)
    host, device = strided_pair()
    same(getattr(C, name)(device, 1), getattr(N, name)(host, 1))
    both(name, np.arange(6, dtype=np.int32).reshape(2, 3), 1)


def test_creation_and_casts():
    same(C.zeros((2, 3), dt.float32), np.zeros((2, 3), np.float32))
    same(C.ones((4,), dt.int64), np.ones(4, np.int64))
    same(C.full((2, 2), 7.5, dt.float64), np.full((2, 2), 7.5))
    same(C.full((), True, dt.bool_), np.array(True))
    assert C.empty((3, 0), dt.int8).shape == (3, 0)
    same(C.arange(0, 5, 1, dt.int64), np.arange(5))
    same(C.arange(1.0, 2.0, 0.25, dt.float32), np.arange(1.0, 2.0, 0.25, dtype=np.float32))
    same(C.arange(5, 0, -2, dt.int32), np.arange(5, 0, -2, dtype=np.int32))
    host, device = strided_pair()
    for dtype in (dt.float32, dt.int64, dt.int8, dt.bool_, dt.uint8):
        same(C.astype(device, dtype), N.astype(host, dtype))
    copied = C.copy(device)
    assert C.is_contiguous(copied)
    same(copied, host)
    assert C.dtype_of(copied) is dt.float64
    assert C.supported_dtypes == {dt.float32, dt.float64, dt.int64, dt.int32, dt.int16, dt.int8, dt.uint8, dt.bool_}
    with pytest.raises(TypeError, match="the 'cuda' device has no float16 arrays"):
        C.astype(device, dt.float16)


def test_views_share_device_memory():
    base = up(np.arange(12.0).reshape(3, 4))
    row = C.getitem(base, (1,))
    C.setitem(row, (slice(1, 3),), -1.0)  # write through the view
    column = C.getitem(base, (slice(None), 2))
    C.setitem(column, Ellipsis, up(np.array([100.0, 200.0, 300.0])))
    transposed = C.permute(base, (1, 0))
    C.setitem(transposed, (0, 0), 5.0)
    flat_view = C.reshape(base, (-1,))
    C.setitem(flat_view, (11,), 42.0)
    diagonal = C.diagonal(base, 1, 0, 1)
    C.setitem(diagonal, (0,), 9.0)
    expected = np.arange(12.0).reshape(3, 4)
    expected[1, 1:3] = -1
    expected[:, 2] = [100, 200, 300]
    expected[0, 0], expected[2, 3], expected[0, 1] = 5, 42, 9
    same(base, expected)
    same(C.broadcast_to(up(np.arange(3.0)), (2, 3)), np.broadcast_to(np.arange(3.0), (2, 3)))
    assert C.broadcast_to(up(np.arange(3.0)), (2, 3)).strides == (0, 8)


def test_reshape_is_a_view_when_the_layout_allows_and_a_copy_otherwise():
    base = up(np.arange(24.0).reshape(2, 3, 4))
    split = C.reshape(C.permute(base, (2, 0, 1)), (4, 6))  # the last two axes merge: still a view
    C.setitem(split, (0, 0), -7.0)
    assert down(base)[0, 0, 0] == -7.0
    merged = C.reshape(C.permute(base, (0, 2, 1)), (2, 12))  # crosses a transposed pair: a copy
    C.setitem(merged, (0, 1), 50.0)
    expected = np.arange(24.0).reshape(2, 3, 4)
    expected[0, 0, 0] = -7.0
    same(base, expected)  # the copy's write did not reach the base
    expected = expected.transpose(0, 2, 1).reshape(2, 12)
    expected[0, 1] = 50.0
    same(merged, expected)
    host, device = strided_pair()
    for shape in ((12,), (3, -1), (1, 2, 1, 6)):
        same(C.reshape(device, shape), host.reshape(shape))
    same(C.reshape(up(np.array([3.0])), ()), np.array(3.0))
    same(C.reshape(up(np.zeros((0, 4))), (2, 0, 3)), np.zeros((2, 0, 3)))


INDEXES = [
    (1, slice(None, None, -1)),  # a negative step (a copy)
    (Ellipsis, None, slice(1, 3)),
    (np.array([2, 0, -1]),),  # integer arrays, with a negative index
    (slice(None), np.array([[0, 1], [3, 3]])),
    (np.array([0, 2]), slice(None), np.array([1, 3])),  # two arrays around a slice: the index axes go first
    (np.array([0, 2]), np.array([1, 3])),
    (1, slice(None), np.array([0, 2])),  # an int counts as an array next to one
    (np.array([[True, False, True, False]] * 3),),  # a bool mask (its positions on the host)
    (np.array(1), np.array(2)),  # 0-d arrays: a 0-d result
]


@pytest.mark.parametrize("index", INDEXES, ids=range(len(INDEXES)))
def test_getitem_and_setitem_like_numpy(index):
    host = np.arange(3 * 5 * 4.0).reshape(3, 5, 4)[:, 1:]  # a sliced base
    device = C.getitem(up(np.arange(3 * 5 * 4.0).reshape(3, 5, 4)), (slice(None), slice(1, None)))
    device_index = tuple(up(i) if isinstance(i, np.ndarray) else i for i in index)
    same(C.getitem(device, device_index), N.getitem(host, index))
    shape = N.getitem(host, index).shape
    values = np.arange(float(np.prod(shape))).reshape(shape) + 1000
    N.setitem(host, index, values)
    C.setitem(device, device_index, up(values))
    same(device, host)
    N.setitem(host, index, -5.0)
    C.setitem(device, device_index, -5.0)
    same(device, host)


def test_add_at_adds_repeated_indices():
    for dtype in (np.float32, np.float64, np.int64, np.int32, np.int8):
        host = np.zeros((4, 3), dtype)
        device = up(host)
        index = np.array([0, 2, 0, 0, -1])
        values = np.arange(15, dtype=dtype).reshape(5, 3)
        N.add_at(host, index, values)
        C.add_at(device, up(index), up(values))
        same(device, host)
    host, device = np.zeros(5), C.zeros((5,), dt.float64)
    N.add_at(host, (np.array([1, 1, 3]),), 1.0)
    C.add_at(device, (up(np.array([1, 1, 3])),), 1.0)
    same(device, host)
    N.add_at(host, (slice(1, 4),), np.array([1.0, 2.0, 3.0]))
    C.add_at(device, (slice(1, 4),), up(np.array([1.0, 2.0, 3.0])))
    same(device, host)


@pytest.mark.parametrize("name", ["multiply_at", "maximum_at", "minimum_at"])
def test_scatter_reductions_on_the_host(name):
    host, device = np.arange(1.0, 5.0), up(np.arange(1.0, 5.0))
    getattr(N, name)(host, np.array([0, 0, 3]), np.array([2.0, 3.0, -1.0]))
    getattr(C, name)(device, up(np.array([0, 0, 3])), up(np.array([2.0, 3.0, -1.0])))
    same(device, host)


def test_movement_primitives():
    a = np.arange(24.0).reshape(2, 3, 4)
    host, device = strided_pair()
    both("take_along_axis", a, np.array([[[0, 3]], [[2, 2]]]), 2)
    both("take_along_axis", a, np.array([[[1, 0, 1, 0]]]), 0)
    both("concatenate", [a, a[:, :1]], 1)
    same(C.concatenate([device, device], -1), np.concatenate([host, host], -1))
    same(C.stack([device, device], 1), np.stack([host, host], 1))
    same(C.flip(device, (0, 2)), np.flip(host, (0, 2)))
    same(C.roll(device, 1, 2), np.roll(host, 1, 2))
    same(C.roll(device, (1, -1), (0, 1)), np.roll(host, (1, -1), (0, 1)))
    same(C.roll(device, 5, None), np.roll(host, 5, None))
    same(C.pad(device, ((1, 0), (0, 2), (1, 1)), -1.0), np.pad(host, ((1, 0), (0, 2), (1, 1)), constant_values=-1.0))
    for k in (-1, 0, 2):
        same(C.tril(device, k), np.tril(host, k))
        same(C.triu(device, k), np.triu(host, k))


def test_positions_in_base_for_views():
    host, base = np.zeros((3, 4)), up(np.zeros((3, 4)))
    same(C.positions_in_base(base, C.getitem(base, (slice(None), slice(1, None, 2)))),
         N.positions_in_base(host, host[:, 1::2]))
    same(C.positions_in_base(base, C.permute(base, (1, 0))), N.positions_in_base(host, host.T))
    same(C.positions_in_base(base, C.diagonal(base, 0, 0, 1)), np.array([0, 5, 10]))
    transposed = C.permute(base, (1, 0))  # a base that is not contiguous: labelled from the strides on the host
    same(C.positions_in_base(transposed, C.getitem(transposed, (slice(1, 3),))),
         N.positions_in_base(host.T, host.T[1:3]))


def test_matmul_and_einsum():
    a, b = rng.normal(size=(2, 1, 5, 7)), rng.normal(size=(3, 7, 6))
    both("matmul", a, b)  # batch broadcasting, sizes that are not multiples of the tile
    both("matmul", a[0, 0], b[0, :, 0].copy())  # matrix @ vector
    both("matmul", b[0, :, 0].copy(), b[1])  # vector @ matrix
    both("matmul", b[0, :, 0].copy(), b[0, :, 0].copy())  # a dot product: 0-d
    both("matmul", np.zeros((2, 0)), np.zeros((0, 3)))
    host, device = strided_pair()
    same(C.matmul(device, C.permute(device, (0, 2, 1))), np.matmul(host, host.transpose(0, 2, 1)))
    both("matmul", np.arange(6).reshape(2, 3), np.arange(6).reshape(3, 2))
    both("einsum", "...ij,...ij->...i", a[:, :, :, :6], b[:2, None, :5])
    both("einsum", "ij,jk->ik", a[0, 0], b[0])
    both("einsum", "bij->ji", b)
    both("einsum", "ii->i", b[0, :6, :6].copy())  # a repeated label: numpy on the host


def test_round_trip_primitives_give_numpys_results_and_count_transfers():
    a = np.array([[3.0, 1.0, 2.0, 1.0], [np.nan, -1.0, 0.5, 8.0]])
    both("argsort", a, 1)
    mantissa, exponent = C.frexp(up(a))
    same(mantissa, np.frexp(a)[0])
    same(exponent, np.frexp(a)[1].astype(np.int32))
    both("gcd", np.array([12, 18, 7]), np.array([8, 12, 0]))
    both("lcm", np.array([4, 6]), 10)
    both("nextafter", a, 0.0)
    both("left_shift", np.array([1, 3], np.int64), np.array([2, 70], np.int64))
    before = C.transfers.count
    C.argsort(up(a), 1)
    assert C.transfers.count - before == 3  # up, down, and the sorted positions back up
    assert all(len(entry) == 2 for entry in cuda_backend.HOST_ROUND_TRIPS)


def test_transfers_are_counted_and_ops_make_none():
    before = C.transfers.count
    a = up(np.arange(6.0).reshape(2, 3))
    assert C.transfers.count == before + 1
    b = C.sum(C.exp(C.mul(C.permute(a, (1, 0)), 2.0)), (0,), False)
    b = C.getitem(C.matmul(a, C.permute(a, (1, 0))), (slice(None), 1))
    C.setitem(a, (0,), C.getitem(C.where(C.gt(b, 0.0), b, 0.0), (slice(0, 1),)))
    assert C.transfers.count == before + 1
    down(b)
    assert C.transfers.count == before + 2
    C.getitem(a, (C.arange(0, 2, 1, dt.int64),))  # an integer-array index reads back its bounds report
    assert C.transfers.count == before + 3


def _sgd_step(device):
    """One MLP step (forward, backward, SGD) from fixed weights: the loss and the new weights."""
    gl.manual_seed(0)
    model = gl.nn.Sequential(gl.nn.Linear(3, 8), gl.nn.Tanh(), gl.nn.Linear(8, 8), gl.nn.ReLU(),
                             gl.nn.Linear(8, 2)).to(device)
    optimizer = gl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = gl.tensor(rng_step.normal(size=(5, 3)).astype(np.float32), device=device)
    target = gl.tensor(rng_step.normal(size=(5, 2)).astype(np.float32), device=device)
    before = C.transfers.count
    loss = gl.nn.functional.mse_loss(model(x), target)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    value = loss.item()
    made = C.transfers.count - before
    return value, [p.detach().to("cpu").numpy() for p in model.parameters()], made


rng_step = np.random.default_rng(1)


def test_mlp_training_step_matches_numpy_and_reads_only_the_loss():
    global rng_step
    rng_step = np.random.default_rng(1)
    loss_cpu, weights_cpu, _ = _sgd_step("cpu")
    rng_step = np.random.default_rng(1)
    loss_cuda, weights_cuda, transfers = _sgd_step("cuda")
    assert transfers == 1  # loss.item(): everything else stayed on the device
    np.testing.assert_allclose(loss_cuda, loss_cpu, rtol=1e-5)
    for got, expected in zip(weights_cuda, weights_cpu):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # a fresh interpreter imports numba: seconds
def test_no_gpu_and_no_simulator_is_a_clear_error():
    if os.path.exists("/proc/driver/nvidia/version"):
        pytest.skip("this machine has a GPU")
    code = "import gradlab.backends.cuda_backend"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="0")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=os.path.dirname(os.path.dirname(__file__)))
    assert done.returncode != 0
    assert "no CUDA GPU found" in done.stderr and "NUMBA_ENABLE_CUDASIM=1" in done.stderr


@pytest.mark.slow  # a fresh interpreter: seconds
def test_without_numba_cuda_the_device_names_the_extra():
    code = ("import sys; sys.modules['numba_cuda'] = None\n"  # as if numba-cuda were not installed
            "import gradlab\n"
            "try:\n    gradlab.zeros(2, device='cuda')\nexcept RuntimeError as error:\n    print(error)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(__file__)))
    assert 'pip install "gradlab[cuda]"' in done.stdout, done.stdout + done.stderr


def test_bad_indices_raise_numpys_errors_before_anything_is_written():
    host = np.arange(12.0).reshape(3, 4)
    device = up(host)
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        C.getitem(device, (slice(None), up(np.array([0, 4]))))
    with pytest.raises(IndexError, match="index -4 is out of bounds for axis 0 with size 3"):
        C.setitem(device, (up(np.array([-4, 1])),), 0.0)
    with pytest.raises(IndexError, match="index 3 is out of bounds for axis 0 with size 3"):
        C.add_at(device, up(np.array([3])), up(np.ones(4)))
    with pytest.raises(IndexError, match="boolean index did not match indexed array along axis 0"):
        C.getitem(device, (up(np.array([True, False])),))
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 0"):
        C.getitem(device, (5,))
    with pytest.raises(ValueError, match=r"could not broadcast input array from shape \(3,\) into shape \(4,\)"):
        C.setitem(device, (0,), up(np.ones(3)))
    same(device, host)  # nothing was written
    same(C.getitem(device, (up(np.array([2, -1])),)), host[[2, -1]])  # and the next gather works


@pytest.mark.parametrize("name", ["isub", "iadd", "imul"])
def test_in_place_updates_write_into_the_array_itself(name):
    host, device = np.arange(6.0).reshape(2, 3), up(np.arange(6.0).reshape(2, 3))
    view = C.getitem(device, (1,))  # a view sees the update: same memory
    for b in (np.array([1.0, -2.0, 0.5]), 3.0):
        getattr(N, name)(host, b)
        getattr(C, name)(device, up(b) if isinstance(b, np.ndarray) else b)
    same(device, host)
    same(view, host[1])
    strided_host, strided = host[:, ::2], C.getitem(device, (slice(None), slice(None, None, 2)))
    getattr(N, name)(strided_host, 2.0)  # not contiguous: the composed fallback
    getattr(C, name)(strided, 2.0)
    same(device, host)

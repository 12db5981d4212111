"""The MLX backend against the numpy reference: every primitive, the lazy-evaluation guarantees, views.

MLX runs on the CPU here (mlx[cpu] on Linux); the GPU's float64 refusal is checked as a function.
"""

import gc

import numpy as np
import pytest

mx = pytest.importorskip("mlx.core", reason="the 'mlx' device needs mlx: pip install \"gradlab[mlx]\"")

import gradlab as gl  # noqa: E402
from gradlab import dtypes as dt  # noqa: E402
from gradlab.backends import mlx_backend  # noqa: E402
from gradlab.backends.contract import PRIMITIVES, Backend  # noqa: E402
from gradlab.backends.mlx_backend import MlxBackend, float64_on_gpu_error  # noqa: E402
from gradlab.backends.numpy_backend import NumpyBackend  # noqa: E402

M, N = MlxBackend(), NumpyBackend()
RNG = np.random.default_rng(0)
TOLERANCE = {dt.float64: 1e-12, dt.float32: 2e-6, dt.float16: 2e-3, dt.bfloat16: 2e-2}


def values(shape, dtype, low=-3.0, high=3.0):
    """Host values for a test input: floats in [low, high), small integers, or bools."""
    if dtype is dt.bool_:
        return RNG.random(shape) < 0.5
    if dtype.is_floating_point:
        return RNG.uniform(low, high, shape)
    if dtype.is_signed:
        return RNG.integers(-5, 6, shape)
    return RNG.integers(0, 11, shape)


def check(got, expected, dtype=None):
    """An MLX result equals the numpy backend's: same dtype and shape, values within the dtype's tolerance."""
    if isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for g, e in zip(got, expected):
            check(g, e, dtype)
        return
    assert isinstance(got, mx.array), type(got)
    assert M.dtype_of(got) is N.dtype_of(expected), (M.dtype_of(got), N.dtype_of(expected))
    host = M.to_numpy(got)
    assert host.shape == expected.shape
    rtol = TOLERANCE.get(N.dtype_of(expected), 0)
    np.testing.assert_allclose(host.astype(np.float64), expected.astype(np.float64), rtol=rtol, atol=rtol,
                               equal_nan=True)


def run_both(name, *args):
    """The primitive ``name`` on MLX and on numpy, with arrays given as (host values, DType) pairs."""
    m_args = [M.asarray(a[0], a[1]) if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], dt.DType) else a
              for a in args]
    n_args = [N.asarray(a[0], a[1]) if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], dt.DType) else a
              for a in args]
    return getattr(M, name)(*m_args), getattr(N, name)(*n_args)


# --- the contract is covered ---------------------------------------------------------------------

def test_every_primitive_is_implemented_and_dtypes_are_registered():
    for name in " ".join(PRIMITIVES).split():
        assert callable(getattr(M, name)), name
    assert M.supported_dtypes == frozenset(dt.ALL_DTYPES)
    for dtype in dt.ALL_DTYPES:
        assert M.dtype_of(M.zeros((2,), dtype)) is dtype
        assert gl.zeros(2, dtype=dtype, device="mlx").dtype is dtype  # Tensor.dtype reads the registered table


def test_the_device_string_finds_this_backend():
    x = gl.ones(2, 3, device="mlx")
    assert isinstance(x.array, mx.array) and isinstance(x.device.backend, MlxBackend)


# --- dtypes, transfer and creation ---------------------------------------------------------------

@pytest.mark.parametrize("dtype", dt.ALL_DTYPES, ids=lambda d: d.name)
def test_asarray_to_numpy_and_astype_round_trip(dtype):
    host = values((3, 4), dtype)
    m, n = M.asarray(host, dtype), N.asarray(host, dtype)
    check(m, n)
    check(M.asarray(np.asarray(host)[0, 0], dtype), N.asarray(np.asarray(host)[0, 0], dtype))  # 0-d
    check(M.copy(m), N.copy(n))
    for target in (dt.float32, dt.int64, dt.bool_):
        check(M.astype(m, target), N.astype(n, target))


def test_asarray_keeps_float64_and_python_data():
    check(M.asarray([[1.5, 2.25], [3.0, 1e-300]], dt.float64), N.asarray([[1.5, 2.25], [3.0, 1e-300]], dt.float64))
    check(M.asarray(7, dt.int64), N.asarray(7, dt.int64))
    check(M.asarray(np.zeros((0, 3)), dt.float32), N.asarray(np.zeros((0, 3)), dt.float32))


@pytest.mark.parametrize("dtype", [dt.float32, dt.float64, dt.int32, dt.bool_], ids=lambda d: d.name)
def test_creation(dtype):
    for shape in ((2, 3), (), (0, 4)):
        check(M.zeros(shape, dtype), N.zeros(shape, dtype))
        check(M.ones(shape, dtype), N.ones(shape, dtype))
        check(M.full(shape, 1, dtype), N.full(shape, 1, dtype))
        assert M.empty(shape, dtype).shape == shape
    if dtype is not dt.bool_:
        check(M.arange(1, 11, 3, dtype), N.arange(1, 11, 3, dtype))
        check(M.arange(5, 1, -1, dtype), N.arange(5, 1, -1, dtype))
    if dtype.is_floating_point:
        check(M.arange(0, 1, 0.1, dtype), N.arange(0, 1, 0.1, dtype))
        check(M.full((2,), float("-inf"), dtype), N.full((2,), float("-inf"), dtype))


def test_random_draws_the_numpy_backends_numbers():
    for draw, args in (("random_uniform", ((3, 4), -1.0, 2.0, dt.float32)), ("random_normal", ((5,), 0.0, 2.0, dt.float64)),
                       ("random_integers", (0, 10, (2, 3), dt.int64)), ("random_permutation", (7, dt.int64))):
        check(getattr(M, draw)(np.random.default_rng(3), *args), getattr(N, draw)(np.random.default_rng(3), *args))
    gl.manual_seed(5)
    a = gl.randn(4, device="mlx")
    gl.manual_seed(5)
    assert np.array_equal(a.numpy(), gl.randn(4).numpy())


# --- elementwise ----------------------------------------------------------------------------------

DOMAINS = {"log": (0.1, 5), "log1p": (-0.9, 5), "sqrt": (0, 5), "log2": (0.1, 5), "log10": (0.1, 5),
           "arcsin": (-0.99, 0.99), "arccos": (-0.99, 0.99), "arctanh": (-0.99, 0.99), "arccosh": (1.01, 5)}
UNARY = ("neg abs exp log log1p expm1 sqrt sin cos tan tanh sign floor ceil round erf erfc arcsin arccos arctan "
         "sinh cosh arcsinh arccosh arctanh log2 log10").split()


@pytest.mark.parametrize("name", UNARY)
def test_unary_maths(name):
    for dtype in (dt.float32, dt.float64, dt.float16):
        for shape in ((3, 5), (), (0, 2)):
            host = values(shape, dtype, *DOMAINS.get(name, (-3, 3)))
            check(*run_both(name, (host, dtype)))


@pytest.mark.parametrize("name", ["neg", "abs", "sign"])
def test_unary_on_integers(name):
    check(*run_both(name, (values((4, 3), dt.int32), dt.int32)))
    check(*run_both(name, (values((4,), dt.int64), dt.int64)))


def test_rounding_and_predicates_at_the_edges():
    edge = np.array([0.5, 1.5, 2.5, -0.5, -1.5, np.nan, np.inf, -np.inf, -0.0])
    for name in ("round", "floor", "ceil", "isnan", "isinf", "sign", "abs"):
        check(*run_both(name, (edge, dt.float32)))
    check(*run_both("logical_not", (values((3, 3), dt.bool_), dt.bool_)))
    check(*run_both("frexp", (np.array([0.0, 1.0, -3.5, 1e-30, 1e30]), dt.float32)))
    check(*run_both("frexp", (values((2, 3), dt.float64), dt.float64)))


BINARY_FLOAT = ("add sub mul div pow maximum minimum floor_divide remainder arctan2 hypot copysign fmod nextafter "
                "logaddexp logaddexp2 eq ne lt le gt ge").split()
SHAPE_PAIRS = (((3, 4), (3, 4)), ((3, 1), (1, 4)), ((), (2, 3)), ((2, 1, 3), (4, 1)), ((0, 3), (3,)))


@pytest.mark.parametrize("name", BINARY_FLOAT)
def test_binary_maths_with_broadcasting(name):
    low = 0.1 if name == "pow" else -3.0
    for dtype in (dt.float32, dt.float64):
        for sa, sb in SHAPE_PAIRS:
            check(*run_both(name, (values(sa, dtype, low), dtype), (values(sb, dtype, 0.5), dtype)))
        check(*run_both(name, (values((2, 3), dtype, low), dtype), 1.5))  # a Python number keeps the array's dtype
    check(*run_both(name, (values((2, 3), dt.float16, low), dt.float16), (values((3,), dt.float16, 0.5), dt.float16)))


def test_maximum_and_minimum_propagate_nan():
    a, b = np.array([1.0, np.nan, 2.0]), np.array([np.nan, 0.0, 3.0])
    check(*run_both("maximum", (a, dt.float32), (b, dt.float32)))
    check(*run_both("minimum", (a, dt.float32), (b, dt.float32)))


BINARY_INT = "add sub mul maximum minimum floor_divide remainder eq lt ge gcd lcm bitwise_and bitwise_or bitwise_xor".split()


@pytest.mark.parametrize("name", BINARY_INT)
def test_binary_on_integers(name):
    for dtype in (dt.int32, dt.int64, dt.uint8):
        a, b = values((3, 4), dtype), values((4,), dtype)
        if name in ("floor_divide", "remainder"):
            b = np.where(b == 0, 3, b)
        check(*run_both(name, (a, dtype), (b, dtype)))
    check(*run_both("pow", (values((3, 4), dt.int32), dt.int32), (RNG.integers(0, 4, (4,)), dt.int32)))


def test_shifts_give_zero_from_the_width_on_as_numpy_does():
    a, counts = np.array([1, -8, 255, 7]), np.array([1, 2, 31, 40])
    for name in ("left_shift", "right_shift"):
        check(*run_both(name, (a, dt.int32), (counts, dt.int32)))
        check(*run_both(name, (np.array([1, 128, 255, 3]), dt.uint8), (np.array([1, 7, 8, 9]), dt.uint8)))


def test_logical_bitwise_and_where():
    a, b = values((3, 4), dt.bool_), values((1, 4), dt.bool_)
    for name in ("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"):
        check(*run_both(name, (a, dt.bool_), (b, dt.bool_)))
    check(*run_both("bitwise_not", (a, dt.bool_)))
    check(*run_both("bitwise_not", (values((5,), dt.int32), dt.int32)))
    cond = values((3, 1), dt.bool_)
    check(*run_both("where", (cond, dt.bool_), (values((3, 4), dt.float32), dt.float32), (values((4,), dt.float32), dt.float32)))
    check(*run_both("where", (cond, dt.bool_), (values((3, 4), dt.float32), dt.float32), 0.0))
    check(*run_both("where", (np.array(True), dt.bool_), (np.array(2.0), dt.float64), (np.array(3.0), dt.float64)))


def test_float64_maths_is_exact_on_the_cpu():
    """MLX's own float64 exp/sin/cos/erf are only float32-accurate: the backend keeps float64 exact."""
    x = np.linspace(-8, 8, 1001)
    for name in ("exp", "sin", "cos", "erf", "tanh", "sigmoid"):
        check(*run_both(name, (x, dt.float64)))
    a = gl.tensor(x, dtype=gl.float64, device="mlx")
    assert a.dtype is gl.float64 and a.exp().dtype is gl.float64
    w = gl.tensor(RNG.normal(size=(20, 30)), dtype=gl.float64)
    np.testing.assert_allclose((w.to("mlx") @ w.t().to("mlx")).numpy(), (w @ w.t()).numpy(), rtol=1e-13)


# --- reductions -----------------------------------------------------------------------------------

AXES = (None, (0,), (-1,), (0, 2), (-1, -3), ())


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "all", "any"])
def test_reductions_over_axis_tuples(name):
    for dtype in (dt.float32, dt.float64, dt.int32, dt.bool_, dt.uint8):
        host = values((2, 3, 4), dtype, 0.5, 1.5)
        for axis in AXES:
            for keepdims in (False, True):
                check(*run_both(name, (host, dtype), axis, keepdims))
    check(*run_both(name, (np.array(2.5), dt.float32), None, False))  # 0-d


def test_reductions_of_empty_arrays():
    for name in ("sum", "prod", "all", "any"):
        check(*run_both(name, (np.zeros((0, 3)), dt.float32), None, False))
        check(*run_both(name, (np.zeros((0, 3)), dt.float32), (0,), True))
    check(*run_both("max", (np.zeros((0, 3)), dt.float32), (1,), False))
    check(*run_both("argmax", (np.zeros((0, 3)), dt.float32), 1, False))
    with pytest.raises(ValueError):
        M.argmax(M.zeros((0, 3), dt.float32), 0, False)


def test_sums_of_small_integers_are_64_bit_as_in_numpy():
    for dtype in (dt.bool_, dt.int8, dt.int32, dt.uint8):
        check(*run_both("sum", (values((4, 5), dtype), dtype), (1,), False))
        check(*run_both("cumsum", (values((4, 5), dtype), dtype), 0))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_arg_reductions(name):
    host = values((3, 4, 5), dt.float32)
    for axis in (None, 0, -1, 1):
        for keepdims in (False, True):
            check(*run_both(name, (host, dt.float32), axis, keepdims))
    check(*run_both(name, (values((6,), dt.int32), dt.int32), None, False))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin"])
def test_running_reductions(name):
    host = values((3, 4), dt.float32, 0.5, 1.5)
    host[1, 1] = np.nan  # a NaN, once met, stays in cummax/cummin
    for axis in (0, 1, -1):
        check(*run_both(name, (host, dt.float32), axis))
        check(*run_both(name, (values((3, 4), dt.int64), dt.int64), axis))


def test_argsort_is_stable_with_nan_last():
    host = np.array([[3.0, np.nan, 1.0, 3.0, 1.0, -np.inf], [2.0, 2.0, 2.0, np.nan, 0.0, 2.0]])
    for axis in (0, 1, -1):
        check(*run_both("argsort", (host, dt.float32), axis))
    check(*run_both("argsort", (values((5, 6), dt.int32), dt.int32), -1))


# --- movement and indexing ------------------------------------------------------------------------

def test_shape_movement():
    host = values((2, 3, 4), dt.float32)
    check(*run_both("reshape", (host, dt.float32), (4, -1)))
    check(*run_both("reshape", (host, dt.float32), (24,)))
    check(*run_both("reshape", (np.array(3.0), dt.float32), (1, 1)))
    check(*run_both("permute", (host, dt.float32), (2, 0, 1)))
    check(*run_both("broadcast_to", (values((3, 1), dt.int32), dt.int32), (2, 3, 5)))
    check(*run_both("flip", (host, dt.float32), (0, 2)))
    check(*run_both("flip", (host, dt.float32), -1))
    check(*run_both("roll", (host, dt.float32), (1, -2), (0, 2)))
    check(*run_both("pad", (host, dt.float32), ((0, 1), (2, 0), (1, 1)), 1.5))
    check(*run_both("tril", (host, dt.float32), 1))
    check(*run_both("triu", (host, dt.float32), -1))
    check(*run_both("diagonal", (host, dt.float32), 1, 1, 2))
    check(*run_both("diagonal", (host, dt.float32), -1, 0, 2))
    parts = [values((2, 3), dt.float32) for _ in range(3)]
    check(M.concatenate([M.asarray(p, dt.float32) for p in parts], -1), N.concatenate([N.asarray(p, dt.float32) for p in parts], -1))
    check(M.stack([M.asarray(p, dt.float32) for p in parts], 1), N.stack([N.asarray(p, dt.float32) for p in parts], 1))
    index = RNG.integers(0, 4, (2, 3, 2))
    check(*run_both("take_along_axis", (host, dt.float32), (index, dt.int64), 2))


INDICES = [
    (1,), (slice(None), -1), (Ellipsis, slice(1, None, 2)), (None, 0, slice(None, None, -1)), (),
    "int_array", "two_int_arrays_split_by_a_slice", "mask", "row_mask",
]


def _index_pair(kind):
    """The same index for both backends: Python items as they are, arrays made by each backend."""
    if not isinstance(kind, str):
        return kind, kind
    arrays = {
        "int_array": [(np.array([1, 0, 1]), dt.int64)],
        "two_int_arrays_split_by_a_slice": [(np.array([1, 0]), dt.int64), slice(None), (np.array([[3], [0]]), dt.int64)],
        "mask": [(values((2, 3, 4), dt.bool_), dt.bool_)],
        "row_mask": [slice(None), (np.array([True, False, True]), dt.bool_)],
    }[kind]
    return tuple(tuple(M.asarray(*a) if isinstance(a, tuple) else a for a in arrays)), \
        tuple(tuple(N.asarray(*a) if isinstance(a, tuple) else a for a in arrays))


@pytest.mark.parametrize("kind", INDICES, ids=str)
def test_getitem_and_setitem(kind):
    host = values((2, 3, 4), dt.float32)
    m_index, n_index = _index_pair(kind)
    m, n = M.asarray(host, dt.float32), N.asarray(host, dt.float32)
    check(M.getitem(m, m_index), N.getitem(n, n_index))
    M.setitem(m, m_index, 7.0)
    N.setitem(n, n_index, 7.0)
    check(m, n)
    shape = N.getitem(n, n_index).shape
    fill = values(shape, dt.float32)
    M.setitem(m, m_index, M.asarray(fill, dt.float32))
    N.setitem(n, n_index, N.asarray(fill, dt.float32))
    check(m, n)


@pytest.mark.parametrize("index", [(3,), (0, -5), (0, 0, 0), "int_array_past_the_end", "negative_past_the_start",
                                   "unbroadcastable_arrays", "mask_of_the_wrong_shape"], ids=str)
def test_a_bad_index_is_numpys_index_error_before_mlx_reads_out_of_bounds(index):
    m, n = M.zeros((3, 4), dt.float32), N.zeros((3, 4), dt.float32)
    arrays = {"int_array_past_the_end": lambda B: (B.asarray([0, 3], dt.int64),),
              "negative_past_the_start": lambda B: (slice(None), B.asarray([-5], dt.int64)),
              "unbroadcastable_arrays": lambda B: (B.asarray([0, 1], dt.int64), B.asarray([0, 1, 2], dt.int64)),
              "mask_of_the_wrong_shape": lambda B: (B.asarray([True, False], dt.bool_),)}
    m_index, n_index = (arrays[index](M), arrays[index](N)) if isinstance(index, str) else (index, index)
    for backend, a, key in ((N, n, n_index), (M, m, m_index)):
        with pytest.raises(IndexError):
            backend.getitem(a, key)
        with pytest.raises(IndexError):
            backend.setitem(a, key, 1.0)
    with pytest.raises(IndexError, match="out of bounds"):
        M.take_along_axis(m, M.asarray([[4]], dt.int64), 1)


def test_python_bools_in_an_index_and_values_with_extra_leading_ones():
    host = values((3, 4), dt.float32)
    for index in ((True,), (False, 1), (Ellipsis, True)):
        check(*run_both("getitem", (host, dt.float32), index))
    m, n = M.asarray(host, dt.float32), N.asarray(host, dt.float32)
    M.setitem(m, (0,), M.ones((1, 4), dt.float32))
    N.setitem(n, (0,), N.ones((1, 4), dt.float32))
    M.setitem(m, (True, 1), 5.0)
    N.setitem(n, (True, 1), 5.0)
    check(m, n)


def test_setitem_is_seen_by_every_holder_of_the_array():
    a = M.zeros((2, 3), dt.float32)
    holder = {"same": a}
    before = M.add(a, 1.0)  # computed from the old values, even though MLX has not run it yet
    M.setitem(a, (0, slice(None)), 5.0)
    assert M.to_numpy(holder["same"]).tolist() == [[5, 5, 5], [0, 0, 0]]
    assert M.to_numpy(before).tolist() == [[1, 1, 1], [1, 1, 1]]


@pytest.mark.parametrize("name", ["add_at", "multiply_at", "maximum_at", "minimum_at"])
def test_scatter_primitives_with_repeated_indices(name):
    host = values((5, 3), dt.float32, 0.5, 2)
    rows, cols = np.array([0, 2, 0, 4, 0]), np.array([1, 1, 1, 0, 2])
    updates = values((5,), dt.float32, 0.5, 2)
    m, n = M.asarray(host, dt.float32), N.asarray(host, dt.float32)
    getattr(M, name)(m, (M.asarray(rows, dt.int64), M.asarray(cols, dt.int64)), M.asarray(updates, dt.float32))
    getattr(N, name)(n, (N.asarray(rows, dt.int64), N.asarray(cols, dt.int64)), N.asarray(updates, dt.float32))
    check(m, n)
    m, n = M.asarray(host, dt.float32), N.asarray(host, dt.float32)  # whole rows, a broadcast value
    getattr(M, name)(m, (M.asarray(rows, dt.int64),), 1.5)
    getattr(N, name)(n, (N.asarray(rows, dt.int64),), 1.5)
    check(m, n)


def test_scatters_with_no_positions_and_exact_int64_ranges():
    m, n = M.zeros((0,), dt.int64), N.zeros((0,), dt.int64)
    M.add_at(m, (M.zeros((0,), dt.int64),), M.ones((0,), dt.int64))
    N.add_at(n, (N.zeros((0,), dt.int64),), N.ones((0,), dt.int64))
    check(m, n)
    check(M.arange(2**60, 2**60 + 5, 2, dt.int64), N.arange(2**60, 2**60 + 5, 2, dt.int64))


def test_an_einsum_that_sums_nothing_is_a_view():
    x = gl.arange(9.0, device="mlx").reshape(3, 3)
    gl.einsum("ii->i", x).mul_(10.0)
    gl.einsum("ij->ji", x)[0].add_(0.5)
    expected = np.arange(9.0).reshape(3, 3)
    expected[[0, 1, 2], [0, 1, 2]] *= 10
    expected[:, 0] += 0.5
    assert np.array_equal(x.numpy(), expected)
    total = gl.einsum("ij->i", x)
    total.zero_()  # a reduction is a copy: the base is untouched, as on numpy
    assert np.array_equal(x.numpy(), expected)


def test_in_place_fused_kernels():
    for name in ("isub", "iadd", "imul"):
        host, other = values((3, 4), dt.float32), values((4,), dt.float32)
        m, n = M.asarray(host, dt.float32), N.asarray(host, dt.float32)
        getattr(M, name)(m, M.asarray(other, dt.float32))
        getattr(N, name)(n, N.asarray(other, dt.float32))
        check(m, n)
    a, b = values((2, 3, 4), dt.float32), values((2, 4, 5), dt.float32)
    m_out, n_out = M.zeros((2, 3, 5), dt.float32), N.zeros((2, 3, 5), dt.float32)
    M.matmul_into(M.asarray(a, dt.float32), M.asarray(b, dt.float32), m_out)
    N.matmul_into(N.asarray(a, dt.float32), N.asarray(b, dt.float32), n_out)
    check(m_out, n_out)


def test_positions_in_base_and_contiguity_agree_with_numpy():
    views = [lambda B, a: B.getitem(a, (slice(None), slice(1, 3))),
             lambda B, a: B.permute(a, (1, 0, 2)),
             lambda B, a: B.getitem(B.reshape(a, (6, 4)), (slice(None, None, 2),)),
             lambda B, a: B.diagonal(a, 0, 1, 2),
             lambda B, a: B.broadcast_to(B.getitem(a, (0, None)), (2, 3, 3, 4)),
             lambda B, a: B.reshape(B.getitem(a, (1,)), (12,))]
    host = values((2, 3, 4), dt.float32)
    for view in views:
        m, n = M.asarray(host, dt.float32), N.asarray(host, dt.float32)
        m_view, n_view = view(M, m), view(N, n)
        check(M.positions_in_base(m, m_view), N.positions_in_base(n, n_view))
        assert M.is_contiguous(m_view) == N.is_contiguous(n_view)
    with pytest.raises(ValueError):
        M.positions_in_base(M.zeros((3,), dt.float32), M.getitem(M.zeros((3,), dt.float32), (slice(1, None),)))


def test_windows():
    host = values((2, 3, 7, 6), dt.float32)
    for window, steps, dilation in (((3, 2), (1, 1), (1, 1)), ((2, 2), (2, 3), (1, 1)), ((3, 2), (1, 2), (2, 1))):
        m, n = run_both("sliding_windows", (host, dt.float32), window, (2, 3), steps, dilation)
        check(m, n)
        check(M.fold_windows(m, host.shape, (2, 3), steps, dilation), N.fold_windows(n, host.shape, (2, 3), steps, dilation))


def test_matmul_and_einsum():
    for dtype in (dt.float32, dt.float64, dt.float16, dt.int64):
        check(*run_both("matmul", (values((2, 1, 3, 4), dtype), dtype), (values((5, 4, 2), dtype), dtype)))
        check(*run_both("matmul", (values((4,), dtype), dtype), (values((4, 3), dtype), dtype)))
        a, b = values((3, 4), dtype), values((4, 5), dtype)
        check(M.einsum("ij,jk->ki", M.asarray(a, dtype), M.asarray(b, dtype)), N.einsum("ij,jk->ki", N.asarray(a, dtype), N.asarray(b, dtype)))


def test_fused_kernels_and_linalg_kernels():
    host = values((4, 6), dt.float32)
    host[0] = -np.inf  # a row of -inf: NaN, as the composed kernels give
    for name, args in (("softmax", (1,)), ("log_softmax", (-1,)), ("logsumexp", ((1,), False)), ("sigmoid", ()), ("ndtr", ())):
        with np.errstate(invalid="ignore"):  # numpy's -inf - -inf
            check(*run_both(name, (host, dt.float32), *args))
        check(*run_both(name, (values((3, 5), dt.float64), dt.float64), *args))
    square = values((3, 4, 4), dt.float64) + 4 * np.eye(4)
    for name in ("inv", "lu_factor", "cholesky", "slogdet"):
        check(*run_both(name, (square @ square.transpose(0, 2, 1), dt.float64)))


# --- lazy evaluation ------------------------------------------------------------------------------

def test_values_leaving_mlx_are_evaluated():
    x = gl.ones(3, device="mlx") * 2
    assert x.sum().item() == 6.0 and x.tolist() == [2.0, 2.0, 2.0] and "2." in repr(x)
    assert np.array_equal(x.numpy(), [2.0, 2.0, 2.0])


def test_synchronize_evaluates_what_is_pending(monkeypatch):
    evaluated = []
    real_eval = mx.eval
    monkeypatch.setattr(mlx_backend.mx, "eval", lambda *arrays: (evaluated.extend(arrays[0]), real_eval(*arrays)))
    y = M.exp(M.ones((3,), dt.float32))
    M.synchronize()
    assert any(a is y for a in evaluated)


def _train(steps, device, seed=0, batches=None):
    """A small MLP trained with Adam; returns the losses and the model."""
    gl.manual_seed(seed)
    model = gl.nn.Sequential(gl.nn.Linear(8, 16), gl.nn.Tanh(), gl.nn.Linear(16, 3)).to(device)
    opt = gl.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for step in range(steps):
        x, y = batches[step] if batches else (RNG.normal(size=(64, 8)), RNG.integers(0, 3, 64))
        loss = gl.nn.functional.cross_entropy(model(gl.tensor(x, dtype=gl.float32, device=device)),
                                              gl.tensor(y, device=device))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
    return losses, model, opt


def test_mlp_on_mlx_gives_the_numpy_losses():
    rng = np.random.default_rng(1)
    inputs = [rng.normal(size=(32, 8)) for _ in range(6)]
    batches = [(x, x[:, :3].argmax(1)) for x in inputs]  # a rule to learn: the largest of the first three
    on_numpy = [loss.item() for loss in _train(6, "cpu", batches=batches)[0]]
    on_mlx = [loss.item() for loss in _train(6, "mlx", batches=batches)[0]]
    np.testing.assert_allclose(on_mlx, on_numpy, rtol=2e-5)
    assert on_numpy[-1] < on_numpy[0]


def test_every_optimizer_step_materializes_parameters_and_state(monkeypatch):
    seen = []
    real = MlxBackend.materialize
    monkeypatch.setattr(MlxBackend, "materialize", staticmethod(lambda arrays: (seen.append(list(arrays)), real(arrays))))
    _, model, opt = _train(3, "mlx")
    assert len(seen) == 3
    expected = [p.array for p in model.parameters()] + [opt.state[p][k].array for p in model.parameters()
                                                        for k in ("exp_avg", "exp_avg_sq")]
    assert all(any(a is e for a in seen[-1]) for e in expected)
    assert type(NumpyBackend()).materialize is Backend.materialize  # numpy: skipped, nothing is called


def test_a_long_training_loop_keeps_its_graph_bounded(monkeypatch):
    """200 steps that never read the loss: memory at step 200 is that of step 20. Without the optimizer's
    materialize every parameter would hold the whole history of batches (the control below)."""
    def memory_after(steps):
        gc.collect()
        losses, model, opt = _train(steps, "mlx")
        del losses
        gc.collect()
        memory = mx.get_active_memory()
        del model, opt
        return memory

    short, long = memory_after(20), memory_after(200)
    assert long < short + 256 * 1024  # a 64x8 float32 batch is 2 KiB: 180 more would be kept without the hook
    monkeypatch.setattr(gl.optim.Optimizer, "_materialize", lambda self: None)
    grown = memory_after(200)
    assert grown > long + 300 * 1024


# --- views: MLX copies, the backend carries writes across ----------------------------------------

def test_a_write_through_a_view_reaches_its_base_and_the_other_views():
    x = gl.zeros(3, 4, device="mlx")
    row, column, flat, transposed = x[1], x[:, 2], x.view(12), x.t()
    row.add_(1.0)
    column.fill_(5.0)
    expected = np.zeros((3, 4))
    expected[1] += 1
    expected[:, 2] = 5
    for tensor, values_ in ((x, expected), (row, expected[1]), (flat, expected.reshape(12)), (transposed, expected.T)):
        assert np.array_equal(tensor.numpy(), values_)
    x.mul_(2.0)
    assert np.array_equal(row.numpy(), 2 * expected[1]) and np.array_equal(transposed[2].numpy(), 2 * expected[:, 2])


def test_views_of_views_and_setitem_through_them():
    x = gl.arange(24.0, device="mlx").reshape(2, 3, 4)
    inner = x[1][:, 1:3]
    inner[0] = gl.tensor([-1.0, -2.0], device="mlx")
    reference = np.arange(24.0).reshape(2, 3, 4)
    reference[1, 0, 1:3] = [-1, -2]
    assert np.array_equal(x.numpy(), reference)
    x.diagonal(0, 1, 2).zero_()
    reference[:, [0, 1, 2], [0, 1, 2]] = 0
    assert np.array_equal(x.numpy(), reference) and np.array_equal(inner.numpy(), reference[1][:, 1:3])


def test_writing_into_an_expanded_view_is_refused_as_on_numpy():
    for device in ("cpu", "mlx"):
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            gl.zeros(3, 1, device=device).expand(3, 4).add_(1.0)


def test_gradients_through_writes_into_views_match_numpy():
    def run(device):
        w = gl.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True, device=device)
        base = w * 1.0
        base[1].mul_(3.0)
        base[:, 0].copy_(w[:, 1] ** 2)
        base.t()[2].sigmoid_()
        (base ** 2).sum().backward()
        return base.detach().numpy(), w.grad.numpy()

    for got, expected in zip(run("mlx"), run("cpu")):
        np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_a_view_whose_base_memory_was_replaced_is_refused():
    x = gl.zeros(3, 4, device="mlx", requires_grad=True)
    base = x * 1
    view = base[0]
    base.data = gl.ones(3, 4, device="mlx")
    with pytest.raises(RuntimeError, match="no longer shares memory"):
        view.add_(1.0)


def test_the_view_table_forgets_dead_views():
    a = M.zeros((100,), dt.float32)
    before = len(mlx_backend._VIEWS.source)
    for _ in range(50):
        M.reshape(M.getitem(a, (slice(2, 10),)), (2, 4))
    gc.collect()
    assert len(mlx_backend._VIEWS.source) == before


# --- float64 on MLX's GPU -------------------------------------------------------------------------

def test_float64_on_the_gpu_is_refused_with_the_fix():
    gpu, cpu = mx.Device(mx.DeviceType.gpu, 0), mx.Device(mx.DeviceType.cpu, 0)
    message = float64_on_gpu_error("zeros", dt.float64, gpu)
    assert "zeros" in message and "float64" in message and "float32" in message and "mlx.core.cpu" in message
    assert float64_on_gpu_error("zeros", dt.float32, gpu) is None
    assert float64_on_gpu_error("zeros", dt.float64, cpu) is None


def test_float64_is_refused_before_any_work_when_mlx_runs_on_its_gpu(monkeypatch):
    monkeypatch.setattr(mlx_backend.mx, "default_device", lambda: mx.Device(mx.DeviceType.gpu, 0))
    with pytest.raises(TypeError, match="float64 is not supported on MLX's GPU"):
        M.zeros((2,), dt.float64)
    with pytest.raises(TypeError, match="astype: float64"):
        M.astype(M.zeros((2,), dt.float32), dt.float64)
    assert M.zeros((2,), dt.float32).dtype == mx.float32

"""Type promotion (PyTorch's rules), dtype names and the default float dtype."""

import itertools

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl
from gradlab import dtypes

NAMES = ["bool", "int32", "int64", "float16", "float32", "float64"]

# PyTorch's documented rules, written out independently of gradlab's code:
#  - kinds are ordered bool < integer < floating point; within a kind the wider type wins;
#  - tensors that both have dimensions (or are both 0-d) promote to the wider of the two;
#  - a 0-d tensor decides only when its kind is higher than the dimensioned tensor's kind;
#  - a Python number decides only when its kind is higher, and then gives its kind's default
#    (int -> int64, float -> the default float dtype, float32).
KIND = {"bool": 0, "int32": 1, "int64": 1, "float16": 2, "float32": 2, "float64": 2}
WIDTH = {"bool": 1, "int32": 4, "int64": 8, "float16": 2, "float32": 4, "float64": 8}


def wider(a, b):
    return max(a, b, key=lambda n: (KIND[n], WIDTH[n]))


def expected_tensor_tensor(a, a_dim, b, b_dim):
    if (a_dim == 0) == (b_dim == 0):
        return wider(a, b)
    zero_d, shaped = (a, b) if a_dim == 0 else (b, a)
    return zero_d if KIND[zero_d] > KIND[shaped] else shaped


def expected_tensor_scalar(a, value):
    kind = 0 if isinstance(value, bool) else 1 if isinstance(value, int) else 2
    if kind <= KIND[a]:
        return a
    return {0: "bool", 1: "int64", 2: "float32"}[kind]


# A few rows spelled out, so the rules above are themselves checked against known answers.
@pytest.mark.parametrize(
    "a, a_dim, b, b_dim, result",
    [
        ("int32", 1, "int64", 1, "int64"), ("int64", 1, "float16", 1, "float16"),
        ("bool", 1, "int32", 1, "int32"), ("float16", 1, "float32", 1, "float32"),
        ("int32", 1, "int64", 0, "int32"), ("int32", 1, "float64", 0, "float64"),
        ("float16", 1, "float64", 0, "float16"), ("bool", 1, "int64", 0, "int64"),
        ("float32", 0, "float64", 0, "float64"), ("int64", 0, "float16", 1, "float16"),
    ],
)
def test_known_promotions(a, a_dim, b, b_dim, result):
    assert expected_tensor_tensor(a, a_dim, b, b_dim) == result
    assert dtypes.result_dtype(dtypes.as_dtype(a), a_dim, dtypes.as_dtype(b), b_dim).name == result


CASES = list(itertools.product(NAMES, NAMES, [(1, 1), (1, 0), (0, 1), (0, 0)]))


@pytest.mark.parametrize("a, b, dims", CASES)
def test_promotion_table_tensor_tensor(a, b, dims):
    expected = expected_tensor_tensor(a, dims[0], b, dims[1])
    assert dtypes.result_dtype(dtypes.as_dtype(a), dims[0], dtypes.as_dtype(b), dims[1]).name == expected
    x, y = gl.ones(*(2,) * dims[0], dtype=a), gl.ones(*(2,) * dims[1], dtype=b)
    assert (x + y).dtype.name == expected
    assert (x * y).dtype.name == expected


@pytest.mark.parametrize("a, value", list(itertools.product(NAMES, [True, 2, 2.5])))
def test_promotion_table_tensor_scalar(a, value):
    expected = expected_tensor_scalar(a, value)
    assert dtypes.result_dtype_with_scalar(dtypes.as_dtype(a), value).name == expected
    for shape in ((2,), ()):
        x = gl.ones(*shape, dtype=a)
        assert (x + value).dtype.name == expected and (value + x).dtype.name == expected
        assert (x * value).dtype.name == expected and (value * x).dtype.name == expected


@requires_torch
@pytest.mark.parametrize("a, b, dims", CASES)
def test_promotion_table_matches_torch(a, b, dims):
    ta = torch.ones((2,) * dims[0], dtype=getattr(torch, a))
    tb = torch.ones((2,) * dims[1], dtype=getattr(torch, b))
    expected = str(torch.result_type(ta, tb)).split(".")[1]
    x, y = gl.ones(*(2,) * dims[0], dtype=a), gl.ones(*(2,) * dims[1], dtype=b)
    assert (x + y).dtype.name == expected == str((ta + tb).dtype).split(".")[1]
    assert (x * y).dtype.name == str((ta * tb).dtype).split(".")[1]


@requires_torch
@pytest.mark.parametrize("a, value", list(itertools.product(NAMES, [True, 2, -3, 2.5, 1e3])))
def test_scalar_promotion_matches_torch(a, value):
    for shape in ((2,), ()):
        ta = torch.ones(shape, dtype=getattr(torch, a))
        x = gl.ones(*shape, dtype=a)
        assert (x + value).dtype.name == str((ta + value).dtype).split(".")[1]
        assert (x * value).dtype.name == str((ta * value).dtype).split(".")[1]


def test_numpy_numbers_count_as_python_numbers():
    assert dtypes.scalar_dtype(np.int64(3)) is gl.int64 and dtypes.scalar_dtype(np.bool_(True)) is gl.bool
    assert dtypes.scalar_dtype(np.float64(3.0)) is gl.float32


# --- division, default dtype, names ---------------------------------------------------------------


def test_integer_true_division_gives_float32():
    assert (gl.tensor([1, 2]) / gl.tensor([2, 2])).dtype is gl.float32
    assert (gl.tensor([1, 2]) / 2).tolist() == [0.5, 1.0] and (gl.tensor([1, 2]) / 2).dtype is gl.float32
    assert (gl.tensor([True]) / gl.tensor([True])).dtype is gl.float32


@requires_torch
def test_integer_true_division_matches_torch():
    for a, b in (("int64", "int64"), ("int32", "int64"), ("bool", "int32")):
        g = gl.ones(2, dtype=a) / gl.ones(2, dtype=b)
        t = torch.ones(2, dtype=getattr(torch, a)) / torch.ones(2, dtype=getattr(torch, b))
        assert g.dtype.name == str(t.dtype).split(".")[1]


@pytest.fixture
def default_float64():
    gl.set_default_dtype(gl.float64)
    yield
    gl.set_default_dtype(gl.float32)


def test_set_default_dtype_changes_what_floats_become(default_float64):
    assert gl.get_default_dtype() is gl.float64
    assert gl.tensor([1.5]).dtype is gl.float64 and gl.tensor(2.0).dtype is gl.float64
    assert gl.zeros(2).dtype is gl.float64 and gl.rand(2).dtype is gl.float64
    assert gl.arange(0.0, 1.0, 0.5).dtype is gl.float64 and gl.linspace(0, 1, 3).dtype is gl.float64
    assert gl.tensor([1, 2]).dtype is gl.int64
    assert (gl.tensor([1, 2]) + 2.5).dtype is gl.float64
    assert (gl.tensor([1.0], dtype=gl.float32) + 2.5).dtype is gl.float32


def test_integer_true_division_follows_the_default_dtype(default_float64):
    assert (gl.tensor([1, 2]) / 2).dtype is gl.float64
    assert (gl.tensor([1, 2]) / gl.tensor([2, 2])).dtype is gl.float64


def test_set_default_dtype_is_restored_and_validated():
    assert gl.get_default_dtype() is gl.float32
    with pytest.raises(TypeError, match="only floating-point dtypes can be the default"):
        gl.set_default_dtype(gl.int64)
    assert gl.get_default_dtype() is gl.float32


@pytest.mark.parametrize(
    "spec, dtype",
    [("float32", gl.float32), ("double", gl.float64), ("half", gl.float16), ("long", gl.int64), ("int", gl.int32),
     (float, gl.float64), (int, gl.int64), (bool, gl.bool), (np.float32, gl.float32), (np.dtype("int32"), gl.int32),
     (gl.float16, gl.float16)],
)
def test_as_dtype_accepts_names_types_and_numpy_dtypes(spec, dtype):
    assert dtypes.as_dtype(spec) is dtype


def test_unknown_dtype_lists_the_supported_ones():
    with pytest.raises(TypeError, match="unsupported dtype .complex64.; gradlab supports bool, uint8, int8, int16, int32, int64"):
        dtypes.as_dtype("complex64")


def test_dtypes_pickle_to_themselves():
    import pickle

    for d in dtypes.ALL_DTYPES:
        assert pickle.loads(pickle.dumps(d)) is d
    assert gl.float32.is_floating_point and not gl.int64.is_floating_point and gl.float64.itemsize == 8

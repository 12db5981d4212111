"""Every dtype PyTorch has on the CPU: names, promotion, limits, 16-bit floats computed as PyTorch computes them."""

import itertools

import numpy as np
import pytest

import gradlab as gl
from gradlab import dtypes
from helpers import requires_torch, torch

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "bfloat16",
         "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]


def torch_dtype(name):
    return getattr(torch, name)


@pytest.mark.parametrize("name", NAMES)
def test_every_dtype_makes_casts_and_round_trips_tensors(name):
    dtype = getattr(gl, name)
    x = gl.tensor([0, 1, 2], dtype=dtype)
    assert x.dtype is dtype and x.tolist() == ([False, True, True] if name == "bool" else [0, 1, 2])
    assert x.to(gl.float64).to(dtype).dtype is dtype
    assert gl.zeros(2, 3, dtype=dtype).shape == (2, 3)
    assert repr(x).startswith("tensor([")


@requires_torch
@pytest.mark.parametrize("a, b", list(itertools.combinations_with_replacement(NAMES, 2)))
def test_promotion_matches_pytorch_for_every_pair(a, b):
    try:
        expected = torch.promote_types(torch_dtype(a), torch_dtype(b))
    except RuntimeError:
        with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types is not supported"):
            gl.promote_types(getattr(gl, a), getattr(gl, b))
        return
    assert gl.promote_types(getattr(gl, a), getattr(gl, b)).name == str(expected).split(".")[1]


@requires_torch
@pytest.mark.parametrize("a, b", [("uint8", "int8"), ("float16", "bfloat16"), ("bool", "uint8"), ("int16", "float16"),
                                  ("uint8", "int64"), ("bfloat16", "float32")])
def test_arithmetic_on_mixed_dtypes_gives_pytorch_result_dtype(a, b):
    x = gl.tensor([1, 2], dtype=getattr(gl, a)) + gl.tensor([3, 4], dtype=getattr(gl, b))
    y = torch.tensor([1, 2], dtype=torch_dtype(a)) + torch.tensor([3, 4], dtype=torch_dtype(b))
    assert x.dtype.name == str(y.dtype).split(".")[1] and x.tolist() == y.tolist()


@requires_torch
@pytest.mark.parametrize("name", FLOATS)
def test_finfo_matches_pytorch(name):
    ours, theirs = gl.finfo(getattr(gl, name)), torch.finfo(torch_dtype(name))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(ours, field) == pytest.approx(getattr(theirs, field), rel=1e-6), field
    assert ours.dtype == name


@requires_torch
@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_pytorch(name):
    ours, theirs = gl.iinfo(getattr(gl, name)), torch.iinfo(torch_dtype(name))
    assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, theirs.min, theirs.max, name)


def test_finfo_and_iinfo_refuse_the_other_kind():
    with pytest.raises(TypeError, match="finfo.. requires a floating point input type, got gradlab.int64; use gradlab"
                                        ".iinfo"):
        gl.finfo(gl.int64)
    with pytest.raises(TypeError, match="iinfo.. requires an integer input type, got gradlab.float32"):
        gl.iinfo(gl.float32)
    assert gl.finfo().dtype == "float32"


@requires_torch
def test_result_type_and_can_cast_match_pytorch():
    cases = [(gl.tensor([1]), 2.5), (gl.tensor([1], dtype=gl.int8), 1000), (gl.tensor(1.0), gl.tensor([1])),
             (1, 2.0), (True, 2)]
    for a, b in cases:
        ta = torch.tensor(a.tolist(), dtype=torch_dtype(a.dtype.name)) if isinstance(a, gl.Tensor) else a
        tb = torch.tensor(b.tolist(), dtype=torch_dtype(b.dtype.name)) if isinstance(b, gl.Tensor) else b
        assert gl.result_type(a, b).name == str(torch.result_type(ta, tb)).split(".")[1]
    for a, b in itertools.product(["bool", "int32", "float32", "float64"], repeat=2):
        assert gl.can_cast(getattr(gl, a), getattr(gl, b)) == torch.can_cast(torch_dtype(a), torch_dtype(b))


@requires_torch
def test_bfloat16_rounding_equals_pytorch_bit_for_bit():
    values = np.random.default_rng(0).standard_normal(1000).astype(np.float32) * 1e3
    ours = gl.tensor(values).bfloat16().float().numpy()
    theirs = torch.tensor(values).bfloat16().float().numpy()
    np.testing.assert_array_equal(ours, theirs)


@requires_torch
@pytest.mark.parametrize("name", ["float16", "bfloat16"])
def test_16_bit_reductions_and_products_accumulate_in_float32(name):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((64, 300)).astype(np.float32), rng.standard_normal((300, 32)).astype(np.float32)
    ga, gb = gl.tensor(a).to(getattr(gl, name)), gl.tensor(b).to(getattr(gl, name))
    ta, tb = torch.tensor(a).to(torch_dtype(name)), torch.tensor(b).to(torch_dtype(name))
    for ours, theirs in [(ga @ gb, ta @ tb), (ga.sum(1), ta.sum(1)), (ga.mean(0), ta.mean(0)),
                         (ga.softmax(-1), ta.softmax(-1)), (ga.log_softmax(-1), ta.log_softmax(-1))]:
        assert ours.dtype is getattr(gl, name)
        np.testing.assert_allclose(ours.float().numpy(), theirs.float().numpy(), rtol=2e-2, atol=2e-2)
    exact = ga.float().sum(1)  # the float32 sum of the 16-bit values, rounded once, is what both compute
    np.testing.assert_array_equal(ga.sum(1).numpy(), exact.to(getattr(gl, name)).numpy())


def test_16_bit_floats_carry_gradients_back_to_float32_weights():
    w = gl.randn(3, 4, requires_grad=True)
    x = gl.randn(2, 3)
    loss = (x.bfloat16() @ w.bfloat16()).float().pow(2).sum()
    loss.backward()
    assert w.grad.dtype is gl.float32 and w.grad.shape == (3, 4)
    expected = 2 * (x.T @ (x @ w))
    np.testing.assert_allclose(w.grad.numpy(), expected.detach().numpy(), rtol=5e-2, atol=5e-2)


def test_legacy_tensor_types_make_and_recognise_their_dtype():
    assert gl.FloatTensor([1, 2]).dtype is gl.float32 and gl.LongTensor(3).tolist() == [0, 0, 0]
    assert gl.ByteTensor([255]).dtype is gl.uint8 and gl.BFloat16Tensor([1.5]).dtype is gl.bfloat16
    assert isinstance(gl.randn(2), gl.FloatTensor) and not isinstance(gl.randn(2), gl.DoubleTensor)
    x = gl.randn(2)
    assert x.type() == "gradlab.FloatTensor" and x.type("gradlab.LongTensor").dtype is gl.int64
    assert x.type(gl.DoubleTensor).dtype is gl.float64
    assert (x.byte().dtype, x.char().dtype, x.short().dtype, x.bfloat16().dtype) == (gl.uint8, gl.int8, gl.int16,
                                                                                    gl.bfloat16)


@requires_torch
def test_numpy_arrays_of_every_supported_dtype_keep_it():
    for name in NAMES:
        native = dtypes.numpy_bfloat16() if name == "bfloat16" else np.dtype(name)
        array = np.zeros(2, native)
        assert gl.from_numpy(array).dtype.name == name
        assert gl.tensor(array).dtype.name == name


def test_uint16_and_wider_promote_only_to_floats():
    x = gl.tensor([1, 2], dtype=gl.uint16)
    assert (x + x).dtype is gl.uint16 and (x + 0.5).dtype is gl.float32
    with pytest.raises(RuntimeError, match="attempted to promote uint16 and int64; convert one of them first"):
        x + gl.tensor([1, 2])


def test_dtype_attributes():
    assert gl.uint8.is_signed is False and gl.int8.is_signed and gl.float16.is_signed and not gl.bool.is_signed
    assert gl.bfloat16.is_floating_point and not gl.bfloat16.is_complex and gl.bfloat16.itemsize == 2
    assert gl.short is gl.int16

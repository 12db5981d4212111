"""torch-level utilities: Size, process-wide settings, constants, tensor queries, random fills, testing.assert_close."""

import math
import pickle
import warnings

import numpy as np
import pytest

import gradlab as gl
import gradlab.testing
from helpers import requires_torch, torch


# --- Size ------------------------------------------------------------------------------------------------

@requires_torch
def test_size_behaves_as_torch_size():
    ours, theirs = gl.Size([2, 3, 4]), torch.Size([2, 3, 4])
    assert ours.numel() == theirs.numel() == 24 and gl.Size().numel() == torch.Size().numel() == 1
    assert ours == (2, 3, 4) and ours == gl.zeros(2, 3, 4).shape
    assert repr(ours) == repr(theirs).replace("torch", "gradlab") == "gradlab.Size([2, 3, 4])"
    assert type(ours[1:]) is gl.Size and ours[1:] == (3, 4) and ours[0] == 2
    assert type(ours + (5,)) is gl.Size and type((1,) + ours) is gl.Size and type(ours * 2) is gl.Size
    assert pickle.loads(pickle.dumps(ours)) == ours and type(pickle.loads(pickle.dumps(ours))) is gl.Size
    with pytest.raises(TypeError, match=r"Size: expected a sequence of integers, got \[2.5\]"):
        gl.Size([2.5])


def test_a_tensors_shape_prints_as_a_size_with_the_packages_name():
    x = gl.zeros(3, 4)
    assert repr(x.shape) == str(x.shape) == repr(x.size()) == f"{gl.__name__}.Size([3, 4])" == "gradlab.Size([3, 4])"
    assert type(x.shape) is gl.Size and type(x.size()) is gl.Size and isinstance(x.shape, tuple)
    assert x.shape == (3, 4) and (3, 4) == x.shape and hash(x.shape) == hash((3, 4)) and x.size(1) == 4
    assert repr(x.shape[1:]) == "gradlab.Size([4])" and type(x.shape[0]) is int and x.shape.numel() == 12
    assert repr(gl.tensor(1.0).shape) == "gradlab.Size([])"
    assert np.zeros(x.shape).shape == (3, 4) and gl.ones(x.shape).shape == (3, 4)


@requires_torch
def test_a_tensors_shape_prints_as_torch_prints_its():
    ours, theirs = gl.zeros(3, 4), torch.zeros(3, 4)
    for read in (lambda t: t.shape, lambda t: t.size(), lambda t: t.shape[1:], lambda t: t.sum(0).shape):
        assert repr(read(ours)) == repr(read(theirs)).replace("torch.", "gradlab.")
        assert read(ours) == read(theirs)


# --- settings ------------------------------------------------------------------------------------------------

@requires_torch
def test_settings_defaults_match_torch():
    assert gl.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "highest"
    assert gl.are_deterministic_algorithms_enabled() is torch.are_deterministic_algorithms_enabled() is False
    assert gl.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == 0
    assert gl.is_warn_always_enabled() is torch.is_warn_always_enabled() is False
    assert gl.is_anomaly_enabled() is torch.is_anomaly_enabled() is False
    assert gl.get_default_device() == gl.device("cpu") and str(torch.get_default_device()) == "cpu"
    assert gl.get_num_threads() >= 1 and gl.get_num_interop_threads() >= 1


def test_thread_counts_are_set_and_checked():
    before = gl.get_num_threads(), gl.get_num_interop_threads()
    try:
        gl.set_num_threads(int=1)
        gl.set_num_interop_threads(1)
        assert (gl.get_num_threads(), gl.get_num_interop_threads()) == (1, 1)
        assert (gl.ones(3, 3) @ gl.ones(3, 3)).tolist() == [[3.0] * 3] * 3
    finally:
        gl.set_num_threads(before[0])
        gl.set_num_interop_threads(before[1])
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer, got 0"):
        gl.set_num_threads(0)
    with pytest.raises(RuntimeError, match="set_num_interop_threads expects a positive integer, got 1.5"):
        gl.set_num_interop_threads(1.5)


@requires_torch
def test_deterministic_modes_follow_torchs_rules():
    try:
        for mode, enabled, warn_only in (("warn", True, True), ("error", True, False), (0, False, False), (2, True, False)):
            gl.set_deterministic_debug_mode(mode)
            torch.set_deterministic_debug_mode(mode)
            assert (gl.are_deterministic_algorithms_enabled(), gl.is_deterministic_algorithms_warn_only_enabled(),
                    gl.get_deterministic_debug_mode()) == (enabled, warn_only, torch.get_deterministic_debug_mode())
        gl.use_deterministic_algorithms(True, warn_only=True)
        assert gl.get_deterministic_debug_mode() == 1
    finally:
        gl.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)
    with pytest.raises(RuntimeError, match="invalid value of debug_mode, expected one of `default`, `warn`, `error`, "
                                           "but got x"):
        gl.set_deterministic_debug_mode("x")
    with pytest.raises(RuntimeError, match="invalid value of debug_mode, expected 0, 1, or 2, but got 5"):
        gl.set_deterministic_debug_mode(5)
    with pytest.raises(TypeError, match="argument 'mode' must be bool, not str"):
        gl.use_deterministic_algorithms("yes")


def test_matmul_precision_and_warn_always():
    try:
        gl.set_float32_matmul_precision("medium")
        assert gl.get_float32_matmul_precision() == "medium"
        with pytest.warns(UserWarning, match="x is not one of 'highest', 'high', or 'medium'; the current "
                                             "set_float32_matmul_precision call has no effect."):
            gl.set_float32_matmul_precision("x")
        assert gl.get_float32_matmul_precision() == "medium"
        gl.set_warn_always(True)
        assert gl.is_warn_always_enabled()
    finally:
        gl.set_float32_matmul_precision("highest")
        gl.set_warn_always(False)


def test_set_anomaly_enabled_switches_detect_anomaly_on_for_the_program():
    x = gl.tensor([0.0], requires_grad=True)
    try:
        gl.set_anomaly_enabled(True)
        assert gl.is_anomaly_enabled() and gl.is_anomaly_check_nan_enabled()
        with pytest.raises(RuntimeError, match="Backward"):
            (x / x).sum().backward()
    finally:
        gl.set_anomaly_enabled(False)
    assert not gl.is_anomaly_enabled()
    (x / x).sum().backward()  # NaN gradients pass unchecked again


# --- constants and queries -------------------------------------------------------------------------------------

@requires_torch
def test_constants_match_torch():
    assert (gl.pi, gl.e, gl.inf) == (torch.pi, torch.e, torch.inf) and math.isnan(gl.nan)
    assert gl.newaxis is torch.newaxis is None
    assert gl.zeros(3)[:, gl.newaxis].shape == (3, 1)


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "int8", "uint8", "bool"])
def test_is_signed_matches_torch(dtype):
    ours, theirs = gl.zeros(2, dtype=getattr(gl, dtype)), torch.zeros(2, dtype=getattr(torch, dtype))
    assert gl.is_signed(ours) is ours.is_signed() is theirs.is_signed()


@requires_torch
def test_is_nonzero_and_is_same_size_match_torch():
    for value in ([0.0], [2], [True], [[0]]):
        assert gl.is_nonzero(gl.tensor(value)) is torch.is_nonzero(torch.tensor(value))
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        gl.tensor([1, 2]).is_nonzero()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with no values is ambiguous"):
        gl.is_nonzero(gl.zeros(0))
    assert gl.is_same_size(gl.zeros(2, 3), gl.ones(2, 3)) and not gl.zeros(2, 3).is_same_size(gl.zeros(3, 2))


@requires_torch
def test_typename_matches_torch():
    for dtype in ("float32", "float64", "float16", "bfloat16", "int64", "int8", "uint8", "bool"):
        ours, theirs = gl.zeros(1, dtype=getattr(gl, dtype)), torch.zeros(1, dtype=getattr(torch, dtype))
        assert gl.typename(ours) == torch.typename(theirs).replace("torch.", "gradlab.")
    assert gl.typename(3) == torch.typename(3) == "int" and gl.typename(len) == "len"
    assert gl.typename(gl.nn.Linear) == "gradlab.nn.modules.linear.Linear"
    assert gl.typename(gl.nn.Linear(1, 1)) == "gradlab.nn.modules.linear.Linear"


# --- random ---------------------------------------------------------------------------------------------------

def test_rng_state_round_trips():
    state = gl.get_rng_state()
    assert state.dtype is gl.uint8 and state.shape == (37,)
    first = gl.randn(5).tolist()
    gl.set_rng_state(state)
    assert gl.randn(5).tolist() == first
    assert gl.default_generator is gl.random.default_generator
    with pytest.raises(RuntimeError, match="set_rng_state: expected the uint8 tensor of 37 bytes"):
        gl.set_rng_state(gl.zeros(3))


N = 20000


def _seeded(seed=0):
    return gl.Generator().manual_seed(seed)


def test_random_fills_have_the_right_distribution():
    x = gl.empty(N, dtype=gl.float64)
    assert abs(x.exponential_(2.0, generator=_seeded()).mean().item() - 0.5) < 0.02
    assert x.min().item() >= 0
    geo = x.geometric_(0.25, generator=_seeded()).numpy()
    assert geo.min() == 1 and np.all(geo == np.round(geo)) and abs(geo.mean() - 4.0) < 0.15
    assert abs(np.median(x.cauchy_(3.0, 0.5, generator=_seeded()).numpy()) - 3.0) < 0.05
    logs = np.log(x.log_normal_(1.0, 0.5, generator=_seeded()).numpy())
    assert abs(logs.mean() - 1.0) < 0.02 and abs(logs.std() - 0.5) < 0.02
    assert abs(x.bernoulli_(0.3, generator=_seeded()).mean().item() - 0.3) < 0.02
    assert set(np.unique(x.numpy())) == {0.0, 1.0}
    p = gl.tensor([0.0, 1.0]).expand(N // 2, 2)
    assert gl.zeros(N // 2, 2).bernoulli_(p).mean(0).tolist() == [0.0, 1.0]


def test_random_integer_ranges():
    ints = gl.empty(N, dtype=gl.int64)
    assert set(np.unique(ints.random_(3, generator=_seeded()).numpy())) == {0, 1, 2}
    assert set(np.unique(ints.random_(5, 7).numpy())) == {5, 6}
    assert set(np.unique(ints.random_(**{"from": 5, "to": 7}).numpy())) == {5, 6}
    assert ints.random_().min().item() >= 0 and ints.max().item() > 2**62  # up to int64's largest
    assert gl.empty(N, dtype=gl.uint8).random_().max().item() == 255
    floats = gl.empty(N).random_()
    assert floats.max().item() <= 2**24 and np.all(floats.numpy() == np.round(floats.numpy()))
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=3 >= to=3"):
        ints.random_(3, 3)
    with pytest.raises(TypeError, match=r"random_\(\) takes \(to\), \(from, to\) or the keywords from=/to="):
        ints.random_(1, 2, 3)


def test_random_fills_check_their_arguments_and_are_seeded():
    a = gl.empty(4).exponential_(generator=_seeded(7))
    b = gl.empty(4).exponential_(generator=_seeded(7))
    assert a.tolist() == b.tolist()
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0, but found lambda=0"):
        gl.empty(2).exponential_(0)
    with pytest.raises(RuntimeError, match=r"geometric_ expects p to be in \(0, 1\), but got p=1.5"):
        gl.empty(2).geometric_(1.5)
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=2"):
        gl.empty(2).bernoulli_(2)
    with pytest.raises(RuntimeError, match="cauchy_ expects a floating point dtype, but got int64 tensor"):
        gl.zeros(2, dtype=gl.int64).cauchy_()
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0, but found std=-1"):
        gl.empty(2).log_normal_(0, -1)
    w = gl.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="exponential_: a leaf Variable that requires grad"):
        w.exponential_()


def test_bernoulli_poisson_and_randint_like():
    probs = gl.tensor([0.0, 1.0, 0.0, 1.0])
    assert gl.bernoulli(probs).tolist() == [0.0, 1.0, 0.0, 1.0] and gl.bernoulli(probs).dtype is gl.float32
    assert gl.bernoulli(probs, p=0.0).tolist() == [0.0] * 4
    counts = gl.poisson(gl.full((N,), 3.0), generator=_seeded())
    assert counts.dtype is gl.float32 and abs(counts.mean().item() - 3.0) < 0.05
    assert gl.poisson(gl.zeros(3)).tolist() == [0.0] * 3
    with pytest.raises(RuntimeError, match="poisson: invalid Poisson rate, expected rate to be non-negative"):
        gl.poisson(gl.tensor([-1.0]))
    like = gl.randint_like(gl.zeros(2, 3), 4, 6)
    assert like.shape == (2, 3) and like.dtype is gl.float32 and set(like.flatten().tolist()) <= {4.0, 5.0}
    assert set(gl.randint_like(gl.zeros(100, dtype=gl.int32), 2).tolist()) == {0, 1}


# --- testing.assert_close ---------------------------------------------------------------------------------------

def _message(assert_fn, *args, **kwargs):
    try:
        assert_fn(*args, **kwargs)
    except (AssertionError, ValueError, TypeError) as error:
        return type(error).__name__, str(error)
    return None


CASES = [
    ([1.0, 2.0, 3.0], [1.0, 2.5, 3.0], {}),
    ([[1.0, 2.0], [3.0, 4.0]], [[1.0, 2.0], [3.0, 4.1]], {}),
    ([1, 2], [1, 3], {}),
    ([float("nan")], [float("nan")], {}),
    ([float("nan")], [float("nan")], {"equal_nan": True}),
    ([1.0, 2.0], [1.0, 2.0 + 1e-7], {}),
    ([1.0], [1.0], {"rtol": 0.1}),
    ([1.0, 2.0], [1.0, 3.0], {"msg": "custom"}),
    ([1.0, 2.0], [1.0, 3.0], {"rtol": 0.5, "atol": 0.0}),
]


@requires_torch
@pytest.mark.parametrize("actual, expected, kwargs", CASES)
def test_assert_close_messages_match_torch(actual, expected, kwargs):
    ours = _message(gl.testing.assert_close, gl.tensor(actual), gl.tensor(expected), **kwargs)
    theirs = _message(torch.testing.assert_close, torch.tensor(actual), torch.tensor(expected), **kwargs)
    assert ours == theirs


@requires_torch
def test_assert_close_attribute_and_container_messages_match_torch():
    pairs = [
        ((gl.tensor([1.0, 2.0]), gl.tensor([1.0, 2.0], dtype=gl.float64)),
         (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64))),
        ((gl.tensor([1.0, 2.0]), gl.tensor([1.0, 2.0, 3.0])), (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0, 3.0]))),
        ((1.0, 1.5), (1.0, 1.5)),
        (({"a": gl.tensor(1.0)}, {"a": gl.tensor(2.0)}), ({"a": torch.tensor(1.0)}, {"a": torch.tensor(2.0)})),
        (([1, 2], [1, 2, 3]), ([1, 2], [1, 2, 3])),
        ((gl.tensor(True), gl.tensor(False)), (torch.tensor(True), torch.tensor(False))),
    ]
    for ours, theirs in pairs:
        expected = _message(torch.testing.assert_close, *theirs)
        assert _message(gl.testing.assert_close, *ours) == (expected[0], expected[1].replace("torch.", "gradlab."))
    assert gl.testing.assert_close(gl.tensor([1.0]), gl.tensor([1.0], dtype=gl.float64), check_dtype=False) is None
    assert _message(gl.testing.assert_close, gl.tensor([1.0]), 1.0)[0] == "TypeError"
    assert _message(gl.testing.assert_close, gl.tensor([1.0]), gl.tensor([2.0]), msg=lambda m: "wrapped: " + m)[1] \
        .startswith("wrapped: Tensor-likes are not close!")


def test_bfloat16_uses_its_own_tolerance():
    gl.testing.assert_close(gl.tensor([1.0], dtype=gl.bfloat16), gl.tensor([1.0078125], dtype=gl.bfloat16))
    with pytest.raises(AssertionError, match="up to 1.6e-02 allowed|up to 0.016 allowed"):
        gl.testing.assert_close(gl.tensor([1.0], dtype=gl.bfloat16), gl.tensor([1.25], dtype=gl.bfloat16))


def test_assert_allclose_is_the_deprecated_lenient_form():
    with pytest.warns(FutureWarning, match=r"assert_allclose\(\)` is deprecated"):
        gl.testing.assert_allclose([1.0, float("nan")], gl.tensor([1.0, float("nan")], dtype=gl.float64))
    with pytest.warns(FutureWarning), pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        gl.testing.assert_allclose(gl.tensor([1.0, 2.0]), [1.0, 3.0])


# --- factories -------------------------------------------------------------------------------------------------

WINDOWS = ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


@requires_torch
@pytest.mark.parametrize("name", WINDOWS)
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows_match_torch(name, length, periodic):
    ours = getattr(gl, name)(length, periodic, dtype=gl.float64)
    theirs = getattr(torch, name)(length, periodic, dtype=torch.float64)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
    assert getattr(gl, name)(length).dtype is gl.float32


@requires_torch
def test_window_parameters_and_errors():
    np.testing.assert_allclose(gl.hamming_window(9, True, 0.5, 0.5).numpy(),
                               torch.hamming_window(9, True, 0.5, 0.5).numpy(), atol=1e-6)
    np.testing.assert_allclose(gl.kaiser_window(9, False, 5.0).numpy(), torch.kaiser_window(9, False, 5.0).numpy(),
                               atol=1e-6)
    with pytest.raises(RuntimeError, match="hann_window requires non-negative window_length, got window_length=-1"):
        gl.hann_window(-1)
    with pytest.raises(RuntimeError, match="hann_window expects floating point dtypes, got: int64"):
        gl.hann_window(4, dtype=gl.int64)


@requires_torch
def test_logspace_and_scalar_tensor_match_torch():
    for args, kwargs in (((0, 2, 3), {}), ((0, 3, 4), {"base": 2}), ((-1, 1, 5), {"dtype": gl.float64})):
        theirs_kwargs = {k: (torch.float64 if v is gl.float64 else v) for k, v in kwargs.items()}
        ours, theirs = gl.logspace(*args, **kwargs), torch.logspace(*args, **theirs_kwargs)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    with pytest.raises(RuntimeError, match="logspace: number of steps must be non-negative, got -2"):
        gl.logspace(0, 1, -2)
    s = gl.scalar_tensor(3)
    assert s.shape == () and s.dtype is gl.float32 and s.item() == torch.scalar_tensor(3).item() == 3.0
    assert gl.scalar_tensor(2, dtype=gl.int64).dtype is gl.int64


def test_asarray_shares_memory_unless_told_to_copy():
    a = np.arange(3.0)
    shared = gl.asarray(a)
    a[0] = 7.0
    assert shared[0].item() == 7.0
    copied = gl.asarray(a, copy=True)
    a[1] = 9.0
    assert copied[1].item() == 1.0
    t = gl.ones(2)
    assert gl.asarray(t) is t and gl.asarray([1, 2]).dtype is gl.int64
    with pytest.raises(ValueError, match="asarray: can't alias ndarray with the requested dtype/device without a copy"):
        gl.asarray(a, dtype=gl.float32, copy=False)
    assert gl.asarray([1.0], requires_grad=True).requires_grad


@requires_torch
def test_frombuffer_shares_memory_and_checks_lengths_as_torch():
    buffer = bytearray(np.arange(4, dtype=np.int16).tobytes())
    ours = gl.frombuffer(buffer, dtype=gl.int16, count=2, offset=2)
    assert ours.tolist() == torch.frombuffer(bytearray(buffer), dtype=torch.int16, count=2, offset=2).tolist() == [1, 2]
    buffer[2] = 5
    assert ours[0].item() == 5
    with pytest.raises(ValueError, match=r"both buffer length \(0\) and count \(-1\) must not be 0"):
        gl.frombuffer(bytearray(), dtype=gl.int16)
    with pytest.raises(ValueError, match=r"requested buffer length \(5 \* 2 bytes\) after offset \(0 bytes\) must not "
                                         r"be greater than actual buffer length \(8 bytes\)"):
        gl.frombuffer(buffer, dtype=gl.int16, count=5)
    with pytest.raises(ValueError, match="must be a multiple of element size"):
        gl.frombuffer(bytearray(3), dtype=gl.int16)


@requires_torch
def test_empty_strided_has_the_strides_asked_for():
    ours, theirs = gl.empty_strided((2, 3), (1, 2)), torch.empty_strided((2, 3), (1, 2))
    assert ours.stride() == theirs.stride() == (1, 2) and ours.shape == (2, 3) and not ours.is_contiguous()
    ours.fill_(1.5)
    assert ours.tolist() == [[1.5] * 3] * 2
    assert gl.empty_strided((0, 3), (3, 1)).shape == (0, 3)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        gl.empty_strided((2, 3), (1,))


# --- layout, memory_format and pin_memory keywords ----------------------------------------------------------------

FACTORIES = [
    ("zeros", lambda **kw: gl.zeros(2, 3, **kw)), ("ones", lambda **kw: gl.ones(2, **kw)),
    ("empty", lambda **kw: gl.empty(2, **kw)), ("full", lambda **kw: gl.full((2,), 1.0, **kw)),
    ("arange", lambda **kw: gl.arange(3, **kw)), ("linspace", lambda **kw: gl.linspace(0, 1, 3, **kw)),
    ("eye", lambda **kw: gl.eye(2, **kw)), ("rand", lambda **kw: gl.rand(2, **kw)),
    ("randn", lambda **kw: gl.randn(2, **kw)), ("randint", lambda **kw: gl.randint(0, 3, (2,), **kw)),
    ("randperm", lambda **kw: gl.randperm(3, **kw)), ("normal", lambda **kw: gl.normal(0.0, 1.0, (2,), **kw)),
    ("zeros_like", lambda **kw: gl.zeros_like(gl.ones(2), **kw)), ("ones_like", lambda **kw: gl.ones_like(gl.ones(2), **kw)),
    ("full_like", lambda **kw: gl.full_like(gl.ones(2), 3.0, **kw)),
    ("empty_like", lambda **kw: gl.empty_like(gl.ones(2), **kw)), ("rand_like", lambda **kw: gl.rand_like(gl.ones(2), **kw)),
    ("randn_like", lambda **kw: gl.randn_like(gl.ones(2), **kw)),
    ("randint_like", lambda **kw: gl.randint_like(gl.ones(2), 3, **kw)),
    ("scalar_tensor", lambda **kw: gl.scalar_tensor(1.0, **kw)), ("logspace", lambda **kw: gl.logspace(0, 1, 2, **kw)),
    ("hann_window", lambda **kw: gl.hann_window(4, **kw)),
    ("empty_strided", lambda **kw: gl.empty_strided((2,), (1,), **kw)),
]


@pytest.mark.parametrize("name, make", FACTORIES)
def test_factories_accept_the_strided_layout_and_refuse_sparse_and_pinning(name, make):
    assert make(layout=gl.strided, pin_memory=False).shape == make().shape
    with pytest.raises(RuntimeError, match=rf"{name}: layout=gradlab.sparse_coo is not supported: gradlab tensors "
                                           r"are dense \(gradlab.strided\)"):
        make(layout=gl.layouts.sparse_coo)
    with pytest.raises(RuntimeError, match=rf"{name}: pin_memory=True requires a CUDA or other accelerator backend"):
        make(pin_memory=True)


@requires_torch
def test_memory_format_is_a_hint_with_no_effect_but_its_rank_is_checked():
    images = gl.ones(2, 3, 4, 4)
    out = gl.zeros_like(images, memory_format=gl.channels_last)
    assert out.shape == (2, 3, 4, 4) and out.tolist() == gl.zeros(2, 3, 4, 4).tolist()
    assert gl.empty_like(gl.ones(2), memory_format=gl.preserve_format).shape == (2,)
    assert gl.empty(2, 3, memory_format=gl.contiguous_format).shape == (2, 3)
    with pytest.raises(RuntimeError, match="empty_like: required rank 4 tensor to use channels_last format"):
        gl.empty_like(gl.ones(2), memory_format=gl.channels_last)
    with pytest.raises(RuntimeError, match="required rank 4 tensor to use channels_last format"):
        torch.empty_like(torch.ones(2), memory_format=torch.channels_last)
    with pytest.raises(TypeError, match=r"zeros\(\): argument 'layout' must be gradlab.layout, not str"):
        gl.zeros(2, layout="strided")
    assert (repr(gl.strided), repr(gl.channels_last)) == ("gradlab.strided", "gradlab.channels_last")
    assert pickle.loads(pickle.dumps(gl.channels_last)) is gl.channels_last
    assert gl.tensor([1.0], pin_memory=False).tolist() == [1.0]

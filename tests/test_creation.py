"""Factories and random numbers: sizes, dtypes, memory sharing, seeds and distributions."""

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl

# --- tensor / as_tensor / from_numpy -------------------------------------------------------------


@pytest.mark.parametrize(
    "data, dtype",
    [
        (True, gl.bool), ([True, False], gl.bool),
        (1, gl.int64), ([1, 2], gl.int64), ([[1], [2]], gl.int64),
        (1.0, gl.float32), ([1.0, 2.0], gl.float32),
        ([1, 2.0], gl.float32), ([True, 1], gl.int64), ([True, 1.5], gl.float32),
        (np.array([1.0]), gl.float64), (np.array([1.0], np.float32), gl.float32),
        (np.array([1.0], np.float16), gl.float16), (np.array([1, 2], np.int32), gl.int32),
        (np.array([1, 2]), gl.int64), (np.array([True]), gl.bool),
        (np.float64(1.0), gl.float64), (np.int32(3), gl.int32),
        ([], gl.float32), ([[]], gl.float32),
    ],
)
def test_dtype_inference_from_data(data, dtype):
    assert gl.tensor(data).dtype is dtype


@requires_torch
@pytest.mark.parametrize(
    "data",
    [True, 1, 1.0, [1, 2.0], [True, 1], [True, 1.5], np.array([1.0]), np.array([1, 2], np.int32),
     np.array([1.0], np.float16), np.float64(1.0), [], [[1.5, 2], [3, 4]]],
)
def test_dtype_inference_matches_torch(data):
    assert gl.tensor(data).dtype.name == str(torch.tensor(data).dtype).split(".")[1]


def test_tensor_copies_numpy_data_and_tensors():
    a = np.array([1.0, 2.0])
    t = gl.tensor(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0]
    u = gl.tensor(t)
    t.numpy()[1] = 5.0
    assert u.tolist() == [1.0, 2.0] and u.dtype is gl.float64


def test_tensor_of_tensors_and_with_dtype():
    assert gl.tensor([gl.tensor(1.0), gl.tensor(2.0)]).tolist() == [1.0, 2.0]
    assert gl.tensor([1, 2], dtype=gl.float64).tolist() == [1.0, 2.0]
    assert gl.tensor([1.7, -1.7], dtype=gl.int32).tolist() == [1, -1]


def test_as_tensor_shares_when_it_can():
    a = np.array([1.0, 2.0])
    t = gl.as_tensor(a)
    a[0] = 9.0
    assert t.tolist() == [9.0, 2.0] and t.dtype is gl.float64
    converted = gl.as_tensor(a, dtype=gl.float32)  # a different dtype needs a copy
    a[1] = 7.0
    assert converted.tolist() == [9.0, 2.0]
    x = gl.tensor([1.0])
    assert gl.as_tensor(x) is x and gl.as_tensor(x, dtype=gl.float32, device="cpu") is x
    assert gl.as_tensor(x, dtype=gl.float64).dtype is gl.float64
    assert gl.as_tensor([1, 2]).tolist() == [1, 2]


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(4.0).reshape(2, 2)
    t = gl.from_numpy(a)
    a[0, 0] = 100.0
    assert t.tolist()[0][0] == 100.0
    t.numpy()[1, 1] = -1.0
    assert a[1, 1] == -1.0
    assert t.dtype is gl.float64 and t.device == "cpu"


@pytest.mark.parametrize("np_dtype", [np.complex64, object, np.dtype(">f4"), np.dtype("U3"), np.longdouble])
def test_from_numpy_rejects_unsupported_dtypes(np_dtype):
    with pytest.raises(TypeError, match=r"from_numpy: can't convert np.ndarray of type .*supported"):
        gl.from_numpy(np.zeros(2, dtype=np_dtype))


def test_from_numpy_needs_an_array():
    with pytest.raises(TypeError, match="from_numpy: expected np.ndarray"):
        gl.from_numpy([1.0, 2.0])


@pytest.mark.parametrize(
    "data, message",
    [
        ([[1, 2], [3]], r"tensor: .*expected sequence of length 2 at dim 1 \(got 1\)"),
        ([[1, 2], 3], r"tensor: .*expected sequence of length 2 at dim 1 \(got a number\)"),
        ([[[1], [2]], [[1], [2, 3]]], r"tensor: .*expected sequence of length 1 at dim 2 \(got 2\)"),
    ],
)
def test_uneven_nested_lists_name_the_op_and_the_place(data, message):
    with pytest.raises(ValueError, match=message):
        gl.tensor(data)
    with pytest.raises(ValueError, match=message):
        gl.tensor(data, dtype=gl.float64)


def test_unsupported_data_and_dtype():
    with pytest.raises(TypeError, match=r"tensor: can't build a tensor from str"):
        gl.tensor("abc")
    with pytest.raises(TypeError, match=r"tensor: unsupported dtype 'complex64'"):
        gl.tensor([1.0], dtype="complex64")


@pytest.mark.parametrize(
    "make",
    [
        lambda: gl.tensor([1, 2], requires_grad=True),
        lambda: gl.zeros(2, dtype=gl.int64, requires_grad=True),
        lambda: gl.arange(3, requires_grad=True),
        lambda: gl.full((2,), 1, requires_grad=True),
        lambda: gl.randint(0, 5, (2,), requires_grad=True),
        lambda: gl.ones_like(gl.tensor([1, 2]), requires_grad=True),
    ],
)
def test_requires_grad_on_an_int_factory_is_a_clear_error(make):
    with pytest.raises(RuntimeError, match=r"\w+: only Tensors of floating point dtype can require gradients.*int64"):
        make()


def test_requires_grad_on_float_factories():
    for t in (gl.tensor([1.0], requires_grad=True), gl.zeros(2, requires_grad=True), gl.rand(2, requires_grad=True),
              gl.eye(2, requires_grad=True), gl.linspace(0, 1, 3, requires_grad=True)):
        assert t.requires_grad and t.is_leaf and t.grad_fn is None


# --- zeros / ones / full / empty ------------------------------------------------------------------


@pytest.mark.parametrize("factory, value", [(gl.zeros, 0.0), (gl.ones, 1.0), (gl.empty, None)])
@pytest.mark.parametrize("args", [(2, 3), ((2, 3),), ([2, 3],)])
def test_size_forms(factory, value, args):
    t = factory(*args)
    assert t.shape == (2, 3) and t.dtype is gl.float32 and not t.requires_grad
    if value is not None:
        assert (t.numpy() == value).all()


def test_zero_dim_and_empty_sizes():
    assert gl.zeros(()).shape == () and gl.zeros([]).shape == () and gl.ones().shape == ()
    assert gl.zeros(0, 3).shape == (0, 3) and gl.zeros(0, 3).numel() == 0
    assert gl.zeros(np.int64(2)).shape == (2,)


def test_bad_sizes():
    with pytest.raises(RuntimeError, match="zeros: Trying to create tensor with negative dimension -1"):
        gl.zeros(2, -1)
    with pytest.raises(TypeError, match="ones: size must be integers"):
        gl.ones(2.5)


def test_factory_dtypes():
    assert gl.zeros(2, dtype=gl.int32).dtype is gl.int32
    assert gl.ones(2, dtype=gl.bool).tolist() == [True, True]
    assert gl.zeros(2, dtype=float).dtype is gl.float64 and gl.zeros(2, dtype=int).dtype is gl.int64
    assert gl.empty(1, dtype="float16").dtype is gl.float16


@pytest.mark.parametrize(
    "fill, dtype", [(1.5, gl.float32), (3, gl.int64), (True, gl.bool), (np.int64(2), gl.int64)]
)
def test_full_infers_dtype_from_the_value(fill, dtype):
    for size in ((2, 3), [2, 3]):
        t = gl.full(size, fill)
        assert t.shape == (2, 3) and t.dtype is dtype and (t.numpy() == fill).all()
    assert gl.full((2,), 1, dtype=gl.float64).tolist() == [1.0, 1.0]
    assert gl.full((2,), gl.tensor(2.5)).tolist() == [2.5, 2.5]


def test_like_factories_follow_the_input():
    x = gl.tensor([[1, 2, 3]], dtype=gl.int32)
    for t, value in ((gl.zeros_like(x), 0), (gl.ones_like(x), 1), (gl.full_like(x, 7), 7), (gl.empty_like(x), None)):
        assert t.shape == (1, 3) and t.dtype is gl.int32 and t.device is x.device and not t.requires_grad
        if value is not None:
            assert t.tolist() == [[value] * 3]
    assert gl.zeros_like(x, dtype=gl.float64).dtype is gl.float64
    assert gl.full_like(x, 2.7).tolist() == [[2, 2, 2]]  # the input's dtype wins, as in PyTorch
    assert gl.ones_like(gl.zeros(2), requires_grad=True).requires_grad


# --- arange / linspace / eye ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, expected, dtype",
    [
        ((5,), [0, 1, 2, 3, 4], gl.int64),
        ((2, 5), [2, 3, 4], gl.int64),
        ((0, 10, 3), [0, 3, 6, 9], gl.int64),
        ((10, 0, -3), [10, 7, 4, 1], gl.int64),
        ((5, 0, -1), [5, 4, 3, 2, 1], gl.int64),
        ((0, 1, 0.25), [0.0, 0.25, 0.5, 0.75], gl.float32),
        ((1.0, -1.0, -0.5), [1.0, 0.5, 0.0, -0.5], gl.float32),
        ((5.0,), [0.0, 1.0, 2.0, 3.0, 4.0], gl.float32),
        ((0, 5, 1.0), [0.0, 1.0, 2.0, 3.0, 4.0], gl.float32),
        ((3, 3), [], gl.int64),
    ],
)
def test_arange(args, expected, dtype):
    t = gl.arange(*args)
    assert t.dtype is dtype and t.tolist() == expected


def test_arange_length_and_exactness():
    assert gl.arange(0, 0.3, 0.1).shape == (3,)  # ceil(0.3 / 0.1) counts 3 values
    assert gl.arange(0, 1, 0.1).shape == (10,)
    big = 2**60
    assert gl.arange(big, big + 3).tolist() == [big, big + 1, big + 2]
    assert gl.arange(4, dtype=gl.float64).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_arange_errors():
    with pytest.raises(RuntimeError, match="arange: step must be nonzero"):
        gl.arange(0, 5, 0)
    with pytest.raises(RuntimeError, match="arange: upper bound and larger bound inconsistent with step sign"):
        gl.arange(5, 0)


@requires_torch
@pytest.mark.parametrize(
    "args", [(5,), (2, 9, 2), (10, 0, -3), (0, 1, 0.1), (-1.0, 1.0, 0.3), (1.5, -2.0, -0.25), (0, 0.3, 0.1), (7.0,)]
)
def test_arange_matches_torch(args):
    g, t = gl.arange(*args), torch.arange(*args)
    assert g.dtype.name == str(t.dtype).split(".")[1]
    np.testing.assert_allclose(g.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)


def test_linspace():
    t = gl.linspace(0, 1, 5)
    assert t.dtype is gl.float32 and t.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert gl.linspace(-1, 1, 1).tolist() == [-1.0] and gl.linspace(0, 1, 0).shape == (0,)
    assert gl.linspace(0, 10, steps=3, dtype=gl.int64).tolist() == [0, 5, 10]
    assert gl.linspace(2, 3, 2, dtype=gl.float64).dtype is gl.float64
    with pytest.raises(RuntimeError, match="linspace: number of steps must be non-negative"):
        gl.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="linspace: steps must be an integer"):
        gl.linspace(0, 1, 2.5)


@requires_torch
@pytest.mark.parametrize("args", [(0, 1, 5), (-3.0, 7.0, 11), (1, 0, 4), (0, 1, 1)])
def test_linspace_matches_torch(args):
    np.testing.assert_allclose(gl.linspace(*args).numpy(), torch.linspace(*args).numpy(), rtol=1e-6, atol=1e-7)


def test_eye():
    assert gl.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]] and gl.eye(2).dtype is gl.float32
    assert gl.eye(2, 3).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    assert gl.eye(3, 1).shape == (3, 1) and gl.eye(0).shape == (0, 0)
    assert gl.eye(2, dtype=gl.int64).tolist() == [[1, 0], [0, 1]]
    with pytest.raises(RuntimeError, match="eye: n must be greater or equal to 0, got -1"):
        gl.eye(-1)
    with pytest.raises(RuntimeError, match="eye: m must be greater or equal to 0, got -2"):
        gl.eye(2, -2)


# --- random numbers -------------------------------------------------------------------------------


def test_manual_seed_reproduces_every_random_factory():
    def draw():
        return [gl.rand(3).tolist(), gl.randn(2, 2).tolist(), gl.randint(0, 10, (4,)).tolist(),
                gl.normal(0.0, 2.0, (3,)).tolist(), gl.randperm(5).tolist()]

    gl.manual_seed(123)
    first = draw()
    gl.manual_seed(123)
    assert draw() == first
    gl.manual_seed(124)
    assert draw() != first
    assert gl.initial_seed() == 124


def test_generator_objects_are_independent_of_the_default():
    g1, g2 = gl.Generator().manual_seed(7), gl.Generator().manual_seed(7)
    gl.manual_seed(0)
    a = gl.randn(4, generator=g1)
    gl.rand(10)  # draws from the default generator do not disturb g2
    b = gl.randn(4, generator=g2)
    assert a.tolist() == b.tolist()
    assert g1.initial_seed() == 7
    state = g1.get_state()
    c = gl.rand(3, generator=g1)
    g1.set_state(state)
    assert gl.rand(3, generator=g1).tolist() == c.tolist()
    for draw in (lambda g: gl.rand(2, generator=g), lambda g: gl.randint(0, 9, (3,), generator=g),
                 lambda g: gl.normal(1.0, 1.0, (2,), generator=g), lambda g: gl.randperm(4, generator=g),
                 lambda g: gl.rand_like(gl.zeros(2), generator=g), lambda g: gl.randn_like(gl.zeros(2), generator=g)):
        assert draw(gl.Generator().manual_seed(3)).tolist() == draw(gl.Generator().manual_seed(3)).tolist()


@pytest.mark.parametrize("factory", [gl.rand, gl.randn])
@pytest.mark.parametrize("args", [(2, 3), ((2, 3),), ([2, 3],)])
def test_rand_size_forms(factory, args):
    t = factory(*args)
    assert t.shape == (2, 3) and t.dtype is gl.float32 and not t.requires_grad
    assert factory(2, dtype=gl.float64).dtype is gl.float64
    assert factory(()).shape == ()


def test_rand_needs_a_float_dtype():
    with pytest.raises(RuntimeError, match="rand: expected a floating-point dtype, got int64"):
        gl.rand(2, dtype=gl.int64)
    with pytest.raises(RuntimeError, match="randn: expected a floating-point dtype"):
        gl.randn_like(gl.tensor([1, 2]))


@pytest.mark.parametrize(
    "call, low, high",
    [
        (lambda: gl.randint(10, (50,)), 0, 10),
        (lambda: gl.randint(3, 10, (50,)), 3, 10),
        (lambda: gl.randint(3, 10, size=(50,)), 3, 10),
        (lambda: gl.randint(10, size=(50,)), 0, 10),
        (lambda: gl.randint(low=-5, high=5, size=[50]), -5, 5),
        (lambda: gl.randint(0, 2, (5, 10)), 0, 2),
    ],
)
def test_randint_call_forms(call, low, high):
    t = call()
    values = t.numpy()
    assert t.dtype is gl.int64 and t.numel() == 50
    assert values.min() >= low and values.max() < high


def test_randint_dtype_and_errors():
    assert gl.randint(0, 5, (3,), dtype=gl.float32).dtype is gl.float32
    with pytest.raises(RuntimeError, match="randint: expected low < high, but got low=5, high=5"):
        gl.randint(5, 5, (2,))
    with pytest.raises(RuntimeError, match="randint: expected low < high"):
        gl.randint(5, 2, (2,))
    with pytest.raises(TypeError, match="randint: missing the size argument"):
        gl.randint(0, 5)


def test_normal_forms():
    mean = gl.tensor([0.0, 10.0, -10.0])
    t = gl.normal(mean, 1.0)
    assert t.shape == (3,) and t.dtype is gl.float32 and not t.requires_grad
    assert np.all(np.abs(t.numpy() - [0.0, 10.0, -10.0]) < 6.0)
    t = gl.normal(2.0, gl.zeros(4, dtype=gl.float64))  # std 0: exactly the mean
    assert t.dtype is gl.float64 and t.tolist() == [2.0] * 4
    t = gl.normal(gl.zeros(2, 1), gl.ones(3))
    assert t.shape == (2, 3)
    t = gl.normal(1.0, 2.0, (2, 2))
    assert t.shape == (2, 2) and t.dtype is gl.float32
    assert gl.normal(0.0, 1.0, size=(3,), dtype=gl.float64).dtype is gl.float64
    assert gl.normal(gl.tensor([1.0], requires_grad=True), 1.0).grad_fn is None


def test_normal_errors():
    with pytest.raises(RuntimeError, match=r"normal: expected std >= 0.0, but found std -1.0"):
        gl.normal(0.0, -1.0, (2,))
    with pytest.raises(RuntimeError, match=r"normal: expected all elements of std >= 0.0"):
        gl.normal(gl.zeros(3), gl.tensor([-1.0, 1.0, 1.0]))
    with pytest.raises(TypeError, match="normal: give a size"):
        gl.normal(0.0, 1.0)


def test_randperm():
    p = gl.randperm(20)
    assert p.dtype is gl.int64 and sorted(p.tolist()) == list(range(20))
    assert gl.randperm(0).shape == (0,) and gl.randperm(3, dtype=gl.int32).dtype is gl.int32


def test_like_random_factories():
    x = gl.zeros(3, 2, dtype=gl.float64)
    for t in (gl.rand_like(x), gl.randn_like(x)):
        assert t.shape == (3, 2) and t.dtype is gl.float64 and t.device is x.device
    assert gl.rand_like(x, dtype=gl.float32).dtype is gl.float32


def test_distributions_are_sane():
    gl.manual_seed(0)
    n = 10_000
    u = gl.rand(n, dtype=gl.float64).numpy()
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01 and abs(u.std() - (1 / 12) ** 0.5) < 0.01
    z = gl.randn(n, dtype=gl.float64).numpy()
    assert abs(z.mean()) < 0.04 and abs(z.std() - 1.0) < 0.03
    g = gl.normal(3.0, 2.0, (n,), dtype=gl.float64).numpy()
    assert abs(g.mean() - 3.0) < 0.08 and abs(g.std() - 2.0) < 0.06
    g = gl.normal(gl.full((n,), -1.0), gl.full((n,), 0.5)).numpy()
    assert abs(g.mean() + 1.0) < 0.02 and abs(g.std() - 0.5) < 0.02
    k = gl.randint(0, 10, (n,)).numpy()
    counts = np.bincount(k, minlength=10)
    assert counts.min() > 850 and counts.max() < 1150

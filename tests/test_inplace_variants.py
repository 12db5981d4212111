"""Every in-place ``_`` variant of the pointwise ops, from the one table in ``gradlab.ops.inplace``.

For each name: ``x.name_(...)`` writes what ``name(x, ...)`` returns into x and returns x itself,
bumps the version counter, keeps the graph right on a non-leaf (its gradient equals the
out-of-place one), and agrees with PyTorch's method of the same name.
"""

import numpy as np
import pytest

import gradlab as gl
from gradlab.ops.inplace import INPLACE, TORCH_FUNCTIONS
from helpers import assert_close, requires_torch, torch

# the specification: every in-place method, and the ones PyTorch also has as torch.<name>_ functions
METHODS = (
    "abs_ absolute_ acos_ acosh_ addcdiv_ addcmul_ arccos_ arccosh_ arcsin_ arcsinh_ arctan2_ arctan_ "
    "arctanh_ asin_ asinh_ atan2_ atan_ atanh_ bitwise_and_ bitwise_left_shift_ bitwise_not_ bitwise_or_ "
    "bitwise_right_shift_ bitwise_xor_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ copysign_ cos_ cosh_ deg2rad_ "
    "digamma_ divide_ eq_ erf_ erfc_ erfinv_ exp2_ exp_ expm1_ fix_ float_power_ floor_ floor_divide_ fmod_ "
    "frac_ gcd_ ge_ greater_ greater_equal_ gt_ heaviside_ hypot_ i0_ igamma_ igammac_ lcm_ ldexp_ le_ lerp_ "
    "less_ less_equal_ lgamma_ log10_ log1p_ log2_ log_ logical_and_ logical_not_ logical_or_ logical_xor_ "
    "logit_ lt_ multiply_ mvlgamma_ nan_to_num_ ne_ negative_ nextafter_ not_equal_ polygamma_ rad2deg_ "
    "reciprocal_ relu_ remainder_ round_ rsqrt_ sgn_ sigmoid_ sign_ sin_ sinc_ sinh_ sqrt_ square_ subtract_ "
    "tan_ tanh_ true_divide_ trunc_ xlogy_"
).split()
TORCH_LEVEL = (
    "abs_ acos_ acosh_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ atan_ atanh_ ceil_ "
    "clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ exp_ expm1_ fill_ fix_ floor_ "
    "frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ nan_to_num_ neg_ negative_ rad2deg_ "
    "reciprocal_ relu_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ tan_ tanh_ trunc_ xlogy_ zero_"
).split()


def test_the_table_makes_exactly_the_specified_names():
    assert sorted(name + "_" for name in INPLACE) == sorted(METHODS)
    assert sorted(name + "_" for name in TORCH_FUNCTIONS) == sorted(TORCH_LEVEL)
    for name in METHODS:
        assert callable(getattr(gl.Tensor, name))
    for name in TORCH_LEVEL:
        assert callable(getattr(gl, name))


X = [0.2, 0.45, 0.7, 0.85]  # inside the domain of every float op below (asin, logit, erfinv, lgamma, ...)
OTHER = [0.6, 0.3, 0.9, 0.25]
INTEGERS, INTEGERS_OTHER = [12, 5, 7, 9], [10, 3, 2, 6]


def arguments(name, tensor):
    """The extra arguments of name_ (besides self), as tensors built by ``tensor(values, kind)``."""
    if name in ("clamp", "clip"):
        return (0.3, 0.8)
    if name in ("clamp_min", "clamp_max"):
        return (0.5,)
    if name == "polygamma":
        return (1,)
    if name == "mvlgamma":
        return (1,)
    if name == "lerp":
        return (tensor(OTHER), 0.3)
    if name in ("addcmul", "addcdiv"):
        return (tensor(OTHER), tensor(X))
    if name == "ldexp":
        return (tensor([1, 2, 0, -1], "int"),)
    if name.startswith(("bitwise", "gcd", "lcm")):
        return () if name == "bitwise_not" else (tensor(INTEGERS_OTHER, "int"),)
    if name in ONE_INPUT:
        return ()
    return (tensor(OTHER),)


ONE_INPUT = {"exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal", "sin", "cos", "tan", "tanh", "erf", "abs",
             "absolute", "square", "sign", "sgn", "floor", "ceil", "trunc", "fix", "round", "negative", "sigmoid",
             "relu", "log2", "log10", "exp2", "frac", "nan_to_num", "asin", "acos", "atan", "arcsin", "arccos",
             "arctan", "sinh", "cosh", "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "sinc", "deg2rad",
             "rad2deg", "lgamma", "digamma", "erfc", "erfinv", "i0", "logit", "logical_not", "neg"}
INTEGER_ONLY = {"gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
                "bitwise_right_shift"}
NOT_DIFFERENTIABLE = INTEGER_ONLY | {"eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less",
                                     "less_equal", "not_equal", "logical_not", "logical_and", "logical_or",
                                     "logical_xor", "heaviside", "nextafter", "floor_divide",
                                     "igamma", "igammac"}  # these two: in x only, and x_ writes into a


def gl_tensor(values, kind="float"):
    return gl.tensor(values, dtype=gl.int64 if kind == "int" else gl.float64)


def start(name):
    x = INTEGERS if name in INTEGER_ONLY else X
    return [v + 1.0 for v in x] if name in ("acosh", "arccosh") else x


@pytest.mark.parametrize("name", [m[:-1] for m in METHODS])
def test_in_place_writes_the_out_of_place_result_into_the_tensor(name):
    x = gl_tensor(start(name), "int" if name in INTEGER_ONLY else "float")
    args = arguments(name, gl_tensor)
    expected = INPLACE[name](x, *args)
    version = x._version[0]
    assert getattr(x, name + "_")(*args) is x
    assert x._version[0] == version + 1
    assert x.dtype is (gl.int64 if name in INTEGER_ONLY else gl.float64)
    assert_close(x, expected.to(x.dtype), rtol=1e-14)


@pytest.mark.parametrize("name", [m[:-1] for m in METHODS if m[:-1] not in NOT_DIFFERENTIABLE])
def test_in_place_on_a_non_leaf_gives_the_out_of_place_gradient(name):
    def run(in_place):
        leaf = gl.tensor(start(name), dtype=gl.float64, requires_grad=True)
        x = leaf * 1.0
        args = arguments(name, gl_tensor)
        out = getattr(x, name + "_")(*args) if in_place else INPLACE[name](x, *args)
        (out * gl.tensor([1.0, -2.0, 0.5, 3.0], dtype=gl.float64)).sum().backward()
        return leaf.grad

    assert_close(run(True), run(False), rtol=1e-14)


@requires_torch
@pytest.mark.parametrize("name", [m[:-1] for m in METHODS])
def test_in_place_matches_torchs_method(name):
    integer = name in INTEGER_ONLY
    ours = gl_tensor(start(name), "int" if integer else "float")
    theirs = torch.tensor(start(name), dtype=torch.int64 if integer else torch.float64)
    torch_tensor = (lambda values, kind="float":
                    torch.tensor(values, dtype=torch.int64 if kind == "int" else torch.float64))
    getattr(ours, name + "_")(*arguments(name, gl_tensor))
    getattr(theirs, name + "_")(*arguments(name, torch_tensor))
    # PyTorch's trigamma is accurate to about 1e-9 (ours to SciPy's 1e-15: see test_pointwise_unary.py)
    assert_close(ours, theirs, rtol=1e-8 if name in ("polygamma", "digamma") else 1e-10, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("name", [f[:-1] for f in TORCH_LEVEL])
def test_module_level_in_place_functions_exist_in_both_and_agree(name):
    x, t = gl.tensor(X, dtype=gl.float64), torch.tensor(X, dtype=torch.float64)
    if name in ("gcd", "lcm"):
        x, t = gl.tensor(INTEGERS), torch.tensor(INTEGERS)
    args = {"fill": (2.5,), "zero": ()}.get(name)
    if args is None:
        args = arguments(name, gl_tensor)
        torch_args = arguments(name, lambda v, kind="float": torch.tensor(v, dtype=torch.int64 if kind == "int"
                                                                          else torch.float64))
    else:
        torch_args = args
    assert getattr(gl, name + "_")(x, *args) is x
    getattr(torch, name + "_")(t, *torch_args)
    assert_close(x, t, rtol=1e-10, atol=1e-12)


def test_in_place_refuses_to_change_the_dtype_or_touch_a_leaf():
    with pytest.raises(RuntimeError, match="sin_: result type float32 can't be cast to the desired output type int64"):
        gl.tensor([1, 2]).sin_()
    with pytest.raises(RuntimeError, match="float_power_: the base given to float_power_ has dtype float32"):
        gl.ones(2).float_power_(2)
    with pytest.raises(RuntimeError, match="atan2_: a leaf Variable that requires grad is being used in an in-place"):
        gl.ones(2, requires_grad=True).atan2_(gl.ones(2))
    x = gl.ones(2, dtype=gl.float64)
    assert x.float_power_(3).tolist() == [1.0, 1.0]


def test_keyword_arguments_pass_through():
    x = gl.tensor([0.1, 0.95])
    x.logit_(eps=0.2)
    assert_close(x, np.log(np.array([0.2, 0.8]) / np.array([0.8, 0.2])), rtol=1e-6)
    y = gl.tensor([7.0, -7.0])
    assert y.divide_(2.0, rounding_mode="floor").tolist() == [3.0, -4.0]
    z = gl.tensor([float("nan"), 1.0])
    assert z.nan_to_num_(nan=5.0).tolist() == [5.0, 1.0]

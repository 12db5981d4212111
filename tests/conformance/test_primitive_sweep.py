"""Every contract primitive: each backend has it, and a conformance case reaches it.

``contract.PRIMITIVES`` is the list a new device must implement. A backend that forgot one fails
``test_backend_has_every_primitive`` loudly; a primitive added to the contract without a case that uses
it fails ``test_the_table_names_every_primitive``; and each entry of the table below is checked to be
true — its case, run on the recording fake device, really calls that primitive — so the cases that run on
every backend (test_cases.py) cover the whole contract.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import gradlab as gl
from gradlab.backends.numpy_backend import NumpyBackend

from . import cases_nn, cases_ops  # noqa: F401  (importing them registers their cases)
from .conftest import backend_params
from .fake_backend import PRIMITIVE_NAMES, recording
from .harness import CASES, run

F32 = "[float32]"

# primitive -> the case that exercises it through a public op (the most direct one there is)
PRIMITIVE_CASES = {
    "native_dtype": "test_native_dtypes_round_trip",  # no op asks for it: tested on the backend directly below
    "dtype_of": "casts_and_copies", "asarray": "creation", "to_numpy": "casts_and_copies",
    "astype": "casts_and_copies", "copy": "casts_and_copies",
    "empty": "creation", "zeros": "creation", "ones": "creation", "full": "creation", "arange": "creation",
    **{name: f"{op}{F32}" for name, op in [
        ("neg", "neg"), ("abs", "abs"), ("exp", "exp"), ("log", "log"), ("log1p", "log1p"), ("expm1", "expm1"),
        ("sqrt", "sqrt"), ("sin", "sin"), ("cos", "cos"), ("tan", "tan"), ("tanh", "tanh"), ("sign", "sign"),
        ("floor", "floor"), ("ceil", "ceil"), ("round", "round"), ("erf", "erf"),
        ("arcsin", "asin"), ("arccos", "acos"), ("arctan", "atan"), ("sinh", "sinh"), ("cosh", "cosh"),
        ("arcsinh", "asinh"), ("arccosh", "acosh"), ("arctanh", "atanh"), ("log2", "log2"), ("log10", "log10"),
        ("erfc", "erfc"),
        ("add", "add"), ("sub", "sub"), ("mul", "mul"), ("div", "div"), ("pow", "pow"),
        ("floor_divide", "floor_divide"), ("remainder", "remainder"), ("maximum", "maximum"), ("minimum", "minimum"),
        ("arctan2", "atan2"), ("hypot", "hypot"), ("copysign", "copysign"), ("fmod", "fmod"),
        ("logaddexp", "logaddexp"), ("logaddexp2", "logaddexp2"),
        ("isnan", "predicates"), ("isinf", "predicates"), ("logical_not", "predicates"),
        ("where", "where_and_masked_fill"), ("nextafter", "nextafter_and_frexp"), ("frexp", "nextafter_and_frexp"),
        ("sum", "sums_and_means"), ("prod", "prod_reduction"), ("max", "max_min_reductions"),
        ("min", "max_min_reductions"), ("cumsum", "cumulative"), ("cumprod", "cumulative"),
        ("cummax", "cumulative"), ("cummin", "cumulative"), ("argsort", "sort_topk_argsort"),
        ("reshape", "views_and_reshapes"), ("permute", "views_and_reshapes"), ("broadcast_to", "views_and_reshapes"),
        ("is_contiguous", "views_and_reshapes"), ("getitem", "basic_indexing"),
        ("setitem", "setitem_and_views_written_in_place"),
        ("positions_in_base", "setitem_and_views_written_in_place"),
        ("add_at", "advanced_and_boolean_indexing"), ("multiply_at", "scatter_reduce_prod_amax_amin"),
        ("maximum_at", "scatter_reduce_prod_amax_amin"), ("minimum_at", "scatter_reduce_prod_amax_amin"),
        ("take_along_axis", "sort_topk_argsort"),
        ("diagonal", "diagonal_ops"), ("concatenate", "cat_stack_split"), ("stack", "cat_stack_split"),
        ("flip", "flip_roll_tril"), ("roll", "flip_roll_tril"), ("tril", "flip_roll_tril"),
        ("triu", "flip_roll_tril"), ("pad", "pad_constant"),
        ("sliding_windows", "conv2d_forms"), ("fold_windows", "conv2d_forms"),
        ("matmul", "matmul_shapes"), ("einsum", "einsum_forms")]},
    **{name: "comparisons" for name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                                        "logical_xor")},
    **{name: "integer_ops" for name in ("gcd", "lcm", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not",
                                        "left_shift", "right_shift")},
    "all": "all_any", "any": "all_any", "argmax": "argmax_argmin", "argmin": "argmax_argmin",
}

DIRECT = {"test_native_dtypes_round_trip"}  # tests below, not cases


def test_the_table_names_every_primitive():
    assert sorted(PRIMITIVE_CASES) == sorted(PRIMITIVE_NAMES), (
        f"primitives without a case: {sorted(set(PRIMITIVE_NAMES) - set(PRIMITIVE_CASES))}; "
        f"table entries that are not primitives: {sorted(set(PRIMITIVE_CASES) - set(PRIMITIVE_NAMES))}")
    unknown = {c for c in PRIMITIVE_CASES.values() if c not in CASES and c not in DIRECT}
    assert not unknown, f"the table names cases that do not exist: {sorted(unknown)}"


@pytest.mark.parametrize("primitive", sorted(set(PRIMITIVE_CASES) - {p for p, c in PRIMITIVE_CASES.items()
                                                                      if c in DIRECT}))
def test_the_named_case_reaches_the_primitive(primitive):
    """Run on the fake device (numpy's composition of every fused kernel), the case calls the primitive."""
    from .conftest import Sizes

    case_ = CASES[PRIMITIVE_CASES[primitive]]
    with recording() as seen:
        run(case_, gl.device("fake"), Sizes())
    assert primitive in seen, f"the case {case_.name} never calls the primitive '{primitive}' (it calls {sorted(seen)})"


@pytest.mark.parametrize("device_type", backend_params(include_reference=True))
def test_backend_has_every_primitive(device_type):
    backend = gl.device(device_type).backend
    missing = [name for name in PRIMITIVE_NAMES if not callable(getattr(backend, name, None))]
    assert not missing, f"the {backend.name} backend lacks the primitives {missing}"
    if getattr(backend, "array_type", np.ndarray) is not np.ndarray and not isinstance(backend, NumpyBackend):
        # arrays that are not numpy's must not meet numpy's primitives: inheriting one would pull them to the host
        borrowed = [name for name in PRIMITIVE_NAMES
                    if inspect.getattr_static(type(backend), name, None) is inspect.getattr_static(NumpyBackend, name)]
        assert not borrowed, f"the {backend.name} backend uses numpy's own code for {borrowed}"


@pytest.mark.parametrize("device_type", backend_params(include_reference=True))
def test_native_dtypes_round_trip(device_type):
    """native_dtype is the backend's name for a gradlab dtype: an array made in it reads back as that dtype."""
    backend = gl.device(device_type).backend
    supported = getattr(backend, "supported_dtypes", None)
    for dtype in (gl.float32, gl.float64, gl.int64, gl.int32, gl.int16, gl.int8, gl.uint8, gl.bool):
        if supported is not None and dtype not in supported:
            continue
        array = backend.asarray([1, 0, 1], dtype)
        assert backend.dtype_of(array) is dtype, f"{backend.name}: an array made as {dtype} reads as {backend.dtype_of(array)}"
        assert array.dtype == backend.native_dtype(dtype), f"{backend.name}: {dtype}'s array has dtype {array.dtype}"
        assert gl.tensor([1, 0, 1], dtype=dtype, device=device_type).dtype is dtype

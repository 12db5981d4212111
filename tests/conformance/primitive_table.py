"""Which conformance case reaches each contract primitive through a public op.

test_primitive_sweep.py checks every entry (the case, run on the recording fake device, really calls
the name) and that every name in ``contract.PRIMITIVES`` and ``contract.FUSED_KERNELS`` has one. These
cases are the ones the CUDA simulator runs (conftest.py): together they cover the whole contract.
"""

from __future__ import annotations

F32 = "[float32]"

# primitive -> the case that exercises it through a public op (the most direct one there is)
PRIMITIVE_CASES = {
    "native_dtype": "test_native_dtypes_round_trip",  # no op asks for it: a test of the backend itself
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


DIRECT = {"test_native_dtypes_round_trip"}  # tests in test_primitive_sweep.py, not cases

# fused kernel (contract.FUSED_KERNELS) -> the case that reaches it; each backend may override any of them,
# so each must meet a case too (on the fake device the contract's composed version or numpy's runs)
FUSED_CASES = {
    "logsumexp": f"logsumexp_softmax{F32}", "softmax": f"logsumexp_softmax{F32}",
    "log_softmax": f"logsumexp_softmax{F32}", "softmax_backward": f"logsumexp_softmax{F32}",
    "log_softmax_backward": f"logsumexp_softmax{F32}",
    "sigmoid": f"sigmoid{F32}", "ndtr": f"activations{F32}", "gelu": f"activations{F32}",
    "gelu_backward": f"activations{F32}", "silu": f"activations{F32}", "silu_backward": f"activations{F32}",
    "layer_norm": f"normalisations{F32}", "layer_norm_backward": f"normalisations{F32}",
    "matmul_into": f"transformer_encoder_layer{F32}",
    "isub": "optimizer_sgd[float32]", "iadd": "optimizer_adam[float32]", "imul": f"activations{F32}",
    **{name: "test_random_numbers_match_numpy_or_their_distribution"
       for name in ("random_uniform", "random_normal", "random_integers", "random_permutation")},
}

DIRECT |= {"test_random_numbers_match_numpy_or_their_distribution"}  # in test_random.py

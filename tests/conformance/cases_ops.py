"""Op cases: every contract primitive reached through a public op, forward and backward.

Each function builds its inputs on the host, moves them to the device and returns what is compared
with the numpy backend's results (see harness.py). The primitive each case reaches is listed in
test_primitive_sweep.py, which checks that it really does.
"""

from __future__ import annotations

import numpy as np

import gradlab as gl
import gradlab.nn.functional as F

from .harness import case, forward_backward, host, leaf, on

F32, F64 = gl.float32, gl.float64
BOTH = (F32, F64)

# --- creation, dtypes and transfer ------------------------------------------------------------------


@case(needs=(F64,))
def creation(dev, sz, dtype):
    empty = gl.empty(sz.rows, sz.cols, device=dev)
    return {"zeros": gl.zeros(sz.rows, sz.cols, device=dev), "ones": gl.ones(sz.cols, dtype=gl.int64, device=dev),
            "full": gl.full((2, sz.cols), 2.5, device=dev), "arange": gl.arange(1, sz.cols, 3, device=dev),
            "arange_float": gl.arange(0.0, 2.0, 0.25, dtype=F64, device=dev),
            "linspace": gl.linspace(-1, 1, sz.cols, device=dev), "eye": gl.eye(sz.rows, device=dev),
            "empty_filled": empty.fill_(3.0), "empty_shape": tuple(empty.shape)}


@case(needs=(F64,))
def casts_and_copies(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 1, F32, -3, 3)
    wide = x.to(F64)
    ints = x.to(gl.int64)  # truncates toward zero, as in PyTorch
    copy = x.clone()
    copy.add_(1.0)  # a real copy: the original is unchanged
    (wide * wide).sum().backward()
    there_and_back = x.detach().cpu().to(dev)
    return {"double": wide, "ints": ints, "bools": x.to(gl.bool), "copy": copy, "x": x, "grad": x.grad,
            "round_trip": there_and_back, "item": x[0, 0].item(), "tolist": x[:2, :3].tolist()}


# --- elementwise, one input -------------------------------------------------------------------------
# name -> (op, low, high): inputs drawn inside each op's domain, away from its kinks (abs at 0, round at
# halves), so the gradients are the op's, not a choice at a tie.

UNARY = {
    "neg": (gl.neg, -2, 2), "abs": (gl.abs, 0.1, 2), "exp": (gl.exp, -3, 3), "log": (gl.log, 0.1, 4),
    "log1p": (gl.log1p, -0.5, 3), "expm1": (gl.expm1, -2, 2), "sqrt": (gl.sqrt, 0.1, 4),
    "sin": (gl.sin, -3, 3), "cos": (gl.cos, -3, 3), "tan": (gl.tan, -1.2, 1.2), "tanh": (gl.tanh, -3, 3),
    "sign": (gl.sign, -2, 2), "floor": (gl.floor, -3, 3), "ceil": (gl.ceil, -3, 3), "round": (gl.round, -3, 3),
    "erf": (gl.erf, -3, 3), "asin": (gl.asin, -0.9, 0.9), "acos": (gl.acos, -0.9, 0.9),
    "atan": (gl.atan, -3, 3), "sinh": (gl.sinh, -2, 2), "cosh": (gl.cosh, -2, 2), "asinh": (gl.asinh, -3, 3),
    "acosh": (gl.acosh, 1.1, 4), "atanh": (gl.atanh, -0.9, 0.9), "log2": (gl.log2, 0.1, 4),
    "log10": (gl.log10, 0.1, 4), "erfc": (gl.erfc, -3, 3), "sigmoid": (gl.sigmoid, -6, 6),
    "rsqrt": (gl.rsqrt, 0.2, 4), "reciprocal": (gl.reciprocal, 0.2, 3),
}


def _unary(name):
    op, low, high = UNARY[name]

    def unary(dev, sz, dtype):
        x = leaf(dev, (sz.rows, sz.cols), 2, dtype, low, high)
        return forward_backward(op, x)

    unary.__name__ = name
    return unary


for _name in UNARY:
    case(*BOTH)(_unary(_name))


@case(*BOTH)
def predicates(dev, sz, dtype):
    values = host((sz.rows, sz.cols), 3)
    values[0, :3] = [np.nan, np.inf, -np.inf]
    x = on(dev, values, dtype)
    return {"isnan": gl.isnan(x), "isinf": gl.isinf(x), "isfinite": gl.isfinite(x), "not": gl.logical_not(x > 0),
            "nan_to_num": gl.nan_to_num(x, nan=0.0, posinf=9.0, neginf=-9.0)}


# --- elementwise, two inputs, with broadcasting -----------------------------------------------------

BINARY = {  # name -> (op, (low, high) of a, (low, high) of b)
    "add": (gl.add, (-2, 2), (-2, 2)), "sub": (gl.sub, (-2, 2), (-2, 2)), "mul": (gl.mul, (-2, 2), (-2, 2)),
    "div": (gl.div, (-2, 2), (0.5, 2)), "pow": (gl.pow, (0.5, 2), (-2, 2)),
    "maximum": (gl.maximum, (-2, 2), (-2, 2)), "minimum": (gl.minimum, (-2, 2), (-2, 2)),
    "atan2": (gl.atan2, (-2, 2), (-2, 2)), "hypot": (gl.hypot, (-2, 2), (-2, 2)),
    "logaddexp": (gl.logaddexp, (-3, 3), (-3, 3)), "logaddexp2": (gl.logaddexp2, (-3, 3), (-3, 3)),
    "copysign": (gl.copysign, (0.5, 2), (-2, 2)), "fmod": (gl.fmod, (-5, 5), (0.7, 2)),
    "remainder": (gl.remainder, (-5, 5), (0.7, 2)), "floor_divide": (gl.floor_divide, (-5, 5), (0.7, 2)),
}


def _binary(name):
    op, (a_low, a_high), (b_low, b_high) = BINARY[name]

    def binary(dev, sz, dtype):
        a = leaf(dev, (sz.rows, 1, sz.cols), 4, dtype, a_low, a_high)  # (r, 1, c) with (3, c) -> (r, 3, c)
        b = leaf(dev, (3, sz.cols), 5, dtype, b_low, b_high)
        if name in ("floor_divide",):  # no gradient in PyTorch: compare the forward only
            a.requires_grad_(False), b.requires_grad_(False)
        return forward_backward(op, a, b)

    binary.__name__ = name
    return binary


for _name in BINARY:
    case(*BOTH)(_binary(_name))


@case(*BOTH)
def with_python_numbers(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 6, dtype, 0.5, 2)
    return forward_backward(lambda t: {"rsub_mul_div": (2.5 - t) * 3 / t, "pow": t ** 2, "rpow": 2 ** t,
                                       "mod": t % 0.7, "radd_rdiv": 1 + 2 / t}, x)


@case(*BOTH)
def nextafter_and_frexp(dev, sz, dtype):
    x = on(dev, host((sz.cols,), 7, -100, 100), dtype)
    mantissa, exponent = gl.frexp(x)
    return {"up": gl.nextafter(x, on(dev, np.full(sz.cols, np.inf), dtype)), "mantissa": mantissa,
            "exponent": exponent}


@case()
def comparisons(dev, sz, dtype):
    a = on(dev, np.round(host((sz.rows, 1, sz.cols), 8, -2, 2)), F32)  # whole numbers: ties, so eq and le matter
    b = on(dev, np.round(host((3, sz.cols), 9, -2, 2)), F32)
    return {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
            "and": gl.logical_and(a > 0, b > 0), "or": gl.logical_or(a > 0, b > 0),
            "xor": gl.logical_xor(a > 0, b > 0), "eq_number": a == 1.0, "equal": gl.equal(a, a)}


@case()
def integer_ops(dev, sz, dtype):
    a = on(dev, np.random.default_rng(10).integers(-50, 50, (sz.rows, sz.cols)), gl.int64)
    b = on(dev, np.random.default_rng(11).integers(1, 20, (sz.cols,)), gl.int64)
    shift = on(dev, np.random.default_rng(12).integers(0, 5, (sz.cols,)), gl.int64)
    return {"add": a + b, "mul": a * b, "floor_divide": a // b, "remainder": a % b, "gcd": gl.gcd(a, b),
            "lcm": gl.lcm(a, b), "and": a & b, "or": a | b, "xor": a ^ b, "not": ~a, "left": a << shift,
            "right": a >> shift, "bool_and": (a > 0) & (b > 5), "max": gl.maximum(a, b), "abs": a.abs(),
            "true_div": a / b, "neg": -a, "sign": a.sign(), "pow": b ** 2}


@case(*BOTH)
def where_and_masked_fill(dev, sz, dtype):
    cond = on(dev, host((sz.rows, 1), 13) > 0)
    a, b = leaf(dev, (sz.rows, sz.cols), 14, dtype), leaf(dev, (sz.cols,), 15, dtype)
    return forward_backward(lambda a, b: {"where": gl.where(cond, a, b), "masked_fill": a.masked_fill(a > 1, 0.5),
                                          "where_number": gl.where(a > 0, a, 0.0)}, a, b)


@case(*BOTH)
def clamp_and_relu(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 16, dtype, -3, 3)
    return forward_backward(lambda t: {"clamp": t.clamp(-1.0, 1.5), "relu": F.relu(t),
                                       "leaky_relu": F.leaky_relu(t, 0.1), "elu": F.elu(t)}, x)


# --- reductions ---------------------------------------------------------------------------------------


@case(*BOTH)
def sums_and_means(dev, sz, dtype):
    x = leaf(dev, (sz.rows, 3, sz.cols), 17, dtype)
    return forward_backward(lambda t: {"sum": t.sum(), "sum_dims": t.sum((0, 2), keepdim=True),
                                       "mean_keep": t.mean(-1, keepdim=True), "mean": t.mean(),
                                       "var": t.var(0, keepdim=True), "std": t.std()}, x)


@case(*BOTH)
def prod_reduction(dev, sz, dtype):
    x = leaf(dev, (sz.rows, 5), 18, dtype, 0.5, 1.5)
    return forward_backward(lambda t: {"prod_dim": t.prod(1), "prod": t.prod()}, x)


@case(*BOTH)
def max_min_reductions(dev, sz, dtype):
    x = leaf(dev, (sz.rows, 3, sz.cols), 19, dtype)
    values, indices = x.max(-1)
    low, low_at = x.min(0, keepdim=True)
    results = forward_backward(lambda t: {"amax": t.amax((0, 2)), "amin": t.amin(1), "max": t.max(), "min": t.min(),
                                          "max_dim": values, "min_dim": low}, x)
    return dict(results, indices=indices, low_at=low_at)


@case()
def all_any(dev, sz, dtype):
    x = on(dev, host((sz.rows, sz.cols), 20) > -1.5)
    return {"all": x.all(), "any": x.any(), "all_dim": x.all(1), "any_dims": x.any(0, keepdim=True),
            "count": gl.count_nonzero(x, 1)}


@case()
def argmax_argmin(dev, sz, dtype):
    x = on(dev, host((sz.rows, 3, sz.cols), 21), F32)
    return {"argmax": x.argmax(), "argmax_dim": x.argmax(-1), "argmin_keep": x.argmin(1, keepdim=True),
            "argmin": x.argmin()}


@case(*BOTH)
def cumulative(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 22, dtype, 0.5, 1.2)
    values, indices = gl.cummax(x, 1)
    low, low_at = gl.cummin(x, 0)
    results = forward_backward(lambda t: {"cumsum1": t.cumsum(1), "cumsum0": t.cumsum(0), "cumprod": t.cumprod(1),
                                          "cummax": values, "cummin": low}, x)
    return dict(results, cummax_at=indices, cummin_at=low_at)


@case(*BOTH)
def sort_topk_argsort(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 23, dtype)
    values, order = x.sort(1, descending=True)
    top, top_at = x.topk(3, dim=1)
    results = forward_backward(lambda t: {"sort0": t.sort(0).values, "sort_descending": values, "topk": top}, x)
    return dict(results, order=order, top_at=top_at, argsort=x.argsort(0), median=x.median(1).values,
                kth=x.kthvalue(2, 1).values)


@case(*BOTH)
def logsumexp_softmax(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 24, dtype, -20, 20)  # large logits: the max must be subtracted first
    return forward_backward(lambda t: {"logsumexp": gl.logsumexp(t, 1, keepdim=True), "softmax": F.softmax(t, 1),
                                       "log_softmax": F.log_softmax(t, -1), "softmax0": F.softmax(t, 0),
                                       "log_softmax0": F.log_softmax(t, 0), "logsumexp_all": gl.logsumexp(t, (0, 1))},
                            x)


# --- movement: views, joining, in-place writes through views --------------------------------------


@case(*BOTH)
def views_and_reshapes(dev, sz, dtype):
    x = leaf(dev, (sz.rows, 3, sz.cols), 25, dtype)
    w = on(dev, host((sz.cols, 3, sz.rows), 26), dtype)

    def fn(t):
        moved = t.permute(2, 1, 0) * w + t.transpose(0, 2)  # (c, 3, r): a view, then a product with it
        flat = (moved.reshape(-1, sz.rows).t() + 1).reshape(sz.rows, 3, sz.cols)
        return {"moved": flat.flatten(1).unsqueeze(0).expand(2, -1, -1), "view": t.view(sz.rows, -1) * 2}
    results = forward_backward(fn, x)
    return dict(results, contiguous=x.transpose(0, 1).is_contiguous(), made=x.transpose(0, 1).contiguous())


@case(*BOTH)
def flip_roll_tril(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 27, dtype)
    return forward_backward(lambda t: {"flip": t.flip(0), "flip2": t.flip((0, 1)), "roll": t.roll(2, 1),
                                       "roll2": t.roll((1, -1), (0, 1)), "tril": t.tril(1), "triu": t.triu(-1)}, x)


@case(*BOTH)
def diagonal_ops(dev, sz, dtype):
    x = leaf(dev, (3, sz.rows, sz.rows + 2), 28, dtype)
    return forward_backward(lambda t: {"offset": gl.diagonal(t, 1, 1, 2), "main": t.diagonal(0, -2, -1),
                                       "embed": gl.diag_embed(t[:, 0]), "below": t.diagonal(-1, 1, 2)}, x)


@case(*BOTH)
def pad_constant(dev, sz, dtype):
    x = leaf(dev, (2, sz.rows, sz.cols), 29, dtype)
    return forward_backward(lambda t: F.pad(t, (1, 2, 0, 3), value=0.5), x)


@case(*BOTH)
def cat_stack_split(dev, sz, dtype):
    a, b = leaf(dev, (sz.rows, sz.cols), 30, dtype), leaf(dev, (sz.rows, 4), 31, dtype)

    def fn(a, b):
        joined = gl.cat([a, b, a], 1)
        first, rest = joined.split([3, joined.shape[1] - 3], 1)
        chunks = gl.chunk(rest, 2, 0)
        return {"stack": gl.stack([first, first * 2], 0), "stack_last": gl.stack([first, -first], -1),
                "chunks": gl.cat(chunks[::-1], 0), "cat": joined, "unbind": gl.unbind(b, 1)[2]}
    return forward_backward(fn, a, b)


@case(*BOTH)
def basic_indexing(dev, sz, dtype):
    x = leaf(dev, (sz.rows, 3, sz.cols), 32, dtype)
    return forward_backward(lambda t: {"slices": t[1:, ::2, 3:-1:2][..., None, :2], "int": t[0, 1, 2],
                                       "last": t[-1], "ellipsis": t[..., 1]}, x)


@case(*BOTH)
def advanced_and_boolean_indexing(dev, sz, dtype):
    x = leaf(dev, (sz.rows, 3, sz.cols), 33, dtype)
    rows = on(dev, np.array([0, sz.rows - 1, 1, 0]))  # repeated index: its gradient adds up
    cols = on(dev, np.array([2, 0, 1, 2]))
    mask = on(dev, host((sz.rows, 3, sz.cols), 34) > 0.5)
    return forward_backward(lambda t: {"pairs": t[rows, :, cols], "rows": t[rows][:, 1], "mask": t[mask],
                                       "list": t[:, [0, 2]], "row_mask": t[x.detach()[:, 0, 0] > 0]}, x)


@case(*BOTH)
def setitem_and_views_written_in_place(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 35, dtype)
    v = leaf(dev, (sz.rows, 2), 36, dtype)

    def fn(x, v):
        y = x * 1.0
        y[:, 1:3] = v  # setitem through autograd
        y[y > 1.5] = 0.0  # boolean mask write
        y[on(dev, np.array([0, 0, 2]))] = 1.0  # integer index write
        view = y[1:, ::2]
        view.mul_(3.0)  # in place through a view: y's history changes too
        y.t()[0].add_(v[:, 0].sum())
        return y * x
    return forward_backward(fn, x, v)


@case(*BOTH)
def index_add_scatter_gather(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 37, dtype)
    src = leaf(dev, (4, sz.cols), 38, dtype)
    index = on(dev, np.array([0, 2, 0, sz.rows - 1]))
    gather_at = on(dev, np.random.default_rng(39).integers(0, sz.cols, (sz.rows, 5)))

    def fn(x, src):
        added = x.index_add(0, index, src)
        scattered = x.scatter(1, gather_at, 2.0).scatter_add(1, gather_at, x[:, :5])
        picked = x.gather(1, gather_at) + gl.take_along_dim(x, gather_at, 1) + x.index_select(1, gather_at[0])
        put = x.index_put((index,), src, accumulate=True)
        return {"index_add": added, "scatter": scattered, "gather": picked, "index_put": put}
    return forward_backward(fn, x, src)


@case(*BOTH)
def scatter_reduce_prod_amax_amin(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 40, dtype, 0.5, 1.5)
    src = leaf(dev, (sz.rows, 6), 41, dtype, 0.5, 1.5)
    at = on(dev, np.random.default_rng(42).integers(0, sz.cols, (sz.rows, 6)))
    return forward_backward(lambda x, s: {"prod": x.scatter_reduce(1, at, s, "prod"),
                                          "amax": x.scatter_reduce(1, at, s, "amax"),
                                          "amin": x.scatter_reduce(1, at, s, "amin", include_self=False),
                                          "mean": x.scatter_reduce(1, at, s, "mean")}, x, src)


@case(*BOTH)
def embedding_lookup(dev, sz, dtype):
    weight = leaf(dev, (10, sz.cols), 43, dtype)
    ids = on(dev, np.random.default_rng(44).integers(0, 10, (sz.batch, sz.seq)))
    return forward_backward(lambda w: F.embedding(ids, w, padding_idx=3), weight)


# --- linear algebra ---------------------------------------------------------------------------------


@case(*BOTH, tol=10)
def matmul_shapes(dev, sz, dtype):
    a = leaf(dev, (sz.rows * 3, sz.inner), 45, dtype)
    b = leaf(dev, (sz.inner, sz.cols), 46, dtype)
    batched = leaf(dev, (2, 1, sz.rows, sz.inner), 47, dtype)
    vector = leaf(dev, (sz.inner,), 48, dtype)
    return forward_backward(lambda a, b, c, v: {"mm": a @ b, "broadcast": c @ b, "vector_matrix": v @ b,
                                                "matrix_vector": a @ v, "bmm": gl.bmm(c[:, 0], b.expand(2, -1, -1)),
                                                "linear": F.linear(a, b.t()), "transposed": b.t() @ a.t()},
                            a, b, batched, vector)


@case(*BOTH, tol=10)
def einsum_forms(dev, sz, dtype):
    a = leaf(dev, (2, sz.rows, sz.inner), 49, dtype)
    b = leaf(dev, (2, sz.inner, sz.cols), 50, dtype)
    return forward_backward(lambda a, b: {"batched": gl.einsum("bij,bjk->bik", a, b), "sum": gl.einsum("bij->j", a),
                                          "inner": gl.einsum("bij,bij->", a, a),
                                          "three": gl.einsum("bik,bkj,bij->j", a, b, gl.einsum("bik,bkj->bij", a, b))},
                            a, b)


# --- neural-network functions -----------------------------------------------------------------------


@case(*BOTH, tol=10)
def conv1d_forms(dev, sz, dtype):
    x = leaf(dev, (sz.batch, sz.channels, sz.cols), 51, dtype)
    w = leaf(dev, (4, sz.channels, 3), 52, dtype)
    grouped = leaf(dev, (4, 1, 2), 53, dtype)
    bias = leaf(dev, (4,), 54, dtype)
    return forward_backward(lambda x, w, g, b: {"strided": F.conv1d(x, w, b, stride=2, padding=1),
                                                "dilated": F.conv1d(x, w, dilation=2),
                                                "grouped": F.conv1d(x[:, :1].expand(-1, 2, -1), g, groups=2)},
                            x, w, grouped, bias)


@case(*BOTH, tol=10)
def conv2d_forms(dev, sz, dtype):
    x = leaf(dev, (sz.batch, sz.channels, sz.image, sz.image + 1), 55, dtype)
    w = leaf(dev, (4, sz.channels, 3, 3), 56, dtype)
    bias = leaf(dev, (4,), 57, dtype)
    return forward_backward(lambda x, w, b: {"strided": F.conv2d(x, w, b, stride=(2, 1), padding=1),
                                             "same_dilated": F.conv2d(x, w, padding="same", dilation=2),
                                             "transposed": F.conv_transpose2d(x, w.transpose(0, 1), stride=2)},
                            x, w, bias)


@case(*BOTH)
def pooling(dev, sz, dtype):
    x = leaf(dev, (sz.batch, sz.channels, sz.image, sz.image + 1), 58, dtype)
    return forward_backward(lambda t: {"max": F.max_pool2d(t, 2), "avg": F.avg_pool2d(t, 3, 2, 1),
                                       "adaptive_avg": F.adaptive_avg_pool2d(t, (2, 3)),
                                       "max_overlapping": F.max_pool2d(t, 3, 1, 1), "max1d": F.max_pool1d(t[:, :, 0], 2),
                                       "adaptive_max": F.adaptive_max_pool2d(t, 2)}, x)


@case(*BOTH)
def fold_unfold(dev, sz, dtype):
    x = leaf(dev, (sz.batch, sz.channels, sz.image, sz.image), 59, dtype)
    patches_of = lambda t: F.unfold(t, 3, padding=1, stride=2)  # noqa: E731
    return forward_backward(lambda t: F.fold(patches_of(t), (sz.image, sz.image), 3, padding=1, stride=2), x)


@case(*BOTH)
def activations(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 60, dtype, -4, 4)
    return forward_backward(lambda t: {"gelu": F.gelu(t), "gelu_tanh": F.gelu(t, approximate="tanh"),
                                       "silu": F.silu(t), "sigmoid": gl.sigmoid(t), "tanh": gl.tanh(t),
                                       "softplus": F.softplus(t), "mish": F.mish(t), "hardswish": F.hardswish(t)}, x)


@case(*BOTH, tol=10)
def normalisations(dev, sz, dtype):
    x = leaf(dev, (sz.batch, 4, sz.image, 3), 61, dtype)
    w, b = leaf(dev, (3,), 62, dtype), leaf(dev, (3,), 63, dtype)
    cw, cb = leaf(dev, (4,), 64, dtype), leaf(dev, (4,), 65, dtype)
    mean, var = on(dev, host((4,), 66), dtype), on(dev, host((4,), 67, 0.5, 2), dtype)

    def fn(x, w, b, cw, cb):
        layer = F.layer_norm(x, (3,), w, b) + F.layer_norm(x, (sz.image, 3))
        batch = F.batch_norm(x, None, None, cw, cb, training=True)
        evaluated = F.batch_norm(x, mean, var, cw, cb, training=False)
        group = F.group_norm(x, 2, cw, cb)
        return {"layer_norm": layer, "batch_norm": batch, "batch_norm_eval": evaluated, "group_norm": group,
                "normalize": F.normalize(x, dim=1)}
    return forward_backward(fn, x, w, b, cw, cb)


@case(*BOTH)
def dropout_in_eval_is_identity(dev, sz, dtype):
    x = leaf(dev, (sz.rows, sz.cols), 68, dtype)
    return forward_backward(lambda t: {"dropout": F.dropout(t, 0.5, training=False),
                                       "dropout2d": F.dropout2d(t[None, None], 0.3, training=False)}, x)

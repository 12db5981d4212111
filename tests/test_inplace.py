"""In-place operations and autograd: version counters, leaves, views, operators, and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd.gradcheck import gradcheck
from helpers import assert_close, leaf, randn, requires_torch, torch

MODIFIED = "one of the variables needed for gradient computation has been modified by an inplace operation"


def test_version_counter_counts_in_place_changes():
    x = gl.zeros(3)
    assert x._version_count == 0
    x.add_(1)
    x += 2
    x.mul_(3)
    assert x._version_count == 3
    assert_close(x, [9.0, 9.0, 9.0])


def test_modifying_a_saved_tensor_is_detected():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    a = x * 2
    b = a * w  # saves a
    a.mul_(3)
    with pytest.raises(RuntimeError, match=MODIFIED) as info:
        b.sum().backward()
    assert "MulBackward0" in str(info.value) and "version 1; expected version 0" in str(info.value)


def test_modifying_a_saved_output_is_detected():
    x = leaf([0.5, 1.0])
    y = x.exp()  # exp saves its output
    y.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


def test_in_place_after_backward_use_is_fine():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    a = x * 2
    b = a + w  # add saves nothing
    a.mul_(3)
    b.sum().backward()
    assert_close(x.grad, [2.0, 2.0])


def test_in_place_on_leaf_requiring_grad_raises():
    x = leaf([1.0, 2.0])
    for op in (lambda t: t.add_(1), lambda t: t.mul_(2), lambda t: t.zero_(), lambda t: t.exp_()):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
            op(x)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        x += 1
    assert_close(x, [1.0, 2.0])


def test_in_place_on_leaf_under_no_grad_works():
    x = leaf([1.0, 2.0])
    with gl.no_grad():
        x.sub_(gl.tensor([0.5, 0.5], dtype=gl.float64), alpha=2)
        x *= 3
    assert_close(x, [0.0, 3.0])
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert x._version_count == 2
    (x * x).sum().backward()
    assert_close(x.grad, [0.0, 6.0])


def test_in_place_on_non_leaf_gives_right_gradients():
    a_np, b_np = randn(3, seed=1), randn(3, seed=2)
    a, b = leaf(a_np), leaf(b_np)
    x = a * 2
    x.mul_(b)
    assert x.grad_fn.name() == "MulBackward0"
    x.sum().backward()
    assert_close(a.grad, 2 * b_np)
    assert_close(b.grad, 2 * a_np)


def test_in_place_chain_matches_gradcheck():
    def f(a, b):
        x = a * 1.5
        x.add_(b)
        x.mul_(b)
        x.div_(a.exp())
        x.sub_(a, alpha=0.5)
        x.pow_(2)
        x.neg_()
        return x

    a, b = leaf(randn(4, seed=3)), leaf(randn(4, seed=4))
    assert gradcheck(f, (a, b))


def test_in_place_operators_keep_identity_and_gradients():
    a = leaf([1.0, 2.0])
    x = a * 1
    ident = id(x)
    x += 3  # a + 3
    x -= a  # 3
    x *= a  # 3a
    x /= 2  # 1.5a
    x **= 2  # 2.25 a^2
    assert id(x) == ident
    assert_close(x, 2.25 * np.array([1.0, 4.0]))
    x.sum().backward()
    assert_close(a.grad, 4.5 * np.array([1.0, 2.0]))


def test_in_place_with_grad_requiring_argument_on_plain_tensor():
    w = leaf([1.0, 2.0])
    z = gl.zeros(2, dtype=gl.float64)
    z.add_(w)
    z.mul_(w)
    assert z.requires_grad and z.grad_fn is not None and not z.is_leaf
    z.sum().backward()
    assert_close(w.grad, [2.0, 4.0])


def test_copy_from_a_leaf_routes_gradient_to_it():
    w = leaf([1.0, 2.0, 3.0])
    dst = gl.zeros(3, dtype=gl.float64)
    dst.copy_(w)
    assert dst.grad_fn is not None
    (dst * 2).sum().backward()
    assert_close(w.grad, [2.0, 2.0, 2.0])
    assert_close(dst, [1.0, 2.0, 3.0])


def test_copy_broadcasts_and_casts():
    dst = gl.zeros(2, 3)
    dst.copy_(gl.tensor([1, 2, 3]))
    assert dst.dtype is gl.float32
    assert_close(dst, [[1.0, 2.0, 3.0]] * 2)


def test_fill_and_zero_on_non_leaf_cut_the_old_history():
    a = leaf([1.0, 2.0])
    x = a * 2
    x.fill_(5.0)
    assert x.requires_grad and x.grad_fn.name() == "FillBackward0"
    (x * a).sum().backward()
    assert_close(a.grad, [5.0, 5.0])  # only through the second use: the filled values are constants
    y = a * 3
    y.zero_()
    assert_close(y, [0.0, 0.0])


def test_fill_with_a_tensor_value_gets_its_gradient():
    v = leaf(2.0)
    x = gl.zeros(3, dtype=gl.float64)
    x.fill_(v)
    (x * 2).sum().backward()
    assert_close(v.grad, 6.0)
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
        gl.zeros(3).fill_(gl.ones(1))


def test_in_place_keeps_dtype_and_refuses_narrowing():
    x = gl.tensor([1, 2, 3])
    x.add_(2)
    assert x.dtype is gl.int64
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        x.add_(1.5)
    w = leaf([1.0, 2.0], dtype=gl.float32)
    y = w * 1
    y.mul_(gl.tensor([2.0, 3.0], dtype=gl.float64, requires_grad=True))
    assert y.dtype is gl.float32
    y.sum().backward()
    assert w.grad.dtype is gl.float32
    assert_close(w.grad, [2.0, 3.0])


def test_in_place_shape_must_not_change():
    x = gl.zeros(3)
    with pytest.raises(RuntimeError, match=r"add_: output with shape \(3\) doesn't match the broadcast shape \(2, 3\)"):
        x.add_(gl.ones(2, 3))


# --- views --------------------------------------------------------------------------------------


def test_views_share_the_version_counter():
    base = gl.zeros(2, 3)
    view = base.reshape(6)
    row = base[0]
    detached = base.detach()
    view.add_(1)
    assert base._version_count == row._version_count == detached._version_count == 1
    row.mul_(2)
    assert base._version_count == view._version_count == 2
    assert_close(base, [[2.0, 2.0, 2.0], [1.0, 1.0, 1.0]])
    detached.zero_()
    assert base._version_count == 3 and base.sum().item() == 0


def test_modifying_a_view_of_a_saved_tensor_is_detected():
    x = leaf([1.0, 2.0, 3.0])
    a = x * 1
    b = a * a  # saves a
    with gl.no_grad():
        a[1:].mul_(2)
    with pytest.raises(RuntimeError, match=MODIFIED):
        b.sum().backward()


def test_modifying_a_detached_copy_of_a_saved_tensor_is_detected():
    x = leaf([1.0, 2.0])
    y = x.exp()
    d = y.detach()
    assert getattr(d, "_base", None) is None and not d.requires_grad
    d.zero_()
    with pytest.raises(RuntimeError, match=MODIFIED):
        y.sum().backward()


def test_in_place_on_expanded_view_raises_clearly():
    x = gl.zeros(1, 3).expand(2, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single memory location"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="clone"):
        x += 1


def test_recorded_in_place_on_a_view_reaches_the_base():
    a = leaf([1.0, 2.0, 3.0])
    x = a * 1
    x[:2].mul_(2)
    x.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0, 1.0]
    base = gl.zeros(3, dtype=gl.float64)
    base[:2].add_(a[:2])
    assert base.requires_grad and base.grad_fn.name() == "CopySlices"


def test_view_of_a_view_keeps_the_root_base():
    base = gl.zeros(4, 4)
    v = base[1:]
    vv = v[1:]
    assert vv._base is base and v._base is base


# --- requires_grad_ and backward misuse ------------------------------------------------------------------


def test_requires_grad_on_integer_tensor_raises():
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        gl.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        gl.tensor([1, 2], requires_grad=True)


def test_requires_grad_false_on_non_leaf_raises():
    y = leaf([1.0]) * 2
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf variables"):
        y.requires_grad_(False)


def test_backward_on_non_scalar_without_gradient_raises():
    y = leaf([1.0, 2.0]) * 2
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        y.backward()


def test_retain_grad_follows_the_tensor_through_in_place():
    a = leaf([1.0, 2.0])
    x = a * 2
    x.retain_grad()
    x.mul_(3)
    (x * x).sum().backward()
    assert_close(x.grad, 2 * 6 * np.array([1.0, 2.0]))  # the gradient of the new value of x


@requires_torch
def test_in_place_sequence_matches_torch():
    a_np, b_np = randn(2, 3, seed=5), randn(3, seed=6)

    def run(lib, a, b):
        x = a * 2
        x.add_(b, alpha=0.5)
        x.mul_(b)
        x.div_(2.0)
        x.sub_(a)
        x.add_(b.exp())
        x += b
        x *= 1.5
        return (x * x).sum()

    a, b = leaf(a_np), leaf(b_np)
    ta, tb = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np, requires_grad=True)
    out, t_out = run(gl, a, b), run(torch, ta, tb)
    out.backward()
    t_out.backward()
    assert_close(out, t_out.detach().numpy())
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad)


@requires_torch
def test_version_error_matches_torch():
    for lib, make in ((gl, leaf), (torch, lambda v: torch.tensor(v, requires_grad=True))):
        x = make([1.0, 2.0])
        y = x.exp()  # exp saves its result, in both libraries
        y.mul_(2)
        with pytest.raises(RuntimeError, match=MODIFIED):
            y.sum().backward()


def test_zero_on_a_non_leaf_sends_zero_gradients():
    w = gl.ones(3, requires_grad=True)
    y = w * 2
    y.zero_()
    y.sum().backward()
    assert w.grad is not None and w.grad.tolist() == [0.0, 0.0, 0.0]


def test_changes_through_data_are_not_tracked():
    """PyTorch's .data has its own version counter: backward does not notice (nor refuse) the change."""
    w = gl.ones(3, requires_grad=True)
    y = (w * w).sum()
    w.data.mul_(2)
    y.backward()
    assert w.grad.tolist() == [4.0, 4.0, 4.0]  # 2 * w, read after the change (as PyTorch does)

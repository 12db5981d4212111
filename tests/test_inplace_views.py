"""In-place writes into views that take part in the graph, checked against PyTorch.

Each program runs twice, once with ``gradlab`` and once with ``torch`` as ``lib``, on the same
float64 leaves; the outputs and the leaves' gradients must agree. The base of a written view
takes a CopySlices node, and a view whose base changed in place is given its history again from
the base's (AsStrided), as PyTorch does.
"""

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd import gradcheck, gradgradcheck
from gradlab.autograd.views import AsStrided, CopySlices
from helpers import assert_close, leaf, randn, requires_torch, torch


def run(lib, program, arrays):
    """program(lib, *leaves) on float64 leaves; returns its outputs and the leaves' gradients of a weighted sum."""
    leaves = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in arrays]
    outputs = program(lib, *leaves)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    loss = sum((out * lib.tensor(randn(*out.shape, seed=k + 7), dtype=lib.float64)).sum() for k, out in enumerate(outputs))
    loss.backward()
    return [out.detach().numpy().copy() for out in outputs], [x.grad.numpy().copy() for x in leaves]


def assert_like_torch(program, *arrays):
    """The program's outputs and gradients are PyTorch's."""
    values, grads = run(gl, program, arrays)
    torch_values, torch_grads = run(torch, program, arrays)
    for ours, theirs in zip(values + grads, torch_values + torch_grads):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)


# --- the three programs of the issue -----------------------------------------------------------


@requires_torch
def test_columns_written_one_by_one_inside_a_forward():
    def program(lib, x):
        out = lib.zeros(4, 3, dtype=lib.float64)
        for i in range(3):
            out[:, i] = (x[:, i] * (i + 1)).tanh()
        return out

    assert_like_torch(program, randn(4, 3))


@requires_torch
def test_columns_written_through_views_of_a_buffer():
    def program(lib, x):
        out = lib.zeros(4, 3, dtype=lib.float64)
        for i in range(3):
            out[:, i].copy_(x[:, i].exp() * i)
        return out

    assert_like_torch(program, randn(4, 3))


@requires_torch
def test_masked_write_on_a_non_leaf():
    def program(lib, x):
        y = x * 2
        y[y > 0] = 0
        return y

    assert_like_torch(program, randn(3, 4))


@requires_torch
def test_a_view_taken_before_its_base_changed_in_place_follows_the_change():
    def program(lib, x):
        y = x * 2
        v = y[0]
        y.mul_(x.cos())
        return v, y

    assert_like_torch(program, randn(3, 4))


def test_the_view_gets_its_history_from_the_base_again():
    y = leaf(randn(3, 4)) * 2
    v = y[0]
    y.mul_(2)
    v.sum().backward()
    assert v.grad_fn.function is AsStrided


# --- writes through views ----------------------------------------------------------------------


@requires_torch
@pytest.mark.parametrize("make_view", [
    lambda y: y[1],
    lambda y: y[:, 1:3],
    lambda y: y[::2, ::3],
    lambda y: y.t()[2],
    lambda y: y.transpose(0, 1)[1:],
    lambda y: y.view(-1)[3:9],
    lambda y: y.reshape(2, 6)[1],
    lambda y: y[1].unsqueeze(0),
    lambda y: y.narrow(1, 1, 2),
    lambda y: y.permute(1, 0)[::2],
    lambda y: y[None, 2, None],
    lambda y: y[1:2].squeeze(0),
    lambda y: y.unflatten(1, (2, 2))[:, 1],
    lambda y: y.movedim(0, 1)[1:3, ::2],
    lambda y: y.mT[-1],
    lambda y: y.swapaxes(0, 1).reshape(12)[::5],
    lambda y: y[1, 2],
], ids=["select", "slice", "step", "t-select", "transpose-slice", "view", "reshape", "unsqueeze", "narrow",
        "permute-step", "none", "squeeze", "unflatten", "movedim", "mT", "swapaxes-flat", "element"])
def test_a_write_through_a_view_gives_the_base_and_the_view_the_right_gradient(make_view):
    def program(lib, x, w):
        y = x * 1.5
        v = make_view(y)
        v.mul_(w.reshape(-1)[: v.numel()].reshape(v.shape))
        return y, v

    assert_like_torch(program, randn(3, 4), randn(12, seed=1))


@requires_torch
def test_a_view_of_a_view_written_in_place():
    def program(lib, x, w):
        y = x.sin()
        v = y[1:]
        vv = v[:, 1]
        vv.add_(w)
        return y, v, vv

    assert_like_torch(program, randn(3, 4), randn(2, seed=1))


@requires_torch
def test_writes_into_several_slices_and_views_taken_in_between():
    def program(lib, x, w):
        y = x * 1
        first = y[0]
        for i in range(3):
            y[i].mul_(w[i])
        second = y[:, 1]
        y[:, 1].add_(w)
        return y, first, second

    assert_like_torch(program, randn(3, 3), randn(3, seed=1))


@requires_torch
def test_the_base_is_used_after_a_write_through_its_view():
    def program(lib, x, w):
        y = x.sin()
        y[1:].add_(w)
        z = y * y
        return z, y.sum(0)

    assert_like_torch(program, randn(3, 2), randn(2, 2, seed=1))


@requires_torch
def test_a_sibling_view_sees_the_write():
    def program(lib, x, w):
        y = x * 1
        a, b = y[0], y[:, 0]
        a.mul_(w)
        return b * 3, a

    assert_like_torch(program, randn(3, 3), randn(3, seed=1))


@requires_torch
def test_a_setitem_on_a_view():
    def program(lib, x, w):
        y = x * 2
        y[1:][0] = w
        y.t()[0, 1:] = w[:2] * w[1:]
        return y

    assert_like_torch(program, randn(3, 3), randn(3, seed=1))


@requires_torch
def test_a_write_through_a_view_into_a_tensor_that_needed_no_grad():
    def program(lib, w):
        buffer = lib.zeros(3, 4, dtype=lib.float64)
        row = buffer[1]
        row[1:].add_(w)
        return buffer, row

    assert_like_torch(program, randn(3))


@requires_torch
def test_several_in_place_ops_in_a_row_on_one_view():
    def program(lib, x, w):
        y = x * 1
        v = y[1]
        v.mul_(w).add_(1).clamp_(max=1.5)
        v.exp_()
        return y

    assert_like_torch(program, randn(3, 3), randn(3, seed=1))


@requires_torch
def test_a_view_whose_base_changed_under_no_grad_keeps_its_own_history():
    def program(lib, x):
        y = x * 3
        v = y[1:]
        with lib.no_grad():
            y.mul_(2)
        return v

    assert_like_torch(program, randn(3, 2))


@requires_torch
def test_an_expanded_view_read_after_its_base_changed():
    def program(lib, x):
        y = x * 1
        e = y[0:1].expand(3, 4)
        y.mul_(2)
        return e

    assert_like_torch(program, randn(2, 4))


@requires_torch
def test_a_row_copied_from_another_row_of_the_same_base():
    def program(lib, x):
        y = x * 2
        y[0].copy_(y[1] + y[2])
        y[2].copy_(y[0])
        return y

    assert_like_torch(program, randn(3, 4))


def test_a_hook_registered_on_a_view_after_its_base_changed_sees_the_views_gradient():
    """(PyTorch 2.13 crashes on this program, so the expected values are worked out by hand.)"""
    seen = []
    x = leaf(np.ones((2, 3)))
    y = x * 1
    v = y[1]
    y.mul_(3)
    v.register_hook(lambda g: seen.append(g.tolist()))
    (v * gl.tensor([1.0, 2.0, 3.0], dtype=gl.float64)).sum().backward()
    assert seen == [[1.0, 2.0, 3.0]]
    assert x.grad.tolist() == [[0.0, 0.0, 0.0], [3.0, 6.0, 9.0]]


def test_a_write_through_a_view_of_a_column_major_base():
    base = gl.from_numpy(np.asfortranarray(np.zeros((3, 4))))
    assert not base.is_contiguous()
    w = leaf(randn(3))
    base.t()[1].copy_(w * 2)  # column 1 of the base
    (base * gl.tensor(randn(3, 4, seed=2))).sum().backward()
    expected = np.zeros((3, 4))
    expected[:, 1] = randn(3) * 2
    assert_close(base.detach(), expected)
    assert_close(w.grad, 2 * randn(3, 4, seed=2)[:, 1])


def test_an_output_of_unbind_can_be_written_in_place():
    """PyTorch refuses this for outputs of functions with several views; gradlab gives y[0]'s gradient."""
    x = leaf(randn(3, 2))
    y = x * 1
    first, _, _ = y.unbind(0)
    first.mul_(3)
    y.sum().backward()
    assert_close(x.grad, [[3.0, 3.0], [1.0, 1.0], [1.0, 1.0]])


# --- what grad_fn, retain_grad and versions say ------------------------------------------------


def test_the_base_takes_a_copy_slices_node():
    y = leaf(randn(2, 3)) * 1
    y[0].mul_(2)
    assert y.grad_fn.function is CopySlices and y.grad_fn.name() == "CopySlices"


@requires_torch
def test_retain_grad_follows_the_base_and_the_view_to_their_latest_values():
    grads = {}
    for lib in (gl, torch):
        x = lib.tensor(randn(3, 3), dtype=lib.float64, requires_grad=True)
        y = x * 1
        y.retain_grad()
        v = y[1]
        v.retain_grad()
        v.mul_(3)
        (y * y).sum().backward(retain_graph=True)
        base_grad = y.grad.numpy().copy()
        assert v.grad is None  # only the base was used: the view's new history was not on the way
        (v * v).sum().backward()
        grads[lib] = (base_grad, y.grad.numpy(), v.grad.numpy())
    for ours, theirs in zip(grads[gl], grads[torch]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


@requires_torch
def test_version_counters_match_pytorch():
    versions = {}
    for lib in (gl, torch):
        x = lib.tensor(randn(3, 3), dtype=lib.float64, requires_grad=True)
        y = x * 1
        v, w = y[0], y[1:]
        v.mul_(2)
        w[0].add_(1)
        y[2] = 0.0
        versions[lib] = [t._version_count if lib is gl else t._version for t in (y, v, w)]
    assert versions[gl] == versions[torch]


def test_a_saved_view_changed_through_its_base_is_still_an_error():
    y = leaf(randn(3)) * 1
    v = y[1:]
    z = v * v  # saves v
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


# --- what stays an error -----------------------------------------------------------------------


@pytest.mark.parametrize("write", [
    lambda w: w[0].mul_(2),
    lambda w: w.t().add_(1),
    lambda w: w[1:][0].__setitem__(0, 5.0),
], ids=["select", "transpose", "setitem"])
def test_a_view_of_a_leaf_that_requires_grad_cannot_be_written_in_place(write):
    w = leaf(randn(3, 2))
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad is being used in an in-place"):
        write(w)
    assert_close(w.detach(), randn(3, 2))  # nothing was written
    assert w.grad_fn is None and w._version_count == 0


def test_a_view_of_a_leaf_can_be_written_under_no_grad():
    w = leaf(randn(3, 2))
    with gl.no_grad():
        w[0].mul_(2)
    expected = randn(3, 2)
    expected[0] *= 2
    assert_close(w.detach(), expected)
    assert w.is_leaf and w._version_count == 1


def test_a_view_made_under_no_grad_cannot_be_written_with_grad_on():
    y = leaf(randn(3)) * 1
    with gl.no_grad():
        v = y[1:]
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode .* is being modified inplace with grad"):
        v.add_(1)
    assert_close(y.detach(), randn(3))


def test_an_expanded_view_written_in_place_is_still_an_error():
    y = leaf(randn(1, 3)) * 1
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor refers to a single memory"):
        y.expand(2, 3).add_(leaf(randn(2, 3)))
    assert y.grad_fn.name() == "MulBackward0" and y._version_count == 0


# --- higher order and gradcheck ----------------------------------------------------------------


def _write_columns(x, w):
    out = gl.zeros(3, 2, dtype=gl.float64)
    for i in range(2):
        out[:, i] = x[:, i] * w[i]
    y = out * out
    y[1:].mul_(x[1:])  # a write through a view of a non-leaf
    v = y.t()[1]
    y.exp_()  # the view v must follow this change
    return v * y[0, 0]


def test_gradcheck_through_writes_into_views():
    assert gradcheck(_write_columns, (leaf(randn(3, 2)), leaf(randn(2, seed=1))))


def test_gradgradcheck_through_writes_into_views():
    assert gradgradcheck(_write_columns, (leaf(randn(3, 2)), leaf(randn(2, seed=1))))


@requires_torch
def test_second_derivatives_match_pytorch():
    def second(lib):
        x = lib.tensor(randn(3, 3), dtype=lib.float64, requires_grad=True)
        y = x * x
        v = y[1]
        y[0].mul_(x[2])
        v.mul_(x[0])
        (g,) = lib.autograd.grad((y * v).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        return g.detach().numpy(), gg.numpy()

    for ours, theirs in zip(second(gl), second(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12)


# --- the backend primitive ---------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["C", "F"])
def test_positions_in_base_names_the_base_element_of_each_view_element(layout):
    backend = gl.device("cpu").backend
    base = np.zeros((3, 4, 5), order=layout)
    labels = np.arange(base.size).reshape(base.shape)
    for index in [(1,), (slice(None), 2), (slice(None, None, 2), slice(1, 3), slice(None, None, -2))]:
        view = base[index]
        np.testing.assert_array_equal(backend.positions_in_base(base, view), labels[index])
    np.testing.assert_array_equal(backend.positions_in_base(base, base.transpose(2, 0, 1)), labels.transpose(2, 0, 1))


def test_positions_in_base_refuses_an_array_outside_the_base():
    backend = gl.device("cpu").backend
    with pytest.raises(ValueError, match="does not lie in its base's memory"):
        backend.positions_in_base(np.zeros(3), np.zeros(2))

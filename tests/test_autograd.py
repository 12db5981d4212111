"""The autograd core: the step engine, saved-tensor lifetime, higher-order gradients, autograd.grad,
grad modes, anomaly detection, custom Functions, observers, and autograd.functional."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import gradlab as gl
from gradlab.autograd import AccumulateGrad, Function, backward_steps
from gradlab.autograd import functional as F
from gradlab.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from helpers import assert_close, leaf, randn, requires_torch, torch


def graph_nodes(root):
    """Every node reachable from ``root`` through next_functions (the expected set of steps)."""
    seen, stack = {root}, [root]
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None and child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def diamond(a, b):
    """A graph where a and b are each used more than once, with a shared intermediate."""
    h = a * b
    return ((h + a) * (h - b)).sum(), h


# --- backward_steps ------------------------------------------------------------------------------------


def test_backward_steps_one_step_per_node_in_reverse_topological_order():
    a, b = leaf(randn(3, seed=1)), leaf(randn(3, seed=2))
    out, _ = diamond(a, b)
    expected_nodes = graph_nodes(out.grad_fn)
    steps = list(backward_steps(out))

    assert [s.index for s in steps] == list(range(len(steps)))
    assert len(steps) == len(expected_nodes)
    assert {s.node for s in steps} == expected_nodes
    position = {s.node: i for i, s in enumerate(steps)}
    for s in steps:  # every consumer of a node's output ran before it
        for child, _ in s.node.next_functions:
            if child is not None:
                assert position[child] > position[s.node]
    accumulators = [s for s in steps if isinstance(s.node, AccumulateGrad)]
    assert len(accumulators) == 2
    assert {id(s.leaf) for s in accumulators} == {id(a), id(b)}
    assert all(s.leaf is None for s in steps if not isinstance(s.node, AccumulateGrad))


def test_backward_steps_gradients_match_backward_and_analytic():
    a_np, b_np = randn(4, seed=3), randn(4, seed=4)
    a1, b1 = leaf(a_np), leaf(b_np)
    for _ in backward_steps(diamond(a1, b1)[0]):
        pass
    a2, b2 = leaf(a_np), leaf(b_np)
    diamond(a2, b2)[0].backward()
    assert_close(a1.grad, a2.grad.numpy())
    assert_close(b1.grad, b2.grad.numpy())
    # out = sum((ab + a)(ab - b)) ; d/da = (b + 1)(ab - b) + b (ab + a) ; d/db = a (ab - b) + (ab + a)(a - 1)
    h = a_np * b_np
    assert_close(a1.grad, (b_np + 1) * (h - b_np) + b_np * (h + a_np))
    assert_close(b1.grad, a_np * (h - b_np) + (h + a_np) * (a_np - 1))


def test_backward_step_fields():
    x, w = leaf([1.0, 2.0, 3.0]), leaf([4.0, 5.0, 6.0])
    y = x * w
    seed = gl.tensor([1.0, 10.0, 100.0], dtype=gl.float64)
    steps = list(backward_steps(y, seed))
    first = steps[0]
    assert first.node is y.grad_fn
    assert len(first.grads_in) == 1 and len(first.grads_out) == len(first.node.next_functions) == 2
    assert_close(first.grads_in[0], [1.0, 10.0, 100.0])
    assert_close(first.grads_out[0], [4.0, 50.0, 600.0])
    assert_close(first.grads_out[1], [1.0, 20.0, 300.0])
    leaf_steps = {id(s.leaf): s for s in steps[1:]}
    assert_close(leaf_steps[id(x)].grads_in[0], [4.0, 50.0, 600.0])
    assert leaf_steps[id(x)].grads_out == ()


def test_backward_steps_runs_in_user_grad_mode_between_steps():
    x = leaf([1.0, 2.0])
    out = (x * x).sum()
    modes = [gl.is_grad_enabled() for _ in backward_steps(out)]
    assert modes and all(modes)
    with gl.no_grad():
        out = None
    y = (x * x).sum()
    with gl.no_grad():
        modes = [gl.is_grad_enabled() for _ in backward_steps(y)]
    assert modes and not any(modes)


def test_ready_nodes_run_newest_first_and_ready_leaves_before_ops():
    x = leaf([1.0])
    a = x * 2  # older
    b = x * 3  # newer
    out = a + b
    nodes = [s.node for s in backward_steps(out)]
    assert nodes[0] is out.grad_fn
    assert nodes[1] is b.grad_fn and nodes[2] is a.grad_fn
    w = leaf([2.0])
    steps = list(backward_steps((x * 3) + w))
    assert steps[1].leaf is w


# --- saved tensors are released ----------------------------------------------------------------------


def test_saved_intermediate_is_freed_after_backward():
    x, w = leaf(randn(3, seed=5)), leaf(randn(3, seed=6))
    y = x.exp()
    z = y * w
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is not None  # the graph keeps it alive for backward
    z.sum().backward()
    gc.collect()
    assert ref() is None


def test_backward_twice_through_freed_graph_raises():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    out = (x * w).sum()
    out.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        out.backward()


def test_retain_graph_allows_second_backward_and_accumulates():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    out = (x * w).sum()
    out.backward(retain_graph=True)
    first = x.grad.numpy().copy()
    out.backward()
    assert_close(x.grad, 2 * first)
    assert_close(w.grad, [2.0, 4.0])


def test_create_graph_keeps_graph_by_default():
    x = leaf([2.0])
    y = x * x * x
    gl.autograd.grad(y.sum(), x, create_graph=True)
    (again,) = gl.autograd.grad(y.sum(), x)  # create_graph retained the graph of y
    assert_close(again, [12.0])
    with pytest.raises(RuntimeError, match="second time"):  # ... and that pass freed it, as in PyTorch
        gl.autograd.grad(y.sum(), x)


# --- higher-order gradients ----------------------------------------------------------------------------


def test_second_and_third_derivative_of_cube():
    x_np = np.array([-1.5, 0.5, 2.0])
    x = leaf(x_np)
    (d1,) = gl.autograd.grad((x ** 3).sum(), x, create_graph=True)
    (d2,) = gl.autograd.grad(d1.sum(), x, create_graph=True)
    (d3,) = gl.autograd.grad(d2.sum(), x)
    assert_close(d1, 3 * x_np ** 2)
    assert_close(d2, 6 * x_np)
    assert_close(d3, [6.0, 6.0, 6.0])


def test_second_derivative_of_sin():
    x_np = np.array([0.3, 1.2, -2.0])
    x = leaf(x_np)
    (d1,) = gl.autograd.grad(x.sin().sum(), x, create_graph=True)
    (d2,) = gl.autograd.grad(d1.sum(), x)
    assert_close(d1, np.cos(x_np))
    assert_close(d2, -np.sin(x_np))


def test_mixed_second_derivative_of_product():
    x, y = leaf([2.0, 3.0]), leaf([5.0, 7.0])
    (dx,) = gl.autograd.grad((x * y * y).sum(), x, create_graph=True)  # y^2
    (dxdy,) = gl.autograd.grad(dx.sum(), y)  # 2y
    assert_close(dx, [25.0, 49.0])
    assert_close(dxdy, [10.0, 14.0])


def test_backward_create_graph_gives_differentiable_grad():
    x = leaf([1.0, 2.0])
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (g2,) = gl.autograd.grad(x.grad.sum(), x)
    assert_close(g2, [6.0, 12.0])


def test_gradgradcheck_on_composite():
    a, b = leaf(randn(3, seed=7)), leaf(randn(3, seed=8))
    assert gradgradcheck(lambda a, b: (a * b).sin() * a, (a, b))


# --- autograd.grad -----------------------------------------------------------------------------------


def test_grad_with_grad_outputs_and_leaves_untouched():
    x = leaf([1.0, 2.0, 3.0])
    y = x * x
    (g,) = gl.autograd.grad(y, x, gl.tensor([1.0, 0.5, 2.0], dtype=gl.float64))
    assert_close(g, [2.0, 2.0, 12.0])
    assert x.grad is None
    assert not g.requires_grad


def test_grad_returns_tuple_for_single_input():
    x = leaf([1.0])
    result = gl.autograd.grad((x * 2).sum(), x)
    assert isinstance(result, tuple) and len(result) == 1


def test_grad_unused_input():
    x, unused = leaf([1.0, 2.0]), leaf([3.0])
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph.*allow_unused=True"):
        gl.autograd.grad((x * 2).sum(), [x, unused])
    gx, gu = gl.autograd.grad((x * 2).sum(), [x, unused], allow_unused=True)
    assert_close(gx, [2.0, 2.0])
    assert gu is None
    _, gu = gl.autograd.grad((x * 2).sum(), [x, unused], materialize_grads=True)
    assert_close(gu, [0.0])
    with pytest.raises(ValueError, match="allow_unused"):
        gl.autograd.grad((x * 2).sum(), [x], allow_unused=False, materialize_grads=True)


def test_grad_input_must_require_grad():
    x, c = leaf([1.0]), leaf([1.0], requires_grad=False)
    with pytest.raises(RuntimeError, match="does not require grad"):
        gl.autograd.grad((x * c).sum(), [c])


def test_grad_retain_graph():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    out = (x * w).sum()
    gl.autograd.grad(out, x, retain_graph=True)
    (g,) = gl.autograd.grad(out, x)
    assert_close(g, [3.0, 4.0])
    with pytest.raises(RuntimeError, match="second time"):
        gl.autograd.grad(out, x)


def test_grad_wrt_non_leaf():
    x = leaf([1.0, 2.0])
    h = x * 3
    out = (h * h).sum()
    gh, gx = gl.autograd.grad(out, [h, x])
    assert_close(gh, [6.0, 12.0])
    assert_close(gx, [18.0, 36.0])


def test_grad_wrt_non_leaf_skips_work_below_it():
    x = leaf([1.0, 2.0])
    calls = []
    h = x * 3
    h.grad_fn.register_hook(lambda gi, go: calls.append("below"))
    out = (h * h).sum()
    gl.autograd.grad(out, h)
    assert calls == []


def test_grad_multiple_outputs():
    x = leaf([1.0, 2.0])
    a, b = x * x, x * 3
    (g,) = gl.autograd.grad([a, b], x, [gl.ones(2, dtype=gl.float64), gl.full((2,), 2.0, dtype=gl.float64)])
    assert_close(g, [2.0 + 6.0, 4.0 + 6.0])
    a, b = x * x, x * 3
    (g,) = gl.autograd.grad([a.sum(), b.sum()], x)
    assert_close(g, [5.0, 7.0])


def test_grad_of_output_with_respect_to_itself():
    x = leaf([1.0, 2.0])
    y = x * 2
    (g,) = gl.autograd.grad(y, y, gl.tensor([3.0, 4.0], dtype=gl.float64))
    assert_close(g, [3.0, 4.0])


def test_backward_inputs_argument():
    x, w = leaf([1.0, 2.0]), leaf([3.0, 4.0])
    (x * w).sum().backward(inputs=[x])
    assert_close(x.grad, [3.0, 4.0])
    assert w.grad is None
    (x * w).sum().backward(inputs=w)
    assert_close(w.grad, [1.0, 2.0])
    assert_close(x.grad, [3.0, 4.0])


def test_backward_inputs_non_leaf_accumulates_into_its_grad():
    x = leaf([1.0, 2.0])
    h = x * 3
    (h * 2).sum().backward(inputs=[h])
    assert_close(h.grad, [2.0, 2.0])
    assert x.grad is None


def test_backward_inputs_errors():
    x, c = leaf([1.0]), leaf([1.0], requires_grad=False)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * 2).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match="does not require grad"):
        (x * 2).sum().backward(inputs=[c])


def test_backward_errors():
    c = leaf([1.0, 2.0], requires_grad=False)
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        c.sum().backward()
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (x * 2).backward(gl.ones(3, dtype=gl.float64))


def test_autograd_backward_several_roots():
    x = leaf([1.0, 2.0])
    a, b = (x * x).sum(), (x * 3).sum()
    gl.autograd.backward([a, b])
    assert_close(x.grad, [5.0, 7.0])


def test_backward_root_also_reachable_from_another_root():
    x = leaf([1.0, 2.0])
    y = x * 2
    z = (y * y).sum()
    gl.autograd.backward([z, y], [None, gl.ones(2, dtype=gl.float64)])
    assert_close(x.grad, 2 * (2 * 2 * np.array([1.0, 2.0])) + 2)


def test_backward_on_leaf_itself():
    x = leaf(3.0)
    x.backward()
    assert_close(x.grad, 1.0)


def test_leaf_grad_accumulates_in_place_like_torch():
    x = leaf([1.0, 2.0])
    (x * 2).sum().backward()
    first = x.grad
    (x * 3).sum().backward()
    assert x.grad is first
    assert_close(first, [5.0, 5.0])


def test_first_grad_is_not_shared_between_leaves():
    a, b = leaf([1.0]), leaf([2.0])
    (a + b).sum().backward()
    with gl.no_grad():
        a.grad.mul_(10)
    assert_close(b.grad, [1.0])


def test_a_summed_gradient_passed_on_is_not_changed_by_later_sums():
    """p's gradient is a sum (q and r use p); its Add passes that one tensor to u's and v's nodes, and
    u then gets a second gradient (from w): adding it must not change what v's node was given."""
    x = leaf([1.0, 2.0])
    u, v = x * 2, x * 5
    w = u * 7
    p = u + v
    p.retain_grad()
    q, r = p * 1, p * 1
    (q.sum() + r.sum() + w.sum()).backward()
    # d/dx = 2·(2 + 7) through u, plus 5·2 through v
    assert_close(x.grad, [28.0, 28.0])
    assert_close(p.grad, [2.0, 2.0])


def test_a_summed_gradient_is_freed_once_its_node_has_run():
    x = leaf([1.0, 2.0])
    p = x * 2
    sums = []
    p.register_hook(lambda grad: sums.append(weakref.ref(grad)))  # the sum of the two gradients p gets
    out = (p * 1).sum() + (p * 1).sum()
    alive_at_the_leaf = [sums[0]() is not None for step in backward_steps(out) if step.leaf is x]
    assert alive_at_the_leaf == [False]


def test_the_gradients_a_step_showed_are_not_changed_by_later_steps():
    x = leaf([1.0, 2.0, 3.0])
    h = x * 3
    out = (h + h + h + h).sum() + (h * h).sum()  # h gathers five gradients
    shown = []
    for step in backward_steps(out):
        shown.append([None if g is None else (g, g.numpy().copy()) for g in step.grads_in + step.grads_out])
    for grads in shown:
        for pair in grads:
            if pair is not None:
                np.testing.assert_array_equal(pair[0].numpy(), pair[1])
    assert_close(x.grad, 3 * (4 + 2 * 3 * np.array([1.0, 2.0, 3.0])))


# --- grad modes --------------------------------------------------------------------------------------


def test_no_grad_context_and_nesting():
    x = leaf([1.0])
    assert gl.is_grad_enabled()
    with gl.no_grad():
        assert not gl.is_grad_enabled()
        assert not (x * 2).requires_grad
        with gl.enable_grad():
            assert gl.is_grad_enabled()
            assert (x * 2).requires_grad
            with gl.no_grad():
                assert not gl.is_grad_enabled()
            assert gl.is_grad_enabled()
        assert not gl.is_grad_enabled()
    assert gl.is_grad_enabled()


def test_grad_modes_restore_after_exception():
    with pytest.raises(ValueError):
        with gl.no_grad():
            raise ValueError
    assert gl.is_grad_enabled()


@pytest.mark.parametrize("make", [lambda f: gl.no_grad()(f), lambda f: gl.no_grad(f),
                                  lambda f: gl.inference_mode()(f), lambda f: gl.inference_mode(f),
                                  lambda f: gl.set_grad_enabled(False)(f)])
def test_disabling_decorators(make):
    x = leaf([1.0])

    def f(t):
        return gl.is_grad_enabled(), (t * 2).requires_grad

    decorated = make(f)
    assert gl.is_grad_enabled()  # decorating switches nothing
    assert decorated(x) == (False, False)
    assert gl.is_grad_enabled()
    assert decorated.__name__ == "f"


@pytest.mark.parametrize("make", [lambda f: gl.enable_grad()(f), lambda f: gl.enable_grad(f),
                                  lambda f: gl.set_grad_enabled(True)(f)])
def test_enabling_decorators_inside_no_grad(make):
    decorated = make(gl.is_grad_enabled)
    with gl.no_grad():
        assert decorated() is True
        assert not gl.is_grad_enabled()


def test_no_grad_on_a_generator_function_holds_inside_the_generator_only():
    x = gl.tensor([1.0, 2.0], requires_grad=True)

    @gl.no_grad()
    def doubled(n):
        for _ in range(n):
            received = yield (x * 2).requires_grad, gl.is_grad_enabled()
            assert received in (None, "ping")
        return "finished"

    steps = doubled(3)
    assert next(steps) == (False, False)
    assert gl.is_grad_enabled() and (x * 2).requires_grad  # the caller's mode between yields
    assert steps.send("ping") == (False, False)
    assert list(steps) == [(False, False)]
    assert gl.is_grad_enabled()


def test_no_grad_generator_sees_what_is_thrown_into_it_in_its_mode():
    @gl.no_grad()
    def guarded():
        try:
            yield 1
        except ValueError:
            yield gl.is_grad_enabled()

    steps = guarded()
    next(steps)
    assert steps.throw(ValueError("stop")) is False
    assert gl.is_grad_enabled()
    steps.close()
    assert gl.is_grad_enabled()


def test_set_grad_enabled_as_function_and_context():
    try:
        gl.set_grad_enabled(False)
        assert not gl.is_grad_enabled()
    finally:
        gl.set_grad_enabled(True)
    assert gl.is_grad_enabled()
    with gl.set_grad_enabled(False):
        assert not gl.is_grad_enabled()
        with gl.set_grad_enabled(True):
            assert gl.is_grad_enabled()
        assert not gl.is_grad_enabled()
    assert gl.is_grad_enabled()


def test_inference_mode():
    x = leaf([1.0])
    with gl.inference_mode():
        assert not gl.is_grad_enabled()
        assert gl.autograd.is_inference_mode_enabled()
        assert not (x * 2).requires_grad
        with gl.inference_mode(False):
            assert gl.is_grad_enabled() and not gl.autograd.is_inference_mode_enabled()
        assert gl.autograd.is_inference_mode_enabled()
    assert gl.is_grad_enabled() and not gl.autograd.is_inference_mode_enabled()


@requires_torch
def test_grad_mode_nesting_matches_torch():
    observed, expected = [], []
    for lib, out in ((gl, observed), (torch, expected)):
        with lib.inference_mode():
            out.append(lib.is_grad_enabled())
            with lib.enable_grad():
                out.append(lib.is_grad_enabled())
            with lib.no_grad():
                with lib.inference_mode(False):
                    out.append(lib.is_grad_enabled())
        out.append(lib.is_grad_enabled())
    assert observed == expected


# --- anomaly detection ---------------------------------------------------------------------------


def test_detect_anomaly_names_the_op_and_forward_line():
    x = leaf([0.0, 1.0, 4.0])
    with gl.autograd.detect_anomaly():
        out = (x.sqrt() * 0).sum()  # sqrt'(0) = inf, and 0 * inf = nan
        with pytest.raises(RuntimeError,
                           match="Function 'SqrtBackward0' returned nan values in its 0th output") as info:
            out.backward()
    assert "out = (x.sqrt() * 0).sum()" in str(info.value)
    assert "test_autograd.py" in str(info.value)


def test_without_anomaly_mode_nan_passes_silently():
    x = leaf([0.0, 1.0])
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.numpy()[0])
    assert not gl.autograd.is_anomaly_enabled()


class NanBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        return grad * float("nan")


def test_detect_anomaly_with_custom_function_as_decorator():
    x = leaf([1.0, 2.0])

    @gl.autograd.detect_anomaly()
    def run():
        y = NanBackward.apply(x) * 2
        y.sum().backward()

    with pytest.raises(RuntimeError, match="NanBackwardBackward' returned nan") as info:
        run()
    assert "y = NanBackward.apply(x) * 2" in str(info.value)
    assert not gl.autograd.is_anomaly_enabled()


class FailingBackward(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 1

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("broken backward")


def test_detect_anomaly_notes_the_forward_of_a_failing_backward():
    x = leaf([1.0])
    with gl.autograd.detect_anomaly():
        y = FailingBackward.apply(x)
        with pytest.raises(ValueError, match="broken backward") as info:
            y.sum().backward()
    notes = "".join(getattr(info.value, "__notes__", []))
    assert "y = FailingBackward.apply(x)" in notes


# --- custom Functions ----------------------------------------------------------------------------------


class ScaledMul(Function):
    """out = a * b * scale, with a non-tensor argument."""

    @staticmethod
    def forward(ctx, a, b, scale):
        ctx.save_for_backward(a, b)
        ctx.scale = scale
        ctx.seen_needs = ctx.needs_input_grad
        return a * b * scale

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad * b * ctx.scale if ctx.needs_input_grad[0] else None
        grad_b = grad * a * ctx.scale if ctx.needs_input_grad[1] else None
        return grad_a, grad_b, None


def test_custom_function_gradients_and_needs_input_grad():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 4.0], requires_grad=False)
    out = ScaledMul.apply(a, b, 0.5)
    assert out.grad_fn.name() == "ScaledMulBackward"
    assert out.grad_fn.seen_needs == (True, False, False)
    out.sum().backward()
    assert_close(a.grad, [1.5, 2.0])
    assert b.grad is None
    a2, b2 = leaf(randn(3, seed=9)), leaf(randn(3, seed=10))
    assert gradcheck(lambda a, b: ScaledMul.apply(a, b, 3.0), (a2, b2))


def test_custom_function_without_grad_records_nothing():
    a, b = leaf([1.0]), leaf([2.0])
    with gl.no_grad():
        out = ScaledMul.apply(a, b, 2.0)
    assert out.grad_fn is None and not out.requires_grad


class SplitSum(Function):
    """Two outputs: (a + b, a * b)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return a + b, a * b

    @staticmethod
    def backward(ctx, grad_sum, grad_prod):
        a, b = ctx.saved_tensors
        ctx.received = (grad_sum, grad_prod)
        return grad_sum + grad_prod * b, grad_sum + grad_prod * a


def test_custom_function_multiple_outputs():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 5.0])
    s, p = SplitSum.apply(a, b)
    assert s.grad_fn is p.grad_fn
    (s * 2 + p).sum().backward()
    assert_close(a.grad, [2.0 + 3.0, 2.0 + 5.0])
    assert_close(b.grad, [2.0 + 1.0, 2.0 + 2.0])


def test_custom_function_unused_output_gets_zeros_or_none():
    a, b = leaf([1.0, 2.0]), leaf([3.0, 5.0])
    s, _ = SplitSum.apply(a, b)
    node = s.grad_fn
    s.sum().backward()
    assert_close(node.received[1], [0.0, 0.0])
    assert_close(a.grad, [1.0, 1.0])


class SplitSumNoMaterialize(SplitSum):
    @staticmethod
    def forward(ctx, a, b):
        ctx.set_materialize_grads(False)
        return SplitSum.forward(ctx, a, b)

    @staticmethod
    def backward(ctx, grad_sum, grad_prod):
        ctx.received = (grad_sum, grad_prod)
        return grad_sum, grad_sum


def test_custom_function_set_materialize_grads_false():
    a, b = leaf([1.0]), leaf([3.0])
    s, _ = SplitSumNoMaterialize.apply(a, b)
    node = s.grad_fn
    s.sum().backward()
    assert node.received[1] is None


class ValueAndFlag(Function):
    @staticmethod
    def forward(ctx, x):
        flag = x * 0 + 1
        ctx.mark_non_differentiable(flag)
        return x * 2, flag

    @staticmethod
    def backward(ctx, grad, grad_flag):
        return grad * 2


def test_custom_function_mark_non_differentiable():
    x = leaf([1.0, 2.0])
    value, flag = ValueAndFlag.apply(x)
    assert value.requires_grad and not flag.requires_grad and flag.grad_fn is None
    value.sum().backward()
    assert_close(x.grad, [2.0, 2.0])


class Identity(Function):
    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 1


def test_custom_function_returning_its_input():
    x = leaf([1.0, 2.0])
    y = Identity.apply(x)
    assert y is not x and y.grad_fn is not None and x.is_leaf
    (y * 3).sum().backward()
    assert_close(x.grad, [3.0, 3.0])


class TooManyGrads(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class WrongShape(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad.sum().reshape(1)


class NotATensor(Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return np.ones(2)


class SavesANumber(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, 3)
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_custom_function_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"function TooManyGradsBackward returned an incorrect number of gradients \(expected 1, got 2\)"):
        TooManyGrads.apply(x).sum().backward()
    with pytest.raises(RuntimeError, match=r"Function WrongShapeBackward returned an invalid gradient at index 0 - got \[1\] but expected shape compatible with \[2\]"):
        WrongShape.apply(x).sum().backward()
    with pytest.raises(TypeError, match="NotATensorBackward returned an invalid gradient at index 0.*ndarray"):
        NotATensor.apply(x).sum().backward()
    with pytest.raises(TypeError, match="save_for_backward can only save tensors.*argument 1 is of type int"):
        SavesANumber.apply(x)


def test_function_without_backward_raises_clearly():
    class ForwardOnly(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    x = leaf([1.0])
    with pytest.raises(NotImplementedError, match="ForwardOnly must define backward"):
        ForwardOnly.apply(x).sum().backward()


@requires_torch
def test_custom_function_matches_torch():
    a_np, b_np = randn(4, seed=11), randn(4, seed=12)

    class TorchScaledMul(torch.autograd.Function):
        forward = staticmethod(ScaledMul.forward.__func__ if hasattr(ScaledMul.forward, "__func__") else ScaledMul.forward)
        backward = staticmethod(ScaledMul.backward)

    a, b = leaf(a_np), leaf(b_np)
    ta, tb = torch.tensor(a_np, requires_grad=True), torch.tensor(b_np, requires_grad=True)
    (ScaledMul.apply(a, b, 1.5).sin()).sum().backward()
    (TorchScaledMul.apply(ta, tb, 1.5).sin()).sum().backward()
    assert_close(a.grad, ta.grad)
    assert_close(b.grad, tb.grad)


# --- observers ----------------------------------------------------------------------------------------


def test_subscribe_records_each_op_and_stops_on_remove():
    records = []
    x, c = leaf([1.0, 2.0]), leaf([3.0, 4.0], requires_grad=False)
    handle = gl.autograd.subscribe(records.append)
    try:
        y = x * c
        z = y + 1.0
        with gl.no_grad():
            w = c * 2
    finally:
        handle.remove()
    assert [r.function.__name__ for r in records] == ["Mul", "Add", "Mul"]
    mul = records[0]
    assert mul.inputs[0] is x and mul.inputs[1] is c
    assert mul.outputs == (y,) and mul.node is y.grad_fn
    assert records[1].outputs[0] is z and records[1].inputs[1] == 1.0
    assert records[2].node is None and records[2].outputs[0] is w
    count = len(records)
    _ = x * c
    assert len(records) == count
    assert not gl.autograd.observers.active


def test_subscribe_as_context_manager_and_bad_argument():
    records = []
    with gl.autograd.subscribe(records.append):
        _ = leaf([1.0]) * 2
    _ = leaf([1.0]) * 2
    assert len(records) == 1
    with pytest.raises(TypeError, match="callable"):
        gl.autograd.subscribe(42)


def test_no_observer_attached_means_no_records():
    assert gl.autograd.observers.active == []
    late = []
    y = leaf([1.0]) * 2
    handle = gl.autograd.subscribe(late.append)
    handle.remove()
    assert late == [] and y.grad_fn is not None


# --- autograd.functional ------------------------------------------------------------------------------


def cubic_plus_cross(x):
    return (x ** 3).sum() + x[0] * x[1]


def test_hessian_against_analytic():
    x_np = np.array([1.0, -2.0, 0.5])
    H = F.hessian(cubic_plus_cross, gl.tensor(x_np))
    expected = np.diag(6 * x_np)
    expected[0, 1] = expected[1, 0] = 1.0
    assert isinstance(H, gl.Tensor) and not H.requires_grad
    assert_close(H, expected)


def test_hessian_of_two_inputs_is_tuple_of_tuples():
    x_np, y_np = np.array([1.0, 2.0]), np.array([3.0])
    H = F.hessian(lambda x, y: (x * x * y).sum(), (gl.tensor(x_np), gl.tensor(y_np)))
    assert isinstance(H, tuple) and all(isinstance(row, tuple) and len(row) == 2 for row in H)
    assert_close(H[0][0], np.diag(2 * y_np.repeat(2)))
    assert_close(H[0][1], (2 * x_np).reshape(2, 1))
    assert_close(H[1][0], (2 * x_np).reshape(1, 2))
    assert_close(H[1][1], [[0.0]])


def test_hessian_rejects_non_scalar():
    with pytest.raises(RuntimeError, match="should contain a single element"):
        F.hessian(lambda x: x * 2, gl.tensor([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        F.hessian(lambda x: (x.sum(), x.sum()), gl.tensor([1.0, 2.0]))


def test_jacobian_against_analytic_and_structure():
    x_np, W_np = randn(3, seed=13), randn(2, 3, seed=14)
    x, W = gl.tensor(x_np), gl.tensor(W_np)
    J = F.jacobian(lambda x: x.exp() * x, x)
    assert isinstance(J, gl.Tensor) and J.shape == (3, 3)
    assert_close(J, np.diag((1 + x_np) * np.exp(x_np)))
    Jx, JW = F.jacobian(lambda x, W: W @ x, (x, W))
    assert Jx.shape == (2, 3) and JW.shape == (2, 2, 3)
    assert_close(Jx, W_np)
    expected_JW = np.zeros((2, 2, 3))
    for i in range(2):
        expected_JW[i, i, :] = x_np
    assert_close(JW, expected_JW)
    (J_exp, J_sum) = F.jacobian(lambda x: (x.exp(), x.sum()), x)
    assert J_exp.shape == (3, 3) and J_sum.shape == (3,)
    nested = F.jacobian(lambda x, W: (W @ x, x * 2), (x, W))
    assert len(nested) == 2 and all(len(row) == 2 for row in nested)
    assert_close(nested[1][0], 2 * np.eye(3))
    assert_close(nested[1][1], np.zeros((3, 2, 3)))


def test_jacobian_forward_mode_equals_reverse_mode():
    x, W = gl.tensor(randn(3, seed=15)), gl.tensor(randn(2, 3, seed=16))
    f = lambda x, W: ((W @ x).tanh(), (x * x).sum())
    reverse = F.jacobian(f, (x, W))
    forward = F.jacobian(f, (x, W), strategy="forward-mode")
    for r_row, f_row in zip(reverse, forward):
        for r, f_ in zip(r_row, f_row):
            assert_close(f_, r.numpy())


def test_jacobian_create_graph_is_differentiable():
    x_np = np.array([0.5, -1.0])
    x = leaf(x_np)
    J = F.jacobian(lambda x: x ** 3, x, create_graph=True)
    assert J.requires_grad
    (g,) = gl.autograd.grad(J.sum(), x)  # d/dx of sum(diag(3x^2)) = 6x
    assert_close(g, 6 * x_np)


def test_jacobian_unused_input_and_strict():
    x, y = gl.tensor([1.0, 2.0]), gl.tensor([3.0])
    _, Jy = F.jacobian(lambda x, y: x * 2, (x, y))
    assert_close(Jy, np.zeros((2, 1)))
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        F.jacobian(lambda x, y: x * 2, (x, y), strict=True)
    with pytest.raises(RuntimeError, match="does not require gradients"):
        F.jacobian(lambda x: gl.ones(2), x, strict=True)
    assert_close(F.jacobian(lambda x: gl.ones(2), x), np.zeros((2, 2)))


def test_jacobian_bad_inputs():
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        F.jacobian(lambda x: x, [gl.tensor([1.0])])
    with pytest.raises(TypeError, match="outputs of the user-provided function"):
        F.jacobian(lambda x: [x], gl.tensor([1.0]))


def test_vjp_and_jvp_against_jacobian_products():
    x_np, W_np = randn(3, seed=17), randn(4, 3, seed=18)
    f = lambda x: (gl.tensor(W_np) @ x).sin()
    x = gl.tensor(x_np)
    J = F.jacobian(f, x).numpy()
    u, v = randn(4, seed=19), randn(3, seed=20)
    out, vjp = F.vjp(f, x, gl.tensor(u))
    assert_close(out, np.sin(W_np @ x_np))
    assert_close(vjp, u @ J)
    out, jvp = F.jvp(f, x, gl.tensor(v))
    assert_close(jvp, J @ v)
    assert not out.requires_grad and not jvp.requires_grad


def test_vjp_jvp_tuple_structure_and_v_errors():
    x, y = gl.tensor([1.0, 2.0]), gl.tensor([3.0, 4.0])
    outs, grads = F.vjp(lambda x, y: (x * y, x + y), (x, y), (gl.ones(2), gl.ones(2)))
    assert isinstance(outs, tuple) and isinstance(grads, tuple)
    assert_close(grads[0], [4.0, 5.0])
    assert_close(grads[1], [2.0, 3.0])
    _, g = F.vjp(lambda x: (x * x).sum(), x)
    assert_close(g, [2.0, 4.0])
    with pytest.raises(RuntimeError, match="v can only be None if the user-provided function returns a single Tensor with a single element"):
        F.vjp(lambda x: x * 2, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \(2,\) but got \(3,\)"):
        F.vjp(lambda x: x * 2, x, gl.ones(3))
    with pytest.raises(RuntimeError, match="v can only be None if the input to the user-provided function is a single Tensor with a single element"):
        F.jvp(lambda x: x * 2, x)
    with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1"):
        F.jvp(lambda x, y: x * y, (x, y), (gl.ones(2),))
    _, j = F.jvp(lambda s: s * 3, gl.tensor(2.0))
    assert_close(j, 3.0)


def test_vjp_unused_input_zero_or_strict_error():
    x, y = gl.tensor([1.0, 2.0]), gl.tensor([5.0])
    _, (_, gy) = F.vjp(lambda x, y: (x * 2).sum(), (x, y))
    assert_close(gy, [0.0])
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.vjp(lambda x, y: (x * 2).sum(), (x, y), strict=True)


def test_hvp_and_vhp_against_hessian():
    x_np, v_np = np.array([1.0, -2.0, 0.5]), np.array([0.3, 0.1, -0.7])
    H = F.hessian(cubic_plus_cross, gl.tensor(x_np)).numpy()
    value, hv = F.hvp(cubic_plus_cross, gl.tensor(x_np), gl.tensor(v_np))
    _, vh = F.vhp(cubic_plus_cross, gl.tensor(x_np), gl.tensor(v_np))
    assert value.shape == () and not value.requires_grad
    assert_close(value, (x_np ** 3).sum() + x_np[0] * x_np[1])
    assert_close(hv, H @ v_np)
    assert_close(vh, v_np @ H)


def test_functional_create_graph_flows_to_original_inputs():
    x = leaf([1.0, 2.0])
    _, vjp = F.vjp(lambda t: (t ** 3).sum(), x, create_graph=True)  # 3x^2
    assert vjp.requires_grad
    vjp.sum().backward()
    assert_close(x.grad, [6.0, 12.0])


def test_functional_does_not_touch_input_grads():
    x = leaf([1.0, 2.0])
    F.jacobian(lambda t: t * t, x)
    F.hessian(lambda t: (t * t).sum(), x)
    assert x.grad is None


@requires_torch
@pytest.mark.parametrize("name", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_functional_matches_torch(name):
    import torch.autograd.functional as TF

    x_np, y_np = randn(3, seed=21), randn(2, 3, seed=22)

    def vector_fn(lib):
        return lambda x, y: ((x.exp() * y).sum(0), (x ** 3).sum() + x[0] * x[1])

    def scalar_fn(lib):
        return lambda x, y: (x.sin() * y).sum() + (x ** 3).sum()

    ours = (gl.tensor(x_np), gl.tensor(y_np))
    theirs = (torch.tensor(x_np), torch.tensor(y_np))
    v_in = (randn(3, seed=23), randn(2, 3, seed=24))
    v_out = (randn(3, seed=25), np.array(0.7))
    args = {
        "jacobian": ((vector_fn,), {}),
        "hessian": ((scalar_fn,), {}),
        "vjp": ((vector_fn,), {"v": v_out}),
        "jvp": ((vector_fn,), {"v": v_in}),
        "hvp": ((scalar_fn,), {"v": v_in}),
        "vhp": ((scalar_fn,), {"v": v_in}),
    }[name]
    (make,), extra = args
    kwargs_ours = {k: tuple(gl.tensor(a) for a in val) for k, val in extra.items()}
    kwargs_theirs = {k: tuple(torch.tensor(a) for a in val) for k, val in extra.items()}
    result = getattr(F, name)(make(gl), ours, **kwargs_ours)
    expected = getattr(TF, name)(make(torch), theirs, **kwargs_theirs)

    def compare(a, b):
        if isinstance(b, (tuple, list)):
            assert isinstance(a, tuple) and len(a) == len(b)
            for a_i, b_i in zip(a, b):
                compare(a_i, b_i)
        else:
            assert isinstance(a, gl.Tensor)
            assert_close(a, b.detach().numpy())

    compare(result, expected)


@requires_torch
def test_functional_single_tensor_structure_matches_torch():
    import torch.autograd.functional as TF

    x_np = randn(3, seed=26)
    for fn in (lambda x: x.exp() * x, lambda x: (x.exp(), x * 2)):
        ours = F.jacobian(fn, gl.tensor(x_np))
        theirs = TF.jacobian(fn, torch.tensor(x_np))
        assert type(ours) is tuple if isinstance(theirs, tuple) else isinstance(ours, gl.Tensor)
    H = F.hessian(cubic_plus_cross, gl.tensor(x_np))
    assert_close(H, TF.hessian(cubic_plus_cross, torch.tensor(x_np)).numpy())


# --- gradcheck itself ------------------------------------------------------------------------------------


class WrongDerivative(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * x  # should be 2x


def test_gradcheck_catches_a_wrong_backward():
    x = leaf(randn(3, seed=30))
    with pytest.raises(GradcheckError, match="Jacobian mismatch for input 0"):
        gradcheck(WrongDerivative.apply, (x,))
    assert gradcheck(WrongDerivative.apply, (x,), raise_exception=False) is False
    assert gradcheck(lambda t: t * t, (x,))


def test_gradcheck_needs_an_input_requiring_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda t: t * 2, (leaf([1.0], requires_grad=False),))


def test_gradcheck_with_output_aliasing_input():
    x = leaf(randn(2, 3, seed=31))
    assert gradcheck(lambda t: t.reshape(6), (x,))
    assert gradcheck(lambda t: t.t(), (x,))


def test_grad_wrt_non_leaf_keeps_the_saved_tensors_below_it():
    x = leaf([1.0, 2.0])
    h = (x * x) * 2  # the node of x * x saves x; it is below h, so grad(out, h) never runs it
    out = (h * 3).sum()
    (gh,) = gl.autograd.grad(out, h)
    assert_close(gh, [3.0, 3.0])
    h.sum().backward()  # still possible: only the nodes that ran were released, as in PyTorch
    assert_close(x.grad, [4.0, 8.0])


class DoubleInPlace(Function):
    @staticmethod
    def forward(ctx, x):
        x.mul_(2)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * 2


def test_custom_in_place_function_with_mark_dirty():
    a = leaf([1.0, 2.0])
    x = a * 1
    y = DoubleInPlace.apply(x)
    assert y is x and x.grad_fn.name() == "DoubleInPlaceBackward"
    assert_close(x, [2.0, 4.0])
    (x * 3).sum().backward()
    assert_close(a.grad, [6.0, 6.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place operation"):
        DoubleInPlace.apply(leaf([1.0]))


def test_hessian_and_jvp_with_create_graph_are_differentiable():
    x_np = np.array([0.5, -1.0, 2.0])
    x = leaf(x_np)
    H = F.hessian(lambda t: (t ** 4).sum(), x, create_graph=True)  # diag(12 x^2)
    assert H.requires_grad
    (g,) = gl.autograd.grad(H.sum(), x)
    assert_close(g, 24 * x_np)
    _, jv = F.jvp(lambda t: t ** 3, x, gl.ones(3, dtype=gl.float64), create_graph=True)  # 3x^2
    (g,) = gl.autograd.grad(jv.sum(), x)
    assert_close(g, 6 * x_np)


def test_gradcheck_accepts_inputs_with_no_elements():
    x = gl.zeros(0, 3, dtype=gl.float64, requires_grad=True)
    assert gl.autograd.gradcheck(lambda t: t * 2, (x,))
    assert gl.autograd.gradgradcheck(lambda t: t * t, (x,))

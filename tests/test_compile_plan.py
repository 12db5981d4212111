"""The planned program itself: when gradients and updates happen, memory, and the devices it runs on.

(tests/test_compile_step.py compares whole training runs with eager; these check the planner's
decisions one at a time, each against eager autograd in float64.)
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import gradlab as gl
from gradlab.compile import passes

nn, F = gl.nn, gl.nn.functional


def mlp(width=8, depth=3):
    layers = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, 3)).double()


def batch(n=6, width=8, seed=0):
    rng = np.random.default_rng(seed)
    return gl.tensor(rng.standard_normal((n, width)), dtype=gl.float64), gl.tensor(rng.integers(0, 3, n))


def close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def compiled_program(step):
    (compiled,) = step.cache.values()
    return compiled.program


def test_each_gradient_is_added_as_soon_as_it_is_final_and_the_update_follows_it():
    model = mlp()
    opt = gl.optim.SGD(model.parameters(), lr=0.1)
    step = gl.compile.make_step(model, F.cross_entropy, optimizer=opt)
    x, y = batch()
    step(x, y)
    step(x, y)
    instrs = compiled_program(step).instrs
    phases = [ins.phase for ins in instrs]
    # the last layer's parameters are final first: their accumulate and update come before the first layer's backward
    first_update = phases.index("update")
    assert instrs[first_update - 1].name == "accumulate into .grad"
    first_layer = [n for n, ins in enumerate(instrs) if ins.phase == "backward" and ins.op is not None and ins.op.index == 0]
    assert first_layer and min(first_layer) > first_update
    assert phases.count("update") == len(list(model.parameters()))


def test_learning_rate_schedules_and_param_groups_are_read_at_run_time():
    torch_like = mlp()
    model = copy.deepcopy(torch_like)
    groups = lambda m: [{"params": m[0].parameters(), "lr": 0.05}, {"params": list(m.parameters())[2:]}]  # noqa: E731
    opt1 = gl.optim.SGD(groups(torch_like), lr=0.1, momentum=0.9)
    opt2 = gl.optim.SGD(groups(model), lr=0.1, momentum=0.9)
    sched1 = gl.optim.lr_scheduler.StepLR(opt1, 2, gamma=0.5)
    sched2 = gl.optim.lr_scheduler.StepLR(opt2, 2, gamma=0.5)
    step = gl.compile.make_step(model, F.cross_entropy, optimizer=opt2)
    x, y = batch()
    for _ in range(6):
        opt1.zero_grad()
        F.cross_entropy(torch_like(x), y).backward()
        opt1.step()
        sched1.step()
        step(x, y)
        sched2.step()
    for p1, p2 in zip(torch_like.parameters(), model.parameters()):
        close(p1, p2)


def test_a_parameter_used_twice_gets_both_gradients_before_it_moves():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Linear(8, 8).double()
            self.out = nn.Linear(8, 3).double()

        def forward(self, x):
            return self.out(self.w(gl.tanh(self.w(x))))

    eager = Tied()
    model = copy.deepcopy(eager)
    opt1, opt2 = gl.optim.AdamW(eager.parameters(), lr=0.01), gl.optim.AdamW(model.parameters(), lr=0.01)
    step = gl.compile.make_step(model, F.cross_entropy, optimizer=opt2)
    x, y = batch()
    for _ in range(4):
        opt1.zero_grad()
        F.cross_entropy(eager(x), y).backward()
        opt1.step()
        step(x, y)
        for p1, p2 in zip(eager.parameters(), model.parameters()):
            close(p1.grad, p2.grad)
            close(p1, p2)


def test_without_an_optimizer_gradients_accumulate_as_backward_does():
    eager = mlp()
    model = copy.deepcopy(eager)
    step = gl.compile.make_step(model, F.cross_entropy)
    x, y = batch()
    for _ in range(3):
        F.cross_entropy(eager(x), y).backward()
        step(x, y)
    held = model[0].weight.grad
    step(x, y)
    F.cross_entropy(eager(x), y).backward()
    assert model[0].weight.grad is held  # added in place, as backward adds into an existing .grad
    for p1, p2 in zip(eager.parameters(), model.parameters()):
        close(p1.grad, p2.grad)


def test_a_gradient_made_for_the_grad_alone_is_handed_over_and_later_runs_do_not_touch_it():
    model = mlp()
    step = gl.compile.make_step(model, F.cross_entropy)
    x, y = batch()
    step(x, y)
    for p in model.parameters():
        p.grad = None
    step(x, y)
    kept = {name: p.grad.numpy().copy() for name, p in model.named_parameters()}
    grads = {name: p.grad for name, p in model.named_parameters()}
    for p in model.parameters():
        p.grad = None
    step(*batch(seed=1))  # a new batch: different gradients, written into new arrays
    for name, g in grads.items():
        np.testing.assert_array_equal(g.numpy(), kept[name])


def test_peak_memory_of_the_plan_falls_with_segments_and_matches_the_live_values():
    model = mlp(width=32, depth=8)
    x, y = batch(n=16, width=32)
    peaks = {}
    for segments in (1, 2, 4):
        step = gl.compile.make_step(model, F.cross_entropy, segments=segments)
        step(x, y)
        peaks[segments] = step.memory()["peak_bytes"]
    assert peaks[1] > peaks[2] > peaks[4] > 0
    # one program holds every activation backward needs: at least the 8 ReLU outputs of 16×32 float64 at once
    assert peaks[1] >= 8 * 16 * 32 * 8


def test_lifetimes_let_go_of_each_slot_at_its_last_reader():
    model = mlp()
    step = gl.compile.make_step(model, F.cross_entropy)
    x, y = batch()
    step(x, y)
    program = compiled_program(step)
    last = passes.lifetimes(program, views=False)
    for slot, n in last.items():
        later = [i for ins in program.instrs[n + 1:] for i in ins.ins]
        assert slot not in later


def test_the_listing_names_forward_backward_and_update_instructions():
    model = mlp()
    step = gl.compile.make_step(model, F.cross_entropy, optimizer=gl.optim.SGD(model.parameters(), lr=0.1))
    step(*batch())
    text = compiled_program(step).listing()
    for word in ("for  ", "bac  ", "upd  ", "Linear", "SGD update", "accumulate into .grad"):
        assert word in text


def test_dropout_compiles_and_draws_a_new_mask_every_step_as_eager_does():
    eager = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.5), nn.Linear(8, 3)).double()
    model = copy.deepcopy(eager)
    step = gl.compile.make_step(model, F.cross_entropy)
    x, y = batch()
    first_layer = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no CompileWarning: the draw is a call the program makes every run
        for seed in (1, 2, 3):
            model.zero_grad()
            eager.zero_grad()
            gl.manual_seed(seed)
            step(x, y)
            gl.manual_seed(seed)
            F.cross_entropy(eager(x), y).backward()  # the same draw: the same gradients, bit for bit
            for p1, p2 in zip(eager.parameters(), model.parameters()):
                assert np.array_equal(p1.grad.numpy(), p2.grad.numpy())
            first_layer.append(model[0].weight.grad.numpy().copy())
    assert step.fallback is None and step.traces == 1
    assert not np.array_equal(first_layer[1], first_layer[2])  # a new mask each run, not the traced one


class Positives(gl.autograd.Function):
    """The positive elements of x, as a 1-D tensor: how many depends on the data."""

    @staticmethod
    def forward(ctx, x):
        mask = x.array > 0
        ctx.mask, ctx.shape = mask, x.shape
        return x._wrap(x.array[mask])

    @staticmethod
    def backward(ctx, grad):
        full = np.zeros(ctx.shape, grad.array.dtype)
        full[ctx.mask] = grad.array
        return grad._wrap(full)


def test_a_function_computing_with_numpy_on_its_arrays_runs_eagerly_and_says_why():
    """Positives works on ``x.array`` with numpy itself: its arrays come from no backend call the record
    saw, so no program can say what it does."""
    model = nn.Linear(2, 1, bias=False).double()
    with gl.no_grad():
        model.weight.fill_(1.0)
    step = gl.compile.make_step(model, lambda out, y: (Positives.apply(out.flatten()) ** 2).sum())
    two = gl.tensor([[1.0, 0.0], [-1.0, 0.0], [2.0, 0.0], [-2.0, 0.0]], dtype=gl.float64)
    with pytest.warns(gl.compile.CompileWarning, match=r"passed to .* \(in Pow\), was made outside the backend's calls"):
        step(two, two)
    loss = step(two.abs(), two)
    np.testing.assert_allclose(loss.item(), 10.0, rtol=1e-12)  # 1 + 1 + 4 + 4, computed eagerly
    assert step.cache == {} and "outside the backend's calls" in step.fallback


def test_indexing_with_a_tensor_compiles_and_follows_the_index_each_call():
    model = nn.Linear(2, 1).double()
    twin = copy.deepcopy(model)
    x = gl.randn(4, 2, dtype=gl.float64)
    masks = [gl.tensor([1.0, -1.0, 1.0, -1.0]), gl.tensor([-1.0, 1.0, 1.0, -1.0]), gl.tensor([-1.0, -1.0, 1.0, 1.0])]
    for loss_fn in (lambda out, y: out[y > 0].sum() * 3, lambda out, y: out.flatten().masked_select(y > 0).pow(2).sum()):
        step = gl.compile.make_step(twin, loss_fn)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the index is an array the program reads each run: nothing to fall back for
            for y in masks:  # the same count of True each time, at other places
                model.zero_grad()
                twin.zero_grad()
                want = loss_fn(model(x), y)
                want.backward()
                assert step(x, y).item() == want.item()
                for p, q in zip(model.parameters(), twin.parameters()):
                    assert np.array_equal(p.grad.numpy(), q.grad.numpy())
        assert step.traces == 1 and step.fallback is None
    with pytest.warns(gl.compile.CompileWarning, match="shape changed"):
        step(x, gl.tensor([1.0, 1.0, 1.0, -1.0]))  # three True: x[mask] has another shape than the program's


def test_mlx_runs_the_step_through_mx_compile_with_eager_numbers():
    pytest.importorskip("mlx.core")
    gl.manual_seed(0)
    eager = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2)).to("mlx")
    model = copy.deepcopy(eager)
    opt1, opt2 = gl.optim.SGD(eager.parameters(), lr=0.1), gl.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = lambda out, t: ((out - t) ** 2).mean()  # noqa: E731
    step = gl.compile.make_step(model, loss_fn, optimizer=opt2)
    x, t = gl.randn(5, 6, device="mlx"), gl.randn(5, 2, device="mlx")
    for _ in range(4):
        opt1.zero_grad()
        l1 = loss_fn(eager(x), t)
        l1.backward()
        opt1.step()
        l2 = step(x, t)
        np.testing.assert_allclose(l1.item(), l2.item(), rtol=1e-5)
    (compiled,) = step.cache.values()
    assert compiled._run.state["compiled"]  # mx.compile traced the program
    for p1, p2 in zip(eager.parameters(), model.parameters()):
        np.testing.assert_allclose(p1.detach().cpu().numpy(), p2.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_the_cuda_backend_runs_the_same_plan_on_device_arrays():
    pytest.importorskip("numba.cuda")
    gl.manual_seed(0)
    eager = nn.Linear(4, 3).to("cuda")
    model = copy.deepcopy(eager)
    opt1, opt2 = gl.optim.SGD(eager.parameters(), lr=0.1), gl.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = lambda out, t: ((out - t) ** 2).mean()  # noqa: E731
    step = gl.compile.make_step(model, loss_fn, optimizer=opt2)
    x, t = gl.randn(3, 4, device="cuda"), gl.ones(3, 3, device="cuda")
    for _ in range(3):
        opt1.zero_grad()
        loss_fn(eager(x), t).backward()
        opt1.step()
        step(x, t)
    assert step.fallback is None and step.traces == 1
    for p1, p2 in zip(eager.parameters(), model.parameters()):
        np.testing.assert_allclose(p1.detach().cpu().numpy(), p2.detach().cpu().numpy(), rtol=1e-5, atol=1e-6)

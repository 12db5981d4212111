"""gradlab.optim: every optimizer's trajectory against PyTorch's (and against the written-out update
rules), parameter groups, state_dict round trips, zero_grad, closures and bad input."""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl
import gradlab.optim as optim

SHAPES = [(3, 4), (5,), (2,)]


def _synthetic(steps=20, seed=0):
    """Initial values and the gradients fed at each step; the last parameter gets no gradient on odd steps."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) if i < 2 or t % 2 == 0 else None for i, s in enumerate(SHAPES)]
             for t in range(steps)]
    return init, grads


def _run_gradlab(make, init, grads):
    params = [gl.tensor(a, dtype=gl.float64, requires_grad=True) for a in init]
    opt = make(params)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else gl.tensor(g, dtype=gl.float64)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


def _run_torch(make, init, grads):
    params = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in init]
    opt = make(params)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else torch.tensor(g, dtype=torch.float64)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, weight_decay=0.05)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, maximize=True)),
    ("Adam", dict(lr=0.05)),
    ("Adam", dict(lr=0.05, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1)),
    ("Adam", dict(lr=0.05, amsgrad=True)),
    ("Adam", dict(lr=0.05, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True)),
    ("AdamW", dict(lr=0.05)),
    ("AdamW", dict(lr=0.05, weight_decay=0.3, amsgrad=True)),
    ("AdamW", dict(lr=0.05, maximize=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.7)),
    ("RMSprop", dict(lr=0.01, centered=True)),
    ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5, weight_decay=0.05, maximize=True)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.5)),
    ("Adagrad", dict(lr=0.1, eps=1e-4, maximize=True)),
    ("Adamax", dict(lr=0.05)),
    ("Adamax", dict(lr=0.05, betas=(0.8, 0.95), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.05)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.05)),
    ("RAdam", dict(lr=0.05, betas=(0.9, 0.9), weight_decay=0.1)),  # beta2=0.9: the rectified branch starts early
    ("RAdam", dict(lr=0.05, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
]


@requires_torch
@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_trajectory_matches_torch(name, options):
    init, grads = _synthetic()
    ours, _ = _run_gradlab(lambda ps: getattr(optim, name)(ps, **options), init, grads)
    theirs, _ = _run_torch(lambda ps: getattr(torch.optim, name)(ps, **options), init, grads)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    assert not np.allclose(ours[0], init[0])  # the parameters did move


@requires_torch
@pytest.mark.parametrize("name, options", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1, amsgrad=True)),
                                           ("RMSprop", dict(lr=0.1, centered=True, momentum=0.3)),
                                           ("Adagrad", dict(lr=0.1)), ("NAdam", dict(lr=0.1)), ("RAdam", dict(lr=0.1))])
def test_state_dict_layout_matches_torch(name, options):
    """Same state keys per parameter, same group options (kernel switches too), same values."""
    init, grads = _synthetic(steps=7)
    _, ours = _run_gradlab(lambda ps: getattr(optim, name)(ps, **options), init, grads)
    _, theirs = _run_torch(lambda ps: getattr(torch.optim, name)(ps, **options), init, grads)
    a, b = ours.state_dict(), theirs.state_dict()
    assert a["state"].keys() == b["state"].keys()
    for index in a["state"]:
        assert a["state"][index].keys() == b["state"][index].keys()
        for key, value in a["state"][index].items():
            assert value.dtype.name == str(b["state"][index][key].dtype).replace("torch.", "")
            np.testing.assert_allclose(value.numpy(), b["state"][index][key].numpy(), rtol=1e-6, atol=1e-9)
    assert a["param_groups"] == b["param_groups"]


def test_lion_follows_the_paper():
    """Chen et al. 2023, Algorithm 2: c = b1*m + (1-b1)*g; p -= lr*(sign(c) + wd*p); m = b2*m + (1-b2)*g."""
    init, grads = _synthetic()
    lr, (b1, b2), wd = 0.01, (0.9, 0.99), 0.1
    ours, _ = _run_gradlab(lambda ps: optim.Lion(ps, lr=lr, weight_decay=wd), init, grads)
    params, moments = [a.copy() for a in init], [np.zeros_like(a) for a in init]
    for step_grads in grads:
        for i, g in enumerate(step_grads):
            if g is None:
                continue
            c = b1 * moments[i] + (1 - b1) * g
            params[i] = params[i] - lr * (np.sign(c) + wd * params[i])
            moments[i] = b2 * moments[i] + (1 - b2) * g
    for a, b in zip(ours, params):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_lion_defaults_and_maximize():
    p = gl.tensor([1.0, -2.0], dtype=gl.float64, requires_grad=True)
    opt = optim.Lion([p], maximize=True)
    assert opt.defaults == dict(lr=1e-4, betas=(0.9, 0.99), weight_decay=0.0, maximize=True)
    p.grad = gl.tensor([0.5, -3.0], dtype=gl.float64)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [1.0 + 1e-4, -2.0 - 1e-4])  # every element moves exactly lr


def test_sgd_momentum_by_hand():
    """v1 = g1 (the buffer starts as the gradient), v2 = 0.9*v1 + g2; nesterov moves by g + 0.9*v."""
    for nesterov in (False, True):
        p = gl.tensor([1.0, 2.0], dtype=gl.float64, requires_grad=True)
        opt = optim.SGD([p], lr=0.1, momentum=0.9, nesterov=nesterov)
        g1, g2 = np.array([1.0, -1.0]), np.array([0.5, 2.0])
        p.grad = gl.tensor(g1)
        opt.step()
        p.grad = gl.tensor(g2)
        opt.step()
        v1, v2 = g1, 0.9 * g1 + g2
        moves = (g1 + 0.9 * v1, g2 + 0.9 * v2) if nesterov else (v1, v2)
        expected = np.array([1.0, 2.0]) - 0.1 * moves[0] - 0.1 * moves[1]
        np.testing.assert_allclose(p.detach().numpy(), expected, rtol=1e-12)
        np.testing.assert_allclose(opt.state[p]["momentum_buffer"].numpy(), v2, rtol=1e-12)


def test_adam_by_hand():
    """Two Adam steps from the paper's formulas, bias correction included."""
    lr, b1, b2, eps = 0.1, 0.9, 0.999, 1e-8
    p = gl.tensor([0.5, -1.5, 2.0], dtype=gl.float64, requires_grad=True)
    opt = optim.Adam([p], lr=lr)
    x, m, v = np.array([0.5, -1.5, 2.0]), 0.0, 0.0
    for t, g in enumerate([np.array([1.0, -2.0, 0.1]), np.array([0.3, 0.3, -4.0])], start=1):
        p.grad = gl.tensor(g)
        opt.step()
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        x = x - lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + eps)
    np.testing.assert_allclose(p.detach().numpy(), x, rtol=1e-10)
    assert opt.state[p]["step"].item() == 2.0 and opt.state[p]["step"].dtype is gl.float32


@requires_torch
def test_param_groups_with_their_own_options_match_torch():
    init, grads = _synthetic()

    def groups(params):
        return [{"params": params[:1], "lr": 0.1, "momentum": 0.5}, {"params": params[1:], "weight_decay": 0.1}]

    ours, opt = _run_gradlab(lambda ps: optim.SGD(groups(ps), lr=0.01, momentum=0.9), init, grads)
    theirs, _ = _run_torch(lambda ps: torch.optim.SGD(groups(ps), lr=0.01, momentum=0.9), init, grads)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-9)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.01]
    assert [g["momentum"] for g in opt.param_groups] == [0.5, 0.9]
    assert opt.param_groups[0]["weight_decay"] == 0 and opt.param_groups[1]["weight_decay"] == 0.1


def test_param_groups_take_their_own_lr():
    a = gl.tensor([1.0], dtype=gl.float64, requires_grad=True)
    b = gl.tensor([1.0], dtype=gl.float64, requires_grad=True)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5}], lr=0.1)
    a.grad, b.grad = gl.tensor([1.0], dtype=gl.float64), gl.tensor([1.0], dtype=gl.float64)
    opt.step()
    assert a.item() == pytest.approx(0.9) and b.item() == pytest.approx(0.5)
    c = gl.tensor([1.0], dtype=gl.float64, requires_grad=True)
    opt.add_param_group({"params": [c], "lr": 0.25})
    assert opt.param_groups[2] == {"params": [c], "lr": 0.25, "momentum": 0, "dampening": 0, "weight_decay": 0,
                                   "nesterov": False, "maximize": False, "foreach": None, "differentiable": False,
                                   "fused": None}


@pytest.mark.parametrize("name, options", [("SGD", dict(lr=0.05, momentum=0.9, nesterov=True)),
                                           ("Adam", dict(lr=0.05, amsgrad=True)), ("AdamW", dict(lr=0.05)),
                                           ("RMSprop", dict(lr=0.01, centered=True, momentum=0.5)),
                                           ("Adagrad", dict(lr=0.1, lr_decay=0.01)), ("Adamax", dict(lr=0.05)),
                                           ("NAdam", dict(lr=0.05)), ("RAdam", dict(lr=0.05)), ("Lion", dict(lr=0.01))])
def test_state_dict_round_trip_continues_identically(name, options):
    init, grads = _synthetic(steps=20)
    first, second = grads[:10], grads[10:]
    reference, _ = _run_gradlab(lambda ps: getattr(optim, name)(ps, **options), init, grads)
    halfway, opt = _run_gradlab(lambda ps: getattr(optim, name)(ps, **options), init, first)
    saved = pickle.loads(pickle.dumps(opt.state_dict()))  # as a checkpoint file would hold it
    params = [gl.tensor(a, requires_grad=True) for a in halfway]
    resumed = getattr(optim, name)(params, lr=123.0)  # the loaded groups replace these options
    resumed.load_state_dict(saved)
    assert resumed.param_groups[0]["lr"] == options["lr"] and resumed.param_groups[0]["params"] == params
    for step_grads in second:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else gl.tensor(g, dtype=gl.float64)
        resumed.step()
    for a, b in zip(params, reference):
        np.testing.assert_array_equal(a.detach().numpy(), b)


def test_state_dict_format():
    a = gl.tensor([1.0, 2.0], requires_grad=True)
    b = gl.tensor([3.0], requires_grad=True)
    c = gl.tensor([4.0], requires_grad=True)
    opt = optim.Adam([{"params": [a, b]}, {"params": [c], "lr": 0.5}], lr=0.1)
    a.grad, c.grad = gl.ones(2), gl.ones(1)
    opt.step()
    sd = opt.state_dict()
    assert set(sd) == {"state", "param_groups"}
    assert sorted(sd["state"]) == [0, 2]  # b had no gradient: no state
    assert sorted(sd["state"][0]) == ["exp_avg", "exp_avg_sq", "step"]
    assert [g["params"] for g in sd["param_groups"]] == [[0, 1], [2]]
    assert sd["param_groups"][1]["lr"] == 0.5 and sd["param_groups"][0]["betas"] == (0.9, 0.999)
    assert sd["state"][0]["exp_avg"] is opt.state[a]["exp_avg"]  # like torch: the live tensors, not copies


def test_load_state_dict_copies_and_casts():
    p = gl.tensor([1.0, 2.0], dtype=gl.float64, requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    saved = {"state": {0: {"momentum_buffer": gl.tensor([1.0, 1.0], dtype=gl.float32)}},
             "param_groups": [{"lr": 0.2, "momentum": 0.9, "dampening": 0, "weight_decay": 0, "nesterov": False,
                               "maximize": False, "params": [0]}]}
    opt.load_state_dict(saved)
    buf = opt.state[p]["momentum_buffer"]
    assert buf.dtype is gl.float64 and buf is not saved["state"][0]["momentum_buffer"]
    assert opt.param_groups[0]["lr"] == 0.2 and opt.param_groups[0]["params"][0] is p
    saved["param_groups"][0]["lr"] = 5.0
    assert opt.param_groups[0]["lr"] == 0.2  # the groups were copied too
    p.grad = gl.tensor([0.0, 1.0], dtype=gl.float64)
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [1.0 - 0.2 * 0.9, 2.0 - 0.2 * 1.9])


def test_load_state_dict_checks_group_sizes():
    a, b = gl.zeros(2, requires_grad=True), gl.zeros(2, requires_grad=True)
    sd = optim.SGD([a, b], lr=0.1).state_dict()
    with pytest.raises(ValueError, match="loaded state dict has a different number of parameter groups"):
        optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1).load_state_dict(sd)
    with pytest.raises(ValueError, match="loaded state dict contains a parameter group that doesn't match the size "
                                         "of optimizer's group"):
        optim.SGD([a], lr=0.1).load_state_dict(sd)


def test_optimizer_pickles_and_deepcopies():
    import copy

    p = gl.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.Adam([p], lr=0.1)
    p.grad = gl.ones(2)
    opt.step()
    clone = copy.deepcopy(opt)
    assert clone.param_groups[0]["lr"] == 0.1 and len(clone.state) == 1
    assert type(pickle.loads(pickle.dumps(opt))) is optim.Adam


def test_zero_grad():
    p = gl.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None
    opt.zero_grad()  # nothing to do is fine


def test_step_skips_parameters_without_gradient():
    a, b = gl.tensor([1.0], requires_grad=True), gl.tensor([1.0], requires_grad=True)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = gl.tensor([1.0])
    opt.step()
    assert b.item() == 1.0 and b not in opt.state and a.item() != 1.0


def test_closure_is_evaluated_with_grad_enabled():
    p = gl.tensor([3.0], dtype=gl.float64, requires_grad=True)
    opt = optim.SGD([p], lr=0.25)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with gl.no_grad():
        loss = opt.step(closure)
    assert loss.item() == 9.0 and p.item() == pytest.approx(3.0 - 0.25 * 6.0)
    assert opt.step() is None


def test_training_loop_reduces_the_loss():
    gl.manual_seed(0)
    x = gl.randn(64, 3, dtype=gl.float64)
    y = x.matmul(gl.tensor([[1.0], [-2.0], [0.5]], dtype=gl.float64)) + 0.3
    for name, options in [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.05)), ("AdamW", dict(lr=0.05)),
                          ("RMSprop", dict(lr=0.01)), ("Adagrad", dict(lr=0.3)), ("Adamax", dict(lr=0.05)),
                          ("NAdam", dict(lr=0.05)), ("RAdam", dict(lr=0.1)), ("Lion", dict(lr=0.02))]:
        w = gl.zeros(3, 1, dtype=gl.float64, requires_grad=True)
        b = gl.zeros(1, dtype=gl.float64, requires_grad=True)
        opt = getattr(optim, name)([w, b], **options)
        losses = []
        for _ in range(60):
            opt.zero_grad()
            loss = ((x.matmul(w) + b - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        assert losses[-1] < 0.2 * losses[0], name


def test_step_bumps_the_version_counter():
    """An in-place update: a graph that saved the parameter refuses to run backward afterwards, as in torch."""
    p = gl.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    loss = (p * p).sum()
    p.grad = gl.ones(2)
    before = p._version_count
    opt.step()
    assert p._version_count == before + 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_float32_parameters_stay_float32_and_share_memory():
    p = gl.tensor([1.0, 2.0], dtype=gl.float32, requires_grad=True)
    view = p.detach()
    opt = optim.Adam([p], lr=0.1)
    p.grad = gl.tensor([1.0, 1.0])
    opt.step()
    assert p.dtype is gl.float32 and opt.state[p]["exp_avg"].dtype is gl.float32
    np.testing.assert_allclose(view.numpy(), [0.9, 1.9], rtol=1e-6)  # updated in place


def test_adagrad_fills_state_at_construction():
    p = gl.zeros(3, requires_grad=True)
    opt = optim.Adagrad([p], initial_accumulator_value=0.5)
    assert opt.state[p]["sum"].tolist() == [0.5, 0.5, 0.5] and opt.state[p]["step"].item() == 0
    q = gl.zeros(2, requires_grad=True)
    opt.add_param_group({"params": [q]})
    q.grad = gl.ones(2)
    opt.step()  # a group added later gets its state on its first step
    assert opt.state[q]["sum"].tolist() == [1.5, 1.5]  # the group took the default initial_accumulator_value


def test_sgd_without_momentum_keeps_no_state():
    p = gl.zeros(3, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    p.grad = gl.ones(3)
    opt.step()
    assert opt.state_dict()["state"] == {}


def test_named_parameters_are_accepted():
    a, b = gl.zeros(2, requires_grad=True), gl.zeros(1, requires_grad=True)
    opt = optim.SGD([("w", a), ("b", b)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"] and opt.param_groups[0]["params"] == [a, b]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]
    with pytest.raises(ValueError, match="all optimizer params should be with/without names"):
        optim.SGD([("w", a), b], lr=0.1)


def test_repr():
    opt = optim.SGD([gl.zeros(1, requires_grad=True)], lr=0.1)
    assert repr(opt) == ("SGD (\nParameter Group 0\n    dampening: 0\n    differentiable: False\n    foreach: None\n"
                         "    fused: None\n    lr: 0.1\n    maximize: False\n    momentum: 0\n    nesterov: False\n"
                         "    weight_decay: 0\n)")
    if torch is not None:
        assert repr(opt) == repr(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1))


def test_custom_optimizer_subclass():
    """The PyTorch way of writing an optimizer works unchanged: defaults, groups, state, step under no_grad."""

    class SignSGD(optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        @gl.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.sub_(p.grad.sign() * group["lr"])
                        self.state[p]["steps"] = self.state[p].get("steps", 0) + 1

    p = gl.tensor([1.0, -1.0], requires_grad=True)
    opt = SignSGD([p])
    p.grad = gl.tensor([2.0, -3.0])
    opt.step()
    assert p.tolist() == pytest.approx([0.9, -0.9]) and opt.state_dict()["state"] == {0: {"steps": 1}}


def test_required_option():
    with pytest.raises(ValueError, match="didn't specify a value of required optimization parameter lr"):
        optim.Optimizer([gl.zeros(1, requires_grad=True)], {"lr": optim.optimizer.required})


# --- bad input -------------------------------------------------------------------------------------


def test_empty_parameter_list():
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.Adam(iter([]))


def test_non_tensor_parameter_names_its_type():
    with pytest.raises(TypeError, match="optimizer can only optimize Tensors, but one of the params is float"):
        optim.SGD([gl.zeros(1, requires_grad=True), 3.0], lr=0.1)
    with pytest.raises(TypeError, match="one of the params is numpy.ndarray"):
        optim.Adam([np.zeros(3)])
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable of Tensors or "
                                        "dicts, but got gradlab.tensor.Tensor"):
        optim.SGD(gl.zeros(1, requires_grad=True), lr=0.1)
    with pytest.raises(TypeError, match="param_group must be a dict"):
        optim.SGD([{"params": [gl.zeros(1, requires_grad=True)]}, [gl.zeros(1, requires_grad=True)]], lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {gl.zeros(1, requires_grad=True)}}], lr=0.1)


def test_non_leaf_parameter():
    x = gl.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([x * 2], lr=0.1)


def test_duplicate_parameters():
    p, q = gl.zeros(2, requires_grad=True), gl.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [q, p]}], lr=0.1)
    opt = optim.SGD([p], lr=0.1)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        opt.add_param_group({"params": p})
    with pytest.warns(UserWarning, match="optimizer contains a parameter group with duplicate parameters"):
        optim.SGD([q, q], lr=0.1)


@pytest.mark.parametrize("make, message", [
    (lambda ps: optim.SGD(ps, lr=-0.1), "Invalid learning rate: -0.1"),
    (lambda ps: optim.SGD(ps, lr=0.1, momentum=-1), "Invalid momentum value: -1"),
    (lambda ps: optim.SGD(ps, lr=0.1, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda ps: optim.SGD(ps, lr=0.1, nesterov=True), "Nesterov momentum requires a momentum and zero dampening"),
    (lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, dampening=0.1, nesterov=True), "Nesterov momentum requires"),
    (lambda ps: optim.Adam(ps, lr=-1e-3), "Invalid learning rate: -0.001"),
    (lambda ps: optim.Adam(ps, eps=-1.0), "Invalid epsilon value: -1.0"),
    (lambda ps: optim.Adam(ps, betas=(1.0, 0.999)), r"Invalid beta parameter at index 0: 1.0"),
    (lambda ps: optim.AdamW(ps, betas=(0.9, -0.1)), r"Invalid beta parameter at index 1: -0.1"),
    (lambda ps: optim.AdamW(ps, weight_decay=-0.5), "Invalid weight_decay value: -0.5"),
    (lambda ps: optim.RMSprop(ps, alpha=-0.5), "Invalid alpha value: -0.5"),
    (lambda ps: optim.Adagrad(ps, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda ps: optim.Adagrad(ps, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    (lambda ps: optim.NAdam(ps, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda ps: optim.Adamax(ps, betas=(0.9, 1.5)), "Invalid beta parameter at index 1: 1.5"),
    (lambda ps: optim.RAdam(ps, lr=-1), "Invalid learning rate: -1"),
    (lambda ps: optim.Lion(ps, betas=(-0.1, 0.99)), "Invalid beta parameter at index 0: -0.1"),
])
def test_invalid_options(make, message):
    with pytest.raises(ValueError, match=message):
        make([gl.zeros(2, requires_grad=True)])


@requires_torch
def test_invalid_option_messages_are_torchs():
    p = torch.zeros(2, requires_grad=True)
    for make, ours in [(lambda: torch.optim.SGD([p], lr=-0.1), "Invalid learning rate: -0.1"),
                       (lambda: torch.optim.Adam([p], betas=(1.0, 0.999)), "Invalid beta parameter at index 0: 1.0"),
                       (lambda: torch.optim.RMSprop([p], alpha=-0.5), "Invalid alpha value: -0.5"),
                       (lambda: torch.optim.SGD([], lr=0.1), "optimizer got an empty parameter list")]:
        with pytest.raises(ValueError) as caught, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            make()
        assert str(caught.value) == ours

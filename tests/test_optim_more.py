"""Adadelta, ASGD, Rprop, Adafactor, LBFGS and CyclicLR against PyTorch (float64 trajectories to 1e-10), their
state_dict round trips, and load_state_dict's checks: a load that fails changes nothing."""

from __future__ import annotations

import copy
import pickle
import re
import warnings

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl
import gradlab.optim as optim
from gradlab.optim.lr_scheduler import CyclicLR

SHAPES = [(3, 4), (5,), (2,)]


def synthetic(steps=20, seed=0):
    """Initial values and the gradients fed at each step; the last parameter gets no gradient on odd steps."""
    rng = np.random.default_rng(seed)
    init = [rng.standard_normal(s) for s in SHAPES]
    grads = [[rng.standard_normal(s) if i < 2 or t % 2 == 0 else None for i, s in enumerate(SHAPES)]
             for t in range(steps)]
    return init, grads


def run(lib, make, init, grads):
    """Feed the gradients to an optimizer of gradlab or torch; the final values and the optimizer."""
    params = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in init]
    opt = make(params)
    for step_grads in grads:
        for p, g in zip(params, step_grads):
            p.grad = None if g is None else lib.tensor(g, dtype=lib.float64)
        opt.step()
    return [p.detach().numpy().copy() for p in params], opt


CASES = [
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, eps=1e-4, weight_decay=0.1)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
    ("ASGD", dict(lr=0.05, t0=5)),  # the averaging starts within the run
    ("ASGD", dict(lr=0.05, lambd=0.01, alpha=0.6, t0=3, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.05)),
    ("Rprop", dict(lr=0.05, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.05, beta2_decay=-0.5, eps=(1e-20, 1e-2), d=1.5, weight_decay=0.1, maximize=True)),
]


@requires_torch
@pytest.mark.parametrize("name, options", CASES, ids=[f"{n}-{o}" for n, o in CASES])
def test_trajectory_matches_torch_to_1e_10(name, options):
    init, grads = synthetic()
    ours, _ = run(gl, lambda ps: getattr(optim, name)(ps, **options), init, grads)
    theirs, _ = run(torch, lambda ps: getattr(torch.optim, name)(ps, **options), init, grads)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    assert not np.allclose(ours[0], init[0])


@requires_torch
@pytest.mark.parametrize("name, options", [("Adadelta", dict(lr=0.5)), ("ASGD", dict(lr=0.05, t0=5)),
                                           ("Rprop", dict(lr=0.05)), ("Adafactor", dict(lr=0.05))])
def test_state_matches_torchs_keys_dtypes_and_values(name, options):
    init, grads = synthetic(steps=9)
    _, ours = run(gl, lambda ps: getattr(optim, name)(ps, **options), init, grads)
    _, theirs = run(torch, lambda ps: getattr(torch.optim, name)(ps, **options), init, grads)
    a, b = ours.state_dict(), theirs.state_dict()
    assert a["state"].keys() == b["state"].keys()
    for index, entry in a["state"].items():
        assert entry.keys() == b["state"][index].keys()
        for key, value in entry.items():
            assert value.dtype.name == str(b["state"][index][key].dtype).replace("torch.", "")
            np.testing.assert_allclose(value.numpy(), b["state"][index][key].numpy(), rtol=0, atol=1e-10)
    assert a["param_groups"] == b["param_groups"]


@pytest.mark.parametrize("name, options", [("Adadelta", dict(lr=0.5)), ("ASGD", dict(lr=0.05, t0=5)),
                                           ("Rprop", dict(lr=0.05)), ("Adafactor", dict(lr=0.05))])
def test_state_dict_round_trip_continues_bit_for_bit(name, options):
    init, grads = synthetic()
    reference, _ = run(gl, lambda ps: getattr(optim, name)(ps, **options), init, grads)
    halfway, opt = run(gl, lambda ps: getattr(optim, name)(ps, **options), init, grads[:10])
    saved = pickle.loads(pickle.dumps(opt.state_dict()))
    resumed_init = [np.array(a) for a in halfway]
    final, _ = run(gl, lambda ps: _loaded(getattr(optim, name)(ps, lr=123.0), saved), resumed_init, grads[10:])
    for a, b in zip(final, reference):
        np.testing.assert_array_equal(a, b)


def _loaded(opt, saved):
    opt.load_state_dict(saved)
    return opt


def test_adadelta_by_hand():
    p = gl.tensor([1.0], dtype=gl.float64, requires_grad=True)
    opt = optim.Adadelta([p], lr=1.0, rho=0.9, eps=1e-6)
    p.grad = gl.tensor([2.0], dtype=gl.float64)
    opt.step()
    v = 0.1 * 4.0
    delta = np.sqrt(1e-6) / np.sqrt(v + 1e-6) * 2.0
    np.testing.assert_allclose(p.item(), 1.0 - delta, rtol=1e-15)
    np.testing.assert_allclose(opt.state[p]["acc_delta"].item(), 0.1 * delta ** 2, rtol=1e-15)


def test_adafactor_keeps_a_row_and_a_column_for_a_matrix():
    w, v = gl.zeros(4, 6, requires_grad=True), gl.zeros(6, requires_grad=True)
    opt = optim.Adafactor([w, v])
    w.grad, v.grad = gl.ones(4, 6), gl.ones(6)
    opt.step()
    assert opt.state[w]["row_var"].shape == (4, 1) and opt.state[w]["col_var"].shape == (1, 6)
    assert sorted(opt.state[v]) == ["step", "variance"]
    # the first step: v = g² exactly, u = g / |g| = 1 (RMS 1, unclipped), |step| = eps2 * min(lr, 1)
    np.testing.assert_allclose(w.detach().numpy(), -1e-3 * 1e-2, rtol=1e-6)


def test_rprop_grows_steps_while_the_sign_holds_and_stands_still_after_a_flip():
    p = gl.tensor([0.0], dtype=gl.float64, requires_grad=True)
    opt = optim.Rprop([p], lr=0.1, etas=(0.5, 2.0), step_sizes=(1e-6, 0.3))
    path = []
    for g in [1.0, 1.0, 1.0, -1.0, -1.0]:
        p.grad = gl.tensor([g], dtype=gl.float64)
        opt.step()
        path.append(round(p.item(), 12))
    # steps 0.1, 0.2, 0.3 (capped); the flip halves the step to 0.15 without moving; then it moves back
    assert path == [-0.1, -0.3, -0.6, -0.6, -0.45]


def test_asgd_averages_the_iterates_from_t0_on():
    p = gl.tensor([0.0], dtype=gl.float64, requires_grad=True)
    opt = optim.ASGD([p], lr=0.1, lambd=0.0, alpha=0.75, t0=2)
    values = []
    for _ in range(6):
        p.grad = gl.tensor([1.0], dtype=gl.float64)
        opt.step()
        values.append(p.item())
    # eta stays lr (lambd=0), kept in float32 as PyTorch keeps it. Step t weighs p by 1 / max(1, t - 1 - t0):
    # ax copies p up to step t0 + 2 = 4, then is the mean of the iterates of steps 4, 5, 6
    eta = float(np.float32(0.1))
    np.testing.assert_allclose(values, [-eta * k for k in range(1, 7)], rtol=1e-12)
    np.testing.assert_allclose(opt.state[p]["ax"].item(), np.mean(values[3:]), rtol=1e-7)  # mu = 1/3 in float32


@pytest.mark.parametrize("name, options, message", [
    ("Adadelta", dict(rho=1.5), "Invalid rho value: 1.5"),
    ("Adadelta", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adadelta", dict(eps=-1), "Invalid epsilon value: -1"),
    ("ASGD", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Rprop", dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    ("LBFGS", dict(lr=-1), "Invalid learning rate: -1"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    ("Adafactor", dict(eps=(-1.0, 1e-3)), "epsilon1 should be >= 0 but is: -1.0"),
])
def test_invalid_options_are_refused_in_torchs_words(name, options, message):
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        getattr(optim, name)([gl.zeros(2, requires_grad=True)], **options)
    if torch is not None:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            getattr(torch.optim, name)([torch.zeros(2, requires_grad=True)], **options)


# --- LBFGS ---------------------------------------------------------------------------------------


def lbfgs_problem(lib, steps, **options):
    """A small non-convex least-squares fit; the loss after each step, the final parameters, the optimizer."""
    rng = np.random.default_rng(0)
    A, y, w0 = rng.standard_normal((6, 3)), rng.standard_normal(6), rng.standard_normal(3)
    w = lib.tensor(w0, dtype=lib.float64, requires_grad=True)
    b = lib.tensor([0.3], dtype=lib.float64, requires_grad=True)
    A, y = lib.tensor(A, dtype=lib.float64), lib.tensor(y, dtype=lib.float64)
    opt = (optim.LBFGS if lib is gl else torch.optim.LBFGS)([w, b], **options)

    def closure():
        opt.zero_grad()
        loss = (((A @ w + b).tanh() - y) ** 2).mean() + 0.1 * (w ** 4).sum()
        loss.backward()
        return loss

    losses = [opt.step(closure).item() for _ in range(steps)]
    return losses, np.concatenate([w.detach().numpy(), b.detach().numpy()]), opt


LBFGS_CASES = [dict(), dict(line_search_fn="strong_wolfe"), dict(lr=0.5, max_iter=3, history_size=2),
               dict(lr=0.8, max_iter=4, history_size=3, line_search_fn="strong_wolfe")]


@requires_torch
@pytest.mark.parametrize("options", LBFGS_CASES, ids=str)
def test_lbfgs_matches_torch_over_20_steps(options):
    ours, ours_params, ours_opt = lbfgs_problem(gl, 20, **options)
    theirs, theirs_params, theirs_opt = lbfgs_problem(torch, 20, **options)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    np.testing.assert_allclose(ours_params, theirs_params, rtol=0, atol=1e-10)
    ours_state, theirs_state = next(iter(ours_opt.state.values())), theirs_opt.state[theirs_opt._params[0]]
    assert (ours_state["func_evals"], ours_state["n_iter"]) == (theirs_state["func_evals"], theirs_state["n_iter"])
    assert ours[-1] < 0.5 * ours[0]


@requires_torch
@pytest.mark.parametrize("options", LBFGS_CASES[2:], ids=str)
def test_lbfgs_matches_torch_step_by_step_early_on(options):
    ours, _, _ = lbfgs_problem(gl, 3, **options)
    theirs, _, _ = lbfgs_problem(torch, 3, **options)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-10)
    assert len(set(ours)) == 3  # still moving: the comparison is not of a converged point


@pytest.mark.parametrize("options", LBFGS_CASES[2:], ids=str)
def test_lbfgs_state_dict_round_trip_continues_bit_for_bit(options):
    reference, reference_params, _ = lbfgs_problem(gl, 6, **options)
    _, _, opt = lbfgs_problem(gl, 3, **options)
    saved = pickle.loads(pickle.dumps(opt.state_dict()))
    params = [p.detach().clone().requires_grad_() for p in opt.param_groups[0]["params"]]
    rng = np.random.default_rng(0)
    A, y = gl.tensor(rng.standard_normal((6, 3)), dtype=gl.float64), gl.tensor(rng.standard_normal(6),
                                                                                dtype=gl.float64)
    resumed = optim.LBFGS(params, **options)
    resumed.load_state_dict(saved)
    w, b = params

    def closure():
        resumed.zero_grad()
        loss = (((A @ w + b).tanh() - y) ** 2).mean() + 0.1 * (w ** 4).sum()
        loss.backward()
        return loss

    losses = [resumed.step(closure).item() for _ in range(3)]
    assert losses == reference[3:]
    np.testing.assert_array_equal(np.concatenate([w.detach().numpy(), b.detach().numpy()]), reference_params)


def test_lbfgs_errors():
    p = gl.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        optim.LBFGS([{"params": [p]}, {"params": [gl.zeros(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported .*got 'armijo'"):
        optim.LBFGS([p], line_search_fn="armijo")
    with pytest.raises(TypeError, match="closure"):
        optim.LBFGS([p]).step()


def test_lbfgs_stops_at_once_at_an_optimum():
    p = gl.zeros(2, dtype=gl.float64, requires_grad=True)
    opt = optim.LBFGS([p])
    calls = []

    def closure():
        calls.append(1)
        opt.zero_grad()
        loss = (p ** 2).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 0.0 and len(calls) == 1 and p.tolist() == [0.0, 0.0]


# --- CyclicLR ------------------------------------------------------------------------------------


def cyclic_lrs(lib, optimizer, steps=23, **options):
    p = lib.zeros(2, requires_grad=True)
    module = optim if lib is gl else torch.optim
    extra = {"momentum": 0.9} if optimizer == "SGD" else {}
    opt = getattr(module, optimizer)([p], lr=0.1, **extra)
    scheduler = module.lr_scheduler.CyclicLR(opt, **options)
    seen = []
    for _ in range(steps):
        opt.step()
        scheduler.step()
        group = opt.param_groups[0]
        seen.append((group["lr"], group["momentum"] if "momentum" in group else group["betas"][0]))
    return seen, scheduler


def half_power(x):
    return 0.5 ** x


CYCLIC_CASES = [
    ("SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=4)),
    ("SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5, mode="triangular2")),
    ("Adam", dict(base_lr=0.01, max_lr=0.1, step_size_up=4, mode="exp_range", gamma=0.9)),
    ("SGD", dict(base_lr=0.01, max_lr=0.1, step_size_up=2, scale_fn=half_power, scale_mode="iterations",
                 cycle_momentum=False)),
]


@requires_torch
@pytest.mark.parametrize("optimizer, options", CYCLIC_CASES, ids=[str(c[1]) for c in CYCLIC_CASES])
def test_cyclic_lr_matches_torch_exactly(optimizer, options):
    assert cyclic_lrs(gl, optimizer, **options)[0] == cyclic_lrs(torch, optimizer, **options)[0]


def test_cyclic_lr_triangle():
    seen, _ = cyclic_lrs(gl, "SGD", steps=8, base_lr=0.0, max_lr=1.0, step_size_up=2)
    assert [round(lr, 12) for lr, _ in seen] == [0.5, 1.0, 0.5, 0.0, 0.5, 1.0, 0.5, 0.0]
    assert [round(m, 12) for _, m in seen] == [0.85, 0.8, 0.85, 0.9, 0.85, 0.8, 0.85, 0.9]


def test_cyclic_lr_state_dict_round_trip():
    _, scheduler = cyclic_lrs(gl, "SGD", steps=5, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2")
    state = scheduler.state_dict()
    assert "_scale_fn_ref" not in state and state["_scale_fn_custom"] is None and state["last_epoch"] == 5
    p = gl.zeros(2, requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    fresh = CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=3, mode="triangular2")
    fresh.load_state_dict(copy.deepcopy(state))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scheduler.step(), fresh.step()
    assert fresh.get_last_lr() == scheduler.get_last_lr() and fresh.scale_fn(3) == 0.25


def test_cyclic_lr_errors():
    p = gl.zeros(2, requires_grad=True)
    with pytest.raises(ValueError, match="^mode is invalid and scale_fn is None$"):
        CyclicLR(optim.SGD([p], lr=0.1), 0.01, 0.1, mode="sawtooth")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1 with `cycle_momentum`"):
        CyclicLR(optim.Rprop([p]), 0.01, 0.1)
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups"):
        CyclicLR(optim.SGD([p], lr=0.1, momentum=0.9), 0.01, [0.1, 0.2])


# --- load_state_dict checks everything before it writes anything ---------------------------------


def trained_adam():
    params = [gl.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True), gl.tensor([1.0, 2.0], requires_grad=True)]
    opt = optim.Adam([{"params": params[:1]}, {"params": params[1:], "lr": 0.5}], lr=0.1, amsgrad=True)
    for p in params:
        p.grad = gl.ones_like(p)
    opt.step()
    return opt, params


def snapshot(opt, params):
    """Everything a load could change: the groups, the state (values and identities) and the parameters."""
    state = {id(p): {k: (id(v), v.numpy().copy()) for k, v in entry.items()} for p, entry in opt.state.items()}
    groups = [{k: (v if k != "params" else [id(p) for p in v]) for k, v in g.items()} for g in opt.param_groups]
    return id(opt.state), state, groups, [p.detach().numpy().copy() for p in params]


def assert_same(before, after):
    assert before[0] == after[0] and before[2] == after[2]
    assert before[1].keys() == after[1].keys()
    for key in before[1]:
        assert before[1][key].keys() == after[1][key].keys()
        for name in before[1][key]:
            assert before[1][key][name][0] == after[1][key][name][0]
            np.testing.assert_array_equal(before[1][key][name][1], after[1][key][name][1])
    for a, b in zip(before[3], after[3]):
        np.testing.assert_array_equal(a, b)


def spoil_group_count(sd):
    sd["param_groups"] = sd["param_groups"][:1]


def spoil_group_size(sd):
    sd["param_groups"][1]["params"] = [1, 2]


def spoil_shape(sd):
    sd["state"][1]["exp_avg"] = gl.zeros(3)


def spoil_step_shape(sd):
    sd["state"][0]["step"] = gl.ones(2)


def spoil_missing_key(sd):
    del sd["state"][0]["max_exp_avg_sq"]


def spoil_unknown_parameter(sd):
    sd["state"][7] = sd["state"][0]


def spoil_layout(sd):
    del sd["param_groups"]


def spoil_non_tensor(sd):
    sd["state"][0]["exp_avg_sq"] = [[0.0] * 3] * 2


@pytest.mark.parametrize("spoil, message", [
    (spoil_group_count, r"^loaded state dict has a different number of parameter groups \(1; this optimizer has 2\)$"),
    (spoil_group_size, r"^loaded state dict contains a parameter group that doesn't match the size of optimizer's "
                       r"group \(its groups hold \[1, 2\] parameters, this optimizer's \[1, 1\]\)$"),
    (spoil_shape, r"^loaded state dict: state 'exp_avg' of parameter 1 has shape \(3,\), but the parameter it "
                  r"belongs to has shape \(2,\)$"),
    (spoil_step_shape, r"^loaded state dict: state 'step' of parameter 0 has shape \(2,\), but Adam keeps it with "
                       r"shape \(\)$"),
    (spoil_missing_key, r"^loaded state dict: the state of parameter 0 has no 'max_exp_avg_sq'; Adam keeps "
                        r"\['exp_avg', 'exp_avg_sq', 'max_exp_avg_sq', 'step'\] for each parameter$"),
    (spoil_unknown_parameter, r"^loaded state dict has state for parameter 7, but its parameter groups list only "
                              r"\[0, 1\]$"),
    (spoil_layout, r"^loaded state dict should be a dict with 'state' and 'param_groups'.*got \['state'\]$"),
    (spoil_non_tensor, r"^loaded state dict: state 'exp_avg_sq' of parameter 0 should be a tensor, got list$"),
])
def test_a_failed_load_names_the_problem_and_changes_nothing(spoil, message):
    source, _ = trained_adam()
    saved = source.state_dict()
    spoil(saved)
    opt, params = trained_adam()
    for p in params:
        p.grad = gl.full_like(p, 2.0)
    opt.step()  # a state different from the saved one, so that a partial write would show
    before = snapshot(opt, params)
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(saved)
    assert_same(before, snapshot(opt, params))


def test_a_good_load_still_replaces_everything():
    source, _ = trained_adam()
    opt, params = trained_adam()
    for p in params:
        p.grad = gl.full_like(p, 2.0)
    opt.step()
    opt.load_state_dict(source.state_dict())
    assert opt.state[params[0]]["step"].item() == 1.0 and opt.param_groups[1]["lr"] == 0.5


@requires_torch
def test_a_torch_checkpoint_with_a_numeric_step_loads():
    p = torch.zeros(2, requires_grad=True)
    theirs = torch.optim.Adam([p], lr=0.1)
    p.grad = torch.ones(2)
    theirs.step()
    sd = theirs.state_dict()
    saved = {"state": {0: {"step": float(sd["state"][0]["step"]),
                           **{k: gl.tensor(v.numpy()) for k, v in sd["state"][0].items() if k != "step"}}},
             "param_groups": sd["param_groups"]}
    ours = optim.Adam([gl.zeros(2, requires_grad=True)], lr=0.1)
    ours.load_state_dict(saved)
    assert isinstance(ours.state[ours.param_groups[0]["params"][0]]["step"], gl.Tensor)


def stepped(name, **options):
    """An optimizer of this kind after two steps on two parameters, and its parameters."""
    params = [gl.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True), gl.tensor([1.0, 2.0], requires_grad=True)]
    opt = getattr(optim, name)(params, lr=0.1, **options)
    for scale in (1.0, -2.0):
        for p in params:
            p.grad = gl.full_like(p, scale)
        opt.step()
    return opt, params


@pytest.mark.parametrize("source, target, message", [
    (("Adam", {}), ("SGD", dict(momentum=0.9)),
     r"^loaded state dict: the state of parameter 0 was saved by Adam or RAdam, not by SGD: it keeps \['exp_avg', "
     r"'exp_avg_sq', 'step'\] \(\['exp_avg', 'exp_avg_sq', 'step'\], which SGD never writes\), where SGD keeps "
     r"nothing \(and \['momentum_buffer'\] under some options\) for each parameter\. Load it into Adam or RAdam, "
     r"or leave this SGD's state as it is$"),
    (("SGD", dict(momentum=0.9)), ("Adam", {}),
     r"saved by SGD, not by Adam: it keeps \['momentum_buffer'\] \(\['momentum_buffer'\], which Adam never "
     r"writes; no \['exp_avg', 'exp_avg_sq', 'step'\], which Adam always writes\)"),
    (("Adam", dict(amsgrad=True)), ("Lion", {}),
     r"saved by Adam, not by Lion: .*\['exp_avg_sq', 'max_exp_avg_sq', 'step'\], which Lion never writes"),
    (("Lion", {}), ("Adam", {}), r"saved by Lion, not by Adam: .*no \['exp_avg_sq', 'step'\], which Adam always"),
    (("Adagrad", {}), ("RMSprop", dict(momentum=0.5)), r"saved by Adagrad, not by RMSprop: .*\['sum'\], which"),
    (("NAdam", {}), ("Adamax", {}), r"saved by NAdam, not by Adamax"),
    (("RMSprop", dict(centered=True)), ("Adadelta", {}), r"saved by RMSprop, not by Adadelta"),
    (("Rprop", {}), ("ASGD", {}), r"saved by Rprop, not by ASGD"),
])
def test_state_of_another_kind_is_refused_and_changes_nothing(source, target, message):
    saved = stepped(source[0], **source[1])[0].state_dict()
    opt, params = stepped(target[0], **target[1])
    before = snapshot(opt, params)
    with pytest.raises(ValueError, match=message):
        opt.load_state_dict(saved)
    assert_same(before, snapshot(opt, params))
    opt.step()  # and it still steps on its own state


@pytest.mark.parametrize("source, target", [("Adam", "AdamW"), ("AdamW", "Adam"), ("Adam", "RAdam"),
                                            ("SGD", "SGD")])
def test_state_that_means_the_same_still_loads(source, target):
    saved = stepped(source, momentum=0.9)[0].state_dict() if source == "SGD" else stepped(source)[0].state_dict()
    opt, params = stepped(target, momentum=0.9) if target == "SGD" else stepped(target)
    opt.load_state_dict(saved)
    assert sorted(opt.state[params[0]]) == sorted(saved["state"][0])


def test_a_state_no_optimizer_writes_is_refused():
    saved = stepped("Adam")[0].state_dict()
    saved["state"][1]["velocity"] = saved["state"][1].pop("exp_avg")
    opt, params = stepped("Adam")
    with pytest.raises(ValueError, match=r"^loaded state dict: the state of parameter 1 was saved by another kind "
                                         r"of optimizer, not by Adam: .*\['velocity'\], which Adam never writes.*"
                                         r"Load it into the kind of optimizer that saved it"):
        opt.load_state_dict(saved)


def test_a_subclass_with_its_own_step_is_not_held_to_its_base_keys():
    class Heavy(optim.SGD):
        def _delta(self, p, grad, group):
            self.state[p]["velocity"] = p._wrap(grad)
            return super()._delta(p, grad, group)

    w = gl.ones(2, requires_grad=True)
    opt = Heavy([w], lr=0.1)
    w.grad = gl.ones(2)
    opt.step()
    fresh = Heavy([gl.ones(2, requires_grad=True)], lr=0.1)
    fresh.load_state_dict(opt.state_dict())
    assert list(fresh.state.values())[0].keys() == {"velocity"}


@requires_torch
def test_a_torch_checkpoint_of_another_kind_is_refused():
    p = torch.zeros(2, requires_grad=True)
    theirs = torch.optim.Adam([p], lr=0.1)
    p.grad = torch.ones(2)
    theirs.step()
    sd = theirs.state_dict()
    saved = {"state": {0: {k: gl.tensor(v.numpy()) for k, v in sd["state"][0].items()}},
             "param_groups": sd["param_groups"]}
    with pytest.raises(ValueError, match=r"saved by Adam or RAdam, not by SGD"):
        optim.SGD([gl.zeros(2, requires_grad=True)], lr=0.1, momentum=0.9).load_state_dict(saved)
    optim.Adam([gl.zeros(2, requires_grad=True)], lr=0.1).load_state_dict(saved)  # its own kind loads


def test_an_lbfgs_state_into_adam_is_refused():
    _, _, opt = lbfgs_problem(gl, 2, max_iter=3)
    saved = opt.state_dict()
    target = optim.Adam(opt.param_groups[0]["params"], lr=0.1)
    with pytest.raises(ValueError, match=r"saved by LBFGS, not by Adam"):
        target.load_state_dict(saved)


def test_lbfgs_load_checks_its_flat_vectors():
    _, _, opt = lbfgs_problem(gl, 2, max_iter=3)
    saved = opt.state_dict()
    saved["state"][0]["d"] = gl.zeros(3)
    with pytest.raises(ValueError, match=r"LBFGS state 'd' should be a vector over all parameters, of shape \(4,\), "
                                         r"got \(3,\)"):
        opt.load_state_dict(saved)


# --- PyTorch's kernel switches -------------------------------------------------------------------


@pytest.mark.parametrize("name, switches", [("AdamW", dict(fused=True)), ("Adam", dict(foreach=False, capturable=True)),
                                            ("SGD", dict(foreach=True)), ("Adagrad", dict(fused=False)),
                                            ("Rprop", dict(foreach=True, capturable=True)),
                                            ("Adafactor", dict(foreach=False))])
def test_kernel_switches_are_accepted_kept_and_change_no_number(name, switches):
    init, grads = synthetic(steps=5)
    options = {} if name in ("Adafactor", "Rprop") else dict(lr=0.05)
    if name == "SGD":
        options["momentum"] = 0.9
    plain, _ = run(gl, lambda ps: getattr(optim, name)(ps, **options), init, grads)
    switched, opt = run(gl, lambda ps: getattr(optim, name)(ps, **options, **switches), init, grads)
    for a, b in zip(plain, switched):
        np.testing.assert_array_equal(a, b)
    assert all(opt.param_groups[0][key] == value for key, value in switches.items())


def test_kernel_switch_errors():
    p = gl.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="^`fused` and `foreach` cannot be `True` together.$"):
        optim.Adam([p], fused=True, foreach=True)
    with pytest.raises(ValueError, match="differentiable=True would backpropagate through optimizer.step"):
        optim.SGD([p], lr=0.1, differentiable=True)
    if torch is not None:
        with pytest.raises(RuntimeError, match="^`fused` and `foreach` cannot be `True` together.$"):
            torch.optim.Adam([torch.zeros(2, requires_grad=True)], fused=True, foreach=True)


def test_a_scheduler_of_your_own_subclasses_lr_scheduler():
    class Halving(optim.lr_scheduler.LRScheduler):
        def get_lr(self):
            return [group["lr"] * (0.5 if self.last_epoch > 0 else 1.0) for group in self.optimizer.param_groups]

    opt = optim.SGD([gl.zeros(1, requires_grad=True)], lr=0.8)
    scheduler = Halving(opt)
    for _ in range(3):
        opt.step()
        scheduler.step()
    assert scheduler.get_last_lr() == [0.1] and opt.param_groups[0]["initial_lr"] == 0.8


@requires_torch
def test_epoch_deprecation_warning_is_torchs_text():
    assert optim.lr_scheduler.EPOCH_DEPRECATION_WARNING == torch.optim.lr_scheduler.EPOCH_DEPRECATION_WARNING


# --- swa_utils -----------------------------------------------------------------------------------


def averaged_run(lib, make_average):
    """Five 'training steps' (weights set by hand, a forward pass for BatchNorm), each folded into the average."""
    nn = gl.nn if lib is gl else torch.nn
    model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3)).double()
    average = make_average(model)
    weights = [np.random.default_rng(k).standard_normal((3, 4)) for k in range(5)]
    for k, w in enumerate(weights):
        with (gl.no_grad() if lib is gl else torch.no_grad()):
            model[0].weight.copy_(lib.tensor(w, dtype=lib.float64))
            model[0].bias.fill_(float(k))
        model(lib.tensor(np.arange(24.0).reshape(6, 4) + k, dtype=lib.float64))
        average.update_parameters(model)
    tensors = list(average.module.parameters()) + list(average.module.buffers())
    return [t.detach().numpy().copy() for t in tensors], average


@requires_torch
@pytest.mark.parametrize("kind", ["swa", "ema_multi", "ema_one_by_one", "swa_multi", "ema_buffers"])
def test_averaged_model_matches_torch(kind):
    def make(swa):
        return {"swa": lambda m: swa.AveragedModel(m),
                "ema_multi": lambda m: swa.AveragedModel(m, multi_avg_fn=swa.get_ema_multi_avg_fn(0.9)),
                "ema_one_by_one": lambda m: swa.AveragedModel(m, avg_fn=swa.get_ema_avg_fn(0.8)),
                "swa_multi": lambda m: swa.AveragedModel(m, multi_avg_fn=swa.get_swa_multi_avg_fn()),
                "ema_buffers": lambda m: swa.AveragedModel(m, multi_avg_fn=swa.get_ema_multi_avg_fn(0.7),
                                                           use_buffers=True)}[kind]

    ours, average = averaged_run(gl, make(optim.swa_utils))
    theirs, _ = averaged_run(torch, make(torch.optim.swa_utils))
    assert average.n_averaged.item() == 5 and len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_averaged_model_is_the_mean_of_the_weights_it_saw():
    ours, average = averaged_run(gl, lambda m: optim.swa_utils.AveragedModel(m))
    expected = np.mean([np.random.default_rng(k).standard_normal((3, 4)) for k in range(5)], axis=0)
    np.testing.assert_allclose(ours[0], expected, rtol=1e-14)
    np.testing.assert_allclose(ours[1], np.full(3, 2.0), rtol=1e-14)  # biases 0..4
    x = gl.ones(2, 4, dtype=gl.float64)
    average.eval()
    np.testing.assert_allclose(average(x).detach().numpy(), average.module(x).detach().numpy())


@requires_torch
def test_update_bn_recomputes_the_statistics_as_torch():
    def run(lib):
        nn = gl.nn if lib is gl else torch.nn
        model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3, momentum=0.3)).double()
        with (gl.no_grad() if lib is gl else torch.no_grad()):
            model[0].weight.copy_(lib.tensor(np.arange(12.0).reshape(3, 4) / 10, dtype=lib.float64))
            model[0].bias.fill_(0.5)
        model.eval()
        batches = [(lib.tensor(np.arange(20.0).reshape(5, 4) * k, dtype=lib.float64), None) for k in (1, 2, 3)]
        (optim.swa_utils if lib is gl else torch.optim.swa_utils).update_bn(batches, model)
        bn = model[1]
        return bn.running_mean.numpy(), bn.running_var.numpy(), bn.momentum, model.training

    ours, theirs = run(gl), run(torch)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    assert ours[2:] == theirs[2:] == (0.3, False)


@requires_torch
@pytest.mark.parametrize("options", [dict(swa_lr=0.05), dict(swa_lr=0.05, anneal_epochs=3, anneal_strategy="linear"),
                                     dict(swa_lr=[0.05], anneal_epochs=0)], ids=str)
def test_swalr_matches_torch(options):
    def lrs(lib):
        module = optim if lib is gl else torch.optim
        opt = module.SGD([lib.zeros(2, requires_grad=True)], lr=0.5)
        scheduler = module.swa_utils.SWALR(opt, **options)
        seen = []
        for _ in range(12):
            opt.step()
            scheduler.step()
            seen.append(opt.param_groups[0]["lr"])
        return seen, scheduler

    (ours, scheduler), (theirs, _) = lrs(gl), lrs(torch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-15)
    assert ours[-1] == pytest.approx(0.05)
    state = scheduler.state_dict()
    assert "anneal_func" not in state and "optimizer" not in state


def test_swa_utils_errors():
    swa = optim.swa_utils
    with pytest.raises(ValueError, match=r"^Invalid decay value 1.5 provided. Please provide a value in \[0,1\] "
                                         r"range.$"):
        swa.get_ema_multi_avg_fn(1.5)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn should be provided"):
        swa.AveragedModel(gl.nn.Linear(2, 2), avg_fn=swa.get_ema_avg_fn(), multi_avg_fn=swa.get_ema_multi_avg_fn())
    opt = optim.SGD([gl.zeros(2, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got step"):
        swa.SWALR(opt, 0.05, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0, got -1"):
        swa.SWALR(opt, 0.05, anneal_epochs=-1)

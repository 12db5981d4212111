"""gradlab.optim.lr_scheduler: every schedule's lr sequence against PyTorch's (exactly), ReduceLROnPlateau on a
scripted metric, OneCycleLR's momentum cycle, state_dict resume, warnings and bad input."""

from __future__ import annotations

import math
import warnings

import pytest
from helpers import requires_torch, torch

import gradlab as gl
import gradlab.optim as optim
from gradlab.optim import lr_scheduler as sched

STEPS = 30


def _optimizer(lib, name="SGD"):
    """Two groups with different lrs; lib is gradlab or torch (their optim modules have the same names)."""
    a = lib.zeros(2, requires_grad=True)
    b = lib.zeros(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if name == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return lib.optim.Adam(groups, lr=0.1)


def _lr_sequence(lib, make, steps=STEPS, key="lr"):
    """The lr (or momentum) of every group at construction and after each of ``steps`` scheduler steps."""
    opt = _optimizer(lib, "Adam" if key == "betas" else "SGD")
    scheduler = make(lib.optim.lr_scheduler, opt)

    def read():
        return [g[key][0] if key == "betas" else g[key] for g in opt.param_groups]

    seen = [read()]
    last = [scheduler.get_last_lr()]
    for _ in range(steps):
        opt.step()
        scheduler.step()
        seen.append(read())
        last.append(scheduler.get_last_lr())
    if key == "lr":
        assert last == seen  # get_last_lr() reports what the groups hold
    return seen


SCHEDULES = {
    "StepLR": lambda s, o: s.StepLR(o, step_size=4, gamma=0.5),
    "MultiStepLR": lambda s, o: s.MultiStepLR(o, milestones=[3, 7, 7, 15], gamma=0.3),
    "ExponentialLR": lambda s, o: s.ExponentialLR(o, gamma=0.9),
    "CosineAnnealingLR": lambda s, o: s.CosineAnnealingLR(o, T_max=10),
    "CosineAnnealingLR-eta_min": lambda s, o: s.CosineAnnealingLR(o, T_max=7, eta_min=0.01),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=5),
    "CosineAnnealingWarmRestarts-T_mult": lambda s, o: s.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001),
    "OneCycleLR-cos": lambda s, o: s.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=STEPS),
    "OneCycleLR-linear": lambda s, o: s.OneCycleLR(o, max_lr=0.8, total_steps=STEPS + 5, anneal_strategy="linear",
                                                   pct_start=0.4, div_factor=10.0, final_div_factor=100.0),
    "OneCycleLR-three_phase": lambda s, o: s.OneCycleLR(o, max_lr=1.0, epochs=3, steps_per_epoch=10, three_phase=True),
    "LambdaLR": lambda s, o: s.LambdaLR(o, lr_lambda=lambda epoch: 0.95 ** epoch),
    "LambdaLR-per-group": lambda s, o: s.LambdaLR(o, lr_lambda=[lambda e: 1 / (e + 1), lambda e: 0.5 + (e % 3)]),
    "MultiplicativeLR": lambda s, o: s.MultiplicativeLR(o, lr_lambda=lambda epoch: 0.97),
    "LinearLR": lambda s, o: s.LinearLR(o, start_factor=0.25, total_iters=8),
    "LinearLR-down": lambda s, o: s.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=12),
    "ConstantLR": lambda s, o: s.ConstantLR(o, factor=0.5, total_iters=4),
    "PolynomialLR": lambda s, o: s.PolynomialLR(o, total_iters=20, power=2.0),
    "SequentialLR": lambda s, o: s.SequentialLR(
        o, schedulers=[s.LinearLR(o, start_factor=0.1, total_iters=5), s.CosineAnnealingLR(o, T_max=20)],
        milestones=[5]),
    "SequentialLR-three": lambda s, o: s.SequentialLR(
        o, schedulers=[s.ConstantLR(o, factor=0.2, total_iters=3), s.ExponentialLR(o, gamma=0.8), s.StepLR(o, 3)],
        milestones=[4, 12]),
    "ChainedScheduler": lambda s, o: s.ChainedScheduler([s.ConstantLR(o, factor=0.5, total_iters=4),
                                                         s.ExponentialLR(o, gamma=0.9)]),
}


@requires_torch
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_lr_sequence_matches_torch_exactly(name):
    ours = _lr_sequence(gl, SCHEDULES[name])
    theirs = _lr_sequence(torch, SCHEDULES[name])
    assert ours == theirs  # exact floats: same formulas, same order of operations
    assert len({tuple(x) for x in ours}) > 1  # the schedule did change the lr


@requires_torch
@pytest.mark.parametrize("name", ["OneCycleLR-cos", "OneCycleLR-linear", "OneCycleLR-three_phase"])
def test_one_cycle_momentum_matches_torch(name):
    assert _lr_sequence(gl, SCHEDULES[name], key="momentum") == _lr_sequence(torch, SCHEDULES[name], key="momentum")
    assert _lr_sequence(gl, SCHEDULES[name], key="betas") == _lr_sequence(torch, SCHEDULES[name], key="betas")


def test_one_cycle_momentum_moves_against_the_lr():
    opt = _optimizer(gl)
    s = sched.OneCycleLR(opt, max_lr=1.0, total_steps=20, pct_start=0.25, base_momentum=0.8, max_momentum=0.9)
    lrs, momenta = [opt.param_groups[0]["lr"]], [opt.param_groups[0]["momentum"]]
    for _ in range(19):
        opt.step()
        s.step()
        lrs.append(opt.param_groups[0]["lr"])
        momenta.append(opt.param_groups[0]["momentum"])
    peak = lrs.index(max(lrs))
    assert peak == 4 and lrs[0] == pytest.approx(1.0 / 25) and lrs[-1] == pytest.approx(1.0 / 25 / 1e4)
    assert momenta[0] == pytest.approx(0.9) and momenta[peak] == pytest.approx(0.8)
    assert momenta[-1] == pytest.approx(0.9)
    assert all(b <= a for a, b in zip(momenta[:peak], momenta[1:peak + 1]))
    assert opt.param_groups[0]["max_lr"] == 1.0 and opt.param_groups[0]["initial_lr"] == 1.0 / 25
    adam = optim.Adam([gl.zeros(1, requires_grad=True)], betas=(0.5, 0.99))
    sched.OneCycleLR(adam, max_lr=0.1, total_steps=10)
    assert adam.param_groups[0]["betas"] == (0.95, 0.99)  # beta1 plays the momentum, beta2 is kept
    opt = _optimizer(gl)
    s = sched.OneCycleLR(opt, max_lr=0.1, total_steps=10)
    opt.step()
    with pytest.raises(ValueError, match="Tried to step 11 times. The specified number of total steps is 10"):
        for _ in range(11):
            s.step()


def test_cosine_annealing_by_formula():
    """The recursive form reproduces eta_min + (base - eta_min) * (1 + cos(pi * t / T_max)) / 2."""
    opt = optim.SGD([gl.zeros(1, requires_grad=True)], lr=0.1)
    s = sched.CosineAnnealingLR(opt, T_max=10, eta_min=0.001)
    for t in range(1, 25):
        opt.step()
        s.step()
        assert s.get_last_lr()[0] == pytest.approx(0.001 + (0.1 - 0.001) * (1 + math.cos(math.pi * t / 10)) / 2)


def test_step_and_multistep_by_hand():
    opt = optim.SGD([gl.zeros(1, requires_grad=True)], lr=1.0)
    s = sched.MultiStepLR(opt, milestones=[2, 5, 5], gamma=0.1)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(6):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    assert lrs == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.1, 0.001, 0.001])
    opt = optim.SGD([gl.zeros(1, requires_grad=True)], lr=1.0)
    s = sched.StepLR(opt, step_size=3, gamma=0.5)
    lrs = [s.get_last_lr()[0]]
    for _ in range(7):
        opt.step()
        s.step()
        lrs.append(s.get_last_lr()[0])
    assert lrs == [1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.25, 0.25]


@requires_torch
def test_warm_restarts_fractional_epochs_match_torch():
    """step(epoch) with a float epoch, once per batch: T_cur follows the fraction."""
    epochs = [e + i / 4 for e in range(12) for i in range(4)]
    sequences = []
    for lib in (gl, torch):
        opt = _optimizer(lib)
        s = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2, eta_min=0.01)
        lrs = []
        for epoch in epochs:
            opt.step()
            s.step(epoch)
            lrs.append((s.get_last_lr(), s.T_cur, s.T_i, s.last_epoch))
        sequences.append(lrs)
    assert sequences[0] == sequences[1]


def test_warm_restarts_fractional_epochs_by_formula():
    opt = optim.SGD([gl.zeros(1, requires_grad=True)], lr=0.1)
    s = sched.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    opt.step()
    s.step(4.5)  # cycles of 2 then 4 epochs: 4.5 is 2.5 into the second cycle
    assert (s.T_cur, s.T_i, s.last_epoch) == (2.5, 4, 4)
    assert s.get_last_lr()[0] == pytest.approx(0.1 * (1 + math.cos(math.pi * 2.5 / 4)) / 2)
    with pytest.raises(ValueError, match="Expected non-negative epoch, but got -1"):
        s.step(-1)


@requires_torch
@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LinearLR",
                                  "ConstantLR", "PolynomialLR"])
def test_closed_form_step_epoch_matches_torch(name):
    """The deprecated step(epoch) jumps with the closed form, and warns as torch does."""
    results = []
    for lib in (gl, torch):
        opt = _optimizer(lib)
        s = SCHEDULES[name](lib.optim.lr_scheduler, opt)
        lrs = []
        for epoch in [3, 9, 4, 17, 0, 25]:
            opt.step()
            with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
                s.step(epoch)
            lrs.append(s.get_last_lr())
        results.append(lrs)
    assert results[0] == results[1]


METRICS = [1.0, 0.9, 0.95, 0.91, 0.92, 0.89, 0.95, 0.96, 0.97, 0.98, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 0.49, 0.3]


def test_reduce_on_plateau_by_hand():
    """min mode, patience 2, cooldown 1, rel threshold 0.05: reductions after 3 bad epochs, then one quiet epoch."""
    opt = _optimizer(gl)
    s = sched.ReduceLROnPlateau(opt, factor=0.5, patience=2, threshold=0.05, cooldown=1, min_lr=[0.01, 0.02])
    lrs = []
    for metric in METRICS:
        opt.step()
        s.step(gl.tensor(metric))  # a 0-d tensor works as well as a float
        lrs.append(s.get_last_lr()[0])
    # best 0.9 at epoch 2; 0.95, 0.91, 0.92 are 3 bad epochs → halve at epoch 5; epoch 6 (0.89, not 5% better
    # than 0.9) falls in the cooldown; 7-9 are bad → halve at 9; 10 cooldown; best 0.5 at 11; 12-14 bad → halve
    # at 14; 15 cooldown; 16-18 bad → 0.00625 is under min_lr, so 0.01 at 18; 0.49 is not 5% better than 0.5.
    expected = [0.1] * 4 + [0.05] * 4 + [0.025] * 5 + [0.0125] * 4 + [0.01] * 3
    assert lrs == pytest.approx(expected)
    assert opt.param_groups[1]["lr"] == pytest.approx(0.02)  # held at its own min_lr
    assert s.best == pytest.approx(0.3) and s.last_epoch == len(METRICS)


@requires_torch
@pytest.mark.parametrize("options", [
    dict(factor=0.5, patience=2, threshold=0.05, cooldown=1, min_lr=[0.01, 0.02]),
    dict(mode="max", factor=0.3, patience=1, threshold=0.01, threshold_mode="abs"),
    dict(mode="max", patience=0, threshold_mode="rel", eps=0.02),
    dict(mode="min", factor=0.7, patience=1, threshold=0.1, threshold_mode="abs", cooldown=3, min_lr=0.003),
])
def test_reduce_on_plateau_matches_torch(options):
    sequences = []
    for lib in (gl, torch):
        opt = _optimizer(lib)
        s = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **options)
        lrs = []
        for metric in METRICS:
            opt.step()
            s.step(metric)
            lrs.append((s.get_last_lr(), s.num_bad_epochs, s.cooldown_counter, s.best))
        sequences.append(lrs)
    assert sequences[0] == sequences[1]


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts-T_mult", "OneCycleLR-cos",
                                  "LambdaLR", "SequentialLR", "LinearLR"])
def test_state_dict_resume_continues_identically(name):
    reference = _lr_sequence(gl, SCHEDULES[name])
    opt = _optimizer(gl)
    s = SCHEDULES[name](sched, opt)
    for _ in range(12):
        opt.step()
        s.step()
    saved_opt, saved = opt.state_dict(), s.state_dict()
    assert "optimizer" not in saved
    opt2 = _optimizer(gl)
    opt2.load_state_dict(saved_opt)
    s2 = SCHEDULES[name](sched, opt2)  # a fresh scheduler (its first step changes the lr) ...
    s2.load_state_dict(saved)  # ... takes the saved schedule's place
    opt2.load_state_dict(saved_opt)
    lrs = []
    for _ in range(STEPS - 12):
        opt2.step()
        s2.step()
        lrs.append([g["lr"] for g in opt2.param_groups])
    assert lrs == reference[13:]


def test_reduce_on_plateau_state_dict():
    opt = _optimizer(gl)
    s = sched.ReduceLROnPlateau(opt, mode="max", patience=1)
    for metric in [1.0, 0.5]:
        s.step(metric)
    s2 = sched.ReduceLROnPlateau(_optimizer(gl))
    s2.load_state_dict(s.state_dict())
    assert (s2.mode, s2.best, s2.num_bad_epochs, s2.mode_worse) == ("max", 1.0, 1, -math.inf)


def test_initial_lr_and_base_lrs():
    opt = _optimizer(gl)
    s = sched.ExponentialLR(opt, gamma=0.5)
    assert [g["initial_lr"] for g in opt.param_groups] == [0.1, 0.05] == s.base_lrs
    assert s.last_epoch == 0 and s.get_last_lr() == [0.1, 0.05]
    opt.step()
    s.step()
    assert s.last_epoch == 1 and s.get_last_lr() == [0.05, 0.025]
    resumed = sched.ExponentialLR(opt, gamma=0.5, last_epoch=1)  # resuming keeps initial_lr
    assert resumed.base_lrs == [0.1, 0.05]


def test_warns_when_stepped_before_the_optimizer():
    opt = _optimizer(gl)
    s = sched.StepLR(opt, step_size=2)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        s.step()
    opt = _optimizer(gl)
    s = sched.StepLR(opt, step_size=2)
    opt.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.step()
        s.step()
    with pytest.warns(UserWarning, match="please use `get_last_lr\\(\\)`"):
        s.get_lr()


def test_bad_input():
    opt = _optimizer(gl)
    with pytest.raises(TypeError, match="list is not an Optimizer"):
        sched.StepLR([], step_size=2)
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\] when resuming"):
        sched.StepLR(opt, step_size=2, last_epoch=3)
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        sched.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode maximum is unknown!"):
        sched.ReduceLROnPlateau(opt, mode="maximum")
    with pytest.raises(ValueError, match="threshold mode relative is unknown!"):
        sched.ReduceLROnPlateau(opt, threshold_mode="relative")
    with pytest.raises(ValueError, match="expected 2 min_lrs, got 1"):
        sched.ReduceLROnPlateau(opt, min_lr=[0.1])
    with pytest.raises(ValueError, match="Expected positive integer T_0, but got 0"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=0)
    with pytest.raises(ValueError, match="Expected integer T_mult >= 1, but got 1.5"):
        sched.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5)
    with pytest.raises(ValueError, match="You must define either total_steps OR \\(epochs AND steps_per_epoch\\)"):
        sched.OneCycleLR(opt, max_lr=0.1)
    with pytest.raises(ValueError, match="max_lr must have the same length as optimizer.param_groups. max_lr has 3"):
        sched.OneCycleLR(opt, max_lr=[0.1, 0.2, 0.3], total_steps=10)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', instead got exp"):
        sched.OneCycleLR(opt, max_lr=0.1, total_steps=10, anneal_strategy="exp")
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        sched.OneCycleLR(optim.Adagrad([gl.zeros(1, requires_grad=True)]), max_lr=0.1, total_steps=10)
    with pytest.raises(ValueError, match="Starting multiplicative factor expected to be greater than 0"):
        sched.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 3"):
        sched.LambdaLR(opt, [lambda e: 1.0] * 3)
    with pytest.raises(ValueError, match="Sequential Schedulers expects number of schedulers provided to be one more"):
        sched.SequentialLR(opt, [sched.ConstantLR(opt), sched.ConstantLR(opt)], milestones=[])
    with pytest.raises(ValueError, match="SequentialLR does not support `ReduceLROnPlateau`"):
        sched.SequentialLR(opt, [sched.ConstantLR(opt), sched.ReduceLROnPlateau(opt)], milestones=[3])
    with pytest.raises(ValueError, match="SequentialLR expects all schedulers to belong to the same optimizer"):
        sched.SequentialLR(opt, [sched.ConstantLR(opt), sched.ConstantLR(_optimizer(gl))], milestones=[3])

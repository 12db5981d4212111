"""Lab 6's exercises (labs/06-the-health-of-a-deep-network.ipynb): each one's setup rebuilt as the lab builds it;
the right answer passes its check, and each plausible wrong answer fails with the hint that points at its mistake."""

import math
import re

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
from gradlab import lab
from gradlab.data import DataLoader, TensorDataset, make_synthetic
from gradlab.training import fit


@pytest.fixture(scope="module")
def data():
    gl.manual_seed(0)
    X, y = make_synthetic("spiral", n=600, seed=0)
    return DataLoader(TensorDataset(X, y), batch_size=50, shuffle=True), nn.CrossEntropyLoss()


def deep_mlp(activation, depth=10, width=32):
    layers = [nn.Linear(2, width), activation()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), activation()]
    return nn.Sequential(*layers, nn.Linear(width, 2))


def kaiming(model):
    for layer in model:
        if isinstance(layer, nn.Linear):
            nn.init.kaiming_normal_(layer.weight, nonlinearity="relu")
            nn.init.zeros_(layer.bias)
    return model


# --- exercise 1: the init std that keeps the variance ------------------------------------------------------------

def test_exercise_1_the_kaiming_std_passes_and_the_usual_slips_are_named():
    right = lab.check_init_std("std", (2 / 64) ** 0.5, fan_in=64, fan_out=256)
    assert right.passed and "variance before: kept" in right.message
    fan_out = lab.check_init_std("std", (2 / 256) ** 0.5, fan_in=64, fan_out=256)
    assert not fan_out and re.search(r"too small by a factor of about (1\.9\d|2\.0\d)", fan_out.message)
    assert "which of the two fans" in fan_out.message
    no_gain = lab.check_init_std("std", (1 / 64) ** 0.5, fan_in=64, fan_out=256)
    assert not no_gain and "too small by a factor of about 1.4" in no_gain.message
    assert "a factor of 2 in the variance: what does ReLU do" in no_gain.message
    variance = lab.check_init_std("std", 2 / 64, fan_in=64, fan_out=256)
    assert not variance and "looks like a variance" in variance.message
    too_big = lab.check_init_std("std", 1.0, fan_in=64, fan_out=256)
    assert not too_big and "too big by a factor of about 5." in too_big.message  # √32 = 5.66, measured
    # the hints never print the answer
    assert all(f"{(2 / 64) ** 0.5:.3f}" not in v.message for v in (fan_out, no_gain, variance, too_big))


def test_exercise_1_without_relu_the_xavier_std_is_the_right_one():
    assert lab.check_init_std("std", 1 / 16, fan_in=256, fan_out=256, activation="linear").passed
    assert not lab.check_init_std("std", (2 / 256) ** 0.5, fan_in=256, fan_out=256, activation="linear")


def test_exercise_1_unsolved_and_bad_answers():
    assert lab.check_init_std("std", ..., fan_in=64, fan_out=256).status == "not done"
    assert "expected one number, got str" in lab.check_init_std("std", "0.17", fan_in=64, fan_out=256).message
    assert "a positive number, got -0.1" in lab.check_init_std("std", -0.1, fan_in=64, fan_out=256).message
    with pytest.raises(ValueError, match="'relu' or 'linear', got 'tanh'"):
        lab.check_init_std("std", 0.1, fan_in=64, fan_out=256, activation="tanh")
    with pytest.raises(ValueError, match=r"fan_in=...\): a positive int, got 0"):
        lab.check_init_std("std", 0.1, fan_in=0, fan_out=256)


# --- exercise 2: dead units of the hot ReLU net ------------------------------------------------------------------

@pytest.fixture(scope="module")
def hot(data):
    loader, loss_fn = data
    gl.manual_seed(2)
    hot_net = kaiming(deep_mlp(nn.ReLU, depth=6, width=32))
    hot_stats = lab.ActivationStats(hot_net)
    fit(hot_net, loader, loss_fn, gl.optim.SGD(hot_net.parameters(), lr=0.5, momentum=0.9), epochs=4, progress=False)
    return hot_stats


def test_exercise_2_the_dead_fraction_passes_and_equals_what_the_stats_keep(hot):
    h = hot.output("5")
    dead = (h == 0).all(0).float().mean().item()
    assert 0.3 < dead < 1  # the lab says most of the deeper layers' units are dead
    assert dead == hot.latest("dead")["5"]
    assert lab.check_dead_fraction("dead", dead, h).passed
    assert lab.check_dead_fraction("dead", gl.tensor(dead), h).passed  # a one-element tensor is a number too


def test_exercise_2_the_plausible_wrong_answers_get_their_hints(hot):
    h = hot.output("5")
    zeros = lab.check_dead_fraction("dead", (h == 0).float().mean().item(), h)
    assert not zeros and "each example counted" in zeros.message
    any_zero = lab.check_dead_fraction("dead", (h == 0).any(0).float().mean().item(), h)
    assert not any_zero and "0 for at least one example" in any_zero.message
    count = lab.check_dead_fraction("dead", (h == 0).all(0).float().sum().item(), h)
    assert not count and "a count of units" in count.message
    alive = lab.check_dead_fraction("dead", 1 - hot.latest("dead")["5"], h)
    assert not alive and "alive" in alive.message
    whole = lab.check_dead_fraction("dead", h == 0, h)
    assert not whole and "expected one number" in whole.message
    assert lab.check_dead_fraction("dead", ..., h).status == "not done"


# --- exercises 3 and 4: the update-to-weight ratio ---------------------------------------------------------------

@pytest.fixture(scope="module")
def one_step(data):
    loader, loss_fn = data
    gl.manual_seed(3)
    relu_net = kaiming(deep_mlp(nn.ReLU))
    sgd = gl.optim.SGD(relu_net.parameters(), lr=0.05)
    inputs, targets = next(iter(loader))
    sgd.zero_grad()
    loss_fn(relu_net(inputs), targets).backward()
    layer = relu_net[4]
    before, grad = layer.weight.detach().clone(), layer.weight.grad.clone()
    sgd.step()
    return before, layer.weight.detach().clone(), grad


def test_exercise_3_the_ratio_passes_and_is_near_the_guide(one_step):
    before, after, grad = one_step
    ratio = ((after - before).norm() / before.norm()).item()
    assert 3e-4 < ratio < 3e-2  # "near the guide", as the lab says
    verdict = lab.check_update_ratio("ratio", ratio, before, after, grad=grad)
    assert verdict.passed and f"log10 of it is {math.log10(ratio):.2f}" in verdict.message
    karpathy = ((after - before).std() / before.std()).item()  # makemore's std ratio: the same order, accepted
    assert lab.check_update_ratio("ratio", karpathy, before, after, grad=grad).passed


def test_exercise_3_the_plausible_wrong_answers_get_their_hints(one_step):
    before, after, grad = one_step
    of_grads = lab.check_update_ratio("ratio", (grad.norm() / before.norm()).item(), before, after, grad=grad)
    assert not of_grads and "the gradient's size" in of_grads.message and "learning rate" in of_grads.message
    squared = lab.check_update_ratio("ratio", (((after - before) ** 2).sum() / (before ** 2).sum()).item(),
                                     before, after, grad=grad)
    assert not squared and "squared norms" in squared.message
    alone = lab.check_update_ratio("ratio", (after - before).norm().item(), before, after, grad=grad)
    assert not alone and "not relative to the weights' size" in alone.message
    upside = lab.check_update_ratio("ratio", (before.norm() / (after - before).norm()).item(), before, after)
    assert not upside and "upside down" in upside.message
    assert lab.check_update_ratio("ratio", ..., before, after).status == "not done"
    with pytest.raises(ValueError, match="same weights, got shapes"):
        lab.check_update_ratio("ratio", 1e-3, before, after[:2])


@pytest.fixture(scope="module")
def trial(data):
    loader, loss_fn = data

    def trial(lr, steps=24):
        gl.manual_seed(6)
        model = kaiming(deep_mlp(nn.ReLU))
        trial_flow = lab.GradientFlow(model)
        optimizer = gl.optim.SGD(model.parameters(), lr=lr)
        batches = list(loader)
        for step in range(steps):
            inputs, targets = batches[step % len(batches)]
            optimizer.zero_grad()
            loss = loss_fn(model(inputs), targets)
            loss.backward()
            optimizer.step()
            trial_flow.update(loss)
        trial_flow.remove()
        return trial_flow
    return trial


def test_exercise_4_a_rate_near_the_guide_passes_and_the_others_say_which_way(trial):
    right = lab.check_learning_rate("lr", 0.03, trial)
    assert right.passed and "within a factor 2 of 0.001" in right.message
    high = lab.check_learning_rate("lr", 0.3, trial)
    assert not high and "make the learning rate smaller" in high.message
    low = lab.check_learning_rate("lr", 0.001, trial)
    assert not low and "make the learning rate larger" in low.message and "× below 0.001" in low.message
    blown = lab.check_learning_rate("lr", 10.0, trial)
    assert not blown and "blew up" in blown.message
    assert lab.check_learning_rate("lr", ..., trial).status == "not done"
    assert "a positive number, got 0" in lab.check_learning_rate("lr", 0, trial).message
    with pytest.raises(TypeError, match="trial is a function of the learning rate"):
        lab.check_learning_rate("lr", 0.03, None)


def test_the_typical_ratio_is_the_median_over_layers_of_each_layers_recent_median(trial):
    from gradlab.lab.health_exercises import typical_update_ratio
    flow = trial(0.03)
    series = flow.history()["series"]["update_ratio"]
    by_hand = np.median([np.median([v for v in values[12:] if v]) for values in series.values()])
    assert typical_update_ratio(flow) == pytest.approx(by_hand)

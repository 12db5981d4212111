"""Checked exercises about a network's health: an init's scale, dead units, the update-to-weight ratio.

Each check measures or recomputes the truth itself with numpy and, when the answer is off, says which
way and by how much, and recognises the usual slips (the wrong fan, ReLU's gain of 2 forgotten, a
gradient where an update was asked) without giving the answer.
"""

from __future__ import annotations

import math

import numpy as np

from .exercises import Verdict, answer_number, check_name
from .summary import as_numpy

STD_BAND = 0.1  # an init std within 10 % of the one that keeps the variance passes (the measurement's noise: ~2 %)
CLOSE = 0.06  # how near a factor must be to a known slip's before the hint names it
FRACTION_TOLERANCE = 1e-6  # a float32 mean of booleans; two fractions of a batch's units differ by far more
RATIO_TOLERANCE = 1e-2  # relative: an update ratio is an order of magnitude, and ‖W_after‖ vs ‖W_before‖ is ~1e-3


def measured_variance_ratio(std: float, fan_in: int, fan_out: int, activation: str, seed: int = 0) -> float:
    """Var(layer output) / Var(previous pre-activation), measured: unit-variance z, x = act(z), y = x @ W, W ~ N(0, std²)."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((2048, fan_in))
    x = np.maximum(z, 0) if activation == "relu" else z
    w = rng.standard_normal((fan_in, fan_out)) * std
    return float((x @ w).var() / z.var())


def check_init_std(name: str, std, *, fan_in: int, fan_out: int, activation: str = "relu") -> Verdict:
    """Is ``std`` the init std of a Linear(fan_in, fan_out) after ``activation`` ("relu" or "linear") that keeps
    the variance of the pre-activations layer after layer? Measured, not looked up: the hint says how far off."""
    check_name("check_init_std", name)
    if activation not in ("relu", "linear"):
        raise ValueError(f"check_init_std({name!r}, activation=...): 'relu' or 'linear', got {activation!r}")
    for what, fan in (("fan_in", fan_in), ("fan_out", fan_out)):
        if isinstance(fan, bool) or not isinstance(fan, int) or fan < 1:
            raise ValueError(f"check_init_std({name!r}, {what}=...): a positive int, got {fan!r}")
    value = answer_number(std, name)
    if isinstance(value, Verdict):
        return value
    if not value > 0 or not math.isfinite(value):
        return Verdict(name, "fail", f"a standard deviation is a positive number, got {value:g}")
    ratio = measured_variance_ratio(value, fan_in, fan_out, activation)
    factor = math.sqrt(ratio)  # yours / the one that keeps the variance
    through = f"through ten such layers the variance is multiplied by {ratio ** 10:.2g}"
    if abs(factor - 1) <= STD_BAND:
        return Verdict(name, "pass", f"the variance after the layer is {ratio:.2f}× the variance before: kept "
                                     f"({through})", abs(factor - 1))
    way = f"too big by a factor of about {factor:.2f}" if factor > 1 else \
        f"too small by a factor of about {1 / factor:.2f}"
    hint = f"the variance after the layer is {ratio:.3g}× the variance before: your std is {way} ({through})"
    gain = math.sqrt(2.0) if activation == "relu" else 1.0
    if activation == "relu" and _near(factor, 1 / gain):
        hint += "; a factor of 2 in the variance: what does ReLU do to half of its inputs?"
    elif _near(factor, math.sqrt(fan_in / fan_out)) or _near(factor, math.sqrt(fan_in / fan_out) / gain):
        hint += "; each output sums fan_in products: which of the two fans sets its variance?"
    elif _near(value, (value / factor) ** 2):
        hint += "; it looks like a variance: the std is its square root"
    return Verdict(name, "fail", hint, abs(factor - 1))


def _near(a: float, b: float) -> bool:
    return abs(a / b - 1) <= CLOSE


def check_dead_fraction(name: str, mine, activation) -> Verdict:
    """The fraction of dead units of a recorded ReLU output ``activation`` of shape (examples, units): the
    units that are 0 for every example of the batch."""
    check_name("check_dead_fraction", name)
    h = as_numpy(activation).astype(np.float64)
    if h.ndim != 2:
        raise ValueError(f"check_dead_fraction({name!r}, ..., activation): an output of shape (examples, units), "
                         f"got shape {tuple(h.shape)}")
    value = answer_number(mine, name)
    if isinstance(value, Verdict):
        return value
    zero = h <= 0
    truth = float(zero.all(axis=0).mean())
    dead = int(zero.all(axis=0).sum())
    if abs(value - truth) <= FRACTION_TOLERANCE:
        return Verdict(name, "pass", f"exact: {dead} of {h.shape[1]} units are 0 for all {h.shape[0]} examples", 0.0)
    readings = [
        (float(zero.mean()), "that is the fraction of outputs that are 0, each example counted: a unit is dead "
                             "when it is 0 for every example (its whole column)"),
        (float(zero.any(axis=0).mean()), "that counts a unit dead when it is 0 for at least one example; dead "
                                         "means 0 for every one of them"),
        (float(zero.all(axis=1).mean()), "that looks along the rows (the examples); the units are the columns"),
        (float(dead), "that is a count of units; the question asks for a fraction of them"),
        (1 - truth, "that is the fraction of units that are alive"),
    ]
    for wrong, hint in readings:
        if abs(value - wrong) <= FRACTION_TOLERANCE:
            return Verdict(name, "fail", hint, abs(value - truth))
    return Verdict(name, "fail", f"{value:g} is not the fraction of units (columns) that are 0 for every example "
                                 f"(rows) of the batch", abs(value - truth))


def check_update_ratio(name: str, mine, before, after, *, grad=None) -> Verdict:
    """‖W_after − W_before‖ / ‖W_before‖ for one layer's weights after one optimizer step (``grad``: the
    gradient that step used, so that a ratio of the gradient instead of the update is recognised)."""
    check_name("check_update_ratio", name)
    w0, w1 = as_numpy(before).astype(np.float64), as_numpy(after).astype(np.float64)
    if w0.shape != w1.shape:
        raise ValueError(f"check_update_ratio({name!r}): before and after are the same weights, got shapes "
                         f"{tuple(w0.shape)} and {tuple(w1.shape)}")
    value = answer_number(mine, name)
    if isinstance(value, Verdict):
        return value
    step, norm = np.linalg.norm(w1 - w0), np.linalg.norm(w0)
    truth = float(step / norm)
    if truth > 0 and abs(value / truth - 1) <= RATIO_TOLERANCE:
        return Verdict(name, "pass", f"{value:.3g} (‖ΔW‖ / ‖W‖ = {truth:.3g}): log10 of it is "
                                     f"{math.log10(truth):.2f}", abs(value / truth - 1))
    karpathy = float((w1 - w0).std() / w0.std()) if w0.std() > 0 else math.nan
    if abs(value / karpathy - 1) <= RATIO_TOLERANCE:
        return Verdict(name, "pass", f"{value:.3g}: Karpathy's std(ΔW) / std(W); the norms give {truth:.3g}, "
                                     "the same order of magnitude", abs(value / truth - 1))
    readings = [(truth ** 2, "that is the ratio of the squared norms: take the square root of each (a norm)"),
                (float(step), "that is the size of the update alone, not relative to the weights' size"),
                (1 / truth if truth else math.nan, "that is upside down: the update's size over the weights' size")]
    if grad is not None:
        g = np.linalg.norm(as_numpy(grad).astype(np.float64))
        readings.insert(0, (float(g / norm), "that is ‖∂L/∂W‖ / ‖W‖, the gradient's size: the ratio asked is of the "
                                             "update, the step the optimizer took (the learning rate times it)"))
    for wrong, hint in readings:
        if wrong and math.isfinite(wrong) and abs(value / wrong - 1) <= RATIO_TOLERANCE:
            return Verdict(name, "fail", hint, abs(value / truth - 1) if truth else None)
    far = value / truth if truth else math.inf
    return Verdict(name, "fail", f"{value:.3g} is {far:.3g}× the ratio of the update's norm to the weights' norm",
                   abs(far - 1))


def typical_update_ratio(flow) -> float:
    """The median over layers of each layer's median ‖ΔW‖ / ‖W‖ over the last half of the updates."""
    history = flow.history()
    per_layer = []
    for values in history["series"]["update_ratio"].values():
        if any(isinstance(v, str) for v in values):  # history() spells nan and inf as strings: training blew up
            return math.nan
        recent = [v for v in values[len(values) // 2:] if isinstance(v, (int, float)) and v > 0]
        if recent:
            per_layer.append(float(np.median(recent)))
    if not per_layer:
        raise ValueError("check_learning_rate: the trial's GradientFlow has no ‖ΔW‖ / ‖W‖ yet; call flow.update() "
                         "after each optimizer.step() in it")
    return float(np.median(per_layer))


def check_learning_rate(name: str, lr, trial, *, target: float = 1e-3, within: float = 2.0) -> Verdict:
    """Does training with ``lr`` give update-to-weight ratios near ``target`` (within a factor ``within``)?
    ``trial(lr)`` trains a fresh model a few steps and returns its GradientFlow (or the ratio itself)."""
    check_name("check_learning_rate", name)
    if not callable(trial):
        raise TypeError(f"check_learning_rate({name!r}, lr, trial): trial is a function of the learning rate that "
                        f"trains and returns a GradientFlow, got {type(trial).__name__}")
    value = answer_number(lr, name)
    if isinstance(value, Verdict):
        return value
    if not value > 0 or not math.isfinite(value):
        return Verdict(name, "fail", f"a learning rate is a positive number, got {value:g}")
    result = trial(value)
    ratio = float(result) if isinstance(result, (int, float)) else typical_update_ratio(result)
    if not math.isfinite(ratio):
        return Verdict(name, "fail", f"with lr = {value:g} training blew up (the ratio is {ratio}): much smaller")
    off = ratio / target
    if 1 / within <= off <= within:
        return Verdict(name, "pass", f"with lr = {value:g} the layers' typical ‖ΔW‖ / ‖W‖ is {ratio:.2g}, within a "
                                     f"factor {within:g} of {target:g}", abs(math.log10(off)))
    way = f"{off:.3g}× above {target:g}: make the learning rate smaller" if off > 1 else \
        f"{1 / off:.3g}× below {target:g}: make the learning rate larger"
    return Verdict(name, "fail", f"with lr = {value:g} the layers' typical ‖ΔW‖ / ‖W‖ is {ratio:.2g}, {way}",
                   abs(math.log10(off)))

"""The probes behind "check this node": an op rerun on float64 copies, its VJP, its slopes, its kinks.

``TensorProbe`` reruns a gradlab Function (``pytorch/node_check.py`` makes it rerun a PyTorch op),
``ScalarProbe`` a Scalar one; ``verdict`` turns what a probe measured into the check's answer.
"""

from __future__ import annotations

import math
import random

import numpy as np

from ..autograd.engine import grad
from ..autograd.function import TrackedTensor
from ..autograd.grad_mode import enable_grad, no_grad
from ..dtypes import float64
from ..generator import default_generator
from ..scalar import Scalar, ScalarContext
from .capture import _forward_arg_names
from .summary import as_numpy

STEP = 1e-6
TOLERANCE = 1e-5
KINK = 1e-3  # one-sided slopes further apart than this (relative) mark a kink, once a smaller step confirms it
SCALED_GRAD = 2.5  # a Scalar's backward is also run for this g: it must return 2.5 times what it gives for g = 1
MOST_ELEMENTS_LOCATED = 2048  # the elements probed one at a time to find where a kink is


def verdict(label: str, probe, rows: list) -> dict:
    kinked = [(row.pop("input"), row) for row in rows if row.pop("kinked")]
    for row in rows:
        row.pop("input", None)
    if not rows:
        return result(True, [], f"{label}: none of its inputs is differentiable, so there is nothing to check")
    random_note = (". Its forward draws random numbers: each run of the check replays the random state saved "
                   "before the first, so all of them draw the same") if probe.draws_random else ""
    extra = {"random": True} if probe.draws_random else {}
    if not all(math.isfinite(v) for row in rows for v in (row["analytic"], row["numeric"], row["error"])):
        for row in rows:
            row.update({k: (v if math.isfinite(v) else None) for k, v in row.items() if isinstance(v, float)})
        return {"ok": None, "inputs": rows, "tolerance": TOLERANCE, **extra,
                "message": f"{label}: its inputs or outputs hold NaN or inf here, so finite differences "
                           "cannot check it; check it on finite inputs"}
    unscaled = [(row, row.pop("scaled")) for row in rows if "scaled" in row]  # (a Scalar's, ScalarProbe.rows)
    agrees = all(row["error"] <= TOLERANCE for row in rows)
    worst = max(rows, key=lambda row: row["error"])
    if agrees and unscaled:
        row, got = unscaled[0]
        return result(False, rows, f"{label}: backward does not multiply by the gradient g it receives, for input "
                                    f"'{row['name']}': given g = 1 it returns {_short(row['analytic'])}, the local "
                                    f"derivative (right), but given g = {SCALED_GRAD:g} it returns {_short(got)}, not "
                                    f"{SCALED_GRAD:g} times as much. The chain rule: return g times the local derivative")
    if kinked:
        verdict = _kink_verdict(label, probe, rows, kinked, agrees, worst)
        return {**verdict, **extra, "message": verdict["message"] + random_note}
    if agrees:
        message = f"{label}: backward agrees with finite differences (worst relative error {worst['error']:.1e})"
    else:
        message = (f"{label}: backward DISAGREES with finite differences for input '{worst['name']}': "
                   f"backward says {worst['analytic']:.6g}, the slope is {worst['numeric']:.6g}"
                   + (" (the right size and the wrong sign: a sign slip)"
                      if _relative(worst["analytic"], -worst["numeric"]) <= TOLERANCE else ""))
    return {**result(agrees, rows, message + random_note), **extra}


def _kink_verdict(label, probe, rows, kinked, agrees, worst) -> dict:
    """The inputs sit on a kink: find the elements, and judge the engine's choice at each against its two sides."""
    found = probe.locate_kinks([i for i, _ in kinked])
    if found is None:  # too many elements to probe one at a time
        names = ", ".join(f"'{row['name']}'" for _, row in kinked)
        where = (f"{label}: its input {names} sits on a kink (the slopes from the left and from the right differ), "
                 f"where a function has no derivative and finite differences prove little")
        if agrees:
            return {**result(True, rows, f"{where}; backward agrees with the central difference "
                                          f"(worst relative error {worst['error']:.1e})"), "kinks": []}
        return {"ok": None, "inputs": rows, "tolerance": TOLERANCE, "kinks": [],
                "message": f"{where}. Backward differs from the central difference, which averages the two sides; "
                           f"the input has too many elements to find which sit on the kink: check it on a smaller one"}
    kinks, wrong = found
    if wrong is not None:  # an element with a derivative, where backward is wrong: that is the finding
        return {**result(False, rows, f"{label}: backward DISAGREES with finite differences at {wrong['where']}, "
                                       f"where the function has a derivative: backward says {_short(wrong['engine'])}, "
                                       f"the slope is {_short(wrong['slope'])}"), "kinks": kinks}
    if not kinks:  # the sides differ along the random direction, yet no element alone sits on a kink
        if agrees:
            return result(True, rows, f"{label}: backward agrees with finite differences (worst relative error "
                                       f"{worst['error']:.1e})")
        return {"ok": None, "inputs": rows, "tolerance": TOLERANCE, "kinks": [],
                "message": f"{label}: the slopes from the left and from the right differ along the direction "
                           "checked, though no single element sits on a kink: the inputs are at a point where the "
                           "function has no derivative, so finite differences cannot judge backward here"}
    bad = [k for k in kinks if not k["fair"]]
    first = bad[0] if bad else kinks[0]
    sides = (f"the one-sided slopes are {_short(first['left'])} (from the left) and {_short(first['right'])} "
             "(from the right)")
    if bad:
        message = (f"{label}: {first['where']} = {_short(first['value'])} is a kink of {label}: {sides}, but "
                   f"backward gives {_short(first['engine'])}, which is neither of them nor between them: "
                   "a wrong backward")
    else:
        choice = "one of them" if first["one_side"] else "between them"
        others = f" ({len(kinks)} elements sit on kinks; the first is shown)" if len(kinks) > 1 else ""
        message = (f"{label}: {first['where']} = {_short(first['value'])} is a kink of {label}: {sides}; "
                   f"the engine's choice {_short(first['engine'])} is {choice}{others}. A function has no derivative "
                   "at a kink, so the central difference (their average) cannot judge it; elsewhere backward agrees "
                   "with finite differences")
    return {**result(not bad, rows, message), "kinks": kinks}


def result(ok, rows, message) -> dict:
    """The check's answer: whether backward agrees, the rows for each input, and the sentence that says it."""
    return {"ok": bool(ok), "inputs": rows, "tolerance": TOLERANCE, "message": message}


def _relative(a: float, b: float) -> float:
    return abs(a - b) / max(1.0, abs(a), abs(b))


def _short(v: float) -> str:
    return f"{round(v, 6) + 0.0:.6g}"  # (+ 0.0: no "-0")


def _names(function, count) -> list:
    names = _forward_arg_names(function)
    return [names[i] if i < len(names) else f"input {i}" for i in range(count)]


def _is_kink(left: float, right: float, left_small: float, right_small: float, noise: float) -> bool:
    """Slopes from the two sides that differ, and keep differing at a quarter of the step (a smooth
    function's do not: their gap is the curvature times the step, and shrinks with it)."""
    gap, gap_small = right - left, right_small - left_small
    return abs(gap) > max(KINK * max(1.0, abs(left), abs(right)), noise) and abs(gap_small) > 0.5 * abs(gap)


class RandomStates:
    """The random generators a forward may draw from, saved: gradlab's default one, numpy's global one
    and Python's. ``replay()`` puts them back before each run; ``restore()`` at the end."""

    def __init__(self):
        self.saved = _take_states()

    def replay(self) -> None:
        gradlab_state, numpy_state, python_state = self.saved
        default_generator.set_state(gradlab_state)
        np.random.set_state(numpy_state)
        random.setstate(python_state)

    restore = replay

    def moved(self) -> bool:
        return not _same_state(_take_states(), self.saved)


def _take_states() -> tuple:
    return default_generator.get_state(), np.random.get_state(), random.getstate()


def _same_state(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_state(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    return a == b


class TensorProbe:
    """The Function rerun on float64 copies of its inputs, each run from the same random state.

    The engine's pieces are named once here (float64, no_grad, enable_grad, grad, how to call the
    function), so that the same probe checks a PyTorch op (``pytorch/node_check.py``)."""

    float64, no_grad, enable_grad, grad = float64, staticmethod(no_grad), staticmethod(enable_grad), staticmethod(grad)
    tensor_type = TrackedTensor

    def __init__(self, function, inputs, states: RandomStates):
        self.function, self.states = function, states
        self.wants = [isinstance(x, self.tensor_type) and x.dtype.is_floating_point for x in inputs]
        self.base = [x.detach().to(dtype=self.float64) if want else x for x, want in zip(inputs, self.wants)]
        self.names = self._names(len(inputs))
        first = self._outputs(self.base)
        self.draws_random = states.moved()
        again = self._outputs(self.base)
        self.unrepeatable = len(first) != len(again) or not all(
            np.array_equal(a, b, equal_nan=True) for a, b in zip(first, again))

    def _names(self, count) -> list:
        return _names(self.function, count)

    def _call(self, inputs):
        return self.function.apply(*inputs)

    def _apply(self, inputs):
        self.states.replay()
        out = self._call(inputs)
        outs = out if isinstance(out, tuple) else (out,)
        return [o for o in outs if isinstance(o, self.tensor_type) and o.dtype.is_floating_point]

    def _outputs(self, inputs) -> list:
        with self.no_grad():
            return [as_numpy(o) for o in self._apply(inputs)]

    def _projected(self, inputs, directions) -> float:
        with self.no_grad():
            outs = self._apply(inputs)
        return sum(float((o * v).sum().item()) for o, v in zip(outs, directions) if v is not None)

    @staticmethod
    def _noise(outputs, directions) -> float:
        """How far apart rounding alone can put two one-sided slopes: float64's error in ⟨v, f⟩, over the
        step, with room to spare (100 times)."""
        size = sum(float((o.detach().abs() * v.abs()).sum().item()) for o, v in zip(outputs, directions)
                   if v is not None)
        return 1e-7 * max(1.0, size)

    def _moved(self, i, delta):
        moved = list(self.base)
        moved[i] = self.base[i] + delta
        return moved

    def _vjp(self, directions):
        """vᵀJ for each differentiable input (None where an input got no gradient), from the same random state."""
        with self.enable_grad():
            leaves = [x.clone().requires_grad_(True) if want else x for x, want in zip(self.base, self.wants)]
            outputs = self._apply(leaves)
            if not outputs or not any(o.requires_grad for o in outputs):
                return None, outputs
            if directions is None:
                directions = [o.new_ones(tuple(o.shape)) if o.requires_grad else None for o in outputs]
            pairs = [(o, v) for o, v in zip(outputs, directions) if o.requires_grad]
            wanted = [leaf for leaf, want in zip(leaves, self.wants) if want]
            return self.grad([o for o, _ in pairs], wanted, [v for _, v in pairs], allow_unused=True), outputs

    def rows(self, rng) -> list:
        with self.no_grad():
            outputs = self._apply(self.base)
        if not outputs:
            return []
        self.directions = [o.new_tensor(rng.standard_normal(tuple(o.shape))) for o in outputs]
        grads, outputs = self._vjp(self.directions)
        if grads is None:
            return []
        directions = [v if o.requires_grad else None for o, v in zip(outputs, self.directions)]
        centre = self._projected(self.base, directions)
        noise = self._noise(outputs, directions)
        rows, k = [], 0
        for i, want in enumerate(self.wants):
            if not want:
                continue
            g = grads[k]
            k += 1
            u = self.base[i].new_tensor(rng.standard_normal(tuple(self.base[i].shape)))
            analytic = float((g * u).sum().item()) if g is not None else 0.0
            ahead, behind = (self._projected(self._moved(i, s * STEP * u), directions) for s in (1.0, -1.0))
            numeric = (ahead - behind) / (2 * STEP)
            left, right = (centre - behind) / STEP, (ahead - centre) / STEP
            kinked = False
            if abs(right - left) > max(KINK * max(1.0, abs(left), abs(right)), noise):
                ahead4, behind4 = (self._projected(self._moved(i, s * STEP / 4 * u), directions) for s in (1.0, -1.0))
                kinked = _is_kink(left, right, (centre - behind4) / (STEP / 4), (ahead4 - centre) / (STEP / 4), noise)
            rows.append({"name": self.names[i], "analytic": analytic, "numeric": numeric,
                         "error": _relative(analytic, numeric), "kinked": kinked, "input": i})
        return rows

    def locate_kinks(self, chosen: list):
        """Probe the kinked inputs one element at a time on the sum of the outputs: ([kinks], the first element
        with a derivative where backward is wrong, or None); None when there are too many elements."""
        inputs = [i for i, want in enumerate(self.wants) if want]
        if sum(self.base[i].numel() for i in chosen) > MOST_ELEMENTS_LOCATED:
            return None
        grads, outputs = self._vjp(None)
        ones = [o.new_ones(tuple(o.shape)) if o.requires_grad else None for o in outputs]
        centre = self._projected(self.base, ones)
        noise = self._noise(outputs, ones)
        kinks, wrong = [], None
        for i in chosen:
            g = grads[inputs.index(i)]
            engine = np.zeros(tuple(self.base[i].shape)) if g is None else as_numpy(g)
            values = as_numpy(self.base[i])
            for index in np.ndindex(*values.shape):
                def at(delta):
                    bump = np.zeros(values.shape)
                    bump[index] = delta
                    return self._projected(self._moved(i, self.base[i].new_tensor(bump)), ones)
                ahead, behind = at(STEP), at(-STEP)
                left, right = (centre - behind) / STEP, (ahead - centre) / STEP
                where = self.names[i] + (f"[{', '.join(map(str, index))}]" if values.ndim else "")
                choice = float(engine[index])
                if abs(right - left) > max(KINK * max(1.0, abs(left), abs(right)), noise):
                    ahead4, behind4 = at(STEP / 4), at(-STEP / 4)
                    if _is_kink(left, right, (centre - behind4) / (STEP / 4), (ahead4 - centre) / (STEP / 4), noise):
                        kinks.append(_kink(where, float(values[index]), left, right, choice))
                        continue
                slope = (ahead - behind) / (2 * STEP)
                if wrong is None and _relative(choice, slope) > 1e-4:
                    wrong = {"where": where, "engine": choice, "slope": slope}
        return kinks, wrong


def _kink(where, value, left, right, engine) -> dict:
    """One element on a kink, and whether the engine's choice there is fair (a value between the two sides)."""
    low, high = min(left, right), max(left, right)
    slack = 1e-4 * max(1.0, abs(low), abs(high))
    one_side = min(abs(engine - left), abs(engine - right)) <= slack
    return {"where": where, "value": value, "left": left, "right": right, "engine": engine,
            "one_side": one_side, "fair": low - slack <= engine <= high + slack}


class ScalarProbe:
    """A Scalar Function rerun on floats: its forward, its backward for the gradient 1, and its slopes.

    For g = 1 a backward that forgets to multiply by g looks right, so it also runs for g = 2.5 and must
    give 2.5 times as much."""

    draws_random = unrepeatable = False

    def __init__(self, function, inputs):
        self.function, self.inputs = function, inputs
        self.values = [x.data if isinstance(x, Scalar) else x for x in inputs]
        self.names = _names(function, len(self.values))

    def _at(self, i, shift) -> float:
        moved = list(self.values)
        moved[i] = self.values[i] + shift
        return self.function.forward(ScalarContext(self.function, self.inputs), *moved)

    def _backward(self, g) -> tuple:
        ctx = ScalarContext(self.function, self.inputs)
        self.function.forward(ctx, *self.values)
        grads = self.function.backward(ctx, g)
        return grads if isinstance(grads, tuple) else (grads,)

    def rows(self, rng) -> list:
        self.grads = self._backward(1.0)
        scaled = self._backward(SCALED_GRAD)  # g = 1 hides a backward that forgets to multiply by g
        centre = self._at(0, 0.0) if self.values else 0.0
        noise = 1e-7 * max(1.0, abs(centre))
        rows = []
        for i, x in enumerate(self.inputs):
            if not isinstance(x, Scalar):
                continue
            ahead, behind = self._at(i, STEP), self._at(i, -STEP)
            numeric = (ahead - behind) / (2 * STEP)
            analytic = self._engine(i)
            if math.isfinite(analytic) and math.isfinite(numeric):
                left, right = (centre - behind) / STEP, (ahead - centre) / STEP
                kinked = _is_kink(left, right, (centre - self._at(i, -STEP / 4)) / (STEP / 4),
                                  (self._at(i, STEP / 4) - centre) / (STEP / 4), noise)
                row = {"name": self.names[i], "analytic": float(analytic), "numeric": float(numeric),
                       "error": _relative(analytic, numeric), "kinked": kinked, "input": i}
                got = scaled[i] if i < len(scaled) and scaled[i] is not None else 0.0
                if _relative(got, SCALED_GRAD * analytic) > TOLERANCE:
                    row["scaled"] = float(got)  # not linear in g: _verdict says so
                rows.append(row)
        return rows

    def _engine(self, i) -> float:
        return self.grads[i] if i < len(self.grads) and self.grads[i] is not None else 0.0

    def locate_kinks(self, chosen: list):
        """Each Scalar input is one element: its one-sided slopes, against the backward's choice."""
        centre = self._at(0, 0.0)
        kinks = []
        for i in chosen:
            left = (centre - self._at(i, -STEP)) / STEP
            right = (self._at(i, STEP) - centre) / STEP
            kinks.append(_kink(self.names[i], self.values[i], left, right, float(self._engine(i))))
        return kinks, None

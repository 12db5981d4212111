"""Checked exercises: the learner's answer against the engine's, with a hint that points at the mistake.

Every check returns a ``Verdict``: *pass*, *fail* with a hint (the shape expected, the sign flipped,
the element that is off and by how much — never the answer itself), or *not done yet* while the
exercise cell still holds ``...``, so an unsolved notebook runs to its end. Answers are compared as
CS231n does, by relative error in float64, and reported as Zero to Hero's ``cmp`` does: exact,
approximate (with the largest relative error), or wrong. A check against finite differences also says
which of CS231n's bands its error is in; ``Verdicts.show_on(view)`` colours each checked tensor's node
of a GraphView by how far your gradient is from the true one.
"""

from __future__ import annotations

from html import escape

import numpy as np

from ..autograd import grad as autograd_grad
from ..autograd.function import TrackedTensor
from ..autograd.grad_mode import no_grad
from ..creation import tensor
from ..dtypes import float64
from ..scalar import Scalar
from .colors import ALARM_INK, AXIS_INK, PASS_INK, html_ink
from .mistakes import relative_errors, shape_hint, value_hint
from .summary import as_numpy

TOLERANCE = 1e-6  # the largest relative error that passes, in float64 (CS231n: below 1e-7 all is well)
LOW_PRECISION_TOLERANCE = 1e-3  # when either side was computed in float32 or lower
NOT_DONE = (Ellipsis, None)  # what an exercise cell holds until the learner writes an answer

# CS231n's reading of a gradient check's relative error, from the top: (below this, what it means).
BANDS = ((1e-7, "right (CS231n: below 1e-7)"),
         (1e-4, "probably right: fine where the function has kinks (ReLU), too high for a smooth one"),
         (1e-2, "uncomfortable: probably wrong (CS231n: between 1e-4 and 1e-2)"),
         (float("inf"), "wrong (CS231n: above 1e-2)"))
FINITE_DIFFERENCE_TOLERANCE = 1e-4  # below it a finite-difference check passes: CS231n's "probably right" or better
YOURS_MODE = "yours"  # the GraphView colour mode show_on adds
YOURS_LIMITS = (1e-16, 1.0)  # its fixed scale: float64's rounding to the largest relative error there is
YOURS_TITLE = "relative error of your gradient (CS231n: < 1e-7 right, > 1e-2 wrong)"


class Verdict:
    """The outcome of one check: ``status`` is "pass", "fail" or "not done", ``message`` says it in words.

    ``error`` is the largest relative error found (None when values were never compared); ``band`` is
    CS231n's reading of it, for a check against finite differences; ``bool(verdict)`` is whether it
    passed, so ``assert gl.lab.check(...)`` works in a script."""

    SYMBOLS = {"pass": "✓", "fail": "✗", "not done": "○"}

    def __init__(self, name: str, status: str, message: str, error: float | None = None, band: str | None = None):
        self.name, self.status, self.message, self.error, self.band = name, status, message, error, band
        self.of = None  # the tensor whose gradient was checked, when one was given: where show_on colours

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"{self.SYMBOLS[self.status]} {self.name}: {self.message}"

    def _repr_html_(self) -> str:
        ink = html_ink({"pass": PASS_INK, "fail": ALARM_INK, "not done": AXIS_INK}[self.status])
        return (f'<div class="gl-verdict gl-verdict-{self.status.replace(" ", "-")}" style="border-left:4px solid '
                f'{ink};padding:4px 10px;margin:4px 0;font-family:Helvetica,Arial,sans-serif;font-size:13px">'
                f'<b style="color:{ink}">{self.SYMBOLS[self.status]} {escape(self.name)}</b> — '
                f'{escape(self.message)}</div>')


class Verdicts(list):
    """Several verdicts, shown as one table (Zero to Hero's column of ``cmp`` lines); true when all passed."""

    @property
    def passed(self) -> bool:
        return all(v.passed for v in self)

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return "\n".join(map(repr, self))

    def _repr_html_(self) -> str:
        return "".join(v._repr_html_() for v in self)

    def show_on(self, view, tensors: dict | None = None):
        """Colour ``view`` (a GraphView) by each checked gradient's relative error, in a colour mode
        "your gradients", on a fixed log scale; returns the view. Each verdict colours the node of the
        tensor it was checked against, or of ``tensors[name]``; one not done yet is drawn as unknown."""
        return show_errors(view, self, tensors)


def check(name: str, mine, expected, *, tolerance: float | None = None) -> Verdict:
    """Compare the learner's ``mine`` with ``expected`` (tensors, arrays, Scalars or numbers).

    Passes when the largest relative error is at most ``tolerance`` (1e-6 in float64, 1e-3 when either
    side is float32 or lower). A wrong shape names the shape expected; wrong values get a hint."""
    check_name("check", name)
    if not_done(mine):
        return not_done_yet(name)
    truth = _as_array(expected, "check", "expected", name)
    answer = _answer_array(mine, name)
    if isinstance(answer, Verdict):
        return answer
    return _compare(name, answer, truth, tolerance if tolerance is not None else _tolerance(mine, expected))


def check_gradient(name: str, mine, of, *, tolerance: float | None = None) -> Verdict:
    """Compare a hand-written gradient with the engine's: ``of`` is the tensor (or Scalar) whose ``.grad``
    is the truth, after ``loss.backward()``, or the true gradient itself as an array.

    ``check_gradient("dlogits", dlogits, logits)`` is Zero to Hero's ``cmp("logits", dlogits, logits)``."""
    check_name("check_gradient", name)
    if isinstance(of, (TrackedTensor, Scalar)):
        truth = of.grad
        if truth is None:
            where = ("call .retain_grad() on it before loss.backward(), so its gradient is kept"
                     if isinstance(of, TrackedTensor) and of.grad_fn is not None
                     else "run loss.backward() first")
            raise ValueError(f"check_gradient({name!r}): the tensor given as the truth has no .grad yet; {where}")
        verdict = not_done_yet(name) if not_done(mine) else check(name, mine, truth, tolerance=tolerance)
        verdict.of = of
        return verdict
    return check(name, mine, of, tolerance=tolerance)


def check_gradients(answers: dict, *, tolerance: float | None = None) -> Verdicts:
    """Many ``check_gradient``s at once: ``{"dW1": (dW1, W1), "db1": (db1, b1), ...}``, one line each."""
    if not isinstance(answers, dict):
        raise TypeError(f"check_gradients: give a dict of name -> (your gradient, the tensor it is the gradient "
                        f"of), got a {type(answers).__name__}")
    verdicts = Verdicts()
    for name, pair in answers.items():
        if not (isinstance(pair, tuple) and len(pair) == 2):
            raise TypeError(f"check_gradients: the entry {name!r} should be a pair (your gradient, the tensor it is "
                            f"the gradient of), got {type(pair).__name__}")
        verdicts.append(check_gradient(name, *pair, tolerance=tolerance))
    return verdicts


def check_function(name: str, mine, reference, *inputs, tolerance: float | None = None,
                   gradients: bool = False) -> Verdict:
    """Call the learner's function ``mine`` and ``reference`` on the same ``inputs`` and compare the outputs.

    With ``gradients=True`` the gradients of each output's sum with respect to every input that requires
    grad are compared too (the learner's function must be differentiable by the engine)."""
    check_name("check_function", name)
    got = call_learner(mine, inputs, name)
    if isinstance(got, Verdict):
        return got
    want = reference(*inputs)
    verdict = check(name, got, want, tolerance=tolerance)
    if not (verdict.passed and gradients):
        return verdict
    wrt = [x for x in inputs if isinstance(x, TrackedTensor) and x.requires_grad]
    if not isinstance(got, TrackedTensor) or got.grad_fn is None:
        return Verdict(name, "fail", "the values are right, but your output has no graph, so no gradient flows "
                                     "back through it: compute it with the engine's operations, not with numpy")
    try:
        mine_grads = autograd_grad(got.sum(), wrt, allow_unused=True)
    except Exception as error:  # the learner's backward: its failure (or its ...) is the verdict
        if "got ellipsis" in str(error):
            return not_done_yet(name)
        return Verdict(name, "fail", f"the values are right, but your backward raised {type(error).__name__}: {error}")
    true_grads = autograd_grad(want.sum(), wrt, allow_unused=True)
    for i, (g, t) in enumerate(zip(mine_grads, true_grads)):
        if g is None:
            return Verdict(name, "fail", f"the values are right, but no gradient reaches input {i} through your "
                                         "function (a .detach(), .item() or numpy in the way?)")
        grad_verdict = check(f"{name} (gradient of input {i})", g, t, tolerance=tolerance)
        if not grad_verdict.passed:
            return Verdict(name, "fail", f"the values are right, the gradient of input {i} is not: "
                                         f"{grad_verdict.message}", grad_verdict.error)
    return Verdict(name, "pass", f"{verdict.message}, and so are the gradients", verdict.error)


def check_numerically(name: str, mine, f, x, *, coordinates: int = 6, step: float = 1e-5,
                      seed: int = 0) -> Verdict:
    """CS231n's gradient check: your gradient of ``f`` at ``x`` against centred differences, in float64.

    ``f(x)`` returns the loss (a number or a one-element tensor) for a tensor ``x`` of ``x``'s shape; at
    ``coordinates`` random elements the slope ``(f(x + h) − f(x − h)) / 2h`` is compared with ``mine``. The
    verdict names CS231n's band of the worst relative error, and passes below 1e-4."""
    check_name("check_numerically", name)
    if not_done(mine):
        return not_done_yet(name)
    if not callable(f):
        raise TypeError(f"check_numerically({name!r}): f is the loss as a function of x (f(x) -> a number), "
                        f"got a {type(f).__name__}")
    base = _as_array(x, "check_numerically", "x", name).astype(np.float64)
    answer = _answer_array(mine, name)
    if isinstance(answer, Verdict):
        return answer
    if answer.shape != base.shape:
        return Verdict(name, "fail", shape_hint(answer.shape, base.shape))
    rng = np.random.default_rng(seed)
    picked = [np.unravel_index(int(i), base.shape) for i in
              rng.choice(base.size, size=min(coordinates, base.size), replace=False)]
    slopes = np.array([_centred_difference(f, base, index, step, x) for index in picked])
    yours = np.array([float(answer[index]) for index in picked])
    errors = relative_errors(yours, slopes)
    worst = float(errors.max(initial=0.0))
    band = cs231n_band(worst)
    where = tuple(int(i) for i in picked[int(np.argmax(errors))])
    message = (f"at {len(picked)} coordinates, worst relative error {worst:.1e}"
               f"{f' (at index {where})' if worst > 1e-7 else ''}: {band}")
    return Verdict(name, "pass" if worst < FINITE_DIFFERENCE_TOLERANCE else "fail", message, worst, band)


def cs231n_band(error: float) -> str:
    """What CS231n's notes say a gradient check's relative error means: right, probably right, uncomfortable,
    or wrong."""
    return next(text for limit, text in BANDS if error < limit)


def check_this_node(name: str, view, node) -> Verdict:
    """"Check this node" as an exercise's check: a Function's backward (the node ``node`` of the GraphView
    ``view``) against finite differences on the inputs it got; the view's inspector shows the result too.
    A backward that still returns ``...`` is not done yet."""
    check_name("check_this_node", name)
    try:
        result = view.check(node)
    except TypeError as error:  # the learner's backward: its ... (or a wrong return) is the verdict
        if "ellipsis" in str(error):  # (a tensor op says "got ellipsis"; float maths "not ellipsis")
            return not_done_yet(name)
        return Verdict(name, "fail", f"your backward raised TypeError: {error}")
    errors = [row["error"] for row in result.get("inputs", []) if row.get("error") is not None]
    worst = max(errors) if errors else None
    status = {True: "pass", False: "fail"}.get(result["ok"], "fail")
    return Verdict(name, status, result["message"], worst, cs231n_band(worst) if worst is not None else None)


def show_errors(view, verdicts, tensors: dict | None = None):
    """Colour ``view`` by each verdict's relative error (``Verdicts.show_on``); returns the view."""
    named = {v.name: v for v in verdicts}
    unknown = sorted(set(tensors or {}) - set(named))
    if unknown:
        raise KeyError(f"show_on: no verdict is named {unknown[0]!r}; the verdicts are {', '.join(map(repr, named))}")
    sizes: dict = {}
    for verdict in verdicts:
        tensor = (tensors or {}).get(verdict.name, verdict.of)
        if tensor is None:
            continue
        node = view.graph.node_for(tensor) or view.graph.node_for(getattr(tensor, "grad_fn", None))
        if node is None:
            raise KeyError(f"show_on: the tensor {verdict.name!r} was checked against is not drawn in this view "
                           "(draw the recording of the forward that made it: with gl.lab.record() as rec: ...)")
        error = _error_drawn(verdict)
        if error is not None or node.id not in sizes:
            sizes[node.id] = max(error, sizes.get(node.id) or 0.0) if error is not None else None
    view.add_color_mode(YOURS_MODE, sizes, YOURS_TITLE, label="your gradients", missing="not checked or not done yet",
                        text=lambda v: f"{v:.0e}", limits=YOURS_LIMITS)
    view.color_mode = YOURS_MODE
    return view


def _error_drawn(verdict) -> float | None:
    """A verdict's error as its node is coloured: exact at the scale's bottom, a wrong shape (no error
    measured) at its top, not done yet unknown (None)."""
    if verdict.status == "not done":
        return None
    if verdict.error is None:
        return YOURS_LIMITS[1] if verdict.status == "fail" else YOURS_LIMITS[0]
    return min(YOURS_LIMITS[1], max(verdict.error, YOURS_LIMITS[0]))


def _centred_difference(f, base: np.ndarray, index: tuple, step: float, like) -> float:
    """(f(x + h·e) − f(x − h·e)) / 2h for the unit vector e at ``index``, x a float64 copy of ``like``."""
    values = []
    for sign in (1.0, -1.0):
        moved = base.copy()
        moved[index] += sign * step
        with no_grad():
            out = f(tensor(moved, dtype=float64, device=getattr(like, "device", None))
                    if isinstance(like, TrackedTensor) else moved)
        values.append(float(out.item() if hasattr(out, "item") else out))
    return (values[0] - values[1]) / (2 * step)


# --- comparing -----------------------------------------------------------------------------------------

def _compare(name: str, mine: np.ndarray, truth: np.ndarray, tolerance: float) -> Verdict:
    if mine.shape != truth.shape:
        if mine.size == truth.size == 1:
            mine = mine.reshape(truth.shape)
        else:
            return Verdict(name, "fail", shape_hint(mine.shape, truth.shape))
    errors = relative_errors(mine.astype(np.float64), truth.astype(np.float64))
    worst = float(errors.max(initial=0.0))
    if np.array_equal(mine, truth, equal_nan=True):
        return Verdict(name, "pass", "exact", 0.0)
    if worst <= tolerance:
        return Verdict(name, "pass", f"approximately (largest relative error {worst:.1e}, within {tolerance:g})", worst)
    return Verdict(name, "fail", value_hint(mine.astype(np.float64), truth.astype(np.float64), errors), worst)


def _tolerance(*values) -> float:
    low = any(str(getattr(v, "dtype", "")).replace("gradlab.", "") in ("float32", "float16", "bfloat16")
              for v in values)
    return LOW_PRECISION_TOLERANCE if low else TOLERANCE


def _answer_array(mine, name: str):
    """The learner's answer as an array, or a failing Verdict that says what it was instead."""
    if isinstance(mine, (str, bytes, dict, set)) or callable(mine):
        return Verdict(name, "fail", f"expected numbers (a tensor, an array or a number), got a {type(mine).__name__}")
    try:
        array = _as_array(mine, "check", "your answer", name)
    except (TypeError, ValueError) as error:
        return Verdict(name, "fail", str(error))
    if not np.issubdtype(array.dtype, np.number) and array.dtype != bool:
        return Verdict(name, "fail", f"expected numbers, got an array of {array.dtype}")
    return array


def _as_array(value, where: str, what: str, name: str) -> np.ndarray:
    if isinstance(value, Scalar):
        return np.asarray(value.data, dtype=np.float64)
    if isinstance(value, TrackedTensor):
        return as_numpy(value.detach())
    try:
        return np.asarray(value) if not isinstance(value, (list, tuple)) else np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{where}({name!r}): {what} is a {type(value).__name__}, which is not numbers") from None


def not_done(value) -> bool:
    """Is this answer still the placeholder: ``...`` or None (a list or tuple: while any of its answers is
    still ``...``)."""
    if isinstance(value, (list, tuple)):
        return any(v is Ellipsis for v in value)
    return any(value is marker for marker in NOT_DONE)


def not_done_yet(name: str) -> Verdict:
    """The verdict of an exercise the learner has not written yet (○: not a failure)."""
    return Verdict(name, "not done", "not done yet: write your answer in place of the ... in the cell above")


def answer_number(value, name: str):
    """The learner's answer as a float; or the verdict instead: not done yet, or what it was if not one number."""
    if not_done(value):
        return not_done_yet(name)
    try:
        array = as_numpy(value) if hasattr(value, "detach") else np.asarray(value)
    except (TypeError, ValueError):
        array = None
    if array is None or isinstance(value, (str, bytes, bool)) or array.size != 1 or \
            not np.issubdtype(array.dtype, np.number):
        return Verdict(name, "fail", f"expected one number, got {type(value).__name__}"
                                     + (f" of shape {tuple(array.shape)}" if array is not None and array.ndim else ""))
    return float(array.reshape(()))


def call_learner(mine, inputs, name: str):
    """What the learner's function returns on ``inputs``; or the verdict instead: not done yet, not a
    function, or the exception it raised (the learner's failure is a verdict, never a traceback)."""
    if not_done(mine):
        return not_done_yet(name)
    if not callable(mine):
        return Verdict(name, "fail", f"expected a function, got a {type(mine).__name__}")
    try:
        got = mine(*inputs)
    except Exception as error:
        return Verdict(name, "fail", f"your function raised {type(error).__name__}: {error}")
    return not_done_yet(name) if not_done(got) else got


def check_name(where: str, name) -> None:
    """Refuse a check called without the exercise's name first (a mistake in the lab, not the learner's)."""
    if not isinstance(name, str):
        raise TypeError(f"{where}: the first argument is the exercise's name (a string, e.g. 'dW1'), got "
                        f"{type(name).__name__}; write {where}('dW1', your_answer, ...)")

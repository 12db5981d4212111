"""Checked exercises about skip connections (lab 10): a residual block's forward, the gradient through y = x + F(x),
the product-of-Jacobians bound of a plain stack, and the skip that makes the shapes match.

Each check recomputes the truth itself (the engine's own backward, numpy's singular values) and recognises the
usual slips: the identity term forgotten, an activation after the sum, a Jacobian not transposed, norms added
instead of multiplied, a skip whose shape cannot be added. A hint names the slip, never the answer.
"""

from __future__ import annotations

import numpy as np

from ..autograd.functional import jacobian as engine_jacobian
from ..autograd.grad_mode import no_grad
from ..creation import tensor
from ..ops.activations import relu
from ..random import manual_seed, randn
from .exercises import Verdict, check, check_name, not_done, not_done_yet
from .summary import as_numpy

CLOSE = 1e-4  # relative: two float32 results of the same formula agree to ~1e-6; a slip is off by far more


def _array(value):
    if hasattr(value, "detach"):
        return as_numpy(value.detach()).astype(np.float64)
    return np.asarray(value, dtype=np.float64)


def _same(a, b) -> bool:
    a, b = _array(a), _array(b)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=CLOSE, atol=CLOSE * (np.abs(b).max(initial=0) + 1e-12)))


# --- exercise: the residual block's forward ----------------------------------------------------------------------

def check_residual_block(name: str, block_class, *, width: int = 8, trials: int = 3) -> Verdict:
    """Does ``block_class(width)``'s forward return x + self.f(x)? Tried on random x with freshly drawn parameters.

    The block keeps its branch F as ``self.f`` (a module); the check compares the output with x + self.f(x) and
    names the slips: F(x) alone, x alone, relu(x + F(x)), a shape that cannot be the block's."""
    check_name("check_residual_block", name)
    if not isinstance(block_class, type):
        raise TypeError(f"check_residual_block({name!r}, block_class): the class itself (e.g. ResidualBlock), "
                        f"got {type(block_class).__name__}")
    generator = np.random.default_rng(0)
    for trial in range(trials):
        manual_seed(100 + trial)
        block = block_class(width)
        branch = getattr(block, "f", None)
        if branch is None or not callable(branch):
            raise AttributeError(f"check_residual_block({name!r}): {block_class.__name__}({width}) has no branch "
                                 f"self.f; keep the lab's __init__, which builds F as self.f")
        x = tensor(generator.standard_normal((5, width)).astype(np.float32))
        with no_grad():
            out = block(x)
            if not_done(out):
                return not_done_yet(name)
            if not hasattr(out, "shape"):
                return Verdict(name, "fail", f"forward returned a {type(out).__name__}; it returns a tensor, "
                                             f"the block's output")
            f_x = branch(x)
            truth = x + f_x
        if tuple(out.shape) != tuple(truth.shape):
            return Verdict(name, "fail", f"for x of shape {tuple(x.shape)} forward returned shape "
                                         f"{tuple(out.shape)}; a residual block's output has its input's shape")
        if _same(out, truth):
            continue
        if _same(out, f_x):
            hint = ("your output is F(x) alone: the identity term is missing, and with it the path that carries "
                    "the gradient unchanged; the block adds its input back")
        elif _same(out, x):
            hint = "your output is x alone: the branch F is never used"
        elif _same(out, relu(truth)):
            hint = ("your output is never negative: an activation after the sum clips the skip path, so the "
                    "block no longer passes x (and its gradient) through unchanged; nothing comes after the +")
        elif _same(out, x + relu(f_x)):
            hint = ("an activation on F(x) before the sum: F already ends with its last Linear; add its output "
                    "to x as it is")
        else:
            worst = float(np.abs(_array(out) - _array(truth)).max())
            hint = (f"for a random x your output differs from the block's by up to {worst:.3g}; the block's "
                    f"output is its input plus its branch, both of the same shape")
        return Verdict(name, "fail", hint)
    return Verdict(name, "pass", f"x + F(x) for {trials} random inputs and parameter draws")


# --- exercise: the gradient through y = x + F(x) -----------------------------------------------------------------

def check_skip_gradient(name: str, mine, F, x, upstream) -> Verdict:
    """Is ``mine`` ∂L/∂x for y = x + F(x), L = Σ upstream·y (so ∂L/∂y = upstream)? The truth is the engine's backward.

    ``x`` is a vector. Names the slips: the identity term forgotten (only ∂F/∂xᵀ·g), only the skip's g, F's
    Jacobian not transposed (J·g for Jᵀ·g)."""
    check_name("check_skip_gradient", name)
    if not_done(mine):
        return not_done_yet(name)
    leaf = tensor(_array(x).astype(np.float32), requires_grad=True)
    g = _array(upstream)
    ((leaf + F(leaf)) * tensor(g.astype(np.float32))).sum().backward()
    truth = _array(leaf.grad)
    jacobian = _array(engine_jacobian(F, leaf.detach()))
    verdict = check(name, mine, truth, tolerance=1e-3)
    if verdict.passed or _array_or_none(mine) is None or _array(mine).shape != truth.shape:
        return verdict
    answer = _array(mine)
    if _same(answer, truth - g):
        hint = ("you have F's term only, ∂F/∂xᵀ·g: the identity term is missing. The skip path sends ∂L/∂y to x "
                "unchanged, and the two paths' gradients add up at x")
    elif _same(answer, g):
        hint = "you have the skip path's term only, ∂L/∂y itself: F's path also reaches x, through ∂F/∂x"
    elif jacobian.shape == (g.size, g.size) and _same(answer, g + jacobian @ g):
        hint = ("F's term uses the Jacobian, not its transpose: backward multiplies ∂L/∂y by ∂F/∂x from the "
                "left, a row vector times the matrix, which is the transpose times a column")
    else:
        hint = verdict.message
    return Verdict(name, "fail", hint, verdict.error)


def _array_or_none(value):
    try:
        return _array(value)
    except (TypeError, ValueError):
        return None


# --- exercise: the product-of-Jacobians bound --------------------------------------------------------------------

def check_jacobian_bound(name: str, mine, jacobians, top_gradient) -> Verdict:
    """Is ``mine`` the chain rule's bound ‖∂L/∂h₀‖ ≤ ‖∂L/∂h_L‖ · Π ‖J_l‖, with ‖J‖ the spectral norm (largest
    singular value)? Names the slips: norms added, Frobenius norms, the top gradient's norm left out."""
    check_name("check_jacobian_bound", name)
    if not_done(mine):
        return not_done_yet(name)
    matrices = [_array(j) for j in jacobians]
    if not matrices or any(m.ndim != 2 for m in matrices):
        raise ValueError(f"check_jacobian_bound({name!r}, jacobians=...): a list of 2-D Jacobians, got "
                         f"{[m.shape for m in matrices]}")
    answer = _array_or_none(mine)
    if answer is None or answer.size != 1:
        return Verdict(name, "fail", f"expected one number (a bound on a norm), got {type(mine).__name__}"
                                     + (f" of shape {answer.shape}" if answer is not None else ""))
    answer = float(answer.reshape(()))
    top = float(np.linalg.norm(_array(top_gradient)))
    spectral = [float(np.linalg.norm(m, 2)) for m in matrices]
    truth = top * float(np.prod(spectral))
    if abs(answer - truth) <= 1e-3 * abs(truth):
        return Verdict(name, "pass", f"‖∂L/∂h_L‖ · Π ‖J_l‖ = {truth:.3g} over {len(matrices)} Jacobians")
    frobenius = [float(np.linalg.norm(m)) for m in matrices]
    near = lambda value: abs(answer - value) <= 1e-3 * abs(value)  # noqa: E731
    if near(top * sum(spectral)) or near(sum(spectral)) or near(top + sum(spectral)):
        hint = ("you added the norms: backward multiplies the Jacobians one after another (the chain rule), so "
                "their norms multiply")
    elif near(top * float(np.prod(frobenius))) or near(float(np.prod(frobenius))):
        hint = ("that is the product of Frobenius norms (np.linalg.norm's default): a bound too, but looser; "
                "the tight one uses each Jacobian's largest singular value, the factor by which it can stretch "
                "a vector (np.linalg.norm(J, 2))")
    elif near(float(np.prod(spectral))):
        hint = "a factor is missing: the bound starts from the gradient that arrives at the top, ‖∂L/∂h_L‖"
    else:
        hint = (f"your bound is {answer / truth:.3g} times the right one; it is ‖∂L/∂h_L‖ times one factor per "
                f"Jacobian, each the largest factor by which that Jacobian stretches a vector")
    return Verdict(name, "fail", hint)


# --- exercise: the skip when the widths differ -------------------------------------------------------------------

def check_skip(name: str, make_skip, *, cases=((8, 8), (8, 16), (16, 8))) -> Verdict:
    """Is ``make_skip(width_in, width_out)`` a module the block can add to F(x)? The identity when the widths match
    (no parameters, x unchanged); a map of (n, width_in) to (n, width_out) otherwise, a projection."""
    check_name("check_skip", name)
    if not callable(make_skip):
        raise TypeError(f"check_skip({name!r}, make_skip): the function itself, make_skip(width_in, width_out), "
                        f"got {type(make_skip).__name__}")
    for width_in, width_out in cases:
        manual_seed(7)
        skip = make_skip(width_in, width_out)
        if not_done(skip):
            return not_done_yet(name)
        if not callable(skip):
            return Verdict(name, "fail", f"make_skip({width_in}, {width_out}) returned a {type(skip).__name__}; "
                                         f"it returns a module, called on x as skip(x)")
        x = randn(4, width_in)
        try:
            with no_grad():
                out = skip(x)
        except (ValueError, RuntimeError, TypeError) as error:
            return Verdict(name, "fail", f"make_skip({width_in}, {width_out})'s module, called on x of shape "
                                         f"(4, {width_in}), raised: {str(error).splitlines()[0]}. The skip takes "
                                         f"the block's input, width_in numbers a row")
        shape = tuple(getattr(out, "shape", ()))
        parameters = list(skip.parameters()) if hasattr(skip, "parameters") else []
        if shape != (4, width_out):
            return Verdict(name, "fail", f"make_skip({width_in}, {width_out}) maps x of shape (4, {width_in}) to "
                                         f"{shape}, but F(x) has shape (4, {width_out}): the two cannot be added. "
                                         f"The skip maps width_in to width_out")
        if width_in == width_out and (parameters or not _same(out, x)):
            return Verdict(name, "fail", f"make_skip({width_in}, {width_out}): the widths match, so the skip needs "
                                         f"no weights. A matrix there is one more factor that the gradient must "
                                         f"pass through, and the identity term of ∂L/∂x is lost; return x as it is")
        if width_in != width_out and not parameters:
            return Verdict(name, "fail", f"make_skip({width_in}, {width_out}) has no parameters: a fixed reshuffle "
                                         f"of x cannot be learned; a projection is a layer with weights")
    return Verdict(name, "pass", f"the identity where the widths match, a projection where they differ "
                                 f"({len(cases)} cases)")

"""``gradcheck`` and ``gradgradcheck``: compare backward with finite differences.

The numerical Jacobian nudges each input element by ±eps and watches the outputs change; the
analytical one asks backward for one row at a time. They must agree (use float64: float32 has
too few digits for a meaningful difference quotient).
"""

from __future__ import annotations

import numpy as np

from .engine import grad
from .function import TrackedTensor


class GradcheckError(RuntimeError):
    """Backward disagrees with the numerical derivative."""


def _as_tuple(x):
    return x if isinstance(x, tuple) else (tuple(x) if isinstance(x, list) else (x,))


def _outputs(fn, inputs):
    return tuple(o for o in _as_tuple(fn(*inputs)) if isinstance(o, TrackedTensor) and o.dtype.is_floating_point)


def _numerical_jacobian(fn, inputs, x, eps):
    """d(outputs)/d(x) by central differences: one column per element of x."""
    backend = x.device.backend
    columns = []
    for index in np.ndindex(*x.shape):
        original = float(backend.to_numpy(x.array)[index])
        values = []
        for delta in (eps, -eps):
            backend.setitem(x.array, index, original + delta)
            values.append([np.array(o.detach().numpy(), dtype=np.float64).ravel() for o in _outputs(fn, inputs)])
        backend.setitem(x.array, index, original)
        columns.append(np.concatenate([(p - m) / (2 * eps) for p, m in zip(*values)]) if values[0] else np.zeros(0))
    if not columns:  # an input with no elements: a Jacobian with no columns
        return np.zeros((sum(o.numel() for o in _outputs(fn, inputs)), 0))
    return np.stack(columns, axis=1)


def _analytical_jacobian(fn, inputs, x):
    """d(outputs)/d(x) from backward: one row per output element (a vector-Jacobian product each)."""
    outputs = _outputs(fn, inputs)
    rows = []
    for k, out in enumerate(outputs):
        for index in np.ndindex(*out.shape):
            if not out.requires_grad:
                rows.append(np.zeros(x.numel()))
                continue
            seed = out.new_zeros(out.shape)
            seed.device.backend.setitem(seed.array, index, 1)
            (g,) = grad(out, x, seed, retain_graph=True, allow_unused=True)
            rows.append(np.zeros(x.numel()) if g is None else np.asarray(g.detach().numpy(), dtype=np.float64).ravel())
    return np.stack(rows, axis=0) if rows else np.zeros((0, x.numel()))


# PyTorch's gradcheck options that change how it checks, not what: accepted so calls port unchanged.
_TORCH_ONLY_OPTIONS = {"nondet_tol", "check_undefined_grad", "check_grad_dtypes", "check_batched_grad",
                       "check_batched_forward_grad", "check_forward_ad", "check_backward_ad", "fast_mode", "masked",
                       "gen_non_contig_grad_outputs", "check_fwd_over_rev", "check_rev_over_rev"}


def _check_options(op, options):
    unknown = sorted(set(options) - _TORCH_ONLY_OPTIONS)
    if unknown:
        raise TypeError(f"{op}() got unexpected keyword argument(s) {', '.join(unknown)}")


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **torch_options) -> bool:
    """True if backward matches finite differences for every input that requires grad."""
    _check_options("gradcheck", torch_options)
    inputs = _as_tuple(inputs)
    if not any(isinstance(x, TrackedTensor) and x.requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True; call .requires_grad_() on the inputs to check")
    for i, x in enumerate(inputs):
        if not (isinstance(x, TrackedTensor) and x.requires_grad):
            continue
        if x.dtype.name != "float64":
            import warnings

            warnings.warn(f"gradcheck: input {i} is {x.dtype.name}, not float64; the check may fail for lack of precision")
        numerical = _numerical_jacobian(fn, inputs, x, eps)
        analytical = _analytical_jacobian(fn, inputs, x)
        if numerical.shape != analytical.shape or not np.allclose(analytical, numerical, atol=atol, rtol=rtol):
            if not raise_exception:
                return False
            worst = np.abs(analytical - numerical).max() if numerical.shape == analytical.shape else float("nan")
            raise GradcheckError(
                f"gradcheck: Jacobian mismatch for input {i} (shape {tuple(x.shape)}), largest difference {worst:.3g}\n"
                f"numerical:\n{numerical}\nanalytical:\n{analytical}"
            )
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
                  **torch_options) -> bool:
    """gradcheck applied to the gradient itself: checks second derivatives (backward of backward)."""
    _check_options("gradgradcheck", torch_options)
    inputs = _as_tuple(inputs)
    outputs = _outputs(fn, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(
            o.new_tensor(rng.standard_normal(o.shape)).requires_grad_(True) for o in outputs
        )
    grad_outputs = _as_tuple(grad_outputs)
    differentiable = [x for x in inputs if isinstance(x, TrackedTensor) and x.requires_grad]

    def first_derivative(*args):
        xs, gs = args[: len(inputs)], args[len(inputs):]
        pairs = [(o, g) for o, g in zip(_outputs(fn, xs), gs) if o.requires_grad]
        wanted = [x for x in xs if isinstance(x, TrackedTensor) and x.requires_grad]
        if not pairs:  # no output depends on the inputs: every derivative is zero
            return tuple(x.new_zeros(x.shape) for x in wanted)
        grads = grad([o for o, _ in pairs], wanted, [g for _, g in pairs], create_graph=True, allow_unused=True)
        return tuple(g if g is not None else x.new_zeros(x.shape) for g, x in zip(grads, wanted))

    if not differentiable:
        return True
    return gradcheck(first_derivative, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)

"""``gradlab.testing.assert_close``: are two tensors (or numbers, or lists/dicts of them) close? As in torch.

Close means ``|actual - expected| <= atol + rtol * |expected|`` everywhere, with tolerances chosen from the
dtype unless given (float32: rtol 1.3e-6, atol 1e-5; integers and bools: exactly equal). On failure the
message counts the mismatched elements and shows the greatest absolute and relative differences.
"""

from __future__ import annotations

import collections.abc
import numbers
import warnings

import numpy as np

from . import dtypes as dt
from .creation import tensor
from .size import Size
from .tensor import Tensor

# (rtol, atol) by dtype, PyTorch's defaults; integer and bool dtypes compare exactly
_TOLERANCES = {dt.float16: (1e-3, 1e-5), dt.bfloat16: (1.6e-2, 1e-5), dt.float32: (1.3e-6, 1e-5),
               dt.float64: (1e-7, 1e-7)}


def _default_tolerances(*dtypes) -> tuple:
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _as_tensor(value):
    """A Python number as the 0-d tensor PyTorch compares it as (bool, int64 or float64)."""
    if isinstance(value, Tensor):
        return value, False
    if isinstance(value, (bool, np.bool_)):
        return Tensor(np.array(bool(value)), dtype=dt.bool_), True
    if isinstance(value, numbers.Integral):
        return Tensor(np.array(int(value)), dtype=dt.int64), True
    return Tensor(np.array(float(value)), dtype=dt.float64), True


def _host(t: Tensor) -> np.ndarray:
    """The values on the host, in the dtype the differences are computed in (float32 for 16-bit floats)."""
    values = t.detach().cpu().numpy() if t.device.type != "cpu" else t.detach().numpy()
    if t.dtype in dt.HALF_DTYPES:
        return values.astype(np.float32)
    return values.astype(np.int64) if t.dtype is dt.bool_ else values


class _Mismatch(AssertionError):
    pass


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype) -> None:
    if tuple(actual.shape) != tuple(expected.shape):
        raise _Mismatch(f"The values for attribute 'shape' do not match: {Size(actual.shape)!r} != "
                        f"{Size(expected.shape)!r}.")
    if check_device and actual.device != expected.device:
        raise _Mismatch(f"The values for attribute 'device' do not match: {actual.device} != {expected.device}.")
    if check_dtype and actual.dtype is not expected.dtype:
        raise _Mismatch(f"The values for attribute 'dtype' do not match: {actual.dtype!r} != {expected.dtype!r}.")
    if rtol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    a, b = _host(actual), _host(expected)
    if a.dtype != b.dtype:
        common = np.result_type(a.dtype, b.dtype)
        a, b = a.astype(common), b.astype(common)
    with np.errstate(all="ignore"):
        if a.dtype.kind in "iu":
            abs_diff = np.abs(a.astype(np.int64) - b.astype(np.int64))
            rel_diff = (abs_diff / np.abs(b)).astype(np.float32)
            close = abs_diff <= atol + rtol * np.abs(b)
        else:
            abs_diff = np.abs(a - b)
            rel_diff = abs_diff / np.abs(b)
            close = (a == b) | (abs_diff <= atol + rtol * np.abs(b))
            if equal_nan:
                close |= np.isnan(a) & np.isnan(b)
    if close.all():
        return
    exact = rtol == 0 and atol == 0
    what = "equal" if exact else "close"
    allowed = (lambda tol: "") if exact else (lambda tol: f" (up to {tol} allowed)")
    if a.ndim == 0:
        raise _Mismatch(f"Scalars are not {what}!\n\nExpected {expected.item()} but got {actual.item()}.\n"
                        f"Absolute difference: {abs_diff.item()}{allowed(atol)}\n"
                        f"Relative difference: {rel_diff.item()}{allowed(rtol)}")
    mismatched = int((~close).sum())
    i, j = _greatest(abs_diff), _greatest(rel_diff)
    raise _Mismatch(f"Tensor-likes are not {what}!\n\nMismatched elements: {mismatched} / {a.size} "
                    f"({mismatched / a.size:.1%})\n"
                    f"Greatest absolute difference: {abs_diff[i].item()} at index {i}{allowed(atol)}\n"
                    f"Greatest relative difference: {rel_diff[j].item()} at index {j}{allowed(rtol)}")


def _greatest(diff: np.ndarray) -> tuple:
    """Where the greatest difference is (a NaN counts as greatest, as torch.argmax has it)."""
    return tuple(int(i) for i in np.unravel_index(np.argmax(diff), diff.shape))


def _compare(actual, expected, path, options) -> None:
    sequence = collections.abc.Sequence
    if isinstance(actual, (Tensor, numbers.Number)) and isinstance(expected, (Tensor, numbers.Number)):
        (a, a_number), (b, b_number) = _as_tensor(actual), _as_tensor(expected)
        if a_number != b_number:
            raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and "
                            f"{type(expected)}.")
        try:
            _compare_tensors(a, b, **options)
        except _Mismatch as error:
            where = "".join(f"[{key!r}]" for key in path)
            raise _Mismatch(str(error) + (f"\n\nThe failure occurred for item {where}" if path else "")) from None
    elif isinstance(actual, sequence) and isinstance(expected, sequence) and not isinstance(actual, str):
        if len(actual) != len(expected):
            raise _Mismatch(f"The length of the sequences mismatch: {len(actual)} != {len(expected)}")
        for i, (x, y) in enumerate(zip(actual, expected)):
            _compare(x, y, path + [i], options)
    elif isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        if set(actual) != set(expected):
            raise _Mismatch(f"The keys of the mappings do not match: {sorted(map(repr, actual))} != "
                            f"{sorted(map(repr, expected))}")
        for key in expected:
            _compare(actual[key], expected[key], path + [key], options)
    else:
        raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None, equal_nan=False, check_device=True,
                 check_dtype=True, check_layout=True, check_stride=False, msg=None) -> None:
    """Raise AssertionError unless ``actual`` and ``expected`` are close (see the module docstring).

    ``msg`` replaces the message (a string) or rewrites it (a callable given the message). Layout and
    strides are not compared: gradlab tensors are all strided, and values do not depend on strides.
    """
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'atol' if atol is None else 'rtol'}.")
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device, check_dtype=check_dtype)
    try:
        _compare(actual, expected, [], options)
    except _Mismatch as error:
        message = str(error)
        if msg is not None:
            message = msg(message) if callable(msg) else msg
        raise AssertionError(message) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg="") -> None:
    """PyTorch's older form: numbers and lists become tensors, dtypes may differ, NaNs compare equal."""
    warnings.warn("`gradlab.testing.assert_allclose()` is deprecated (as in PyTorch since 1.12). Please use "
                  "`gradlab.testing.assert_close()` instead.", FutureWarning, stacklevel=2)
    actual = actual if isinstance(actual, Tensor) else tensor(actual)
    expected = expected if isinstance(expected, Tensor) else tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _default_tolerances(actual.dtype, expected.dtype)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True, check_dtype=False,
                 msg=msg or None)

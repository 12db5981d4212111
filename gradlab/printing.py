"""How a tensor prints: like PyTorch, ``tensor([1.0000, 2.5000], requires_grad=True)``."""

from __future__ import annotations

import numpy as np

from .dtypes import get_default_dtype, int64


def _format_values(array: np.ndarray) -> str:
    prefix = "tensor("
    if array.dtype.kind == "f":
        finite = array[np.isfinite(array)]
        integral = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size > 0 and (np.abs(finite).max() >= 1e8 or (np.abs(finite[finite != 0]).min(initial=1) < 1e-4))
        if big:
            formatter = {"float_kind": lambda v: f"{v:.4e}"}
        elif integral:
            formatter = {"float_kind": lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)}
        else:
            formatter = {"float_kind": lambda v: f"{v:.4f}" if np.isfinite(v) else str(v)}
        return np.array2string(array, separator=", ", prefix=prefix, formatter=formatter, threshold=1000, edgeitems=3)
    if array.dtype.kind == "b":
        return np.array2string(array, separator=", ", prefix=prefix, formatter={"bool": lambda v: "True" if v else "False"},
                               threshold=1000, edgeitems=3)
    return np.array2string(array, separator=", ", prefix=prefix, threshold=1000, edgeitems=3)


def format_tensor(t) -> str:
    """PyTorch's layout: values, then the device, dtype and grad fields that are not the defaults."""
    array = np.asarray(t.device.backend.to_numpy(t.data))
    text = "[]" if array.size == 0 and array.ndim == 1 else _format_values(array)
    extras = []
    if t.device.type != "cpu":
        extras.append(f"device='{t.device}'")
    if t.dtype is not get_default_dtype() and t.dtype is not int64 and t.dtype.name != "bool" or array.size == 0 and t.dtype is not get_default_dtype():
        extras.append(f"dtype=gradlab.{t.dtype.name}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    if array.size == 0 and array.ndim != 1:
        extras.insert(0, f"size={tuple(array.shape)}")
    return "tensor(" + ", ".join([text] + extras) + ")"

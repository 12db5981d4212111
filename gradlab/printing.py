"""How a tensor prints: PyTorch's layout, ``tensor([ 5., 12., 21.], requires_grad=True)``.

One number format is chosen for the whole tensor, so that every entry has the same width and the
columns line up (shorter entries are padded with spaces on the left):

- bools and integers print as Python prints them;
- floats whose nonzero finite values are all whole numbers print as ``12.``;
- other floats print with 4 decimals, ``0.2500``;
- scientific notation, ``1.0000e+10``, takes over when the largest magnitude is over 1000 times the
  smallest, or over 1e8, or (for non-whole values) the smallest is under 1e-4.

Zeros, infinities and NaNs take no part in the choice. A tensor of more than 1000 elements shows
only 3 entries at each end of every dimension, with ``...`` between; the format is then chosen
from the entries shown. Rows wrap at 80 characters. The values are followed by the fields that
differ from the defaults: device, dtype (not for the default float dtype, int64 or bool), and the
grad_fn or ``requires_grad=True``.
"""

from __future__ import annotations

import math

import numpy as np

from .backends.device import default_device
from .dtypes import bool_, get_default_dtype, int64

THRESHOLD = 1000  # more elements than this are summarised
EDGEITEMS = 3  # entries kept at each end of a summarised dimension
LINEWIDTH = 80
PRECISION = 4
SCI_MODE = None  # True or False forces scientific notation on or off; None lets each tensor choose

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """How tensors print, as ``torch.set_printoptions``: digits after the point, how many elements before
    a tensor is summarised, the entries kept at each end, the line width; ``profile`` sets all four
    ("default", "short", "full"), and ``sci_mode`` forces scientific notation on or off (None: automatic)."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    for name, value in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                        ("linewidth", linewidth)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            raise ValueError(f"set_printoptions: {name} must be a non-negative number, got {value!r}")
    PRECISION = PRECISION if precision is None else int(precision)
    THRESHOLD = THRESHOLD if threshold is None else threshold
    EDGEITEMS = EDGEITEMS if edgeitems is None else int(edgeitems)
    LINEWIDTH = LINEWIDTH if linewidth is None else int(linewidth)
    SCI_MODE = sci_mode  # as in PyTorch, every call sets it (None: automatic again)


class _Formatter:
    """The one format (and width) for every entry of a tensor, chosen from the entries shown."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            self.width = max((len(str(v)) for v in values.ravel().tolist()), default=1)
            return
        values = values.astype(np.float64).ravel()
        chosen = values[np.isfinite(values) & (values != 0)]
        if chosen.size == 0:
            return
        magnitude = np.abs(chosen)
        smallest, largest = magnitude.min(), magnitude.max()
        self.int_mode = bool(np.all(chosen == np.ceil(chosen)))
        automatic = largest / smallest > 1000.0 or largest > 1e8 or (not self.int_mode and smallest < 1e-4)
        self.sci_mode = bool(automatic if SCI_MODE is None else SCI_MODE)
        self.width = max(len(self.text(v)) for v in chosen.tolist())

    def text(self, value) -> str:
        """One entry, right-aligned to the common width."""
        if not self.floating:
            s = str(value)
        elif self.sci_mode:
            s = f"{value:.{PRECISION}e}"
        elif self.int_mode:
            s = f"{value:.0f}" + ("." if math.isfinite(value) else "")
        else:
            s = f"{value:.{PRECISION}f}"
        return s.rjust(self.width)


def _shown(array: np.ndarray) -> np.ndarray:
    """The entries a summarised print shows: the first and last EDGEITEMS along every dimension."""
    keep = [np.r_[0:EDGEITEMS, n - EDGEITEMS:n] if n > 2 * EDGEITEMS else np.arange(n) for n in array.shape]
    return array[np.ix_(*keep)]


def _body(array: np.ndarray, fmt: _Formatter, indent: int, summarize: bool) -> str:
    """The bracketed values; ``indent`` is the column where this level's '[' stands."""
    if array.ndim == 0:
        return fmt.text(array.item())
    n = array.shape[0]
    cut = summarize and n > 2 * EDGEITEMS
    head = range(EDGEITEMS) if cut else range(n)
    tail = range(n - EDGEITEMS, n) if cut else range(0)
    if array.ndim == 1:
        items = [fmt.text(array[i].item()) for i in head] + ([" ..."] if cut else [])
        items += [fmt.text(array[i].item()) for i in tail]
        per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))  # each entry also takes ", "
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    rows = [_body(array[i], fmt, indent + 1, summarize) for i in head] + (["..."] if cut else [])
    rows += [_body(array[i], fmt, indent + 1, summarize) for i in tail]
    return "[" + ("," + "\n" * (array.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _with_fields(text: str, fields: list, indent: int) -> str:
    """Append ', field' after the values, starting a new line when one would pass LINEWIDTH."""
    line = len(text) - text.rfind("\n") + 1
    for field in fields:
        if line + len(field) + 2 > LINEWIDTH:
            text += ",\n" + " " * indent + field
            line = indent + len(field)
        else:
            text += ", " + field
            line += len(field) + 2
    return text + ")"


def format_tensor(t) -> str:
    """``repr`` of a gradlab tensor, laid out as PyTorch lays out the same tensor."""
    prefix = "tensor("
    array = np.asarray(t.device.backend.to_numpy(t.array))
    dtype = t.dtype
    if dtype.is_floating_point and array.dtype.kind != "f":  # bfloat16 (ml_dtypes): print its values as float32
        array = array.astype(np.float32)
    fields = []
    if t.device is not default_device():
        fields.append(f"device='{t.device}'")
    if array.size == 0:
        if array.ndim != 1:
            fields.append(f"size={tuple(array.shape)}")
        if dtype is not get_default_dtype():
            fields.append(f"dtype={dtype!r}")
        body = "[]"
    else:
        if dtype not in (get_default_dtype(), int64, bool_):
            fields.append(f"dtype={dtype!r}")
        summarize = array.size > THRESHOLD
        fmt = _Formatter(_shown(array) if summarize else array)
        body = _body(array, fmt, len(prefix), summarize)
    if t.grad_fn is not None:
        fields.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        fields.append("requires_grad=True")
    return _with_fields(prefix + body, fields, len(prefix))

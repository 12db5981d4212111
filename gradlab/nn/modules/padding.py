"""Padding layers: Zero-, Constant-, Reflection-, Replication- and CircularPad, in 1, 2 and 3 dims.

Each stores ``padding`` as (left, right[, top, bottom[, front, back]]) — an int pads every side by
the same amount — and calls ``F.pad`` with its mode. Reflection mirrors the input about its edge
(without repeating it), replication repeats the edge, circular wraps the other end round.
"""

from __future__ import annotations

from ...ops._common import shape_str
from ..functional.conv import ntuple
from ..functional.vision import pad
from .module import Module

__all__ = [f"{kind}Pad{nd}d" for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular")
           for nd in (1, 2, 3)]

_LAYOUTS = {1: "(C, W) or (N, C, W)", 2: "(C, H, W) or (N, C, H, W)", 3: "(C, D, H, W) or (N, C, D, H, W)"}


class _PadNd(Module):
    """``padding`` and the mode; non-constant modes take (C, *size) or (N, C, *size) inputs only."""

    _nd = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = ntuple(type(self).__name__, "padding", padding, 2 * self._nd)

    def forward(self, input):
        if self._mode != "constant" and input.ndim not in (self._nd + 1, self._nd + 2):
            raise ValueError(f"{type(self).__name__}: expected {self._nd + 1}D or {self._nd + 2}D input "
                             f"{_LAYOUTS[self._nd]} (got {input.ndim}D input of shape {shape_str(input.shape)})")
        return pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


def _layer(kind, nd, base, mode, doc):
    name = f"{kind}Pad{nd}d"
    return type(name, (base,), {"_nd": nd, "_mode": mode, "__doc__": doc.format(nd=nd), "__module__": __name__,
                                "__qualname__": name})


_KINDS = (("Zero", _ZeroPadNd, "constant", "Pad the last {nd} dims with zeros."),
          ("Constant", _ConstantPadNd, "constant", "Pad the last {nd} dims with a constant ``value``."),
          ("Reflection", _PadNd, "reflect", "Pad the last {nd} dims with their mirror image about the edge."),
          ("Replication", _PadNd, "replicate", "Pad the last {nd} dims by repeating the edge values."),
          ("Circular", _PadNd, "circular", "Pad the last {nd} dims by wrapping the other end round."))

for _kind, _base, _mode, _doc in _KINDS:
    for _nd in (1, 2, 3):
        globals()[f"{_kind}Pad{_nd}d"] = _layer(_kind, _nd, _base, _mode, _doc)
del _kind, _base, _mode, _doc, _nd

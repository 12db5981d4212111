"""``gradlab.jit``: record a forward pass as a tape of operations, and replay it.

``tape = gl.jit.trace(model, x)`` runs the model once and keeps the straight-line program it ran;
``tape.count_ops()``, ``print(tape)``, ``tape.replay(x2)`` and ``tape.save(path)`` read, rerun and
keep it. ``gradlab.compile`` plans a training step from the same kind of trace.
"""

from .entries import Ref, TapeOp, Value
from .tape import Tape
from .tracer import Tracer, TracerWarning, trace

load = Tape.load

__all__ = ["Ref", "Tape", "TapeOp", "Tracer", "TracerWarning", "Value", "load", "trace"]

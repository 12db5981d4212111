"""The pieces a tape is made of: numbered values, references to them, and one entry per op."""

from __future__ import annotations

from typing import NamedTuple


class Ref(NamedTuple):
    """An argument that is a value of the tape (by number), not a constant."""

    value: int

    def __repr__(self):
        return f"%{self.value}"


class Value(NamedTuple):
    """A numbered tensor of the tape: where it comes from (``kind``), its shape, dtype and name."""

    id: int
    kind: str  # "input", "parameter", "buffer", "constant" or "op"
    shape: tuple
    dtype: str
    name: str


class TapeOp(NamedTuple):
    """One operation as it ran: ``outputs = function(*args)``, inside module ``module``."""

    index: int
    function: type
    args: tuple
    outputs: tuple
    in_shapes: tuple
    out_shapes: tuple
    dtypes: tuple
    device: str
    module: str
    views: tuple = ()  # positions of the outputs that were views of an input's memory when traced
    inplace: tuple = ()  # positions of the outputs that were inputs themselves, changed in place
    random: bool = False  # whether it drew random numbers (a replay draws again)

    @property
    def name(self) -> str:
        return self.function.__name__

    def refs(self):
        """The values this op reads, in order."""
        return list(refs_in(self.args))


def refs_in(value):
    """The value ids a structure refers to, in order: a Ref, or tuples, lists and dicts holding them."""
    if value.__class__ is Ref:
        yield value.value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from refs_in(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from refs_in(item)


def dtype_name(t) -> str:
    return str(t.dtype).replace("gradlab.", "")

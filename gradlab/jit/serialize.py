"""A tape as data: JSON for the program, a .npz for the arrays of its constants — never pickle.

Functions are written as ``module:QualName`` and looked up again on load, and only classes that
are gradlab Functions are accepted. Constants are JSON with a tag for what JSON lacks (tuples,
slices, dtypes, named tuples such as a convolution's geometry, non-finite floats).
"""

from __future__ import annotations

import importlib
import json
import math

import numpy as np

from .. import dtypes
from ..autograd.function import Function
from ..backends.device import Device
from ..creation import tensor
from .entries import Ref, TapeOp, Value

FORMAT = "gradlab.tape/1"


def save_tape(tape, path) -> None:
    arrays = {f"value_{vid}": t.device.backend.to_numpy(t.array) for vid, t in tape.externals.items()}
    ops = [{"function": _class_name(op.function, op), "args": [_encode(a, op, arrays) for a in op.args],
            "outputs": list(op.outputs), "in_shapes": [list(s) for s in op.in_shapes],
            "out_shapes": [list(s) if s is not None else None for s in op.out_shapes], "dtypes": list(op.dtypes),
            "device": op.device, "module": op.module, "views": list(op.views),
            "inplace": list(op.inplace), "random": op.random} for op in tape.ops]
    doc = {"format": FORMAT, "ops": ops, "inputs": tape.inputs, "output": _encode(tape.output, None, arrays),
           "values": [[v.id, v.kind, list(v.shape), v.dtype, v.name] for v in tape.values.values()],
           "externals": [[vid, str(t.device)] for vid, t in tape.externals.items()], "escapes": [list(e) for e in tape.escapes], "modules": tape.modules}
    arrays["tape.json"] = np.frombuffer(json.dumps(doc).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def load_parts(path) -> tuple:
    """What ``Tape(...)`` is made from, read back from a file written by ``save_tape``."""
    with np.load(path, allow_pickle=False) as data:
        doc = json.loads(bytes(data["tape.json"]).decode())
        if doc.get("format") != FORMAT:
            raise ValueError(f"jit.load: {path} is not a gradlab tape (format {doc.get('format')!r}, expected {FORMAT!r})")
        arrays = {name: data[name] for name in data.files if name != "tape.json"}
    values = {vid: Value(vid, kind, tuple(shape), dtype, name) for vid, kind, shape, dtype, name in doc["values"]}
    externals = {vid: tensor(arrays[f"value_{vid}"], dtype=getattr(dtypes, values[vid].dtype), device=device)
                 for vid, device in doc["externals"]}
    ops = [TapeOp(i, _find_class(o["function"]), tuple(_decode(a, arrays) for a in o["args"]), tuple(o["outputs"]),
                  tuple(tuple(s) for s in o["in_shapes"]),
                  tuple(tuple(s) if s is not None else None for s in o["out_shapes"]), tuple(o["dtypes"]),
                  o["device"], o["module"], tuple(o.get("views", ())), tuple(o.get("inplace", ())),
                  bool(o.get("random", False))) for i, o in enumerate(doc["ops"])]
    escapes = tuple(tuple(e) for e in doc["escapes"])
    return ops, values, doc["inputs"], _decode(doc["output"], arrays), externals, escapes, doc.get("modules", {})


# --- constants -------------------------------------------------------------------------------------

def _encode(a, op, arrays):
    if a.__class__ is Ref:
        return {"ref": a.value}
    if a is None or isinstance(a, (bool, int, str)):
        return a
    if isinstance(a, float):
        return a if math.isfinite(a) else {"float": repr(a)}
    if a is Ellipsis:
        return {"ellipsis": True}
    if isinstance(a, slice):
        return {"slice": [_encode(x, op, arrays) for x in (a.start, a.stop, a.step)]}
    if isinstance(a, dtypes.DType):
        return {"dtype": str(a).replace("gradlab.", "")}
    if isinstance(a, Device):
        return {"device": str(a)}
    if isinstance(a, tuple) and hasattr(a, "_fields"):
        return {"namedtuple": _class_name(type(a), op), "fields": [_encode(x, op, arrays) for x in a]}
    if isinstance(a, (tuple, list)):
        return {type(a).__name__: [_encode(x, op, arrays) for x in a]}
    if isinstance(a, np.ndarray):
        key = f"array_{len(arrays)}"
        arrays[key] = a
        return {"array": key}
    if isinstance(a, np.generic):
        return _encode(a.item(), op, arrays)
    where = f" (argument of op {op.index}, {op.name})" if op is not None else ""
    raise TypeError(f"Tape.save: cannot write a {type(a).__name__}{where} as data; only tensors, numbers, strings, "
                    "tuples, lists, slices, dtypes and named tuples can be saved")


def _decode(a, arrays):
    if not isinstance(a, dict):
        return a
    (tag, body), *rest = a.items()
    if tag == "ref":
        return Ref(body)
    if tag == "float":
        return float(body)
    if tag == "ellipsis":
        return Ellipsis
    if tag == "slice":
        return slice(*(_decode(x, arrays) for x in body))
    if tag == "dtype":
        return getattr(dtypes, body)
    if tag == "device":
        return Device(body)
    if tag == "namedtuple":
        return _find_class(body, base=tuple)(*(_decode(x, arrays) for x in rest[0][1]))
    if tag in ("tuple", "list"):
        items = [_decode(x, arrays) for x in body]
        return tuple(items) if tag == "tuple" else items
    if tag == "array":
        return arrays[body]
    raise ValueError(f"jit.load: unknown constant tag {tag!r}")


def _class_name(cls, op) -> str:
    if "<locals>" in cls.__qualname__:
        where = f" (op {op.index})" if op is not None else ""
        raise TypeError(f"Tape.save: {cls.__qualname__}{where} is defined inside a function, so it cannot be found "
                        "again by name on load; define it at module level")
    return f"{cls.__module__}:{cls.__qualname__}"


def _find_class(name: str, base=Function):
    """The class written as ``module:QualName``. A tape saved before factory-made classes took the module
    that names them (``gradlab.ops.elementwise:Sigmoid``, now ``gradlab.ops.activations``) finds its class
    among the loaded subclasses of ``base`` by that QualName, where exactly one has it."""
    module, _, qualname = name.partition(":")
    obj = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    if obj is None and module.startswith("gradlab."):
        named = [cls for cls in _subclasses(base)
                 if cls.__module__.startswith("gradlab.") and cls.__qualname__ == qualname]
        obj = named[0] if len(set(named)) == 1 else None
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ValueError(f"jit.load: {name} is not a {base.__name__} class; the file does not describe a gradlab tape")
    return obj


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)
